"""The attestation job and the sensor that starts it when submissions wait in the spool."""

import dagster as dg

from annex.errors import AnnexError
from pipelines.defs.attestation.assets import attestation_coverage, attestation_records
from pipelines.defs.resources import AnnexSettingsResource
from pipelines.defs.shared import warehouse_schema
from pipelines.partitions import CLUSTERS_PARTITIONS_NAME
from services.attestation import pending_submissions

attestation_job = dg.define_asset_job(
    name="attestation_job",
    selection=dg.AssetSelection.assets(warehouse_schema, attestation_records, attestation_coverage),
    description="Verify and load waiting attestation submissions, rebuild coverage, publish.",
)


@dg.sensor(
    job=attestation_job,
    minimum_interval_seconds=60,
    description="Request an attestation collection when submissions wait in the intake spool "
    "(a directory listing only); a backlog a failed run left is retried on the next tick.",
)
def new_attestations(
    context: dg.SensorEvaluationContext, annex: AnnexSettingsResource
) -> dg.SensorResult | dg.SkipReason:
    """Request a collection when submissions wait in the spool (a directory listing only).

    The spool belongs to one cluster (one intake per cluster, see deploy/ATTESTATION_AGENT.md):
    the run goes to the only configured cluster. The run key is the waiting count plus the
    cursor's tick, so a backlog that a failed run left behind is retried on the next tick.
    """
    settings = annex.load()
    known = set(context.instance.get_dynamic_partitions(CLUSTERS_PARTITIONS_NAME))
    names = [cluster.name for cluster in settings.clusters if cluster.name in known]
    if len(names) != 1:
        return dg.SkipReason(
            f"attestations go to exactly one cluster; {len(names)} cluster partitions exist"
        )
    try:
        waiting = pending_submissions(settings)
    except AnnexError as exc:
        return dg.SkipReason(f"attestation spool not readable: {exc}")
    if waiting == 0:
        return dg.SkipReason("no attestation submissions waiting")
    tick = int(context.cursor or 0) + 1
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(run_key=f"{names[0]}:{tick}:{waiting}", partition_key=names[0])
        ],
        cursor=str(tick),
    )

"""The lineage job and the sensor that starts it when events wait in the spool."""

import dagster as dg

from annex.errors import AnnexError
from pipelines.defs.lineage.assets import lineage_events, lineage_models
from pipelines.defs.resources import AnnexSettingsResource
from pipelines.defs.shared import warehouse_schema
from services.lineage import pending_lineage

lineage_job = dg.define_asset_job(
    name="lineage_job",
    selection=dg.AssetSelection.assets(warehouse_schema, lineage_events, lineage_models),
    description="Load waiting OpenLineage events, rebuild the lineage models, publish.",
)


@dg.sensor(
    job=lineage_job,
    minimum_interval_seconds=60,
    description="Request a lineage collection when OpenLineage events wait in the spool "
    "(a directory listing only); a backlog a failed run left is retried on the next tick.",
)
def new_lineage_events(
    context: dg.SensorEvaluationContext, annex: AnnexSettingsResource
) -> dg.SensorResult | dg.SkipReason:
    """Request a lineage collection when spool files wait (a directory listing only). The run
    key carries the tick, so a backlog a failed run left behind is retried on the next tick."""
    try:
        waiting = pending_lineage(annex.load())
    except AnnexError as exc:
        return dg.SkipReason(f"lineage spool not readable: {exc}")
    if waiting == 0:
        return dg.SkipReason("no lineage events waiting")
    tick = int(context.cursor or 0) + 1
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=f"lineage:{tick}:{waiting}")], cursor=str(tick)
    )

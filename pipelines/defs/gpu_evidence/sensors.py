"""The sensor that notices completed probe Jobs and starts their benchmark collection."""

import hashlib

import dagster as dg

from annex.errors import AnnexError
from pipelines.defs.gpu_evidence.schedules import benchmarks_job
from pipelines.defs.resources import AnnexSettingsResource, WarehouseResource
from pipelines.partitions import CLUSTERS_PARTITIONS_NAME
from services.gpu_evidence import completed_probe_pods, known_probe_pods


def new_pods_run_key(cluster: str, uids: frozenset[str]) -> str:
    """The same set of unread pods gives the same run key, so a tick never runs twice."""
    digest = hashlib.sha256("\n".join(sorted(uids)).encode()).hexdigest()[:16]
    return f"{cluster}:{digest}"


@dg.sensor(
    job=benchmarks_job,
    minimum_interval_seconds=300,
    description="Request a benchmark collection for each cluster with finished Triton probe "
    "pods not yet read.",
)
def completed_probe_jobs(
    context: dg.SensorEvaluationContext,
    annex: AnnexSettingsResource,
    warehouse: WarehouseResource,
) -> dg.SensorResult:
    """Request a benchmark collection for each cluster with finished probe pods not yet read."""
    settings = annex.load()
    wh = warehouse.get()
    requests: list[dg.RunRequest] = []
    skipped: list[str] = []
    for cluster in sorted(context.instance.get_dynamic_partitions(CLUSTERS_PARTITIONS_NAME)):
        try:
            target = settings.cluster(cluster)
            unread = completed_probe_pods(settings, target) - known_probe_pods(wh, cluster)
        except AnnexError as exc:
            skipped.append(f"{cluster}: {exc}")
            continue
        if unread:
            requests.append(
                dg.RunRequest(run_key=new_pods_run_key(cluster, unread), partition_key=cluster)
            )
    if skipped:
        context.log.warning("probe pods not checked: %s", "; ".join(skipped))
    return dg.SensorResult(run_requests=requests)

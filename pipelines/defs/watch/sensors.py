"""Every few minutes, catch up the watch of each configured cluster (where no Deployment runs)."""

import dagster as dg

from pipelines.defs.watch.assets import watched_gpu_allocations
from pipelines.partitions import CLUSTERS_PARTITIONS_NAME

CATCH_UP_INTERVAL_SECONDS = 300

watch_catch_up_job = dg.define_asset_job(
    "watch_catch_up_job",
    selection=[watched_gpu_allocations],
    description="Catch one cluster's watch up to the API server (annex watch --once): the exact "
    "GPU allocation history.",
)


@dg.sensor(
    job=watch_catch_up_job,
    minimum_interval_seconds=CATCH_UP_INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="One watch catch-up run per cluster partition every five minutes. Stopped by "
    "default: turn it on where the annex watch Deployment is not running (never both).",
)
def watch_catch_up(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """One catch-up run per cluster partition per tick (the run key dedupes a slow tick).

    Stopped by default: turn it on where the ``annex watch`` Deployment is not running.
    """
    tick = int(context.cursor or 0) + 1
    names = context.instance.get_dynamic_partitions(CLUSTERS_PARTITIONS_NAME)
    requests = [
        dg.RunRequest(run_key=f"watch-{name}-{tick}", partition_key=name) for name in sorted(names)
    ]
    return dg.SensorResult(run_requests=requests, cursor=str(tick))

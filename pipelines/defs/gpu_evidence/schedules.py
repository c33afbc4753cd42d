"""Jobs and the telemetry schedule: one run per cluster partition."""

import dagster as dg

from pipelines.defs.cluster_state.schedules import hourly_run_requests
from pipelines.defs.gpu_evidence.assets import gpu_benchmarks, gpu_telemetry, gpu_utilisation
from pipelines.defs.shared import warehouse_schema
from pipelines.partitions import CLUSTERS_PARTITIONS_NAME

telemetry_job = dg.define_asset_job(
    name="gpu_telemetry_job",
    selection=dg.AssetSelection.assets(warehouse_schema, gpu_telemetry, gpu_utilisation),
    description="Collect the last telemetry window of one cluster, roll it up, publish.",
)

benchmarks_job = dg.define_asset_job(
    name="gpu_benchmarks_job",
    selection=dg.AssetSelection.assets(warehouse_schema, gpu_benchmarks, gpu_utilisation),
    description="Read completed probe pods' benchmark records of one cluster, publish.",
)


@dg.schedule(
    job=telemetry_job,
    cron_schedule="10 * * * *",
    execution_timezone="UTC",
    description="Collect every cluster's DCGM telemetry at ten past each hour (after the "
    "inventory), one run per cluster.",
)
def hourly_gpu_telemetry(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    """Collect every cluster's telemetry at ten past each hour (after the inventory)."""
    keys = context.instance.get_dynamic_partitions(CLUSTERS_PARTITIONS_NAME)
    when = context.scheduled_execution_time
    return hourly_run_requests(list(keys), when.isoformat() if when else "manual")

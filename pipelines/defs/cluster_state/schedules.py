"""The hourly inventory: one run per known cluster partition.

One run per cluster (not one run for all) so a cluster that is down fails alone and is retried
alone; the ``duckdb`` pool serialises the runs' writes.
"""

import dagster as dg

from pipelines.defs.cluster_state.assets import (
    cluster_inventory,
    fleet_marts,
    published_warehouse,
)
from pipelines.defs.shared import warehouse_schema
from pipelines.partitions import CLUSTERS_PARTITIONS_NAME

inventory_job = dg.define_asset_job(
    name="cluster_inventory_job",
    selection=dg.AssetSelection.assets(
        warehouse_schema, cluster_inventory, fleet_marts, published_warehouse
    ),
    description="Migrate, collect one cluster, check it, evaluate the marts, then publish.",
)


def hourly_run_requests(partition_keys: list[str], scheduled_for: str) -> list[dg.RunRequest]:
    """One request per cluster; the run key makes a re-evaluated tick idempotent."""
    return [
        dg.RunRequest(run_key=f"{key}:{scheduled_for}", partition_key=key)
        for key in sorted(partition_keys)
    ]


@dg.schedule(
    job=inventory_job,
    cron_schedule="0 * * * *",
    execution_timezone="UTC",
    description="Collect every cluster partition at the top of each hour, one run per cluster "
    "(a cluster that is down fails alone and is retried alone).",
)
def hourly_cluster_inventory(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    """Collect every cluster partition at the top of each hour."""
    keys = context.instance.get_dynamic_partitions(CLUSTERS_PARTITIONS_NAME)
    when = context.scheduled_execution_time
    return hourly_run_requests(list(keys), when.isoformat() if when else "manual")

"""Sensors: cluster discovery from annex's settings, and failures recorded as evidence.

A failed Dagster run (e.g. the API server unreachable after every retry) may never reach
``load_collection``, so it would leave no trace in ``audit.collections``; the failure sensor
writes one so that reports show the gap instead of silently missing a cluster, and carries it
into the analysts' copy (``marts.collections``) without publishing anything else.
"""

import uuid
from collections.abc import Iterable

import dagster as dg

from pipelines.defs.cluster_state.schedules import inventory_job
from pipelines.defs.resources import AnnexSettingsResource, WarehouseResource
from pipelines.partitions import CLUSTERS_PARTITIONS_NAME, clusters
from warehouse import Warehouse
from warehouse.migrate import utc_now
from warehouse.publish_failures import publish_failed_collections

PARTITION_TAG = "dagster/partition"
NO_CLUSTER = "(none)"
"""``audit.collections.cluster`` is NOT NULL; a run without a partition records this."""

MAX_ERROR_CHARS = 4000


def missing_partitions(configured: Iterable[str], existing: Iterable[str]) -> list[str]:
    """Configured cluster names that have no partition yet, in a stable order."""
    known = set(existing)
    return sorted({name for name in configured if name not in known})


def record_run_failure(wh: Warehouse, *, cluster: str | None, error: str, run_id: str) -> str:
    """Insert a 'failed' row from source 'dagster' into ``audit.collections`` and carry it into
    the analysts' copy (``warehouse.publish_failures``: their data stays as last published);
    return its id."""
    collection_id = str(uuid.uuid4())
    now = utc_now()
    message = f"dagster run {run_id} failed: {error}"[:MAX_ERROR_CHARS]
    with wh.writer() as con:
        con.execute(
            "INSERT INTO audit.collections "
            "(collection_id, source, cluster, started_at, finished_at, status, error) "
            "VALUES (?, 'dagster', ?, ?, ?, 'failed', ?)",
            [collection_id, cluster or NO_CLUSTER, now, now, message],
        )
    publish_failed_collections(wh)
    return collection_id


@dg.sensor(
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Add a clusters partition for every [[clusters]] entry of annex's settings "
    "(never removes one: a cluster dropped from the settings keeps its history).",
)
def cluster_discovery(
    context: dg.SensorEvaluationContext, annex: AnnexSettingsResource
) -> dg.SensorResult:
    """Add a ``clusters`` partition for every ``[[clusters]]`` entry of the settings.

    Partitions are never removed here: a cluster dropped from the settings keeps its history.
    """
    configured = [c.name for c in annex.load().clusters]
    existing = context.instance.get_dynamic_partitions(CLUSTERS_PARTITIONS_NAME)
    new = missing_partitions(configured, existing)
    requests = [clusters.build_add_request(new)] if new else []
    return dg.SensorResult(dynamic_partitions_requests=requests)


@dg.run_failure_sensor(
    monitored_jobs=[inventory_job],
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Record each failed inventory run in audit.collections (source dagster) and "
    "show it in the analysts' copy (marts.collections), so reports show the gap instead of "
    "silently missing a cluster. On by default; it reads only runs that fail after it starts.",
)
def record_inventory_failure(
    context: dg.RunFailureSensorContext, warehouse: WarehouseResource
) -> None:
    """Record each failed inventory run in ``audit.collections`` as evidence of the gap."""
    run = context.dagster_run
    record_run_failure(
        warehouse.get(),
        cluster=run.tags.get(PARTITION_TAG),
        error=context.failure_event.message or "unknown failure",
        run_id=run.run_id,
    )

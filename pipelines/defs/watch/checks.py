"""The hourly snapshot as the watch's reconciliation: does the watch agree with it?

``watch_drift`` compares the GPU holdings open in the latest snapshot (``core.gpu_allocations``)
with those the watch had open at that snapshot's time (``core.watched_gpu_allocations``), and
the nodes each knows. Holdings that began or ended within ``GRACE`` of the snapshot are left
out: the snapshot's lists are taken over a few seconds, not at one instant. Any other
difference is drift: a bug, or a watch that lost changes, and worth a look (WARN: evidence is
kept either way, in ``audit.check_results``).
"""

from datetime import timedelta

import dagster as dg
import duckdb

from pipelines.defs.check_results import Outcome, evaluate, one, scope
from pipelines.defs.resources import WarehouseResource
from pipelines.defs.watch.assets import watched_gpu_allocations

GRACE = timedelta(minutes=2)


def watch_drift(
    con: duckdb.DuckDBPyConnection, cluster: str | None, grace: timedelta = GRACE
) -> Outcome:
    """Holdings open in the latest snapshot but not in the watch at that time, and back."""
    seconds = f"{grace.total_seconds():.0f}"
    only_snapshot, only_watch, gpus_snapshot, gpus_watch, snapshots, behind = one(
        con,
        f"""
        WITH latest AS (
            SELECT cluster, started_at AS at FROM audit.collections
            WHERE source = 'kubernetes' AND status = 'succeeded' AND {scope()}
            QUALIFY row_number() OVER (PARTITION BY cluster ORDER BY started_at DESC) = 1
        ),
        snapshot AS (
            SELECT a.cluster, a.pod_uid, a.resource_name, a.gpus, l.at
            FROM core.gpu_allocations AS a JOIN latest AS l USING (cluster)
            WHERE a.valid_to IS NULL
        ),
        watch AS (
            SELECT w.cluster, w.pod_uid, w.resource_name, w.gpus, l.at
            FROM core.watched_gpu_allocations AS w JOIN latest AS l USING (cluster)
            WHERE w.valid_from <= l.at AND (w.valid_to IS NULL OR w.valid_to > l.at)
        ),
        near AS (
            SELECT w.cluster, w.pod_uid FROM core.watched_gpu_allocations AS w
            JOIN latest AS l USING (cluster)
            WHERE abs(epoch(w.valid_from) - epoch(l.at)) <= {seconds}
               OR abs(epoch(coalesce(w.valid_to, w.valid_from)) - epoch(l.at)) <= {seconds}
        ),
        only_snapshot AS (
            SELECT * FROM snapshot AS s
            WHERE NOT EXISTS (SELECT 1 FROM watch AS w WHERE w.cluster = s.cluster
                              AND w.pod_uid = s.pod_uid AND w.resource_name = s.resource_name)
              AND NOT EXISTS (SELECT 1 FROM near AS n WHERE n.cluster = s.cluster
                              AND n.pod_uid = s.pod_uid)
        ),
        only_watch AS (
            SELECT * FROM watch AS w
            WHERE NOT EXISTS (SELECT 1 FROM snapshot AS s WHERE s.cluster = w.cluster
                              AND s.pod_uid = w.pod_uid AND s.resource_name = w.resource_name)
              AND NOT EXISTS (SELECT 1 FROM near AS n WHERE n.cluster = w.cluster
                              AND n.pod_uid = w.pod_uid)
        ),
        behind AS (
            SELECT count(*) AS clusters FROM latest AS l
            WHERE NOT EXISTS (SELECT 1 FROM core.watch_cursors AS c
                              WHERE c.cluster = l.cluster AND c.resource = 'pods'
                                AND c.committed_at >= l.at)
        )
        SELECT
            (SELECT count(*) FROM only_snapshot),
            (SELECT count(*) FROM only_watch),
            (SELECT coalesce(sum(gpus), 0) FROM only_snapshot),
            (SELECT coalesce(sum(gpus), 0) FROM only_watch),
            (SELECT count(*) FROM latest),
            (SELECT clusters FROM behind)
        """,
        cluster,
    )
    return Outcome(
        passed=snapshots > 0 and behind == 0 and only_snapshot == 0 and only_watch == 0,
        metadata={
            "snapshots_compared": snapshots,
            "clusters_watch_behind_snapshot": behind,
            "holdings_only_in_snapshot": only_snapshot,
            "holdings_only_in_watch": only_watch,
            "gpus_only_in_snapshot": int(gpus_snapshot),
            "gpus_only_in_watch": int(gpus_watch),
            "grace_seconds": grace.total_seconds(),
        },
    )


@dg.asset_check(asset=watched_gpu_allocations, blocking=False, pool="duckdb")
def watch_matches_snapshot(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """Drift between the watch-built state and the latest hourly snapshot (a warning)."""
    return evaluate(context, warehouse, watch_drift, dg.AssetCheckSeverity.WARN)


CHECKS = [watch_matches_snapshot]

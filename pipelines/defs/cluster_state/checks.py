"""Asset checks on ``cluster_inventory``: thin SQL queries over the live warehouse.

The checks that would make the published copy wrong are blocking, so a failure stops
``published_warehouse`` and analysts keep the previous good copy. The checks double as
compliance evidence, so each one reports the figures it judged.

Every evaluation is also kept in ``audit.check_results`` (verdict, figures, the collection it
judged), so that reports can cite data-quality evidence without Dagster's event log.

Each check reads the live file (the published copy is not refreshed until the checks pass),
under the writer lock and in pool ``duckdb``. In a partitioned run a check looks at the run's
cluster only; without a partition it looks at every cluster.
"""

from datetime import timedelta

import dagster as dg
import duckdb

from pipelines.defs.check_results import Outcome, evaluate, one, scope
from pipelines.defs.cluster_state.assets import cluster_inventory
from pipelines.defs.resources import WarehouseResource
from warehouse.migrate import utc_now

MAX_COLLECTION_AGE = timedelta(hours=2)


def snapshot_consistent(con: duckdb.DuckDBPyConnection, cluster: str | None) -> Outcome:
    """Every list of the latest succeeded collection came from one API snapshot."""
    lists, inconsistent, collections = one(
        con,
        f"""
        WITH latest AS (
            SELECT cluster, collection_id FROM audit.collections
            WHERE source = 'kubernetes' AND status = 'succeeded' AND {scope()}
            QUALIFY row_number() OVER (PARTITION BY cluster ORDER BY started_at DESC) = 1
        )
        SELECT count(k.collection_id),
               count(k.collection_id) FILTER (WHERE NOT coalesce(k.consistent, false)),
               count(DISTINCT l.collection_id)
        FROM latest AS l LEFT JOIN audit.kubernetes_lists AS k USING (collection_id)
        """,
        cluster,
    )
    return Outcome(
        passed=lists > 0 and inconsistent == 0,
        metadata={"collections": collections, "lists": lists, "inconsistent_lists": inconsistent},
    )


def no_duplicate_uids(con: duckdb.DuckDBPyConnection, cluster: str | None) -> Outcome:
    """No node UID twice among current node versions, no pod UID twice in ``core.pods``."""
    nodes, pods = one(
        con,
        f"""
        SELECT
            (SELECT count(*) FROM (
                SELECT cluster, node_uid FROM core.nodes
                WHERE valid_to IS NULL AND {scope()}
                GROUP BY ALL HAVING count(*) > 1)),
            (SELECT count(*) FROM (
                SELECT cluster, pod_uid FROM core.pods
                WHERE {scope()}
                GROUP BY ALL HAVING count(*) > 1))
        """,
        cluster,
    )
    return Outcome(
        passed=nodes == 0 and pods == 0,
        metadata={"duplicate_node_uids": nodes, "duplicate_pod_uids": pods},
    )


def gpus_on_known_nodes(con: duckdb.DuckDBPyConnection, cluster: str | None) -> Outcome:
    """Every open GPU allocation names a node that currently exists."""
    orphans, gpus = one(
        con,
        f"""
        SELECT count(*), coalesce(sum(a.gpus), 0) FROM core.gpu_allocations AS a
        WHERE a.valid_to IS NULL AND {scope("a")}
          AND NOT EXISTS (
              SELECT 1 FROM core.nodes AS n
              WHERE n.valid_to IS NULL AND n.cluster = a.cluster AND n.node_name = a.node_name)
        """,
        cluster,
    )
    return Outcome(
        passed=orphans == 0,
        metadata={"orphan_allocations": orphans, "orphan_gpus": int(gpus)},
    )


def allocation_within_allocatable(con: duckdb.DuckDBPyConnection, cluster: str | None) -> Outcome:
    """No node has more GPUs allocated than allocatable (devices can fail under pods: a warning)."""
    nodes, beyond = one(
        con,
        f"""
        SELECT count(DISTINCT (cluster, node_name)),
               coalesce(sum(allocated_beyond_allocatable_gpus), 0)
        FROM marts.node_gpu_capacity
        WHERE allocated_beyond_allocatable_gpus > 0 AND {scope()}
        """,
        cluster,
    )
    return Outcome(
        passed=beyond == 0,
        metadata={"nodes_over_allocatable": nodes, "gpus_beyond_allocatable": int(beyond)},
    )


def collection_fresh(
    con: duckdb.DuckDBPyConnection, cluster: str | None, max_age: timedelta = MAX_COLLECTION_AGE
) -> Outcome:
    """The last succeeded Kubernetes collection finished within ``max_age``."""
    (last,) = one(
        con,
        f"""
        SELECT max(finished_at) FROM audit.collections
        WHERE source = 'kubernetes' AND status = 'succeeded' AND {scope()}
        """,
        cluster,
    )
    if last is None:
        return Outcome(passed=False, metadata={"last_succeeded": "never"})
    age = utc_now() - last
    return Outcome(
        passed=age <= max_age,
        metadata={
            "last_succeeded": last.isoformat(),
            "age_minutes": round(age.total_seconds() / 60, 1),
            "max_age_minutes": max_age.total_seconds() / 60,
        },
    )


# -- checks ------------------------------------------------------------------------------------


@dg.asset_check(asset=cluster_inventory, blocking=True, pool="duckdb")
def inventory_snapshot_consistent(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """The latest collection's lists are each one consistent API snapshot."""
    return evaluate(context, warehouse, snapshot_consistent)


@dg.asset_check(asset=cluster_inventory, blocking=True, pool="duckdb")
def inventory_no_duplicate_uids(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """Duplicate UIDs would double-count nodes, pods and GPUs in every report."""
    return evaluate(context, warehouse, no_duplicate_uids)


@dg.asset_check(asset=cluster_inventory, blocking=True, pool="duckdb")
def inventory_gpus_on_known_nodes(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """An allocation on an unknown node would vanish from capacity marts while still counted."""
    return evaluate(context, warehouse, gpus_on_known_nodes)


@dg.asset_check(asset=cluster_inventory, blocking=False, pool="duckdb")
def inventory_allocation_within_allocatable(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """Warn only: GPUs can turn unhealthy under running pods, which is real, not a load bug."""
    return evaluate(context, warehouse, allocation_within_allocatable, dg.AssetCheckSeverity.WARN)


@dg.asset_check(asset=cluster_inventory, blocking=False, pool="duckdb")
def inventory_fresh(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """The cluster was collected within two hours; stale evidence is worth a look, not a stop."""
    return evaluate(context, warehouse, collection_fresh)


CHECKS = [
    inventory_snapshot_consistent,
    inventory_no_duplicate_uids,
    inventory_gpus_on_known_nodes,
    inventory_allocation_within_allocatable,
    inventory_fresh,
]

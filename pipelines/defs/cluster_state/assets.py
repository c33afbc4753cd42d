"""Cluster-state assets: one inventory per cluster, the fleet marts, the published copy.

Each asset is a thin call into ``collectors`` and ``warehouse``; the plain functions below do
the work so that they can be tested (and reused by the CLI) without Dagster.

No ``from __future__ import annotations`` in the Dagster modules: Dagster inspects the
annotations of ``context`` and resource parameters at decoration time and rejects strings.
"""

from typing import Any

import dagster as dg
import duckdb

from annex.settings import ClusterSettings, Settings
from pipelines.defs.resources import AnnexSettingsResource, WarehouseResource
from pipelines.defs.shared import (
    collection_asset,
    collection_metadata,
)
from services.inventory import collect_cluster_inventory
from warehouse import CollectionResult, Warehouse

GROUP = "cluster_state"


# -- plain functions ---------------------------------------------------------------------------


def collect_into_warehouse(
    settings: Settings, wh: Warehouse, target: ClusterSettings
) -> CollectionResult:
    """Collect one cluster and load it atomically, as ``annex collect`` does, but unpublished.

    Publishing is left to ``published_warehouse`` so that blocking checks can stop a bad
    collection from reaching analysts.
    """
    return collect_cluster_inventory(settings, wh, target, publish=False)


def snapshot_consistency(con: duckdb.DuckDBPyConnection, collection_id: str) -> tuple[int, int]:
    """(lists, consistent lists) of one collection, from ``audit.kubernetes_lists``."""
    row = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE consistent) "
        "FROM audit.kubernetes_lists WHERE collection_id = ?",
        [collection_id],
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def fleet_summary_markdown(con: duckdb.DuckDBPyConnection, cluster: str) -> str:
    """The cluster's row of ``marts.fleet_summary`` as a two-column Markdown table.

    Transposed (one line per column) because the row is wide and the Dagster UI is narrow.
    """
    cursor = con.execute("SELECT * FROM marts.fleet_summary WHERE cluster = ?", [cluster])
    names = [d[0] for d in cursor.description or []]
    row = cursor.fetchone()
    if row is None:
        return f"_no row for cluster `{cluster}` in marts.fleet_summary_"
    lines = ["| column | value |", "| --- | --- |"]
    lines.extend(f"| {name} | {_cell(value)} |" for name, value in zip(names, row, strict=True))
    return "\n".join(lines)


def _cell(value: Any) -> str:
    return "" if value is None else str(value).replace("|", "\\|")


def inventory_metadata(wh: Warehouse, result: CollectionResult) -> dict[str, Any]:
    """What the Dagster UI shows for one collection: ids, counts, consistency, a preview."""
    with wh.writer() as con:
        lists, consistent = snapshot_consistency(con, result.collection_id)
        preview = fleet_summary_markdown(con, result.cluster)
    metadata = collection_metadata(result)
    metadata.update(
        {
            "snapshot_lists": lists,
            "snapshot_consistent_lists": consistent,
            "snapshot_consistent": lists > 0 and lists == consistent,
            "fleet_summary": dg.MetadataValue.md(preview),
        }
    )
    return metadata


# -- assets ------------------------------------------------------------------------------------


@collection_asset(GROUP, {"kubernetes", "duckdb"})
def cluster_inventory(
    context: dg.AssetExecutionContext, annex: AnnexSettingsResource, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    """One Kubernetes collection of the partition's cluster, loaded into the live warehouse."""
    settings = annex.load()
    target = settings.cluster(context.partition_key)
    wh = warehouse.get()
    result = collect_into_warehouse(settings, wh, target)
    return dg.MaterializeResult(metadata=inventory_metadata(wh, result))


def marts_row_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Rows in every ``marts`` view: evaluating each one proves it still works on new data."""
    names = [
        row[0]
        for row in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE schema_name = 'marts' ORDER BY view_name"
        ).fetchall()
    ]
    counts: dict[str, int] = {}
    for name in names:
        row = con.execute(f'SELECT count(*) FROM marts."{name}"').fetchone()
        counts[name] = int(row[0]) if row else 0
    return counts


@dg.asset(group_name=GROUP, pool="duckdb", kinds={"duckdb"}, deps=[cluster_inventory])
def fleet_marts(warehouse: WarehouseResource) -> dg.MaterializeResult:
    """The marts analysts and reports read, after each inventory that passed its checks.

    Most are views over ``core``, always current; evaluating them here means a view broken by
    new data fails this step, before the published copy is replaced. The hourly GPU-hour tables
    (``marts.node_gpu_hours`` and those of the utilisation rollup) are rebuilt here for the hours
    the new inventory touched.
    """
    from warehouse.models.utilisation import refresh_gpu_hourly

    with warehouse.get().writer() as con:
        refreshed = refresh_gpu_hourly(con)
        counts = marts_row_counts(con)
    metadata: dict[str, Any] = {f"rows/{name}": count for name, count in counts.items()}
    metadata.update({f"refresh/{key}": value for key, value in refreshed.items()})
    return dg.MaterializeResult(metadata=metadata)


@dg.asset(group_name=GROUP, pool="duckdb", kinds={"duckdb"}, deps=[fleet_marts])
def published_warehouse(warehouse: WarehouseResource) -> dg.MaterializeResult:
    """Refresh the analysts' read-only copy, only after the inventory's blocking checks pass."""
    path = warehouse.get().publish()
    return dg.MaterializeResult(metadata={"path": dg.MetadataValue.path(str(path))})

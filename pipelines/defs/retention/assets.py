"""``annex warehouse compact`` in Dagster: raw rows past ``[retention]`` moved to
Hive-partitioned Parquet under ``[retention] dir`` (default ``archive/`` beside the warehouse
file) through ``warehouse.compaction.compact_warehouse``, the function the CLI calls.

In pool ``duckdb``: it deletes rows of the live file under the writer lock, as a collection
writes. It depends on the rollups, so a run after them finds their hours final.

No ``from __future__ import annotations`` in the Dagster modules (see cluster_state/assets.py).
"""

import dagster as dg

from pipelines.defs.resources import AnnexSettingsResource, WarehouseResource
from warehouse.compaction import CompactionResult, compact_warehouse

GROUP = "retention"
ROLLUPS = [dg.AssetKey(name) for name in ("gpu_utilisation", "published_warehouse")]
"""The assets whose figures must be final before their raw rows move, for the graph's
lineage (the compaction itself checks it: warehouse.compaction.horizon)."""


class CompactionConfig(dg.Config):
    dry_run: bool = False
    """List what would move (as ``annex warehouse compact --dry-run``), change nothing."""


def compaction_metadata(result: CompactionResult) -> dict[str, object]:
    """What moved (or would), per table, and the horizon of each table."""
    metadata: dict[str, object] = {
        "dry_run": result.dry_run,
        "partitions": len(result.partitions),
        "rows": result.rows,
        "bytes": result.bytes,
    }
    for partition in result.partitions:
        key = f"rows/{partition.table}"
        metadata[key] = int(metadata.get(key, 0)) + partition.rows  # type: ignore[call-overload]
    for table, day in result.horizons.items():
        metadata[f"kept_from/{table}"] = day.isoformat()
    return metadata


@dg.asset(group_name=GROUP, pool="duckdb", kinds={"duckdb", "parquet"}, deps=ROLLUPS)
def warehouse_compaction(
    config: CompactionConfig, annex: AnnexSettingsResource, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    """Raw rows past [retention] (telemetry samples, raw.kubernetes_*, request logs, lineage
    payloads, attestation claims and archived submission files) moved to Parquet, one atomic
    step per partition, recorded in audit.compactions and readable as archive.<table>
    (annex warehouse compact). Rollups, intervals, verdicts and report versions
    are kept forever. Reruns are no-ops."""
    settings = annex.load()
    result = compact_warehouse(warehouse.get(), settings.retention, dry_run=config.dry_run)
    return dg.MaterializeResult(metadata=compaction_metadata(result))

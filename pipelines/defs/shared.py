"""What every source's assets share: the warehouse schema asset, the retry policy of network
collections, the decorator of a collection asset, and the metadata the Dagster UI shows for one
collection.

One module so that each source (cluster_state, gpu_evidence, attestation, lineage, watch)
depends on these pieces, not on another source's assets.

No ``from __future__ import annotations`` in the Dagster modules (see cluster_state/assets.py).
"""

from collections.abc import Callable
from typing import Any

import dagster as dg

from pipelines.defs.resources import WarehouseResource
from pipelines.partitions import clusters
from warehouse import CollectionResult

COLLECT_RETRY = dg.RetryPolicy(max_retries=3, delay=5, backoff=dg.Backoff.EXPONENTIAL)
"""Network collectors get retried: the API server (or Prometheus) may be briefly unreachable
or throttling."""


@dg.asset(group_name="cluster_state", pool="duckdb", kinds={"duckdb"})
def warehouse_schema(warehouse: WarehouseResource) -> dg.MaterializeResult:
    """Apply pending warehouse migrations; every other asset depends on the schema existing."""
    wh = warehouse.get()
    applied = wh.migrate()
    return dg.MaterializeResult(
        metadata={
            "applied_now": ", ".join(applied) or "none",
            "migrations": len(wh.migrations()),
            "path": dg.MetadataValue.path(str(wh.path)),
        }
    )


def collection_asset(
    group_name: str, kinds: set[str], *, per_cluster: bool = True
) -> Callable[[Callable[..., Any]], dg.AssetsDefinition]:
    """The decorator of an asset that collects into the live warehouse: in pool ``duckdb``
    (one writer at a time), after the schema, retried (``COLLECT_RETRY``), one partition per
    cluster unless the source is not per cluster (lineage events name their cluster)."""
    return dg.asset(
        group_name=group_name,
        pool="duckdb",
        kinds=kinds,
        partitions_def=clusters if per_cluster else None,
        deps=[warehouse_schema],
        retry_policy=COLLECT_RETRY,
    )


def collection_metadata(result: CollectionResult) -> dict[str, Any]:
    """What the Dagster UI shows for one collection: its id, rejected and loaded row counts."""
    metadata: dict[str, Any] = {
        "collection_id": result.collection_id,
        "rejected_count": result.rejected_count,
        "dagster/row_count": sum(result.row_counts.values()),
    }
    for table, count in sorted(result.row_counts.items()):
        metadata[f"rows/{table}"] = count
    return metadata

"""GPU evidence assets: benchmark records, DCGM telemetry, and the utilisation rollups.

Thin calls into ``services.gpu_evidence`` (plain, tested functions). Collections load unpublished;
``gpu_utilisation`` rebuilds the hourly marts for what is new and then publishes, after the
blocking checks of the collections passed.

No ``from __future__ import annotations`` in the Dagster modules (see cluster_state/assets.py).
"""

import dagster as dg

from pipelines.defs.resources import AnnexSettingsResource, WarehouseResource
from pipelines.defs.shared import (
    collection_asset,
    collection_metadata,
)
from services.gpu_evidence import (
    collect_gpu_benchmarks,
    collect_gpu_telemetry,
    refresh_gpu_utilisation,
)

GROUP = "gpu_evidence"


@collection_asset(GROUP, {"kubernetes", "duckdb"})
def gpu_benchmarks(
    context: dg.AssetExecutionContext, annex: AnnexSettingsResource, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    """Benchmark records from the logs of completed Triton probe pods not read before."""
    settings = annex.load()
    result = collect_gpu_benchmarks(
        settings, warehouse.get(), settings.cluster(context.partition_key), publish=False
    )
    return dg.MaterializeResult(metadata=collection_metadata(result))


@collection_asset(GROUP, {"prometheus", "duckdb"})
def gpu_telemetry(
    context: dg.AssetExecutionContext, annex: AnnexSettingsResource, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    """The last telemetry window of DCGM samples (Prometheus range API or exporter scrapes)."""
    settings = annex.load()
    result = collect_gpu_telemetry(
        settings, warehouse.get(), settings.cluster(context.partition_key), publish=False
    )
    return dg.MaterializeResult(metadata=collection_metadata(result))


@dg.asset(
    group_name=GROUP,
    pool="duckdb",
    kinds={"duckdb"},
    deps=[gpu_telemetry, gpu_benchmarks],
)
def gpu_utilisation(warehouse: WarehouseResource) -> dg.MaterializeResult:
    """Rebuild marts.gpu_hourly (and what depends on it) for new telemetry, then publish."""
    counts = refresh_gpu_utilisation(warehouse.get(), publish=True)
    return dg.MaterializeResult(metadata={f"refresh/{k}": v for k, v in counts.items()})

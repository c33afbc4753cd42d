"""The compute marts: a thin call into ``services.compute.refresh_compute_marts``.

Downstream of the lineage models (runs and token counts) and the GPU utilisation rollups
(telemetry per GPU-hour); reads the model registry folder named in the settings, so a registry
error fails the asset with the file and field named.

No ``from __future__ import annotations`` in the Dagster modules (see cluster_state/assets.py).
"""

import dagster as dg

from pipelines.defs.gpu_evidence.assets import gpu_utilisation
from pipelines.defs.lineage.assets import lineage_models
from pipelines.defs.resources import AnnexSettingsResource, WarehouseResource
from services.compute import refresh_compute_marts

GROUP = "compute"


@dg.asset(
    group_name=GROUP,
    pool="duckdb",
    kinds={"duckdb"},
    deps=[lineage_models, gpu_utilisation],
)
def training_compute(
    annex: AnnexSettingsResource, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    """Training compute (both methods), time, energy (measured and estimated) per run and model,
    and the Article 51 thresholds, refreshed in one transaction (the runs whose evidence changed
    recomputed, the others kept); then publish."""
    counts = refresh_compute_marts(annex.load(), wh=warehouse.get())
    return dg.MaterializeResult(metadata={f"refresh/{k}": v for k, v in counts.items()})

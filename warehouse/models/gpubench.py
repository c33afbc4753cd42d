"""The benchmark source model: Triton probe records from ``collectors/gpubench``.

The collector rejects what one line can show is wrong (malformed, impossible, above peak, on
the wrong node for its pod). The merge adds what only the warehouse can know: a GPU UUID that
DCGM (or most of its earlier records) places on another node (``gpu_on_other_node``), and a GPU
model that contradicts the node's own ``nvidia.com/gpu.product`` label (``gpu_model_mismatch``).
Records are unique by ``record_id``; pods are read once (``core.gpu_benchmark_pods``).
"""

from __future__ import annotations

from pathlib import Path

from warehouse.load import SourceModel

_HERE = Path(__file__).parent

GPUBENCH_MODEL = SourceModel(
    source="gpubench",
    staging_sql=(_HERE / "gpubench_staging.sql").read_text(encoding="utf-8"),
    merge_sql=(_HERE / "gpubench_merge.sql").read_text(encoding="utf-8"),
)

"""The Arrow schemas of the tables the gpubench collector yields (the issue-4 contract).

These are the collector's contract with the warehouse: column names and types are fixed there,
so change them only together with the warehouse's staging of these tables. Times are naive UTC
(DESIGN §2); ``kernel_config`` and ``shape`` are JSON text with sorted keys, so that equal
objects compare equal in SQL.
"""

from __future__ import annotations

import pyarrow as pa

from collectors.kubernetes.schema import REJECTED, TIMESTAMP

GPUBENCH_RECORDS = pa.schema(
    [
        ("record_id", pa.string()),
        ("schema_version", pa.int32()),
        ("ts", TIMESTAMP),
        ("namespace", pa.string()),
        ("job", pa.string()),
        ("pod", pa.string()),
        ("pod_uid", pa.string()),
        ("node", pa.string()),
        ("gpu_index", pa.int32()),
        ("gpu_uuid", pa.string()),
        ("gpu_model", pa.string()),
        ("gpu_sku", pa.string()),
        ("driver_version", pa.string()),
        ("backend", pa.string()),
        ("triton_version", pa.string()),
        ("torch_version", pa.string()),
        ("benchmark", pa.string()),
        ("kernel", pa.string()),
        ("kernel_config", pa.string()),
        ("shape", pa.string()),
        ("dtype", pa.string()),
        ("timer", pa.string()),
        ("warmup_ms", pa.float64()),
        ("rep_ms", pa.float64()),
        ("l2_flush", pa.bool_()),
        ("n_samples", pa.int32()),
        ("ms_p20", pa.float64()),
        ("ms_p50", pa.float64()),
        ("ms_p80", pa.float64()),
        ("flops", pa.float64()),
        ("bytes", pa.float64()),
        ("achieved_tflops", pa.float64()),
        ("achieved_gbps", pa.float64()),
        ("peak_tflops", pa.float64()),
        ("peak_gbps", pa.float64()),
        ("peak_source", pa.string()),
        ("frac_peak_flops", pa.float64()),
        ("frac_peak_bw", pa.float64()),
        ("correct", pa.bool_()),
        ("simulated", pa.bool_()),
        ("locator", pa.string()),
    ]
)
"""One accepted measurement. ``gpu_sku``, ``flops``, ``bytes``, ``achieved_*``, ``peak_*`` and
``frac_*`` are recomputed at ingest, never copied from the record."""

GPUBENCH_PODS = pa.schema(
    [
        ("pod_uid", pa.string()),
        ("namespace", pa.string()),
        ("pod", pa.string()),
        ("job", pa.string()),
        ("node", pa.string()),
        ("phase", pa.string()),
        ("finished_at", TIMESTAMP),
        ("log_bytes", pa.int64()),
        ("log_truncated", pa.bool_()),
        ("records", pa.int32()),
        ("rejected", pa.int32()),
        ("text_lines", pa.int32()),
    ]
)
"""One row per probe pod whose log was read. A pod whose log could not be read has no row
(only a ``log_unavailable`` rejection), so the next collection tries it again."""

GPU_PEAKS = pa.schema(
    [
        ("gpu_sku", pa.string()),
        ("dtype", pa.string()),
        ("peak_tflops_dense", pa.float64()),
        ("peak_hbm_gbps", pa.float64()),
        ("tdp_watts", pa.float64()),
        ("source_url", pa.string()),
    ]
)
"""The whole peak table of ``probes.gpubench.peaks``, one row per (gpu_sku, dtype)."""

SCHEMAS: dict[str, pa.Schema] = {
    "gpubench_records": GPUBENCH_RECORDS,
    "gpubench_pods": GPUBENCH_PODS,
    "gpu_peaks": GPU_PEAKS,
    "rejected": REJECTED,
}
"""Every table name ``collect_gpubench`` yields, with its schema."""

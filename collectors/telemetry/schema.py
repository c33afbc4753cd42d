"""The Arrow schemas of the tables the telemetry collector yields (its contract with the
warehouse). Times are naive UTC ``timestamp[us]``; values are in the canonical unit named by
``telemetry_series.unit`` (see ``fields``)."""

from __future__ import annotations

import pyarrow as pa

TIMESTAMP = pa.timestamp("us")
LABELS = pa.map_(pa.string(), pa.string())

SERIES = pa.schema(
    [
        ("series_index", pa.uint32()),  # dense from 0, local to one collection
        ("gpu_uuid", pa.string()),
        ("field_id", pa.uint16()),  # NULL for a DCGM field annex does not know
        ("metric", pa.string()),  # canonical name, or the raw name when unknown
        ("unit", pa.string()),
        ("kind", pa.string()),  # "gauge" | "counter"
        ("exporter_metric", pa.string()),  # the name as received
        ("hostname", pa.string()),
        ("gpu_index", pa.int32()),
        ("model_name", pa.string()),
        ("pci_bus_id", pa.string()),
        ("device", pa.string()),
        ("pod", pa.string()),
        ("namespace", pa.string()),
        ("container", pa.string()),
        ("mig_profile", pa.string()),
        ("mig_instance", pa.int32()),
        ("driver_version", pa.string()),
        ("link", pa.string()),  # a per-link series' link (NVLink), else NULL
        ("pod_share", pa.bool_()),  # a shared GPU's per-pod line (its device line is the GPU's)
        ("labels", LABELS),  # the remaining labels
        ("source", pa.string()),  # "scrape" | "query_range"
        ("target", pa.string()),  # URL without credentials
    ]
)

SAMPLES = pa.schema(
    [
        ("ts", TIMESTAMP),
        ("series_index", pa.uint32()),
        ("value", pa.float64()),
    ]
)

EXTENTS = pa.schema(
    [
        ("series_index", pa.uint32()),
        ("first_ts", TIMESTAMP),  # earliest sample of the series in this collection
        ("last_ts", TIMESTAMP),  # latest one
        ("samples", pa.int64()),  # how many samples of it the collection yielded
    ]
)
"""One row per series that had samples, yielded once after the last samples batch: the
warehouse keeps each series' first/last sample time (its idempotency watermark) from it instead
of scanning the samples it just loaded."""

TARGETS = pa.schema(
    [
        ("target", pa.string()),
        ("source", pa.string()),
        ("started_at", TIMESTAMP),
        ("duration_ms", pa.float64()),
        ("http_status", pa.int32()),
        ("status", pa.string()),  # "ok" | "failed"
        ("error", pa.string()),
        ("series", pa.int32()),
        ("samples", pa.int64()),
        ("skipped_nan", pa.int64()),
        ("unknown_metrics", pa.int32()),
        ("non_dcgm_metrics", pa.int32()),
        ("blank_values", pa.int64()),  # DCGM blank sentinels dropped as missing
    ]
)

REJECTED = pa.schema(
    [
        ("locator", pa.string()),
        ("reason_code", pa.string()),
        ("message", pa.string()),
        ("raw", pa.binary()),
    ]
)

SCHEMAS: dict[str, pa.Schema] = {
    "telemetry_series": SERIES,
    "telemetry_samples": SAMPLES,
    "telemetry_extents": EXTENTS,
    "telemetry_targets": TARGETS,
    "rejected": REJECTED,
}
"""Every table name the telemetry collectors yield, with its schema."""

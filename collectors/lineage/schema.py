"""The Arrow schemas of the tables the lineage collector yields (its contract with the
warehouse, ``warehouse/models/lineage.py``).

Events are stored as received (less any facet dropped as too large, with a finding), with
the datasets they name and their facets taken out once where the event is decoded anyway
(``collectors.lineage.graph``): the warehouse normalises jobs, runs, datasets, versions,
inputs/outputs and facets from those columns in set-based SQL, never parsing a payload twice.
"""

from __future__ import annotations

import pyarrow as pa

TIMESTAMP = pa.timestamp("us")
"""Naive UTC."""

DATASETS = pa.list_(
    pa.struct(
        [
            ("item", pa.int32()),  # its number in the event, from 0
            ("direction", pa.string()),  # 'INPUT' | 'OUTPUT' | 'DATASET'
            ("namespace", pa.string()),
            ("name", pa.string()),
            ("version", pa.string()),  # the version facet's datasetVersion, else NULL
        ]
    )
)
"""The datasets an event names (``graph.graph_parts``)."""

FACETS = pa.list_(
    pa.struct(
        [
            ("place", pa.string()),  # 'run' | 'job' | 'dataset' | 'input' | 'output'
            ("item", pa.int32()),  # the dataset's item (dataset, input, output), else NULL
            ("name", pa.string()),  # the facet's key
            ("deleted", pa.bool_()),  # {"_deleted": true}
            ("start", pa.int32()),  # where its JSON text starts in the payload (0-based)
            ("length", pa.int32()),  # and its length, in characters
            ("facet", pa.string()),  # its JSON text, only where start is NULL
        ]
    )
)
"""An event's facets (``graph.graph_parts``)."""

LINEAGE_EVENTS = pa.schema(
    [
        ("event_id", pa.string()),  # sha256 hex of the RFC 8785 canonical JSON as received
        ("received_at", TIMESTAMP),  # when annex's intake (or file reader) received it
        ("event_time", TIMESTAMP),  # eventTime converted to UTC
        ("event_time_offset_minutes", pa.int16()),  # the offset it was sent with
        ("event_kind", pa.string()),  # 'RunEvent' | 'JobEvent' | 'DatasetEvent'
        ("event_type", pa.string()),  # START|RUNNING|COMPLETE|ABORT|FAIL|OTHER|NULL
        ("run_id", pa.string()),  # run.runId, canonical lower-case UUID text; NULL if no run
        ("job_namespace", pa.string()),
        ("job_name", pa.string()),
        ("producer", pa.string()),
        ("schema_url", pa.string()),
        ("payload", pa.string()),  # the event as JSON text
        ("findings", pa.list_(pa.string())),  # e.g. 'facet_too_large: run.facets.x'
        ("datasets", DATASETS),
        ("facets", FACETS),
        ("source_locator", pa.string()),  # spool file#line, or file path#line
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

TABLES: dict[str, pa.Schema] = {"lineage_events": LINEAGE_EVENTS, "rejected": REJECTED}
"""Every table name ``collect_lineage`` yields, with its schema."""

"""The Arrow schemas of the tables the lineage collector yields (its contract with the
warehouse, ``warehouse/models/lineage.py``).

Events are stored as received (less any facet dropped as too large, with a finding), with the
fields every step of the merge keys on (ids, time, kind, run and job) as columns; the warehouse
parses each new payload once, in SQL, for the datasets it names and its facets
(``warehouse/models/lineage_merge.sql``).
"""

from __future__ import annotations

import pyarrow as pa

TIMESTAMP = pa.timestamp("us")
"""Naive UTC."""

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
        # the event as JSON text; Arrow's JSON type, which DuckDB stages as JSON without
        # parsing it: the merge parses each new payload once (and rejects one that is not JSON)
        ("payload", pa.json_()),
        ("findings", pa.list_(pa.string())),  # e.g. 'facet_too_large: run.facets.x'
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

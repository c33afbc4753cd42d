"""The Arrow schemas of the tables the lineage collector yields (its contract with the
warehouse, ``warehouse/models/lineage.py``).

Events are stored as received (less any facet dropped as too large, with a finding), with the
fields every step of the merge keys on (ids, time, kind, run and job) as columns. The datasets
each event names and where its facets lie in its text come alongside, read from the text by
``collectors.lineage.graph`` (``LINEAGE_ITEMS``, ``LINEAGE_FACETS``); an event the reader leaves
(``graph_read`` false) is parsed by the warehouse (``warehouse/models/lineage_merge.sql``).
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
        # the event as JSON text; staged as text (the merge cuts facets out of it, parses the
        # payloads the collector did not read, and rejects one that is not JSON)
        ("payload", pa.string()),
        ("findings", pa.list_(pa.string())),  # e.g. 'facet_too_large: run.facets.x'
        ("source_locator", pa.string()),  # spool file#line, or file path#line
        # the event's number in its collection, which its LINEAGE_ITEMS and LINEAGE_FACETS
        # rows name; and whether they hold its graph (false: the warehouse parses the payload)
        ("event_index", pa.int64()),
        ("graph_read", pa.bool_()),
    ]
)

LINEAGE_ITEMS = pa.schema(
    [
        ("event_index", pa.int64()),
        ("direction", pa.string()),  # 'INPUT' | 'OUTPUT' | 'DATASET' (a dataset event's)
        ("item", pa.int32()),  # numbered in the event: inputs from 0, then outputs, the dataset
        ("namespace", pa.string()),
        ("name", pa.string()),
        ("version", pa.string()),  # its version facet's datasetVersion; NULL if none
    ]
)

LINEAGE_FACETS = pa.schema(
    [
        ("event_index", pa.int64()),
        # 'run' | 'job' (their facets) | 'dataset' (a dataset item's facets) | 'input' |
        # 'output' (an input's inputFacets, an output's outputFacets)
        ("place", pa.string()),
        ("item", pa.int32()),  # the dataset item's number (LINEAGE_ITEMS.item); NULL: run, job
        ("facet_name", pa.string()),
        ("value_start", pa.int32()),  # the facet's JSON value in the payload: its first
        ("value_length", pa.int32()),  # character (code point, from 0) and its length in them
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

TABLES: dict[str, pa.Schema] = {
    "lineage_events": LINEAGE_EVENTS,
    "lineage_items": LINEAGE_ITEMS,
    "lineage_facets": LINEAGE_FACETS,
    "rejected": REJECTED,
}
"""Every table name ``collect_lineage`` yields, with its schema."""

"""The lineage collector: OpenLineage 2-0-2 run, job and dataset events, checked and identified.

Public API::

    batch = parse_events(body, content_encoding="gzip", now=datetime.now(UTC))
    for a in batch.accepted: a.event_id, a.kind, a.event_time, a.event, a.findings
    for r in batch.rejected: r.index, r.reason, r.message, r.path, r.raw
    violations = validate_event(obj)   # [] when valid

Pure functions (no DuckDB, no network): ``collectors.lineage.events`` (body decoding, bad-input
rules, ``event_id``), ``collectors.lineage.validate`` (the schema validator). The vendored
OpenLineage schema is in ``spec/``, annex's ``annex_`` facet schemas in ``facets/``.
"""

from typing import Any

__all__ = [
    "REASONS",
    "Accepted",
    "Finding",
    "ParsedBatch",
    "Rejected",
    "Violation",
    "canonical_json",
    "event_id",
    "parse_events",
    "validate_event",
]

_EXPORTS = {
    "REASONS": "collectors.lineage.events",
    "Accepted": "collectors.lineage.events",
    "Finding": "collectors.lineage.events",
    "ParsedBatch": "collectors.lineage.events",
    "Rejected": "collectors.lineage.events",
    "canonical_json": "collectors.lineage.events",
    "event_id": "collectors.lineage.events",
    "parse_events": "collectors.lineage.events",
    "Violation": "collectors.lineage.validate",
    "validate_event": "collectors.lineage.validate",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'collectors.lineage' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

"""What every dataset-metadata import (Croissant, Hugging Face cards) must produce: DatasetEvents
that annex's ingest accepts unchanged, and whose facets the official schemas (jsonschema, the
oracle) accept too."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from collectors.lineage import validate as V
from collectors.lineage.events import parse_events
from tests.helpers.paths import FIXTURES as SHARED_FIXTURES

FIXTURES = SHARED_FIXTURES / "lineage"
T = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
"""The imports' event time in these tests; the ingest runs a day later."""

_DOCS = dict(V.load_schemas())
for path in sorted((FIXTURES / "facets").glob("*.json")):
    doc = json.loads(path.read_text())
    _DOCS.setdefault(doc["$id"], doc)
REGISTRY = Registry().with_resources(
    (uri, Resource.from_contents(doc, default_specification=DRAFT202012))
    for uri, doc in _DOCS.items()
)


def accepted(event: dict) -> dict:
    """parse_events accepts the event with no rejection and no finding; returns it as stored."""
    batch = parse_events(json.dumps(event).encode(), content_encoding=None, now=T + timedelta(1))
    assert batch.rejected == (), batch.rejected
    assert len(batch.accepted) == 1 and batch.accepted[0].kind == "DatasetEvent"
    assert batch.accepted[0].findings == ()
    return batch.accepted[0].event


def schema_valid(event: dict) -> None:
    """The whole event against the official DatasetEvent, each facet against its _schemaURL."""
    fmt = FormatChecker()
    Draft202012Validator(
        {"$ref": event["schemaURL"]}, registry=REGISTRY, format_checker=fmt
    ).validate(event)
    for key, facet in event["dataset"].get("facets", {}).items():
        validator = Draft202012Validator(
            {"$ref": facet["_schemaURL"]}, registry=REGISTRY, format_checker=fmt
        )
        errors = [e.message for e in validator.iter_errors(facet)]
        assert not errors, (key, errors)

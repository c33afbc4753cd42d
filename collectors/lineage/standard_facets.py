"""The standard OpenLineage facets, each checked against its own official schema.

The OpenLineage event schema (``spec/OpenLineage.json``) checks every facet only against the
base facet (``_producer`` and ``_schemaURL``); the standard facets (``dataSource``, ``schema``,
``sql``, ``parent``, ``columnLineage``, ``symlinks``, ``errorMessage``, ``processing_engine``,
``nominalTime``, ``jobType``, ``inputStatistics``, ``outputStatistics``, ``dataQualityMetrics``,
...) have schemas of their own, vendored unchanged in ``spec/facets/`` (the OpenLineage
repository's ``spec/facets``, the commit ``spec/README.md`` names). Which key each schema
defines, and at which place (run, job, dataset, an input's ``inputFacets``, an output's
``outputFacets``), is read from the schema itself: its ``properties`` name the key, the
OpenLineage base facet its definition extends names the place.

``facet_violations(event, kind)`` returns one ``FacetViolation`` per standard facet of an
event (already valid against the event schema) that breaks its schema. A violation never
rejects the event: the intake records it as a finding on the accepted event
(``facet_schema_violation``), so an analyst finds it in ``core.lineage_facet_violations``, and
the facet is stored as sent.

A ``{"_deleted": true}`` marker is not checked (it removes the facet). A facet whose
``_schemaURL`` names the same facet class at another MODEL version (SchemaVer's
first number: a breaking change) than the vendored one is not checked: the vendored schema is
not the one it claims to follow. Other facets (a producer's own, ``spark_properties``,
``dbt_version``, ``airflow``) have no official schema and are not checked here.

How: every standard schema is compiled once, by jsonschema_rs with the validator's options
(``collectors.lineage.validate.fast_options``), into one validator per event kind that looks
only at the facet maps; a valid event costs one call into Rust, and only an event with a
violation is walked again to name each facet and reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from collectors.lineage.validate import (
    EVENT_KINDS,
    OPENLINEAGE_SCHEMA_ID,
    SPEC_DIR,
    fast_options,
    format_path,
)

__all__ = ["STANDARD_FACET_DIR", "FacetViolation", "StandardFacet", "facet_violations"]

STANDARD_FACET_DIR: Path = SPEC_DIR / "facets"

_BASE_PLACES = {
    "RunFacet": "run",
    "JobFacet": "job",
    "DatasetFacet": "dataset",
    "InputDatasetFacet": "input",
    "OutputDatasetFacet": "output",
}
_MAX_REASONS = 3
_SCHEMA_URL = re.compile(r"/spec/facets/(\d+)-\d+-\d+/([A-Za-z0-9_]+)\.json")


@dataclass(frozen=True, slots=True)
class StandardFacet:
    """One standard facet: its key at one place, and the schema that defines it."""

    place: str  # run | job | dataset | input | output
    key: str  # e.g. "schema", "dataSource", "inputStatistics"
    facet_class: str  # e.g. "SchemaDatasetFacet"
    version: str  # the vendored schema's version, e.g. "1-2-0"
    schema_ref: str  # the definition's absolute URI

    @property
    def model(self) -> str:
        return self.version.split("-", 1)[0]


@dataclass(frozen=True, slots=True)
class FacetViolation:
    """A standard facet that breaks its schema: where it is, and why."""

    path: str  # e.g. "inputs[0].facets.schema"
    facet: StandardFacet
    reason: str


def _places(doc: dict[str, Any], node: Any, seen: frozenset[str] = frozenset()) -> set[str]:
    """The places of the OpenLineage base facets a definition extends (its ``allOf``,
    ``oneOf`` and ``anyOf`` branches, through the document's own ``$ref``s)."""
    if not isinstance(node, dict):
        return set()
    ref = node.get("$ref")
    if isinstance(ref, str):
        if ref.startswith("#/$defs/") and ref not in seen:
            return _places(doc, doc["$defs"][ref.rsplit("/", 1)[1]], seen | {ref})
        if ref.startswith(f"{OPENLINEAGE_SCHEMA_ID}#/$defs/"):
            place = _BASE_PLACES.get(ref.rsplit("/", 1)[1])
            return {place} if place else set()
        return set()
    out: set[str] = set()
    for keyword in ("allOf", "oneOf", "anyOf"):
        for branch in node.get(keyword, ()):
            out |= _places(doc, branch, seen)
    return out


@cache
def standard_facets() -> dict[tuple[str, str], StandardFacet]:
    """Every vendored standard facet by (place, key)."""
    found: dict[tuple[str, str], StandardFacet] = {}
    for path in sorted(STANDARD_FACET_DIR.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        version = doc["$id"].rstrip("/").split("/")[-2]
        for key, prop in doc.get("properties", {}).items():
            ref = prop.get("$ref", "") if isinstance(prop, dict) else ""
            if not ref.startswith("#/$defs/"):
                continue
            cls = ref.rsplit("/", 1)[1]
            for place in sorted(_places(doc, doc["$defs"][cls])):
                found[(place, key)] = StandardFacet(place, key, cls, version, f"{doc['$id']}{ref}")
    return found


def _documents() -> dict[str, dict[str, Any]]:
    """The event schema and the facet schemas, each facet definition less the OpenLineage base
    facet it extends (the first entry of its ``allOf``): the event schema has checked every
    facet against that base already (``_producer``, ``_schemaURL``: two ``uri`` format tests a
    facet), and checking it again was most of this check's time."""
    docs = {}
    spec = json.loads((SPEC_DIR / "OpenLineage.json").read_text(encoding="utf-8"))
    docs[spec["$id"]] = spec
    bases = {f"{OPENLINEAGE_SCHEMA_ID}#/$defs/{base}" for base in _BASE_PLACES}
    for path in sorted(STANDARD_FACET_DIR.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        defs = {}
        for name, definition in doc.get("$defs", {}).items():
            parts = definition.get("allOf") if isinstance(definition, dict) else None
            if parts and isinstance(parts[0], dict) and parts[0].get("$ref") in bases:
                definition = {**definition, "allOf": parts[1:]}
            defs[name] = definition
        docs[doc["$id"]] = {**doc, "$defs": defs}
    return docs


def _facets_rule(place: str) -> dict[str, Any]:
    known = {key: f for (where, key), f in standard_facets().items() if where == place}
    return {"properties": {key: {"$ref": f.schema_ref} for key, f in sorted(known.items())}}


def _kind_rule(kind: str) -> dict[str, Any]:
    """The facet maps of an event of ``kind``, each standard facet against its schema."""

    def holder(place: str) -> dict[str, Any]:
        return {"type": "object", "properties": {"facets": _facets_rule(place)}}

    def items(place: str) -> dict[str, Any]:
        rule = {"facets": _facets_rule("dataset"), f"{place}Facets": _facets_rule(place)}
        return {"items": {"properties": rule}}

    if kind == "DatasetEvent":
        return {"properties": {"dataset": holder("dataset")}}
    places: dict[str, Any] = {
        "job": holder("job"),
        "inputs": items("input"),
        "outputs": items("output"),
    }
    if kind == "RunEvent":
        places["run"] = holder("run")
    return {"properties": places}


@cache
def _validators(*, explain: bool = False) -> dict[str, Any]:
    """One validator per event kind; ``explain``: compiled with each format as its own test
    (slower; its errors name the format), to name the reasons of an event found invalid."""
    import jsonschema_rs

    options = fast_options(_documents(), common_formats_first=not explain)
    return {
        kind: jsonschema_rs.Draft202012Validator(_kind_rule(kind), **options)
        for kind in EVENT_KINDS
    }


def _place_of(path: tuple[Any, ...]) -> tuple[tuple[Any, ...], str] | None:
    """The facet's own path within an error's path, and its place."""
    if len(path) >= 4 and path[0] in ("inputs", "outputs"):
        facets = path[2]
        place = "dataset" if facets == "facets" else facets.removesuffix("Facets")
        return path[:4], place
    if len(path) >= 3 and path[1] == "facets":
        return path[:3], "dataset" if path[0] == "dataset" else path[0]
    return None


def _claims_other_model(facet: Any, standard: StandardFacet) -> bool:
    url = facet.get("_schemaURL") if isinstance(facet, dict) else None
    match = _SCHEMA_URL.search(url) if isinstance(url, str) else None
    return bool(match and match[2] == standard.facet_class and match[1] != standard.model)


def _deleted(facet: Any) -> bool:
    """A ``{"_deleted": true}`` marker removes the facet (the spec's rule): nothing to check."""
    return isinstance(facet, dict) and facet.get("_deleted") is True


def _at(event: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        event = event[key]
    return event


def facet_violations(event: dict[str, Any], kind: str) -> list[FacetViolation]:
    """The standard facets of a (schema-valid) event that break their own schema; see the
    module docstring. Empty for almost every event, at the cost of one jsonschema_rs call."""
    validator = _validators().get(kind)
    if validator is None:
        return []
    try:
        if validator.is_valid(event):
            return []
        errors = list(_validators(explain=True)[kind].iter_errors(event))
    except (ValueError, TypeError, OverflowError):
        return []  # a value jsonschema_rs cannot take (the event schema accepted it)
    grouped: dict[tuple[Any, ...], tuple[StandardFacet, list[str]]] = {}
    known = standard_facets()
    for error in errors:
        path = tuple(error.instance_path)
        located = _place_of(path)
        if located is None:
            continue
        facet_path, place = located
        standard = known.get((place, facet_path[-1]))
        if standard is None:
            continue
        inner = format_path(path[len(facet_path) :]) if len(path) > len(facet_path) else ""
        reason = f"{inner}: {error.message}" if inner else error.message
        grouped.setdefault(facet_path, (standard, []))[1].append(reason)
    out: list[FacetViolation] = []
    for facet_path, (standard, reasons) in grouped.items():
        value = _at(event, facet_path)
        if _claims_other_model(value, standard) or _deleted(value):
            continue
        text = "; ".join(reasons[:_MAX_REASONS])
        if len(reasons) > _MAX_REASONS:
            text += f"; and {len(reasons) - _MAX_REASONS} more"
        out.append(
            FacetViolation(
                format_path(facet_path),
                standard,
                f"not a valid {standard.facet_class} {standard.version}: {text}",
            )
        )
    return out


_validators()  # compiled at import, as the event schema is: an intake worker pays it at start

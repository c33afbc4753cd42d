"""annex's own OpenLineage 2-0-2 validator: the verdicts of jsonschema, several times faster.

``validate_event(obj)`` returns the list of violations of one decoded event (empty: valid)
against

* the official OpenLineage 2-0-2 event schema (``spec/OpenLineage.json``, vendored unchanged).
  The event kind comes from the ``schemaURL`` fragment (its last segment, ``RunEvent``,
  ``JobEvent`` or ``DatasetEvent``) and the event is checked against that ``$defs`` entry;
  when the fragment names no kind, the event is checked against the document root, i.e.
  ``oneOf`` the three kinds, as the specification itself defines "an event";
* annex's own facet schemas (``facets/*.json``, prefix ``annex_``) for each ``annex_`` facet
  present at the place the kind's schema defines facets (run, job, dataset, inputs/outputs,
  inputFacets, outputFacets). An ``annex_`` key that annex does not define for that place is
  a violation (the prefix is ours: a typo must not pass). Other facets are kept and checked
  only against the OpenLineage BaseFacet, as the official schema does (the standard facets'
  own schemas are checked after, by ``collectors.lineage.standard_facets``: a finding, never
  a rejection).

How: the JSON Schemas are compiled once, at import, into closures. The compiler implements
the subset of Draft 2020-12 these documents use and refuses any other keyword, so a schema
change cannot silently weaken the validator. ``format`` is asserted for ``uuid``,
``date-time``, ``date`` and ``uri`` exactly as ``jsonschema.FormatChecker`` does with
``rfc3339-validator`` and ``rfc3986-validator`` installed (jsonschema's "format-nongpl" set):
the same regular expressions and the same ``uuid.UUID`` call, quirks included (for example a
trailing newline passes ``date-time`` and ``uri``, because those libraries anchor with ``$``).
The conformance test (tests/collectors/lineage/test_validate.py) holds the verdicts equal to
jsonschema's over a corpus of valid and mutated events.

The fast path, ``screen_event(obj)``: the same documents and rules compiled by jsonschema_rs
(Draft 2020-12, a ``Registry`` of the vendored documents only, ``offline``: no ``$ref`` is
ever fetched), with this module's format tests (after a Rust check of the common spellings,
``COMMON_FORMAT_PATTERNS``) and ``pattern`` anchored as Python's ``re`` reads it, so its
verdict is jsonschema's too (the same conformance test). It gives the verdict
and the kind about ten times faster; the ingest runs it first and this module's validator only
to explain an event it refuses.

A violation's ``path`` names the offending field; for ``required`` it ends with the missing
key (jsonschema reports the parent object instead).
"""

from __future__ import annotations

import calendar
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin
from uuid import UUID

__all__ = [
    "ANNEX_FACETS",
    "EVENT_KINDS",
    "OPENLINEAGE_SCHEMA_ID",
    "Violation",
    "check_event",
    "fast_violation",
    "format_path",
    "kind_from_schema_url",
    "load_schemas",
    "screen_event",
    "validate_event",
]

HERE = Path(__file__).parent
SPEC_DIR = HERE / "spec"
FACET_DIR = HERE / "facets"
OPENLINEAGE_SCHEMA_ID = "https://openlineage.io/spec/2-0-2/OpenLineage.json"
EVENT_KINDS = ("RunEvent", "JobEvent", "DatasetEvent")

# (place, facet key) -> facet class (its schema is facets/<class>.json, "#/$defs/<class>")
# places: "run", "job", "dataset", "input", "output" (facets of a dataset used as input/output
# have the place "dataset"; "input"/"output" are the inputFacets/outputFacets)
ANNEX_FACETS: dict[tuple[str, str], str] = {
    ("dataset", "annex_source"): "AnnexSourceDatasetFacet",
    ("dataset", "annex_licensing"): "AnnexLicensingDatasetFacet",
    ("dataset", "annex_crawl"): "AnnexCrawlDatasetFacet",
    ("dataset", "annex_content"): "AnnexContentDatasetFacet",
    ("dataset", "annex_personalData"): "AnnexPersonalDataDatasetFacet",
    ("dataset", "annex_illegalContent"): "AnnexIllegalContentDatasetFacet",
    ("input", "annex_trainingUsage"): "AnnexTrainingUsageInputDatasetFacet",
    ("run", "annex_trainingRun"): "AnnexTrainingRunRunFacet",
}
ANNEX_PREFIX = "annex_"
ANNEX_FACET_BASE = "https://annex.dev/spec/facets/1-0-0/"

Path_ = tuple[str | int, ...]
Where = tuple[Any, ...]
"""A path while checking: ``()`` at the event, else ``(parent, key)``. Going one level down
builds one pair, however deep the value; ``flat`` makes it a ``Path_`` for a Violation."""


def flat(where: Where) -> Path_:
    """``((("inputs"), 0), "facets")``-style nesting -> ``("inputs", 0, "facets")``."""
    keys: list[str | int] = []
    while where:
        where, key = where
        keys.append(key)
    return tuple(reversed(keys))


def nested(path: Path_) -> Where:
    """The inverse of ``flat``."""
    where: Where = ()
    for key in path:
        where = (where, key)
    return where


@dataclass(frozen=True, slots=True)
class Violation:
    """One failed schema assertion: where, which keyword, and a readable message."""

    path: Path_
    keyword: str
    message: str

    @property
    def location(self) -> str:
        return format_path(self.path)

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


def format_path(path: Path_) -> str:
    """``("inputs", 0, "facets", "annex_source")`` -> ``inputs[0].facets.annex_source``."""
    out: list[str] = []
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        else:
            out.append(f".{part}" if out else str(part))
    return "".join(out) or "(event)"


# ---------------------------------------------------------------------------------------------
# formats, as jsonschema.FormatChecker checks them

# rfc3339-validator 0.1.4 (MIT), applied by jsonschema to ``instance.upper()``
_RFC3339 = re.compile(
    r"""
    ^
    (\d{4}) - (0[1-9]|1[0-2]) - (\d{2})
    T (?:[01]\d|2[0123]) : (?:[0-5]\d) : (?:[0-5]\d) (?:\.\d+)?
    (?: Z | [+-](?:[01]\d|2[0123]):[0-5]\d )
    $
    """,
    re.VERBOSE | re.ASCII,
)


def is_datetime(value: str) -> bool:
    m = _RFC3339.match(value.upper())
    if m is None:
        return False
    year, month, day = map(int, m.groups())
    if not year:
        return False
    return 1 <= day <= calendar.monthrange(year, month)[1]


# rfc3986-validator 0.1.1 (MIT), rule "URI", which jsonschema uses for format "uri"
_H16 = "[0-9A-Fa-f]{1,4}"
_OCT = "(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)"
_IPV4 = rf"(?:{_OCT}\.){{3}}{_OCT}"
_LS32 = rf"(?:{_H16}:{_H16}|{_IPV4})"
_IPV6 = (
    "(?:"
    + "|".join(
        [
            rf"(?:{_H16}:){{6}}{_LS32}",
            rf"::(?:{_H16}:){{5}}{_LS32}",
            rf"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
            rf"(?:(?:{_H16}:)?{_H16})?::(?:{_H16}:){{3}}{_LS32}",
            rf"(?:(?:{_H16}:){{,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
            rf"(?:(?:{_H16}:){{,3}}{_H16})?::(?:{_H16}:){_LS32}",
            rf"(?:(?:{_H16}:){{,4}}{_H16})?::{_LS32}",
            rf"(?:(?:{_H16}:){{,5}}{_H16})?::{_H16}",
            rf"(?:(?:{_H16}:){{,6}}{_H16})?::",
        ]
    )
    + ")"
)
_UNRES_SUB = r"a-zA-Z0-9_.~\-!$&'()*+,;="
_PCT = "%[0-9A-Fa-f]{2}"
_AUTHORITY = (
    rf"(?:(?:[{_UNRES_SUB}:]|{_PCT})*@)?"
    rf"(?:\[(?:{_IPV6}|v[0-9A-Fa-f]+\.[{_UNRES_SUB}:]+)\]|{_IPV4}|(?:[{_UNRES_SUB}]|{_PCT})*)"
    r"(?::[0-9]*)?"
)
_PCHAR = rf"(?:[{_UNRES_SUB}:@]|{_PCT})"
_QUERY = rf"(?:[{_UNRES_SUB}:@/?]|{_PCT})*"
_URI = re.compile(
    rf"^[a-zA-Z][a-zA-Z0-9+.-]*:"
    rf"(?://{_AUTHORITY}(?:/{_PCHAR}*)*|/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?|{_PCHAR}+(?:/{_PCHAR}*)*|)"
    rf"(?:\?{_QUERY})?(?:\#{_QUERY})?$"
)


def is_uri(value: str) -> bool:
    return _URI.match(value) is not None


_UUID_FAST = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


def is_uuid(value: str) -> bool:
    """jsonschema's check: ``uuid.UUID`` parses it and there are hyphens at 8, 13, 18, 23."""
    if _UUID_FAST.fullmatch(value):
        return True
    try:
        UUID(value)
    except ValueError:
        return False
    return all(value[i] == "-" for i in (8, 13, 18, 23))


_RE_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)


def is_date(value: str) -> bool:
    if not _RE_DATE.fullmatch(value):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


FORMATS: dict[str, Callable[[str], bool]] = {
    "uuid": is_uuid,
    "date-time": is_datetime,
    "date": is_date,
    "uri": is_uri,
}
_CACHE_MAX_LEN = 512  # producers and schema URLs repeat in every event: remember verdicts


def _cached(test: Callable[[str], bool]) -> Callable[[str], bool]:
    remember = lru_cache(maxsize=8192)(test)

    def check(value: str) -> bool:
        return remember(value) if len(value) <= _CACHE_MAX_LEN else test(value)

    return check


# ---------------------------------------------------------------------------------------------
# the schema compiler

Check = Callable[[Any, Where, list[Violation]], None]

_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$defs", "$comment", "description", "title", "example", "examples"}
    | {"default", "deprecated", "readOnly", "writeOnly"}
)


def _is_integer(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and v.is_integer())


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": _is_integer,
}


def _equal(a: Any, b: Any) -> bool:
    """jsonschema's equality: ``True`` is not ``1``, ``1`` is ``1.0``."""
    if a is b:
        return True
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list | dict) or isinstance(b, list | dict):
        return False
    return a == b


def _show(v: Any) -> str:
    text = json.dumps(v, ensure_ascii=False, default=repr) if not isinstance(v, dict | list) else ""
    if isinstance(v, dict):
        text = "an object"
    elif isinstance(v, list):
        text = "an array"
    return text if len(text) <= 80 else text[:77] + "..."


def _valid(check: Check, inst: Any) -> bool:
    scratch: list[Violation] = []
    check(inst, (), scratch)
    return not scratch


class _Compiler:
    def __init__(self, documents: dict[str, dict[str, Any]]) -> None:
        self.documents = documents
        self.cache: dict[str, Check] = {}

    def ref(self, base: str, ref: str) -> Check:
        url = urljoin(base, ref)
        if url in self.cache:
            return self.cache[url]
        doc_id, fragment = urldefrag(url)
        if doc_id not in self.documents:
            raise ValueError(f"unresolvable $ref {url}")
        node: Any = self.documents[doc_id]
        for part in filter(None, fragment.split("/")):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        slot: list[Check] = []

        def lazy(inst: Any, path: Where, out: list[Violation]) -> None:
            slot[0](inst, path, out)

        self.cache[url] = lazy  # cycles resolve through the slot
        slot.append(self.compile(node, doc_id))
        self.cache[url] = slot[0]
        return slot[0]

    def compile(self, schema: Any, base: str) -> Check:
        if schema is True or schema == {}:
            return _nothing
        if schema is False:
            return _fail_always
        checks: list[Check] = []
        for kw in schema:
            if kw not in _ANNOTATIONS and kw not in _KEYWORDS:
                raise ValueError(f"unsupported JSON Schema keyword {kw!r}")
        if "$ref" in schema:
            checks.append(self.ref(base, schema["$ref"]))
        kind = schema.get("type")
        fused = "enum" not in schema and "const" not in schema and kind in ("object", "array")
        if fused and kind == "object":
            # one closure for type, required and properties: the same verdicts, in the same
            # order, with a third of the calls (the hot path of every event's facets)
            props = {k: self.compile(v, base) for k, v in schema.get("properties", {}).items()}
            extra = schema.get("additionalProperties", True)
            extra_check = None if extra is True else self.compile(extra, base)
            required = tuple(schema.get("required", ()))
            checks.append(_object_check(required, props, extra_check))
            schema = {k: v for k, v in schema.items() if k not in _OBJECT_KEYWORDS}
        elif fused and kind == "array":
            items = self.compile(schema["items"], base) if "items" in schema else _nothing
            checks.append(_array_check(items))
            schema = {k: v for k, v in schema.items() if k not in _ARRAY_KEYWORDS}
        if "type" in schema:
            checks.append(_type_check(schema["type"]))
        if "enum" in schema:
            checks.append(_enum_check(schema["enum"]))
        if "const" in schema:
            checks.append(_const_check(schema["const"]))
        if "format" in schema:
            checks.append(_format_check(schema["format"]))
        if "pattern" in schema:
            checks.append(_pattern_check(schema["pattern"]))
        if "minLength" in schema:
            checks.append(_min_length_check(schema["minLength"]))
        if "minimum" in schema:
            checks.append(_minimum_check(schema["minimum"]))
        if "required" in schema:
            checks.append(_required_check(tuple(schema["required"])))
        if "properties" in schema or "additionalProperties" in schema:
            props = {k: self.compile(v, base) for k, v in schema.get("properties", {}).items()}
            extra = schema.get("additionalProperties", True)
            extra_check = None if extra is True else self.compile(extra, base)
            checks.append(_properties_check(props, extra_check))
        if "items" in schema:
            checks.append(_items_check(self.compile(schema["items"], base)))
        if "allOf" in schema:
            checks.extend(self.compile(s, base) for s in schema["allOf"])
        if "anyOf" in schema:
            checks.append(_any_of_check([self.compile(s, base) for s in schema["anyOf"]]))
        if "oneOf" in schema:
            checks.append(_one_of_check([self.compile(s, base) for s in schema["oneOf"]]))
        if "not" in schema:
            checks.append(_not_check(self.compile(schema["not"], base)))
        if "if" in schema:
            then = self.compile(schema["then"], base) if "then" in schema else _nothing
            els = self.compile(schema["else"], base) if "else" in schema else _nothing
            checks.append(_if_check(self.compile(schema["if"], base), then, els))
        return _all(checks)


_KEYWORDS = frozenset(
    {"$ref", "type", "enum", "const", "format", "pattern", "minLength", "minimum", "required"}
    | {"properties", "additionalProperties", "items", "allOf", "anyOf", "oneOf", "not"}
    | {"if", "then", "else"}
)


def _nothing(inst: Any, path: Where, out: list[Violation]) -> None:
    return None


def _fail_always(inst: Any, path: Where, out: list[Violation]) -> None:
    out.append(Violation(flat(path), "false", "no value is allowed here"))


def _all(checks: list[Check]) -> Check:
    checks = [c for c in checks if c is not _nothing]
    if not checks:
        return _nothing
    if len(checks) == 1:
        return checks[0]
    frozen = tuple(checks)

    def check(inst: Any, path: Where, out: list[Violation]) -> None:
        for c in frozen:
            c(inst, path, out)

    return check


_LEAF_TYPES: dict[Check, type] = {}
"""The checks that are one isinstance test (a property that is just ``type: string``)."""

_SIMPLE_TYPES: dict[str, type] = {"object": dict, "array": list, "string": str, "boolean": bool}


def _type_check(spec: str | list[str]) -> Check:
    names = [spec] if isinstance(spec, str) else list(spec)
    label = " or ".join(names)

    if len(names) == 1 and names[0] in _SIMPLE_TYPES:
        cls = _SIMPLE_TYPES[names[0]]

        def check_simple(inst: Any, path: Where, out: list[Violation]) -> None:
            if not isinstance(inst, cls):
                out.append(Violation(flat(path), "type", f"{_show(inst)} is not of type {label}"))

        _LEAF_TYPES[check_simple] = cls  # _object_check tests such a property inline
        return check_simple

    preds = tuple(_TYPES[n] for n in names)

    def check_any(inst: Any, path: Where, out: list[Violation]) -> None:
        if not any(p(inst) for p in preds):
            out.append(Violation(flat(path), "type", f"{_show(inst)} is not of type {label}"))

    return check_any


def _enum_check(values: list[Any]) -> Check:
    allowed = ", ".join(map(_show, values))
    if all(v is None or isinstance(v, str) for v in values):
        strings = frozenset(v for v in values if v is not None)
        none_ok = None in values

        def check(inst: Any, path: Where, out: list[Violation]) -> None:
            ok = inst in strings if isinstance(inst, str) else (inst is None and none_ok)
            if not ok:
                out.append(Violation(flat(path), "enum", f"{_show(inst)} is not one of {allowed}"))

        return check

    def check_general(inst: Any, path: Where, out: list[Violation]) -> None:
        if not any(_equal(inst, v) for v in values):
            out.append(Violation(flat(path), "enum", f"{_show(inst)} is not one of {allowed}"))

    return check_general


def _const_check(value: Any) -> Check:
    def check(inst: Any, path: Where, out: list[Violation]) -> None:
        if not _equal(inst, value):
            out.append(Violation(flat(path), "const", f"{_show(value)} was expected"))

    return check


def _format_check(name: str) -> Check:
    if name not in FORMATS:
        raise ValueError(f"unsupported format {name!r}")
    test = _cached(FORMATS[name])

    def check(inst: Any, path: Where, out: list[Violation]) -> None:
        if isinstance(inst, str) and not test(inst):
            out.append(Violation(flat(path), "format", f"{_show(inst)} is not a {name!r}"))

    return check


def _pattern_check(pattern: str) -> Check:
    rx = re.compile(pattern)

    def check(inst: Any, path: Where, out: list[Violation]) -> None:
        if isinstance(inst, str) and rx.search(inst) is None:
            out.append(
                Violation(flat(path), "pattern", f"{_show(inst)} does not match {pattern!r}")
            )

    return check


def _min_length_check(n: int) -> Check:
    def check(inst: Any, path: Where, out: list[Violation]) -> None:
        if isinstance(inst, str) and len(inst) < n:
            out.append(Violation(flat(path), "minLength", f"{_show(inst)} is shorter than {n}"))

    return check


def _minimum_check(n: float) -> Check:
    def check(inst: Any, path: Where, out: list[Violation]) -> None:
        if _TYPES["number"](inst) and inst < n:
            out.append(Violation(flat(path), "minimum", f"{_show(inst)} is less than {n}"))

    return check


def _required_check(keys: tuple[str, ...]) -> Check:
    def check(inst: Any, path: Where, out: list[Violation]) -> None:
        if isinstance(inst, dict):
            for k in keys:
                if k not in inst:
                    out.append(
                        Violation((*flat(path), k), "required", f"{k!r} is a required property")
                    )

    return check


def _properties_check(props: dict[str, Check], extra: Check | None) -> Check:
    items = tuple((k, c) for k, c in props.items() if c is not _nothing)

    def check(inst: Any, path: Where, out: list[Violation]) -> None:
        if not isinstance(inst, dict):
            return
        for k, c in items:
            if k in inst:
                c(inst[k], (path, k), out)
        if extra is not None:
            for k, v in inst.items():
                if k not in props:
                    extra(v, (path, k), out)

    return check


_OBJECT_KEYWORDS = frozenset({"type", "required", "properties", "additionalProperties"})
_ARRAY_KEYWORDS = frozenset({"type", "items"})


def _object_check(required: tuple[str, ...], props: dict[str, Check], extra: Check | None) -> Check:
    """``type: object`` with ``required``, ``properties`` and ``additionalProperties``."""
    items = tuple((k, c, _LEAF_TYPES.get(c)) for k, c in props.items() if c is not _nothing)

    def check(inst: Any, path: Where, out: list[Violation]) -> None:
        if not isinstance(inst, dict):
            out.append(Violation(flat(path), "type", f"{_show(inst)} is not of type object"))
            return
        for k in required:
            if k not in inst:
                out.append(Violation((*flat(path), k), "required", f"{k!r} is a required property"))
        for k, c, leaf in items:
            if k in inst and (leaf is None or not isinstance(inst[k], leaf)):
                c(inst[k], (path, k), out)  # (a leaf's own check reports its type)
        if extra is not None:
            for k, v in inst.items():
                if k not in props:
                    extra(v, (path, k), out)

    return check


def _array_check(item: Check) -> Check:
    """``type: array`` with ``items``."""

    def check(inst: Any, path: Where, out: list[Violation]) -> None:
        if not isinstance(inst, list):
            out.append(Violation(flat(path), "type", f"{_show(inst)} is not of type array"))
            return
        if item is not _nothing:
            for i, v in enumerate(inst):
                item(v, (path, i), out)

    return check


def _items_check(item: Check) -> Check:
    def check(inst: Any, path: Where, out: list[Violation]) -> None:
        if isinstance(inst, list):
            for i, v in enumerate(inst):
                item(v, (path, i), out)

    return check


def _any_of_check(branches: list[Check]) -> Check:
    if len(branches) == 1:  # the OpenLineage facets maps: anyOf with one branch
        return branches[0]

    def check(inst: Any, path: Where, out: list[Violation]) -> None:
        found: list[Violation] = []
        for b in branches:
            trial: list[Violation] = []
            b(inst, path, trial)
            if not trial:
                return
            found.extend(trial)
        out.append(Violation(flat(path), "anyOf", "matches none of the alternatives"))
        out.extend(found)

    return check


def _one_of_check(branches: list[Check]) -> Check:
    def check(inst: Any, path: Where, out: list[Violation]) -> None:
        n = sum(_valid(b, inst) for b in branches)
        if n != 1:
            what = "none" if n == 0 else f"{n}"
            out.append(
                Violation(flat(path), "oneOf", f"matches {what} of the alternatives, not one")
            )

    return check


def _not_check(branch: Check) -> Check:
    def check(inst: Any, path: Where, out: list[Violation]) -> None:
        if _valid(branch, inst):
            out.append(Violation(flat(path), "not", "matches a schema it must not match"))

    return check


def _if_check(cond: Check, then: Check, els: Check) -> Check:
    def check(inst: Any, path: Where, out: list[Violation]) -> None:
        (then if _valid(cond, inst) else els)(inst, path, out)

    return check


# ---------------------------------------------------------------------------------------------
# the compiled schemas


def load_schemas() -> dict[str, dict[str, Any]]:
    """The vendored OpenLineage schema and annex's facet schemas, by ``$id``."""
    docs: dict[str, dict[str, Any]] = {}
    for path in [SPEC_DIR / "OpenLineage.json", *sorted(FACET_DIR.glob("*.json"))]:
        doc = json.loads(path.read_text())
        docs[doc["$id"]] = doc
    return docs


_COMPILER = _Compiler(load_schemas())
_KIND_CHECKS: dict[str, Check] = {
    kind: _COMPILER.ref(OPENLINEAGE_SCHEMA_ID, f"#/$defs/{kind}") for kind in EVENT_KINDS
}
_FACET_CHECKS: dict[tuple[str, str], Check] = {
    key: _COMPILER.ref(f"{ANNEX_FACET_BASE}{cls}.json", f"#/$defs/{cls}")
    for key, cls in ANNEX_FACETS.items()
}


def kind_from_schema_url(event: Any) -> str | None:
    """The event kind the ``schemaURL`` fragment names (its last segment), else ``None``."""
    url = event.get("schemaURL") if isinstance(event, dict) else None
    if not isinstance(url, str) or "#" not in url:
        return None
    last = url.rsplit("#", 1)[1].rsplit("/", 1)[-1]
    return last if last in EVENT_KINDS else None


def _kind_from_keys(event: Any) -> str:
    if isinstance(event, dict):
        if "run" in event:
            return "RunEvent"
        if "dataset" in event:
            return "DatasetEvent"
        if "job" in event:
            return "JobEvent"
    return "RunEvent"


def _facet_places(event: dict[str, Any], kind: str) -> list[tuple[str, Path_, Any]]:
    """``(place, path, facets map)`` for every facets map the kind's schema defines."""
    found: list[tuple[str, Path_, Any]] = []

    def add(place: str, holder: Any, key: str, path: Path_) -> None:
        if isinstance(holder, dict) and key in holder:
            found.append((place, (*path, key), holder[key]))

    if kind == "DatasetEvent":
        add("dataset", event.get("dataset"), "facets", ("dataset",))
        return found
    if kind == "RunEvent":
        add("run", event.get("run"), "facets", ("run",))
    add("job", event.get("job"), "facets", ("job",))
    for side, place in (("inputs", "input"), ("outputs", "output")):
        datasets = event.get(side)
        if isinstance(datasets, list):
            for i, ds in enumerate(datasets):
                add("dataset", ds, "facets", (side, i))
                add(place, ds, f"{place}Facets", (side, i))
    return found


def _check_annex_facets(event: dict[str, Any], kind: str, out: list[Violation]) -> None:
    for place, path, facets in _facet_places(event, kind):
        if not isinstance(facets, dict):
            continue
        for key, facet in facets.items():
            if not key.startswith(ANNEX_PREFIX):
                continue
            check = _FACET_CHECKS.get((place, key))
            if check is None:
                out.append(
                    Violation((*path, key), "annex", f"{key!r} is not an annex {place} facet")
                )
            else:
                check(facet, nested((*path, key)), out)


def check_event(event: Any) -> tuple[str, list[Violation]]:
    """The event kind and the violations (empty: valid). See the module docstring."""
    kind = kind_from_schema_url(event)
    out: list[Violation] = []
    if kind is not None:
        _KIND_CHECKS[kind](event, (), out)
    else:  # the document root: oneOf the three kinds
        results = {k: [] for k in EVENT_KINDS}
        for k, check in _KIND_CHECKS.items():
            check(event, (), results[k])
        matched = [k for k in EVENT_KINDS if not results[k]]
        kind = matched[0] if len(matched) == 1 else _kind_from_keys(event)
        if len(matched) > 1:
            out.append(
                Violation((), "oneOf", f"the event is valid as {' and '.join(matched)}, not one")
            )
        elif not matched:
            if not isinstance(event, dict):
                out.append(Violation((), "type", f"{_show(event)} is not of type object"))
            else:
                out.extend(results[kind])
    if isinstance(event, dict):
        _check_annex_facets(event, kind, out)
    return kind, out


def validate_event(event: Any) -> list[Violation]:
    """The violations of one decoded event (empty: valid). See the module docstring."""
    return check_event(event)[1]


# ---------------------------------------------------------------------------------------------
# the fast path: the same documents and rules, compiled by jsonschema_rs

DISAGREEMENT = "jsonschema_rs"
"""The ``keyword`` of the violation ``fast_violation`` reports (see ``screen_event``)."""


def _no_retrieval(uri: str) -> Any:
    """The registry's retriever: annex resolves only its vendored documents, never the
    network or the file system (a ``$ref`` outside them is a schema bug, found at import)."""
    raise ValueError(f"annex does not fetch schemas; {uri} is not a vendored document")


def _facets_rule(place: str) -> dict[str, Any]:
    """A facets map of ``place``: each ``annex_`` facet annex defines there valid against its
    schema, and no other ``annex_`` key (``_check_annex_facets``)."""
    known = {key: cls for (where, key), cls in ANNEX_FACETS.items() if where == place}
    names: dict[str, Any] = {"not": {"pattern": f"^{ANNEX_PREFIX}"}}
    if known:
        names = {"anyOf": [names, {"enum": sorted(known)}]}
    return {
        "properties": {
            key: {"$ref": f"{ANNEX_FACET_BASE}{cls}.json#/$defs/{cls}"}
            for key, cls in known.items()
        },
        "propertyNames": names,
    }


def _kind_rule(kind: str) -> dict[str, Any]:
    """The kind's official schema and annex's facet rules at every facets place it has
    (``_facet_places``)."""

    def holder(place: str) -> dict[str, Any]:
        return {"properties": {"facets": _facets_rule(place)}}

    def items(place: str) -> dict[str, Any]:
        rule = {"facets": _facets_rule("dataset"), f"{place}Facets": _facets_rule(place)}
        return {"items": {"properties": rule}}

    if kind == "DatasetEvent":
        places: dict[str, Any] = {"dataset": holder("dataset")}
    else:
        places = {"job": holder("job"), "inputs": items("input"), "outputs": items("output")}
        if kind == "RunEvent":
            places["run"] = holder("run")
    return {"allOf": [{"$ref": f"{OPENLINEAGE_SCHEMA_ID}#/$defs/{kind}"}, {"properties": places}]}


_SUBSCHEMA = frozenset(
    {
        "additionalProperties",
        "additionalItems",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "items",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contentSchema",
    }
)
"""Keywords whose value is one schema (2020-12, and the drafts the vendored documents use)."""
_SUBSCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
"""Keywords whose value maps names to schemas (``dependencies``: a schema or a list of names)."""
_SUBSCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
"""Keywords whose value is a list of schemas (``items`` in its draft-07 tuple form)."""


def _each_schema(schema: Any, rewrite: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """``schema`` with ``rewrite`` applied to it and to every schema inside it, innermost
    first; everything else is copied as it is.

    Only the applicator keywords hold schemas. A value under any other keyword is data or an
    annotation (``const``, ``enum``, ``default``, ``examples``, an unknown keyword): an object
    there with a ``pattern`` or ``format`` key is not a rule, and rewriting it would change
    the value an event is compared with. A property named ``default`` or ``enum`` in a
    ``properties`` map is a schema, and is rewritten. A boolean schema has nothing to
    rewrite."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SUBSCHEMA_LISTS and isinstance(value, list):
            value = [_each_schema(item, rewrite) for item in value]
        elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            value = {name: _each_schema(item, rewrite) for name, item in value.items()}
        elif key in _SUBSCHEMA:
            value = _each_schema(value, rewrite)
        out[key] = value
    return rewrite(out)


def _python_anchor(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its ``pattern`` spelled for the Rust regex engine as Python reads it:
    jsonschema applies ``re.search``, whose final ``$`` also matches before a trailing newline
    (Rust's only at the very end)."""
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and pattern.endswith("$") and not pattern.endswith("\\$"):
        return {**schema, "pattern": pattern[:-1] + "\\n?$"}
    return schema


class _Remembered(dict[str, bool]):
    """Verdicts of a format test by value, for values that repeat (producer and schema URLs in
    every facet): a hit is one dict lookup from jsonschema_rs, no Python frame. Bounded: at
    most ``_CACHE_SIZE`` values of up to ``_CACHE_MAX_LEN`` characters are kept."""

    def __init__(self, test: Callable[[str], bool]) -> None:
        super().__init__()
        self.test = test

    def __missing__(self, value: str) -> bool:
        verdict = self.test(value)
        if len(value) <= _CACHE_MAX_LEN and len(self) < _CACHE_SIZE:
            self[value] = verdict
        return verdict


_CACHE_SIZE = 8192


OFFICIAL_FACET_BASES = {
    "run": "RunFacet",
    "job": "JobFacet",
    "dataset": "DatasetFacet",
    "input": "InputDatasetFacet",
    "output": "OutputDatasetFacet",
}
"""The facet schema the official document applies to every facet at each place (the
``additionalProperties`` of ``Run.facets``, ``Job.facets``, ``Dataset.facets``,
``InputDataset.inputFacets`` and ``OutputDataset.outputFacets``)."""


def _without_official_bases(documents: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The documents with each annex facet's ``allOf`` leaving out the official base facet of
    its place, which the official schema already applies to that facet.

    The fast path checks ``allOf`` [official event, annex rules]: through both, each annex
    facet met its base twice (``_producer`` and ``_schemaURL`` are ``format: uri``, each test a
    call back into Python), a third of jsonschema_rs's time. Dropping the repeat changes no
    verdict: the official schema requires the same base of the same value. A facet whose first
    ``allOf`` entry is not exactly that ``$ref`` is left as it is."""
    out = dict(documents)
    for (place, _key), cls in ANNEX_FACETS.items():
        uri = f"{ANNEX_FACET_BASE}{cls}.json"
        definition = out[uri]["$defs"][cls]
        base = {"$ref": f"{OPENLINEAGE_SCHEMA_ID}#/$defs/{OFFICIAL_FACET_BASES[place]}"}
        parts = definition.get("allOf", [])
        if parts and parts[0] == base:
            defs = {**out[uri]["$defs"], cls: {**definition, "allOf": parts[1:]}}
            out[uri] = {**out[uri], "$defs": defs}
    return out


COMMON_FORMAT_PATTERNS = {
    "uri": (
        r"^[A-Za-z][A-Za-z0-9+.-]*://[A-Za-z0-9._~-]*(?:/[A-Za-z0-9._~!$&'()*+,;=:@-]*)*"
        r"(?:#[A-Za-z0-9._~!$&'()*+,;=:@/?-]*)?$"
    ),
    "uuid": r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    "date-time": (
        r"^(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])-(?:0[1-9]|1[0-2])"
        r"-(?:0[1-9]|1[0-9]|2[0-8])[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?"
        r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$"
    ),
    "date": (
        r"^(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])-(?:0[1-9]|1[0-2])"
        r"-(?:0[1-9]|1[0-9]|2[0-8])$"
    ),
}
"""For each asserted format, a regular expression of its common spellings (absolute URIs
with a host, path and fragment of plain characters; lower- or upper-case UUIDs; RFC 3339 times
and dates on days 1-28, valid in every month), every one of which the format's test
(``FORMATS``) accepts: a subset, never a wider rule. The fast path checks a value against it
first, in Rust, and calls the Python test only when it does not match."""


def _common_format_first(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its ``format``, if one of ``COMMON_FORMAT_PATTERNS``, checked as
    ``anyOf`` [its common pattern, the format]: a value that matches the pattern needs no call
    back into Python, one that does not gets the format's own test, so no verdict changes.

    An event holds some 35 format values (each facet's ``_producer`` and ``_schemaURL``), and
    each call from jsonschema_rs into a Python test cost more than the rest of the validation
    together: about half of jsonschema_rs's time per event."""
    name = schema.get("format")
    if not (isinstance(name, str) and name in COMMON_FORMAT_PATTERNS):
        return schema
    out = {key: value for key, value in schema.items() if key != "format"}
    either = {"anyOf": [{"pattern": COMMON_FORMAT_PATTERNS[name]}, {"format": name}]}
    out["allOf"] = [*out.get("allOf", []), either]
    return out


def _fast_document(document: dict[str, Any]) -> dict[str, Any]:
    """A vendored schema document as the fast path compiles it: each of its schemas with its
    ``pattern`` anchored as Python reads it, then its common formats checked in Rust first
    (``_each_schema``: values that are data are left alone)."""
    return _each_schema(_each_schema(document, _python_anchor), _common_format_first)


def fast_options(
    documents: dict[str, dict[str, Any]], *, common_formats_first: bool = True
) -> dict[str, Any]:
    """The jsonschema_rs validator options over ``documents`` (by ``$id``): a registry of them
    only (never fetched), their patterns anchored as Python reads them and their formats tested
    as jsonschema does (``_fast_document``; without ``common_formats_first`` each format is
    one plain ``format`` test, whose error names the format: slower, to explain a verdict).
    ``collectors.lineage.standard_facets`` compiles the official facet schemas with them too."""
    import jsonschema_rs

    def prepare(doc: dict[str, Any]) -> dict[str, Any]:
        return _fast_document(doc) if common_formats_first else _each_schema(doc, _python_anchor)

    registry = jsonschema_rs.Registry(
        [(uri, prepare(doc)) for uri, doc in documents.items()],
        draft=jsonschema_rs.Draft202012,
        retriever=_no_retrieval,
    )
    return {
        "registry": registry,
        "offline": True,
        "validate_formats": True,
        # the Python validator's format tests (jsonschema's, quirks included), not the Rust
        # crate's own stricter ones: the two paths must give one verdict. Called only for a
        # value outside COMMON_FORMAT_PATTERNS. Run ids and event times rarely repeat: not
        # remembered.
        "formats": {
            "uuid": is_uuid,
            "date-time": is_datetime,
            "date": _Remembered(is_date).__getitem__,
            "uri": _Remembered(is_uri).__getitem__,
        },
    }


def _compile_fast() -> tuple[Any, dict[str, Any]]:
    import jsonschema_rs

    options = fast_options(_without_official_bases(load_schemas()))
    root = jsonschema_rs.Draft202012Validator({"$ref": OPENLINEAGE_SCHEMA_ID}, **options)
    kinds = {
        kind: jsonschema_rs.Draft202012Validator(_kind_rule(kind), **options)
        for kind in EVENT_KINDS
    }
    return root, kinds


_FAST_ROOT, _FAST_KINDS = _compile_fast()


def screen_event(event: Any) -> str | None:
    """The event's kind when it is valid (the verdict of ``check_event``, about ten times
    faster: the schemas compiled by jsonschema_rs), else None.

    The ingest calls this first and ``check_event`` only for an event it finds invalid, to
    name the reason; should ``check_event`` then find nothing, the event is still rejected
    (``fast_violation``): the two never disagree over the conformance corpus, and an
    unexplained rejection is safer than accepting what one validator refuses.
    """
    kind = kind_from_schema_url(event)
    try:
        if kind is not None:
            return kind if _FAST_KINDS[kind].is_valid(event) else None
        if not _FAST_ROOT.is_valid(event):  # the document root: oneOf the three kinds
            return None
        # the one kind that matched is the one whose rules (a subset) can hold
        return next((k for k in EVENT_KINDS if _FAST_KINDS[k].is_valid(event)), None)
    except (ValueError, TypeError, OverflowError):
        return None  # a value jsonschema_rs cannot take: the Python validator decides


def fast_violation(event: Any) -> Violation:
    """The first error jsonschema_rs reports for an event ``check_event`` finds valid."""
    kind = kind_from_schema_url(event)
    validator = _FAST_KINDS[kind] if kind is not None else _FAST_ROOT
    try:
        error = next(iter(validator.iter_errors(event)), None)
    except (ValueError, TypeError, OverflowError) as exc:
        return Violation((), DISAGREEMENT, f"cannot be validated: {exc}")
    if error is None:  # valid for the root and for no kind's facet rules
        return Violation((), DISAGREEMENT, "its annex_ facets break annex's facet schemas")
    path = tuple(error.instance_path)
    return Violation(path, DISAGREEMENT, error.message)

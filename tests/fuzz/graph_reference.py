"""graph.c's reading written again in Python, from its documented rules (graph.c's header): the
oracle its fuzz target compares it with on every input.

``reference_graph(raw)`` gives what graph.c must give for the bytes ``raw``: ``None`` where it
must leave the event to the warehouse's parse (not JSON, or a reading that might differ from
that parse), else the items and facets. It decodes with the standard library's pure-Python
JSON scanner, made as strict as RFC 8259 and graph.c (ASCII digits only, no NaN/Infinity, no
lone surrogate, strict UTF-8), with two marks the C needs: which strings had an escape, and
every object's members as a list (a repeated key stays visible).
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
import sys
import types
from typing import Any

MAX_DEPTH = 1000  # graph.c: containers nested in one value passed over
MAX_FACETS = 256  # graph.c: facets in one place

_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?", re.ASCII)
_SURROGATE = re.compile("[\ud800-\udfff]")


class Escaped(str):
    """A string (key or value) whose JSON text held an escape."""

    __slots__ = ()


class Members(list):
    """An object's members in order: (key, value) pairs, a repeated key kept."""

    __slots__ = ()


class Number(tuple):
    """A number as spelled (compared by its text: graph.c does not convert numbers)."""

    __slots__ = ()


class _NoMemo(dict):
    def setdefault(self, key, default=None):  # keep each key's own string (Escaped or not)
        return key


class NotJson(ValueError):
    pass


def _scanstring(s: str, end: int, strict: bool = True) -> tuple[str, int]:
    scan = json.decoder.c_scanstring or json.decoder.py_scanstring
    value, after = scan(s, end, strict)
    if _SURROGATE.search(value):
        raise NotJson("a lone surrogate")
    return (Escaped(value) if "\\" in s[end:after] else value), after


def _constant(name: str) -> Any:
    raise NotJson(name)


def _decoder() -> json.JSONDecoder:
    decoder = json.JSONDecoder(
        object_pairs_hook=Members,
        parse_int=lambda t: Number(("n", t)),
        parse_float=lambda t: Number(("n", t)),
        parse_constant=_constant,
        strict=True,
    )
    names = {**vars(json.decoder), "scanstring": _scanstring}
    decoder.parse_object = types.FunctionType(
        json.decoder.JSONObject.__code__, names, "JSONObject", json.decoder.JSONObject.__defaults__
    )
    decoder.parse_string = _scanstring
    decoder.memo = _NoMemo()
    scanner = types.FunctionType(
        json.scanner.py_make_scanner.__code__,
        {**vars(json.scanner), "NUMBER_RE": _NUMBER},
        "py_make_scanner",
    )
    decoder.scan_once = scanner(decoder)
    return decoder


_DECODER = _decoder()


def decode(text: str) -> Any:
    """``text`` decoded with the marks above; NotJson where RFC 8259 refuses it."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20 * MAX_DEPTH))
    try:
        return _DECODER.decode(text)
    except (ValueError, RecursionError) as exc:
        raise NotJson(str(exc)) from exc
    finally:
        sys.setrecursionlimit(limit)


class Refused(Exception):
    """graph.c leaves this event to the warehouse."""


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if type(node) is Members:
            stack.extend((v, depth + 1) for _, v in node)
            deepest = max(deepest, depth + 1)
        elif type(node) is list:
            stack.extend((v, depth + 1) for v in node)
            deepest = max(deepest, depth + 1)
    return deepest


def _passed_over(value: Any) -> None:
    if _depth(value) > MAX_DEPTH:
        raise Refused("nested too deep")


def _object(value: Any, read: set[str]) -> dict[str, Any]:
    """An object graph.c reads: no escaped key, each key it reads once; the others passed
    over. Returns the keys it reads."""
    if type(value) is not Members:
        raise Refused("not an object")
    found: dict[str, Any] = {}
    for key, member in value:
        if type(key) is Escaped:
            raise Refused("an escaped key")
        if key in read:
            if key in found:
                raise Refused("a key read twice")
            found[key] = member
        else:
            _passed_over(member)
    return found


def _text_or_null(value: Any) -> str | None:
    if value is not None and type(value) is not str:
        raise Refused("neither a string nor null (or escaped)")
    return value


def _facets(value: Any, place: str, item: int | None, facets: list, version: bool) -> Any:
    if type(value) is not Members:
        raise Refused("facets not an object")
    if len(value) > MAX_FACETS:
        raise Refused("too many facets")
    names: set[str] = set()
    dataset_version = None
    for name, facet in value:
        if type(name) is Escaped:
            raise Refused("an escaped facet name")
        if name in names:
            raise Refused("a facet named twice")
        names.add(name)
        _passed_over(facet)
        if version and name == "version":
            dataset_version = _text_or_null(
                _object(facet, {"datasetVersion"}).get("datasetVersion")
            )
        facets.append((place, item, name, facet))
    return dataset_version


def reference_graph(raw: bytes) -> tuple[list[tuple], list[tuple]] | None:
    """What graph.c must read in ``raw``: (items, facets) sorted, or None (left to the
    warehouse). Items: (direction, item, namespace, name, version); facets: (place, item,
    name, value as decoded here)."""
    try:
        event = decode(raw.decode("utf-8"))
    except (UnicodeDecodeError, NotJson):
        return None
    try:
        return _read(event)
    except Refused:
        return None


def _read(event: Any) -> tuple[list[tuple], list[tuple]]:
    top = _object(event, {"run", "job", "inputs", "outputs", "dataset"})
    facets: list[tuple] = []
    for place in ("run", "job"):
        if place in top:
            holder = _object(top[place], {"facets"})
            if "facets" in holder:
                _facets(holder["facets"], place, None, facets, False)
    listed: list[tuple[str, Any]] = []
    for key, direction in (("inputs", "INPUT"), ("outputs", "OUTPUT")):
        if key in top:
            if type(top[key]) is not list:
                raise Refused("not an array")
            listed += [(direction, item) for item in top[key]]
    if "dataset" in top:
        listed.append(("DATASET", top["dataset"]))
    items = []
    inputs = sum(1 for d, _ in listed if d == "INPUT")
    outputs = sum(1 for d, _ in listed if d == "OUTPUT")
    counters = {"INPUT": 0, "OUTPUT": inputs, "DATASET": inputs + outputs}
    for direction, item in listed:
        number = counters[direction]
        counters[direction] += 1
        own = {"INPUT": "inputFacets", "OUTPUT": "outputFacets"}.get(direction)
        found = _object(item, {"namespace", "name", "facets"} | ({own} if own else set()))
        version = None
        if "facets" in found:
            version = _facets(found["facets"], "dataset", number, facets, True)
        if own and own in found:
            _facets(found[own], own.removesuffix("Facets"), number, facets, False)
        namespace = _text_or_null(found.get("namespace"))
        name = _text_or_null(found.get("name"))
        items.append((direction, number, namespace, name, version))
    return sorted(items), sorted(facets, key=repr)

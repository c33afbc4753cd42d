"""annex's two C readers on the lineage path against the maintained libraries that could replace
them (issue 36: C that reads outside data is kept only where no library comes within 10% of it).

    python -m bench.lineage_readers [--events 20000] [--nodes 40] [--repeat 5]

The events are ``bench.lineage``'s (the simulator's lineage of a ``--nodes`` world, repeated
with fresh run ids, versions and times), as the intake spools them: RFC 8785 canonical JSON.

  graph      ``collectors.lineage.graph.read_graph`` (graph.c through ctypes) over one Arrow
             column of the texts, against the same reading by msgspec: ``msgspec.json.decode``
             into Structs whose facet maps are ``dict[str, msgspec.Raw]`` (a value's raw bytes,
             not decoded; zero-copy, so its place in the text is its address less the text's),
             the version facet decoded for its datasetVersion, rows built in Python into the
             same Arrow tables. The msgspec reading does less than graph.c: it cannot see a
             repeated key (the last wins) or an escaped key, so it cannot refuse what the
             warehouse's parse might read otherwise; its time is a lower bound.
  canonical  ``collectors.lineage.events.canonical_json`` (orjson's sorted text, its integral
             floats respelled by canonical.c) against PyPI's RFC 8785 implementations:
             ``rfc8785.dumps`` (Trail of Bits, pure Python) and ``canonicaljson`` (matrix.org:
             ``json.dumps`` sorted; not RFC 8785 for floats); each on the decoded events.

Each time is the best of ``--repeat`` passes (the machine's speed drifts; the best is the
least disturbed). Prints a table; appends nothing (the figures are quoted in RESULTS.md).
"""

from __future__ import annotations

import argparse
import importlib
import time
from typing import Any

import msgspec
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from bench.lineage import make_events
from collectors.lineage import events as events_module
from collectors.lineage.events import canonical_json
from collectors.lineage.graph import DIRECTIONS, PLACES, EventGraphs, read_graph

Facets = dict[str, msgspec.Raw]


class _Holder(msgspec.Struct):
    facets: Facets = {}


class _Input(msgspec.Struct):
    namespace: str | None = None
    name: str | None = None
    facets: Facets = {}
    inputFacets: Facets = {}


class _Output(msgspec.Struct):
    namespace: str | None = None
    name: str | None = None
    facets: Facets = {}
    outputFacets: Facets = {}


class _Dataset(msgspec.Struct):
    namespace: str | None = None
    name: str | None = None
    facets: Facets = {}


class _Event(msgspec.Struct):
    run: _Holder = msgspec.field(default_factory=_Holder)
    job: _Holder = msgspec.field(default_factory=_Holder)
    inputs: list[_Input] = []
    outputs: list[_Output] = []
    dataset: _Dataset | msgspec.UnsetType = msgspec.UNSET


class _Version(msgspec.Struct):
    datasetVersion: str | None = None


_event = msgspec.json.Decoder(_Event)
_version = msgspec.json.Decoder(_Version)


def read_graph_msgspec(texts: pa.Array | pa.ChunkedArray) -> EventGraphs:
    """``read_graph``'s tables by msgspec (see the module doc for what it does not check)."""
    if isinstance(texts, pa.ChunkedArray):  # the column as read_graph takes it
        texts = texts.combine_chunks() if texts.num_chunks != 1 else texts.chunk(0)
    if isinstance(texts.type, pa.ExtensionType):
        texts = texts.storage
    if texts.type != pa.string():
        texts = texts.cast(pa.string())
    if texts.null_count:
        texts = pc.fill_null(texts, "")
    _, offsets_buffer, data = texts.buffers()
    offsets = memoryview(offsets_buffer).cast("i")[texts.offset :]
    whole = memoryview(data)
    base = pa.py_buffer(whole).address
    items: dict[str, list[Any]] = {k: [] for k in ("event", "d", "item", "ns", "name", "v")}
    facets: dict[str, list[Any]] = {k: [] for k in ("event", "p", "item", "name", "s", "n")}
    read = []
    for row in range(len(texts)):
        start, end = offsets[row], offsets[row + 1]
        text = whole[start:end]
        try:
            event = _event.decode(text)
            event_items, event_facets = _rows(event, row)
        except (msgspec.ValidationError, msgspec.DecodeError):
            read.append(False)
            continue
        ascii_ = bytes(text).isascii()
        for place, item, name, raw in event_facets:
            at = pa.py_buffer(raw).address - base - start
            length = len(raw)
            if not ascii_:  # characters, as substring() counts: less the continuation bytes
                prefix = bytes(text[: at + length]).decode()
                chars = len(bytes(text[:at]).decode())
                at, length = chars, len(prefix) - chars
            facets["event"].append(row)
            facets["p"].append(place)
            facets["item"].append(item)
            facets["name"].append(name)
            facets["s"].append(at)
            facets["n"].append(length)
        for direction, item, namespace, name, version in event_items:
            for key, value in zip(
                items, (row, direction, item, namespace, name, version), strict=True
            ):
                items[key].append(value)
        read.append(True)
    int32 = pa.int32()
    return EventGraphs(
        pa.table(
            {
                "event": pa.array(items["event"], int32),
                "direction": pc.take(DIRECTIONS, pa.array(items["d"], int32)),
                "item": pa.array(items["item"], int32),
                "namespace": pa.array(items["ns"], pa.string()),
                "name": pa.array(items["name"], pa.string()),
                "version": pa.array(items["v"], pa.string()),
            }
        ),
        pa.table(
            {
                "event": pa.array(facets["event"], int32),
                "place": pc.take(PLACES, pa.array(facets["p"], int32)),
                "item": pa.array(facets["item"], int32),
                "facet_name": pa.array(facets["name"], pa.string()),
                "value_start": pa.array(facets["s"], int32),
                "value_length": pa.array(facets["n"], int32),
            }
        ),
        pa.array(read, pa.bool_()),
    )


def _rows(event: _Event, row: int) -> tuple[list[tuple], list[tuple]]:
    items: list[tuple] = []
    facets: list[tuple] = [(0, None, n, v) for n, v in event.run.facets.items()]
    facets += [(1, None, n, v) for n, v in event.job.facets.items()]
    listed: list[tuple[int, int, Any, Facets, int]] = [
        (0, i, d, d.inputFacets, 3) for i, d in enumerate(event.inputs)
    ]
    first_output = len(event.inputs)
    listed += [(1, first_output + i, d, d.outputFacets, 4) for i, d in enumerate(event.outputs)]
    if event.dataset is not msgspec.UNSET:
        listed.append((2, first_output + len(event.outputs), event.dataset, {}, 0))
    for direction, number, item, own, place in listed:
        version = None
        if "version" in item.facets:
            version = _version.decode(item.facets["version"]).datasetVersion
        items.append((direction, number, item.namespace, item.name, version))
        facets += [(2, number, n, v) for n, v in item.facets.items()]
        facets += [(place, number, n, v) for n, v in own.items()]
    return items, facets


def _decode_only(texts: pa.Array) -> int:
    _, offsets_buffer, data = texts.buffers()
    offsets, whole = memoryview(offsets_buffer).cast("i"), memoryview(data)
    for row in range(len(texts)):
        _event.decode(whole[offsets[row] : offsets[row + 1]])
    return len(texts)


def _sorted(table: pa.Table) -> pa.Table:
    """The rows in one order: graph.c lists them in the text's order, msgspec by field."""
    return table.sort_by([(name, "ascending") for name in table.column_names])


def _best(function, argument, repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function(argument)
        best = min(best, time.perf_counter() - started)
    return best, result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--nodes", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    lines, _ = make_events(args.events, args.nodes, args.seed)
    decoded = [orjson.loads(line) for line in lines]
    texts = [canonical_json(event).decode() for event in decoded]
    column = pa.array(texts, pa.string())
    size = sum(len(t) for t in lines) / len(lines)
    print(f"{len(texts):,} events, {size:,.0f} bytes each on average")

    c_time, c_graph = _best(read_graph, column, args.repeat)
    m_time, m_graph = _best(read_graph_msgspec, column, args.repeat)
    same = c_graph.read.equals(m_graph.read) and all(
        _sorted(getattr(c_graph, n)).equals(_sorted(getattr(m_graph, n)))
        for n in ("items", "facets")
    )
    rows = [
        ("graph", "graph.c (read_graph)", c_time, None),
        ("graph", "msgspec Struct + Raw", m_time, f"same tables: {same}"),
    ]
    d_time, _ = _best(_decode_only, column, args.repeat)
    rows.append(("graph", "msgspec decode alone (no rows)", d_time, "a lower bound"))
    c_canon, c_texts = _best(lambda v: [canonical_json(e) for e in v], decoded, args.repeat)
    rows.append(("canonical", "orjson + canonical.c", c_canon, None))
    kept = events_module._respell, events_module._respell_loaded
    events_module._respell, events_module._respell_loaded = None, True  # the no-compiler path
    try:
        p_canon, p_texts = _best(lambda v: [canonical_json(e) for e in v], decoded, args.repeat)
    finally:
        events_module._respell, events_module._respell_loaded = kept
    rows.append(
        ("canonical", "orjson + Python respelling", p_canon, f"same texts: {p_texts == c_texts}")
    )
    for package, call in (("rfc8785", "dumps"), ("canonicaljson", "encode_canonical_json")):
        try:
            function = getattr(importlib.import_module(package), call)
        except ImportError:
            rows.append(("canonical", f"{package} (not installed)", float("nan"), None))
            continue
        sample = decoded[: max(1, len(decoded) // 10)]  # slower: a tenth, scaled up
        t, out = _best(lambda v, f=function: [f(e) for e in v], sample, max(1, args.repeat // 2))
        equal = sum(a == b for a, b in zip(out, c_texts, strict=False))
        rows.append(
            (
                "canonical",
                f"{package}.{call}",
                t * len(decoded) / len(sample),
                f"{equal}/{len(sample)} texts equal",
            )
        )
    print(f"| reader | implementation | s for {len(texts):,} | µs/event | x C | note |")
    print("|---|---|---:|---:|---:|---|")
    anchors = {"graph": c_time, "canonical": c_canon}
    for reader, name, seconds, note in rows:
        per = seconds / len(texts) * 1e6
        print(
            f"| {reader} | {name} | {seconds:.3f} | {per:.1f} | "
            f"{seconds / anchors[reader]:.2f} | {note or ''} |"
        )


if __name__ == "__main__":
    main()

"""The lineage graph reader (collectors/lineage/graph.c): for every event it reads, the items
and facets a decoder finds, each facet's span slicing out exactly its value; everything that is
not JSON, or that it might read unlike the warehouse's parse, is left to that parse."""

from __future__ import annotations

import json
import logging
import random
from typing import Any

import orjson
import pyarrow as pa
import pytest

from collectors.lineage import graph as graph_module
from collectors.lineage.events import canonical_json
from collectors.lineage.graph import graph_tables, read_graph
from collectors.lineage.native import NativeCodeUnavailable
from collectors.lineage.schema import LINEAGE_EVENTS, LINEAGE_FACETS, LINEAGE_ITEMS

PLACE_OF_IO = {"INPUT": ("inputFacets", "input"), "OUTPUT": ("outputFacets", "output")}


def expected_graph(event: dict[str, Any]) -> tuple[list[tuple], list[tuple]]:
    """What the reader must find in an event it reads: items (direction, item, namespace, name,
    version) and facets (place, item, name, value), from the decoded event."""
    items, facets = [], []
    for place, holder in (("run", event.get("run")), ("job", event.get("job"))):
        for name, value in ((holder or {}).get("facets") or {}).items():
            facets.append((place, None, name, value))
    inputs, outputs = event.get("inputs") or [], event.get("outputs") or []
    listed = [("INPUT", i, d) for i, d in enumerate(inputs)]
    listed += [("OUTPUT", len(inputs) + i, d) for i, d in enumerate(outputs)]
    if event.get("dataset") is not None:
        listed.append(("DATASET", len(inputs) + len(outputs), event["dataset"]))
    for direction, number, item in listed:
        own = item.get("facets") or {}
        version = (own.get("version") or {}).get("datasetVersion")
        items.append((direction, number, item.get("namespace"), item.get("name"), version))
        for name, value in own.items():
            facets.append(("dataset", number, name, value))
        if direction in PLACE_OF_IO:
            key, place = PLACE_OF_IO[direction]
            for name, value in (item.get(key) or {}).items():
                facets.append((place, number, name, value))
    return sorted(items), sorted(facets, key=repr)


def read_one(text: bytes | str) -> tuple[bool, list[tuple], list[tuple]]:
    """Whether the reader read ``text``, and what it found (facet values decoded from their
    spans)."""
    raw = text.encode() if isinstance(text, str) else text
    # (the bytes as they are: Arrow does not check a column built from buffers)
    graphs = read_graph(pa.Array.from_buffers(pa.string(), 1, _string_buffers(raw)))
    read = graphs.read[0].as_py()
    items = [
        (r["direction"], r["item"], r["namespace"], r["name"], r["version"])
        for r in graphs.items.to_pylist()
    ]
    text = raw.decode("utf-8", "replace")  # (read only where it is valid UTF-8)
    facets = [
        (
            r["place"],
            r["item"],
            r["facet_name"],
            json.loads(text[r["value_start"] : r["value_start"] + r["value_length"]]),
        )
        for r in graphs.facets.to_pylist()
    ]
    return read, sorted(items), sorted(facets, key=repr)


@pytest.fixture(scope="module")
def simulated() -> list[dict[str, Any]]:
    from simulator.lineage.producer import build_events, to_json
    from simulator.world import build_world

    return [json.loads(to_json(e)) for e in build_events(build_world(6, seed=3))]


def test_the_intakes_texts_are_all_read_with_what_a_decoder_finds(simulated) -> None:
    """Canonical JSON (what the intake spools) is always read: nothing falls back."""
    assert len(simulated) > 50
    texts = [canonical_json(event) for event in simulated]
    graphs = read_graph(pa.array([t.decode() for t in texts], pa.json_()))
    assert graphs.read.to_pylist() == [True] * len(texts)
    for row, (event, text) in enumerate(zip(simulated, texts, strict=True)):
        read, items, facets = read_one(text)
        assert read and (items, facets) == expected_graph(event), row
    assert graphs.facets.num_rows == sum(len(expected_graph(e)[1]) for e in simulated)


def test_spans_count_characters_and_whitespace_is_read() -> None:
    event = {
        "run": {"runId": "r", "facets": {"ünï": {"t": "😀 ✓ \n", "n": [1.5e-7, -0, 10]}}},
        "job": {"facets": {}},
        "inputs": [
            {
                "namespace": "ns ✓",
                "name": "d",
                "facets": {"version": {"datasetVersion": "v1", "x": {"y": [{}]}}},
                "inputFacets": {"annex_trainingUsage": {"share": 0.25}},
            }
        ],
        "outputs": [{"namespace": "m", "name": "o", "outputFacets": {"s": {"rows": 3}}}],
    }
    ascii_keys = {  # (an escape in a key or a namespace is left to the warehouse: below)
        **event,
        "run": {"facets": {"u": event["run"]["facets"]["ünï"]}},
        "inputs": [{**event["inputs"][0], "namespace": "ns"}],
    }
    for sent, text in (
        (event, json.dumps(event, ensure_ascii=False)),
        (event, json.dumps(event, indent=2, ensure_ascii=False)),
        # \\u escapes in values (not in keys: see the next test), spaces around every token
        (ascii_keys, json.dumps(ascii_keys, separators=(" , ", " : "))),
    ):
        read, items, facets = read_one(text)
        assert read, text
        assert (items, facets) == expected_graph(sent)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"run": {"facets": {"a": {}}}',  # cut short
        '{"run": {"facets": {"a": {}}}} x',  # trailing text
        '{"run": {"facets": {"a": tru}}}',
        '{"run": {"facets": {"a": [1,]}}}',
        '{"run": {"facets": {"a": {"b": 01}}}}',
        '{"run": {"facets": {"a": {"b": 1.}}}}',
        '{"run": {"facets": {"a": {"b": -}}}}',
        '{"run": {"facets": {"a": {"b": 1e}}}}',
        '{"run": {"facets": {"a": {"b": "\\ud800"}}}}',  # a lone surrogate
        '{"run": {"facets": {"a": {"b": "\\udc00"}}}}',
        '{"run": {"facets": {"a": {"b": "\\x"}}}}',
        '{"run": {"facets": {"a": {"b": "tab\there"}}}}',  # a raw control character
        '{"run": {"facets": {"a": {"b": "a"} "c": {}}}}',  # a missing comma
        '{"run": {"facets": {"a": {"b" "a"}}}}',  # a missing colon
        '{"run": {"facets": {"a": {}}}, "run": {"facets": {}}}',  # a key read here, twice
        '{"run": {"facets": {"a": {}, "a": {}}}}',  # a facet twice in one place
        '{"inputs": [{"namespace": "n", "namespace": "m"}]}',
        '{"inputs": [{"facets": {"version": {"datasetVersion": "1", "datasetVersion": "2"}}}]}',
        '{"r\\u0075n": {"facets": {"a": {}}}}',  # an escaped key may spell one read here
        '{"inputs": [{"n\\u0061me": "x"}]}',
        '{"run": {"facets": {"\\u0061": {}}}}',
        '{"inputs": [{"name": "a\\"b"}]}',  # an escape in a name
        '{"run": {"facets": ["not", "an", "object"]}}',
        '{"run": null}',
        '{"inputs": "not a list"}',
        '{"inputs": ["not an object"]}',
        '{"inputs": [{"namespace": 7, "name": "d"}]}',
        '{"inputs": [{"facets": {"version": "v1"}}]}',
        '{"inputs": [{"facets": {"version": {"datasetVersion": 3}}}]}',
        "{" + '"a":' * 1 + "[" * 1500 + "]" * 1500 + "}",  # deeper than the reader goes
    ],
)
def test_what_is_not_json_or_might_read_otherwise_is_left_to_the_warehouse(text: str) -> None:
    read, items, facets = read_one(text)
    assert (read, items, facets) == (False, [], [])


@pytest.mark.parametrize(
    "raw",
    [
        b'{"job": {"facets": {"a": {"b": "\xff"}}}}',
        b'{"job": {"facets": {"\xc0\xaf": {}}}}',  # overlong
        b'{"job": {"facets": {"a": "\xed\xa0\x80"}}}',  # a surrogate in UTF-8
        b'{"job": {"facets": {"a": "\xe2\x82"}}}',  # cut short
    ],
)
def test_invalid_utf8_is_not_read(raw: bytes) -> None:
    assert read_one(raw) == (False, [], [])


def _string_buffers(raw: bytes) -> list[pa.Buffer | None]:
    offsets = pa.array([0, len(raw)], pa.int32()).buffers()[1]
    return [None, offsets, pa.py_buffer(raw)]


def test_mangled_events_are_read_right_or_not_at_all(simulated) -> None:
    """Random edits of real events (whitespace, escapes, number spellings, deleted or doubled
    bytes): whatever the reader reads, it reads as a decoder does; and it never reads a text a
    JSON decoder refuses."""
    rng = random.Random(23)
    edits = [b" ", b"\n", b",", b":", b"{", b"}", b"[", b"]", b'"', b"\\", b"0", b"e", b"\x7f"]
    read_count = 0
    for trial in range(3000):
        event = rng.choice(simulated)
        text = bytearray(orjson.dumps(event))
        for _ in range(rng.randint(0, 3)):
            at = rng.randrange(len(text))
            choice = rng.random()
            if choice < 0.4:
                text[at:at] = rng.choice(edits)
            elif choice < 0.7:
                del text[at]
            else:
                text[at : at + 1] = text[at : at + 1] * 2
        try:
            decoded = json.loads(bytes(text))
            valid = True
        except ValueError:
            valid = False
        read, items, facets = read_one(bytes(text))
        if not valid:
            assert not read, (trial, bytes(text))
            continue
        if read:
            read_count += 1
            assert (items, facets) == expected_graph(decoded), (trial, bytes(text))
    assert read_count > 1000  # most edits land in values and stay readable


def test_a_slice_of_the_chunked_or_sliced_column_is_read_in_place(simulated) -> None:
    texts = [canonical_json(e).decode() for e in simulated[:30]]
    column = pa.chunked_array([pa.array(texts[:10]), pa.array(texts[10:])])
    whole = read_graph(column)
    part = read_graph(pa.array(texts).slice(12, 5))
    assert part.read.to_pylist() == [True] * 5
    for name in ("items", "facets"):
        rows = getattr(whole, name).to_pylist()
        expected = [{**r, "event": r["event"] - 12} for r in rows if 12 <= r["event"] < 17]
        assert getattr(part, name).to_pylist() == expected and expected


def test_graph_tables_number_the_events_and_name_them_in_their_graphs(simulated) -> None:
    rows = [_row(e) for e in simulated[:20]] + [_row({"not": "read"}, text="{bad")]
    table = pa.Table.from_pylist(rows, schema=LINEAGE_EVENTS)
    events, items, facets = graph_tables(table, 100)
    assert events.column("event_index").to_pylist() == list(range(100, 121))
    assert events.column("graph_read").to_pylist() == [True] * 20 + [False]
    assert items.schema == LINEAGE_ITEMS and facets.schema == LINEAGE_FACETS
    for graph in (items, facets):
        assert graph.num_rows and set(graph.column("event_index").to_pylist()) <= set(
            range(100, 120)
        )


def test_without_a_compiler_no_event_is_read_and_one_warning_says_what_to_do(
    simulated, monkeypatch, caplog
) -> None:
    def unavailable(texts):
        raise NativeCodeUnavailable("no C compiler to build annex's lineage graph reader")

    monkeypatch.setattr(graph_module, "read_graph", unavailable)
    monkeypatch.setattr(graph_module, "_warned", False)
    table = pa.Table.from_pylist([_row(e) for e in simulated[:5]], schema=LINEAGE_EVENTS)
    with caplog.at_level(logging.WARNING, logger="collectors.lineage.graph"):
        for _ in range(2):
            events, items, facets = graph_tables(table, 0)
    assert events.column("graph_read").to_pylist() == [False] * 5
    assert items.num_rows == facets.num_rows == 0
    assert [r.message for r in caplog.records] == [
        "no C compiler to build annex's lineage graph reader"
    ]


def _row(event: dict[str, Any], *, text: str | None = None) -> dict[str, Any]:
    return {"event_id": "x", "payload": text if text is not None else json.dumps(event)}

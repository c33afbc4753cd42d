"""Coverage-guided fuzz target of graph.c (the lineage graph reader): arbitrary bytes as one
event's text, graph.c's reading compared with ``graph_reference`` (graph.c's rules written
again in Python) on every input: the same items and facets (each facet's span slicing out
exactly the value the reference decoded), or both leaving the event to the warehouse.

    python -m tests.fuzz.fuzz_graph [libFuzzer flags] [corpus folders]

atheris (libFuzzer) guides it by the coverage of the Python it instruments (the reference,
annex's graph module) and by graph.c's own edges where it was built for fuzzing
(``tests.fuzz.native_coverage``); ``test_fuzz.py`` runs it for a bounded time in make test.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["tests.fuzz", "collectors.lineage.graph"]):
    import pyarrow as pa

    from collectors.lineage.graph import read_graph
    from tests.fuzz import native_coverage
    from tests.fuzz.graph_reference import decode, reference_graph

WHITESPACE = " \t\n\r"


def read_in_c(raw: bytes) -> tuple[bool, list[tuple], list[tuple]]:
    """graph.c's reading of ``raw``: whether it read it, its items, its facets (place, item,
    name, start, length)."""
    offsets = pa.array([0, len(raw)], pa.int32()).buffers()[1]
    # the bytes as they are (Arrow does not check a column built from buffers)
    column = pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(raw)])
    graphs = read_graph(column)
    items = [
        (r["direction"], r["item"], r["namespace"], r["name"], r["version"])
        for r in graphs.items.to_pylist()
    ]
    facets = [
        (r["place"], r["item"], r["facet_name"], r["value_start"], r["value_length"])
        for r in graphs.facets.to_pylist()
    ]
    return graphs.read[0].as_py(), items, facets


def check_graph(raw: bytes) -> None:
    """graph.c reads ``raw`` as the reference does, or both leave it (AssertionError)."""
    with native_coverage.traced():
        read, items, spans = read_in_c(raw)
    expected = reference_graph(raw)
    if expected is None:
        assert (read, items, spans) == (False, [], []), ("graph.c read a refused text", raw)
        return
    assert read, ("graph.c left a text the reference reads", raw)
    text = raw.decode("utf-8")
    facets = []
    for place, item, name, start, length in spans:
        value = text[start : start + length]
        assert value and value[0] not in WHITESPACE and value[-1] not in WHITESPACE, (raw, start)
        facets.append((place, item, name, decode(value)))
    assert (sorted(items), sorted(facets, key=repr)) == expected, raw


def main() -> None:
    if not native_coverage.install():
        print("the C's edges are not traced (no gcc build): Python coverage only", file=sys.stderr)
    atheris.Setup(sys.argv, check_graph)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

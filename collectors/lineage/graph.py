"""The lineage graph of OpenLineage events read from their JSON text: their dataset items and
where each facet's value lies, for the warehouse's merge (``lineage_merge.sql``).

Why: parsing every payload in DuckDB into facet maps (``core.lineage_graph``) was the largest
cost of a collection (about a quarter of its CPU), and most facets are then dropped: only the
latest per entity and facet name is kept. ``read_graph`` gives the merge the narrow facts it ranks
(place, item, facet name) and the span of each facet's value in the payload (in characters, as
``substring()`` counts), so the merge slices out only the winners' texts (``json()`` of the
slice: the same text the maps held).

The reader is C (``graph.c``: 5-12 µs an event, against 80 µs in Python), built on first use
(``collectors.lineage.native``) and called through ctypes, which releases the GIL. No maintained
library does this job as fast (issue 36; ``python -m bench.lineage_readers``): msgspec decodes
an event into Structs with ``msgspec.Raw`` facet values (raw bytes, not decoded) as fast as
graph.c reads it, but building the rows in Python puts it at 5x graph.c's time, and it cannot
see a repeated or escaped key, which graph.c must leave to the warehouse. So the C stays, with
a coverage-guided fuzz target (``tests/fuzz/fuzz_graph.py``, atheris, run by ``make test``)
holding it equal to its rules written again in Python on every input. Where it
cannot be built (no compiler, no writable folder), ``read_graph`` raises
``NativeCodeUnavailable`` and the collector leaves every event to the warehouse's parse: the
same rows, slower. An event the
reader does not take (see ``graph.c``: not JSON, odd shapes, escaped keys) is left to that parse
too.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from collectors.lineage import native
from collectors.lineage.native import NativeCodeUnavailable
from collectors.lineage.schema import LINEAGE_FACETS, LINEAGE_ITEMS

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("graph.c")

DIRECTIONS = pa.array(["INPUT", "OUTPUT", "DATASET"])
"""``item_direction`` codes of graph.c, in order."""
PLACES = pa.array(["run", "job", "dataset", "input", "output"])
"""``facet_place`` codes of graph.c, in order: a run's or job's facets, a dataset's facets,
an input's inputFacets, an output's outputFacets."""


class _Ints(ctypes.Structure):
    _fields_ = [
        ("values", ctypes.c_void_p),
        ("count", ctypes.c_int64),
        ("capacity", ctypes.c_int64),
    ]


class _Strings(ctypes.Structure):
    _fields_ = [
        ("offsets", ctypes.c_void_p),
        ("valid", ctypes.c_void_p),
        ("count", ctypes.c_int64),
        ("offsets_capacity", ctypes.c_int64),
        ("valid_capacity", ctypes.c_int64),
        ("bytes", ctypes.c_void_p),
        ("size", ctypes.c_int64),
        ("room", ctypes.c_int64),
    ]


class _Graph(ctypes.Structure):
    _fields_ = [
        ("facet_event", _Ints),
        ("facet_place", _Ints),
        ("facet_item", _Ints),
        ("facet_start", _Ints),
        ("facet_length", _Ints),
        ("facet_name", _Strings),
        ("facet_direction", _Ints),
        ("item_event", _Ints),
        ("item_direction", _Ints),
        ("item_index", _Ints),
        ("item_namespace", _Strings),
        ("item_name", _Strings),
        ("item_version", _Strings),
        ("scanned", ctypes.c_void_p),
        ("out_of_memory", ctypes.c_int),
    ]


@dataclass(frozen=True)
class EventGraphs:
    """What ``read_graph`` found in one column of events (row ``event`` is the position in it).

    ``items``: event, direction (INPUT, OUTPUT, DATASET), item (numbered in the event: inputs
    from 0, then outputs, then the dataset), namespace, name, version (the version facet's
    datasetVersion; null where none). ``facets``: event, place (``PLACES``), item (null for
    run and job facets), facet_name, value_start and value_length (the value's place in the
    event's text, in characters: code points, from 0). ``read``: per event, whether it was
    read (false: nothing of it is in ``items`` or ``facets``; the warehouse parses it)."""

    items: pa.Table
    facets: pa.Table
    read: pa.Array


_library: ctypes.CDLL | None = None
_library_lock = threading.Lock()


def _load() -> ctypes.CDLL:
    global _library
    with _library_lock:
        if _library is None:
            library = native.library(SOURCE, "annex's lineage graph reader")
            library.annex_lineage_graph.argtypes = [
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_int64,
                ctypes.POINTER(_Graph),
            ]
            library.annex_lineage_graph.restype = ctypes.c_int
            library.annex_lineage_graph_free.argtypes = [ctypes.POINTER(_Graph)]
            library.annex_lineage_graph_free.restype = None
            _library = library
        return _library


def _ints(ints: _Ints) -> pa.Array:
    data = ctypes.string_at(ints.values, ints.count * 4) if ints.count else b""
    return pa.Array.from_buffers(pa.int32(), ints.count, [None, pa.py_buffer(data)])


def _strings(strings: _Strings) -> pa.Array:
    count = strings.count
    if not count:
        return pa.array([], pa.string())
    offsets = pa.py_buffer(ctypes.string_at(strings.offsets, (count + 1) * 4))
    data = pa.py_buffer(ctypes.string_at(strings.bytes, strings.size) if strings.size else b"")
    valid = pa.py_buffer(ctypes.string_at(strings.valid, count))
    flags = pa.Array.from_buffers(pa.uint8(), count, [None, valid])
    if pc.all(pc.equal(flags, 1)).as_py():
        return pa.Array.from_buffers(pa.string(), count, [None, offsets, data])
    bitmap = pc.cast(flags, pa.bool_()).buffers()[1]
    return pa.Array.from_buffers(pa.string(), count, [bitmap, offsets, data])


def read_graph(texts: pa.Array | pa.ChunkedArray) -> EventGraphs:
    """The graphs of a column of event texts (string or JSON type; a null is not read)."""
    library = _load()
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks() if texts.num_chunks != 1 else texts.chunk(0)
    if isinstance(texts.type, pa.ExtensionType):
        texts = texts.storage
    if texts.type != pa.string():
        texts = texts.cast(pa.string())
    if texts.null_count:  # a null, an empty text: not an object, not read
        texts = pc.fill_null(texts, "")
    count = len(texts)
    _, offsets, data = texts.buffers()
    graph = _Graph()
    try:
        done = library.annex_lineage_graph(
            data.address if data is not None and count else None,
            # a slice's offsets start at its first row's (they index the whole data buffer)
            offsets.address + 4 * texts.offset if count else None,
            count,
            ctypes.byref(graph),
        )
        if not done or graph.out_of_memory:
            raise MemoryError("annex's lineage graph reader ran out of memory")
        read = pa.Array.from_buffers(
            pa.uint8(), count, [None, pa.py_buffer(ctypes.string_at(graph.scanned, count))]
        )
        item_events = _ints(graph.item_event)
        items = pa.table(
            {
                "event": item_events,
                "direction": pc.take(DIRECTIONS, _ints(graph.item_direction)),
                "item": _ints(graph.item_index),
                "namespace": _strings(graph.item_namespace),
                "name": _strings(graph.item_name),
                "version": _strings(graph.item_version),
            }
        )
        places = _ints(graph.facet_place)
        facet_items = _ints(graph.facet_item)
        facets = pa.table(
            {
                "event": _ints(graph.facet_event),
                "place": pc.take(PLACES, places),
                "item": pc.if_else(pc.less(facet_items, 0), None, facet_items),
                "facet_name": _strings(graph.facet_name),
                "value_start": _ints(graph.facet_start),
                "value_length": _ints(graph.facet_length),
            }
        )
    finally:
        library.annex_lineage_graph_free(ctypes.byref(graph))
    return EventGraphs(items, facets, pc.cast(read, pa.bool_()))


_warned = False


def graph_tables(events: pa.Table, first_index: int) -> tuple[pa.Table, pa.Table, pa.Table]:
    """``events`` (``LINEAGE_EVENTS``) with ``event_index`` numbered from ``first_index`` and
    ``graph_read`` set, and the ``LINEAGE_ITEMS`` and ``LINEAGE_FACETS`` of the events read.

    Without the reader (no C compiler) no event is read, with one warning a process: the
    warehouse parses every payload instead, to the same rows."""
    global _warned
    count = events.num_rows
    index = pa.array(range(first_index, first_index + count), pa.int64())
    try:
        graphs = read_graph(events.column("payload"))
    except NativeCodeUnavailable as exc:
        if not _warned:
            log.warning("%s", exc)
            _warned = True
        graphs = EventGraphs(
            LINEAGE_ITEMS.empty_table(), LINEAGE_FACETS.empty_table(), pa.repeat(False, count)
        )
    else:
        graphs = EventGraphs(
            _numbered(graphs.items, first_index, LINEAGE_ITEMS),
            _numbered(graphs.facets, first_index, LINEAGE_FACETS),
            graphs.read,
        )
    events = events.set_column(
        events.schema.get_field_index("event_index"), "event_index", index
    ).set_column(events.schema.get_field_index("graph_read"), "graph_read", graphs.read)
    return events, graphs.items, graphs.facets


def _numbered(table: pa.Table, first_index: int, schema: pa.Schema) -> pa.Table:
    """A ``read_graph`` table with its ``event`` (a position) as ``event_index``."""
    if not table.num_rows:
        return schema.empty_table()
    index = pc.add(pc.cast(table.column("event"), pa.int64()), first_index)
    columns = {"event_index": index, **{n: table.column(n) for n in schema.names[1:]}}
    return pa.table(columns, schema=schema)

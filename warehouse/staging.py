"""Staging Arrow batches into DuckDB temp tables, a few large INSERTs instead of many small ones.

Each ``INSERT ... SELECT FROM <arrow>`` costs about 2 ms however small the batch, so 500-row
pages staged one by one top out near 200k rows/s, while the same rows in 50k-row chunks go in at
over 1M rows/s. The stager therefore keeps the batches of each table until they reach
``FLUSH_ROWS`` rows or ``FLUSH_BYTES`` bytes, then inserts them as one Arrow table (no copy:
``pa.Table.from_batches`` only references the batches). Memory stays bounded by those caps per
table, never by cluster size, and the collector's iterator is still consumed one batch at a time.
Without sinks, a chunk goes in on a helper thread while the collector reads and decodes the next
batches (one chunk at a time: at most two chunks' worth of batches are held).

Tables that bypass staging (``SourceModel.appends``) go to their ``Sink`` batch by batch. A sink
for a very large table keeps one ``AppendStream`` open: a single ``INSERT ... SELECT`` fed batch
by batch while the collector goes on, which is as fast as DuckDB's own bulk insert of the whole
table, where one statement per chunk pays each statement's start and its parallel tail again.

Batches reach DuckDB through ``execute_over_arrow``, never a view made with ``register``: a view
dropped inside a transaction stays in its catalog until the commit, and keeps its Arrow data
alive, so every chunk a collection staged stayed in memory to its end.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import duckdb
import pyarrow as pa

from annex.errors import CollectionError

FLUSH_ROWS = 65_536
FLUSH_BYTES = 32 * 1024 * 1024
SINK_FLUSH_ROWS = 122_880 * 40
"""A sink holds back at most about this many rows (or ``FLUSH_BYTES``) while it waits for
something only a statement of its own can give (the telemetry sink: ids for series it has not
mapped yet), so that such pauses stay rare when a collector interleaves small batches of series
and samples (one exporter after another)."""


class Sink(Protocol):
    """Receives, batch by batch, the tables that bypass staging (see ``SourceModel.appends``).

    The stager calls ``pause()`` before it runs a statement of its own (no statement of the
    sink's may be running when it returns), ``close()`` once after the last batch, when every
    staged table is complete, and ``abort()`` instead when the collection fails (end whatever
    runs, quietly: the transaction is rolled back next).
    """

    def __call__(self, table: str, batch: pa.RecordBatch) -> None: ...

    def pause(self) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


SinkFactory = Callable[[duckdb.DuckDBPyConnection], Sink]
"""Makes the sink of one collection. A factory listed under several tables is called once per
collection, and its sink receives the batches of all of them (series and their samples)."""

ARROW_NAME = "annex_arrow"
"""The name under which ``execute_over_arrow``'s SQL reads its Arrow data."""
_END = object()


def execute_over_arrow(con: duckdb.DuckDBPyConnection, sql: str, data: pa.Table) -> None:
    """Run ``sql``, in which the table ``annex_arrow`` (``ARROW_NAME``) is ``data``.

    DuckDB finds ``annex_arrow`` among this function's local variables (its replacement scan of
    Python objects; a table or view of that name would win, and annex makes none) rather than
    in a view made with ``register``. Such a view, once dropped inside a transaction, stays in
    the transaction's catalog until the commit, with its Arrow data: a 200,000-event lineage
    collection kept 1.1 GB of staged chunks alive that way, and decoding its next chunks into
    fresh memory took four times as long as decoding itself.
    """
    annex_arrow = data  # noqa: F841 (read by DuckDB from this frame)
    con.execute(sql)


@dataclass
class _Pending:
    batches: list[pa.RecordBatch] = field(default_factory=list)
    rows: int = 0
    bytes: int = 0
    first_batch: int = 0
    """Number (1-based, over the whole collection) of the first pending batch, for errors."""


class Stager:
    """Buffers batches per table and inserts them ``BY NAME`` into ``stage_<table>``.

    Tables in ``sinks`` are handed to their sink at once, batch by batch, in collection order.
    """

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        source: str,
        sinks: Mapping[str, SinkFactory] | None = None,
    ) -> None:
        self.con = con
        self.source = source
        self.pending: dict[str, _Pending] = {}
        made: dict[int, Sink] = {}
        self.sinks: dict[str, Sink] = {}
        for table, factory in (sinks or {}).items():
            if id(factory) not in made:
                made[id(factory)] = factory(con)
            self.sinks[table] = made[id(factory)]
        self.distinct_sinks = list(made.values())
        self._inserting: Future[None] | None = None
        self._inserter: ThreadPoolExecutor | None = None

    def add(self, table: str, batch: pa.RecordBatch, number: int) -> None:
        """Stage batch ``number`` of the collection (inserted now or at a later flush)."""
        sink = self.sinks.get(table)
        if sink is not None:
            sink(table, batch)
            return
        pending = self.pending.get(table)
        if pending is not None and pending.batches and pending.batches[0].schema != batch.schema:
            self.flush(table)
            pending = None
        if pending is None or not pending.batches:
            pending = self.pending[table] = _Pending(first_batch=number)
        pending.batches.append(batch)
        pending.rows += batch.num_rows
        pending.bytes += batch.nbytes
        if pending.rows >= FLUSH_ROWS or pending.bytes >= FLUSH_BYTES:
            self.flush(table)

    def flush_staged(self) -> None:
        """Insert everything still pending into the stage tables (and wait for the inserts)."""
        for table in list(self.pending):
            self.flush(table)
        self._wait()

    def finish(self) -> None:
        """After the last batch: flush the stage tables, then close every sink."""
        self.flush_staged()
        self._stop_inserter()
        for sink in self.distinct_sinks:
            sink.close()

    def abort(self) -> None:
        """The collection failed: wait for a chunk still being inserted and end the sinks'
        statements (their rows are rolled back)."""
        with contextlib.suppress(BaseException):
            self._wait()
        self._stop_inserter()
        for sink in self.distinct_sinks:
            with contextlib.suppress(Exception):
                sink.abort()

    def flush(self, table: str) -> None:
        """Insert the pending batches of ``table``. Without sinks, on a helper thread: the
        collector goes on reading and decoding its next batches (DuckDB releases the GIL) while
        the chunk goes in, and only one chunk is ever being inserted; an insert's error is
        raised by the next flush or by ``finish``. With sinks, at once: their statements share
        the connection."""
        pending = self.pending.pop(table, None)
        if pending is None or not pending.batches:
            return
        for sink in self.distinct_sinks:
            sink.pause()
        data = pa.Table.from_batches(pending.batches)
        self._wait()
        if self.distinct_sinks:
            self._insert(table, pending, data)
            return
        if self._inserter is None:
            self._inserter = ThreadPoolExecutor(1, thread_name_prefix="annex-stage")
        self._inserting = self._inserter.submit(self._insert, table, pending, data)

    def _wait(self) -> None:
        inserting, self._inserting = self._inserting, None
        if inserting is not None:
            inserting.result()

    def _stop_inserter(self) -> None:
        inserter, self._inserter = self._inserter, None
        if inserter is not None:
            inserter.shutdown(wait=True)

    def _insert(self, table: str, pending: _Pending, data: pa.Table) -> None:
        try:
            execute_over_arrow(
                self.con, f"INSERT INTO stage_{table} BY NAME SELECT * FROM {ARROW_NAME}", data
            )
        except duckdb.Error as exc:
            last = pending.first_batch + len(pending.batches) - 1
            which = (
                f"batch {last}"
                if last == pending.first_batch
                else f"batches {pending.first_batch}-{last}"
            )
            raise CollectionError(
                f"{which} of table {table!r} from the {self.source} collector do not fit "
                f"stage_{table}: {exc}",
                hint="the collector's Arrow schema and the model's staging_sql disagree",
            ) from exc


class AppendStream:
    """One ``INSERT ... SELECT FROM <stream>`` kept running across many batches.

    ``put`` hands a batch to the statement, which DuckDB runs on a helper thread (started by the
    first ``put``) while the calling thread goes on collecting and converting the next batches.
    At most ``depth`` batches wait in between, so memory stays bounded and a collector faster
    than DuckDB is held back. Nothing else may run on the connection until ``close()`` (ends
    the statement, waits for it and raises its error) or ``abort()`` (ends it, ignoring errors;
    the caller rolls the transaction back). The collector itself always runs on the calling
    thread, so Ctrl-C and its errors surface there as before.
    """

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        sql: str,
        schema: pa.Schema,
        *,
        name: str = "annex_append_stream",
        depth: int = 2,
    ) -> None:
        """``sql`` reads the stream under ``name``, e.g. ``INSERT INTO t SELECT * FROM name``."""
        self.con = con
        self.sql = sql
        self.schema = schema
        self.name = name
        self.depth = depth
        self.statements = 0
        self._queue: queue.Queue[object] = queue.Queue(maxsize=depth)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def put(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if self._thread is None:
            self._start()
        thread = self._thread
        assert thread is not None
        while True:
            try:
                self._queue.put(batch, timeout=0.05)
                return
            except queue.Full:
                if not thread.is_alive():  # the statement ended early: its error says why
                    self.close()
                    raise RuntimeError(f"{self.sql!r} stopped reading its stream") from None

    def close(self) -> None:
        thread = self._thread
        if thread is None:
            return
        self._end(thread)
        thread.join()  # interrupted here (Ctrl-C), the stream stays open for abort() to end
        self._thread = None
        error, self._error = self._error, None
        if error is not None:
            raise error

    def abort(self) -> None:
        thread = self._thread
        if thread is None:
            return
        with contextlib.suppress(queue.Empty):
            while True:
                self._queue.get_nowait()
        self._end(thread)
        thread.join()
        self._thread = None
        self._error = None

    def _start(self) -> None:
        self._queue = queue.Queue(maxsize=self.depth)
        reader = pa.RecordBatchReader.from_batches(self.schema, self._batches(self._queue))
        self._error = None
        self._thread = threading.Thread(
            target=self._run, args=(reader,), name="annex-append-stream", daemon=True
        )
        self.statements += 1
        self._thread.start()

    def _end(self, thread: threading.Thread) -> None:
        while thread.is_alive():
            try:
                self._queue.put(_END, timeout=0.05)
                return
            except queue.Full:
                continue

    @staticmethod
    def _batches(source: queue.Queue[object]) -> Iterator[pa.RecordBatch]:
        while True:
            item = source.get()
            if item is _END:
                return
            assert isinstance(item, pa.RecordBatch)
            yield item

    def _run(self, reader: pa.RecordBatchReader) -> None:
        try:
            self.con.register(self.name, reader)
            try:
                self.con.execute(self.sql)
            finally:
                with contextlib.suppress(duckdb.Error):
                    self.con.unregister(self.name)
        except BaseException as exc:
            self._error = exc

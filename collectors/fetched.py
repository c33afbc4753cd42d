"""A collection fetched in full before the warehouse's writer lock is taken.

The writer lock serialises every write to the warehouse (``warehouse.lock``); a writer that
holds it while it waits on a network peer makes every other writer (Dagster runs, the watch
service, the CLI) wait as long as that peer likes. So a collector that talks to a server
fetches first, into this spool, and the lock is taken only to load what was fetched: the lock
is then held for local work only (reading a file, staging, merging).

Memory stays bounded by one batch, not by the collection: each table's batches go to their own
Arrow IPC stream file (zstd-compressed) in a temporary folder (``$TMPDIR``), and ``replay``
reads them back one batch at a time, in the order they were fetched. The folder is removed
when the spool is closed, whatever happened.

A fetch that fails is kept too: ``replay`` raises its error after yielding nothing, so the
loader still records the failed collection (``audit.collections``) with its reason.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType

import pyarrow as pa

_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")


class FetchedCollection:
    """``(table, batch)`` pairs spooled to disk; ``replay`` yields them back in order."""

    def __init__(self, folder: Path | None = None, *, prefix: str = "annex-fetched-") -> None:
        self.folder = Path(tempfile.mkdtemp(prefix=prefix, dir=folder))
        self._writers: dict[str, pa.ipc.RecordBatchStreamWriter] = {}
        self._sinks: dict[str, pa.OSFile] = {}
        self._schemas: dict[str, pa.Schema] = {}
        self._order: list[str] = []
        self.error: Exception | None = None
        self.batches = 0
        self.bytes = 0

    def __enter__(self) -> FetchedCollection:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def fetch(self, batches: Iterable[tuple[str, pa.RecordBatch]]) -> FetchedCollection:
        """Consume ``batches`` to the end (the network part); an ``Exception`` it raises is
        kept for ``replay``. ``KeyboardInterrupt`` and the like propagate at once."""
        try:
            for table, batch in batches:
                self.add(table, batch)
        except Exception as exc:
            self.error = exc
        finally:
            self.finish()
        return self

    def replay(self) -> Iterator[tuple[str, pa.RecordBatch]]:
        """The fetched pairs in fetch order, one batch in memory at a time; then the fetch's
        error, if it failed (and then nothing is yielded)."""
        if self.error is not None:
            raise self.error
        readers: dict[str, pa.ipc.RecordBatchStreamReader] = {}
        sources: list[pa.MemoryMappedFile] = []
        try:
            for table in self._order:
                reader = readers.get(table)
                if reader is None:
                    source = pa.memory_map(str(self._path(table)), "r")
                    sources.append(source)
                    reader = readers[table] = pa.ipc.open_stream(source)
                yield table, reader.read_next_batch()
        finally:
            for source in sources:
                source.close()

    def close(self) -> None:
        self.finish()
        shutil.rmtree(self.folder, ignore_errors=True)

    def add(self, table: str, batch: pa.RecordBatch) -> None:
        """Spool one batch (every batch of a table is cast to the table's first schema)."""
        writer = self._writers.get(table)
        schema = self._schemas.get(table)
        if schema is not None and not batch.schema.equals(schema):
            batch = batch.select(schema.names).cast(schema)  # one table, one schema
        if writer is None:
            self._schemas[table] = batch.schema
            sink = self._sinks[table] = pa.OSFile(str(self._path(table)), "wb")
            writer = self._writers[table] = pa.ipc.new_stream(sink, batch.schema, options=_OPTIONS)
        writer.write_batch(batch)
        self._order.append(table)
        self.batches += 1
        self.bytes += batch.nbytes

    def finish(self) -> None:
        """Close the files being written (``replay`` needs them whole); idempotent."""
        for writer in self._writers.values():
            writer.close()
        for sink in self._sinks.values():
            sink.close()
        self._writers.clear()
        self._sinks.clear()

    def _path(self, table: str) -> Path:
        return self.folder / f"{table}.arrows"

"""Turning list pages into Arrow batches in a second process, while the next page is fetched.

A page costs two kinds of work: fetching it (waiting for the API server, reading the socket,
inflating gzip) and decoding it into columns (pure Python, holding the GIL). A thread cannot
overlap them: the socket reads and the column building fight over the GIL and both slow down
(measured: 40–60% slower than doing them one after the other). A worker process can. The main
process fetches each page and checks that it is complete JSON (a fast skip-parse that also
yields the continue token and the item count); the worker decodes the page into its typed
structs and builds the RecordBatch; the main process stages it in the warehouse. On two cores
that overlaps fetch and decode, and a long list also stays further ahead of its continue
token's expiry.

Pages are built strictly in order by one worker, so per-snapshot state (duplicate UIDs) stays
correct; at most ``window`` pages are in flight, so memory stays bounded by the page size.
``in_process=True`` does the same work without a worker (for tests and tiny clusters).
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec
import pyarrow as pa

from annex.errors import CollectionError
from collectors.kubernetes import objects
from collectors.kubernetes.decode import DECODERS, DecodeContext, Rejection, ResourceDecoder
from collectors.kubernetes.kueue import KUEUE_DECODERS
from collectors.kubernetes.text import needs_split, split_page
from collectors.workers import die_with_parent

if TYPE_CHECKING:  # the worker process must not import the kubernetes client
    from collectors.kubernetes.listing import Page

Built = tuple[pa.RecordBatch, list[Rejection]]

_ALL_DECODERS = {**DECODERS, **KUEUE_DECODERS}


@dataclass(frozen=True)
class RawPage:
    """A fetched page, checked to be complete JSON but not decoded: what the worker needs."""

    metadata: objects.ListMeta
    items: list[msgspec.Raw]
    """The items, undecoded (only their count is used here)."""
    body: bytes
    rejected: list[Rejection] = field(default_factory=list)
    """Objects cut out of the page before decoding (invalid text: ``text``)."""


_HEAD = msgspec.json.Decoder(objects.RawList)


def read_page(body: bytes, resource: str = "object") -> RawPage:
    """Skip-parse a page: its list metadata and item count, and proof it is complete JSON.

    Objects whose text is not valid Unicode (``text``) are cut out and rejected here, so that
    they cost neither the page nor the collection. Raises ``msgspec.DecodeError`` for a
    truncated or corrupted body, so the lister re-fetches.
    """
    rejected: list[Rejection] = []
    if needs_split(body):
        split = split_page(body, resource)
        body, rejected = split.body, split.rejected
    head = _HEAD.decode(body)
    return RawPage(head.metadata, head.items, body, rejected)


# -- building ---------------------------------------------------------------------------------


class _Decoders:
    """One decoder per table, kept across the pages of a collection (duplicate-UID state)."""

    def __init__(self, context: DecodeContext) -> None:
        self.context = context
        self.by_table: dict[str, ResourceDecoder] = {}

    def build(self, table: str, body: bytes, attempt: int) -> Built:
        decoder = self.by_table.get(table)
        if decoder is None:
            decoder = self.by_table[table] = _ALL_DECODERS[table](self.context)
        return decoder.build(decoder.decode(body), attempt)


_worker: _Decoders | None = None
"""The worker process's decoders (set by its initializer)."""


def _start_worker(context: DecodeContext, parent_pid: int | None = None) -> None:
    global _worker
    die_with_parent(parent_pid)  # no orphan when the collector is killed (kill -9)
    _worker = _Decoders(context)


def _build_in_worker(table: str, body: bytes, attempt: int) -> Built:
    assert _worker is not None, "worker not started"
    return _worker.build(table, body, attempt)


# -- the main process -------------------------------------------------------------------------


class PageBuilder:
    """Builds the batches of every page, in order, in a worker process (or in-process)."""

    def __init__(self, context: DecodeContext, *, in_process: bool = False, window: int = 3):
        self.window = window
        self._executor: ProcessPoolExecutor | None = None
        self._local = _Decoders(context) if in_process else None
        if not in_process:
            # "spawn": the collector may run inside threaded hosts (Dagster, rich's refresh
            # thread), where forking is unsafe. The worker imports only this package.
            self._executor = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker,
                initargs=(context, os.getpid()),
            )

    def __enter__(self) -> PageBuilder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def build(self, table: str, pages: Iterable[Page[RawPage]]) -> Iterator[Built]:
        """The (batch, rejections) of each page of ``pages``, in order."""
        if self._local is not None:
            for page in pages:
                batch, rejected = self._local.build(table, page.decoded.body, page.attempt)
                yield batch, page.decoded.rejected + rejected
            return
        assert self._executor is not None, "builder closed"
        pending: deque[tuple[Future[Built], list[Rejection]]] = deque()
        try:
            for page in pages:
                future = self._executor.submit(
                    _build_in_worker, table, page.decoded.body, page.attempt
                )
                pending.append((future, page.decoded.rejected))
                if len(pending) >= self.window:
                    yield self._result(*pending.popleft(), table)
            while pending:
                yield self._result(*pending.popleft(), table)
        finally:
            for future, _ in pending:
                future.cancel()

    @staticmethod
    def _result(future: Future[Built], cut: list[Rejection], table: str) -> Built:
        try:
            batch, rejected = future.result()
            return batch, cut + rejected
        except BrokenProcessPool as exc:
            raise CollectionError(
                f"the process decoding {table} pages stopped unexpectedly ({exc})",
                hint="it may have run out of memory: try a smaller kubernetes.page_size",
            ) from None

"""List-then-watch: the exact change history of pods, nodes, jobs and events (issue 9).

Snapshots miss what starts and ends between them; a watch does not. For each resource,
``ResourceHistory.batches`` yields ``HistoryBatch``es, each a unit the warehouse commits in one
transaction together with the resourceVersion it reaches (``resource_version``), so a restart
from the committed cursor neither loses nor repeats a change:

1. no cursor (first start, or after a 410): a consistent list at resourceVersion X, as one
   ``snapshot`` batch: objects the warehouse knew that it lacks are gone. The list is a
   streaming list (``sendInitialEvents``, WatchList) when the server supports it, else the
   paged list of ``listing.Lister``;
2. a watch from X with bookmarks and a server timeout (``watch.Watcher``: resumes from the
   last resourceVersion after a disconnect or the server's timeout); its events are buffered
   into ``changes`` batches of at most ``max_batch_events`` events or ``max_batch_seconds``,
   and a BOOKMARK that moves the resourceVersion flushes the buffer (possibly empty: the
   cursor itself advances, so a restart resumes from there, not from an older point);
3. 410 Expired (HTTP or in-stream ERROR): back to 1.

A batch carries, per object, its last state in the batch (later states of an object carry
everything earlier ones did: scheduling, start and finish times only ever get set), whether it
was deleted, and for pods the decoded pod row (``schema.PODS``) from which the warehouse
derives GPU allocation intervals with the objects' own timestamps. Rows are Arrow batches;
nothing here touches DuckDB.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

import msgspec
import pyarrow as pa
from kubernetes.client import ApiClient

from annex.errors import CollectionError
from annex.settings import KubernetesSettings
from collectors.kubernetes import schema
from collectors.kubernetes.builder import read_page
from collectors.kubernetes.collect import RESOURCES, Resource, lists_batch
from collectors.kubernetes.decode import (
    DecodeContext,
    PodDecoder,
    Rejection,
    _timestamps,
    rejected_batch,
)
from collectors.kubernetes.listing import Lister, ListRecord, utc_now
from collectors.kubernetes.watch import (
    DEFAULT_TIMEOUT_SECONDS,
    Watcher,
    WatchEvent,
    WatchExpired,
    list_body,
)

WATCHED: tuple[str, ...] = ("pods", "nodes", "jobs", "events")
"""The resources watch mode follows (tables of ``collect.RESOURCES``)."""

OBJECTS = pa.schema(
    [
        ("uid", pa.string()),
        ("namespace", pa.string()),
        ("name", pa.string()),
        ("resource_version", pa.string()),
        ("deletion_timestamp", schema.TIMESTAMP),
        ("deleted", pa.bool_()),
        ("observed_at", schema.TIMESTAMP),
    ]
)
"""One row per object changed in a batch: its identity and last known state."""

WATCH_PODS = schema.PODS.append(pa.field("deleted", pa.bool_())).append(
    pa.field("observed_at", schema.TIMESTAMP)
)
"""Pods as the snapshot collector decodes them, plus whether the change was a deletion and
when annex received it (the fallback time when the object carries none)."""

REQUESTS = pa.schema(
    [
        ("resource", pa.string()),
        ("api_path", pa.string()),
        ("verb", pa.string()),
        ("requested_at", schema.TIMESTAMP),
        ("latency_seconds", pa.float64()),
    ]
)
"""Each list or watch request since the last batch: its latency as annex saw it (lists:
request to last byte; watches: request to response headers)."""


@dataclass(frozen=True)
class WatchOptions:
    """How watch mode talks to the API server and how often it commits."""

    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS
    """Server-side ``timeoutSeconds`` per watch request; the watch then resumes."""
    max_batch_events: int = 500
    max_batch_seconds: float = 2.0
    """A buffer older than this is committed at the next event or bookmark."""
    streaming_list: str = "auto"
    """``auto`` (try ``sendInitialEvents``, fall back to a paged list), ``always`` or ``never``."""


@dataclass
class HistoryBatch:
    """One commit's worth of changes of one resource."""

    resource: str
    api_path: str
    kind: str
    """``snapshot`` (a full list: objects absent from it are gone) or ``changes``."""
    resource_version: str
    """Where the next watch starts once this batch is committed."""
    objects: pa.RecordBatch
    pods: pa.RecordBatch | None
    rejected: pa.RecordBatch | None
    requests: pa.RecordBatch
    lists: pa.RecordBatch | None = None
    """For a paged-list snapshot: the list's record for ``audit.kubernetes_lists``."""
    via: str = "watch"
    """``list`` (paged), ``watchlist`` (streaming list) or ``watch``."""
    events: int = 0
    """Watch events (not BOOKMARKs) in the batch; list items for snapshots."""
    first_event_at: float | None = None
    """``time.monotonic()`` when the batch's first event arrived (for lag measurements)."""


class _Meta(msgspec.Struct, rename="camel", gc=False):
    uid: str = ""
    name: str = ""
    namespace: str | None = None
    resource_version: str = ""
    deletion_timestamp: str | None = None


class _Object(msgspec.Struct, gc=False):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


_OBJECT = msgspec.json.Decoder(_Object)
_BY_TABLE: dict[str, Resource] = {r.table: r for r in RESOURCES}


def resource(table: str) -> Resource:
    """The ``collect.RESOURCES`` entry of ``table`` (``pods``, ``nodes``, ``jobs``, ``events``)."""
    try:
        if table not in WATCHED:
            raise KeyError(table)
        return _BY_TABLE[table]
    except KeyError:
        raise CollectionError(
            f"watch mode does not follow {table!r}", hint="use one of: " + ", ".join(WATCHED)
        ) from None


@dataclass
class _Buffer:
    """Events received and not yet handed over, collapsed to the last one per object."""

    by_uid: dict[str, tuple[WatchEvent, datetime]] = field(default_factory=dict)
    rejected: list[Rejection] = field(default_factory=list)
    events: int = 0
    first_at: float | None = None

    def add(self, event: WatchEvent, now: float) -> None:
        if self.first_at is None:
            self.first_at = now
        self.events += 1
        uid = _OBJECT.decode(event.raw).metadata.uid
        if not uid:
            self.rejected.append(
                Rejection(
                    "watch event without metadata.uid",
                    "missing_identity",
                    f"a {event.type} watch event carries an object without metadata.uid",
                    event.raw[:65536],
                )
            )
            return
        self.by_uid.pop(uid, None)  # keep arrival order of the last change
        self.by_uid[uid] = (event, utc_now())


class ResourceHistory:
    """List-then-watch of one resource; ``batches`` yields what to commit, in order."""

    def __init__(
        self,
        api: ApiClient,
        table: str,
        settings: KubernetesSettings,
        *,
        options: WatchOptions | None = None,
        context: DecodeContext | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.resource = resource(table)
        self.settings = settings
        self.options = options or WatchOptions()
        self.context = context or DecodeContext(balloons=settings.balloons)
        self.sleep = sleep
        self.clock = clock
        self.streaming = self.options.streaming_list != "never"
        self.relists = 0
        self.watcher: Watcher | None = None
        self._reported: dict[int, int] = {}
        self._yielded: str | None = None

    # -- the loop ------------------------------------------------------------------------------

    def batches(
        self,
        cursor: str | None,
        *,
        stop: Callable[[], bool] | None = None,
        deadline: float | None = None,
        until: Callable[[str], bool] | None = None,
    ) -> Iterator[HistoryBatch]:
        """Batches from ``cursor`` (None: list first) until ``stop()``, ``deadline`` (on
        ``clock``) or ``until(resource_version)`` says the watch has caught up.

        Raises ``ClusterAccessError`` / ``CollectionError`` when the API server refuses or
        keeps failing; what was yielded before stays valid (each batch stands alone).
        """
        rv = cursor or None
        if rv is not None and until is not None and until(rv):
            return
        while True:
            if stop is not None and stop():
                return
            if deadline is not None and self.clock() >= deadline:
                return
            try:
                if rv is None and not self.streaming:
                    snapshot = self._paged_snapshot()
                    yield snapshot
                    rv = snapshot.resource_version
                    if until is not None and until(rv):
                        return
                for batch in self._watch(rv, stop=stop, deadline=deadline, until=until):
                    rv = batch.resource_version
                    yield batch
                return
            except WatchExpired:
                self.relists += 1
                rv = None
            except CollectionError:
                if rv is not None or not self.streaming or self.options.streaming_list != "auto":
                    raise
                # The server refused the streaming list (no WatchList support): page instead.
                self.streaming = False

    def _watch(
        self,
        rv: str | None,
        *,
        stop: Callable[[], bool] | None,
        deadline: float | None,
        until: Callable[[str], bool] | None,
    ) -> Iterator[HistoryBatch]:
        streaming = rv is None
        watcher = Watcher(
            self.api,
            self.resource.api_path,
            self.settings,
            resource=self.resource.table,
            timeout_seconds=self.options.timeout_seconds,
            sleep=self.sleep,
            clock=self.clock,
        )
        self.watcher = watcher
        self._reported = {}
        self._yielded = rv
        initial: list[WatchEvent] | None = [] if streaming else None
        buffer = _Buffer()
        caught_up = False
        last_yield = self.clock()

        def done() -> bool:
            return caught_up or (stop is not None and stop())

        try:
            for event in watcher.events(
                rv, send_initial_events=streaming, stop=done, deadline=deadline
            ):
                now = self.clock()
                if initial is not None:
                    if event.initial_events_end:
                        yield self._stream_snapshot(initial, event.resource_version)
                        initial = None
                        caught_up = until is not None and until(event.resource_version)
                    elif event.type != "BOOKMARK":
                        initial.append(event)
                    continue
                if event.type == "BOOKMARK":
                    # A bookmark moves the cursor even when nothing changed: commit it (at
                    # most every max_batch_seconds when there is nothing else to commit).
                    if buffer.events or now - last_yield >= self.options.max_batch_seconds:
                        yield self._changes(buffer, event.resource_version)
                        buffer = _Buffer()
                        last_yield = now
                else:
                    buffer.add(event, now)
                    old = buffer.first_at is not None and (
                        now - buffer.first_at >= self.options.max_batch_seconds
                    )
                    if buffer.events >= self.options.max_batch_events or old:
                        yield self._changes(buffer, event.resource_version)
                        buffer = _Buffer()
                        last_yield = now
                caught_up = until is not None and until(event.resource_version)
        except WatchExpired:
            record = watcher.record
            auto = self.options.streaming_list == "auto"
            if initial is not None and not record.initial_events_done and auto and record.events:
                # Initial events came but never their end bookmark: no WatchList here.
                self.streaming = False
            raise
        last = watcher.record.resource_version
        if last and initial is None and (buffer.events or last != self._yielded):
            yield self._changes(buffer, last)

    # -- batches -------------------------------------------------------------------------------

    def _changes(self, buffer: _Buffer, resource_version: str) -> HistoryBatch:
        self._yielded = resource_version
        entries = list(buffer.by_uid.values())
        events = [event for event, _ in entries]
        observed = [at for _, at in entries]
        deleted = [event.type == "DELETED" for event in events]
        batch = self._batch("changes", events, deleted, observed, resource_version, buffer.rejected)
        batch.events = buffer.events
        batch.first_event_at = buffer.first_at
        return batch

    def _stream_snapshot(self, events: list[WatchEvent], resource_version: str) -> HistoryBatch:
        now = utc_now()
        batch = self._batch(
            "snapshot",
            events,
            [False] * len(events),
            [now] * len(events),
            resource_version,
            [],
        )
        batch.via = "watchlist"
        batch.events = len(events)
        return batch

    def _paged_snapshot(self) -> HistoryBatch:
        """A consistent paged list, as one snapshot batch (the warehouse needs all of it to
        know what is gone)."""
        record = ListRecord(
            self.resource.table, self.resource.api_path, self.settings.page_size, utc_now()
        )
        lister = Lister(self.settings, sleep=self.sleep)
        raws: list[bytes] = []
        for page in lister.pages(self.resource.method(self.api), record, read_page):
            if page.number == 1:
                raws = []  # a restarted list: drop the abandoned attempt's pages
            raws.extend(bytes(item) for item in page.decoded.items)
        if not record.consistent:
            raise CollectionError(
                f"listing {self.resource.table} for watch mode: the snapshot expired (410) "
                f"{record.restarts} times and only an inconsistent list was offered",
                hint="raise kubernetes.max_list_restarts or start the watch when the API "
                "server is less loaded",
            )
        rv = record.resource_version or ""
        events = [WatchEvent("ADDED", rv, raw) for raw in raws]
        now = utc_now()
        batch = self._batch("snapshot", events, [False] * len(events), [now] * len(events), rv, [])
        batch.via = "list"
        batch.events = len(events)
        batch.lists = lists_batch([record])
        batch.requests = _requests(
            [
                (self.resource.table, self.resource.api_path, "list", record.started_at, latency)
                for latency in record.latencies
            ]
        )
        return batch

    def _batch(
        self,
        kind: str,
        events: list[WatchEvent],
        deleted: list[bool],
        observed: list[datetime],
        resource_version: str,
        rejected: list[Rejection],
    ) -> HistoryBatch:
        rejections = list(rejected)
        objects = _objects_batch(events, deleted, observed)
        pods = None
        if self.resource.table == "pods":
            pods, pod_rejections = self._pods(events, deleted, observed)
            rejections.extend(pod_rejections)
        return HistoryBatch(
            resource=self.resource.table,
            api_path=self.resource.api_path,
            kind=kind,
            resource_version=resource_version,
            objects=objects,
            pods=pods,
            rejected=rejected_batch(rejections) if rejections else None,
            requests=self._new_requests(),
        )

    def _pods(
        self, events: list[WatchEvent], deleted: list[bool], observed: list[datetime]
    ) -> tuple[pa.RecordBatch, list[Rejection]]:
        """Decode the pods as the snapshot collector does (one decoder per batch: a batch
        holds each uid once)."""
        decoder = PodDecoder(self.context)
        batch, rejections = decoder.build(decoder.decode(list_body(events)), 0)
        by_uid = {}
        for event, gone, at in zip(events, deleted, observed, strict=True):
            by_uid[_OBJECT.decode(event.raw).metadata.uid] = (gone, at)
        uids = batch.column(0).to_pylist()
        gone = pa.array([by_uid[uid][0] for uid in uids], pa.bool_())
        seen = pa.array([by_uid[uid][1] for uid in uids], schema.TIMESTAMP)
        columns = [*batch.columns, gone, seen]
        return pa.RecordBatch.from_arrays(columns, schema=WATCH_PODS), rejections

    def _new_requests(self) -> pa.RecordBatch:
        """Watch requests made since the last batch (their first-byte latency)."""
        watcher = self.watcher
        rows: list[tuple[str, str, str, datetime, float]] = []
        if watcher is not None:
            record = watcher.record
            start = self._reported.get(id(record), 0)
            latencies = record.first_byte_latencies[start:]
            times = record.request_started_at[start:]
            rows = [
                (self.resource.table, self.resource.api_path, "watch", at, latency)
                for at, latency in zip(times, latencies, strict=False)
            ]
            self._reported[id(record)] = start + len(rows)
        return _requests(rows)


def _objects_batch(
    events: list[WatchEvent], deleted: list[bool], observed: list[datetime]
) -> pa.RecordBatch:
    metas = [_OBJECT.decode(event.raw).metadata for event in events]
    keep = [index for index, meta in enumerate(metas) if meta.uid]
    return pa.RecordBatch.from_arrays(
        [
            pa.array([metas[i].uid for i in keep], pa.string()),
            pa.array([metas[i].namespace for i in keep], pa.string()),
            pa.array([metas[i].name for i in keep], pa.string()),
            pa.array([metas[i].resource_version for i in keep], pa.string()),
            _timestamps([metas[i].deletion_timestamp for i in keep]),
            pa.array([deleted[i] for i in keep], pa.bool_()),
            pa.array([observed[i] for i in keep], schema.TIMESTAMP),
        ],
        schema=OBJECTS,
    )


def _requests(rows: list[tuple[str, str, str, datetime, float]]) -> pa.RecordBatch:
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in REQUESTS]
    return pa.RecordBatch.from_arrays(
        [pa.array(list(values), f.type) for values, f in zip(columns, REQUESTS, strict=True)],
        schema=REQUESTS,
    )

"""List-then-watch: the exact change history of pods, nodes, jobs and events (issue 9), and
of DRA's ResourceSlices and ResourceClaims and Kueue's objects where the API server serves
them (issue 38).

Snapshots miss what starts and ends between them; a watch does not. For each resource,
``ResourceHistory.batches`` yields, in order, the units the warehouse commits, each in one
transaction together with the resourceVersion it reaches (``resource_version``), so a restart
from the committed cursor neither loses nor repeats a change:

1. no cursor (first start, or after a 410): a ``HistorySnapshot``, a consistent list at
   resourceVersion X, fetched page by page to a local spool, whose ``pages()`` the warehouse
   then stages inside the one transaction that commits the whole list with its cursor
   (``warehouse.models.watch.commit_snapshot``); objects the warehouse knew that the list
   lacks are gone. Memory is one page (``kubernetes.page_size`` objects), never the
   cluster: 75,000 pods held at once cost about 1.6 GiB. The list is a streaming list
   (``sendInitialEvents``, WatchList: the initial ADDED events are cut into pages of the same
   size) when the server supports it, else the paged list of ``listing.Lister``. A 410 on a
   continue token (or a streaming list cut off) restarts the list; the restarted list's first
   page says so (``SnapshotPage.first``) and the warehouse drops what it staged before;
2. a watch from X with bookmarks and a server timeout (``watch.Watcher``: resumes from the
   last resourceVersion after a disconnect or the server's timeout); its events are buffered
   into ``changes`` batches of at most ``max_batch_events`` events or ``max_batch_seconds``,
   and a BOOKMARK that moves the resourceVersion flushes the buffer (possibly empty: the
   cursor itself advances, so a restart resumes from there, not from an older point);
3. 410 Expired (HTTP or in-stream ERROR): back to 1.

``batches`` fetches the snapshot to a local spool first (``HistorySnapshot.prefetch``), then
yields it, and goes on to the watch only once its consumer has read ``pages()`` to the end (in
another thread if need be: ``annex watch`` commits in its main thread what per-resource threads
yield), so the writer lock is never held while the list downloads, and commits stay in order.

A batch carries, per object, its last state in the batch (later states of an object carry
everything earlier ones did: scheduling, start and finish times only ever get set), whether it
was deleted, and for pods, ResourceClaims and ResourceSlices the decoded rows (``DECODED``:
the snapshot collector's rows plus ``deleted`` and ``observed_at``) from which the warehouse
derives GPU allocation intervals with the objects' own timestamps: device-plugin requests
from pods alone, DRA holdings from a pod, the claims reserved for it and the slices that
publish the claims' devices, whichever of them is committed last. Rows are Arrow batches;
nothing here touches DuckDB.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec
import pyarrow as pa
from kubernetes.client import ApiClient

from annex.errors import CollectionError
from annex.settings import KubernetesSettings
from collectors.fetched import FetchedCollection
from collectors.kubernetes import schema
from collectors.kubernetes.builder import read_page
from collectors.kubernetes.collect import RESOURCES, Resource, group_served, lists_batch
from collectors.kubernetes.decode import (
    DECODERS,
    DecodeContext,
    Rejection,
    ResourceDecoder,
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

WATCHED: tuple[str, ...] = (
    "pods",
    "nodes",
    "jobs",
    "events",
    "resource_slices",
    "resource_claims",
    "kueue_workloads",
    "kueue_cluster_queues",
    "kueue_local_queues",
    "kueue_resource_flavors",
)
"""The resources watch mode follows (tables of ``collect.RESOURCES``). Those of an optional
API group (DRA's resource.k8s.io/v1, Kueue's CRDs) only where the API server serves it
(``served``), as the snapshot collector lists them."""

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


def _watch_schema(base: pa.Schema) -> pa.Schema:
    return base.append(pa.field("deleted", pa.bool_())).append(
        pa.field("observed_at", schema.TIMESTAMP)
    )


WATCH_PODS = _watch_schema(schema.PODS).append(pa.field("resource_claims", pa.int32()))
"""Pods as the snapshot collector decodes them, plus whether the change was a deletion, when
annex received it (the fallback time when the object carries none) and how many
ResourceClaims the pod names (``spec.resourceClaims``: the pod may hold GPUs through DRA)."""

WATCH_CLAIMS = _watch_schema(schema.RESOURCE_CLAIMS)
"""ResourceClaims as the snapshot collector decodes them, plus ``deleted`` and ``observed_at``."""

WATCH_SLICES = _watch_schema(schema.RESOURCE_SLICES)
"""ResourceSlices as the snapshot collector decodes them, plus ``deleted`` and ``observed_at``."""

DECODED: dict[str, tuple[str, pa.Schema]] = {
    "pods": ("pods", WATCH_PODS),
    "resource_claims": ("claims", WATCH_CLAIMS),
    "resource_slices": ("slices", WATCH_SLICES),
}
"""Resources whose objects are decoded into rows (table -> batch attribute, schema): those the
warehouse derives GPU holdings from. The others are followed by identity only."""

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

SNAPSHOT_WAIT_SECONDS = 0.5
"""How often ``batches`` looks at ``stop`` while another thread commits its snapshot."""


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
    """``changes`` (``HistorySnapshot`` is the ``snapshot`` kind)."""
    resource_version: str
    """Where the next watch starts once this batch is committed."""
    objects: pa.RecordBatch
    pods: pa.RecordBatch | None
    rejected: pa.RecordBatch | None
    requests: pa.RecordBatch
    lists: pa.RecordBatch | None = None
    via: str = "watch"
    events: int = 0
    """Watch events (not BOOKMARKs) in the batch."""
    first_event_at: float | None = None
    """``time.monotonic()`` when the batch's first event arrived (for lag measurements)."""
    claims: pa.RecordBatch | None = None
    """ResourceClaims only: their decoded rows (``WATCH_CLAIMS``)."""
    slices: pa.RecordBatch | None = None
    """ResourceSlices only: their decoded rows (``WATCH_SLICES``)."""


@dataclass(frozen=True)
class SnapshotPage:
    """One page of a streamed snapshot: at most ``kubernetes.page_size`` objects."""

    objects: pa.RecordBatch
    pods: pa.RecordBatch | None
    rejected: pa.RecordBatch | None
    first: bool
    """The first page of a list attempt: anything staged before it belongs to an attempt that
    was abandoned (410 on a continue token, a streaming list cut off) and must be dropped."""
    claims: pa.RecordBatch | None = None
    slices: pa.RecordBatch | None = None


_SPOOLED = ("objects", "pods", "rejected", "claims", "slices")
"""The ``SnapshotPage`` attributes a spool keeps, in this order per page."""


class HistorySnapshot:
    """A consistent list of one resource, fetched only as ``pages()`` is read.

    The consumer stages each page and, after the last one, commits them all at once with
    ``resource_version`` (``warehouse.models.watch.commit_snapshot``). ``resource_version``,
    ``events``, ``requests``, ``lists`` and ``via`` are final only once ``pages()`` has
    ended (``complete``). ``pages()`` can be read once.
    """

    kind = "snapshot"
    first_event_at: float | None = None

    def __init__(
        self,
        resource: str,
        api_path: str,
        fetch: Callable[[HistorySnapshot], Iterator[SnapshotPage]],
    ) -> None:
        self.resource = resource
        self.api_path = api_path
        self.resource_version = ""
        self.via = "list"
        """``list`` (paged) or ``watchlist`` (streaming list)."""
        self.events = 0
        """Objects in the list (its last attempt)."""
        self.requests = _requests([])
        self.lists: pa.RecordBatch | None = None
        """For a paged list: its record for ``audit.kubernetes_lists``."""
        self.complete = False
        self.finished = threading.Event()
        """Set when ``pages()`` ends, read to the end or not."""
        self._fetch = fetch
        self._read = False
        self._spool: FetchedCollection | None = None
        self._layout: list[tuple[bool, tuple[str, ...]]] = []
        """Per spooled page: (first, the attributes it has, in ``_SPOOLED`` order)."""

    def prefetch(self) -> None:
        """Fetch the whole list now, into a local spool (``collectors.fetched``), so that
        ``pages()`` only reads it back: its consumer then commits it under the writer lock
        without waiting on the API server. Memory stays one page. A list restarted midway
        (its page marked ``first`` again) drops what was spooled of the abandoned attempt.
        Raises what the API server's refusal or failure raises."""
        spool = FetchedCollection(prefix="annex-watch-")
        layout: list[tuple[bool, tuple[str, ...]]] = []
        try:
            for page in self._fetch(self):
                if page.first and layout:
                    spool.close()
                    spool, layout = FetchedCollection(prefix="annex-watch-"), []
                kept = tuple(name for name in _SPOOLED if getattr(page, name) is not None)
                for name in kept:
                    spool.add(name, getattr(page, name))
                layout.append((page.first, kept))
            spool.finish()
        except BaseException:
            spool.close()
            raise
        self._spool, self._layout = spool, layout

    def pages(self) -> Generator[SnapshotPage, None, None]:
        """The list, page by page (from the spool once ``prefetch``ed, else streamed from the
        API server); raises what the API server's refusal or failure raises."""
        if self._read:
            raise CollectionError(
                f"the snapshot of {self.resource} was already read",
                hint="a snapshot streams from the API server once; list again for another",
            )
        self._read = True
        try:
            if self._spool is None:
                yield from self._fetch(self)
            else:
                yield from self._replay(self._spool)
            self.complete = True
        finally:
            if self._spool is not None:
                self._spool.close()
            self.finished.set()

    def _replay(self, spool: FetchedCollection) -> Iterator[SnapshotPage]:
        batches = (batch for _, batch in spool.replay())
        for first, kept in self._layout:
            parts: dict[str, pa.RecordBatch | None] = dict.fromkeys(_SPOOLED)
            for name in kept:
                parts[name] = next(batches)
            objects = parts.pop("objects")
            assert objects is not None  # every page spools its objects
            yield SnapshotPage(objects=objects, first=first, **parts)


class _Meta(msgspec.Struct, rename="camel", gc=False):
    uid: str = ""
    name: str = ""
    namespace: str | None = None
    resource_version: str = ""
    deletion_timestamp: str | None = None


class _Object(msgspec.Struct, gc=False):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


class _PodSpec(msgspec.Struct, rename="camel", gc=False):
    resource_claims: list[msgspec.Raw] | None = None


class _Pod(msgspec.Struct, gc=False):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _PodSpec = msgspec.field(default_factory=_PodSpec)


_OBJECT = msgspec.json.Decoder(_Object)
_POD = msgspec.json.Decoder(_Pod)
_BY_TABLE: dict[str, Resource] = {r.table: r for r in RESOURCES}


def resource(table: str) -> Resource:
    """The ``collect.RESOURCES`` entry of ``table`` (one of ``WATCHED``)."""
    try:
        if table not in WATCHED:
            raise KeyError(table)
        return _BY_TABLE[table]
    except KeyError:
        raise CollectionError(
            f"watch mode does not follow {table!r}", hint="use one of: " + ", ".join(WATCHED)
        ) from None


def served(
    api: ApiClient, settings: KubernetesSettings, tables: tuple[str, ...] = WATCHED
) -> tuple[str, ...]:
    """``tables`` less those of an optional API group the server does not serve (its discovery
    answers 404): a cluster without DRA or Kueue is watched for the rest, as before. One
    discovery request per group, as ``collect.collect_cluster`` makes."""
    answers: dict[str, bool] = {}
    kept = []
    for table in tables:
        path = resource(table).discovery_path
        if path is not None and path not in answers:
            answers[path] = group_served(api, path, settings)
        if path is None or answers[path]:
            kept.append(table)
    return tuple(kept)


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
        if event.problem is not None:
            self.rejected.append(_invalid_text(event))
            return
        uid = _OBJECT.decode(event.raw).metadata.uid
        if not uid:
            self.rejected.append(_no_uid(event.type, event.raw))
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
        self.context = context or DecodeContext.from_settings(settings)
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
    ) -> Iterator[HistoryBatch | HistorySnapshot]:
        """Batches from ``cursor`` (None: list first) until ``stop()``, ``deadline`` (on
        ``clock``) or ``until(resource_version)`` says the watch has caught up.

        A ``HistorySnapshot`` must be read to its end (``pages()``) before the next batch is
        asked for; the next one waits for that (another thread may be reading it). Raises
        ``ClusterAccessError`` / ``CollectionError`` when the API server refuses or keeps
        failing; what was yielded before stays valid (each batch stands alone).
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
                if rv is None:
                    snapshot = self.snapshot(deadline=deadline)
                    # Fetched here, before it is handed over: whoever commits it holds the
                    # writer lock only to stage and commit, never while the list downloads.
                    snapshot.prefetch()
                    yield snapshot
                    while not snapshot.finished.wait(SNAPSHOT_WAIT_SECONDS):
                        if stop is not None and stop():
                            return
                        if deadline is not None and self.clock() >= deadline:
                            return
                    if not snapshot.complete:
                        raise CollectionError(
                            f"the list of {self.resource.table} was not read to its end, so "
                            "there is no resourceVersion to watch from",
                            hint="read HistorySnapshot.pages() to the end before asking for the "
                            "next batch",
                        )
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

    def snapshot(self, *, deadline: float | None = None) -> HistorySnapshot:
        """A consistent list of the resource, streamed when read (see ``HistorySnapshot``)."""
        table, path = self.resource.table, self.resource.api_path

        def fetch(snapshot: HistorySnapshot) -> Iterator[SnapshotPage]:
            # A streaming list is bounded like a paged one (whose Lister has its own deadline).
            bound = self.clock() + self.settings.list_deadline_seconds
            return self._snapshot_pages(
                snapshot, bound if deadline is None else min(deadline, bound)
            )

        return HistorySnapshot(table, path, fetch)

    # -- snapshots -----------------------------------------------------------------------------

    def _snapshot_pages(
        self, snapshot: HistorySnapshot, deadline: float | None
    ) -> Iterator[SnapshotPage]:
        """The list's pages, by streaming list or paged list, restarted as the server needs."""
        broken = 0
        while True:
            try:
                if self.streaming:
                    yield from self._streamed_pages(snapshot, deadline)
                else:
                    yield from self._listed_pages(snapshot)
                return
            except WatchExpired as expired:
                # The streaming list broke off (410, or it ended before its end bookmark): no
                # resourceVersion to stand on; start the list again (its first page says so).
                broken += 1
                if broken > self.settings.max_list_restarts:
                    raise CollectionError(
                        f"listing {self.resource.table} for watch mode: the streaming list broke "
                        f"off {broken} times ({expired})",
                        hint="raise kubernetes.max_list_restarts or start the watch when the API "
                        "server is less loaded",
                    ) from None
                record = self.watcher.record if self.watcher is not None else None
                auto = self.options.streaming_list == "auto"
                if auto and record is not None and record.events and not record.initial_events_done:
                    # Initial events came but never their end bookmark: no WatchList here.
                    self.streaming = False
            except CollectionError:
                if not self.streaming or self.options.streaming_list != "auto":
                    raise
                # The server refused the streaming list (no WatchList support): page instead.
                self.streaming = False

    def _listed_pages(self, snapshot: HistorySnapshot) -> Iterator[SnapshotPage]:
        """A consistent paged list (``limit``/``continue``), a page at a time."""
        snapshot.via = "list"
        record = ListRecord(
            self.resource.table, self.resource.api_path, self.settings.page_size, utc_now()
        )
        lister = Lister(self.settings, sleep=self.sleep)
        decoder = self._decoder()
        for page in lister.pages(self.resource.method(self.api), record, read_page):
            if not record.consistent:
                raise CollectionError(
                    f"listing {self.resource.table} for watch mode: the snapshot expired (410) "
                    f"{record.restarts} times and only an inconsistent list was offered",
                    hint="raise kubernetes.max_list_restarts or start the watch when the API "
                    "server is less loaded",
                )
            raws = [bytes(item) for item in page.decoded.items]
            yield self._snapshot_page(
                raws,
                decoder,
                page.attempt,
                first=page.number == 1,
                body=page.decoded.body,
                cut=page.decoded.rejected,
            )
        snapshot.resource_version = record.resource_version or ""
        snapshot.events = record.items
        snapshot.lists = lists_batch([record])
        snapshot.requests = _requests(
            [
                (self.resource.table, self.resource.api_path, "list", record.started_at, latency)
                for latency in record.latencies
            ]
        )

    def _streamed_pages(
        self, snapshot: HistorySnapshot, deadline: float | None
    ) -> Iterator[SnapshotPage]:
        """A streaming list (``sendInitialEvents``): its ADDED events in pages of
        ``page_size``, up to the initial-events-end bookmark. The stream is then closed: the
        watch starts afresh from the bookmark's resourceVersion once the list is committed."""
        snapshot.via = "watchlist"
        watcher = self._watcher()
        decoder = self._decoder()
        pending: list[bytes] = []
        cut: list[Rejection] = []
        first = True
        objects = 0
        events = watcher.events(None, send_initial_events=True, deadline=deadline)
        try:
            for event in events:
                if event.initial_events_end:
                    if pending or first or cut:
                        yield self._snapshot_page(pending, decoder, 0, first=first, cut=cut)
                    snapshot.resource_version = event.resource_version
                    snapshot.events = objects
                    snapshot.requests = self._new_requests()
                    return
                if event.type == "BOOKMARK":
                    continue
                if event.problem is not None:
                    cut.append(_invalid_text(event))
                    continue
                pending.append(event.raw)
                objects += 1
                if len(pending) >= self.settings.page_size:
                    yield self._snapshot_page(pending, decoder, 0, first=first, cut=cut)
                    pending, first, cut = [], False, []
        finally:
            events.close()
        raise CollectionError(
            f"the streaming list of {self.resource.table} did not reach its end in the time "
            f"allowed (at most kubernetes.list_deadline_seconds = "
            f"{self.settings.list_deadline_seconds:g} s)",
            hint="rerun; on a slow API server give `annex watch --once` more time, run "
            "`annex watch` as a service, or raise kubernetes.list_deadline_seconds",
        )

    def _snapshot_page(
        self,
        raws: list[bytes],
        decoder: ResourceDecoder[Any] | None,
        attempt: int,
        *,
        first: bool,
        body: bytes | None = None,
        cut: list[Rejection] | None = None,
    ) -> SnapshotPage:
        """One page's rows; ``body`` is the page as the server sent it, when there is one;
        ``cut``: objects already cut out of it (``text``), to keep as rejected."""
        now = utc_now()
        count = len(raws)
        objects = _objects_batch(raws, [False] * count, [now] * count)
        rejections: list[Rejection] = []
        decoded: dict[str, pa.RecordBatch] = {}
        if decoder is not None:
            if body is None:
                body = list_body(WatchEvent("ADDED", "", raw) for raw in raws)
            batch, rejections = decoder.build(decoder.decode(body), attempt)
            listed = {uid: (False, now) for uid in objects.column(0).to_pylist()}
            attribute, rows = self._rows(batch, listed, raws)
            decoded[attribute] = rows
        elif objects.num_rows < count:  # decoded objects without a uid are the decoder's
            rejections = [
                _no_uid(None, raw) for raw in raws if not _OBJECT.decode(raw).metadata.uid
            ]
        rejections = [*(cut or ()), *rejections]
        return SnapshotPage(
            objects=objects,
            pods=decoded.get("pods"),
            rejected=rejected_batch(rejections) if rejections else None,
            first=first,
            claims=decoded.get("claims"),
            slices=decoded.get("slices"),
        )

    def _decoder(self) -> ResourceDecoder[Any] | None:
        """The snapshot collector's decoder of this resource, where its rows are kept
        (``DECODED``); None for resources followed by identity only."""
        if self.resource.table not in DECODED:
            return None
        return DECODERS[self.resource.table](self.context)

    def _rows(
        self,
        batch: pa.RecordBatch,
        states: dict[str, tuple[bool, datetime]],
        raws: list[bytes],
    ) -> tuple[str, pa.RecordBatch]:
        """The decoded ``batch`` with each object's ``deleted`` and ``observed_at`` (``states``,
        by uid), for pods also the claims they name: (batch attribute, rows)."""
        attribute, arrow_schema = DECODED[self.resource.table]
        uids = batch.column(0).to_pylist()
        columns = [
            *batch.columns,
            pa.array([states[uid][0] for uid in uids], pa.bool_()),
            pa.array([states[uid][1] for uid in uids], schema.TIMESTAMP),
        ]
        if self.resource.table == "pods":
            named = {}
            for raw in raws:
                pod = _POD.decode(raw)
                named[pod.metadata.uid] = len(pod.spec.resource_claims or ())
            columns.append(pa.array([named.get(uid, 0) for uid in uids], pa.int32()))
        return attribute, pa.RecordBatch.from_arrays(columns, schema=arrow_schema)

    # -- watching ------------------------------------------------------------------------------

    def _watcher(self) -> Watcher:
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
        return watcher

    def _watch(
        self,
        rv: str,
        *,
        stop: Callable[[], bool] | None,
        deadline: float | None,
        until: Callable[[str], bool] | None,
    ) -> Iterator[HistoryBatch]:
        watcher = self._watcher()
        self._yielded = rv
        buffer = _Buffer()
        caught_up = False
        last_yield = self.clock()

        def done() -> bool:
            return caught_up or (stop is not None and stop())

        for event in watcher.events(rv, stop=done, deadline=deadline):
            now = self.clock()
            if event.type == "BOOKMARK":
                # A bookmark moves the cursor even when nothing changed: commit it (at most
                # every max_batch_seconds when there is nothing else to commit).
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
        last = watcher.record.resource_version
        if last and (buffer.events or last != self._yielded):
            yield self._changes(buffer, last)

    # -- batches -------------------------------------------------------------------------------

    def _changes(self, buffer: _Buffer, resource_version: str) -> HistoryBatch:
        self._yielded = resource_version
        entries = list(buffer.by_uid.values())
        events = [event for event, _ in entries]
        observed = [at for _, at in entries]
        deleted = [event.type == "DELETED" for event in events]
        rejections = list(buffer.rejected)
        raws = [event.raw for event in events]
        objects = _objects_batch(raws, deleted, observed)
        decoded: dict[str, pa.RecordBatch] = {}
        decoder = self._decoder()
        if decoder is not None:
            # As the snapshot collector decodes them (one decoder per batch: a batch holds
            # each uid once).
            batch, decode_rejections = decoder.build(decoder.decode(list_body(events)), 0)
            rejections.extend(decode_rejections)
            states = {
                _OBJECT.decode(raw).metadata.uid: (gone, at)
                for raw, gone, at in zip(raws, deleted, observed, strict=True)
            }
            attribute, rows = self._rows(batch, states, raws)
            decoded[attribute] = rows
        return HistoryBatch(
            resource=self.resource.table,
            api_path=self.resource.api_path,
            kind="changes",
            resource_version=resource_version,
            objects=objects,
            pods=decoded.get("pods"),
            rejected=rejected_batch(rejections) if rejections else None,
            requests=self._new_requests(),
            events=buffer.events,
            first_event_at=buffer.first_at,
            claims=decoded.get("claims"),
            slices=decoded.get("slices"),
        )

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


def _no_uid(event_type: str | None, raw: bytes) -> Rejection:
    """An object without ``metadata.uid`` (from a watch event, or listed when ``event_type`` is
    None): nothing can follow it, but it is kept as rejected."""
    if event_type is None:
        locator, message = (
            "listed object without metadata.uid",
            "a listed object carries no metadata.uid: watch mode cannot follow it",
        )
    else:
        locator = "watch event without metadata.uid"
        message = f"a {event_type} watch event carries an object without metadata.uid"
    return Rejection(locator, "missing_identity", message, raw[:65536])


def _invalid_text(event: WatchEvent) -> Rejection:
    """An event whose object is not valid Unicode text: rejected, the watch goes on."""
    return Rejection(
        f"{event.type} watch event at resourceVersion {event.resource_version or 'unknown'}",
        "invalid_text",
        f"a {event.type} watch event was rejected: {event.problem}",
        event.raw[:65536],
    )


def _objects_batch(
    raws: list[bytes], deleted: list[bool], observed: list[datetime]
) -> pa.RecordBatch:
    metas = [_OBJECT.decode(raw).metadata for raw in raws]
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

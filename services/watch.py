"""The watch service: the exact allocation history, kept by list-then-watch (issue 9).

The one place that wires ``collectors.kubernetes.history`` to the warehouse for ``annex watch``
(its command is ``annex.cli.watch``) and the Dagster watch assets.

Hourly snapshots miss pods that start and finish between them. ``WatchService`` follows pods,
nodes, jobs and events of one cluster, and DRA's ResourceSlices and ResourceClaims and Kueue's
objects where the API server serves them (``collectors.kubernetes.history``), and commits each
batch of changes with its resume point (``warehouse.models.watch.commit_batch``), taking the
warehouse's writer lock only for each commit, so collections, Dagster runs and publishes go on
beside it. A list (the first, and each relist after a 410) is one such commit: fetched to a
local spool page by page first (memory stays one page, whatever the cluster's size), then
staged and committed under the lock, which is never held while waiting on the API server.

* ``catch_up()`` (``annex watch --once``): for each resource, from its committed cursor (or a
  list), until the watch reaches the resourceVersion the API server had when it started; then
  publishes the analysts' copy. Idempotent: a second run commits only what changed since.
* ``run(stop)`` (``annex watch``, the Deployment): one thread per resource reads its watch; the
  main thread commits their batches in arrival order and publishes every
  ``publish_every_seconds``. It ends when ``stop`` is set, or with the error of a watch that
  cannot go on (the API server refusing access, say): the Deployment restarts the pod, which
  resumes from the cursors.

Heavy imports (the Kubernetes client, DuckDB) happen inside the functions.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from annex.errors import CollectionError
from annex.settings import Settings

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from collectors.kubernetes.history import HistoryBatch, HistorySnapshot, WatchOptions
    from warehouse import Warehouse

log = logging.getLogger(__name__)

MAX_BATCHES_PER_LOCK = 64
"""The service commits at most this many waiting batches per hold of the writer lock."""

CATCH_UP_SECONDS = 600.0
"""``--once`` gives up (with an error) when a watch has not caught up in this long."""


@dataclass
class ResourceProgress:
    """What the service did for one resource (for the CLI's summary and Dagster metadata)."""

    resource: str
    resource_version: str | None = None
    commits: int = 0
    events: int = 0
    snapshots: int = 0
    gpu_pods: int = 0
    max_lag_seconds: float = 0.0
    """Longest time from a batch's first event arriving to its commit."""


@dataclass
class WatchSummary:
    cluster: str
    session_id: str
    resources: dict[str, ResourceProgress] = field(default_factory=dict)

    def describe(self) -> str:
        lines = [f"watch of cluster {self.cluster!r} (session {self.session_id}):"]
        for p in self.resources.values():
            lines.append(
                f"  {p.resource}: at resourceVersion {p.resource_version}, {p.events} events in "
                f"{p.commits} commits ({p.snapshots} lists), max lag {p.max_lag_seconds:.2f} s"
            )
        return "\n".join(lines)


class WatchService:
    """Watches one cluster into one warehouse."""

    def __init__(
        self,
        api: ApiClient,
        warehouse: Warehouse,
        *,
        cluster: str,
        settings: Settings,
        options: WatchOptions | None = None,
        resources: Sequence[str] | None = None,
        publish_every_seconds: float = 60.0,
        on_commit: Callable[[HistoryBatch | HistorySnapshot], None] | None = None,
        topology_profile: str | None = None,
    ) -> None:
        from collectors.kubernetes.decode import DecodeContext
        from collectors.kubernetes.history import WatchOptions, resource, served

        self.api = api
        self.warehouse = warehouse
        self.cluster = cluster
        self.settings = settings
        self.options = options or WatchOptions()
        # By default every resource watch mode follows that the server serves (a cluster
        # without DRA or Kueue is watched for the rest); named ones are watched as named.
        self.resources = tuple(resources or served(api, settings.kubernetes))
        for name in self.resources:
            resource(name)  # an unknown name fails here, before anything is watched
        self.publish_every_seconds = publish_every_seconds
        self.on_commit = on_commit
        profile = topology_profile or settings.kubernetes.topology_profile
        self.context = DecodeContext.from_settings(
            settings.kubernetes, settings.topology_levels(profile)
        )
        self.session_id = f"watch-{uuid.uuid4()}"
        self.summary = WatchSummary(cluster, self.session_id)
        self._committed: dict[str, str | None] = {}
        self._published_at = time.monotonic()

    # -- the two modes -------------------------------------------------------------------------

    def catch_up(self, *, timeout_seconds: float = CATCH_UP_SECONDS) -> WatchSummary:
        """Bring every resource up to the API server's current resourceVersion, then publish."""
        cursors = self._cursors()
        for name in self.resources:
            target = self._current_resource_version(name)
            history = self._history(name)
            deadline = time.monotonic() + timeout_seconds
            reached = False

            def until(rv: str, target: int | None = target) -> bool:
                return target is None or _rv_number(rv) >= target

            for batch in history.batches(cursors.get(name), deadline=deadline, until=until):
                self._commit(batch)
                reached = until(batch.resource_version)
            if not reached and not until(cursors.get(name) or "0"):
                raise CollectionError(
                    f"watching {name} of cluster {self.cluster} did not reach resourceVersion "
                    f"{target} within {timeout_seconds:.0f} s",
                    hint="the API server may not send watch bookmarks; rerun, or run "
                    "`annex watch` without --once as a service",
                )
        self.publish()
        return self.summary

    def run(self, stop: threading.Event) -> WatchSummary:
        """Watch every resource until ``stop`` is set; commit in this thread."""
        cursors = self._cursors()
        batches: queue.Queue[Any] = queue.Queue(maxsize=16)
        done = object()

        def hand_over(item: object) -> None:
            while True:  # never block forever on a full queue once the service stops
                try:
                    batches.put(item, timeout=0.5)
                    return
                except queue.Full:
                    if stop.is_set():
                        return

        def follow(name: str) -> None:
            try:
                history = self._history(name)
                for batch in history.batches(cursors.get(name), stop=stop.is_set):
                    hand_over(batch)
            except BaseException as exc:  # handed to the committing thread
                hand_over(exc)
            finally:
                hand_over(done)

        threads = [
            threading.Thread(target=follow, args=(name,), name=f"annex-watch-{name}", daemon=True)
            for name in self.resources
        ]
        for thread in threads:
            thread.start()
        running = len(threads)
        try:
            # A stop (SIGTERM) ends the loop between commits: what waits in the queue is not
            # lost, the next start resumes from the last committed resourceVersion.
            while running and not stop.is_set():
                try:
                    items = [batches.get(timeout=0.5)]
                except queue.Empty:
                    self._maybe_publish()
                    continue
                while len(items) < MAX_BATCHES_PER_LOCK:  # what else is waiting
                    try:
                        items.append(batches.get_nowait())
                    except queue.Empty:
                        break
                ready = [
                    item for item in items if not (item is done or isinstance(item, BaseException))
                ]
                if ready:
                    self._commit(*ready)
                for item in items:
                    if item is done:
                        running -= 1
                    elif isinstance(item, BaseException):
                        raise item
                self._maybe_publish()
        finally:
            stop.set()
            for thread in threads:
                # A watch notices ``stop`` at its next event or bookmark; daemon threads that
                # are still waiting on the server end with the process.
                thread.join(timeout=5)
        self.publish()
        return self.summary

    # -- pieces --------------------------------------------------------------------------------

    def _history(self, name: str) -> Any:
        from collectors.kubernetes.history import ResourceHistory

        return ResourceHistory(
            self.api, name, self.settings.kubernetes, options=self.options, context=self.context
        )

    def _cursors(self) -> dict[str, str]:
        from warehouse.models.watch import load_cursors

        with self.warehouse.writer(on_wait=log.warning) as con:
            cursors = load_cursors(con, self.cluster)
        for name in self.resources:
            cursor = cursors.get(name)
            self._committed[name] = cursor.resource_version if cursor else None
        return {name: c.resource_version for name, c in cursors.items()}

    def _commit(self, *batches: HistoryBatch | HistorySnapshot) -> None:
        """Commit each batch in its own transaction, under one hold of the writer lock (opening
        the warehouse costs more than a small commit; the lock is still held only for these
        commits, milliseconds each).

        A snapshot (a list) arrives already fetched (``HistorySnapshot.prefetch``, in the
        resource's own thread): the lock is held to stage and commit it, not while it
        downloads."""
        from warehouse.models.watch import commit_batch, commit_snapshot

        with self.warehouse.writer(on_wait=log.warning) as con:
            for batch in batches:
                commit = commit_snapshot if batch.kind == "snapshot" else commit_batch
                commit(
                    con,
                    batch,  # type: ignore[arg-type]
                    cluster=self.cluster,
                    session_id=self.session_id,
                    expected=self._committed.get(batch.resource),
                )
                self._committed[batch.resource] = batch.resource_version
                self._progress(batch)

    def _progress(self, batch: HistoryBatch | HistorySnapshot) -> None:
        progress = self.summary.resources.setdefault(
            batch.resource, ResourceProgress(batch.resource)
        )
        progress.resource_version = batch.resource_version
        progress.commits += 1
        if batch.kind == "snapshot":
            progress.snapshots += 1
        else:
            progress.events += batch.events
        if batch.first_event_at is not None:
            lag = time.monotonic() - batch.first_event_at
            progress.max_lag_seconds = max(progress.max_lag_seconds, lag)
        if self.on_commit is not None:
            self.on_commit(batch)

    def _current_resource_version(self, name: str) -> int | None:
        """The server's resourceVersion now, from a one-item list (the cheapest consistent
        read); None when it is not a number (then --once stops at the first quiet moment)."""
        from collectors.http_body import BodyError, read_body
        from collectors.kubernetes.builder import read_page
        from collectors.kubernetes.history import resource

        response = resource(name).method(self.api)(
            limit=1,
            _request_timeout=(
                self.settings.kubernetes.connect_timeout_seconds,
                self.settings.kubernetes.request_timeout_seconds,
            ),
        )
        kube = self.settings.kubernetes
        try:
            body = read_body(
                response,
                max_bytes=kube.max_response_bytes,
                deadline=time.monotonic() + kube.response_deadline_seconds,
            )
            page = read_page(body)
        except BodyError as exc:
            response.close()
            raise CollectionError(
                f"reading the resourceVersion of {name} in cluster {self.cluster}: {exc.message}",
                hint="the API server (or a proxy) answers too slowly or too much; see "
                "kubernetes.response_deadline_seconds and kubernetes.max_response_bytes",
            ) from None
        finally:
            response.release_conn()
        rv = page.metadata.resource_version
        return _rv_number(rv) if rv and rv.isdigit() else None

    def _maybe_publish(self) -> None:
        if time.monotonic() - self._published_at >= self.publish_every_seconds:
            self.publish()

    def publish(self) -> None:
        """Refresh the analysts' read-only copy with what is committed."""
        if self.warehouse.path.exists():
            self.warehouse.publish()
        self._published_at = time.monotonic()


def _rv_number(rv: str) -> int:
    """resourceVersions are opaque, but every API server (etcd's revision) sends integers; the
    only use here is "has the watch reached the server's position yet"."""
    try:
        return int(rv)
    except ValueError:
        return -1

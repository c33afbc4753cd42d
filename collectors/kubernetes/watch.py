"""Raw watch streams: the incremental sync after a list (reference §1.5, §1.6, "Incremental sync").

``Watcher.events`` sends ``GET <api_path>?watch=1&resourceVersion=X&allowWatchBookmarks=true
&timeoutSeconds=N`` through the client's own transport (auth, TLS, gzip), exactly as
``collect.Resource.method`` does for lists, and reads the chunked NDJSON line by line. It never
builds model objects: each event keeps its object as raw JSON bytes, so that a batch of them can
go through the existing page decoders (``list_body`` wraps them as a list page).

Why not ``kubernetes.watch.Watch``: it does not advance the resourceVersion on BOOKMARKs, retries
a 410 once by itself (hiding the need to relist), and decodes every object into models.

Semantics:

* the last resourceVersion seen (BOOKMARKs included) is kept in ``WatchRecord``; when the server
  ends the stream (``timeoutSeconds``) or the connection drops, a new request resumes from it, so
  no event is lost or repeated;
* 410 Expired, as an HTTP status or as an in-stream ``ERROR`` event, raises ``WatchExpired``:
  the history since that resourceVersion is compacted away and the caller must relist;
* streaming-list mode (``sendInitialEvents=true``, WatchList) yields the current state as ADDED
  events, then the BOOKMARK annotated ``k8s.io/initial-events-end: "true"``
  (``WatchEvent.initial_events_end``), then changes;
* every request's latency to first byte (the response headers) is recorded for the API SLO
  report;
* a watch is unbounded by nature: ``max_events``, ``stop`` and ``deadline`` end it.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import msgspec
import urllib3
from kubernetes.client import ApiClient, ApiException

from annex.errors import ClusterAccessError, CollectionError
from annex.settings import KubernetesSettings
from collectors.http_body import BodyError, BodyTooLarge, inflated_pieces
from collectors.kubernetes import objects
from collectors.kubernetes.listing import (
    RBAC_HINT,
    RETRYABLE_STATUSES,
    backoff_delay,
    retry_after_seconds,
    status_message,
    utc_now,
)
from collectors.kubernetes.text import needs_split, sanitised, text_problem
from collectors.kubernetes.transport import raw_get

EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
EVENT_TYPES: frozenset[str] = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
DEFAULT_TIMEOUT_SECONDS = 300
"""Server-side ``timeoutSeconds`` per watch request (reference: 300 s, then resume)."""
READ_SLACK_SECONDS = 30.0
"""The socket read timeout exceeds ``timeoutSeconds`` by this much: the server ends first."""


class WatchExpired(CollectionError):
    """410 Expired: the resourceVersion the watch resumes from is compacted away; relist."""

    def __init__(self, message: str, *, resource_version: str | None = None) -> None:
        super().__init__(
            message,
            hint="the watch fell behind the API server's compaction; list again, then watch "
            "from the new list's resourceVersion",
        )
        self.resource_version = resource_version


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change. ``raw`` is the object's JSON exactly as sent (for BOOKMARKs, the stub)."""

    type: EventType
    resource_version: str
    raw: bytes
    initial_events_end: bool = False
    """True on the BOOKMARK that ends a streaming list's synthetic ADDED events."""
    problem: str | None = None
    """Why the object cannot be used (its text is not valid Unicode: ``text``); ``raw`` is then
    the whole event line as sent, kept for ``audit.rejected``."""


@dataclass
class WatchRecord:
    """What annex keeps about one watch: where it is, and how the API server served it."""

    resource: str
    api_path: str
    started_at: datetime = field(default_factory=utc_now)
    resource_version: str | None = None
    """The last resourceVersion seen (events and BOOKMARKs): where a resumed watch starts."""
    requests: int = 0
    events: int = 0
    bookmarks: int = 0
    resumes: int = 0
    """New requests after the server ended a stream or the connection dropped."""
    retries: int = 0
    """Requests that failed (429 / 5xx / connection errors) and were tried again."""
    initial_events_done: bool = False
    first_byte_latencies: list[float] = field(default_factory=list)
    """Seconds from sending each request to its response headers."""
    request_started_at: list[datetime] = field(default_factory=list)
    """When each request was sent (naive UTC), aligned with ``first_byte_latencies``."""


class _Meta(msgspec.Struct, rename="camel", gc=False):
    resource_version: str = ""
    annotations: dict[str, str] | None = None


class _Head(msgspec.Struct, gc=False):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


class _Line(msgspec.Struct, gc=False):
    type: str = ""
    object: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)


_LINE = msgspec.json.Decoder(_Line)
_HEAD = msgspec.json.Decoder(_Head)
_STATUS = msgspec.json.Decoder(objects.Status)


class _Retry(Exception):
    """The request failed in a way worth another try (after backoff)."""

    def __init__(self, problem: str, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.retry_after = retry_after


def parse_event(line: bytes) -> WatchEvent:
    """One NDJSON line as a ``WatchEvent``; raises ``WatchExpired`` or ``_Retry`` on ERROR.

    Decodes only ``type`` and the object's ``metadata`` (RV, annotations); the object itself
    stays raw bytes. An event whose text is not valid Unicode still moves the watch on (its
    type and resourceVersion are read from a sanitised copy) but carries ``problem``.
    """
    problem = text_problem(line) if needs_split(line) else None
    decoded = _LINE.decode(sanitised(line) if problem else line)
    raw = bytes(decoded.object)
    if decoded.type == "ERROR":
        status = _STATUS.decode(raw)
        message = status.message or status.reason or "no message"
        if status.code == 410:
            raise WatchExpired(f"watch expired (410 in stream): {message}")
        if status.code in RETRYABLE_STATUSES:
            raise _Retry(f"in-stream error {status.code}: {message}")
        raise CollectionError(f"watch failed (in-stream error {status.code}): {message}")
    if decoded.type not in EVENT_TYPES:
        raise msgspec.DecodeError(f"unknown watch event type {decoded.type!r}")
    meta = _HEAD.decode(raw).metadata
    end = decoded.type == "BOOKMARK" and (meta.annotations or {}).get(INITIAL_EVENTS_END) == (
        "true"
    )
    if problem is not None:
        return WatchEvent(decoded.type, meta.resource_version, line, end, problem)  # type: ignore[arg-type]
    return WatchEvent(decoded.type, meta.resource_version, raw, end)  # type: ignore[arg-type]


def iter_lines(chunks: Iterable[bytes], max_line_bytes: int | None = None) -> Iterator[bytes]:
    """Split a chunked body into lines; chunk boundaries need not fall on line ends. A line
    (one event) longer than ``max_line_bytes`` raises ``BodyTooLarge``."""
    pending = b""
    for chunk in chunks:
        if not chunk:
            continue
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if max_line_bytes is not None and len(line) > max_line_bytes:
                raise BodyTooLarge(f"a watch event of {len(line)} bytes")
            if line.strip():
                yield line
        if max_line_bytes is not None and len(pending) > max_line_bytes:
            raise BodyTooLarge(f"a watch event of more than {len(pending)} bytes")
    if pending.strip():
        yield pending


def list_body(events: Iterable[WatchEvent], resource_version: str = "") -> bytes:
    """Wrap event objects as a list page (``{"metadata":…,"items":[…]}``) for the page decoders."""
    items = b",".join(event.raw for event in events if event.type != "BOOKMARK")
    meta = msgspec.json.encode({"resourceVersion": resource_version})
    return b'{"metadata":' + meta + b',"items":[' + items + b"]}"


class Watcher:
    """Watches one resource path through an ``ApiClient`` with the settings' retry policy.

    ``sleep``, ``jitter`` and ``clock`` are injectable so that tests can observe the waits.
    """

    def __init__(
        self,
        api: ApiClient,
        api_path: str,
        settings: KubernetesSettings,
        *,
        resource: str | None = None,
        timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.api_path = api_path
        self.settings = settings
        self.timeout_seconds = timeout_seconds
        self.sleep = sleep
        self.jitter = jitter
        self.clock = clock
        self.record = WatchRecord(resource or api_path.rsplit("/", 1)[-1], api_path)

    def events(
        self,
        resource_version: str | None,
        *,
        send_initial_events: bool = False,
        max_events: int | None = None,
        stop: Callable[[], bool] | None = None,
        deadline: float | None = None,
    ) -> Iterator[WatchEvent]:
        """Yield events after ``resource_version`` until a bound is reached.

        ``send_initial_events`` starts a streaming list instead (``resource_version`` None or
        "" means a consistent read). Bounds: ``max_events`` yielded (BOOKMARKs count),
        ``stop()`` true (checked after each event and between requests), ``deadline`` on
        ``clock`` passed (requests ask the server to end by then). Raises ``WatchExpired``
        on 410, ``ClusterAccessError`` on 401/403 or an unreachable server,
        ``CollectionError`` otherwise.
        """
        record = self.record
        record.resource_version = resource_version or None
        streaming = send_initial_events
        yielded = 0
        failures = 0
        while True:
            if stop is not None and stop():
                return
            remaining = None if deadline is None else deadline - self.clock()
            if remaining is not None and remaining <= 0:
                return
            timeout = self.timeout_seconds
            if remaining is not None:
                timeout = max(1, min(timeout, math.ceil(remaining)))
            received = False
            try:
                for event in self._stream(self._query(streaming, timeout), timeout):
                    failures, received = 0, True
                    if event.resource_version:
                        record.resource_version = event.resource_version
                    if event.type == "BOOKMARK":
                        record.bookmarks += 1
                    else:
                        record.events += 1
                    if event.initial_events_end:
                        streaming = False
                        record.initial_events_done = True
                    yield event
                    yielded += 1
                    if max_events is not None and yielded >= max_events:
                        return
                    if stop is not None and stop():
                        return
                    if deadline is not None and self.clock() >= deadline:
                        return
            except _Retry as retry:
                if failures >= self.settings.max_retries:
                    raise self._gave_up(retry.problem, failures) from None
                self.sleep(self._delay(failures, retry.retry_after))
                failures += 1
                record.retries += 1
            else:
                record.resumes += 1
            if streaming and received:
                # The initial ADDEDs were cut short: what was sent is no snapshot. Start over.
                raise WatchExpired(
                    f"watching {record.resource}: the streaming list ended before its "
                    "initial-events-end bookmark",
                    resource_version=record.resource_version,
                )

    def _query(self, streaming: bool, timeout: int) -> list[tuple[str, Any]]:
        query: list[tuple[str, Any]] = [
            ("watch", "1"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", timeout),
        ]
        if streaming:
            query.append(("sendInitialEvents", "true"))
            query.append(("resourceVersionMatch", "NotOlderThan"))
        query.append(("resourceVersion", self.record.resource_version or ""))
        return query

    def _stream(self, query: list[tuple[str, Any]], timeout: int) -> Iterator[WatchEvent]:
        """One watch request: its events until the server ends it. Raises ``_Retry``."""
        record = self.record
        record.requests += 1
        started = time.perf_counter()
        sent_at = utc_now()
        try:
            response = self._open(query, (self.settings.connect_timeout_seconds, timeout))
        except ApiException as exc:
            record.first_byte_latencies.append(time.perf_counter() - started)
            record.request_started_at.append(sent_at)
            raise self._refused(exc) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _Retry(f"{type(exc).__name__}: {exc}") from None
        record.first_byte_latencies.append(time.perf_counter() - started)
        record.request_started_at.append(sent_at)
        finished = False
        # The server ends the stream after ``timeout``; one still open well after that is
        # trickled or stuck: give it up and resume from the last resourceVersion.
        deadline = time.monotonic() + timeout + READ_SLACK_SECONDS
        cap = self.settings.max_response_bytes
        try:
            try:
                chunks = inflated_pieces(response, deadline=deadline)
                for line in iter_lines(chunks, max_line_bytes=cap):
                    yield parse_event(line)
            except BodyTooLarge as exc:
                raise CollectionError(
                    f"watching {record.resource}: {exc.message}, more than "
                    f"kubernetes.max_response_bytes = {cap} bytes",
                    hint="no Kubernetes object is this large (etcd keeps at most ~1.5 MiB per "
                    "object): the server or a proxy sends garbage or a compression bomb; raise "
                    "kubernetes.max_response_bytes only if you trust it",
                ) from None
            except BodyError as exc:
                raise _Retry(exc.message) from None
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                raise _Retry(f"{type(exc).__name__}: {exc}") from None
            except msgspec.DecodeError as exc:  # a line cut off by a dropped connection
                raise _Retry(f"undecodable watch event: {exc}") from None
            finished = True
        finally:
            if not finished:
                response.close()  # a stream left mid-way cannot go back to the pool
            response.release_conn()

    def _open(self, query: list[tuple[str, Any]], timeout: tuple[float, float]) -> Any:
        """Send the GET through the client's transport, as lists are sent."""
        request_timeout = (timeout[0], timeout[1] + READ_SLACK_SECONDS)
        return raw_get(self.api, self.api_path, query, timeout=request_timeout)

    def _refused(self, exc: ApiException) -> Exception:
        """The exception for an HTTP error answer to a watch request."""
        status = exc.status or 0
        message = status_message(exc)
        name = self.record.resource
        if status == 410:
            return WatchExpired(
                f"watching {name} from resourceVersion {self.record.resource_version}: "
                f"410 Expired: {message}",
                resource_version=self.record.resource_version,
            )
        if status in (401, 403):
            return ClusterAccessError(
                f"the API server refused to watch {name} ({status} {exc.reason}): {message}",
                hint=RBAC_HINT,
            )
        if status in RETRYABLE_STATUSES:
            retry_after = retry_after_seconds(exc) if status in (429, 503) else None
            return _Retry(f"{status} {exc.reason}", retry_after)
        return CollectionError(
            f"watching {name} failed: {status} {exc.reason}: {message}",
            hint="check that the API server serves " + self.api_path,
        )

    def _gave_up(self, problem: str, failures: int) -> Exception:
        return ClusterAccessError(
            f"watching {self.record.resource} still failed after {failures + 1} attempts: "
            f"{problem}",
            hint="the API server is unreachable, overloaded or failing; retry later",
        )

    def _delay(self, failures: int, retry_after: float | None) -> float:
        return backoff_delay(self.settings, failures, retry_after, self.jitter)

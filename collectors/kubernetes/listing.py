"""Paged, raw LIST requests with the API server's error semantics (reference §1.2–1.4, §1.8).

One cluster-wide list per resource, ``limit``/``continue`` pages fetched with
``_preload_content=False`` (no model objects), each page decoded by the caller's ``decode``
inside the retry loop so that a truncated body is fetched again. What each status means:

* 410 Expired: the continue token (the snapshot) is gone. Restart the list from the beginning,
  up to ``max_list_restarts`` times; then accept the server's inconsistent continue token from
  the Status body and mark the snapshot ``consistent = False``.
* 429: APF / max-inflight rejection with a plain-text body; wait ``Retry-After`` (at least) and
  retry, never parsing the body.
* 500/502/503/504 and connection errors: retry with capped, jittered exponential backoff, up to
  ``max_retries`` times per request.
* 401/403: ``ClusterAccessError`` naming the RBAC role annex needs.
* a page that cannot be read or decoded after the retries: ``CollectionError`` naming the
  resource and page.

What the collector refuses outright (``CollectionError``, no retry: trying again would not
help, or would only prolong what must end):

* a list that has not finished within ``kubernetes.list_deadline_seconds`` (pages, retries and
  backoff waits included), or a response body that has not arrived whole within
  ``kubernetes.response_deadline_seconds`` (a trickled body: each read succeeds, so no read
  timeout fires);
* a body that inflates past ``kubernetes.max_response_bytes`` (gzip is inflated as a stream
  with that cap: a small compressed body cannot exhaust memory);
* a ``continue`` token the server already returned in this list (the list would loop);
* a 200 answer that is not a Kubernetes API response (an HTML proxy or login page).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import msgspec
import urllib3
from kubernetes.client.exceptions import ApiException

from annex.errors import ClusterAccessError, CollectionError
from annex.settings import KubernetesSettings
from collectors.http_body import BodyError, BodyTooLarge, BodyTooSlow, header, read_body
from collectors.kubernetes import objects

RBAC_HINT = (
    "annex needs get/list/watch on nodes, pods, events, jobs, priorityclasses, resourceslices "
    "and resourceclaims (and Kueue's objects where installed): apply "
    "deploy/rbac.yaml (ClusterRole annex-reader) and bind it to the identity in your kubeconfig"
)
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
BACKOFF_BASE_SECONDS = 0.5

T = TypeVar("T")
"""A decoded page: anything with ``metadata`` (a ``ListMeta``) and ``items``."""

ListCall = Callable[..., Any]
"""A generated client method such as ``CoreV1Api.list_node``."""


@dataclass(frozen=True)
class ListStats:
    """Progress of one list, reported after every page (for progress bars and logs)."""

    resource: str
    pages: int
    items: int
    remaining_item_count: int | None
    """The server's estimate of the items still to come (absent on the last page)."""
    restarts: int = 0
    retries: int = 0


@dataclass
class ListRecord:
    """What annex records about one list in ``audit.kubernetes_lists``."""

    resource: str
    api_path: str
    page_size: int
    started_at: datetime
    resource_version: str | None = None
    consistent: bool = True
    pages: int = 0
    items: int = 0
    rejected: int = 0
    restarts: int = 0
    retries: int = 0
    response_bytes: int = 0
    finished_at: datetime | None = None
    latencies: list[float] = field(default_factory=list)
    """Seconds per request (including reading the body), failed ones too."""
    server_date: str | None = None
    """The HTTP ``Date`` header of the list's first response (``moment``)."""
    server_date_local: datetime | None = None
    """The local clock when that response came."""


@dataclass(frozen=True)
class Page(Generic[T]):
    number: int
    """1-based, within the current attempt."""
    attempt: int
    """0 for the first pass over the list, +1 for each restart after a 410."""
    decoded: T


class _Expired(Exception):
    def __init__(self, token: str | None) -> None:
        super().__init__("continue token expired")
        self.token = token


def utc_now() -> datetime:
    """Naive UTC, the warehouse's time convention."""
    return datetime.now(UTC).replace(tzinfo=None)


class Lister:
    """Runs paged lists against one API server with the retry policy from the settings.

    ``sleep``, ``jitter`` and ``clock`` are injectable so that tests can observe the waits.
    """

    def __init__(
        self,
        settings: KubernetesSettings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.sleep = sleep
        self.jitter = jitter
        self.clock = clock

    def pages(
        self,
        call: ListCall,
        record: ListRecord,
        decode: Callable[[bytes], T],
        on_page: Callable[[ListStats], None] | None = None,
    ) -> Iterator[Page[T]]:
        """Yield every page of the list, decoded, updating ``record`` as it goes."""
        token: str | None = None
        attempt = 0
        number = 0
        deadline = self.clock() + self.settings.list_deadline_seconds
        seen_tokens: set[str] = set()
        while True:
            number += 1
            try:
                decoded = self._fetch(call, record, decode, token, number, deadline)
            except _Expired as expired:
                if record.restarts < self.settings.max_list_restarts:
                    # Start over for a consistent snapshot; rows of the abandoned attempt are
                    # told apart by ``list_attempt``.
                    record.restarts += 1
                    attempt += 1
                    token, number = None, 0
                    seen_tokens.clear()
                    record.pages = record.items = 0
                    continue
                if not expired.token:
                    raise CollectionError(
                        f"listing {record.resource}: the continue token expired (410) after "
                        f"{record.restarts} restarts and the server offered no continuation",
                        hint="raise kubernetes.max_list_restarts or list when the API server "
                        "is less loaded",
                    ) from None
                record.consistent = False
                token = expired.token
                number -= 1
                continue
            meta = decoded.metadata  # type: ignore[attr-defined]
            if number == 1:
                record.resource_version = meta.resource_version
            record.pages += 1
            record.items += len(getattr(decoded, "items", ()))
            yield Page(number, attempt, decoded)
            if on_page is not None:
                on_page(
                    ListStats(
                        record.resource,
                        record.pages,
                        record.items,
                        meta.remaining_item_count,
                        record.restarts,
                        record.retries,
                    )
                )
            if not meta.continue_:
                record.finished_at = utc_now()
                return
            if meta.continue_ in seen_tokens:
                raise CollectionError(
                    f"listing {record.resource}: the API server returned the same continue "
                    f"token twice (after page {number}), so the list would never end",
                    hint="the API server or a proxy in front of it is misbehaving (a cache "
                    "serving a stale page?); list again later, or bypass the proxy",
                )
            seen_tokens.add(meta.continue_)
            token = meta.continue_

    def _fetch(
        self,
        call: ListCall,
        record: ListRecord,
        decode: Callable[[bytes], T],
        token: str | None,
        number: int,
        deadline: float,
    ) -> T:
        """One page, retried; raises ``_Expired`` on 410."""
        failures = 0
        while True:
            self._check_deadline(record, number, deadline)
            started = time.perf_counter()
            try:
                body, content_type = self._request(call, token, record, number, deadline)
                # The API server's latency as a client sees it: request to last byte, before
                # annex's own decoding (reported against the LIST SLO).
                record.latencies.append(time.perf_counter() - started)
                record.response_bytes += len(body)
                refuse_foreign_body(body, content_type, f"listing {record.resource}")
                return decode(body)
            except ApiException as exc:
                record.latencies.append(time.perf_counter() - started)
                status = exc.status or 0
                if status in (401, 403):
                    raise ClusterAccessError(
                        f"the API server refused to list {record.resource} "
                        f"({status} {exc.reason}): {status_message(exc)}",
                        hint=RBAC_HINT,
                    ) from None
                if status == 410:
                    raise _Expired(_status_continue(exc)) from None
                if status not in RETRYABLE_STATUSES:
                    raise CollectionError(
                        f"listing {record.resource} page {number} failed: {status} {exc.reason}: "
                        f"{status_message(exc)}",
                        hint="check that the API server serves " + record.api_path,
                    ) from None
                problem = f"{status} {exc.reason}"
                retry_after = retry_after_seconds(exc) if status in (429, 503) else None
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                record.latencies.append(time.perf_counter() - started)
                problem = f"{type(exc).__name__}: {exc}"
                retry_after = None
                if failures >= self.settings.max_retries:
                    if isinstance(exc, urllib3.exceptions.ProtocolError):
                        raise CollectionError(
                            f"listing {record.resource}: page {number} was cut off "
                            f"after {failures + 1} attempts ({problem})",
                            hint="the API server or a proxy closes large responses; "
                            "try a smaller kubernetes.page_size",
                        ) from None
                    raise ClusterAccessError(
                        f"cannot reach the API server to list {record.resource} "
                        f"after {failures + 1} attempts: {problem}",
                        hint="check the server address in the kubeconfig and the network",
                    ) from None
            except msgspec.DecodeError as exc:
                problem = f"undecodable body: {exc}"
                retry_after = None
                if failures >= self.settings.max_retries:
                    raise CollectionError(
                        f"listing {record.resource}: page {number} is not valid JSON "
                        f"after {failures + 1} attempts ({exc})",
                        hint="the response was truncated or corrupted; "
                        "try a smaller kubernetes.page_size",
                    ) from None
            if failures >= self.settings.max_retries:
                raise CollectionError(
                    f"listing {record.resource} page {number} still failed after "
                    f"{failures + 1} attempts: {problem}",
                    hint="the API server is overloaded or failing; retry later",
                )
            delay = self._delay(failures, retry_after)
            if self.clock() + delay > deadline:
                raise self._too_long(record, number, f"the next retry ({problem}) would start")
            self.sleep(delay)
            failures += 1
            record.retries += 1

    def _request(
        self, call: ListCall, token: str | None, record: ListRecord, number: int, deadline: float
    ) -> tuple[bytes, str | None]:
        """One GET: the page's body (inflated) and its ``Content-Type``."""
        settings = self.settings
        remaining = max(0.001, deadline - self.clock())
        kwargs: dict[str, Any] = {
            "limit": settings.page_size,
            "_preload_content": False,
            "_request_timeout": (
                min(settings.connect_timeout_seconds, remaining),
                min(settings.request_timeout_seconds, remaining),
            ),
        }
        if token:
            kwargs["_continue"] = token
        response = call(**kwargs)
        if record.server_date_local is None:
            record.server_date = header(response, "Date")
            record.server_date_local = utc_now()
        body_deadline = min(deadline, self.clock() + settings.response_deadline_seconds)
        try:
            body = read_body(
                response,
                max_bytes=settings.max_response_bytes,
                deadline=body_deadline,
                clock=self.clock,
            )
        except BodyTooSlow as exc:
            _discard(response)
            if body_deadline >= deadline:
                raise self._too_long(record, number, exc.message) from None
            raise CollectionError(
                f"listing {record.resource}: page {number} did not arrive within "
                f"kubernetes.response_deadline_seconds = {settings.response_deadline_seconds:g} "
                f"s: {exc.message}",
                hint="the API server (or a proxy) sends the response far too slowly; check "
                "the network path to it, or raise kubernetes.response_deadline_seconds",
            ) from None
        except BodyTooLarge as exc:
            _discard(response)
            raise CollectionError(
                f"listing {record.resource}: page {number} is larger than "
                f"kubernetes.max_response_bytes = {settings.max_response_bytes} bytes: "
                f"{exc.message}",
                hint="a page this large is not a sane list page (a compression bomb?); if "
                "the objects really are this large, lower kubernetes.page_size or raise "
                "kubernetes.max_response_bytes",
            ) from None
        except BodyError as exc:
            _discard(response)
            raise urllib3.exceptions.ProtocolError(exc.message) from None
        except BaseException:
            _discard(response)
            raise
        response.release_conn()
        return body, header(response, "Content-Type")

    def _check_deadline(self, record: ListRecord, number: int, deadline: float) -> None:
        if self.clock() >= deadline:
            raise self._too_long(record, number, "page " + str(number) + " was due")

    def _too_long(self, record: ListRecord, number: int, what: str) -> CollectionError:
        limit = self.settings.list_deadline_seconds
        return CollectionError(
            f"listing {record.resource} did not finish within kubernetes.list_deadline_seconds "
            f"= {limit:g} s ({record.pages} pages read; {what})",
            hint="the API server is too slow or keeps failing; check its health and the "
            "network path, or raise kubernetes.list_deadline_seconds for a very large cluster",
        )

    def _delay(self, failures: int, retry_after: float | None) -> float:
        return backoff_delay(self.settings, failures, retry_after, self.jitter)


def _discard(response: Any) -> None:
    """Close a response whose body was not read whole: it cannot go back to the pool."""
    try:
        response.close()
    finally:
        release = getattr(response, "release_conn", None)
        if release is not None:
            release()


_JSON_TYPES = ("application/json", "application/merged-patch+json")


def refuse_foreign_body(body: bytes, content_type: str | None, doing: str) -> None:
    """Raise ``CollectionError`` when a 2xx body is plainly not the API server's JSON: an
    HTML page (a login portal, a proxy's error page) or another declared media type. A
    truncated JSON body is not refused here (it is fetched again)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    start = body[:512].lstrip()
    html = start[:1] == b"<"
    foreign = bool(media) and not (media in _JSON_TYPES or media.endswith("+json"))
    if not (html or foreign):
        return
    shown = start[:80].decode("utf-8", "replace").replace("\n", " ")
    raise CollectionError(
        f"{doing}: the server answered 200 with {media or 'a body'} that is not a Kubernetes "
        f"API response (it starts {shown!r})",
        hint="something other than the API server answered: check the server URL in the "
        "kubeconfig (it must be the API server, not a dashboard or login page), any HTTP(S) "
        "proxy in between (HTTPS_PROXY / NO_PROXY), and that the credentials need no "
        "interactive login",
    )


def backoff_delay(
    settings: KubernetesSettings,
    failures: int,
    retry_after: float | None,
    jitter: Callable[[], float],
) -> float:
    """Full-jitter exponential backoff, capped; never shorter than the server's
    ``Retry-After``. Shared by lists and watches."""
    backoff = min(settings.max_backoff_seconds, BACKOFF_BASE_SECONDS * 2**failures)
    delay = backoff * (0.5 + 0.5 * jitter())
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay


def _status_body(exc: ApiException) -> objects.Status | None:
    body = exc.body
    if not body:
        return None
    try:
        return msgspec.json.decode(body, type=objects.Status)
    except (msgspec.DecodeError, TypeError):
        return None


def status_message(exc: ApiException) -> str:
    """The message of the API server's Status body, or the start of the body."""
    status = _status_body(exc)
    if status is not None and status.message:
        return status.message
    return str(exc.body or "")[:200]


def _status_continue(exc: ApiException) -> str | None:
    status = _status_body(exc)
    return status.metadata.continue_ if status is not None else None


def retry_after_seconds(exc: ApiException) -> float:
    """``Retry-After`` in seconds (the API server sends an integer); 1 s when absent."""
    headers = exc.headers or {}
    value = headers.get("Retry-After") if hasattr(headers, "get") else None
    try:
        return max(0.0, float(value)) if value is not None else 1.0
    except ValueError:
        return 1.0


def latency_summary(latencies: list[float]) -> tuple[float | None, float | None, float | None]:
    """(max, p50, p99) by nearest rank; None when no request was made."""
    if not latencies:
        return None, None, None
    ordered = sorted(latencies)

    def rank(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.999999) - 1))]

    return ordered[-1], rank(0.50), rank(0.99)

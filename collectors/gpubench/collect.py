"""Read the benchmark probes' records from their pods' logs, as Arrow record batches.

``collect_gpubench`` lists the finished probe pods, then reads each pod's ``gpubench`` log and
validates every record line (``records.validate_line``). How and why:

* **Which pods.** Two server-filtered lists of the probe namespace, ``fieldSelector
  status.phase=Succeeded`` then ``status.phase=Failed``, both with the probe label selector.
  Field selectors cannot say "Succeeded or Failed" in one request (requirements are ANDed), and
  filtering one list client-side would transfer the running probe pods too, whose logs are
  still incomplete and must not be read (or marked known) yet. Terminal phases are final, so a
  pod cannot appear in both lists; pods are still deduplicated by uid. Lists go through the
  inventory's ``Lister`` (paging, 410 restarts, 429 ``Retry-After``, 5xx backoff) and are
  decoded with a msgspec partial struct that keeps only what the collector needs.
* **Lists first, logs after.** The (small) pod summaries of both lists are read before any log,
  so that minutes of log reading never outlive a list's continue token (410 Expired). Logs are
  then read one pod at a time: memory holds one log (at most ``gpubench.max_log_bytes``) plus
  one batch of at most ``BATCH_ROWS`` rows per table, whatever the number of pods.
* **Logs.** ``GET .../pods/{name}/log?container=gpubench&limitBytes=max_log_bytes`` through
  ``transport.raw_get``, retried on 429/5xx/connection errors with the lists' backoff
  (``listing.backoff_delay``, ``Retry-After`` honoured). A log that still cannot be read (or a
  404: the Job's TTL deleted the pod meanwhile) is one ``log_unavailable`` rejection and the
  other pods go on; that pod gets no ``gpubench_pods`` row, so the next collection tries it
  again. 401/403 abort the collection (``ClusterAccessError``): without ``get pods/log`` every
  pod would fail the same way, and a collection of nothing but rejections would hide that.
* **Lines.** Lines not starting with ``{`` are log text (counted, not stored; blank lines are
  not counted). A log of exactly ``max_log_bytes`` bytes was cut by ``limitBytes``: it is
  marked truncated and its last, partial line counts as text, not as a broken record.
* **Duplicates.** ``record_id`` is unique within a collection: an exact repeat of an accepted
  line is dropped and counted (``CollectStats.duplicates_dropped``, logged); the same id with
  different content is a ``duplicate_record`` rejection. The check keeps two 64-bit hashes per
  accepted record (about 100 bytes each).
* ``known_pod_uids`` (pods already in the warehouse) are skipped without reading their logs.

Yields ``("gpu_peaks", batch)`` first, then ``gpubench_records``, ``gpubench_pods`` and
``rejected`` batches as they fill. Schemas: ``collectors.gpubench.schema``.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec
import pyarrow as pa
import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from annex.errors import ClusterAccessError, CollectionError
from annex.settings import GpubenchSettings, Settings
from collectors.gpubench import schema
from collectors.gpubench.records import MEASUREMENT_FIELDS, LineContext, Measurement, validate_line
from collectors.kubernetes import objects
from collectors.kubernetes.listing import (
    RETRYABLE_STATUSES,
    Lister,
    ListRecord,
    backoff_delay,
    retry_after_seconds,
    status_message,
    utc_now,
)
from collectors.kubernetes.transport import raw_get
from probes.gpubench.peaks import peak_rows

log = logging.getLogger(__name__)

CONTAINER = "gpubench"
PHASES = ("Succeeded", "Failed")
BATCH_ROWS = 10_000
"""Rows per yielded batch, per table."""
RAW_CAP_BYTES = 64 * 1024
"""A rejected line keeps at most this many of its bytes."""
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LOGS_HINT = (
    "annex needs `get` on pods/log in the probe namespace (gpubench.namespace): grant it with "
    "a Role bound to annex's identity there"
)


# --- the pod list, partially decoded ---------------------------------------------------------


class _Struct(msgspec.Struct, rename="camel", gc=False):
    pass


class _Labels(msgspec.Struct, gc=False):
    job_name: str | None = msgspec.field(default=None, name=JOB_NAME_LABEL)
    legacy_job_name: str | None = msgspec.field(default=None, name="job-name")


class _Meta(_Struct):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: _Labels | None = None


class _Spec(_Struct):
    node_name: str | None = None


class _Terminated(_Struct):
    finished_at: str | None = None


class _State(_Struct):
    terminated: _Terminated | None = None


class _ContainerStatus(_Struct):
    name: str = ""
    state: _State | None = None


class _Status(_Struct):
    phase: str | None = None
    container_statuses: list[_ContainerStatus] | None = None


class _Pod(_Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)
    status: _Status = msgspec.field(default_factory=_Status)


class _PodList(_Struct):
    metadata: objects.ListMeta = msgspec.field(default_factory=objects.ListMeta)
    items: list[_Pod] = []


_POD_LIST = msgspec.json.Decoder(_PodList)


@dataclass(frozen=True)
class ProbePod:
    """What the collector keeps of one finished probe pod."""

    uid: str
    namespace: str
    name: str
    job: str | None
    node: str | None
    phase: str | None
    finished_at: datetime | None
    """When the ``gpubench`` container terminated (naive UTC)."""


@dataclass
class CollectStats:
    """Counters of one collection (also logged at the end)."""

    pods_listed: int = 0
    pods_skipped: int = 0
    """Pods in ``known_pod_uids``."""
    pods_read: int = 0
    logs_unavailable: int = 0
    records: int = 0
    rejected: int = 0
    text_lines: int = 0
    duplicates_dropped: int = 0
    """Exact repeats of an accepted record line."""


def collect_gpubench(
    api: ApiClient,
    cluster: str,
    settings: Settings,
    *,
    known_pod_uids: frozenset[str] = frozenset(),
    on_pod: Callable[[str, int], None] | None = None,
    lister: Lister | None = None,
    stats: CollectStats | None = None,
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Yield ``(table, batch)`` for the peak table, every probe record, pod and rejection.

    ``on_pod(pod_name, records_accepted)`` is called after each pod's log is read (also with 0
    when it could not be). ``lister`` (its ``sleep``/``jitter``) and ``stats`` are for tests and
    progress. Raises ``ClusterAccessError`` (unreachable, 401/403) or ``CollectionError`` (a
    list page unreadable after retries); the consumer then discards what it received.
    """
    bench = settings.gpubench
    lister = lister or Lister(settings.kubernetes)
    stats = stats if stats is not None else CollectStats()
    yield "gpu_peaks", peaks_batch()
    try:
        pods = list_probe_pods(api, bench, lister)
        stats.pods_listed = len(pods)
        reader = _Reader(bench, stats)
        for pod in pods:
            if pod.uid in known_pod_uids:
                stats.pods_skipped += 1
                continue
            try:
                body = fetch_log(api, pod, bench, lister)
            except LogUnavailable as exc:
                yield from reader.unavailable(pod, exc)
            else:
                yield from reader.read(pod, body)
                del body  # before the next log arrives: one log in memory at a time
            if on_pod is not None:
                on_pod(pod.name, reader.last_records)
        yield from reader.flush()
    except (ClusterAccessError, CollectionError) as exc:
        server = api.configuration.host
        raise type(exc)(f"cluster {cluster} ({server}): {exc.message}", hint=exc.hint) from exc
    log.info(
        "gpubench %s: %d pods listed, %d skipped (known), %d read, %d logs unavailable, "
        "%d records, %d rejected, %d exact repeats dropped",
        cluster,
        stats.pods_listed,
        stats.pods_skipped,
        stats.pods_read,
        stats.logs_unavailable,
        stats.records,
        stats.rejected,
        stats.duplicates_dropped,
    )


def peaks_batch() -> pa.RecordBatch:
    """The whole peak table (``probes.gpubench.peaks``), for the warehouse's reference copy."""
    return pa.RecordBatch.from_pylist(peak_rows(), schema=schema.GPU_PEAKS)


# --- listing ---------------------------------------------------------------------------------


def list_probe_pods(api: ApiClient, bench: GpubenchSettings, lister: Lister) -> list[ProbePod]:
    """Every Succeeded, then every Failed probe pod (one entry per uid), in list order."""
    path = f"/api/v1/namespaces/{bench.namespace}/pods"
    pods: list[ProbePod] = []
    seen: set[str] = set()
    for phase in PHASES:
        selector = f"status.phase={phase}"
        record = ListRecord(
            f"pods ({bench.namespace}, {selector})", path, lister.settings.page_size, utc_now()
        )
        call = _list_call(api, path, bench.label_selector, selector)
        for page in lister.pages(call, record, _POD_LIST.decode):
            if page.number == 1 and page.attempt > 0:  # a restarted list (410): start over
                pods = [p for p in pods if p.phase != phase]
                seen = {p.uid for p in pods}
            for item in page.decoded.items:
                if item.metadata.uid and item.metadata.uid not in seen:
                    seen.add(item.metadata.uid)
                    pods.append(_probe_pod(item))
    return pods


def _list_call(api: ApiClient, path: str, labels: str, fields: str) -> Callable[..., Any]:
    def call(
        *,
        limit: int,
        _preload_content: bool = False,
        _request_timeout: tuple[float, float] | None = None,
        _continue: str | None = None,
    ) -> Any:
        query: list[tuple[str, Any]] = [
            ("labelSelector", labels),
            ("fieldSelector", fields),
            ("limit", limit),
        ]
        if _continue:
            query.append(("continue", _continue))
        return raw_get(api, path, query, timeout=_request_timeout)

    return call


def _probe_pod(item: _Pod) -> ProbePod:
    labels = item.metadata.labels
    job = (labels.job_name or labels.legacy_job_name) if labels is not None else None
    finished: str | None = None
    for status in item.status.container_statuses or ():
        terminated = status.state.terminated if status.state is not None else None
        if terminated is not None and terminated.finished_at:
            if status.name == CONTAINER:
                finished = terminated.finished_at
                break
            finished = max(finished or "", terminated.finished_at)
    return ProbePod(
        uid=item.metadata.uid,
        namespace=item.metadata.namespace,
        name=item.metadata.name,
        job=job,
        node=item.spec.node_name,
        phase=item.status.phase,
        finished_at=_timestamp(finished),
    )


def _timestamp(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed


# --- logs ------------------------------------------------------------------------------------


class LogUnavailable(Exception):
    """The pod's log could not be read (the message says why); the pod is skipped."""


def fetch_log(api: ApiClient, pod: ProbePod, bench: GpubenchSettings, lister: Lister) -> bytes:
    """The pod's ``gpubench`` log, at most ``max_log_bytes`` of it.

    Retries 429/5xx/connection errors like a list page; raises ``LogUnavailable`` when the log
    cannot be read, ``ClusterAccessError`` on 401/403.
    """
    kube = lister.settings
    path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/log"
    query: list[tuple[str, Any]] = [("container", CONTAINER), ("limitBytes", bench.max_log_bytes)]
    timeout = (kube.connect_timeout_seconds, kube.request_timeout_seconds)
    failures = 0
    while True:
        retry_after: float | None = None
        try:
            response = raw_get(api, path, query, timeout=timeout)
            return _read_capped(response, bench.max_log_bytes)
        except ApiException as exc:
            status = exc.status or 0
            if status in (401, 403):
                raise ClusterAccessError(
                    f"the API server refused to read the log of pod {pod.namespace}/{pod.name} "
                    f"({status} {exc.reason}): {status_message(exc)}",
                    hint=LOGS_HINT,
                ) from None
            problem = f"{status} {exc.reason}: {status_message(exc)}"
            if status not in RETRYABLE_STATUSES:
                raise LogUnavailable(problem) from None
            if status in (429, 503):
                retry_after = retry_after_seconds(exc)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if failures >= kube.max_retries:
            raise LogUnavailable(f"still failing after {failures + 1} attempts: {problem}")
        lister.sleep(backoff_delay(kube, failures, retry_after, lister.jitter))
        failures += 1


def _read_capped(response: Any, cap: int) -> bytes:
    """The body, never more than ``cap`` bytes in memory even if the server ignored
    ``limitBytes`` (a cut-off connection is closed, not returned to the pool)."""
    read = getattr(response, "read", None)
    if read is None:  # a stand-in response that only has ``data``
        try:
            return bytes(response.data[:cap])
        finally:
            response.release_conn()
    data = read(cap + 1)
    if len(data) > cap:
        response.close()
        return data[:cap]
    response.release_conn()
    return data


# --- lines to rows ---------------------------------------------------------------------------


def _digest(data: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


class _Table:
    """Rows of one table until ``BATCH_ROWS``; then one ``RecordBatch``."""

    def __init__(self, name: str, arrow_schema: pa.Schema) -> None:
        self.name = name
        self.schema = arrow_schema
        self.rows: list[tuple[Any, ...]] = []

    def add(self, row: tuple[Any, ...]) -> Iterator[tuple[str, pa.RecordBatch]]:
        self.rows.append(row)
        if len(self.rows) >= BATCH_ROWS:
            yield from self.flush()

    def flush(self) -> Iterator[tuple[str, pa.RecordBatch]]:
        if not self.rows:
            return
        columns = list(zip(*self.rows, strict=True))
        self.rows = []
        arrays = [
            pa.array(column, type=f.type) for column, f in zip(columns, self.schema, strict=True)
        ]
        yield self.name, pa.RecordBatch.from_arrays(arrays, schema=self.schema)


class _Reader:
    """Turns pods' logs into rows; holds the collection-wide duplicate check."""

    def __init__(self, bench: GpubenchSettings, stats: CollectStats) -> None:
        self.bench = bench
        self.stats = stats
        self.records = _Table("gpubench_records", schema.GPUBENCH_RECORDS)
        self.pods = _Table("gpubench_pods", schema.GPUBENCH_PODS)
        self.rejected = _Table("rejected", schema.REJECTED)
        self.seen: dict[int, int] = {}
        """hash(record_id) -> hash(line) of every accepted record."""
        self.last_records = 0

    def unavailable(
        self, pod: ProbePod, problem: LogUnavailable
    ) -> Iterator[tuple[str, pa.RecordBatch]]:
        """One ``log_unavailable`` rejection (locator: the pod), no pod row."""
        self.last_records = 0
        self.stats.logs_unavailable += 1
        self.stats.rejected += 1
        where = f"{pod.namespace}/{pod.name}"
        message = f"the {CONTAINER} log of pod {where} could not be read: {problem}"
        yield from self.rejected.add((where, "log_unavailable", message, None))

    def read(self, pod: ProbePod, body: bytes) -> Iterator[tuple[str, pa.RecordBatch]]:
        """Validate every line of one pod's log; then the pod's row."""
        where = f"{pod.namespace}/{pod.name}"
        cap = self.bench.max_log_bytes
        truncated = len(body) >= cap
        lines = body.split(b"\n")
        partial = lines.pop() if truncated else None  # after the last newline: cut off
        context = LineContext(
            namespace=pod.namespace,
            pod=pod.name,
            node=pod.node,
            peak_tolerance=self.bench.peak_tolerance,
            max_line_bytes=self.bench.max_line_bytes,
        )
        records = rejected = text = 0
        for number, raw_line in enumerate(lines, start=1):
            line = raw_line.removesuffix(b"\r")
            if not line.startswith(b"{"):
                text += bool(line.strip())
                continue
            locator = f"{where} line {number}"
            result = validate_line(line, context)
            if isinstance(result, Measurement):
                key, content = _digest(result.record_id.encode()), _digest(line)
                known = self.seen.get(key)
                if known == content:
                    self.stats.duplicates_dropped += 1
                    continue
                if known is not None:
                    rejected += 1
                    message = (
                        f"`record_id` {result.record_id!r} was already read with different "
                        "content in this collection"
                    )
                    yield from self.rejected.add(
                        (locator, "duplicate_record", message, line[:RAW_CAP_BYTES])
                    )
                    continue
                self.seen[key] = content
                records += 1
                row = (*_measurement_row(result, pod.uid), locator)
                yield from self.records.add(row)
            else:
                rejected += 1
                raw = line[:RAW_CAP_BYTES]
                yield from self.rejected.add((locator, result.reason_code, result.message, raw))
        if partial:
            text += 1
        stats = self.stats
        stats.pods_read += 1
        stats.records += records
        stats.rejected += rejected
        stats.text_lines += text
        self.last_records = records
        row = (
            pod.uid,
            pod.namespace,
            pod.name,
            pod.job,
            pod.node,
            pod.phase,
            pod.finished_at,
            len(body),
            truncated,
            records,
            rejected,
            text,
        )
        yield from self.pods.add(row)

    def flush(self) -> Iterator[tuple[str, pa.RecordBatch]]:
        yield from self.records.flush()
        yield from self.pods.flush()
        yield from self.rejected.flush()


_POD_UID_AT = MEASUREMENT_FIELDS.index("pod") + 1
"""``gpubench_records`` is ``Measurement``'s fields with ``pod_uid`` right after ``pod`` and
``locator`` last (a unit test checks this against the schema)."""


def _measurement_row(measurement: Measurement, pod_uid: str) -> tuple[Any, ...]:
    values = msgspec.structs.astuple(measurement)
    return (*values[:_POD_UID_AT], pod_uid, *values[_POD_UID_AT:])

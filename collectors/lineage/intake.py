"""The OpenLineage intake's two endpoints: validate each event, spool every outcome, answer.

``POST /api/v1/lineage`` takes one event, ``POST /api/v1/lineage/batch`` a JSON array of
events (OpenLineage.yml, spec 2-0-2); both accept ``Content-Encoding: gzip`` (openlineage-
python's HTTP transport compresses). Each body goes through
``collectors.lineage.events.parse_events`` under ``lineage.max_body_bytes`` (counted while
inflating: a gzip bomb is refused after that many bytes, never inflated whole) and
``lineage.max_events``. Answers (reference/openlineage.md §4):

================================  ======================  ===================================
case                              /lineage                /lineage/batch
================================  ======================  ===================================
event(s) accepted                 200 ``{event_id}``      200 ``status: success``
an event breaks a rule            422 reason, field path  200 ``partial_success`` with
                                                          ``failed_events[{index, reason}]``
body not JSON, bad compression    400                     400
body over the limit once          413                     413
inflated, more than max_events
spool not writable                503 + Retry-After       503 + Retry-After
================================  ======================  ===================================

Nothing that arrives is lost: the accepted events and the rejections of one request (the whole
body's refusal included, with its first 64 KiB) are written as ONE Arrow IPC file
(``SPOOL_TABLE``, zstd-compressed) to ``<spool_dir>/incoming/`` before the answer, atomically
(hidden temporary file, fsync, rename, fsync of the folder), named
``<received_at compact>-<sha256(body)[:16]>.arrow`` so a listing sorts by arrival. A second
copy of an event within one request is not written again (same ``event_id``: same content);
across requests the warehouse keeps one row per ``event_id``.

Each row is already shaped as a row of ``collectors.lineage.schema``: an event row carries the
columns of ``LINEAGE_EVENTS`` (the event in ``payload`` as its RFC 8785 canonical JSON text)
and a rejection row those of ``REJECTED``, so the collection reads the spool straight into
Arrow, never parses a payload in Python and never validates an event twice. Spool files of
earlier annex versions are still read: JSON lines (``LEGACY_SPOOL_SCHEMA``), and Arrow files
with the ``datasets`` and ``facets`` columns the intake once took out of each event (the
warehouse now parses the payload for them; the extra columns are ignored).

Decoding and hashing hold the GIL, so ``LineageIntake`` runs them (``process_request``:
decode, validate, hash, build the spool file) in ``lineage.intake_workers`` processes; the
request's thread only writes the spool file. A body reaches a worker only after
``IntakeServer`` has checked the token and the wire size.

This module knows nothing of HTTP servers: the methods take bytes and return an
``IntakeReply``; ``services.lineage.lineage_routes`` wires them to routes.
"""

from __future__ import annotations

import base64
import contextlib
import gc
import hashlib
import logging
import multiprocessing
import os
import signal
import threading
import weakref
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from annex.settings import LineageSettings
from collectors.lineage.events import (
    RAW_KEEP,
    Accepted,
    ParsedBatch,
    Rejected,
    parse_events,
    respell_in_c,
)
from collectors.lineage.schema import TIMESTAMP
from collectors.spool import compact_time, remove_abandoned_writes, write_atomically
from collectors.workers import die_with_parent

log = logging.getLogger(__name__)

LINEAGE_PATH = "/api/v1/lineage"
BATCH_PATH = "/api/v1/lineage/batch"
INCOMING = "incoming"
ARCHIVE = "archive"
SPOOL_SUFFIX = ".arrow"
LEGACY_SPOOL_SUFFIX = ".jsonl"
SPOOL_SUFFIXES = (SPOOL_SUFFIX, LEGACY_SPOOL_SUFFIX)
"""What the collection reads from ``incoming``: today's Arrow files and earlier JSON lines."""
SPOOL_COMPRESSION = "zstd"
BODY_STATUS = {"invalid_json": 400, "too_large": 413}
"""HTTP status of a refused body (``Rejected.index`` None), by reason; an event's is 422."""

_EVENT_FIELDS = [
    # kind 'event': the LINEAGE_EVENTS columns (source_locator is the collection's)
    ("event_id", pa.string()),
    ("event_time", TIMESTAMP),
    ("event_time_offset_minutes", pa.int16()),
    ("event_kind", pa.string()),
    ("event_type", pa.string()),
    ("run_id", pa.string()),
    ("job_namespace", pa.string()),
    ("job_name", pa.string()),
    ("producer", pa.string()),
    ("schema_url", pa.string()),
    ("payload", pa.string()),
    ("findings", pa.list_(pa.string())),
]
_REJECTION_FIELDS = [
    # kind 'rejected': the REJECTED columns (locator is the collection's)
    ("reason_code", pa.string()),
    ("message", pa.string()),
    ("path", pa.string()),
]
_REQUEST_FIELDS = [
    ("kind", pa.string()),  # 'event' | 'rejected'
    ("index", pa.int32()),  # position in the request (-1: the whole body)
    ("received_at", TIMESTAMP),
]

SPOOL_TABLE = pa.schema(
    [*_REQUEST_FIELDS, *_EVENT_FIELDS, *_REJECTION_FIELDS, ("raw", pa.binary())]
)
"""The columns of a spool file: one row per accepted event or rejection, in request order."""

LEGACY_SPOOL_SCHEMA = pa.schema(
    [
        *_REQUEST_FIELDS,
        *_EVENT_FIELDS,
        *_REJECTION_FIELDS,
        ("raw", pa.string()),
        ("raw_b64", pa.string()),
    ]
)
"""The fields of a line of an earlier annex's JSON-lines spool file, as Arrow's JSON reader
reads them (missing fields: null; ``raw`` as text, or ``raw_b64`` when not UTF-8)."""


@dataclass(frozen=True)
class IntakeReply:
    """An endpoint's answer: HTTP status and JSON payload (errors: ``error`` and ``hint``)."""

    status: int
    payload: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


# --- spool rows -------------------------------------------------------------------------------


def utc_naive(moment: datetime) -> datetime:
    """Naive UTC (``TIMESTAMP`` columns); a naive ``moment`` is taken as UTC already."""
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo is not None else moment


_EVENT_NAMES = [name for name, _ in _EVENT_FIELDS]


def _event_values(accepted: Accepted) -> tuple[Any, ...]:
    """An accepted event's values of ``_EVENT_FIELDS``, in their order (``payload`` as UTF-8
    bytes: Arrow takes them for a string column and checks them, with no decode here)."""
    event = accepted.event
    when = accepted.event_time
    offset = when.utcoffset()
    run = event.get("run") if accepted.kind == "RunEvent" else None
    job = event.get("job") if accepted.kind != "DatasetEvent" else None
    return (
        accepted.event_id,
        utc_naive(when),
        int(offset.total_seconds() // 60) if offset else 0,
        accepted.kind,
        event.get("eventType") if accepted.kind == "RunEvent" else None,
        run["runId"].lower() if run else None,
        job.get("namespace") if job else None,
        job.get("name") if job else None,
        event.get("producer"),
        event.get("schemaURL"),
        accepted.text or orjson.dumps(event),
        [f.record for f in accepted.findings],
    )


def event_row(accepted: Accepted, received_at: datetime) -> dict[str, Any]:
    """The spool row (a ``LINEAGE_EVENTS`` row less ``source_locator``) of an accepted event;
    ``received_at`` naive UTC."""
    row: dict[str, Any] = {"kind": "event", "index": accepted.index, "received_at": received_at}
    row.update(zip(_EVENT_NAMES, _event_values(accepted), strict=True))
    row["payload"] = row["payload"].decode("utf-8")
    return row


def rejected_row(rejected: Rejected, received_at: datetime) -> dict[str, Any]:
    """The spool row (a ``REJECTED`` row less ``locator``) of a rejected event or body."""
    return {
        "kind": "rejected",
        "index": rejected.index if rejected.index is not None else -1,
        "received_at": received_at,
        "reason_code": rejected.reason,
        "message": rejected.message,
        "path": rejected.path,
        "raw": rejected.raw,
    }


def spool_table(parsed: ParsedBatch, received_at: datetime) -> pa.Table:
    """Every outcome of one request (``SPOOL_TABLE``): accepted events (each ``event_id``
    once) and rejections, in request order.

    The events' columns are built column by column (a request of 1,000 events: about half
    the time of one dict per row); the rare rejections are rows, and the two are put in
    request order only when both are there."""
    when = utc_naive(received_at)
    accepted = [a for a in parsed.accepted if not a.duplicate]
    tables = []
    if accepted:
        count = len(accepted)
        values = list(zip(*(_event_values(a) for a in accepted), strict=True))
        columns: dict[str, Any] = {
            "kind": ["event"] * count,
            "index": [a.index for a in accepted],
            "received_at": [when] * count,
            **dict(zip(_EVENT_NAMES, values, strict=True)),
        }
        arrays = [
            pa.array(columns[f.name], f.type) if f.name in columns else pa.nulls(count, f.type)
            for f in SPOOL_TABLE
        ]
        tables.append(pa.Table.from_arrays(arrays, schema=SPOOL_TABLE))
    if parsed.rejected:
        rows = [rejected_row(r, when) for r in parsed.rejected]
        tables.append(pa.Table.from_pylist(rows, schema=SPOOL_TABLE))
    if not tables:
        return SPOOL_TABLE.empty_table()
    if len(tables) == 1:
        return tables[0]
    table = pa.concat_tables(tables)
    return table.take(pc.sort_indices(table, [("index", "ascending")]))


def spool_file(parsed: ParsedBatch, received_at: datetime) -> bytes:
    """``spool_table`` as the bytes of an Arrow IPC file (b"" when the request had nothing)."""
    table = spool_table(parsed, received_at)
    if not table.num_rows:
        return b""
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=SPOOL_COMPRESSION)
    with pa.ipc.new_file(sink, SPOOL_TABLE, options=options) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def raw_bytes(row: dict[str, Any]) -> bytes | None:
    """A rejection row's raw bytes (``raw`` bytes, or, in a JSON-lines spool file, ``raw``
    text or ``raw_b64``)."""
    raw = row.get("raw")
    if isinstance(raw, bytes):
        return raw
    if raw is not None:
        return str(raw).encode("utf-8")
    if row.get("raw_b64") is not None:
        return base64.b64decode(row["raw_b64"])
    return None


# --- the intake -------------------------------------------------------------------------------


def process_request(
    body: bytes,
    *,
    single: bool,
    content_encoding: str | None,
    received_at: datetime,
    max_bytes: int,
    max_events: int,
) -> tuple[int, dict[str, Any], bytes]:
    """One request's answer and its spool file: ``(status, payload, spool bytes)``. Pure (no
    I/O), so it can run in a worker process; the caller writes the file before answering."""
    now = received_at if received_at.tzinfo else received_at.replace(tzinfo=UTC)
    parsed = parse_events(
        body,
        content_encoding=content_encoding,
        now=now,
        max_bytes=max_bytes,
        max_events=max_events,
    )
    if single and parsed.batch and parsed.received:
        refusal = Rejected(
            None,
            "schema_violation",
            f"the body is a JSON array of {parsed.received} events, not one event: "
            "send arrays to /api/v1/lineage/batch",
            "",
            body[:RAW_KEEP],
        )
        parsed = ParsedBatch((), (refusal,), 0, parsed.body_bytes, True)
    spool = spool_file(parsed, now)
    refused = parsed.rejected[0] if len(parsed.rejected) == 1 else None
    if refused is not None and refused.index is None:
        status = BODY_STATUS.get(refused.reason, 422 if single else 400)
        return status, _rejection_payload(refused, batch=not single), spool
    if not single:
        return 200, parsed.response(), spool
    if parsed.accepted:
        accepted = parsed.accepted[0]
        payload: dict[str, Any] = {"status": "success", "event_id": accepted.event_id}
        if accepted.findings:
            payload["findings"] = [f.message for f in accepted.findings]
        return 200, payload, spool
    return 422, _rejection_payload(parsed.rejected[0], batch=False), spool


def _warm() -> int:
    """Run in each new worker: imports and compiles the validator, and loads (building it where
    this version is not built yet) the C number respelling, before the first request."""
    respell_in_c()
    return os.getpid()


WORKER_ENVIRONMENT = {
    "PYTHONMALLOC": "malloc",
    "MALLOC_TRIM_THRESHOLD_": str(1 << 30),
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    "MALLOC_TOP_PAD_": str(64 << 20),
    "ARROW_DEFAULT_MEMORY_POOL": "system",
}
"""The environment the validating processes start with: they keep their heap between requests.

Decoding one body of 1,000 events makes some 30 MB of Python objects, freed when its reply is
built. With Python's own allocator the emptied 1 MiB arenas go back to the system and the next
body faults them in again, page by page: some 4,000 page faults per body, 8% of a worker's CPU
time (measured: 236 against 217 µs per event, user and system time, over 100 bodies, four
alternating runs each). Here every object comes from glibc's malloc, which keeps what was freed
(``MALLOC_TRIM_THRESHOLD_``: trims only past 1 GiB free; ``MALLOC_MMAP_THRESHOLD_``: blocks up
to 32 MiB, a whole inflated body, come from the heap too; ``MALLOC_TOP_PAD_``: the heap grows 64
MiB at a time), and so do Arrow's buffers (its system pool). A worker's memory thus stays at the
high-water mark of the largest body it has decoded, bounded by ``lineage.max_body_bytes``."""

_SPAWNING = threading.Lock()


@contextlib.contextmanager
def _spawning_workers() -> Iterator[None]:
    """``WORKER_ENVIRONMENT`` set while the pool's processes are spawned, restored after.

    A spawned process inherits this process's environment, and ``multiprocessing`` offers no
    other way to give it one (Python reads ``PYTHONMALLOC`` before any of our code runs)."""
    with _SPAWNING:
        saved = {name: os.environ.get(name) for name in WORKER_ENVIRONMENT}
        os.environ.update(WORKER_ENVIRONMENT)
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def _worker_init() -> None:
    """Workers leave Ctrl-C to ``annex serve``, which stops them; they collect cyclic garbage
    less often than Python's default (every 700 new containers): decoding one body creates
    some 100,000 dicts and lists, none of them in a cycle, and the default made the collector
    run (and walk every live object) a few hundred times per body, a fifth of a worker's time."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.set_threshold(100_000, 50, 1000)
    die_with_parent()  # no orphan when annex serve is killed (kill -9)


class LineageIntake:
    """The two endpoints over one spool folder; safe to call from many threads.

    ``workers`` (default ``lineage.intake_workers``) processes decode, validate and hash the
    bodies, so that requests use every core instead of one (validation is pure Python and
    holds the GIL); 0 does it in the request's thread. The pool starts with the intake (its
    processes import the validator then) and is restarted if a worker dies.
    """

    def __init__(self, settings: LineageSettings, *, workers: int | None = None) -> None:
        self.settings = settings
        self.workers = settings.intake_workers if workers is None else workers
        self.incoming = settings.spool_dir / INCOMING
        remove_abandoned_writes(self.incoming)
        self._ready = False
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._warming: list[Future[int]] = []
        if self.workers > 0:
            self._start_pool()

    def _start_pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                pool = ProcessPoolExecutor(
                    max_workers=self.workers,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_worker_init,
                )
                # each submit while no worker is idle spawns one: all of them start here
                with _spawning_workers():
                    self._warming = [pool.submit(_warm) for _ in range(self.workers)]
                self._pool = pool
                weakref.finalize(self, pool.shutdown, wait=False, cancel_futures=True)
            return self._pool

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Block until every worker has started (benchmarks; requests never need to)."""
        for future in list(self._warming):
            future.result(timeout=timeout)

    def close(self) -> None:
        """Stop the worker processes (they also stop when the intake is garbage-collected)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def single(
        self, body: bytes, *, content_encoding: str | None, received_at: datetime
    ) -> IntakeReply:
        """``POST /api/v1/lineage``: one event -> 200, or 400/413/422 naming what is wrong."""
        return self._handle(body, True, content_encoding, received_at)

    def batch(
        self, body: bytes, *, content_encoding: str | None, received_at: datetime
    ) -> IntakeReply:
        """``POST /api/v1/lineage/batch``: 200 with OpenLineage's per-event summary, or
        400/413 when the body itself cannot be read."""
        return self._handle(body, False, content_encoding, received_at)

    def _handle(
        self, body: bytes, single: bool, content_encoding: str | None, received_at: datetime
    ) -> IntakeReply:
        arguments = {
            "single": single,
            "content_encoding": content_encoding,
            "received_at": received_at,
            "max_bytes": self.settings.max_body_bytes,
            "max_events": self.settings.max_events,
        }
        if self.workers > 0:
            try:
                status, payload, spool = (
                    self._start_pool().submit(process_request, body, **arguments).result()
                )
            except BrokenProcessPool:
                log.error("a lineage intake worker died; restarting the pool")
                with self._lock:
                    self._pool = None
                return _unavailable("annex's event validation restarted", "retry in a moment")
        else:
            status, payload, spool = process_request(body, **arguments)
        failure = self._spool(body, spool, received_at)
        return failure if failure is not None else IntakeReply(status, payload)

    def _spool(self, body: bytes, data: bytes, received_at: datetime) -> IntakeReply | None:
        """Write the request's spool file; None when written, else the 503 to answer."""
        if not data:
            return None  # an empty batch: nothing to keep
        name = f"{compact_time(received_at)}-{hashlib.sha256(body).hexdigest()[:16]}"
        try:
            if not self._ready:
                self.incoming.mkdir(parents=True, exist_ok=True)
                self._ready = True
            write_atomically(self.incoming / (name + SPOOL_SUFFIX), data)
        except OSError as exc:
            self._ready = False
            log.error("cannot write to the spool folder %s: %s", self.incoming, exc.strerror)
            return _unavailable(
                "annex cannot store the events right now",
                "retry in a minute; the annex operator should check the spool volume "
                "(lineage.spool_dir)",
            )
        return None


def _unavailable(error: str, hint: str) -> IntakeReply:
    return IntakeReply(503, {"error": error, "hint": hint}, {"Retry-After": "60"})


def _rejection_payload(rejected: Rejected, *, batch: bool) -> dict[str, Any]:
    hints = {
        "invalid_json": "send UTF-8 JSON (optionally with Content-Encoding: gzip)",
        "too_large": "send fewer or smaller events per request (lineage.max_body_bytes after "
        "decompression, lineage.max_events per batch)",
        "schema_violation": "the event must follow the OpenLineage 2-0-2 schema and annex's "
        "facet schemas (collectors/lineage/spec, collectors/lineage/facets)",
        "unknown_event_type": "eventType is one of START, RUNNING, COMPLETE, ABORT, FAIL, OTHER "
        "(or absent)",
        "bad_run_id": "run.runId must be a UUID (UUIDv7 recommended)",
        "missing_timezone": "eventTime needs an offset, e.g. 2026-11-02T08:10:00Z",
        "future_event_time": "eventTime may be at most 24 h ahead of annex's clock",
        "too_many_datasets": "at most 1,000 inputs and outputs per event",
    }
    payload: dict[str, Any] = {
        "error": rejected.message,
        "reason": rejected.reason,
        "retriable": rejected.retriable,
    }
    if rejected.path:
        payload["path"] = rejected.path
    if not batch and rejected.index is not None:
        payload["index"] = rejected.index
    hint = hints.get(rejected.reason)
    if hint:
        payload["hint"] = hint
    return payload

"""The telemetry collection: DCGM series from the exporters or from Prometheus, as Arrow.

Two paths, one output. ``collect_exporters`` scrapes each exporter's ``/metrics``
(``source='scrape'``); ``collect_prometheus`` reads the same series back from Prometheus'
range API (``source='query_range'``). Both yield ``(table, RecordBatch)`` pairs:

* ``telemetry_series``: one row per series (GPU, metric, label set) the first time it is seen,
  always before any sample that references it. Names are mapped through ``fields`` to the
  canonical metric and unit; the well-known labels become columns, the rest stay in ``labels``.
* ``telemetry_samples``: ``(ts, series_index, value)`` in the canonical unit. NaN and +-Inf
  are skipped and counted; DCGM's blank sentinels (``blanks``: no reading) are skipped and
  counted as missing (``telemetry_targets.blank_values``); counters are stored as received (a
  reset survives unchanged: the warehouse turns counters into increases).
* ``telemetry_extents``: per series that had samples, its first and last sample time and its
  sample count over the whole collection, once, after the last samples batch (``Extents``).
  The warehouse keeps each series' watermark from it instead of rescanning what it loaded.
* ``telemetry_targets``: one row per exporter scraped or Prometheus window read, last.
* ``rejected``: an unparsable exposition (the whole target, with the parser's message) and
  series without a GPU UUID (``missing_gpu_uuid``).

Workload labels (``attribution``): ``exported_*`` (Prometheus renamed the exporter's labels,
``honorLabels: false``), ``pod_name``/``pod_namespace``/``container_name``
(``--use-old-namespace``), or ``pod``/``namespace``/``container`` unless they are the scrape
target's own (``honorLabels: true`` on a line without workload; Prometheus' ``up`` series say
which pod each target is). The exporter's own pod is never a workload. Empty values are NULL.

Shared GPUs (dcgm-exporter 4.8+ ``--kubernetes-virtual-gpus``, time-slicing or MPS): the
exporter prints the GPU's device-level line (no workload) *and* one line per pod sharing it. The
device-level line is the GPU's value; a pod line of a metric whose device-level line is also
present is that pod's *share* (``pod_share`` true), which the utilisation marts never add to
the GPU's own figures. (Before 4.8 the mode printed a copy of the device value per pod and no
device-level line: copies, which the marts average per GPU, never sum.)

Per-link series (NVLink) name the GPU ``gpu_uuid``/``model_name`` in some versions: read as
``UUID``/``modelName``; their ``link`` label (or a name ending ``_L<n>``) becomes the ``link``
column, part of the series identity.

A failed exporter (connection, HTTP status, unparsable body) never aborts the others. A
failed Prometheus query aborts the collection with a ``CollectionError`` carrying
Prometheus' ``errorType``/``error``: the warehouse then keeps nothing of it.
"""

from __future__ import annotations

import logging
import re
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc

from annex.errors import CollectionError
from annex.settings import Settings
from collectors.telemetry import attribution, fields, schema
from collectors.telemetry.attribution import ExporterPods
from collectors.telemetry.blanks import blank_mask
from collectors.telemetry.exposition import ExpositionError, parse
from collectors.telemetry.query_range import (
    FetchError,
    Matrix,
    PrometheusClient,
    PrometheusError,
    TooLarge,
    Window,
    epoch,
    fetch,
    field_queries,
    plan_windows,
    prometheus_error,
    redact,
)

log = logging.getLogger(__name__)

TARGETS_QUERY = 'up{pod!=""}'
"""Every scrape target that is a Kubernetes pod, with its own labels (``attribution``); read
once per collection through ``/api/v1/series`` (label sets, no samples)."""
RAW_CAP = 64 * 1024
"""At most this much of a rejected body is kept as ``raw``."""
MAX_PARALLEL_SCRAPES = 16
SCRAPE_ACCEPT = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

_CONSUMED = {
    *fields.UUID_LABELS,
    *fields.MODEL_LABELS,
    *fields.LINK_LABELS,
    "gpu",
    "pci_bus_id",
    "device",
    "GPU_I_PROFILE",
    "GPU_I_ID",
    "__name__",
    *fields.HOSTNAME_LABELS,
    *fields.DRIVER_VERSION_LABELS,
}


@dataclass
class TargetRecord:
    """One exporter scraped or one Prometheus window read: a ``telemetry_targets`` row."""

    target: str
    source: str
    started_at: datetime
    duration_ms: float = 0.0
    http_status: int | None = None
    status: str = "ok"
    error: str | None = None
    series: int = 0
    samples: int = 0
    skipped_nan: int = 0
    unknown_metrics: int = 0
    non_dcgm_metrics: int = 0
    blank_values: int = 0


@dataclass
class Rejection:
    locator: str
    reason_code: str
    message: str
    raw: bytes


@dataclass
class _Stats:
    series: set[int] = field(default_factory=set)
    samples: int = 0
    skipped: int = 0
    blank: int = 0
    unknown: set[str] = field(default_factory=set)
    non_dcgm: set[str] = field(default_factory=set)

    def add_to(self, record: TargetRecord) -> None:
        record.series += len(self.series)
        record.samples += self.samples
        record.skipped_nan += self.skipped
        record.blank_values += self.blank
        record.unknown_metrics += len(self.unknown)
        record.non_dcgm_metrics += len(self.non_dcgm)


class Extents:
    """First and last sample time and sample count per series, over one whole collection.

    Each samples batch adds its runs (consecutive samples of one series: a series' points in a
    Prometheus matrix, one point per series in a scrape); a run's first and last element are its
    extremes when its times ascend (Prometheus returns them so; it is checked), otherwise the
    batch counts sample by sample. Runs are folded per series once they outnumber twice the
    series folded last time, so memory stays proportional to the series, not to the samples.
    """

    FOLD_ROWS = 65_536

    def __init__(self) -> None:
        self.parts: list[pa.Table] = []
        self.rows = 0
        self.fold_at = self.FOLD_ROWS

    def add(self, samples: pa.RecordBatch | pa.Table) -> None:
        if samples.num_rows == 0:
            return
        part = _runs(samples.column("series_index"), samples.column("ts"))
        self.parts.append(part)
        self.rows += part.num_rows
        if self.rows >= self.fold_at:
            self._fold()
            self.fold_at = max(self.FOLD_ROWS, 2 * self.rows)

    def batch(self) -> pa.RecordBatch | None:
        """One row per series that had samples, in ``series_index`` order; None if none had."""
        if not self.parts:
            return None
        self._fold()
        table = self.parts[0].sort_by("series_index")
        return pa.RecordBatch.from_arrays(
            [table.column(name).combine_chunks() for name in schema.EXTENTS.names],
            schema=schema.EXTENTS,
        )

    def _fold(self) -> None:
        folded = (
            pa.concat_tables(self.parts)
            .group_by("series_index", use_threads=False)
            .aggregate([("first_ts", "min"), ("last_ts", "max"), ("samples", "sum")])
        )
        columns = ["series_index", "first_ts_min", "last_ts_max", "samples_sum"]
        self.parts = [pa.table([folded.column(c) for c in columns], schema=schema.EXTENTS)]
        self.rows = folded.num_rows


def _runs(index: pa.Array | pa.ChunkedArray, ts: pa.Array | pa.ChunkedArray) -> pa.Table:
    """``(series_index, first_ts, last_ts, samples)`` per run of one series whose times ascend,
    or per sample when a run's times do not ascend (or every run is one sample)."""
    if isinstance(index, pa.ChunkedArray):
        index = index.combine_chunks()
    if isinstance(ts, pa.ChunkedArray):
        ts = ts.combine_chunks()
    encoded = pc.run_end_encode(index, run_end_type=pa.int64())
    ends = encoded.run_ends
    if len(ends) < len(index):
        ascending = pc.or_(pc.less_equal(ts[:-1], ts[1:]), pc.not_equal(index[:-1], index[1:]))
        if pc.all(ascending).as_py():
            starts = pa.concat_arrays([pa.array([0], pa.int64()), ends[:-1]])
            return pa.table(
                [
                    encoded.values,
                    pc.take(ts, starts),
                    pc.take(ts, pc.subtract(ends, 1)),
                    pc.subtract(ends, starts),
                ],
                schema=schema.EXTENTS,
            )
    ones = pa.repeat(pa.scalar(1, pa.int64()), len(index))
    return pa.table([index, ts, ts, ones], schema=schema.EXTENTS)


class SeriesTable:
    """Series seen so far in one collection: dense indexes, the rows not yet yielded, the
    extents of their samples, the scrape targets' own pods and the GPUs' device-level lines."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.index: dict[tuple, tuple[int, float]] = {}
        self.rejected: set[tuple] = set()
        self.columns: dict[str, list] = {name: [] for name in schema.SERIES.names}
        self.extents = Extents()
        self.exporters = ExporterPods()
        self.device_lines: set[tuple] = set()
        """``device_group`` of every series without a workload (a GPU's device-level line)."""

    def __len__(self) -> int:
        return len(self.index)

    def intern(
        self,
        name: str,
        labels: dict[str, str],
        declared_type: str | None,
        target: str,
        row: dict[str, object] | None = None,
        key: tuple | None = None,
    ) -> tuple[int, float] | None:
        """``(series_index, divisor)``; None when the series has no GPU UUID.

        ``row`` is ``normalise(labels, ...)`` and ``key`` the series' key when the caller
        already has them.
        """
        if key is None:
            key = (name, tuple(sorted(labels.items())))
        hit = self.index.get(key)
        if hit is not None:
            return hit
        uuid = _first(labels, fields.UUID_LABELS)
        if not uuid:
            return None
        resolved = fields.resolve(name, declared_type)
        if row is None:
            row = normalise(labels, self.source, self.exporters, name)
        group = device_group(name, uuid, row)
        if row["pod"] is None and row["namespace"] is None:
            self.device_lines.add(group)
            share = False
        else:
            share = group in self.device_lines
        n = len(self.index)
        c = self.columns
        c["series_index"].append(n)
        c["gpu_uuid"].append(uuid)
        c["field_id"].append(resolved.field_id)
        c["metric"].append(resolved.metric)
        c["unit"].append(resolved.unit)
        c["kind"].append(resolved.kind)
        c["exporter_metric"].append(name)
        for column in (
            "hostname",
            "gpu_index",
            "model_name",
            "pci_bus_id",
            "device",
            "pod",
            "namespace",
            "container",
            "mig_profile",
            "mig_instance",
            "driver_version",
            "link",
            "labels",
        ):
            c[column].append(row[column])
        c["pod_share"].append(share)
        c["source"].append(self.source)
        c["target"].append(target)
        self.index[key] = (n, resolved.divisor)
        return n, resolved.divisor

    def flush(self) -> pa.RecordBatch | None:
        """The rows interned since the last flush, or None."""
        if not self.columns["series_index"]:
            return None
        batch = pa.RecordBatch.from_pydict(self.columns, schema=schema.SERIES)
        self.columns = {name: [] for name in schema.SERIES.names}
        return batch


def device_group(name: str, uuid: str, row: dict[str, object]) -> tuple:
    """What a GPU's device-level line and its pods' share lines have in common."""
    return (name, uuid, row["hostname"], row["mig_profile"], row["mig_instance"], row["link"])


def _first(labels: dict[str, str], names: Sequence[str]) -> str | None:
    for name in names:
        value = labels.get(name)
        if value:
            return value
    return None


_LINK_SUFFIX = re.compile(r"_L([0-9]+)$")


def normalise(
    labels: dict[str, str],
    source: str,
    exporters: ExporterPods | None = None,
    name: str = "",
) -> dict[str, object]:
    """The label columns of a series and the labels left over (see the module docstring)."""
    (pod, namespace, container), consumed = attribution.workload(labels, source, exporters)
    rest = {k: v for k, v in labels.items() if k not in _CONSUMED and k not in consumed}
    link = _first(labels, fields.LINK_LABELS)
    if link is None and (suffix := _LINK_SUFFIX.search(name)) is not None:
        link = suffix.group(1)
    return {
        "hostname": _first(labels, fields.HOSTNAME_LABELS),
        "gpu_index": _int(labels.get("gpu")),
        "model_name": _first(labels, fields.MODEL_LABELS),
        "pci_bus_id": _first(labels, ("pci_bus_id",)),
        "device": _first(labels, ("device",)),
        "pod": pod,
        "namespace": namespace,
        "container": container,
        "mig_profile": _first(labels, ("GPU_I_PROFILE",)),
        "mig_instance": _int(labels.get("GPU_I_ID")),
        "driver_version": _first(labels, fields.DRIVER_VERSION_LABELS),
        "link": link,
        "labels": sorted(rest.items()),
    }


def _int(text: str | None) -> int | None:
    if text is None or not text.strip().lstrip("-").isdigit():
        return None
    value = int(text)
    return value if -(2**31) <= value < 2**31 else None


def _series_text(name: str, labels: dict[str, str]) -> str:
    body = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "__name__")
    return f"{name}{{{body}}}"


def _renamed(labels: dict[str, str]) -> bool:
    """Prometheus renamed the exporter's workload labels: ``pod``... are the target's own."""
    return any(name in labels for name in attribution.EXPORTED)


def _prepare(
    table: SeriesTable, names: Sequence[str], labels: Sequence[dict[str, str]]
) -> list[tuple[tuple | None, dict[str, object] | None]]:
    """``(key, normalised row)`` of each new DCGM series of a block (``(key, None)`` for known
    ones, ``(None, None)`` for other families), after learning every target's own pod from the
    block's renamed lines and registering the GPUs' device-level lines: whether a pod line is a
    share depends on the whole block."""
    keys: list[tuple | None] = []
    for name, lab in zip(names, labels, strict=True):
        key = (name, tuple(sorted(lab.items()))) if fields.is_dcgm(name) else None
        keys.append(key)
        if key is not None and key not in table.index and _renamed(lab):
            table.exporters.add_target(lab)
    out: list[tuple[tuple | None, dict[str, object] | None]] = []
    for key, name, lab in zip(keys, names, labels, strict=True):
        row = None
        if key is not None and key not in table.index:
            row = normalise(lab, table.source, table.exporters, name)
            uuid = _first(lab, fields.UUID_LABELS)
            if uuid and row["pod"] is None and row["namespace"] is None:
                table.device_lines.add(device_group(name, uuid, row))
        out.append((key, row))
    return out


def build_samples(
    table: SeriesTable,
    target: str,
    names: Sequence[str],
    labels: Sequence[dict[str, str]],
    declared: Sequence[str | None],
    counts: Sequence[int],
    times: pa.Array,
    values: pa.Array,
    rejections: list[Rejection],
) -> tuple[pa.RecordBatch | None, pa.RecordBatch, _Stats]:
    """Normalise a block of series (``counts[i]`` consecutive points each) into batches.

    ``times`` are epoch seconds and ``values`` as received (float64). Returns the new series
    rows (or None), the samples batch, and the counts for ``telemetry_targets``.
    """
    stats = _Stats()
    index_col: list[int] = []
    divisor_col: list[float] = []
    keep: list[bool] = []
    prepared = _prepare(table, names, labels)
    for name, series_labels, kind, n, (key, row) in zip(
        names, labels, declared, counts, prepared, strict=True
    ):
        ok = False
        idx, divisor = 0, 1.0
        if not fields.is_dcgm(name):
            stats.non_dcgm.add(name)
        else:
            hit = table.intern(name, series_labels, kind, target, row, key)
            if hit is None:
                if key not in table.rejected:
                    table.rejected.add(key)
                    text = _series_text(name, series_labels)
                    rejections.append(
                        Rejection(
                            f"{target} {text}"[:2000],
                            "missing_gpu_uuid",
                            f"series {name} from {target} has no UUID label, so it cannot be "
                            "tied to a GPU (NVSwitch, CPU or a relabelled series?)",
                            text.encode()[:RAW_CAP],
                        )
                    )
            else:
                ok = True
                idx, divisor = hit
                stats.series.add(idx)
                if fields.BY_NAME.get(name) is None:
                    stats.unknown.add(name)
        index_col += [idx] * n
        divisor_col += [divisor] * n
        keep += [ok] * n
    canonical = pc.divide(values, pa.array(divisor_col, pa.float64()))
    finite = pc.is_finite(canonical)
    keep_arr = pa.array(keep, pa.bool_())
    stats.skipped = pc.sum(pc.and_(keep_arr, pc.invert(finite))).as_py() or 0
    keep_arr = pc.and_(keep_arr, finite)
    blank = blank_mask(values)
    stats.blank = pc.sum(pc.and_(keep_arr, blank)).as_py() or 0
    mask = pc.and_(keep_arr, pc.invert(blank))
    ts = pc.cast(pc.round(pc.multiply(times, 1_000_000.0)), pa.int64()).cast(schema.TIMESTAMP)
    samples = pa.RecordBatch.from_arrays(
        [
            pc.filter(ts, mask),
            pc.filter(pa.array(index_col, pa.uint32()), mask),
            pc.filter(canonical, mask),
        ],
        schema=schema.SAMPLES,
    )
    stats.samples = samples.num_rows
    table.extents.add(samples)
    return table.flush(), samples, stats


# -- scraping --------------------------------------------------------------------------------


@dataclass
class ScrapeResult:
    series: pa.RecordBatch | None
    samples: pa.RecordBatch | None
    rejections: list[Rejection]
    stats: _Stats | None
    error: str | None  # the parser's message when the body is unparsable


def read_scrape(
    body: bytes, target: str, scrape_time: datetime, table: SeriesTable
) -> ScrapeResult:
    """One exporter body into batches (pure: no I/O). Unparsable -> one rejection, no rows."""
    rejections: list[Rejection] = []
    try:
        text = body.decode("utf-8")
        parsed = parse(text)
    except (UnicodeDecodeError, ExpositionError) as exc:
        message = f"exposition from {target} cannot be parsed: {exc}"
        rejections.append(
            Rejection(target, "unparsable_exposition", message, bytes(body[:RAW_CAP]))
        )
        return ScrapeResult(None, None, rejections, None, str(exc))
    default_ts = epoch(scrape_time)
    times = [default_ts if s.timestamp is None else s.timestamp for s in parsed]
    batch_series, samples, stats = build_samples(
        table,
        target,
        [s.name for s in parsed],
        [s.labels for s in parsed],
        [s.declared_type for s in parsed],
        [1] * len(parsed),
        pa.array(times, pa.float64()),
        pa.array([s.value for s in parsed], pa.float64()),
        rejections,
    )
    return ScrapeResult(batch_series, samples, rejections, stats, None)


def _scrape(url: str, settings: Settings, now: datetime | None) -> tuple:
    started = datetime.now(UTC)
    clock = time.perf_counter()
    try:
        response = fetch(
            url,
            timeout=settings.telemetry.request_timeout_seconds,
            max_bytes=settings.telemetry.max_response_bytes,
            accept=SCRAPE_ACCEPT,
        )
    except FetchError as error:
        return started, time.perf_counter() - clock, error, None, None
    return started, time.perf_counter() - clock, None, response, now or datetime.now(UTC)


def collect_exporters(
    urls: Sequence[str],
    cluster: str,
    settings: Settings,
    *,
    now: datetime | None = None,
    on_target: Callable[[TargetRecord], None] | None = None,
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Scrape every exporter URL (up to 16 at a time) and yield the telemetry tables.

    ``now`` fixes the scrape time given to samples without a timestamp (default: when each
    response arrived). ``on_target`` is called with each target's row as it completes.
    """
    table = SeriesTable("scrape")
    records: list[TargetRecord] = []
    rejections: list[Rejection] = []
    workers = max(1, min(MAX_PARALLEL_SCRAPES, len(urls)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="scrape") as pool:
        outcomes = _in_order(pool, urls, lambda u: _scrape(u, settings, now), 2 * workers)
        for url, (started, seconds, error, response, scraped_at) in outcomes:
            target = redact(url)
            record = TargetRecord(target, "scrape", _naive(started), duration_ms=seconds * 1000)
            if error is not None:
                record.status, record.http_status = "failed", error.status
                record.error = f"{error.message}" + _detail(error.body)
            else:
                record.http_status = response.status
                clock = time.perf_counter()
                result = read_scrape(response.body, target, scraped_at, table)
                record.duration_ms += (time.perf_counter() - clock) * 1000
                rejections.extend(result.rejections)
                if result.error is not None:
                    record.status = "failed"
                    record.error = f"unparsable exposition: {result.error}"
                else:
                    assert result.stats is not None and result.samples is not None
                    result.stats.add_to(record)
                    if result.series is not None:
                        yield "telemetry_series", result.series
                    if result.samples.num_rows:
                        yield "telemetry_samples", result.samples
            _say_blank(record)
            records.append(record)
            if on_target is not None:
                on_target(record)
    extents = table.extents.batch()
    if extents is not None:
        yield "telemetry_extents", extents
    yield "telemetry_targets", targets_batch(records)
    if rejections:
        yield "rejected", rejected_batch(rejections)


def _in_order(
    pool: ThreadPoolExecutor, items: Sequence[str], work: Callable[[str], tuple], ahead: int
) -> Iterator[tuple[str, tuple]]:
    """``(item, work(item))`` in order, at most ``ahead`` in flight: bodies waiting to be
    parsed stay bounded whatever the number of exporters."""
    pending: deque[tuple[str, Future[tuple]]] = deque()
    try:
        for item in items:
            pending.append((item, pool.submit(work, item)))
            if len(pending) >= ahead:
                done, future = pending.popleft()
                yield done, future.result()
        while pending:
            done, future = pending.popleft()
            yield done, future.result()
    finally:
        for _item, future in pending:
            future.cancel()


def _say_blank(record: TargetRecord) -> None:
    """Missing readings are said, not silently dropped (also in telemetry_targets)."""
    if record.blank_values:
        log.warning(
            "%s: %d samples were DCGM blank sentinels (no reading: blank, not found, not "
            "supported or not permissioned) and count as missing, not as readings",
            record.target,
            record.blank_values,
        )


def _detail(body: bytes) -> str:
    text = body[:200].decode("utf-8", "replace").strip()
    return f": {text}" if text else ""


# -- Prometheus ------------------------------------------------------------------------------


def read_matrix(
    matrix: Matrix, table: SeriesTable, target: str, rejections: list[Rejection]
) -> tuple[pa.RecordBatch | None, pa.RecordBatch, _Stats]:
    """A decoded range-query result into batches (pure)."""
    names = [m.pop("__name__", "") for m in matrix.metrics]
    try:
        values = pc.cast(matrix.values, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise CollectionError(
            f"Prometheus {target} answered a sample value that is not a number ({exc})"
        ) from None
    return build_samples(
        table,
        target,
        names,
        matrix.metrics,
        [None] * len(names),
        matrix.counts,
        matrix.times,
        values,
        rejections,
    )


def _read_window(client: PrometheusClient, query: str, window: Window) -> Iterator[Matrix]:
    """The matrix of one query over one window, halving the window while it is too large."""
    try:
        yield client.query_range(query, window.start, window.end, window.step)
    except TooLarge as error:
        if window.points <= 1:
            raise prometheus_error(client.target, error) from None
        for half in window.halves():
            yield from _read_window(client, query, half)


def collect_prometheus(
    url: str,
    cluster: str,
    settings: Settings,
    *,
    start: datetime,
    end: datetime,
    token: str | None = None,
    basic_auth: tuple[str, str] | None = None,
    on_window: Callable[[TargetRecord], None] | None = None,
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Read every DCGM series in ``[start, end)`` at ``telemetry.step_seconds`` resolution.

    ``token`` (bearer) or ``basic_auth`` (``(user, password)``, Prometheus' own
    ``--web.config.file``) authenticate the queries; both at once is a ``CollectionError``.
    Raises ``CollectionError`` (``PrometheusError`` with Prometheus' ``errorType``/``error``
    when it refused a query); the consumer then discards what it received.
    """
    tel = settings.telemetry
    client = PrometheusClient(
        url,
        token=token,
        basic_auth=basic_auth,
        timeout=tel.request_timeout_seconds,
        max_response_bytes=tel.max_response_bytes,
    )
    windows = plan_windows(
        epoch(start), epoch(end), float(tel.step_seconds), tel.max_points_per_series
    )
    queries = field_queries()
    table = SeriesTable("query_range")
    records: list[TargetRecord] = []
    rejections: list[Rejection] = []
    if windows:
        try:
            targets = client.series(TARGETS_QUERY, windows[0].start, windows[-1].end)
        except PrometheusError as exc:
            raise _of_cluster(cluster, exc) from exc
        for labels in targets:  # which pod each scrape target is (attribution)
            table.exporters.add_target(labels)
    for window in windows:
        record = TargetRecord(client.target, "query_range", _naive(datetime.now(UTC)))
        clock = time.perf_counter()
        stats = _Stats()
        try:
            for _label, query in queries:
                for matrix in _read_window(client, query, window):
                    record.http_status = matrix.http_status
                    series, samples, part = read_matrix(matrix, table, client.target, rejections)
                    stats.series |= part.series
                    stats.samples += part.samples
                    stats.skipped += part.skipped
                    stats.blank += part.blank
                    stats.unknown |= part.unknown
                    if series is not None:
                        yield "telemetry_series", series
                    if samples.num_rows:
                        yield "telemetry_samples", samples
        except PrometheusError as exc:
            raise _of_cluster(cluster, exc) from exc
        except CollectionError as exc:
            raise CollectionError(f"cluster {cluster}: {exc.message}", hint=exc.hint) from exc
        stats.add_to(record)
        record.duration_ms = (time.perf_counter() - clock) * 1000
        _say_blank(record)
        records.append(record)
        if on_window is not None:
            on_window(record)
    extents = table.extents.batch()
    if extents is not None:
        yield "telemetry_extents", extents
    yield "telemetry_targets", targets_batch(records)
    if rejections:
        yield "rejected", rejected_batch(rejections)


# -- batches ---------------------------------------------------------------------------------


def _of_cluster(cluster: str, exc: PrometheusError) -> PrometheusError:
    """``exc`` with the cluster named first (one Prometheus may serve several clusters)."""
    return PrometheusError(
        f"cluster {cluster}: {exc.message}",
        status=exc.status,
        error_type=exc.error_type,
        error=exc.error,
        hint=exc.hint,
    )


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None)


def targets_batch(records: Sequence[TargetRecord]) -> pa.RecordBatch:
    columns = {name: [getattr(r, name) for r in records] for name in schema.TARGETS.names}
    return pa.RecordBatch.from_pydict(columns, schema=schema.TARGETS)


def rejected_batch(rejections: Sequence[Rejection]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "locator": [r.locator for r in rejections],
            "reason_code": [r.reason_code for r in rejections],
            "message": [r.message for r in rejections],
            "raw": [r.raw for r in rejections],
        },
        schema=schema.REJECTED,
    )


__all__ = [
    "Extents",
    "SeriesTable",
    "TargetRecord",
    "collect_exporters",
    "collect_prometheus",
    "normalise",
    "read_matrix",
    "read_scrape",
]

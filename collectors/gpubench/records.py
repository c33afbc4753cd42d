"""Validate one benchmark record line: a pure function from bytes to a measurement or a reason.

A probe pod prints one JSON object per measurement (record format: reference §5.1,
``schema_version`` 1). Nothing in a record is taken on trust that annex can recompute: the
work (``flops``/``bytes``) comes from ``probes.gpubench.work.work`` and must agree with the
record's own claim within 1 % (a record that claims a different amount of work than its shape
does is not trustworthy), throughput is recomputed from ``ms_p50``, the SKU from the GPU's
product name (``sku_for``), the peak and the fractions from ``peak_for``. A record faster than
the dense peak × ``peak_tolerance`` is physically impossible and rejected.

Parsing is ``msgspec`` into a ``Record`` Struct with strict types (an ``int`` field refuses
``2.0``, a ``str`` field refuses ``1``; a float field accepts an integer); extra fields are
allowed (simulated records carry ``"simulated": true``; a newer harness may add fields).
JSON has no NaN or Infinity: a harness that writes Python's ``NaN``/``Infinity`` tokens, or a
number that overflows a double (``1e400``), gets ``not_finite`` naming the field rather than
``malformed_json``, because that is what went wrong.

Checks run in a fixed order and the first failure is the line's one reason:
``line_too_long`` → ``malformed_json`` / ``not_an_object`` / ``not_finite`` →
``unsupported_schema_version`` → ``schema_violation`` → ``not_finite`` → ``negative_value`` →
``quantiles_out_of_order`` → ``wrong_pod`` → ``wrong_node`` → ``unknown_benchmark`` →
``schema_violation`` (shape/dtype that ``work`` refuses) → ``work_mismatch`` → ``above_peak``.
Duplicates (``duplicate_record``) need the whole collection and are the collector's business.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import msgspec

from probes.gpubench.peaks import peak_for, sku_for
from probes.gpubench.work import BENCHMARKS, MEMORY_BOUND, Work, work

SCHEMA_VERSION = 1
WORK_TOLERANCE = 0.01
"""A record's ``flops``/``bytes`` may differ from the recomputed work by at most this fraction."""

REASONS = (
    "malformed_json",
    "not_an_object",
    "line_too_long",
    "unsupported_schema_version",
    "schema_violation",
    "not_finite",
    "negative_value",
    "quantiles_out_of_order",
    "work_mismatch",
    "above_peak",
    "wrong_node",
    "wrong_pod",
    "unknown_benchmark",
    "duplicate_record",
    "log_unavailable",
)
"""Every reason code the gpubench collector gives (the last two come from ``collect``)."""

_INT32_MAX = 2**31 - 1
AwareDatetime = Annotated[datetime, msgspec.Meta(tz=True)]
Index = Annotated[int, msgspec.Meta(ge=0, le=_INT32_MAX)]
Size = Annotated[int, msgspec.Meta(ge=1)]
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


class Record(msgspec.Struct, frozen=True, gc=False):
    """One line of the record format as the probe writes it (reference §5.1).

    Required: what identifies the measurement and what annex recomputes from. Derived fields
    (``gpu_sku``, ``achieved_*``, ``peak_*``, ``frac_*``) are optional and ignored.
    """

    schema_version: int
    record_id: NonEmpty
    ts: AwareDatetime
    namespace: NonEmpty
    job: NonEmpty
    pod: NonEmpty
    node: NonEmpty
    gpu_index: Index
    backend: Literal["cuda", "hip", "interpreter"]
    benchmark: NonEmpty
    kernel: str
    shape: dict[str, Size]
    dtype: NonEmpty
    ms_p20: float | None
    """NULL only in a record of a failed correctness check (``correct`` false): never timed."""
    ms_p50: float | None
    ms_p80: float | None
    flops: float
    bytes: float
    correct: bool
    cluster: str | None = None
    gpu_uuid: str | None = None
    """Required unless ``backend`` is ``interpreter`` (checked after decoding)."""
    gpu_model: str | None = None
    """Required unless ``backend`` is ``interpreter`` (checked after decoding)."""
    gpu_sku: str | None = None
    driver_version: str | None = None
    triton_version: str | None = None
    torch_version: str | None = None
    kernel_config: dict[str, Any] | None = None
    timer: str | None = None
    warmup_ms: float | None = None
    rep_ms: float | None = None
    l2_flush: bool | None = None
    n_samples: Index | None = None
    achieved_tflops: float | None = None
    achieved_gbps: float | None = None
    peak_tflops: float | None = None
    peak_gbps: float | None = None
    peak_source: str | None = None
    frac_peak_flops: float | None = None
    frac_peak_bw: float | None = None
    simulated: bool = False


class Measurement(msgspec.Struct, frozen=True, gc=False):
    """An accepted record with annex's recomputed values: the ``gpubench_records`` columns
    except ``pod_uid`` and ``locator``, which the collector adds from the pod."""

    record_id: str
    schema_version: int
    ts: datetime
    """Naive UTC."""
    namespace: str
    job: str
    pod: str
    node: str
    gpu_index: int
    gpu_uuid: str | None
    gpu_model: str | None
    gpu_sku: str | None
    driver_version: str | None
    backend: str
    triton_version: str | None
    torch_version: str | None
    benchmark: str
    kernel: str
    kernel_config: str | None
    """JSON text, keys sorted."""
    shape: str
    """JSON text, keys sorted."""
    dtype: str
    timer: str | None
    warmup_ms: float | None
    rep_ms: float | None
    l2_flush: bool | None
    n_samples: int | None
    ms_p20: float | None
    ms_p50: float | None
    ms_p80: float | None
    """The timings are NULL in records of kernels that failed their correctness check."""
    flops: float
    bytes: float
    achieved_tflops: float | None
    achieved_gbps: float | None
    peak_tflops: float | None
    peak_gbps: float | None
    peak_source: str | None
    frac_peak_flops: float | None
    """NULL without a peak, and for memory-bound benchmarks (judged by bandwidth)."""
    frac_peak_bw: float | None
    correct: bool
    simulated: bool


MEASUREMENT_FIELDS: tuple[str, ...] = Measurement.__struct_fields__


@dataclass(frozen=True)
class Rejected:
    """Why a line is not a usable record; ``message`` names the field."""

    reason_code: str
    message: str


@dataclass(frozen=True)
class LineContext:
    """The pod a line was read from (None skips that check) and the limits to apply."""

    namespace: str | None = None
    pod: str | None = None
    node: str | None = None
    """The pod's ``spec.nodeName``."""
    peak_tolerance: float = 1.05
    max_line_bytes: int = 64 * 1024


class _Version(msgspec.Struct):
    schema_version: Any = None


_DECODER = msgspec.json.Decoder(Record)
_VERSION_DECODER = msgspec.json.Decoder(_Version)
_ENCODER = msgspec.json.Encoder(order="sorted")
_TIMINGS = ("ms_p20", "ms_p50", "ms_p80")
_FINITE = (*_TIMINGS, "flops", "bytes", "warmup_ms", "rep_ms")


def validate_line(line: bytes, context: LineContext | None = None) -> Measurement | Rejected:
    """Parse and check one record line (without its newline); pure and deterministic."""
    context = context or LineContext()
    if len(line) > context.max_line_bytes:
        return Rejected(
            "line_too_long",
            f"the line is {len(line)} bytes, more than gpubench.max_line_bytes "
            f"({context.max_line_bytes})",
        )
    try:
        record = _DECODER.decode(line)
    except msgspec.ValidationError as exc:
        return _schema_problem(line, str(exc))
    except msgspec.DecodeError as exc:
        return _not_json(line, str(exc))
    if record.schema_version != SCHEMA_VERSION:
        return _unsupported(record.schema_version)
    return _check(record, context)


def _check(record: Record, context: LineContext) -> Measurement | Rejected:
    if record.backend != "interpreter":
        for name in ("gpu_uuid", "gpu_model"):
            if not getattr(record, name):
                return Rejected(
                    "schema_violation",
                    f"`{name}` is required for backend {record.backend!r} (the GPU measured)",
                )
    for name in _FINITE:
        value = getattr(record, name)
        if value is not None and not math.isfinite(value):
            return Rejected("not_finite", f"`{name}` is {value}, not a finite number")
    untimed = all(getattr(record, name) is None for name in _TIMINGS)
    if untimed and record.correct:
        return Rejected(
            "schema_violation",
            "`ms_p20`/`ms_p50`/`ms_p80` are null, but only a record with `correct` false (a "
            "kernel that failed its check and was not timed) may lack timings",
        )
    for name in _TIMINGS:
        value = getattr(record, name)
        if value is None and not untimed:
            return Rejected("schema_violation", f"`{name}` is null while other timings are set")
        if value is not None and value <= 0:
            return Rejected("negative_value", f"`{name}` is {value} ms; timings must be > 0")
    for name in ("warmup_ms", "rep_ms", "flops", "bytes"):
        value = getattr(record, name)
        if value is not None and value < 0:
            return Rejected("negative_value", f"`{name}` is {value}; it must be >= 0")
    if not untimed and not record.ms_p20 <= record.ms_p50 <= record.ms_p80:  # type: ignore[operator]
        return Rejected(
            "quantiles_out_of_order",
            f"`ms_p20` <= `ms_p50` <= `ms_p80` does not hold: "
            f"{record.ms_p20}, {record.ms_p50}, {record.ms_p80}",
        )
    if context.pod is not None and record.pod != context.pod:
        return Rejected(
            "wrong_pod", f"`pod` is {record.pod!r} but the line was read from pod {context.pod!r}"
        )
    if context.namespace is not None and record.namespace != context.namespace:
        return Rejected(
            "wrong_pod",
            f"`namespace` is {record.namespace!r} but the line was read from a pod in "
            f"namespace {context.namespace!r}",
        )
    if context.node is not None and record.node != context.node:
        return Rejected(
            "wrong_node",
            f"`node` is {record.node!r} but the pod ran on node {context.node!r} "
            "(its spec.nodeName)",
        )
    if record.benchmark not in BENCHMARKS:
        return Rejected(
            "unknown_benchmark",
            f"`benchmark` {record.benchmark!r} is not one of {', '.join(BENCHMARKS)}",
        )
    try:
        expected = work(record.benchmark, record.shape, record.dtype)
    except ValueError as exc:
        return Rejected("schema_violation", f"`shape`/`dtype`: {exc}")
    for name, claimed, recomputed in (
        ("flops", record.flops, expected.flops),
        ("bytes", record.bytes, expected.bytes),
    ):
        if abs(claimed - recomputed) > WORK_TOLERANCE * recomputed:
            return Rejected(
                "work_mismatch",
                f"`{name}` is {claimed:.6g} but {record.benchmark} {record.dtype} at shape "
                f"{dict(record.shape)} does {recomputed:.6g} (more than "
                f"{WORK_TOLERANCE:.0%} apart)",
            )
    gpu_sku = sku_for(record.gpu_model)
    peak_tflops, peak_gbps, peak_source = peak_for(gpu_sku, record.dtype)
    if untimed:
        return _measurement(
            record, expected, gpu_sku, None, None, peak_tflops, peak_gbps, peak_source
        )
    seconds = record.ms_p50 * 1e-3  # type: ignore[operator]
    achieved_tflops = expected.flops / seconds / 1e12
    achieved_gbps = expected.bytes / seconds / 1e9
    tolerance = context.peak_tolerance
    if peak_tflops is not None and achieved_tflops > peak_tflops * tolerance:
        return Rejected(
            "above_peak",
            f"achieved {achieved_tflops:.1f} TFLOP/s is above the dense peak {peak_tflops:g} "
            f"TFLOP/s of {gpu_sku} for {record.dtype} × tolerance {tolerance:g} "
            "(`flops`/`ms_p50`)",
        )
    if peak_gbps is not None and achieved_gbps > peak_gbps * tolerance:
        return Rejected(
            "above_peak",
            f"achieved {achieved_gbps:.1f} GB/s is above the HBM peak {peak_gbps:g} GB/s of "
            f"{gpu_sku} ({record.dtype}) × tolerance {tolerance:g} (`bytes`/`ms_p50`)",
        )
    return _measurement(
        record,
        expected,
        gpu_sku,
        achieved_tflops,
        achieved_gbps,
        peak_tflops,
        peak_gbps,
        peak_source,
    )


def _measurement(
    record: Record,
    expected: Work,
    gpu_sku: str | None,
    achieved_tflops: float | None,
    achieved_gbps: float | None,
    peak_tflops: float | None,
    peak_gbps: float | None,
    peak_source: str | None,
) -> Measurement:
    frac_flops = None
    if peak_tflops and achieved_tflops is not None and record.benchmark not in MEMORY_BOUND:
        frac_flops = achieved_tflops / peak_tflops
    return Measurement(
        record_id=record.record_id,
        schema_version=record.schema_version,
        ts=record.ts.astimezone(UTC).replace(tzinfo=None),
        namespace=record.namespace,
        job=record.job,
        pod=record.pod,
        node=record.node,
        gpu_index=record.gpu_index,
        gpu_uuid=record.gpu_uuid,
        gpu_model=record.gpu_model,
        gpu_sku=gpu_sku,
        driver_version=record.driver_version,
        backend=record.backend,
        triton_version=record.triton_version,
        torch_version=record.torch_version,
        benchmark=record.benchmark,
        kernel=record.kernel,
        kernel_config=(
            None if record.kernel_config is None else _ENCODER.encode(record.kernel_config).decode()
        ),
        shape=_ENCODER.encode(record.shape).decode(),
        dtype=record.dtype,
        timer=record.timer,
        warmup_ms=record.warmup_ms,
        rep_ms=record.rep_ms,
        l2_flush=record.l2_flush,
        n_samples=record.n_samples,
        ms_p20=record.ms_p20,
        ms_p50=record.ms_p50,
        ms_p80=record.ms_p80,
        flops=expected.flops,
        bytes=expected.bytes,
        achieved_tflops=achieved_tflops,
        achieved_gbps=achieved_gbps,
        peak_tflops=peak_tflops,
        peak_gbps=peak_gbps,
        peak_source=peak_source,
        frac_peak_flops=frac_flops,
        frac_peak_bw=achieved_gbps / peak_gbps if peak_gbps and achieved_gbps is not None else None,
        correct=record.correct,
        simulated=record.simulated,
    )


def _unsupported(version: object) -> Rejected:
    return Rejected(
        "unsupported_schema_version",
        f"`schema_version` is {version!r}; this annex reads schema_version {SCHEMA_VERSION}",
    )


def _schema_problem(line: bytes, problem: str) -> Rejected:
    """The JSON is valid but does not fit ``Record``: say which field, unless the real problem
    is a newer schema version, an overflowing number or not an object at all."""
    try:
        version = _VERSION_DECODER.decode(line).schema_version
    except msgspec.ValidationError:
        return Rejected("not_an_object", f"a record must be a JSON object: {problem}")
    if isinstance(version, int) and not isinstance(version, bool) and version != SCHEMA_VERSION:
        return _unsupported(version)
    if problem.startswith("Number out of range"):
        return Rejected("not_finite", f"{problem} (a number too large for a double)")
    return Rejected("schema_violation", problem)


def _not_json(line: bytes, problem: str) -> Rejected:
    """Malformed JSON, unless it is JSON with Python's NaN/Infinity tokens (``json.dumps``'s
    default), which is a not-finite value and named as such."""
    if b"NaN" in line or b"Infinity" in line:
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        path = _non_finite_path(value, "$") if value is not None else None
        if path is not None:
            return Rejected("not_finite", f"{path} is not a finite number (NaN or Infinity)")
    return Rejected("malformed_json", f"not a JSON document: {problem}")


def _non_finite_path(value: Any, path: str) -> str | None:
    if isinstance(value, float):
        return None if math.isfinite(value) else f"`{path}`"
    if isinstance(value, dict):
        for key, item in value.items():
            found = _non_finite_path(item, f"{path}.{key}")
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _non_finite_path(item, f"{path}[{index}]")
            if found:
                return found
    return None

"""Check each kernel against torch, time it, and turn the measurement into a record.

Order matters: a kernel is timed only after its output matched the torch reference within a
dtype-appropriate tolerance. A kernel that fails the check (or fails to run) still gives a
record, with ``correct: false``, ``n_samples: 0`` and null timings and throughputs ("not
timed"), and the reason goes to the log; the CLI then exits non-zero. A fast wrong kernel must
never look like a fast GPU.

Timing on a GPU is ``triton.testing.do_bench(fn, warmup=25, rep=100, quantiles=[0.2, 0.5,
0.8])``: warm-up and repetition budgets in milliseconds, the L2 flushed before every call,
device events around each call, and the quantiles returned in the order asked for (always
asked for explicitly: without them it returns the mean, whatever its docstring says; reference
§1.1). Under the interpreter ``do_bench`` cannot run (it needs a driver, §6), so
``perf_counter_bench`` does the same steps with the wall clock, at most 5 repeats, and the
same linear-interpolation quantiles (``quantiles``).

FLOPs and bytes come only from ``work.work()``; peaks only from ``peaks.peak_for()``.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import torch

from probes.gpubench import kernels
from probes.gpubench.device import Device, Placement
from probes.gpubench.peaks import peak_for, sku_for
from probes.gpubench.work import BENCHMARKS, MEMORY_BOUND, work

SCHEMA_VERSION = 1

RECORD_FIELDS: tuple[str, ...] = (
    "schema_version", "record_id", "ts", "cluster", "namespace", "job", "pod", "node",
    "gpu_index", "gpu_uuid", "gpu_model", "gpu_sku", "driver_version", "backend",
    "triton_version", "torch_version", "benchmark", "kernel", "kernel_config", "shape", "dtype",
    "timer", "warmup_ms", "rep_ms", "l2_flush", "n_samples", "ms_p20", "ms_p50", "ms_p80",
    "flops", "bytes", "achieved_tflops", "achieved_gbps", "peak_tflops", "peak_gbps",
    "peak_source", "frac_peak_flops", "correct",
)  # fmt: skip
"""Every field of a record, in order (reference §5.1, schema_version 1)."""

QUANTILES: tuple[float, float, float] = (0.2, 0.5, 0.8)
"""p20, p50, p80: passed to do_bench explicitly; it returns them in this order."""

INTERPRETER_MAX_REPEATS = 5
"""The interpreter runs programs one after another in numpy (reference §6): ≤ 5 timed calls."""

SUITE: tuple[tuple[str, str], ...] = (
    ("gemm", "bf16"),
    ("gemm", "fp8"),
    ("copy", "fp32"),
    ("triad", "fp32"),
    ("softmax", "bf16"),
    ("layernorm", "bf16"),
)
"""The default suite: (benchmark, dtype) in the order it runs."""

DTYPES: dict[str, tuple[str, ...]] = {
    "gemm": ("bf16", "fp8", "fp16"),
    "copy": ("fp32", "bf16", "fp16"),
    "triad": ("fp32", "bf16", "fp16"),
    "softmax": ("bf16", "fp16", "fp32"),
    "layernorm": ("bf16", "fp16", "fp32"),
}
"""The dtypes each benchmark can run (``--benchmarks copy:bf16`` picks one outside SUITE)."""

SHAPES: dict[str, dict[str, dict[str, int]]] = {
    # Large enough to saturate an H100: a GEMM of ~1.1 PFLOP (~1.4 ms at cuBLAS speed), 1 GiB
    # streams (~0.7 ms at 3 TB/s, far beyond the 50 MiB L2), 0.5 GiB softmax input.
    "full": {
        "gemm": {"M": 8192, "N": 8192, "K": 8192},
        "copy": {"N": 2**28},
        "triad": {"N": 2**28},
        "softmax": {"M": 16384, "N": 16384},
        "layernorm": {"M": 16384, "N": 8192},
    },
    # For the interpreter: shapes ≤ 256, 4 programs per kernel (reference §6).
    "small": {
        "gemm": {"M": 256, "N": 256, "K": 256},
        "copy": {"N": 2**16},
        "triad": {"N": 2**16},
        "softmax": {"M": 256, "N": 256},
        "layernorm": {"M": 256, "N": 256},
    },
}

TRIAD_SCALAR = 3.0
"""STREAM's triad scalar."""

LAYERNORM_EPS = 1e-5


@dataclass(frozen=True)
class Tolerance:
    """|out - ref| ≤ atol + rtol·|ref| element-wise (NaN fails); ``atol`` × rms(ref) if scaled.

    References are computed in fp32 from the same inputs, so the tolerance covers the output's
    rounding (bf16 keeps 8 significant bits: the interpreter truncates, so up to 2^-7
    relative) and accumulation order. GEMM errors grow with the size of the dot products, so
    its absolute term scales with the reference's rms: entries that cancel to near zero
    compare on the scale of their neighbours, and a wrong tile is still off by O(rms).
    """

    rtol: float
    atol: float
    scale_by_rms: bool = False


TOLERANCES: dict[tuple[str, str], Tolerance] = {
    ("gemm", "bf16"): Tolerance(1.6e-2, 1e-2, scale_by_rms=True),
    ("gemm", "fp16"): Tolerance(4e-3, 2e-3, scale_by_rms=True),
    # fp8 on sm_90 accumulates with reduced precision by default (max_num_imprecise_acc).
    ("gemm", "fp8"): Tolerance(3e-2, 3e-2, scale_by_rms=True),
    ("copy", "fp32"): Tolerance(0.0, 0.0),
    ("copy", "bf16"): Tolerance(0.0, 0.0),
    ("copy", "fp16"): Tolerance(0.0, 0.0),
    ("triad", "fp32"): Tolerance(1e-5, 1e-5),
    ("triad", "bf16"): Tolerance(1.6e-2, 1e-2),
    ("triad", "fp16"): Tolerance(2e-3, 2e-3),
    ("softmax", "bf16"): Tolerance(1.6e-2, 1e-6),
    ("softmax", "fp16"): Tolerance(2e-3, 1e-6),
    ("softmax", "fp32"): Tolerance(1e-5, 1e-7),
    ("layernorm", "bf16"): Tolerance(1.6e-2, 1e-2),
    ("layernorm", "fp16"): Tolerance(2e-3, 2e-3),
    ("layernorm", "fp32"): Tolerance(1e-5, 1e-5),
}


@dataclass(frozen=True)
class TimerSpec:
    """How a kernel is timed: the record's ``timer``, ``warmup_ms``, ``rep_ms``, ``l2_flush``."""

    timer: str
    warmup_ms: float
    rep_ms: float
    l2_flush: bool
    max_repeats: int | None = None
    """Cap on timed calls (the interpreter's perf_counter timer); None: do_bench decides."""


DO_BENCH = TimerSpec("triton.testing.do_bench", 25.0, 100.0, l2_flush=True)
PERF_COUNTER = TimerSpec(
    "perf_counter", 0.0, 100.0, l2_flush=False, max_repeats=INTERPRETER_MAX_REPEATS
)
"""Interpreter: no warm-up (nothing to compile or cache), ≤ 5 calls within a 100 ms budget."""


@dataclass(frozen=True)
class Samples:
    """The timing result: quantiles in milliseconds and how many calls were timed."""

    n_samples: int | None
    """None for do_bench, which does not report how many calls it timed."""
    ms_p20: float
    ms_p50: float
    ms_p80: float


@dataclass(frozen=True)
class Check:
    """Outcome of comparing a kernel's output with the torch reference."""

    correct: bool
    detail: str
    max_abs_error: float | None = None


@dataclass
class Case:
    """One benchmark instance: inputs, output buffer, the kernel launch and the reference."""

    benchmark: str
    dtype: str
    shape: dict[str, int]
    inputs: dict[str, torch.Tensor]
    output: torch.Tensor
    launch: Callable[[], dict[str, Any]]
    """Runs the Triton kernel once into ``output``; returns the kernel configuration."""
    reference: Callable[[], torch.Tensor]
    """The torch result in fp32 from the same inputs."""
    tolerance: Tolerance
    kernel_config: dict[str, Any] = field(default_factory=dict)

    @property
    def kernel(self) -> str:
        return kernels.kernel_label(self.benchmark, self.shape)


# --------------------------------------------------------------------------------------------
# Quantiles and timers
# --------------------------------------------------------------------------------------------


def quantiles(samples: Sequence[float], qs: Sequence[float] = QUANTILES) -> list[float]:
    """Linearly interpolated quantiles of ``samples``, as ``triton.testing`` computes them.

    The q-th quantile sits at position q·(n-1) of the sorted samples, interpolated between its
    neighbours (numpy's "linear" method).
    """
    if not samples:
        raise ValueError("quantiles of no samples")
    ordered = sorted(samples)
    last = len(ordered) - 1
    result = []
    for q in qs:
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantile {q} outside [0, 1]")
        point = q * last
        lower, upper = math.floor(point), math.ceil(point)
        weight = point - lower
        result.append((1 - weight) * ordered[lower] + weight * ordered[upper])
    return result


def perf_counter_bench(
    fn: Callable[[], object],
    *,
    warmup_ms: float,
    rep_ms: float,
    max_repeats: int = INTERPRETER_MAX_REPEATS,
    qs: Sequence[float] = QUANTILES,
    clock: Callable[[], float] = time.perf_counter,
    synchronize: Callable[[], object] = lambda: None,
) -> tuple[list[float], int]:
    """do_bench's procedure on the wall clock: ``(quantiles in ms, number of timed calls)``.

    One call estimates the cost (the caller has run ``fn`` once already, for the check), then
    ``max(1, warmup_ms/estimate)`` warm-up calls (none when ``warmup_ms`` is 0) and
    ``max(1, rep_ms/estimate)`` timed calls, both capped at ``max_repeats``. No L2 flush.
    """
    start = clock()
    fn()
    synchronize()
    estimate_ms = max((clock() - start) * 1e3, 1e-6)
    n_warmup = 0 if warmup_ms <= 0 else min(max_repeats, max(1, int(warmup_ms / estimate_ms)))
    n_repeat = min(max_repeats, max(1, int(rep_ms / estimate_ms)))
    for _ in range(n_warmup):
        fn()
    synchronize()
    times = []
    for _ in range(n_repeat):
        start = clock()
        fn()
        synchronize()
        times.append((clock() - start) * 1e3)
    return quantiles(times, qs), n_repeat


def measure_time(fn: Callable[[], object], spec: TimerSpec) -> Samples:
    """Time ``fn`` with ``spec``'s timer (do_bench on a GPU, perf_counter under the interpreter)."""
    if spec.timer == DO_BENCH.timer:
        from triton.testing import do_bench

        p20, p50, p80 = do_bench(
            fn, warmup=spec.warmup_ms, rep=spec.rep_ms, quantiles=list(QUANTILES)
        )
        return Samples(None, float(p20), float(p50), float(p80))
    values, n = perf_counter_bench(
        fn,
        warmup_ms=spec.warmup_ms,
        rep_ms=spec.rep_ms,
        max_repeats=spec.max_repeats or INTERPRETER_MAX_REPEATS,
    )
    return Samples(n, *values)


def timer_for(device: Device) -> TimerSpec:
    return PERF_COUNTER if device.interpreter else DO_BENCH


# --------------------------------------------------------------------------------------------
# Cases and the correctness check
# --------------------------------------------------------------------------------------------


def suite(size: str, selection: Sequence[str] | None = None) -> list[tuple[str, str, dict]]:
    """``(benchmark, dtype, shape)`` to run: SUITE, or the ``selection`` ("gemm", "gemm:fp8").

    A bare benchmark name selects its SUITE entries; ``name:dtype`` one (any of DTYPES).
    Raises ``ValueError`` naming the unknown size, benchmark or dtype.
    """
    if size not in SHAPES:
        raise ValueError(f"unknown size {size!r}; choose one of {', '.join(SHAPES)}")
    if not selection:
        chosen = list(SUITE)
    else:
        chosen = []
        for item in selection:
            name, _, dtype = item.strip().partition(":")
            if name not in BENCHMARKS:
                raise ValueError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}")
            if dtype and dtype not in DTYPES[name]:
                known = ", ".join(DTYPES[name])
                raise ValueError(f"{name} does not run in {dtype!r}; it runs in {known}")
            entries = [(name, dtype)] if dtype else [e for e in SUITE if e[0] == name]
            chosen.extend(e for e in entries if e not in chosen)
    return [(name, dtype, dict(SHAPES[size][name])) for name, dtype in chosen]


def skip_reason(benchmark: str, dtype: str, device: Device) -> str | None:
    """Why this benchmark cannot run on this device (None: it can)."""
    if benchmark == "gemm" and dtype == "fp8":
        if device.backend == "hip":
            return (
                "the fp8 probe uses NVIDIA's e4m3fn format; AMD Instinct GPUs use e4m3fnuz "
                "(not implemented)"
            )
        if device.capability is not None and device.capability < (8, 9):
            major, minor = device.capability
            return (
                f"fp8 tensor cores need compute capability 8.9 (Ada) or 9.0 (Hopper); "
                f"{device.model} is {major}.{minor}"
            )
    return None


def make_case(
    benchmark: str, dtype: str, shape: Mapping[str, int], device: str, *, seed: int = 0
) -> Case:
    """Allocate inputs (seeded normal values) and output on ``device`` for one benchmark."""
    shape = dict(shape)
    work(benchmark, shape, dtype)  # validates benchmark, dtype and shape keys
    torch_dtype = kernels.TORCH_DTYPES[dtype]
    generator = torch.Generator(device=device).manual_seed(seed)

    def randn(*size: int, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
        values = torch.randn(*size, generator=generator, device=device, dtype=torch.float32)
        return (values * scale + shift).to(torch_dtype)

    tolerance = TOLERANCES[(benchmark, dtype)]
    if benchmark == "gemm":
        m, n, k = shape["M"], shape["N"], shape["K"]
        a = randn(m, k)
        # fp8 takes B column-major (K-contiguous), as tutorial 03 pre-transposes it for fp8.
        b = randn(n, k).T if dtype == "fp8" else randn(k, n)
        out_dtype = torch.bfloat16 if dtype == "fp8" else torch_dtype
        c = torch.empty(m, n, device=device, dtype=out_dtype)
        return Case(
            benchmark, dtype, shape, {"a": a, "b": b}, c,
            launch=lambda: kernels.gemm(a, b, c),
            reference=lambda: torch.matmul(a.float(), b.float()),
            tolerance=tolerance,
        )  # fmt: skip
    if benchmark == "copy":
        src = randn(shape["N"])
        dst = torch.empty_like(src)
        return Case(
            benchmark, dtype, shape, {"src": src}, dst,
            launch=lambda: kernels.copy(src, dst),
            reference=lambda: src.float().clone(),
            tolerance=tolerance,
        )  # fmt: skip
    if benchmark == "triad":
        b, c = randn(shape["N"]), randn(shape["N"])
        a = torch.empty_like(b)
        return Case(
            benchmark, dtype, shape, {"b": b, "c": c}, a,
            launch=lambda: kernels.triad(a, b, c, TRIAD_SCALAR),
            reference=lambda: b.float() + TRIAD_SCALAR * c.float(),
            tolerance=tolerance,
        )  # fmt: skip
    m, n = shape["M"], shape["N"]
    x = randn(m, n)
    y = torch.empty_like(x)
    if benchmark == "softmax":
        return Case(
            benchmark, dtype, shape, {"x": x}, y,
            launch=lambda: kernels.softmax(x, y),
            reference=lambda: torch.softmax(x.float(), dim=-1),
            tolerance=tolerance,
        )  # fmt: skip
    weight = randn(n, scale=0.1, shift=1.0)
    bias = randn(n, scale=0.1)
    return Case(
        benchmark, dtype, shape, {"x": x, "weight": weight, "bias": bias}, y,
        launch=lambda: kernels.layer_norm(x, weight, bias, y, LAYERNORM_EPS),
        reference=lambda: torch.nn.functional.layer_norm(
            x.float(), (n,), weight.float(), bias.float(), LAYERNORM_EPS
        ),
        tolerance=tolerance,
    )  # fmt: skip


def compare(out: torch.Tensor, ref: torch.Tensor, tolerance: Tolerance) -> Check:
    """Element-wise ``|out - ref| ≤ atol + rtol·|ref|``; NaN or Inf in ``out`` fails."""
    if tuple(out.shape) != tuple(ref.shape):
        return Check(False, f"output shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
    out32, ref32 = out.float(), ref.float()
    atol = tolerance.atol
    if tolerance.scale_by_rms:
        atol *= float(ref32.square().mean().sqrt())
    diff = (out32 - ref32).abs()
    bad = ~(diff <= atol + tolerance.rtol * ref32.abs())  # NaN compares False: counted bad
    n_bad = int(bad.sum())
    finite = diff[torch.isfinite(diff)]
    max_abs = float(finite.max()) if finite.numel() else float("nan")
    allowed = f"atol {atol:.3g} + rtol {tolerance.rtol:.3g}·|ref|"
    if n_bad:
        return Check(
            False,
            f"{n_bad} of {out.numel()} elements differ from the torch reference beyond "
            f"{allowed} (max |diff| {max_abs:.4g})",
            max_abs,
        )
    return Check(True, f"matches the torch reference within {allowed}", max_abs)


def check(case: Case) -> Check:
    """Run the kernel once and compare its output with the torch reference."""
    case.kernel_config = case.launch()
    return compare(case.output, case.reference(), case.tolerance)


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------


def utc_timestamp(now: datetime | None = None) -> str:
    """``2026-11-21T18:40:05Z``: UTC, seconds, 'Z' (the reference's record format)."""
    now = now or datetime.now(UTC)
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def build_record(
    *,
    device: Device,
    placement: Placement,
    versions: tuple[str, str],
    benchmark: str,
    shape: Mapping[str, int],
    dtype: str,
    kernel_config: Mapping[str, Any],
    timer: TimerSpec,
    samples: Samples | None,
    correct: bool,
    now: datetime | None = None,
    record_id: str | None = None,
) -> dict[str, Any]:
    """One measurement as a record (reference §5.1): JSON-ready, fields in RECORD_FIELDS order.

    ``samples`` None (or ``correct`` False) means "not timed": n_samples 0 and null timings,
    throughputs and fraction of peak. FLOPs and bytes come from ``work()``, the SKU from
    ``sku_for`` and the peaks from ``peak_for``; frac_peak_flops only for compute-bound
    benchmarks (memory-bound ones are judged on GB/s).
    """
    counts = work(benchmark, shape, dtype)
    gpu_sku = sku_for(device.model, device.memory_mib)
    peak_tflops, peak_gbps, peak_source = peak_for(gpu_sku, dtype)
    timed = samples is not None and correct
    ms_p50 = samples.ms_p50 if timed else None
    achieved_tflops = achieved_gbps = frac = None
    if ms_p50 is not None and ms_p50 > 0:
        achieved_tflops = counts.flops / (ms_p50 * 1e9)
        achieved_gbps = counts.bytes / (ms_p50 * 1e6)
        if benchmark not in MEMORY_BOUND and peak_tflops:
            frac = achieved_tflops / peak_tflops
    triton_version, torch_version = versions
    record = {
        "schema_version": SCHEMA_VERSION,
        "record_id": record_id or str(uuid.uuid4()),
        "ts": utc_timestamp(now),
        "cluster": placement.cluster,
        "namespace": placement.namespace,
        "job": placement.job,
        "pod": placement.pod,
        "node": placement.node,
        "gpu_index": device.index,
        "gpu_uuid": device.uuid,
        "gpu_model": device.model,
        "gpu_sku": gpu_sku,
        "driver_version": device.driver_version,
        "backend": device.backend,
        "triton_version": triton_version,
        "torch_version": torch_version,
        "benchmark": benchmark,
        "kernel": kernels.kernel_label(benchmark, shape),
        "kernel_config": dict(kernel_config),
        "shape": {key: int(shape[key]) for key in BENCHMARKS[benchmark]},
        "dtype": dtype,
        "timer": timer.timer,
        "warmup_ms": float(timer.warmup_ms),
        "rep_ms": float(timer.rep_ms),
        "l2_flush": timer.l2_flush,
        "n_samples": samples.n_samples if timed else 0,
        "ms_p20": samples.ms_p20 if timed else None,
        "ms_p50": ms_p50,
        "ms_p80": samples.ms_p80 if timed else None,
        "flops": float(counts.flops),
        "bytes": float(counts.bytes),
        "achieved_tflops": achieved_tflops,
        "achieved_gbps": achieved_gbps,
        "peak_tflops": peak_tflops,
        "peak_gbps": peak_gbps,
        "peak_source": peak_source,
        "frac_peak_flops": frac,
        "correct": bool(correct),
    }
    assert tuple(record) == RECORD_FIELDS
    return record


# --------------------------------------------------------------------------------------------
# The suite
# --------------------------------------------------------------------------------------------


def log_stderr(message: str) -> None:
    """Progress for humans: stderr (stdout carries only records)."""
    print(f"gpubench: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class ProtonMode:
    """How timed calls are wrapped when a Proton session is active.

    ``scope_metrics``: each call runs in ``proton.scope(kernel, {flops<bits>, bytes})``. With a
    ``hook="triton"`` session the kernels' ``launch_metadata`` already attributes the same
    counts to each launch, so the scopes then carry names only (no double counting).
    """

    scope_metrics: bool = True


def measure(
    case: Case,
    device: Device,
    *,
    placement: Placement,
    versions: tuple[str, str],
    timer: TimerSpec | None = None,
    proton: ProtonMode | None = None,
    log: Callable[[str], None] = log_stderr,
) -> dict[str, Any]:
    """Check ``case`` against torch, time it if it passed, and return its record."""
    timer = timer or timer_for(device)
    where = f"{case.kernel} {case.dtype} on {device.uuid}"
    samples = None
    try:
        verdict = check(case)
    except Exception as error:  # a kernel that does not compile or run is a failed check
        verdict = Check(False, f"kernel failed to run: {type(error).__name__}: {error}")
    if verdict.correct:
        try:
            samples = measure_time(_timed_call(case, proton), timer)
        except Exception as error:
            verdict = Check(False, f"timing failed: {type(error).__name__}: {error}")
    record = build_record(
        device=device,
        placement=placement,
        versions=versions,
        benchmark=case.benchmark,
        shape=case.shape,
        dtype=case.dtype,
        kernel_config=case.kernel_config,
        timer=timer,
        samples=samples,
        correct=verdict.correct,
    )
    if not verdict.correct:
        log(f"FAILED {where}: {verdict.detail}; recorded with correct=false, not timed")
    else:
        rate = (
            f"{record['achieved_gbps']:.4g} GB/s"
            if case.benchmark in MEMORY_BOUND
            else f"{record['achieved_tflops']:.4g} TFLOP/s"
        )
        log(f"{where}: p50 {record['ms_p50']:.4g} ms, {rate} ({verdict.detail})")
    return record


def _timed_call(case: Case, proton: ProtonMode | None) -> Callable[[], object]:
    """The function the timer calls: the launch, inside a Proton scope when profiling."""
    if proton is None:
        return case.launch
    import triton.profiler as proton_api

    name = case.kernel
    metrics = (
        kernels.proton_metrics(case.benchmark, case.shape, case.dtype)
        if proton.scope_metrics
        else None
    )

    def call() -> object:
        with proton_api.scope(name, metrics):
            return case.launch()

    return call


def run_suite(
    entries: Sequence[tuple[str, str, Mapping[str, int]]],
    device: Device,
    *,
    placement: Placement,
    versions: tuple[str, str],
    emit: Callable[[dict[str, Any]], None] = lambda record: None,
    proton: ProtonMode | None = None,
    log: Callable[[str], None] = log_stderr,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Run ``entries`` on ``device``; ``emit`` each record as soon as it exists; return them."""
    records: list[dict[str, Any]] = []
    runnable = []
    for benchmark, dtype, shape in entries:
        reason = skip_reason(benchmark, dtype, device)
        if reason:
            log(f"skipped {benchmark} {dtype} on {device.uuid}: {reason}")
        else:
            runnable.append((benchmark, dtype, shape))
    if not runnable:
        return records
    with _on_device(device):
        for benchmark, dtype, shape in runnable:
            try:
                case = make_case(benchmark, dtype, shape, device.torch_device, seed=seed)
            except Exception as error:  # e.g. out of memory: record it as a failed run
                log(f"cannot allocate {benchmark} {dtype} {dict(shape)}: {error}")
                record = build_record(
                    device=device, placement=placement, versions=versions,
                    benchmark=benchmark, shape=shape, dtype=dtype, kernel_config={},
                    timer=timer_for(device), samples=None, correct=False,
                )  # fmt: skip
            else:
                record = measure(
                    case, device, placement=placement, versions=versions, proton=proton, log=log
                )
                del case
            emit(record)
            records.append(record)
            if not device.interpreter:
                torch.cuda.empty_cache()
    return records


@contextlib.contextmanager
def _on_device(device: Device) -> Iterator[None]:
    """Make ``device`` current (Triton launches on torch's current device)."""
    if device.interpreter:
        yield
        return
    with torch.cuda.device(device.index):
        yield

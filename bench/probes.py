"""The probe suite's Triton kernels next to torch's own, on one GPU, at full size.

    python -m bench.probes [--gpu 0] [--benchmarks gemm,copy] [--rounds 3] [--no-record]

Each benchmark of ``probes.gpubench`` (full size: GEMM 8192³, streams of 2^28 elements,
softmax 16384², layer norm 16384×8192) is checked against torch, then timed, and so is torch's
implementation of the same operation on the same tensors, with the same timer
(``triton.testing.do_bench(warmup=25, rep=100, quantiles=[0.2, 0.5, 0.8])``, L2 flushed):

  gemm bf16   torch.matmul (cuBLAS)
  gemm fp8    torch._scaled_mm (cuBLASLt fp8, unit scales, bf16 output, fast accumulation as
              Triton's sm_90 default)
  copy        dst.copy_(src) (device-to-device copy)
  triad       torch.add(b, c, alpha=s, out=a)
  softmax     torch.softmax(x, dim=-1)
  layernorm   torch.nn.functional.layer_norm

Triton and torch alternate for ``--rounds`` rounds and each keeps its best p50, so neither
side is favoured by clocks ramping up. A GEMM has a row per kernel its operands allow: the
probe's own (the TMA kernel on sm_90 and later), then "gemm (pointer kernel)", timed against
the same anchor, so the rule that picks the probe's kernel can be checked on any GPU; the goal
is judged on the probe's own row. FLOPs and bytes come from ``probes.gpubench.work``.
Goals (issue 4): the GEMM within 10 % of cuBLAS, the copy within 10 % of torch's copy
(Triton ÷ torch throughput ≥ 0.90). The table goes to stdout and is appended to
bench/RESULTS.md with the date and the machine. Without a GPU it exits with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.collect_scale import append_results, machine

GOAL_RATIO = 0.90
GOALS = {("gemm", "bf16"), ("gemm", "fp8"), ("copy", "fp32")}
"""(benchmark, dtype) rows with the issue's "within 10 % of torch" goal."""

EXIT_OK, EXIT_INCORRECT, EXIT_NO_GPU = 0, 1, 2


@dataclass
class Row:
    benchmark: str
    dtype: str
    shape: dict[str, int]
    anchor: str
    skipped: str = ""
    triton_check: str = ""
    triton_correct: bool = False
    triton_ms: float | None = None
    triton_quantiles: tuple[float, float, float] | None = None
    torch_check: str = ""
    torch_ms: float | None = None
    torch_quantiles: tuple[float, float, float] | None = None
    config: dict[str, Any] | None = None
    flops: float = 0.0
    bytes: float = 0.0
    error: str = ""
    variant: str = ""
    """Set on the extra rows of a GEMM: the kernel timed instead of the probe's own."""

    @property
    def name(self) -> str:
        """The benchmark, and for a GEMM's extra row the kernel: "gemm (pointer kernel)"."""
        return f"{self.benchmark} ({self.variant} kernel)" if self.variant else self.benchmark

    @property
    def has_goal(self) -> bool:
        """Whether the issue's goal is judged on this row (the probe's own kernel only)."""
        return (self.benchmark, self.dtype) in GOALS and not self.variant

    @property
    def memory_bound(self) -> bool:
        return self.benchmark != "gemm"

    def rate(self, ms: float | None) -> float | None:
        """TFLOP/s for a GEMM, GB/s otherwise."""
        if ms is None or ms <= 0:
            return None
        return self.bytes / (ms * 1e6) if self.memory_bound else self.flops / (ms * 1e9)

    @property
    def ratio(self) -> float | None:
        """Triton's throughput ÷ torch's (= torch time ÷ Triton time)."""
        if self.triton_ms is None or self.torch_ms is None:
            return None
        return self.torch_ms / self.triton_ms


def anchor_for(case: Any) -> tuple[str, Callable[[], Any]]:
    """torch's implementation of ``case``'s operation on the same tensors (its own output)."""
    import torch

    from probes.gpubench import harness

    inputs = case.inputs
    if case.benchmark == "gemm" and case.dtype == "fp8":
        a, b = inputs["a"], inputs["b"]  # b is column-major, as cuBLASLt's fp8 path wants
        one = torch.tensor(1.0, device=a.device, dtype=torch.float32)
        return "torch._scaled_mm (cuBLASLt)", lambda: torch._scaled_mm(
            a, b, one, one, out_dtype=torch.bfloat16, use_fast_accum=True
        )
    if case.benchmark == "gemm":
        a, b = inputs["a"], inputs["b"]
        out = torch.empty_like(case.output)
        return "torch.matmul (cuBLAS)", lambda: torch.matmul(a, b, out=out)
    if case.benchmark == "copy":
        src = inputs["src"]
        dst = torch.empty_like(src)
        return "dst.copy_(src)", lambda: dst.copy_(src)
    if case.benchmark == "triad":
        b, c = inputs["b"], inputs["c"]
        out = torch.empty_like(b)
        return "torch.add(b, c, alpha=s)", lambda: torch.add(
            b, c, alpha=harness.TRIAD_SCALAR, out=out
        )
    if case.benchmark == "softmax":
        x = inputs["x"]
        return "torch.softmax", lambda: torch.softmax(x, dim=-1)
    x, weight, bias = inputs["x"], inputs["weight"], inputs["bias"]
    n = x.shape[-1]
    return "F.layer_norm", lambda: torch.nn.functional.layer_norm(
        x, (n,), weight, bias, harness.LAYERNORM_EPS
    )


def run(
    entries: list[tuple[str, str, dict[str, int]]],
    device: Any,
    *,
    rounds: int,
    timer: Any,
    log: Callable[[str], None],
) -> list[Row]:
    """Check and time every entry and its torch anchor on ``device`` (already current).

    A GEMM gets one row per kernel its operands allow (``kernels.gemm_variants``): the one the
    probe runs first, then the others, each against the same anchor, so the rule that picks
    the probe's kernel can be checked on any GPU.
    """
    import torch

    from probes.gpubench import harness, kernels
    from probes.gpubench.work import work

    rows = []
    for benchmark, dtype, shape in entries:
        counts = work(benchmark, shape, dtype)
        row = Row(benchmark, dtype, shape, anchor="", flops=counts.flops, bytes=counts.bytes)
        rows.append(row)
        reason = harness.skip_reason(benchmark, dtype, device)
        if reason:
            row.skipped = reason
            log(f"{benchmark} {dtype}: skipped ({reason})")
            continue
        try:
            case = harness.make_case(benchmark, dtype, shape, device.torch_device)
            row.anchor, anchor = anchor_for(case)
            reference = case.reference()
            anchor_verdict = harness.compare(anchor(), reference, case.tolerance)
            torch_check = "ok" if anchor_verdict.correct else anchor_verdict.detail
            variants: list[tuple[Row, Any]] = [(row, case)]
            if benchmark == "gemm":
                a, b, c = case.inputs["a"], case.inputs["b"], case.output
                for other in kernels.gemm_variants(a, b, c)[-2::-1]:  # the default is last
                    extra = dataclasses.replace(row, variant=other)
                    rows.append(extra)
                    launch = functools.partial(kernels.gemm, a, b, c, variant=other)
                    variants.append((extra, dataclasses.replace(case, launch=launch)))
            del reference
        except Exception as error:  # report it in the table, go on with the next benchmark
            row.error = f"{type(error).__name__}: {error}"[:300]
            log(f"{benchmark} {dtype}: {row.error}")
            variants = []
        for timed, timed_case in variants:
            timed.torch_check = torch_check
            try:
                _check_and_time(timed, timed_case, anchor, rounds, timer, log)
            except Exception as error:  # likewise, for this kernel alone
                timed.error = f"{type(error).__name__}: {error}"[:300]
                log(f"{timed.name} {dtype}: {timed.error}")
        if not device.interpreter:
            torch.cuda.empty_cache()
    return rows


def _check_and_time(
    row: Row,
    case: Any,
    anchor: Callable[[], Any],
    rounds: int,
    timer: Any,
    log: Callable[[str], None],
) -> None:
    """Check ``case``'s kernel against torch, then time it and the anchor in turns.

    The output is poisoned first: GEMM rows share it, and a kernel that wrote nothing must not
    pass on what the one before it wrote."""
    from probes.gpubench import harness

    case.output.fill_(float("nan"))
    verdict = harness.check(case)
    row.triton_correct, row.triton_check = verdict.correct, verdict.detail
    row.config = case.kernel_config
    best: dict[str, harness.Samples] = {}
    for index in range(rounds):
        for side, fn in (("triton", case.launch), ("torch", anchor)):
            if side == "triton" and not verdict.correct:
                continue
            samples = harness.measure_time(fn, timer)
            log(f"{row.name} {row.dtype} round {index + 1}: {side} p50 {samples.ms_p50:.4g} ms")
            if side not in best or samples.ms_p50 < best[side].ms_p50:
                best[side] = samples
    if "triton" in best:
        s = best["triton"]
        row.triton_ms, row.triton_quantiles = s.ms_p50, (s.ms_p20, s.ms_p50, s.ms_p80)
    s = best["torch"]
    row.torch_ms, row.torch_quantiles = s.ms_p50, (s.ms_p20, s.ms_p50, s.ms_p80)


def render(rows: list[Row], device: Any, versions: tuple[str, str], cuda: str | None) -> str:
    now = dt.datetime.now(dt.UTC)
    lines = [
        f"## probes: Triton kernels vs torch on {device.model} ({now:%Y-%m-%d %H:%M} UTC)",
        "",
        f"GPU: {device.model}, {device.memory_mib} MiB, compute capability "
        f"{'.'.join(map(str, device.capability or ()))}, driver {device.driver_version or '?'}, "
        f"CUDA {cuda or '?'}; triton {versions[0]}, torch {versions[1]}. Host: {machine()}.",
        "Timer: triton.testing.do_bench(warmup=25, rep=100, quantiles=[0.2, 0.5, 0.8]), L2 "
        "flushed; best p50 of the rounds. Rates: TFLOP/s for GEMM, GB/s (read + write) otherwise.",
        "",
        "| benchmark | dtype | shape | Triton p50 ms | torch p50 ms | Triton rate | torch rate "
        "| Triton ÷ torch | goal | torch anchor | Triton config |",
        "|---|---|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    notes = []
    for row in rows:
        shape = "×".join(str(v) for v in row.shape.values())
        name = row.name
        unit = "GB/s" if row.memory_bound else "TFLOP/s"
        if row.skipped or row.error:
            why = row.skipped or f"error: {row.error}"
            lines.append(f"| {name} | {row.dtype} | {shape} | – | – | – | – | – | – | {why} | |")
            continue
        ratio = row.ratio
        goal = "–"
        if row.has_goal:
            goal = "n/a" if ratio is None else _goal(ratio)
        config = ", ".join(f"{k}={v}" for k, v in (row.config or {}).items())
        lines.append(
            f"| {name} | {row.dtype} | {shape} | {_num(row.triton_ms)} "
            f"| {_num(row.torch_ms)} | {_num(row.rate(row.triton_ms))} {unit} "
            f"| {_num(row.rate(row.torch_ms))} {unit} | {_num(ratio, '.3f')} | {goal} "
            f"| {row.anchor} | {config} |"
        )
        if not row.triton_correct:
            notes.append(f"{name} {row.dtype}: Triton FAILED its check ({row.triton_check})")
        if row.torch_check != "ok":
            notes.append(f"{name} {row.dtype}: torch's result differs ({row.torch_check})")
    goal_rows = [r for r in rows if r.has_goal and r.ratio is not None]
    if goal_rows:
        verdicts = [f"{r.benchmark} {r.dtype} {r.ratio:.3f} ({_goal(r.ratio)})" for r in goal_rows]
        notes.append(f"Goals (Triton ≥ {GOAL_RATIO:.2f} × torch): " + "; ".join(verdicts))
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


def _goal(ratio: float) -> str:
    return "met" if ratio >= GOAL_RATIO else "missed"


def _num(value: float | None, spec: str = ".4g") -> str:
    return "–" if value is None else format(value, spec)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", type=int, default=0, help="GPU index (torch's numbering)")
    parser.add_argument("--benchmarks", default="", help="as python -m probes.gpubench")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per side")
    parser.add_argument("--no-record", action="store_true", help="don't append to RESULTS.md")
    args = parser.parse_args(argv)

    import torch

    if os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available():
        print(
            "bench.probes needs a GPU (CUDA or ROCm) visible to torch: it compares Triton "
            "kernels with cuBLAS and torch's copies at full size; nothing to measure here. "
            "Run it on a GPU node (e.g. an H100), or `python -m probes.gpubench` to run the "
            "suite under Triton's interpreter.",
            file=sys.stderr,
        )
        return EXIT_NO_GPU

    from probes.gpubench import device as device_info
    from probes.gpubench import harness

    selection = [item for item in args.benchmarks.split(",") if item.strip()]
    try:
        entries = harness.suite("full", selection)
        device = device_info.devices(str(args.gpu))[0]
    except ValueError as error:
        print(f"bench.probes: {error}", file=sys.stderr)
        return EXIT_NO_GPU

    def log(message: str) -> None:
        print(f"bench.probes: {message}", file=sys.stderr, flush=True)

    log(f"{device.model} ({device.uuid}); {len(entries)} benchmark(s), {args.rounds} round(s)")
    with torch.cuda.device(device.index):
        rows = run(entries, device, rounds=max(1, args.rounds), timer=harness.DO_BENCH, log=log)
    report = render(rows, device, device_info.versions(), torch.version.cuda)
    print(report)
    if not args.no_record:
        append_results(report)
    measured = [row for row in rows if not row.skipped]
    failed = [row for row in measured if row.error or not row.triton_correct]
    return EXIT_INCORRECT if failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

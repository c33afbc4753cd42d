"""How much work each benchmark does: the one source of FLOP and byte counts.

The probe harness writes these numbers into its records, the GPU build registers them as the
kernels' ``launch_metadata`` for Proton, and the collector recomputes them at ingest to check a
record's claims. Triton's interpreter never calls ``launch_metadata`` (reference §1.3), so the
counts must come from a plain function of shape and dtype, not from the launch.

Conventions (reference §2.1, §4): GEMM ``flops = 2·M·N·K`` (multiply-adds count twice) and
``bytes`` = each operand read once plus the output written once; an fp8 GEMM writes a bf16
output. Memory-bound kernels count the bytes they must move (every input read once, every
output written once) and a nominal FLOP count per element, stated below, which is never used
for a fraction of peak (their figure of merit is GB/s).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

DTYPE_BYTES: dict[str, int] = {"fp8": 1, "bf16": 2, "fp16": 2, "fp32": 4, "tf32": 4}
"""Bytes per element of each dtype name used in records."""

GEMM_OUTPUT_DTYPE: dict[str, str] = {"fp8": "bf16"}
"""A GEMM writes its output in its input dtype, except these (fp8 accumulates into bf16)."""

BENCHMARKS: dict[str, tuple[str, ...]] = {
    "gemm": ("M", "N", "K"),
    "copy": ("N",),
    "triad": ("N",),
    "softmax": ("M", "N"),
    "layernorm": ("M", "N"),
}
"""Benchmark name -> the shape keys it takes."""

MEMORY_BOUND: frozenset[str] = frozenset({"copy", "triad", "softmax", "layernorm"})
"""Benchmarks judged by bandwidth (GB/s against the HBM peak), not by FLOP/s."""

SOFTMAX_FLOPS_PER_ELEMENT = 5
"""Row max, subtract, exp, row sum, divide."""

LAYERNORM_FLOPS_PER_ELEMENT = 8
"""Mean (1), variance (2), normalise (2), scale and shift (2), plus the rstd broadcast (1)."""


@dataclass(frozen=True)
class Work:
    """FLOPs and bytes of one kernel invocation."""

    flops: float
    bytes: float


def work(benchmark: str, shape: Mapping[str, int], dtype: str) -> Work:
    """FLOPs and bytes moved by one run of ``benchmark`` at ``shape`` in ``dtype``.

    Raises ``ValueError`` naming what is wrong for an unknown benchmark or dtype, missing or
    extra shape keys, or non-positive sizes, so a bad record is rejected with a reason.
    """
    keys = BENCHMARKS.get(benchmark)
    if keys is None:
        raise ValueError(f"unknown benchmark {benchmark!r}; known: {', '.join(BENCHMARKS)}")
    elem = DTYPE_BYTES.get(dtype)
    if elem is None:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPE_BYTES)}")
    if set(shape) != set(keys):
        raise ValueError(f"{benchmark} takes shape keys {list(keys)}, got {sorted(shape)}")
    for key in keys:
        size = shape[key]
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise ValueError(f"shape {key}={size!r} must be a positive integer")

    if benchmark == "gemm":
        m, n, k = shape["M"], shape["N"], shape["K"]
        out = DTYPE_BYTES[GEMM_OUTPUT_DTYPE.get(dtype, dtype)]
        return Work(flops=2.0 * m * n * k, bytes=float(elem * (m * k + n * k) + out * m * n))
    if benchmark == "copy":
        n = shape["N"]
        return Work(flops=0.0, bytes=2.0 * n * elem)
    if benchmark == "triad":
        n = shape["N"]
        return Work(flops=2.0 * n, bytes=3.0 * n * elem)
    m, n = shape["M"], shape["N"]
    if benchmark == "softmax":
        return Work(flops=float(SOFTMAX_FLOPS_PER_ELEMENT * m * n), bytes=2.0 * m * n * elem)
    # layernorm: x read, y written, weight and bias read once
    return Work(
        flops=float(LAYERNORM_FLOPS_PER_ELEMENT * m * n),
        bytes=2.0 * m * n * elem + 2.0 * n * elem,
    )

"""The probe's Triton kernels and their launchers.

What training exercises, one kernel each: a tiled GEMM (bf16, and fp8 e4m3 with a bf16 output
where the GPU has fp8 tensor cores), an HBM streaming copy and a STREAM triad (a = b + s·c),
a fused row-wise softmax and a layer norm forward.

The GEMM comes in two forms (``GEMM_VARIANTS``): tutorial 03's tile-per-program kernel with
pointer loads, which runs on any GPU, and tutorial 09's persistent kernel whose tiles move
through tensor descriptors (the TMA engine of sm_90). On an H200 and an H100 (bench/RESULTS.md,
session 21) the TMA kernel was 3-11 % faster for fp8 in all six comparisons, and faster for
bf16 in five of six (by 1.5-6 %; slower by 6 % once), so it runs wherever the operands allow
it; records keep the benchmark's kernel name (``matmul_kernel``) for their cohorts, and
``kernel_config["variant"]`` says which ran.

On a GPU the launchers autotune over the configurations below (once per process and shape;
the chosen one goes into each record's ``kernel_config``) and every kernel carries
``launch_metadata`` computed by ``work.work()``, so a Proton session started with
``hook="triton"`` attributes FLOPs and bytes to each launch. Under Triton's interpreter (no
GPU) each kernel runs one fixed configuration sized for 1-4 programs (reference §6), and
``launch_metadata`` is never called (§1.3): the harness takes its counts from ``work()``
directly.

Interpreter caveat, handled here: numpy has no bfloat16, so the interpreter stores bf16 as
uint16 and does arithmetic on the bit patterns (tl.dot included: triton-lang/triton#11584,
"we just don't support it yet"; Triton's debugging guide says to cast bf16 to fp32 first).
Every kernel therefore computes in fp32 after loading, which is what it does on a GPU too,
except the GEMM, whose ``UPCAST`` switch converts bf16 tiles to fp32 before ``tl.dot`` under
the interpreter only (on a GPU the tensor cores take bf16; the records say which ran).
fp8 needs no switch: the interpreter converts 8-bit float operands of ``tl.dot`` itself.

This module switches Triton to the interpreter when there is no GPU, before any kernel below
is defined (reference §6, caveat 1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from probes.gpubench.device import use_interpreter_if_no_gpu

INTERPRET: bool = use_interpreter_if_no_gpu()
"""True when kernels run in Triton's interpreter (must be decided before ``@triton.jit``)."""

import torch  # noqa: E402  (after the interpreter switch, on purpose)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from probes.gpubench.work import BENCHMARKS, DTYPE_BYTES, work  # noqa: E402

TORCH_DTYPES: dict[str, torch.dtype] = {
    "fp8": torch.float8_e4m3fn,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp32": torch.float32,
}
"""Record dtype name -> torch dtype. fp8 is e4m3 ("fn": no infinities), Triton's fp8e4nv."""

_DTYPE_NAMES = {dtype: name for name, dtype in TORCH_DTYPES.items()}

KERNEL_NAMES: dict[str, str] = {
    "gemm": "matmul_kernel",
    "copy": "copy_kernel",
    "triad": "triad_kernel",
    "softmax": "softmax_kernel",
    "layernorm": "layernorm_kernel",
}
"""Benchmark -> the name of the ``@triton.jit`` function that implements it."""


def dtype_name(dtype: torch.dtype) -> str:
    """The record's name for a torch dtype ("bf16", "fp8", ...)."""
    try:
        return _DTYPE_NAMES[dtype]
    except KeyError:
        raise ValueError(f"no probe dtype for {dtype}; known: {', '.join(TORCH_DTYPES)}") from None


def kernel_label(benchmark: str, shape: Mapping[str, int]) -> str:
    """``"matmul_kernel [M=8192, N=8192, K=8192]"``: the record's ``kernel`` and Proton's name."""
    dims = ", ".join(f"{key}={shape[key]}" for key in BENCHMARKS[benchmark])
    return f"{KERNEL_NAMES[benchmark]} [{dims}]"


def proton_metrics(benchmark: str, shape: Mapping[str, int], dtype: str) -> dict[str, float]:
    """Proton's reserved metrics for one launch: ``flops<bits>`` (by dtype width) and ``bytes``."""
    counts = work(benchmark, shape, dtype)
    return {f"flops{8 * DTYPE_BYTES[dtype]}": counts.flops, "bytes": counts.bytes}


def _metadata(benchmark: str, shape_keys: tuple[str, ...], tensor_arg: str) -> Callable:
    """A ``launch_metadata`` hook: name + FLOPs/bytes from ``work()`` for Proton's LaunchHook."""

    def launch_metadata(grid: Any, kernel_metadata: Any, args: Mapping[str, Any]) -> dict:
        shape = {key: int(args[key]) for key in shape_keys}
        dtype = dtype_name(args[tensor_arg].dtype)
        return {"name": kernel_label(benchmark, shape), **proton_metrics(benchmark, shape, dtype)}

    launch_metadata.__name__ = f"{benchmark}_launch_metadata"
    return launch_metadata


LAUNCH_METADATA: dict[str, Callable] = {
    "gemm": _metadata("gemm", ("M", "N", "K"), "a_ptr"),
    "copy": _metadata("copy", ("N",), "src_ptr"),
    "triad": _metadata("triad", ("N",), "a_ptr"),
    "softmax": _metadata("softmax", ("M", "N"), "x_ptr"),
    "layernorm": _metadata("layernorm", ("M", "N"), "x_ptr"),
}
"""Benchmark -> the ``launch_metadata`` its kernel is compiled with (Proton's LaunchHook)."""


# --------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------


@triton.jit(launch_metadata=LAUNCH_METADATA["gemm"])
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    UPCAST: tl.constexpr,
):
    """C = A·B, fp32 accumulation, one BM×BN tile per program, tiles grouped along M.

    The grouped order (tutorial 03/09) lets GROUP_M consecutive programs reuse the same
    columns of B from L2. Out-of-range rows/columns are clamped to 0 for the loads (so the
    address hints stay true) and masked on the store; K is masked per step.
    """
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = pid_m * BM + tl.arange(0, BM)
    offs_bn = pid_n * BN + tl.arange(0, BN)
    offs_am = tl.where(offs_am < M, offs_am, 0)
    offs_bn = tl.where(offs_bn < N, offs_bn, 0)
    offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BM), BM)
    offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BN), BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
        if UPCAST:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk

    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BM + tl.arange(0, BM)
    offs_cn = pid_n * BN + tl.arange(0, BN)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit(launch_metadata=LAUNCH_METADATA["gemm"])
def matmul_tma_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_bk,
    stride_bn,
    stride_cm,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    B_KMAJOR: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
    UPCAST: tl.constexpr,
):
    """C = A·B as ``matmul_kernel``, but persistent and with tensor-memory-accelerator tiles.

    Tutorial 09's Hopper form: NUM_PROGRAMS programs (one per multiprocessor) walk the tiles in
    the same grouped order, and every tile of A, B and C moves through a tensor descriptor
    (TMA on sm_90: bulk copies, zero-filled past the edges, clipped stores, so no masks). B is
    read K-major (``B_KMAJOR``: B's transpose is contiguous, as fp8 tensor cores require) or
    row-major. Descriptors need unit inner strides and 16-byte aligned outer strides: the
    launcher checks that before choosing this kernel.
    """
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [stride_am, 1], [BM, BK])
    if B_KMAJOR:
        b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [stride_bn, 1], [BN, BK])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [stride_bk, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [stride_cm, 1], [BM, BN])

    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_pid_in_group = GROUP_M * num_pid_n
    k_steps = tl.cdiv(K, BK)
    for tile in tl.range(tl.program_id(axis=0), num_pid_m * num_pid_n, NUM_PROGRAMS, flatten=True):
        group_id = tile // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((tile % num_pid_in_group) % group_size_m)
        pid_n = (tile % num_pid_in_group) // group_size_m
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(k_steps):
            a = a_desc.load([pid_m * BM, k * BK])
            if B_KMAJOR:
                b = b_desc.load([pid_n * BN, k * BK]).T
            else:
                b = b_desc.load([k * BK, pid_n * BN])
            if UPCAST:
                a = a.to(tl.float32)
                b = b.to(tl.float32)
            acc = tl.dot(a, b, acc)
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_ptr.dtype.element_ty))


@triton.jit(launch_metadata=LAUNCH_METADATA["copy"])
def copy_kernel(src_ptr, dst_ptr, N, BLOCK: tl.constexpr):
    """dst = src, BLOCK contiguous elements per program: one read and one write per element."""
    offs = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    values = tl.load(src_ptr + offs, mask=mask, eviction_policy="evict_first")
    tl.store(dst_ptr + offs, values, mask=mask)


@triton.jit(launch_metadata=LAUNCH_METADATA["triad"])
def triad_kernel(a_ptr, b_ptr, c_ptr, scalar, N, BLOCK: tl.constexpr):
    """STREAM triad a = b + s·c, computed in fp32: two reads and one write per element."""
    offs = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    b = tl.load(b_ptr + offs, mask=mask, eviction_policy="evict_first").to(tl.float32)
    c = tl.load(c_ptr + offs, mask=mask, eviction_policy="evict_first").to(tl.float32)
    tl.store(a_ptr + offs, (b + scalar * c).to(a_ptr.dtype.element_ty), mask=mask)


@triton.jit(launch_metadata=LAUNCH_METADATA["softmax"])
def softmax_kernel(
    x_ptr, y_ptr, M, N, stride_xm, stride_ym, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    """Row-wise softmax of BLOCK_M whole rows per program, in fp32, in one pass over HBM.

    Rows past M are clamped to the last row for the loads (no all-masked row, so no -inf - -inf
    NaN) and masked on the store; columns past N read as -inf, which exp turns into 0.
    """
    rows = tl.program_id(axis=0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols[None, :] < N
    load_rows = tl.minimum(rows, M - 1)
    x = tl.load(x_ptr + load_rows[:, None] * stride_xm + cols[None, :], mask=col_mask, other=0.0)
    x = tl.where(col_mask, x.to(tl.float32), -float("inf"))
    x = x - tl.max(x, axis=1)[:, None]
    numerator = tl.exp(x)
    y = numerator / tl.sum(numerator, axis=1)[:, None]
    tl.store(
        y_ptr + rows[:, None] * stride_ym + cols[None, :],
        y.to(y_ptr.dtype.element_ty),
        mask=(rows[:, None] < M) & col_mask,
    )


@triton.jit(launch_metadata=LAUNCH_METADATA["layernorm"])
def layernorm_kernel(
    x_ptr,
    y_ptr,
    w_ptr,
    b_ptr,
    M,
    N,
    stride_xm,
    stride_ym,
    eps,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """Layer norm forward over the last dimension (whole rows per program), fp32 statistics."""
    rows = tl.program_id(axis=0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols[None, :] < N
    load_rows = tl.minimum(rows, M - 1)
    x = tl.load(x_ptr + load_rows[:, None] * stride_xm + cols[None, :], mask=col_mask, other=0.0)
    x = tl.where(col_mask, x.to(tl.float32), 0.0)
    mean = tl.sum(x, axis=1) / N
    centred = tl.where(col_mask, x - mean[:, None], 0.0)
    variance = tl.sum(centred * centred, axis=1) / N
    rstd = 1.0 / tl.sqrt(variance + eps)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    y = centred * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(
        y_ptr + rows[:, None] * stride_ym + cols[None, :],
        y.to(y_ptr.dtype.element_ty),
        mask=(rows[:, None] < M) & col_mask,
    )


# --------------------------------------------------------------------------------------------
# Configurations
# --------------------------------------------------------------------------------------------

GEMM_CONFIGS: list[tuple[dict[str, int], int, int]] = [
    ({"BM": 128, "BN": bn, "BK": bk, "GROUP_M": 8}, stages, warps)
    for bn in (128, 256)
    for bk in (64, 128)
    for stages in (3, 4)
    for warps in (4, 8)
]
"""GPU autotuning space (meta-parameters, num_stages, num_warps): tutorial 09's, which covers
the Hopper sweet spots (128×256×64, 3-4 stages, 8 warps for bf16; BK=128 for fp8). Configs that
do not fit in shared memory are dropped by the autotuner (OutOfResources)."""

GEMM_TMA_CONFIGS: list[tuple[dict[str, int], int, int]] = [
    ({"BM": 128, "BN": bn, "BK": bk, "GROUP_M": 8}, stages, warps)
    for bn, bk, stages, warps in (
        (256, 64, 3, 8),
        (256, 64, 4, 8),
        (128, 64, 4, 4),
        (128, 64, 4, 8),
        (256, 128, 3, 8),
        (128, 128, 3, 8),
        (128, 128, 4, 4),
    )
]
"""GPU autotuning space of the persistent TMA GEMM: tutorial 09's Hopper picks (128×256×64 in 3
stages with 8 warps for bf16, BK=128 for fp8) and their neighbours; kept small because every
configuration is compiled on first use."""

TENSOR_DESCRIPTORS: bool = hasattr(tl, "make_tensor_descriptor") and tuple(
    int(part) for part in triton.__version__.split(".")[:2]
) >= (3, 4)
"""Whether this Triton builds tensor descriptors in kernels and flattens persistent loops
(``tl.range(..., flatten=True)``), as ``matmul_tma_kernel`` does: 3.4 and later (the TMA GEMM
was measured with 3.6 on GPUs and runs under 3.9's interpreter in the tests)."""

GEMM_VARIANTS: tuple[str, ...] = ("pointer", "tma")
"""The GEMM kernels, the preferred last: ``matmul_kernel`` (pointer loads, any GPU) and
``matmul_tma_kernel`` (tensor descriptors, sm_90 and later)."""

STREAM_CONFIGS: list[tuple[dict[str, int], int, int]] = [
    ({"BLOCK": block}, 1, warps) for block in (1024, 2048, 4096, 8192) for warps in (4, 8)
]
"""GPU autotuning space of copy and triad."""

INTERPRETER_CONFIGS: dict[str, dict[str, int]] = {
    "gemm": {"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8},
    "copy": {"BLOCK": 16384},
    "triad": {"BLOCK": 16384},
    "rowwise": {"BLOCK_M": 64},
}
"""Fixed configurations under the interpreter: 4 programs at the small suite's sizes (GEMM
256³: 2×2 tiles of 4 K-steps; copy/triad 2^16: 4 blocks; softmax/layernorm 256 rows: 4×64)."""

INTERPRETER_PERSISTENT_PROGRAMS = 2
"""Programs of the persistent TMA GEMM under the interpreter: fewer than tiles, so each program
walks several (the small suite's 256³ GEMM has 4)."""

_TUNED: dict[str, Any] = {}


def _autotuned(benchmark: str) -> Any:
    """The autotuned kernel for ``benchmark`` (GPU only; built on first use, cached)."""
    if benchmark not in _TUNED:
        if benchmark == "gemm":
            kernel, space, key = matmul_kernel, GEMM_CONFIGS, ["M", "N", "K"]
        elif benchmark == "gemm_tma":
            kernel, space, key = matmul_tma_kernel, GEMM_TMA_CONFIGS, ["M", "N", "K", "B_KMAJOR"]
        elif benchmark == "copy":
            kernel, space, key = copy_kernel, STREAM_CONFIGS, ["N"]
        else:
            kernel, space, key = triad_kernel, STREAM_CONFIGS, ["N"]
        configs = [triton.Config(dict(meta), num_stages=s, num_warps=w) for meta, s, w in space]
        _TUNED[benchmark] = triton.autotune(configs=configs, key=key)(kernel)
    return _TUNED[benchmark]


def _config_dict(config: Any, **extra: Any) -> dict[str, Any]:
    """A ``triton.Config`` as the record's ``kernel_config``."""
    tuned = {"num_warps": config.num_warps, "num_stages": config.num_stages}
    return {**config.kwargs, **tuned, **extra}


def _rowwise_config(n: int) -> tuple[int, int, int]:
    """(BLOCK_M, BLOCK_N, num_warps) for the row-wise kernels: whole rows in registers.

    On a GPU few rows per program keep the tile at 2-16K elements and warps scale with it
    (tutorial 02's rule); the interpreter takes 64 rows per program (fewer programs, faster).
    """
    block_n = triton.next_power_of_2(n)
    if INTERPRET:
        return INTERPRETER_CONFIGS["rowwise"]["BLOCK_M"], block_n, 4
    block_m = max(1, min(16, 2048 // block_n))
    elements = block_m * block_n
    warps = 4 if elements < 2048 else 8 if elements < 4096 else 16
    return block_m, block_n, warps


# --------------------------------------------------------------------------------------------
# Launchers: each runs its kernel once into a preallocated output and returns the config used
# --------------------------------------------------------------------------------------------


def gemm(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, *, variant: str | None = None
) -> dict[str, Any]:
    """c = a @ b (a: M×K, b: K×N of any strides, c: M×N). Returns the kernel configuration.

    ``variant`` picks the kernel (``GEMM_VARIANTS``); by default the TMA kernel wherever the
    operands allow it (``gemm_variants``), else the pointer kernel. The rule is fixed, not
    timed per run: every GPU of a model then runs the same kernel, so the fleet's records
    compare like with like. The configuration says which ran (``variant``).
    """
    m, k = a.shape
    k2, n = b.shape
    if k != k2 or tuple(c.shape) != (m, n):
        shapes = f"a {tuple(a.shape)}, b {tuple(b.shape)}, c {tuple(c.shape)}"
        raise ValueError(f"gemm shapes do not match: {shapes}")
    allowed = gemm_variants(a, b, c)
    if variant is None:
        variant = allowed[-1]
    elif variant not in allowed:
        raise ValueError(
            f"gemm variant {variant!r} cannot run on these operands; possible: "
            f"{', '.join(allowed)} (the TMA kernel needs Triton 3.4 or later, a GPU of "
            "compute capability 9.0 or more, unit inner strides, 16-byte aligned rows, and "
            "fp8 B K-major)"
        )
    return _GEMM_LAUNCHERS[variant](a, b, c)


def gemm_variants(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple[str, ...]:
    """The GEMM kernels that can run on these operands, the preferred last (the pointer kernel
    always can).

    Tensor descriptors need sm_90's TMA on a GPU (the interpreter emulates them), unit inner
    strides, outer strides and base addresses aligned to 16 bytes; fp8 tensor cores read B
    K-major only.
    """
    if not TENSOR_DESCRIPTORS:
        return ("pointer",)
    if not INTERPRET and torch.cuda.get_device_capability(a.device) < (9, 0):
        return ("pointer",)
    b_kmajor = b.stride(0) == 1
    b_outer = b.stride(1) if b_kmajor else b.stride(0)
    inner = a.stride(1) == 1 and c.stride(1) == 1 and (b_kmajor or b.stride(1) == 1)
    aligned = all(
        (stride * t.element_size()) % 16 == 0 and t.data_ptr() % 16 == 0
        for t, stride in ((a, a.stride(0)), (b, b_outer), (c, c.stride(0)))
    )
    fp8_ok = a.element_size() > 1 or b_kmajor
    return ("pointer", "tma") if inner and aligned and fp8_ok else ("pointer",)


def _gemm_pointer(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> dict[str, Any]:
    m, k = a.shape
    n = b.shape[1]
    args = (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1))
    args += (c.stride(0), c.stride(1))
    upcast = INTERPRET and a.dtype == torch.bfloat16  # the interpreter's bf16 tl.dot is broken
    if INTERPRET:
        meta = INTERPRETER_CONFIGS["gemm"]
        grid = (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)
        matmul_kernel[grid](*args, **meta, UPCAST=upcast)
        return {**meta, "UPCAST": upcast, "variant": "pointer"}
    kernel = _autotuned("gemm")
    kernel[lambda meta: (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)](
        *args, UPCAST=False
    )
    return _config_dict(kernel.best_config, UPCAST=False, variant="pointer")


def _gemm_tma(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> dict[str, Any]:
    m, k = a.shape
    n = b.shape[1]
    b_kmajor = b.stride(0) == 1
    args = (a, b, c, m, n, k, a.stride(0), b.stride(0), b.stride(1), c.stride(0))
    upcast = INTERPRET and a.dtype == torch.bfloat16
    if INTERPRET:
        meta = INTERPRETER_CONFIGS["gemm"]
        programs = INTERPRETER_PERSISTENT_PROGRAMS
        grid = (min(programs, triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"])),)
        matmul_tma_kernel[grid](
            *args, **meta, B_KMAJOR=b_kmajor, NUM_PROGRAMS=programs, UPCAST=upcast
        )
        return {**meta, "UPCAST": upcast, "variant": "tma", "programs": programs}
    programs = torch.cuda.get_device_properties(a.device).multi_processor_count
    triton.set_allocator(_descriptor_scratch)  # (a context variable: set where it is used)
    kernel = _autotuned("gemm_tma")
    kernel[lambda meta: (min(programs, triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"])),)](
        *args, B_KMAJOR=b_kmajor, NUM_PROGRAMS=programs, UPCAST=False
    )
    return _config_dict(kernel.best_config, UPCAST=False, variant="tma", programs=programs)


_GEMM_LAUNCHERS: dict[str, Callable[..., dict[str, Any]]] = {
    "pointer": _gemm_pointer,
    "tma": _gemm_tma,
}


def _descriptor_scratch(size: int, alignment: int, stream: Any) -> torch.Tensor:
    """Global memory for descriptors built on a GPU (``triton.set_allocator``; the interpreter
    needs none)."""
    return torch.empty(size, device=torch.cuda.current_device(), dtype=torch.int8)


def copy(src: torch.Tensor, dst: torch.Tensor) -> dict[str, Any]:
    """dst = src, both contiguous with the same number of elements."""
    n = _stream_size(src, dst)
    if INTERPRET:
        meta = INTERPRETER_CONFIGS["copy"]
        copy_kernel[(triton.cdiv(n, meta["BLOCK"]),)](src, dst, n, **meta)
        return dict(meta)
    kernel = _autotuned("copy")
    kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](src, dst, n)
    return _config_dict(kernel.best_config)


def triad(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, scalar: float) -> dict[str, Any]:
    """a = b + scalar·c, all contiguous with the same number of elements."""
    n = _stream_size(a, b, c)
    if INTERPRET:
        meta = INTERPRETER_CONFIGS["triad"]
        triad_kernel[(triton.cdiv(n, meta["BLOCK"]),)](a, b, c, scalar, n, **meta)
        return dict(meta)
    kernel = _autotuned("triad")
    kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](a, b, c, scalar, n)
    return _config_dict(kernel.best_config)


def softmax(x: torch.Tensor, y: torch.Tensor) -> dict[str, Any]:
    """y = softmax(x, dim=-1) for 2-D x and y with unit column stride."""
    m, n = _rowwise_shape(x, y)
    block_m, block_n, warps = _rowwise_config(n)
    softmax_kernel[(triton.cdiv(m, block_m),)](
        x, y, m, n, x.stride(0), y.stride(0), BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps
    )
    return {"BLOCK_M": block_m, "BLOCK_N": block_n, "num_warps": warps}


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, y: torch.Tensor, eps: float
) -> dict[str, Any]:
    """y = layer_norm(x, (N,), weight, bias, eps) for 2-D x and y with unit column stride."""
    m, n = _rowwise_shape(x, y)
    if weight.numel() != n or bias.numel() != n:
        raise ValueError(f"layer_norm weight/bias must have {n} elements")
    block_m, block_n, warps = _rowwise_config(n)
    layernorm_kernel[(triton.cdiv(m, block_m),)](
        x, y, weight, bias, m, n, x.stride(0), y.stride(0), eps,
        BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps,
    )  # fmt: skip
    return {"BLOCK_M": block_m, "BLOCK_N": block_n, "num_warps": warps}


def _stream_size(*tensors: torch.Tensor) -> int:
    n = tensors[0].numel()
    if any(t.numel() != n or not t.is_contiguous() for t in tensors):
        raise ValueError("streaming kernels take contiguous tensors of equal size")
    return n


def _rowwise_shape(x: torch.Tensor, y: torch.Tensor) -> tuple[int, int]:
    if x.dim() != 2 or x.shape != y.shape or x.stride(1) != 1 or y.stride(1) != 1:
        raise ValueError("row-wise kernels take 2-D tensors of equal shape with unit column stride")
    return int(x.shape[0]), int(x.shape[1])

"""Every Triton kernel against torch, run for real (interpreted on a CPU-only machine).

Sizes follow reference §6: 1-4 programs per kernel, shapes ≤ 256. Ragged shapes exercise the
masks (a tile or block that hangs over the edge). The comparisons use
``torch.testing.assert_close`` with fp32 references, independently of the harness's own check.
"""

from __future__ import annotations

import pytest
import torch

from probes.gpubench import kernels
from probes.gpubench.work import work

BF16 = {"rtol": 1.6e-2, "atol": 1e-2}


def randn(device: str, *size: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(*size, generator=generator, device=device).to(dtype)


@pytest.mark.parametrize("variant", kernels.GEMM_VARIANTS)
@pytest.mark.parametrize(
    ("m", "n", "k"),
    [(256, 256, 256), (200, 136, 72)],  # 2×2 tiles of 128; the second hangs over M, N and K
)
def test_bf16_gemm_matches_torch_matmul(device: str, variant: str, m: int, n: int, k: int) -> None:
    a = randn(device, m, k, dtype=torch.bfloat16, seed=1)
    b = randn(device, k, n, dtype=torch.bfloat16, seed=2)
    c = torch.full((m, n), float("nan"), device=device, dtype=torch.bfloat16)
    if variant not in kernels.gemm_variants(a, b, c):
        pytest.skip(f"no {variant} GEMM on this GPU (needs compute capability 9.0)")
    config = kernels.gemm(a, b, c, variant=variant)
    reference = torch.matmul(a.float(), b.float())
    scale = float(reference.square().mean().sqrt())  # ~sqrt(K): bf16 rounding is relative
    torch.testing.assert_close(c.float(), reference, rtol=1.6e-2, atol=1e-2 * scale)
    # The record must say how the kernel ran: bf16 tiles upcast only under the interpreter.
    assert config["UPCAST"] is kernels.INTERPRET
    assert config["variant"] == variant
    assert {"BM", "BN", "BK", "GROUP_M"} <= set(config)


@pytest.mark.parametrize("variant", kernels.GEMM_VARIANTS)
@pytest.mark.parametrize(("m", "n", "k"), [(256, 256, 256), (136, 104, 96)])
def test_fp8_gemm_matches_torch_matmul(device: str, variant: str, m: int, n: int, k: int) -> None:
    if not kernels.INTERPRET and torch.cuda.get_device_capability() < (8, 9):
        # No fp8 tensor cores: the suite must skip fp8 with a reason instead of running it.
        from probes.gpubench.device import gpu_device
        from probes.gpubench.harness import skip_reason

        assert skip_reason("gemm", "fp8", gpu_device(torch.cuda.current_device()))
        return
    a = randn(device, m, k, dtype=torch.float8_e4m3fn, seed=3)
    b_storage = randn(device, n, k, dtype=torch.float8_e4m3fn, seed=4)  # column-major B
    b = b_storage.T
    c = torch.full((m, n), float("nan"), device=device, dtype=torch.bfloat16)
    if variant not in kernels.gemm_variants(a, b, c):
        pytest.skip(f"no {variant} GEMM on this GPU (needs compute capability 9.0)")
    assert kernels.gemm(a, b, c, variant=variant)["variant"] == variant
    # e4m3 -> bf16 is exact, so torch.matmul in bf16 sees the very same operands.
    reference = torch.matmul(a.to(torch.bfloat16).float(), b.to(torch.bfloat16).float())
    scale = float(reference.square().mean().sqrt())
    torch.testing.assert_close(c.float(), reference, rtol=3e-2, atol=3e-2 * scale)
    assert c.dtype == torch.bfloat16


def test_the_tma_gemm_is_offered_only_where_descriptors_can_address_the_operands(
    device: str,
) -> None:
    if not kernels.INTERPRET and torch.cuda.get_device_capability() < (9, 0):
        a = torch.zeros(64, 64, device=device, dtype=torch.bfloat16)
        assert kernels.gemm_variants(a, a, a) == ("pointer",)  # no TMA before Hopper
        return
    bf16, fp8 = torch.bfloat16, torch.float8_e4m3fn
    a = torch.zeros(64, 64, device=device, dtype=bf16)
    c = torch.zeros(64, 64, device=device, dtype=bf16)
    assert kernels.gemm_variants(a, a, c) == ("pointer", "tma")
    assert kernels.gemm_variants(a, a.T, c) == ("pointer", "tma")  # K-major B
    # Rows of 100 bf16 are 200 bytes: not a multiple of 16, so no descriptor.
    narrow = torch.zeros(64, 100, device=device, dtype=bf16)
    assert kernels.gemm_variants(a, narrow, torch.zeros(64, 100, device=device, dtype=bf16)) == (
        "pointer",
    )
    # A strided view (every other column) has no unit inner stride.
    strided = torch.zeros(64, 128, device=device, dtype=bf16)[:, ::2]
    assert kernels.gemm_variants(strided, a, c) == ("pointer",)
    # fp8 tensor cores read B K-major only.
    a8 = torch.zeros(64, 64, device=device, dtype=fp8)
    assert kernels.gemm_variants(a8, a8, c) == ("pointer",)
    assert kernels.gemm_variants(a8, a8.T.contiguous().T, c) == ("pointer", "tma")
    with pytest.raises(ValueError, match="cannot run on these operands"):
        kernels.gemm(a8, a8, c, variant="tma")


def test_the_gemm_runs_the_tma_kernel_by_default_wherever_it_can(device: str) -> None:
    """One fixed rule, not a per-run timing: every GPU of a model runs the same kernel."""
    a = randn(device, 64, 64, dtype=torch.bfloat16, seed=7)
    c = torch.empty(64, 64, device=device, dtype=torch.bfloat16)
    expected = "tma" if "tma" in kernels.gemm_variants(a, a, c) else "pointer"
    assert kernels.gemm(a, a, c)["variant"] == expected
    # Rows of 100 bf16 (200 bytes) cannot be described: the pointer kernel takes them.
    b = randn(device, 64, 100, dtype=torch.bfloat16, seed=8)
    wide = torch.full((64, 100), float("nan"), device=device, dtype=torch.bfloat16)
    assert kernels.gemm(a, b, wide)["variant"] == "pointer"
    reference = torch.matmul(a.float(), b.float())
    scale = float(reference.square().mean().sqrt())
    torch.testing.assert_close(wide.float(), reference, rtol=1.6e-2, atol=1e-2 * scale)


def test_gemm_refuses_mismatched_shapes(device: str) -> None:
    a = torch.zeros(4, 8, device=device, dtype=torch.bfloat16)
    b = torch.zeros(16, 4, device=device, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="do not match"):
        kernels.gemm(a, b, torch.zeros(4, 4, device=device, dtype=torch.bfloat16))


@pytest.mark.parametrize(("n", "dtype"), [(2**16, torch.float32), (50_000, torch.bfloat16)])
def test_copy_is_exact(device: str, n: int, dtype: torch.dtype) -> None:
    src = randn(device, n, dtype=dtype)
    dst = torch.full_like(src, 7.0)
    kernels.copy(src, dst)
    assert torch.equal(dst, src.clone())


@pytest.mark.parametrize("n", [2**16, 49_999])
def test_triad_matches_b_plus_s_c(device: str, n: int) -> None:
    b = randn(device, n, dtype=torch.float32, seed=5)
    c = randn(device, n, dtype=torch.float32, seed=6)
    a = torch.full_like(b, float("nan"))
    kernels.triad(a, b, c, 3.0)
    torch.testing.assert_close(a, b + 3.0 * c, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("m", "n", "dtype"),
    [(256, 256, torch.bfloat16), (200, 300, torch.bfloat16), (64, 100, torch.float32)],
)
def test_softmax_matches_torch_softmax(device: str, m: int, n: int, dtype: torch.dtype) -> None:
    x = randn(device, m, n, dtype=dtype, seed=7) * 4
    y = torch.full_like(x, float("nan"))
    kernels.softmax(x, y)
    reference = torch.softmax(x.float(), dim=-1)
    tolerance = BF16 if dtype == torch.bfloat16 else {"rtol": 1e-5, "atol": 1e-7}
    torch.testing.assert_close(y.float(), reference, **tolerance)
    assert torch.allclose(y.float().sum(dim=-1), torch.ones(m, device=device), atol=2e-2)


@pytest.mark.parametrize(("m", "n"), [(256, 256), (130, 200)])
def test_layer_norm_matches_torch(device: str, m: int, n: int) -> None:
    x = randn(device, m, n, dtype=torch.bfloat16, seed=8) * 2 + 1
    weight = (randn(device, n, dtype=torch.float32, seed=9) * 0.1 + 1).to(torch.bfloat16)
    bias = (randn(device, n, dtype=torch.float32, seed=10) * 0.1).to(torch.bfloat16)
    y = torch.full_like(x, float("nan"))
    kernels.layer_norm(x, weight, bias, y, 1e-5)
    reference = torch.nn.functional.layer_norm(x.float(), (n,), weight.float(), bias.float(), 1e-5)
    torch.testing.assert_close(y.float(), reference, **BF16)


def test_kernel_names_are_the_jit_functions() -> None:
    """Records and Proton name kernels by KERNEL_NAMES: they must be the real functions."""
    for benchmark, name in kernels.KERNEL_NAMES.items():
        assert getattr(kernels, name).fn.__name__ == name, benchmark


@pytest.mark.parametrize(
    ("benchmark", "arg", "shape", "dtype", "metric"),
    [
        ("gemm", "a_ptr", {"M": 64, "N": 32, "K": 16}, torch.bfloat16, "flops16"),
        ("gemm", "a_ptr", {"M": 64, "N": 32, "K": 16}, torch.float8_e4m3fn, "flops8"),
        ("copy", "src_ptr", {"N": 1000}, torch.float32, "flops32"),
        ("layernorm", "x_ptr", {"M": 4, "N": 8}, torch.bfloat16, "flops16"),
    ],
)
def test_launch_metadata_comes_from_work(
    benchmark: str, arg: str, shape: dict, dtype: torch.dtype, metric: str
) -> None:
    """What Proton's LaunchHook records on a GPU is work(): flops<bits> by width, bytes."""
    args = {arg: torch.empty(1, dtype=dtype), **shape}
    meta = kernels.LAUNCH_METADATA[benchmark](None, None, args)
    expected = work(benchmark, shape, kernels.dtype_name(dtype))
    assert meta == {
        "name": kernels.kernel_label(benchmark, shape),
        metric: expected.flops,
        "bytes": expected.bytes,
    }
    if not kernels.INTERPRET:  # compiled kernels carry it; the interpreter never calls it
        kernel = getattr(kernels, kernels.KERNEL_NAMES[benchmark])
        assert kernel.launch_metadata is kernels.LAUNCH_METADATA[benchmark]


def test_kernel_label_follows_the_shape_keys() -> None:
    label = kernels.kernel_label("gemm", {"K": 3, "N": 2, "M": 1})
    assert label == "matmul_kernel [M=1, N=2, K=3]"

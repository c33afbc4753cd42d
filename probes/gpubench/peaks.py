"""Dense peak throughput of the GPUs annex knows: the yardstick for "fraction of peak".

NVIDIA's headline tensor figures are 2:4-sparse; these are dense (half of them). Values and
sources: ../shared/reference/gpu-benchmarks-telemetry.md §2.2 (A100, H100), NVIDIA's H200
datasheet, and NVIDIA's GB200 NVL72 datasheet for GB200 (rack figures with sparsity ÷ 72 GPUs
÷ 2; TDP: the 2,700 W superchip's share per GPU, 1,200 W). A SKU is matched on the product
name as DCGM (``modelName``) or GPU feature discovery (``nvidia.com/gpu.product``) spell it,
and on memory size where names are ambiguous; PCIe and NVL parts have other peaks and are
deliberately not matched to SXM figures. An unmatched GPU gets no peak (``None``), never a
guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

H100_SOURCE = "https://glennklockwood.com/garden/processors/h100"
A100_SOURCE = "https://glennklockwood.com/garden/processors/A100"
H200_SOURCE = "https://www.nvidia.com/en-us/data-center/h200/"
GB200_SOURCE = "https://www.nvidia.com/en-us/data-center/gb200-nvl72/"


@dataclass(frozen=True)
class Peak:
    """One GPU SKU's dense peaks."""

    gpu_sku: str
    model_patterns: tuple[str, ...]
    """Normalised product names (see ``normalise_model``) that identify this SKU."""
    tflops_dense: dict[str, float]
    """dtype -> dense TFLOP/s (tensor cores for bf16/fp16/fp8/tf32; fp32 is the vector rate)."""
    hbm_gbps: float
    tdp_watts: float
    source_url: str
    memory_mib: tuple[int, int] | None = None
    """Inclusive range of the memory size in MiB, when the name alone is ambiguous."""


PEAKS: tuple[Peak, ...] = (
    Peak(
        "A100-SXM4-40GB",
        ("NVIDIA A100 SXM4 40GB",),
        {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5},
        1555.0,
        400.0,
        A100_SOURCE,
    ),
    Peak(
        "A100-SXM4-80GB",
        ("NVIDIA A100 SXM4 80GB",),
        {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5},
        2039.0,
        400.0,
        A100_SOURCE,
    ),
    Peak(
        "H100-SXM5-80GB",
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"),
        {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp32": 66.9},
        3350.0,
        700.0,
        H100_SOURCE,
    ),
    Peak(
        "H200-SXM-141GB",
        ("NVIDIA H200", "NVIDIA H200 141GB HBM3E"),
        {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp32": 66.9},
        4800.0,
        700.0,
        H200_SOURCE,
        memory_mib=(130_000, 150_000),
    ),
    Peak(
        "GB200-186GB",
        ("NVIDIA GB200",),
        {"bf16": 2500.0, "fp16": 2500.0, "fp8": 5000.0, "tf32": 1250.0, "fp32": 80.0},
        8000.0,
        1200.0,
        GB200_SOURCE,
    ),
)

_BY_SKU: dict[str, Peak] = {peak.gpu_sku: peak for peak in PEAKS}
_SEPARATORS = re.compile(r"[\s_\-]+")


def normalise_model(model_name: str) -> str:
    """GFD's ``NVIDIA-A100-SXM4-80GB`` and DCGM's ``NVIDIA A100-SXM4-80GB`` -> one spelling."""
    return _SEPARATORS.sub(" ", model_name.strip()).upper()


def sku_for(model_name: str | None, memory_mib: int | None = None) -> str | None:
    """The SKU of a GPU from its product name (DCGM or GFD spelling), or None when unknown."""
    if not model_name:
        return None
    name = normalise_model(model_name)
    for peak in PEAKS:
        if name not in peak.model_patterns:
            continue
        if peak.memory_mib is not None and memory_mib is not None:
            low, high = peak.memory_mib
            if not low <= memory_mib <= high:
                continue
        return peak.gpu_sku
    return None


def peak_for(gpu_sku: str | None, dtype: str) -> tuple[float | None, float | None, str | None]:
    """``(dense TFLOP/s for dtype, HBM GB/s, source URL)``; Nones where annex has no figure."""
    peak = _BY_SKU.get(gpu_sku) if gpu_sku else None
    if peak is None:
        return None, None, None
    return peak.tflops_dense.get(dtype), peak.hbm_gbps, peak.source_url


def peak_rows() -> list[dict[str, object]]:
    """The whole table, one row per (SKU, dtype), for the warehouse's reference copy."""
    return [
        {
            "gpu_sku": peak.gpu_sku,
            "dtype": dtype,
            "peak_tflops_dense": tflops,
            "peak_hbm_gbps": peak.hbm_gbps,
            "tdp_watts": peak.tdp_watts,
            "source_url": peak.source_url,
        }
        for peak in PEAKS
        for dtype, tflops in peak.tflops_dense.items()
    ]

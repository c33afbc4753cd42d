"""The text a dcgm-exporter serves on ``/metrics``, for one node, in either naming generation.

The layout follows dcgm-exporter's own template (``internal/pkg/rendermetrics/
render_metrics.go``): per counter a ``# HELP`` and ``# TYPE`` line, then one line per GPU
(or MIG instance) with the labels in the template's order -- ``gpu``, ``UUID``,
``pci_bus_id``, ``device``, ``modelName``, then ``GPU_I_PROFILE``/``GPU_I_ID`` on a MIG
instance, the host label, then the label fields and Kubernetes attributes in sorted key order
(``DCGM_FI_DRIVER_VERSION``, ``container``, ``namespace``, ``pod``). Values are formatted the
way the exporter's ``toString`` does (``%d`` for DCGM integer fields, ``%f`` for doubles), and
there are no timestamps. Counters are listed in ``etc/default-counters.csv`` order.

Generations (set per node pool by the world's activity model):

* "4.8": the names used up to exporter 4.8.x, units %, mJ, MHz, MiB; driver label
  ``DCGM_FI_DRIVER_VERSION``; host label ``Hostname`` (older 4.x) or ``hostname`` (4.6.0-4.8.3),
  chosen per node pool.
* "4.9": exporter 4.9.0's DCGM 4.7 names and units (0-1 ratio, J, Hz, bytes); driver label
  ``DCGM_FI_SYSTEM_DRIVER_VERSION``; host label ``hostname``.

The 4.9 names are written here independently of annex's collector (the simulator never
imports annex); they are the DCGM 4.7 field names found in NVIDIA's DCGM Python bindings
(``_DEPRECATED_ALIASES``, "renamed per DCGM Field Naming Standard") and go-dcgm's
``base_unit_fields_test.go``; ``DCGM_FI_DEV_GPU_UTIL_RATIO`` as a 0-1 ratio and the
``_FB_*_BYTES`` names come from a secondary source (see ``collectors/telemetry/fields.py``).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simulator.telemetry.signals import PROFILING, GpuSignals, signals_for
from simulator.world.activity import dcgm_model_name

if TYPE_CHECKING:
    from simulator.world.activity import GpuActivity, PastHolding

SAMPLE_INTERVAL_SECONDS = 15.0
"""DCGM's watch cadence in the simulation: a scrape returns the sample of the last multiple
of this many seconds (and the simulated Prometheus scrapes on the same grid)."""

_MIB = 1 << 20


@dataclass(frozen=True)
class ExportedField:
    """One counter of one generation: its name, type, help, and how values are written."""

    canonical: str
    name: str
    prom_type: str  # "gauge" | "counter"
    help: str
    integer: bool  # a DCGM INT64 field, written with %d
    scale: float  # exported = canonical * scale (before integer truncation)

    def text(self, canonical: float) -> str:
        """The value as the exposition line writes it: ``%d`` or Go's ``%f`` (six decimals)."""
        v = canonical * self.scale
        if self.integer:
            return str(math.floor(v + 1e-9))
        return f"{v:.6f}"

    def texts(self, canonicals: list[float]) -> list[str]:
        """``text`` for a whole series at once."""
        sc, floor = self.scale, math.floor
        if self.integer:
            return [str(floor(v * sc + 1e-9)) for v in canonicals]
        return [f"{v * sc:.6f}" for v in canonicals]

    def exported(self, canonical: float) -> float:
        """The number the exposition line carries (what Prometheus stores)."""
        return float(self.text(canonical))

    def prom_texts(self, canonicals: list[float]) -> list[str]:
        """How Prometheus' API writes the stored values (Go ``FormatFloat(v, 'f', -1)``):
        the exposition text without trailing zeros, which is its shortest round trip."""
        if self.integer:
            return self.texts(canonicals)
        return [t.rstrip("0").rstrip(".") for t in self.texts(canonicals)]


def _g(
    canonical: str, name: str, prom_type: str, help: str, integer: bool, scale: float = 1.0
) -> ExportedField:
    return ExportedField(canonical, name, prom_type, help, integer, scale)


_PROF_HELP = {
    "gr_engine_active": "Ratio of time the graphics engine is active",
    "sm_active": "The ratio of cycles an SM has at least 1 warp assigned",
    "sm_occupancy": "The ratio of number of warps resident on an SM",
    "tensor_active": "Ratio of cycles the tensor (HMMA) pipe is active",
    "dram_active": "Ratio of cycles the device memory interface is active sending or receiving "
    "data",
}

GENERATIONS: dict[str, tuple[ExportedField, ...]] = {
    "4.8": (
        _g("sm_clock", "DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", True),
        _g("mem_clock", "DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", True),
        _g("memory_temp", "DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", True),
        _g("gpu_temp", "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", True),
        _g("power_usage", "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", False),
        _g(
            "total_energy_consumption",
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
            "counter",
            "Total energy consumption since boot (in mJ).",
            True,
            1000.0,
        ),
        _g(
            "pcie_replay_counter",
            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
            "counter",
            "Total number of PCIe retries.",
            True,
        ),
        _g("gpu_util", "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", True, 100.0),
        _g(
            "xid_errors",
            "DCGM_FI_DEV_XID_ERRORS",
            "gauge",
            "Value of the last XID error encountered.",
            True,
        ),
        _g("fb_free", "DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", True),
        _g("fb_used", "DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", True),
        _g(
            "ecc_sbe_vol_total",
            "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
            "counter",
            "Total number of single-bit volatile ECC errors.",
            True,
        ),
        _g(
            "ecc_dbe_vol_total",
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
            "counter",
            "Total number of double-bit volatile ECC errors.",
            True,
        ),
        _g(
            "uncorrectable_remapped_rows",
            "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
            "counter",
            "Number of remapped rows for uncorrectable errors",
            True,
        ),
        _g(
            "correctable_remapped_rows",
            "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
            "counter",
            "Number of remapped rows for correctable errors",
            True,
        ),
        _g(
            "row_remap_failure",
            "DCGM_FI_DEV_ROW_REMAP_FAILURE",
            "gauge",
            "Whether remapping of rows has failed",
            True,
        ),
        _g(
            "gr_engine_active",
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            "gauge",
            _PROF_HELP["gr_engine_active"] + ".",
            False,
        ),
        _g("sm_active", "DCGM_FI_PROF_SM_ACTIVE", "gauge", _PROF_HELP["sm_active"] + ".", False),
        _g(
            "sm_occupancy",
            "DCGM_FI_PROF_SM_OCCUPANCY",
            "gauge",
            _PROF_HELP["sm_occupancy"] + ".",
            False,
        ),
        _g(
            "tensor_active",
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
            "gauge",
            _PROF_HELP["tensor_active"] + ".",
            False,
        ),
        _g(
            "dram_active",
            "DCGM_FI_PROF_DRAM_ACTIVE",
            "gauge",
            _PROF_HELP["dram_active"] + ".",
            False,
        ),
    ),
    "4.9": (
        _g(
            "sm_clock",
            "DCGM_FI_DEV_SM_CLOCK_HERTZ",
            "gauge",
            "SM clock frequency (in Hz).",
            True,
            1e6,
        ),
        _g(
            "mem_clock",
            "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ",
            "gauge",
            "Memory clock frequency (in Hz).",
            True,
            1e6,
        ),
        _g(
            "memory_temp",
            "DCGM_FI_DEV_MEMORY_TEMP_CELSIUS",
            "gauge",
            "Memory temperature (in C).",
            True,
        ),
        _g("gpu_temp", "DCGM_FI_DEV_GPU_TEMP_CELSIUS", "gauge", "GPU temperature (in C).", True),
        _g("power_usage", "DCGM_FI_DEV_BOARD_POWER_WATTS", "gauge", "Power draw (in W).", False),
        _g(
            "total_energy_consumption",
            "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL",
            "counter",
            "Total energy consumption since the driver was last reloaded (in J).",
            True,
        ),
        _g(
            "pcie_replay_counter",
            "DCGM_FI_DEV_PCIE_REPLAY_TOTAL",
            "counter",
            "Total number of PCIe retries.",
            True,
        ),
        _g(
            "gpu_util",
            "DCGM_FI_DEV_GPU_UTIL_RATIO",
            "gauge",
            "GPU utilization (ratio 0.0-1.0).",
            False,
        ),
        _g(
            "xid_errors",
            "DCGM_FI_DEV_XID_ERROR",
            "gauge",
            "Value of the last XID error encountered.",
            True,
        ),
        _g(
            "fb_free",
            "DCGM_FI_DEV_FB_FREE_BYTES",
            "gauge",
            "Framebuffer memory free (in bytes).",
            True,
            float(_MIB),
        ),
        _g(
            "fb_used",
            "DCGM_FI_DEV_FB_USED_BYTES",
            "gauge",
            "Framebuffer memory used (in bytes).",
            True,
            float(_MIB),
        ),
        _g(
            "ecc_sbe_vol_total",
            "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
            "counter",
            "Total number of single-bit volatile ECC errors.",
            True,
        ),
        _g(
            "ecc_dbe_vol_total",
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
            "counter",
            "Total number of double-bit volatile ECC errors.",
            True,
        ),
        _g(
            "uncorrectable_remapped_rows",
            "DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL",
            "counter",
            "Number of remapped rows for uncorrectable errors",
            True,
        ),
        _g(
            "correctable_remapped_rows",
            "DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL",
            "counter",
            "Number of remapped rows for correctable errors",
            True,
        ),
        _g(
            "row_remap_failure",
            "DCGM_FI_DEV_ROW_REMAP_FAILED",
            "gauge",
            "Whether remapping of rows has failed",
            True,
        ),
        _g(
            "gr_engine_active",
            "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO",
            "gauge",
            _PROF_HELP["gr_engine_active"] + ".",
            False,
        ),
        _g(
            "sm_active", "DCGM_FI_PROF_SM_UTIL_RATIO", "gauge", _PROF_HELP["sm_active"] + ".", False
        ),
        _g(
            "sm_occupancy",
            "DCGM_FI_PROF_SM_OCCUPANCY_RATIO",
            "gauge",
            _PROF_HELP["sm_occupancy"] + ".",
            False,
        ),
        _g(
            "tensor_active",
            "DCGM_FI_PROF_TENSOR_UTIL_RATIO",
            "gauge",
            _PROF_HELP["tensor_active"] + ".",
            False,
        ),
        _g(
            "dram_active",
            "DCGM_FI_PROF_DRAM_UTIL_RATIO",
            "gauge",
            _PROF_HELP["dram_active"] + ".",
            False,
        ),
    ),
}

DRIVER_LABEL = {"4.8": "DCGM_FI_DRIVER_VERSION", "4.9": "DCGM_FI_SYSTEM_DRIVER_VERSION"}

_BUS_IDS = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)  # an HGX H100 board's GPU buses


def pci_bus_id(index: int) -> str:
    bus = _BUS_IDS[index % len(_BUS_IDS)] + 0x100 * (index // len(_BUS_IDS))
    return f"00000000:{bus:02X}:00.0"


def host_label(generation: str, pool: str | None) -> str:
    """``Hostname`` (exporters before 4.6.0-4.8.3) or ``hostname``, stable per node pool."""
    if generation == "4.8" and zlib.crc32((pool or "").encode()) % 2 == 0:
        return "Hostname"
    return "hostname"


def sample_time(t: float) -> float:
    """The DCGM sample a read at ``t`` returns: the last watch-cadence instant at or before."""
    return math.floor(t / SAMPLE_INTERVAL_SECONDS) * SAMPLE_INTERVAL_SECONDS


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def gpu_labels(
    activity: GpuActivity,
    host: str,
    *,
    workload: bool,
    mig: tuple[int, str] | None = None,
    held: PastHolding | None = None,
) -> list[tuple[str, str]]:
    """The exporter's labels for one GPU (or MIG instance ``(instance id, profile)``), in order;
    with ``held`` (a pod of the world's past holding the GPU), that pod's labels."""
    gpu = activity.gpu
    labels = [
        ("gpu", str(gpu.index)),
        ("UUID", gpu.uuid),
        ("pci_bus_id", pci_bus_id(gpu.index)),
        ("device", f"nvidia{gpu.index}"),
        ("modelName", dcgm_model_name(gpu)),
    ]
    if mig is not None:
        labels += [("GPU_I_PROFILE", mig[1]), ("GPU_I_ID", str(mig[0]))]
    labels.append((host, gpu.node))
    labels.append((DRIVER_LABEL[activity.exporter_generation], activity.driver_version))
    if held is not None:
        labels += [("container", held.container), ("namespace", held.namespace), ("pod", held.pod)]
    elif workload and activity.pod:
        labels += [
            ("container", activity.container or ""),
            ("namespace", activity.namespace or ""),
            ("pod", activity.pod),
        ]
    return labels


def held_at(activity: GpuActivity, t: float) -> PastHolding | None:
    """The pod of the world's past holding the GPU at ``t``, if any."""
    for held in activity.past:
        if held.begin <= t < held.end:
            return held
    return None


def entities(activity: GpuActivity, field: str) -> list[tuple[int, str] | None]:
    """The entities a field is reported for: the GPU, or each MIG instance for profiling."""
    migs = activity.gpu.mig_devices
    if migs and field in PROFILING:
        return [(i + 1, profile) for i, (_uuid, profile) in enumerate(migs)]
    return [None]


def render(
    activities: Iterable[GpuActivity],
    t: float,
    *,
    pool: str | None = None,
    value_of: Callable[[GpuSignals, str, float], float | None] | None = None,
) -> str:
    """The ``/metrics`` body of one node's exporter at wall-clock ``t``."""
    gpus = sorted(activities, key=lambda a: a.gpu.index)
    if not gpus:
        return ""
    generation = gpus[0].exporter_generation
    host = host_label(generation, pool)
    s = sample_time(t)
    lines: list[str] = []
    for exported in GENERATIONS[generation]:
        block: list[str] = []
        for activity in gpus:
            signals = signals_for(activity)
            v = (value_of or _value)(signals, exported.canonical, s)
            if v is None:
                continue
            text = exported.text(v)
            workload = s >= signals.since
            held = held_at(activity, s) if activity.past else None
            for mig in entities(activity, exported.canonical):
                labels = gpu_labels(activity, host, workload=workload, mig=mig, held=held)
                body = ",".join(f'{k}="{escape(v)}"' for k, v in labels)
                block.append(f"{exported.name}{{{body}}} {text}")
        if block:
            lines.append(f"# HELP {exported.name} {exported.help}")
            lines.append(f"# TYPE {exported.name} {exported.prom_type}")
            lines.extend(block)
    return "\n".join(lines) + "\n"


def _value(signals: GpuSignals, field: str, t: float) -> float | None:
    return signals.value(field, t)

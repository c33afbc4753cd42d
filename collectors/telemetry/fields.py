"""The DCGM field alias table: every exporter name annex understands, keyed on DCGM field ID.

dcgm-exporter has exported the same measurement under two naming generations, so annex maps
each name it receives to one *canonical* metric (lowercase, e.g. ``gpu_util``) in one canonical
unit (``ratio`` 0-1, ``watts``, ``joules``, ``mhz``, ``celsius``, ``mib``, ``count``, ``code``):

* **"4.8"** -- the names dcgm-exporter used up to 4.8.x (``etc/default-counters.csv``):
  ``DCGM_FI_DEV_GPU_UTIL`` in %, ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` in mJ, clocks in MHz,
  framebuffer in MiB, profiling ratios ``DCGM_FI_PROF_*_ACTIVE``; driver label
  ``DCGM_FI_DRIVER_VERSION``; host label ``Hostname`` (``hostname`` from 4.6.0-4.8.3).
* **"4.9"** -- exporter 4.9.0 switched 23 fields to the DCGM 4.7 names and units (MHz -> Hz,
  mJ -> J, % -> 0-1 ratio, MiB -> bytes) and renamed the label ``DCGM_FI_DRIVER_VERSION`` to
  ``DCGM_FI_SYSTEM_DRIVER_VERSION`` (reference gpu-benchmarks-telemetry.md §3.2, citing
  https://newreleases.io/project/github/NVIDIA/dcgm-exporter/release/4.9.0).

Where the new names come from (looked up with the search tool; the 4.9.0 release PR and its
``default-counters.csv`` are NOT in the searchable index, so the 4.9 names below are DCGM
4.7's own field names, which is what the reference says 4.9.0 exports):

1. NVIDIA DCGM Python bindings ``dcgm_fields.py`` (NVIDIA/DCGM, "Python bindings for the
   internal API of DCGM library (dcgm_fields.h)", 2025-2026), block ``_DEPRECATED_ALIASES``
   "renamed per DCGM Field Naming Standard (see dcgmlib/dcgm_field_naming.py)", IDs unchanged:
   140 ``DCGM_FI_DEV_MEMORY_TEMP`` -> ``DCGM_FI_DEV_MEMORY_TEMP_CELSIUS``;
   150 ``DCGM_FI_DEV_GPU_TEMP`` -> ``DCGM_FI_DEV_GPU_TEMP_CELSIUS``;
   155 ``DCGM_FI_DEV_POWER_USAGE`` -> ``DCGM_FI_DEV_BOARD_POWER_WATTS``;
   202 ``DCGM_FI_DEV_PCIE_REPLAY_COUNTER`` -> ``DCGM_FI_DEV_PCIE_REPLAY_TOTAL``;
   230 ``DCGM_FI_DEV_XID_ERRORS`` -> ``DCGM_FI_DEV_XID_ERROR``;
   393 ``DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS`` -> ``DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL``;
   394 ``DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS`` -> ``DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL``;
   395 ``DCGM_FI_DEV_ROW_REMAP_FAILURE`` -> ``DCGM_FI_DEV_ROW_REMAP_FAILED``;
   1 ``DCGM_FI_DRIVER_VERSION`` -> ``DCGM_FI_SYSTEM_DRIVER_VERSION``; and the profiling fields
   1001-1005 ``DCGM_FI_PROF_{GR_ENGINE,SM,SM_OCCUPANCY,TENSOR,DRAM}_..._RATIO`` (the
   ``_ACTIVE`` / ``SM_OCCUPANCY`` names kept as aliases). Also
   https://github.com/NVIDIA/DCGM/blob/master/dcgmlib/dcgm_field_naming.py (units ``HERTZ``,
   ``JOULES``, ``BYTES``, suffix ``RATIO``/``TOTAL``) and NVIDIA/go-dcgm
   ``pkg/dcgm/alias_resolution_test.go`` (dcgm_gpu_temp -> DCGM_FI_DEV_GPU_TEMP_CELSIUS,
   dcgm_power_usage -> DCGM_FI_DEV_BOARD_POWER_WATTS, dcgm_xid_errors -> DCGM_FI_DEV_XID_ERROR).
2. Base-unit fields with their own IDs, https://github.com/NVIDIA/go-dcgm/blob/main/pkg/dcgm/
   base_unit_fields_test.go: 1603 ``DCGM_FI_DEV_SM_CLOCK_HERTZ`` (legacy 100),
   1604 ``DCGM_FI_DEV_MEMORY_CLOCK_HERTZ`` (legacy 101), 1611
   ``DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL`` (legacy 156) -- "different units must retain
   different field IDs".
3. ``DCGM_FI_DEV_GPU_UTIL_RATIO``: the name is in (1) and in go-dcgm
   ``pkg/dcgm/legacy_fields.csv`` (where ``DCGM_FI_DEV_GPU_UTIL_RATIO,203`` is now a *legacy*
   spelling); its ratio-valued ID 1613 (DOUBLE 0.0-1.0) and the framebuffer byte fields 1626
   ``DCGM_FI_DEV_FB_FREE_BYTES`` / 1627 ``DCGM_FI_DEV_FB_USED_BYTES`` come only from a secondary
   source (a DCGM operations guide in the index that quotes NVIDIA's "Field Identifiers"
   reference for DCGM 4.7.0): marked ``secondary`` below.
4. Legacy IDs and names: NVIDIA/go-dcgm ``pkg/dcgm/const_fields.go`` and
   https://github.com/NVIDIA/dcgm-exporter/blob/main/etc/default-counters.csv (units in the help
   text: MHz, C, W, mJ, %, MiB).

Not sourced, so not mapped: a 4.9 name for the ECC volatile totals (310/311 keep their names
in DCGM 4.7, so both generations share them). Anything else named ``DCGM_FI_*`` is kept as an
unknown field (``field_id`` NULL, raw name as the metric, value as received).

``field_id`` in the tables is the *measurement's* stable (pre-4.7) ID, the key of this table,
so both generations of one measurement join on it; ``Alias.source_field_id`` records the ID the
exporter's name actually has in DCGM 4.7 (1603, 1611, 1613, ...).
"""

from __future__ import annotations

from dataclasses import dataclass

UNITS = ("ratio", "watts", "joules", "mhz", "celsius", "mib", "count", "code")
"""The canonical units, as stored in ``telemetry_series.unit``."""


@dataclass(frozen=True)
class Alias:
    """One name an exporter may use for a field, and how to reach the canonical unit."""

    name: str
    generation: str  # "4.8" | "4.9"
    divisor: float  # canonical = received / divisor (exact for 100, 1000, 1e6, 2**20)
    source_field_id: int  # the DCGM field ID this name has
    secondary: bool = False  # the 4.9 name/ID is sourced only from a secondary text


@dataclass(frozen=True)
class Field:
    field_id: int
    metric: str  # canonical name
    unit: str  # canonical unit
    kind: str  # "gauge" | "counter"
    aliases: tuple[Alias, ...]

    def alias(self, generation: str) -> Alias:
        for alias in self.aliases:
            if alias.generation == generation:
                return alias
        raise KeyError(f"{self.metric} has no {generation} name")


def _f(field_id: int, metric: str, unit: str, kind: str, *aliases: Alias) -> Field:
    return Field(field_id, metric, unit, kind, aliases)


_MIB = float(1 << 20)

FIELDS: tuple[Field, ...] = (
    _f(
        203,
        "gpu_util",
        "ratio",
        "gauge",
        Alias("DCGM_FI_DEV_GPU_UTIL", "4.8", 100.0, 203),
        Alias("DCGM_FI_DEV_GPU_UTIL_RATIO", "4.9", 1.0, 1613, secondary=True),
    ),
    _f(
        1001,
        "gr_engine_active",
        "ratio",
        "gauge",
        Alias("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "4.8", 1.0, 1001),
        Alias("DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", "4.9", 1.0, 1001),
    ),
    _f(
        1002,
        "sm_active",
        "ratio",
        "gauge",
        Alias("DCGM_FI_PROF_SM_ACTIVE", "4.8", 1.0, 1002),
        Alias("DCGM_FI_PROF_SM_UTIL_RATIO", "4.9", 1.0, 1002),
    ),
    _f(
        1003,
        "sm_occupancy",
        "ratio",
        "gauge",
        Alias("DCGM_FI_PROF_SM_OCCUPANCY", "4.8", 1.0, 1003),
        Alias("DCGM_FI_PROF_SM_OCCUPANCY_RATIO", "4.9", 1.0, 1003),
    ),
    _f(
        1004,
        "tensor_active",
        "ratio",
        "gauge",
        Alias("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "4.8", 1.0, 1004),
        Alias("DCGM_FI_PROF_TENSOR_UTIL_RATIO", "4.9", 1.0, 1004),
    ),
    _f(
        1005,
        "dram_active",
        "ratio",
        "gauge",
        Alias("DCGM_FI_PROF_DRAM_ACTIVE", "4.8", 1.0, 1005),
        Alias("DCGM_FI_PROF_DRAM_UTIL_RATIO", "4.9", 1.0, 1005),
    ),
    _f(
        155,
        "power_usage",
        "watts",
        "gauge",
        Alias("DCGM_FI_DEV_POWER_USAGE", "4.8", 1.0, 155),
        Alias("DCGM_FI_DEV_BOARD_POWER_WATTS", "4.9", 1.0, 155),
    ),
    _f(
        156,
        "total_energy_consumption",
        "joules",
        "counter",
        Alias("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "4.8", 1000.0, 156),
        Alias("DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL", "4.9", 1.0, 1611),
    ),
    _f(
        100,
        "sm_clock",
        "mhz",
        "gauge",
        Alias("DCGM_FI_DEV_SM_CLOCK", "4.8", 1.0, 100),
        Alias("DCGM_FI_DEV_SM_CLOCK_HERTZ", "4.9", 1e6, 1603),
    ),
    _f(
        101,
        "mem_clock",
        "mhz",
        "gauge",
        Alias("DCGM_FI_DEV_MEM_CLOCK", "4.8", 1.0, 101),
        Alias("DCGM_FI_DEV_MEMORY_CLOCK_HERTZ", "4.9", 1e6, 1604),
    ),
    _f(
        150,
        "gpu_temp",
        "celsius",
        "gauge",
        Alias("DCGM_FI_DEV_GPU_TEMP", "4.8", 1.0, 150),
        Alias("DCGM_FI_DEV_GPU_TEMP_CELSIUS", "4.9", 1.0, 150),
    ),
    _f(
        140,
        "memory_temp",
        "celsius",
        "gauge",
        Alias("DCGM_FI_DEV_MEMORY_TEMP", "4.8", 1.0, 140),
        Alias("DCGM_FI_DEV_MEMORY_TEMP_CELSIUS", "4.9", 1.0, 140),
    ),
    _f(
        230,
        "xid_errors",
        "code",
        "gauge",
        Alias("DCGM_FI_DEV_XID_ERRORS", "4.8", 1.0, 230),
        Alias("DCGM_FI_DEV_XID_ERROR", "4.9", 1.0, 230),
    ),
    _f(
        252,
        "fb_used",
        "mib",
        "gauge",
        Alias("DCGM_FI_DEV_FB_USED", "4.8", 1.0, 252),
        Alias("DCGM_FI_DEV_FB_USED_BYTES", "4.9", _MIB, 1627, secondary=True),
    ),
    _f(
        251,
        "fb_free",
        "mib",
        "gauge",
        Alias("DCGM_FI_DEV_FB_FREE", "4.8", 1.0, 251),
        Alias("DCGM_FI_DEV_FB_FREE_BYTES", "4.9", _MIB, 1626, secondary=True),
    ),
    _f(
        310,
        "ecc_sbe_vol_total",
        "count",
        "counter",
        Alias("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "4.8", 1.0, 310),
        Alias("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "4.9", 1.0, 310),
    ),
    _f(
        311,
        "ecc_dbe_vol_total",
        "count",
        "counter",
        Alias("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "4.8", 1.0, 311),
        Alias("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "4.9", 1.0, 311),
    ),
    _f(
        393,
        "uncorrectable_remapped_rows",
        "count",
        "counter",
        Alias("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "4.8", 1.0, 393),
        Alias("DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL", "4.9", 1.0, 393),
    ),
    _f(
        394,
        "correctable_remapped_rows",
        "count",
        "counter",
        Alias("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "4.8", 1.0, 394),
        Alias("DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL", "4.9", 1.0, 394),
    ),
    _f(
        395,
        "row_remap_failure",
        "count",
        "gauge",
        Alias("DCGM_FI_DEV_ROW_REMAP_FAILURE", "4.8", 1.0, 395),
        Alias("DCGM_FI_DEV_ROW_REMAP_FAILED", "4.9", 1.0, 395),
    ),
    _f(
        202,
        "pcie_replay_counter",
        "count",
        "counter",
        Alias("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "4.8", 1.0, 202),
        Alias("DCGM_FI_DEV_PCIE_REPLAY_TOTAL", "4.9", 1.0, 202),
    ),
)

BY_ID: dict[int, Field] = {f.field_id: f for f in FIELDS}
BY_METRIC: dict[str, Field] = {f.metric: f for f in FIELDS}
BY_NAME: dict[str, tuple[Field, Alias]] = {
    alias.name: (field, alias) for field in FIELDS for alias in field.aliases
}
"""Exporter name -> (field, alias). A name shared by both generations maps once (same scale)."""

DRIVER_VERSION_LABELS = ("DCGM_FI_DRIVER_VERSION", "DCGM_FI_SYSTEM_DRIVER_VERSION")
HOSTNAME_LABELS = ("Hostname", "hostname")
UUID_LABELS = ("UUID", "uuid", "gpu_uuid")
"""The GPU's UUID: ``UUID``; ``uuid`` with ``--use-old-namespace``; ``gpu_uuid`` on the per-link
(NVLink) series of some exporter versions."""
MODEL_LABELS = ("modelName", "model_name")
"""The GPU's product name: ``modelName``; ``model_name`` on the per-link series of some versions."""
LINK_LABELS = ("link",)
"""The link of a per-link series (NVLink ``DCGM_FI_PROF_NVLINK_*``); names ending ``_L<n>``
(``DCGM_FI_DEV_NVLINK_BANDWIDTH_L0``) carry it in the name instead."""
DCGM_PREFIX = "DCGM_"


@dataclass(frozen=True)
class Resolved:
    """What annex stores for a received metric name."""

    field_id: int | None
    metric: str
    unit: str | None
    kind: str | None
    divisor: float


def resolve(name: str, declared_type: str | None = None) -> Resolved:
    """Map an exporter metric name to its canonical metric; unknown DCGM names pass through.

    An unknown name keeps its raw spelling as the metric, no unit, value as received (divisor
    1), and the kind the exposition declared (``counter``/``gauge``) if any.
    """
    hit = BY_NAME.get(name)
    if hit is not None:
        field, alias = hit
        return Resolved(field.field_id, field.metric, field.unit, field.kind, alias.divisor)
    kind = declared_type if declared_type in ("gauge", "counter") else None
    return Resolved(None, name, None, kind, 1.0)


def is_dcgm(name: str) -> bool:
    """DCGM series (``DCGM_FI_*``, ``DCGM_EXP_*``) are kept; everything else is counted only."""
    return name.startswith(DCGM_PREFIX)


def exporter_names(generation: str | None = None) -> list[str]:
    """Every known exporter name (of one generation), sorted, for building selectors."""
    names = {
        alias.name
        for field in FIELDS
        for alias in field.aliases
        if generation is None or alias.generation == generation
    }
    return sorted(names)

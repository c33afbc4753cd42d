"""The DCGM alias table: both exporter generations land on one canonical metric and unit."""

from __future__ import annotations

import pytest

from collectors.telemetry import fields
from simulator.telemetry.exporter import GENERATIONS


def test_every_field_has_both_generations_and_a_canonical_unit() -> None:
    ids = [f.field_id for f in fields.FIELDS]
    assert len(ids) == len(set(ids))
    metrics = [f.metric for f in fields.FIELDS]
    assert len(metrics) == len(set(metrics))
    for f in fields.FIELDS:
        assert f.unit in fields.UNITS, f.metric
        assert f.kind in ("gauge", "counter")
        assert {a.generation for a in f.aliases} == {"4.8", "4.9"}, f.metric
        assert f.metric == f.metric.lower()


def test_names_resolve_to_their_field_id() -> None:
    for f in fields.FIELDS:
        for alias in f.aliases:
            field, hit = fields.BY_NAME[alias.name]
            assert field is f and hit.divisor == alias.divisor


@pytest.mark.parametrize(
    ("legacy", "legacy_value", "current", "current_value", "metric", "unit", "expected"),
    [
        ("DCGM_FI_DEV_GPU_UTIL", 87, "DCGM_FI_DEV_GPU_UTIL_RATIO", 0.87, "gpu_util", "ratio", 0.87),
        (
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
            123_456_789,
            "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL",
            123_456.789,
            "total_energy_consumption",
            "joules",
            123_456.789,
        ),
        (
            "DCGM_FI_DEV_SM_CLOCK",
            1980,
            "DCGM_FI_DEV_SM_CLOCK_HERTZ",
            1.98e9,
            "sm_clock",
            "mhz",
            1980,
        ),
        (
            "DCGM_FI_DEV_MEM_CLOCK",
            2619,
            "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ",
            2.619e9,
            "mem_clock",
            "mhz",
            2619,
        ),
        (
            "DCGM_FI_DEV_FB_USED",
            70462,
            "DCGM_FI_DEV_FB_USED_BYTES",
            70462 * 2**20,
            "fb_used",
            "mib",
            70462,
        ),
        (
            "DCGM_FI_DEV_POWER_USAGE",
            312.5,
            "DCGM_FI_DEV_BOARD_POWER_WATTS",
            312.5,
            "power_usage",
            "watts",
            312.5,
        ),
        ("DCGM_FI_DEV_XID_ERRORS", 79, "DCGM_FI_DEV_XID_ERROR", 79, "xid_errors", "code", 79),
        (
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
            0.52,
            "DCGM_FI_PROF_TENSOR_UTIL_RATIO",
            0.52,
            "tensor_active",
            "ratio",
            0.52,
        ),
    ],
)
def test_both_generations_normalise_to_the_same_canonical_value(
    legacy: str,
    legacy_value: float,
    current: str,
    current_value: float,
    metric: str,
    unit: str,
    expected: float,
) -> None:
    old, new = fields.resolve(legacy), fields.resolve(current)
    assert (old.metric, old.unit, old.field_id) == (new.metric, new.unit, new.field_id)
    assert (old.metric, old.unit) == (metric, unit)
    assert legacy_value / old.divisor == pytest.approx(expected, rel=1e-12)
    assert current_value / new.divisor == pytest.approx(expected, rel=1e-12)


def test_percent_to_ratio_is_exact() -> None:
    """87 % must become the double 0.87 itself, so both generations compare equal."""
    divisor = fields.resolve("DCGM_FI_DEV_GPU_UTIL").divisor
    assert all(p / divisor == float(f"0.{p:02d}") for p in range(1, 100))


def test_unknown_names_pass_through() -> None:
    unknown = fields.resolve("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter")
    assert unknown.field_id is None
    assert unknown.metric == "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"
    assert unknown.unit is None and unknown.kind == "counter" and unknown.divisor == 1.0
    assert fields.resolve("DCGM_EXP_XID_ERRORS_COUNT", "untyped").kind is None
    assert fields.is_dcgm("DCGM_EXP_XID_ERRORS_COUNT")
    assert not fields.is_dcgm("go_gc_duration_seconds")


def test_the_simulator_writes_the_same_names_and_scales_as_the_table() -> None:
    """The simulator spells the names itself (it never imports annex): they must agree."""
    for generation, exported in GENERATIONS.items():
        for e in exported:
            field, alias = fields.BY_NAME[e.name]
            assert field.metric == e.canonical, e.name
            assert alias.generation == generation or field.alias(generation).name == e.name
            assert alias.divisor == e.scale, e.name
            assert field.kind == e.prom_type, e.name
        simulated = {e.canonical for e in exported}
        assert simulated == {f.metric for f in fields.FIELDS}


def test_secondary_sources_are_marked() -> None:
    secondary = {a.name for f in fields.FIELDS for a in f.aliases if a.secondary}
    assert secondary == {
        "DCGM_FI_DEV_GPU_UTIL_RATIO",
        "DCGM_FI_DEV_FB_USED_BYTES",
        "DCGM_FI_DEV_FB_FREE_BYTES",
    }

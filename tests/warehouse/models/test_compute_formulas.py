"""The compute, time, energy and threshold formulas, each against a hand computation."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from warehouse.models import compute_formulas as f

T0 = datetime(2026, 1, 1)


def test_gpu_hours_hardware_days_and_time_bands() -> None:
    # 64 GPUs for 10 days
    seconds = 64 * 10 * 86_400
    assert f.gpu_hours(seconds) == 15_360.0
    assert f.hardware_days(15_360.0) == 640.0
    assert f.time_band(29 * 86_400) == "<1 month"
    assert f.time_band(31 * 86_400) == "1-3 months"
    assert f.time_band(100 * 86_400) == "3-6 months"
    assert f.time_band(200 * 86_400) == ">6 months"


def test_union_of_spans_counts_overlaps_once() -> None:
    spans = [
        (T0, T0 + timedelta(hours=2)),
        (T0 + timedelta(hours=1), T0 + timedelta(hours=3)),  # overlaps the first
        (T0 + timedelta(hours=5), T0 + timedelta(hours=6)),
    ]
    assert f.union_seconds(spans) == 4 * 3600


def test_hardware_and_architecture_methods() -> None:
    # 1,024 H100 for 30 days at 40 % of the 989.4 TFLOP/s bf16 dense peak
    gpu_seconds = 1024 * 30 * 86_400
    flop = f.hardware_flop(gpu_seconds, 989.4, 0.4)
    assert flop == pytest.approx(1024 * 30 * 86_400 * 989.4e12 * 0.4)
    assert flop == pytest.approx(1.050429e24, rel=1e-6)
    assert f.architecture_flop(70_000_000_000, 2e12, "PRETRAINING") == 6 * 70e9 * 2e12
    assert f.architecture_flop(70_000_000_000, 2e12, "SYNTHETIC_GENERATION") == 2 * 70e9 * 2e12
    assert f.disagreement(1.3e24, 1e24) == pytest.approx(0.3)
    assert f.disagreement(1e24, None) is None
    assert f.benchmark_utilisation(0.9, 0.75) == pytest.approx(0.675)


def test_bands_widen_with_the_share_without_telemetry() -> None:
    full = f.hardware_band(100.0, "telemetry_tensor_active", 1.0)
    assert (full.low, full.high) == pytest.approx((75.0, 125.0))
    half = f.hardware_band(100.0, "telemetry_tensor_active", 0.5)
    assert (half.low, half.high) == pytest.approx((62.5, 137.5))  # 0.25/2 + 0.5/2
    assumed = f.hardware_band(100.0, "assumed_default", 0.0)
    assert (assumed.low, assumed.high) == pytest.approx((50.0, 150.0))


def test_compute_of_record_is_the_larger_estimate() -> None:
    hw, arch = f.Band(2.0, 1.0, 3.0), f.Band(1.0, 0.9, 1.1)
    assert f.compute_of_record(hw, arch) == (hw, "hardware")
    assert f.compute_of_record(None, arch) == (arch, "architecture")
    assert f.compute_of_record(None, None) is None


def test_measured_and_estimated_energy() -> None:
    # 8 GPUs for 24 h measured at 500 W on average, 2 GPU-hours missing at TDP 700 W,
    # server overhead 1.82, PUE 1.25
    measured_j = 8 * 24 * 3600 * 500.0
    band = f.measured_energy(measured_j, 2 * 3600, 700.0, 1.0, 1.82, 1.25)
    filled_j = 2 * 3600 * 700.0
    assert band.value == pytest.approx((measured_j + filled_j) * 1.82 * 1.25 / 3.6e9)
    assert band.low == pytest.approx((measured_j * 0.95 + filled_j * 0.6) * 1.82 * 1.25 / 3.6e9)
    # 192 GPU-hours × 0.7 kW × 0.8 × 1.82 × 1.25 = 244.608 kWh
    estimated = f.estimated_energy(192.0, 700.0, 0.8, 1.82, 1.25)
    assert estimated.value == pytest.approx(0.244608)
    assert estimated.high == pytest.approx(0.244608 * 1.4)
    assert f.facility_mwh(3.6e9, 1.0, 1.0) == 1.0


def test_significant_figures() -> None:
    assert f.round_significant(0.244608) == 0.245
    assert f.round_significant(1234.5, 2) == 1200
    assert f.round_significant(0.0) == 0.0
    assert f.round_significant(None) is None


def test_crossing_time_interpolates_within_the_crossing_run() -> None:
    runs = [
        (T0, T0 + timedelta(days=10), 6e22),  # 6e21 per day
        (T0 + timedelta(days=20), T0 + timedelta(days=30), 8e22),  # 8e21 per day
    ]
    # after the first run 6e22; 4e22 more needs 5 days of the second
    assert f.crossing_time(runs, 1e23) == T0 + timedelta(days=25)
    assert f.crossing_time(runs, 2e23) is None
    # a base model's 5e22 counts from the start: 5e22 more after 8 1/3 days of the first
    assert f.crossing_time(runs, 1e23, offset=5e22) == T0 + timedelta(days=25 / 3)
    assert f.crossing_time(runs, 1e23, offset=2e23) is None
    # overlapping runs add their rates; an instantaneous one is a step
    overlapping = [(T0, T0 + timedelta(days=10), 5e22), (T0, T0 + timedelta(days=10), 5e22)]
    assert f.crossing_time(overlapping, 5e22) == T0 + timedelta(days=5)
    assert f.crossing_time([(T0, T0, 2e23)], 1e23) == T0


def test_projection_and_notification_deadline() -> None:
    now, end = T0, T0 + timedelta(days=100)
    rate = 1e18  # FLOP/s
    assert f.projected_flop(5e24, rate, now, end) == 5e24 + 1e18 * 100 * 86_400
    crossing = f.projected_crossing(5e24, rate, now, end, 1e25)
    assert crossing == T0 + timedelta(seconds=5e24 / 1e18)  # 57.87 days
    assert f.notification_due(crossing) == crossing + timedelta(days=14)
    assert f.projected_crossing(5e24, rate, now, T0 + timedelta(days=10), 1e25) is None
    assert f.projected_crossing(2e25, rate, now, end, 1e25) is None
    assert f.projected_crossing(5e24, 0.0, now, end, 1e25) is None

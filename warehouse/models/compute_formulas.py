"""The formulas behind training compute, time, energy and the Article 51 thresholds.

One definition of each, as plain typed functions: ``refresh_compute`` (warehouse/models/
compute.py) aggregates the evidence in SQL and applies these to every run and model, the CLI
and the marts show what they return, and the unit tests check them by hand. Sources:
reference eu-ai-act.md §2 and §7, gpu-benchmarks-telemetry.md §4.

Uncertainty is a relative half-width per method (``Band``): the hardware method's depends on
where utilisation came from (``UTILISATION_SOURCES``) and widens with the share of GPU-hours
without telemetry; the architecture method's covers the 6·N·D approximation (attention and
embedding terms left out); measured energy's the DCGM power accuracy on the measured part and
the TDP assumption on the gaps filled; estimated energy's the software-estimator spread.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

GPAI_FLOP = 1e23
"""Indicative GPAI criterion (Guidelines point 17), for a generative model."""
SYSTEMIC_RISK_FLOP = 1e25
"""Systemic-risk presumption (Art 51(2))."""
MODIFICATION_SHARE = 1 / 3
"""A modifier whose compute exceeds a third of the original's is a new provider."""
NOTIFICATION_DAYS = 14
"""Art 52(1): notify within two weeks of meeting a threshold or learning it will be met."""
SECONDS_PER_MONTH = 30.4375 * 86_400
"""An average month (365.25 / 12 days), for the Code of Practice's time bands."""
JOULES_PER_MWH = 3.6e9

TRAINING_MULTIPLIER = 6
"""FLOP per parameter per token for training (forward + backward)."""
GENERATION_MULTIPLIER = 2
"""FLOP per parameter per token for forward-only work (synthetic-data generation)."""
GENERATION_STAGES = frozenset({"SYNTHETIC_GENERATION"})

UTILISATION_SOURCES: dict[str, float] = {
    "telemetry_tensor_active": 0.25,
    "benchmark_calibrated": 0.40,
    "assumed_default": 0.50,
}
"""Where the hardware method's utilisation came from -> relative half-width of its band.
Tensor-pipe activity tracks MFU closely on transformer training; busy time scaled by the
GPU's benchmarked fraction of peak is looser; an assumed MFU is the loosest."""
ARCHITECTURE_BAND = 0.15
"""6·N·D leaves out attention and embedding FLOP (about 12·L·H·Q·T per token)."""
MEASURED_POWER_BAND = 0.05
"""DCGM board power and energy readings: about ±5 %."""
TDP_FILL_BAND = 0.40
"""GPU-hours without telemetry filled at TDP × power fraction."""
ESTIMATED_ENERGY_BAND = 0.40
"""TDP-based estimates: software estimators are off by up to 40 %."""


@dataclass(frozen=True)
class Band:
    """A figure with its uncertainty band."""

    value: float
    low: float
    high: float

    @staticmethod
    def relative(value: float, half_width: float) -> Band:
        return Band(value, value * max(0.0, 1 - half_width), value * (1 + half_width))

    def __add__(self, other: Band) -> Band:
        return Band(self.value + other.value, self.low + other.low, self.high + other.high)

    def scaled(self, factor: float) -> Band:
        return Band(self.value * factor, self.low * factor, self.high * factor)


ZERO = Band(0.0, 0.0, 0.0)


def gpu_hours(gpu_seconds: float) -> float:
    """GPU-hours = Σ g·t / 3600."""
    return gpu_seconds / 3600


def hardware_days(gpu_hours_total: float) -> float:
    """Hardware-days = GPU-hours / 24."""
    return gpu_hours_total / 24


def union_seconds(spans: Iterable[tuple[datetime, datetime]]) -> float:
    """Seconds covered by the union of spans: overlapping runs count once (wall-clock time)."""
    total, current_start, current_end = 0.0, None, None
    for start, end in sorted(spans):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += (current_end - current_start).total_seconds()
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += (current_end - current_start).total_seconds()
    return total


def time_band(wall_clock_seconds: float) -> str:
    """The Code of Practice's range bin for training time (MDF section 7, NCA answer)."""
    months = wall_clock_seconds / SECONDS_PER_MONTH
    if months < 1:
        return "<1 month"
    if months < 3:
        return "1-3 months"
    if months < 6:
        return "3-6 months"
    return ">6 months"


def hardware_flop(gpu_seconds: float, peak_tflops: float, utilisation: float) -> float:
    """C_hw = g·t × dense peak FLOP/s for the dtype × utilisation."""
    return gpu_seconds * peak_tflops * 1e12 * utilisation


def hardware_band(flop: float, source: str, coverage: float) -> Band:
    """The source's half-width, plus the assumed-default half-width on the share of GPU-hours
    the utilisation had no telemetry for (coverage 0-1)."""
    uncovered = 1 - min(1.0, max(0.0, coverage))
    width = UTILISATION_SOURCES[source] * (1 - uncovered)
    width += UTILISATION_SOURCES["assumed_default"] * uncovered
    return Band.relative(flop, width)


def benchmark_utilisation(busy: float, frac_peak_flops: float) -> float:
    """Benchmark-calibrated utilisation: the share of time busy × the fraction of dense peak
    the GPU reached in annex's GEMM benchmark (an upper bound on what a job gets from it)."""
    return busy * frac_peak_flops


def architecture_flop(parameters: int, tokens: float, stage: str) -> float:
    """C_arch = 6·N·D for training, 2·N·D for generation (forward passes only)."""
    multiplier = GENERATION_MULTIPLIER if stage in GENERATION_STAGES else TRAINING_MULTIPLIER
    return multiplier * parameters * tokens


def disagreement(hardware: float, architecture: float) -> float | None:
    """|C_hw − C_arch| / C_arch; None when either is unknown or C_arch is 0."""
    if architecture is None or hardware is None or architecture <= 0:
        return None
    return abs(hardware - architecture) / architecture


def compute_of_record(hardware: Band | None, architecture: Band | None) -> tuple[Band, str] | None:
    """The estimate thresholds are assessed on: the larger of the two (the conservative reading
    while they disagree), with its name. The caller leaves out an architecture figure above
    the run's physical maximum (``physical_max_flop``)."""
    candidates = [(b, n) for b, n in ((hardware, "hardware"), (architecture, "architecture")) if b]
    if not candidates:
        return None
    return max(candidates, key=lambda c: c[0].value)


def physical_max_flop(gpu_seconds: float, peak_tflops: float) -> float:
    """The most a run's GPUs could deliver: GPU-seconds × dense peak (MFU = 1)."""
    return hardware_flop(gpu_seconds, peak_tflops, 1.0)


BEST_FLOP_PER_JOULE = 2e13
"""No GPU delivers more than about 2e13 FLOP per joule: energy × this bounds compute."""


def facility_mwh(gpu_joules: float, server_overhead: float, pue: float) -> float:
    """E_fac = GPU energy × server overhead (host CPUs, memory, network) × PUE, in MWh."""
    return gpu_joules * server_overhead * pue / JOULES_PER_MWH


def measured_energy(
    measured_gpu_joules: float,
    uncovered_gpu_seconds: float,
    tdp_watts: float,
    power_fraction: float,
    server_overhead: float,
    pue: float,
) -> Band:
    """Measured energy in MWh: integrated DCGM energy (counter, else power × time) where
    telemetry covers the GPU-hours, TDP × power fraction for the gaps."""
    filled = uncovered_gpu_seconds * tdp_watts * power_fraction
    measured = Band.relative(measured_gpu_joules, MEASURED_POWER_BAND)
    gaps = Band.relative(filled, TDP_FILL_BAND)
    return (measured + gaps).scaled(server_overhead * pue / JOULES_PER_MWH)


def estimated_energy(
    gpu_hours_total: float,
    tdp_watts: float,
    power_fraction: float,
    server_overhead: float,
    pue: float,
) -> Band:
    """Estimated energy in MWh: GPU-hours × TDP[kW] × power fraction × k_server × PUE / 1000."""
    kwh = gpu_hours_total * tdp_watts / 1000 * power_fraction * server_overhead * pue
    return Band.relative(kwh / 1000, ESTIMATED_ENERGY_BAND)


def round_significant(value: float | None, digits: int = 3) -> float | None:
    """``value`` to ``digits`` significant figures (MWh: at least two, MDF section 8)."""
    if value is None or value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


def crossing_time(
    contributions: Iterable[tuple[datetime, datetime, float]],
    threshold: float,
    offset: float = 0.0,
) -> datetime | None:
    """When cumulative compute first reached ``threshold``: each contribution (start, end,
    FLOP) accrues linearly over its span (all at once when it has none); ``offset`` (e.g. the
    base model's compute) counts from the beginning. None when the total stays below, or when
    the offset alone already reaches it (no date of its own)."""
    if offset >= threshold:
        return None
    # (moment, change of rate, step): a rate starts at a span's start and stops at its end.
    events: list[tuple[datetime, float, float]] = []
    for start, end, flop in contributions:
        if flop <= 0:
            continue
        seconds = (end - start).total_seconds()
        if seconds <= 0:
            events.append((start, 0.0, flop))
            continue
        events.append((start, flop / seconds, 0.0))
        events.append((end, -flop / seconds, 0.0))
    events.sort(key=lambda e: e[0])
    total, rate, clock = offset, 0.0, None
    for moment, delta, step in events:
        if clock is not None and rate > 0:
            gained = rate * (moment - clock).total_seconds()
            if total + gained >= threshold:
                return clock + timedelta(seconds=(threshold - total) / rate)
            total += gained
        total += step
        if total >= threshold:
            return moment
        clock = moment
        rate = max(0.0, rate + delta)
    return None


def plan_reaching(
    plans: Iterable[tuple[datetime, str, float]], threshold: float, offset: float = 0.0
) -> datetime | None:
    """When the provider learned ``threshold`` would be met: the recorded time of the run
    (start, run id, its compute or plan) whose plan, added to ``offset`` and every plan
    recorded before it, first reaches it (Art 52(1): "or learning that it will be met")."""
    total = offset
    for recorded_at, _, amount in sorted(plans):
        total += amount
        if total >= threshold:
            return recorded_at
    return None


def projected_flop(
    cumulative: float, rate_flop_per_s: float, now: datetime, end: datetime
) -> float:
    """C_cum + rate × time left to the planned end (none after it)."""
    return cumulative + rate_flop_per_s * max(0.0, (end - now).total_seconds())


def projected_crossing(
    cumulative: float, rate_flop_per_s: float, now: datetime, end: datetime, threshold: float
) -> datetime | None:
    """When the running jobs, at their current rate, reach ``threshold`` before the planned
    end; None when they do not (or compute is already at or above it)."""
    if cumulative >= threshold or rate_flop_per_s <= 0:
        return None
    moment = now + timedelta(seconds=(threshold - cumulative) / rate_flop_per_s)
    return moment if moment <= end else None


def notification_due(crossing: datetime) -> datetime:
    """Two weeks after the threshold is (or is projected to be) met."""
    return crossing + timedelta(days=NOTIFICATION_DAYS)

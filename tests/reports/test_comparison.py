"""A period's figure against the previous one: per hour of evidence, its gaps named."""

from __future__ import annotations

from datetime import date, datetime
from types import SimpleNamespace

from reports.comparison import per_hour_change, period_hours
from reports.period import Period

HOURS = {"current": 684.5, "previous": 744.0}


def test_rates_per_hour_covered_not_totals() -> None:
    # 80 GPUs an hour in both periods, the previous one collected for 36 of its 744 hours
    covered = {"current": 684.5, "previous": 36.0}
    assert per_hour_change(684.5 * 80, 36 * 80, covered, HOURS, "inventory") == (
        "+0.0 % an hour (inventory for 1.5 of 31.0 days before)"
    )
    full = {"current": 684.5, "previous": 744.0}
    assert per_hour_change(684.5 * 80, 744 * 100, full, HOURS, "inventory") == "-20.0 % an hour"


def test_what_cannot_be_compared_says_why() -> None:
    covered = {"current": 10.0, "previous": 10.0}
    assert per_hour_change(None, 5.0, covered, HOURS, "telemetry") == "no evidence this period"
    assert per_hour_change(5.0, None, covered, HOURS, "telemetry") == "no previous data"
    assert per_hour_change(5.0, 0.0, covered, HOURS, "telemetry") == "new"
    assert per_hour_change(0.0, 0.0, covered, HOURS, "telemetry") == "unchanged"
    none_before = {"current": 10.0, "previous": 0}
    assert per_hour_change(5.0, 3.0, none_before, HOURS, "both sources") == (
        "not compared: no hour of both sources in a period"
    )


def test_this_period_counts_its_hours_up_to_the_data_cut_off() -> None:
    november = Period(date(2026, 11, 1), date(2026, 12, 1), "2026-11")
    evidence = SimpleNamespace(
        request=SimpleNamespace(period=november), cutoff=datetime(2026, 11, 29, 12, 30)
    )
    assert period_hours(evidence) == {"current": 28 * 24 + 12.5, "previous": 31 * 24.0}
    evidence.cutoff = None
    assert period_hours(evidence) == {"current": 30 * 24.0, "previous": 31 * 24.0}


def test_figures_that_may_count_uncovered_hours_are_not_compared_with_a_partial_period() -> None:
    """Attestation's holdings run from the pods' own start times, before the first inventory
    collection: no rate per covered hour is exact there, so a period covered in part is not
    compared."""
    covered = {"current": 684.5, "previous": 36.0}
    assert (
        per_hour_change(5000.0, 300.0, covered, HOURS, "inventory", within_covered=False)
        == "not compared: inventory for 1.5 of 31.0 days before"
    )
    full = {"current": 684.5, "previous": 744.0}
    assert (
        per_hour_change(684.5 * 80, 744 * 100, full, HOURS, "inventory", within_covered=False)
        == "-20.0 % an hour"
    )

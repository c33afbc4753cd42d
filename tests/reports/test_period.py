"""Report periods: months, inclusive day ranges, the previous period KPIs compare with, the
coverage end for a running month, and clear errors for bad input."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from reports.definition import EvidenceQuery, period_parameters
from reports.errors import ReportError
from reports.period import day_period, month_period, resolve_period


def test_month_and_its_previous_month() -> None:
    nov = month_period("2026-11")
    assert (nov.start, nov.end, nov.days) == (date(2026, 11, 1), date(2026, 12, 1), 30)
    assert nov.previous() == month_period("2026-10")
    jan = month_period("2027-01")
    assert jan.previous().label == "2026-12"
    assert month_period("2026-12").end == date(2027, 1, 1)


def test_day_range_is_inclusive_and_its_previous_has_the_same_length() -> None:
    week = day_period(date(2026, 11, 3), date(2026, 11, 9))
    assert (week.start, week.end, week.days) == (date(2026, 11, 3), date(2026, 11, 10), 7)
    before = week.previous()
    assert (before.start, before.end) == (date(2026, 10, 27), date(2026, 11, 3))


@pytest.mark.parametrize(
    ("period", "first", "last", "message"),
    [
        ("2026-13", None, None, "month 13 does not exist"),
        ("november", None, None, "not a month like"),
        ("2026-11", date(2026, 11, 1), None, "not both"),
        (None, date(2026, 11, 1), None, "go together"),
        (None, date(2026, 11, 9), date(2026, 11, 1), "before --from"),
    ],
)
def test_bad_periods_say_what_to_give(period, first, last, message) -> None:
    with pytest.raises(ReportError, match=message):
        resolve_period(period, first, last, today=date(2026, 11, 22))


def test_default_period_is_the_last_whole_month() -> None:
    assert resolve_period(None, None, None, today=date(2026, 11, 22)).label == "2026-10"
    assert resolve_period(None, None, None, today=date(2027, 1, 1)).label == "2026-12"


def test_running_month_is_judged_up_to_today_a_closed_one_to_its_end() -> None:
    nov = month_period("2026-11")
    params = period_parameters(nov, date(2026, 11, 22))
    assert params["coverage_end"] == date(2026, 11, 23)
    assert params["previous_start"] == date(2026, 10, 1)
    assert params["end_ts"] == datetime(2026, 12, 1)
    assert period_parameters(nov, date(2026, 12, 5))["coverage_end"] == date(2026, 12, 1)
    assert period_parameters(nov, date(2026, 10, 5))["coverage_end"] == date(2026, 11, 1)


def test_queries_declare_the_parameters_they_use() -> None:
    query = EvidenceQuery("q", "", "SELECT 1 WHERE day >= $start AND day < $end AND $start")
    assert query.parameter_names() == ("start", "end")

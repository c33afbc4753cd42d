"""The period a report covers: whole UTC days, ``[start, end)``, and the one before it.

``2026-11`` is the calendar month; ``--from 2026-11-03 --to 2026-11-09`` are inclusive days.
The previous period of a month is the previous calendar month; of any other span, the span
of the same length just before it, so that KPIs compare like with like.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from reports.errors import ReportError

_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


@dataclass(frozen=True)
class Period:
    """UTC days ``start`` (inclusive) to ``end`` (exclusive)."""

    start: date
    end: date
    label: str

    @property
    def days(self) -> int:
        return (self.end - self.start).days

    @property
    def last_day(self) -> date:
        return self.end - timedelta(days=1)

    @property
    def is_month(self) -> bool:
        return _MONTH.match(self.label) is not None

    def previous(self) -> Period:
        """The period KPIs are compared with (the month before, or as many days before)."""
        if self.is_month:
            last = self.start - timedelta(days=1)
            return month_period(f"{last.year:04d}-{last.month:02d}")
        return day_period(self.start - timedelta(days=self.days), self.start - timedelta(days=1))

    def start_time(self) -> datetime:
        return datetime.combine(self.start, time())

    def end_time(self) -> datetime:
        return datetime.combine(self.end, time())

    def describe(self) -> str:
        return f"{self.start.isoformat()} to {self.last_day.isoformat()} (UTC)"


def month_period(text: str) -> Period:
    """``YYYY-MM`` as a period; a ``ReportError`` naming the text otherwise."""
    match = _MONTH.match(text.strip())
    if not match:
        raise ReportError(
            f"--period {text!r} is not a month like 2026-11",
            hint="give --period YYYY-MM, or --from YYYY-MM-DD --to YYYY-MM-DD",
        )
    year, month = int(match[1]), int(match[2])
    if not 1 <= month <= 12:
        raise ReportError(f"--period {text!r}: month {month} does not exist")
    start = date(year, month, 1)
    end = date(year + (month == 12), month % 12 + 1, 1)
    return Period(start, end, f"{year:04d}-{month:02d}")


def day_period(first: date, last: date) -> Period:
    """Inclusive days ``first`` .. ``last``."""
    if last < first:
        raise ReportError(
            f"--to {last.isoformat()} is before --from {first.isoformat()}",
            hint="give the first day with --from and the last (inclusive) with --to",
        )
    return Period(first, last + timedelta(days=1), f"{first.isoformat()}..{last.isoformat()}")


def resolve_period(
    period: str | None, first: date | None, last: date | None, *, today: date
) -> Period:
    """The period the CLI's options name: ``--period``, ``--from/--to``, or the last whole
    month before ``today`` when neither is given (what a monthly schedule reports)."""
    if period is not None and (first is not None or last is not None):
        raise ReportError("give either --period or --from/--to, not both")
    if period is not None:
        return month_period(period)
    if first is not None or last is not None:
        if first is None or last is None:
            raise ReportError("--from and --to go together", hint="give both days (inclusive)")
        return day_period(first, last)
    previous = today.replace(day=1) - timedelta(days=1)
    return month_period(f"{previous.year:04d}-{previous.month:02d}")

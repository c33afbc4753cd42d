"""A period's figure against the previous period's, per hour its evidence covered.

A month whose inventory was collected for 1.5 of its 31 days is not 95 % smaller than one
collected every day: totals are compared as rates per hour their source covered, and where a
period's source covered less than the whole period the comparison says how much, so it is read
with it. The fleet and attestation reports compare their key figures this way.
"""

from __future__ import annotations

from typing import Any

from reports.definition import Evidence

Row = dict[str, Any]

HOURS_COVERED = """
    hours_covered_by_hour AS (
        SELECT CASE WHEN day >= $start THEN 'current' ELSE 'previous' END AS period,
               max(observed_hours) FILTER (WHERE capacity_gpu_hours > 0) AS inventory,
               bool_or(telemetry_gpu_hours > 0) AS telemetry,
               bool_or(allocated_observed_gpu_hours > 0) AS both_sources
        FROM marts.node_gpu_hours
        WHERE day >= $previous_start AND day < $end
        GROUP BY 1, hour
    ),
    hours_covered AS (
        SELECT period,
               coalesce(sum(inventory), 0) AS inventory_hours,
               count(*) FILTER (WHERE telemetry) AS telemetry_hours,
               count(*) FILTER (WHERE both_sources) AS both_sources_hours
        FROM hours_covered_by_hour
        GROUP BY period
    )"""
"""Common table expressions (after ``WITH``) giving ``hours_covered``: per period ('current',
'previous') the hours each source covered, from ``marts.node_gpu_hours``: ``inventory_hours``
(an hour the inventory observed in part counts that part), ``telemetry_hours``,
``both_sources_hours`` (hours where the inventory's allocation met telemetry)."""


def period_hours(evidence: Evidence) -> dict[str, float]:
    """The hours of this period up to the data cut-off, and of the whole previous period."""
    period = evidence.request.period
    if period is None:
        return {"current": 0.0, "previous": 0.0}
    end = period.end_time()
    if evidence.cutoff is not None:
        end = max(period.start_time(), min(end, evidence.cutoff.replace(tzinfo=None)))
    return {
        "current": (end - period.start_time()).total_seconds() / 3600,
        "previous": period.previous().days * 24.0,
    }


def covered_hours(current: Row | None, previous: Row | None, column: str) -> dict[str, float]:
    """The hours a source covered in each period: ``column`` of each period's row of a query
    that joined ``hours_covered`` (0 for a period without a row)."""
    return {
        period: (row or {}).get(column) or 0
        for period, row in (("current", current), ("previous", previous))
    }


def per_hour_change(
    now: float | None,
    before: float | None,
    covered: dict[str, Any],
    hours: dict[str, float],
    source: str,
    *,
    within_covered: bool = True,
) -> str:
    """``now`` against ``before`` as rates per hour ``source`` covered (``covered``: its hours
    in 'current' and 'previous'), or why they are not compared; ``hours``: each period's hours
    (``period_hours``). ``within_covered``: the figures count only hours ``source`` covered
    (the fleet's inventory GPU-hours), so a rate per covered hour is exact; when they may
    count other hours too (attestation's holdings run from the pods' own start times, before
    the first collection), a period ``source`` covered in part is not compared at all."""
    if now is None:
        return "no evidence this period"
    if before is None:
        return "no previous data"
    if not before:
        return "new" if now else "unchanged"
    if not covered["current"] or not covered["previous"]:
        return f"not compared: no hour of {source} in a period"
    gaps = [
        f"{covered[p] / 24:,.1f} of {hours[p] / 24:,.1f} days "
        + ("this period" if p == "current" else "before")
        for p in ("current", "previous")
        if covered[p] / 24 < round(hours[p] / 24, 1) - 0.05
    ]
    if gaps and not within_covered:
        return f"not compared: {source} for {', '.join(gaps)}"
    rate = (now / covered["current"]) / (before / covered["previous"]) - 1
    return f"{rate * 100:+.1f} % an hour" + (f" ({source} for {', '.join(gaps)})" if gaps else "")

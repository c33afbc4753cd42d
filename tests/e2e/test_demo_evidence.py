"""The demo's warehouse as its user meets it, after `annex demo` ran twice on it: the second
run counts what the first counted (the same world, the same evidence, nothing counted twice),
every model is within physics, and the fleet marts hold together (idle GPU-hours never above
the allocation they are compared with, buckets summing to capacity, for every day and
grouping; telemetry from hours the demo's one inventory snapshot did not observe is
telemetry-only)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from tests.helpers.demo import run_demo
from tests.helpers.fleet_invariants import groupings_checked, violations

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXACT = """
    SELECT r.model_name, r.run_id, r.counted, r.exclusion, r.lifecycle_stage, r.gpu_hours,
           r.declared_gpu_hours, r.architecture_flop, r.physical_max_flop, r.compute_method
    FROM marts.training_run_compute AS r
    ORDER BY ALL
"""
STATUSES = """
    SELECT model_name, threshold, threshold_flop, applies, status, learned_at,
           notification_due, consequence
    FROM marts.model_compute_thresholds
    ORDER BY ALL
"""
MEASURED = "SELECT model_name, own_compute_flop, energy_mwh FROM marts.model_compute"
# the fleet report's daily figures (reports/fleet.py reads this mart), for the days before the
# world's present: the present's day still grows with the clock the marts read
FLEET_DAYS = """
    SELECT day, node_pool, capacity_gpu_hours, allocated_workload_gpu_hours,
           allocated_balloon_gpu_hours, free_gpu_hours, unavailable_gpu_hours
    FROM marts.gpu_hours_daily_by_pool
    WHERE day < CAST($present AS DATE)
    ORDER BY ALL
"""


def world_present(folder: Path) -> datetime:
    """The simulated world's present, as the demo recorded it for its reruns."""
    recorded = json.loads((folder / "d" / "world.json").read_text(encoding="utf-8"))
    return datetime.fromisoformat(recorded["now"]).astimezone(UTC).replace(tzinfo=None)


SNAPSHOTS = """
    SELECT DISTINCT collected_at, collected_at_clock FROM audit.collections
    WHERE source = 'kubernetes' AND status = 'succeeded'
    ORDER BY collected_at
"""


@pytest.fixture(scope="module")
def demo_twice(demo_folder: Path) -> Iterator[tuple[Path, dict]]:
    folder = demo_folder
    with duckdb.connect(str(folder / "annex.duckdb"), read_only=True) as con:
        first = {
            "exact": con.execute(EXACT).fetchall(),
            "statuses": con.execute(STATUSES).fetchall(),
            "measured": {n: (c, e) for n, c, e in con.execute(MEASURED).fetchall()},
            "fleet": con.execute(FLEET_DAYS, {"present": world_present(folder)}).fetchall(),
            "snapshots": con.execute(SNAPSHOTS).fetchall(),
        }
    run_demo(folder)
    yield folder, first


def test_a_rerun_of_the_demo_counts_nothing_twice(demo_twice: tuple[Path, dict]) -> None:
    """The same world, collected again: the same runs counted and listed apart, the same
    GPU-hours, the same architecture figures and threshold statuses, exactly; no Job claimed
    twice. The figures that rest on DCGM telemetry (measured energy, tensor-activity
    utilisation) are the same too: the rerun reads the telemetry window ending at the world's
    present again (``telemetry.window_end``), so it loads the same samples once. They are
    compared to 1e-9 only because a sum of floats may be added in another order."""
    folder, first = demo_twice
    assert first["exact"] and first["statuses"]
    with duckdb.connect(str(folder / "annex.duckdb"), read_only=True) as con:
        assert con.execute(EXACT).fetchall() == first["exact"]
        assert con.execute(STATUSES).fetchall() == first["statuses"]
        for name, compute, energy in con.execute(MEASURED).fetchall():
            before = first["measured"][name]
            assert compute == pytest.approx(before[0], rel=1e-9), name
            assert energy == pytest.approx(before[1], rel=1e-9), name
        claims = con.execute(
            "SELECT count(*) FROM marts.compute_findings WHERE kind = 'job_claimed_twice'"
        ).fetchone()
        assert claims == (0,)


def test_every_demo_model_is_within_physics(demo_twice: tuple[Path, dict]) -> None:
    """No GPU does better than 2e13 FLOP per joule, and no model is credited more than its
    runs' GPUs could deliver at dense peak (reference eu-ai-act.md §7)."""
    folder, _ = demo_twice
    with duckdb.connect(str(folder / "annex.duckdb"), read_only=True) as con:
        models = con.execute(
            "SELECT model_name, own_compute_flop, energy_mwh, physical_max_flop "
            "FROM marts.model_compute WHERE runs > 0"
        ).fetchall()
    assert len(models) >= 5
    for name, own, energy, physical_max in models:
        assert energy is not None and energy * 3.6e9 >= own / 2e13, name
        assert physical_max is not None and own <= physical_max, name


def test_the_demo_warehouse_keeps_idle_within_allocation_and_buckets_to_capacity(
    demo_twice: tuple[Path, dict],
) -> None:
    folder, _ = demo_twice
    with duckdb.connect(str(folder / "annex.duckdb"), read_only=True) as con:
        assert violations(con) == []
        checked = groupings_checked(con)
        assert checked["node_gpu_hours"] > 0 and checked["namespace_gpu_hours"] > 0, checked
        # the demo's telemetry spans hours its single inventory snapshot (an instant) did not
        # observe: all of it is telemetry-only, none of its idle hours is allocated-but-idle
        totals = con.execute(
            "SELECT sum(telemetry_gpu_hours), sum(telemetry_only_gpu_hours), "
            "sum(allocated_idle_gpu_hours), sum(telemetry_only_idle_gpu_hours) "
            "FROM marts.gpu_hours_daily_by_pool"
        ).fetchone()
        assert totals is not None
        telemetry, telemetry_only, idle, telemetry_only_idle = totals
        assert telemetry > 0
        observed = con.execute(
            "SELECT coalesce(sum(observed_hours), 0) FROM marts.node_gpu_hours"
        ).fetchone()
        assert observed is not None
        if observed[0] == 0:
            assert (telemetry_only, idle) == (telemetry, 0)
            assert telemetry_only_idle >= 0


def test_the_demo_has_lived_a_month(demo_twice: tuple[Path, dict]) -> None:
    """The demo collected the cluster's past (a snapshot every two days, each at its simulated time,
    by the API server's clock) before its present: the fleet report's daily figures have
    capacity GPU-hours in named node pools on every day of the history, so the current month
    is never "no inventory evidence"; the rerun took no snapshot of the past again (only its
    present, at the same moment) and left every daily figure of the completed days
    unchanged."""
    folder, first = demo_twice
    present = world_present(folder)
    snapshots = first["snapshots"]
    assert len(snapshots) >= 15
    assert {clock for _, clock in snapshots} == {"api_server"}
    assert snapshots[-1][0] == present
    assert snapshots[0][0] <= present - timedelta(days=29)
    with duckdb.connect(str(folder / "annex.duckdb"), read_only=True) as con:
        assert con.execute(SNAPSHOTS).fetchall() == snapshots
        fleet = con.execute(FLEET_DAYS, {"present": present}).fetchall()
    assert fleet == first["fleet"]
    capacity: dict = {}
    for day, pool, capacity_gpu_hours, *_ in fleet:
        if pool != "unknown" and capacity_gpu_hours:
            capacity[day] = capacity.get(day, 0) + capacity_gpu_hours
    first_day = (snapshots[0][0] + timedelta(days=1)).date()
    days = [first_day + timedelta(days=i) for i in range((present.date() - first_day).days)]
    month = present.date().replace(day=1)
    assert [d for d in days if d >= month] == [
        month + timedelta(days=i) for i in range((present.date() - month).days)
    ]
    assert [d for d in days if capacity.get(d, 0) <= 0] == []
    # every node names its pool (the demo configures the simulator's pool label, as the owner of
    # an on-premises cluster configures theirs): no day's capacity lands in pool "unknown"
    unknown = {
        day
        for day, pool, capacity_gpu_hours, *_ in fleet
        if pool == "unknown" and capacity_gpu_hours
    }
    assert sorted(d for d in days if d in unknown) == []

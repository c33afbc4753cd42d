"""The fleet marts of the demo's warehouse hold together: idle GPU-hours never above the
allocation they are compared with and buckets summing to capacity, for every day and grouping;
the demo's telemetry from hours its one inventory snapshot did not observe is telemetry-only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.e2e.test_cli import _clean_env
from tests.unit.fleet_invariants import groupings_checked, violations

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_the_demo_warehouse_keeps_idle_within_allocation_and_buckets_to_capacity(
    tmp_path: Path,
) -> None:
    env = {**_clean_env(), "ANNEX_WAREHOUSE": str(tmp_path / "annex.duckdb")}
    demo = subprocess.run(
        [sys.executable, "-m", "annex", "demo", "--nodes", "40", "--out", str(tmp_path / "d")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert demo.returncode == 0, demo.stderr
    with duckdb.connect(str(tmp_path / "annex.duckdb"), read_only=True) as con:
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

"""The demo's warehouse as its user meets it, after `annex demo` ran twice on it: the figures
of the second run are the first run's (the same world, the same evidence, nothing counted
twice), every model is within physics, and the fleet marts hold together (idle GPU-hours never
above the allocation they are compared with, buckets summing to capacity, for every day and
grouping; telemetry from hours the demo's one inventory snapshot did not observe is
telemetry-only)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from tests.e2e.test_cli import _clean_env
from tests.unit.fleet_invariants import groupings_checked, violations

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

COMPUTE_TABLES = (
    "marts.model_compute",
    "marts.model_compute_thresholds",
    "marts.model_compute_stages",
    "marts.training_run_compute",
    "marts.compute_findings",
)


def _demo(folder: Path) -> None:
    env = {**_clean_env(), "ANNEX_WAREHOUSE": str(folder / "annex.duckdb")}
    demo = subprocess.run(
        [sys.executable, "-m", "annex", "demo", "--nodes", "40", "--out", str(folder / "d")],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert demo.returncode == 0, demo.stderr


def _rows(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple]:
    """The table's rows, every number to six significant figures (the documents show three):
    a running run's hardware figure rests on the live telemetry of the hour around the world's
    present, which a rerun was seen to read a part in ten million differently."""
    rows = con.execute(f"SELECT * EXCLUDE (refreshed_at) FROM {table} ORDER BY ALL").fetchall()
    return [tuple(_significant(v) for v in row) for row in rows]


def _significant(value: object) -> object:
    return float(f"{value:.6g}") if isinstance(value, float) else value


@pytest.fixture(scope="module")
def demo_twice(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict]]:
    folder = tmp_path_factory.mktemp("demo")
    _demo(folder)
    with duckdb.connect(str(folder / "annex.duckdb"), read_only=True) as con:
        first = {table: _rows(con, table) for table in COMPUTE_TABLES}
    _demo(folder)
    yield folder, first


def test_a_rerun_of_the_demo_changes_no_compute_figure(demo_twice: tuple[Path, dict]) -> None:
    folder, first = demo_twice
    assert first["marts.model_compute"] and first["marts.model_compute_thresholds"]
    with duckdb.connect(str(folder / "annex.duckdb"), read_only=True) as con:
        for table in COMPUTE_TABLES:
            assert _rows(con, table) == first[table], table
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

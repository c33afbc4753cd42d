"""bench.year at a tiny scale: the year's fill is consistent, sizes add up, every measured step
runs, and nothing is recorded."""

from __future__ import annotations

import datetime as dt
import itertools
import re
from pathlib import Path

import duckdb
import pytest

import bench.year as year
from bench.collect_scale import RESULTS


def test_months_are_the_calendar_months_of_the_year() -> None:
    months = year.months(year.YEAR_DAYS)
    assert [m[0] for m in months][:2] == ["2025-11", "2025-12"]
    assert len(months) == 12
    assert months[0][1] == 0 and months[-1][2] == year.YEAR_DAYS * 24
    assert all(a[2] == b[1] for a, b in itertools.pairwise(months))
    assert year.months(3) == [("2025-11", 0, 72)]


def test_table_families() -> None:
    assert year.family_of("core", "gpu_telemetry_samples") == "raw telemetry"
    assert year.family_of("core", "lineage_events") == "lineage"
    assert year.family_of("core", "gpu_allocations") == "kubernetes history"
    assert year.family_of("marts", "gpu_hourly") == "rollups (marts)"
    assert year.family_of("audit", "collections") == "audit"


def test_the_raw_window_follows_the_retention_setting(monkeypatch) -> None:
    import annex.settings

    class Retention:
        telemetry_days = 9

    monkeypatch.setattr(annex.settings, "RetentionSettings", Retention, raising=False)
    assert year.default_raw_days() == (9, "the default of [retention] telemetry_days")
    monkeypatch.delattr(annex.settings, "RetentionSettings")
    assert year.default_raw_days()[0] == year.DEFAULT_RAW_DAYS


def test_fill_script_sections_hold_only_statements() -> None:
    script = year.sections(year.FILL.read_text(encoding="utf-8"))
    assert set(script) == {"setup", "kubernetes", "lineage", "month", "raw_series", "raw_hour"}
    for statements in script.values():
        assert statements
        assert all(not s.lstrip().startswith("--") for s in statements)


def test_a_tiny_year_is_consistent(tmp_path: Path) -> None:
    path = tmp_path / "annex.duckdb"
    built = year.build(path, scale=0.003, days=4, raw_days=1, models=3)
    assert built.nodes == 24 and built.gpus == 192
    hours = 4 * 24
    assert built.rows["marts.node_gpu_hours"] == built.nodes * hours
    assert built.rows["core.gpu_telemetry_samples"] > 0
    assert sum(built.final_families.values()) <= built.live_bytes
    assert built.final_families["raw telemetry"] > 0
    with duckdb.connect(str(path), read_only=True) as con:
        capacity, workload, unavailable, telemetry = con.execute(
            "SELECT sum(capacity_gpu_hours), sum(allocated_workload_gpu_hours), "
            "sum(unavailable_gpu_hours), sum(telemetry_gpu_hours) FROM marts.node_gpu_hours"
        ).fetchone()
        assert capacity == built.gpus * hours
        assert telemetry + unavailable == capacity
        # the hourly rollups and the allocation intervals tell the same story (intervals start
        # up to 10 minutes into their first hour and end before their last)
        intervals = con.execute(
            "SELECT sum(gpus * date_diff('second', valid_from, coalesce(valid_to, $end))) / 3600 "
            "FROM core.gpu_allocations WHERE category = 'workload'",
            {"end": year.T0 + dt.timedelta(days=4)},
        ).fetchone()[0]
        assert abs(intervals - workload) / workload < 0.1
        # raw samples only in the window, every one of them under a series
        first, orphans = con.execute(
            "SELECT min(ts), count(*) FILTER (WHERE c.series_id IS NULL) "
            "FROM core.gpu_telemetry_samples LEFT JOIN core.gpu_telemetry_series AS c "
            "USING (series_id)"
        ).fetchone()
        assert first == year.T0 + dt.timedelta(days=3)
        assert orphans == 0
        # the fleet report's daily view has every pool's capacity on every day
        days, pools, empty = con.execute(
            "SELECT count(DISTINCT day), count(DISTINCT node_pool), "
            "count(*) FILTER (WHERE capacity_gpu_hours <= 0) FROM marts.gpu_hours_daily_by_pool"
        ).fetchone()
        assert days == 4 and pools >= 1 and empty == 0
        # spread values, not one repeated constant
        assert con.execute("SELECT count(DISTINCT busy) FROM marts.gpu_hourly").fetchone()[0] > 1000


def test_main_measures_every_step_without_recording(tmp_path: Path, capsys) -> None:
    before = RESULTS.read_bytes()
    code = year.main(
        [
            *("--scale", "0.002", "--days", "3", "--raw-days", "1", "--models", "2"),
            *("--keep", str(tmp_path), "--no-record", "--no-render"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert RESULTS.read_bytes() == before
    for step in ("report 2025-11", "daily 2025-11", "compute", "floor year", "**live file**"):
        assert f"| {step} |" in out
    # the scheduled refresh's rows checked against a full rebuild: none differs (exit 0)
    assert re.search(r"^\| compute check \|.*\| 0 \|$", out, flags=re.M), out
    assert "the same rows as a full rebuild" in out


def test_a_year_without_its_raw_window_read_through_a_hard_link(tmp_path: Path, capsys) -> None:
    """--raw-days 0 --link-published (a full-scale year on a small disk): the readers' file is
    the live file's inode, no raw line or disk verdict pretends a window was measured."""
    code = year.main(
        [
            *("--scale", "0.002", "--days", "3", "--raw-days", "0", "--models", "2"),
            *("--keep", str(tmp_path), "--no-record", "--no-render", "--link-published"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    live = tmp_path / "annex.duckdb"
    published = year._published(live)
    assert published.stat().st_ino == live.stat().st_ino
    assert "hard link (`--link-published`)" in out
    assert "not built (`--raw-days 0`)" in out
    assert "without the raw window" in out and "< 100 GB" not in out
    assert "| compute |" in out


def test_steps_again_on_a_kept_year(tmp_path: Path, capsys) -> None:
    """--steps-only times the steps again on the year an earlier --keep run left, unbuilt."""
    common = ("--scale", "0.002", "--days", "3", "--models", "2", "--no-record", "--no-render")
    assert year.main(["--raw-days", "0", "--keep", str(tmp_path), *common]) == 0
    built = (tmp_path / "annex.duckdb").stat().st_mtime_ns
    capsys.readouterr()
    assert year.main(["--keep", str(tmp_path), "--steps-only", *common]) == 0
    out = capsys.readouterr().out
    assert "## year, steps again: 16 nodes, 128 GPUs, 3 days" in out
    assert "| compute |" in out and "| report 2025-11 |" in out
    assert "compute < 10 s (the refresh):" in out
    assert "rollups, per month" not in out
    assert (tmp_path / "annex.duckdb").stat().st_mtime_ns >= built


def test_steps_only_needs_a_kept_year(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        year.main(["--steps-only", "--no-record"])


def test_a_raw_window_added_to_a_kept_year(tmp_path: Path, capsys) -> None:
    """--add-raw-days fills the raw window of a year kept without one, once."""
    common = ("--scale", "0.002", "--days", "3", "--models", "2", "--no-record", "--no-render")
    assert year.main(["--raw-days", "0", "--keep", str(tmp_path), *common]) == 0
    capsys.readouterr()
    assert year.main(["--keep", str(tmp_path), "--add-raw-days", "1", *common]) == 0
    out = capsys.readouterr().out
    assert "## year, raw window added: 16 nodes, 128 GPUs, 1 day(s)" in out
    with duckdb.connect(str(tmp_path / "annex.duckdb"), read_only=True) as con:
        first, last, samples = con.execute(
            "SELECT min(ts), max(ts), count(*) FROM core.gpu_telemetry_samples"
        ).fetchone()
    assert (first, last) == (dt.datetime(2025, 11, 3), dt.datetime(2025, 11, 3, 23, 59))
    assert f"| samples | {samples:,} |" in out
    with pytest.raises(SystemExit, match="has raw samples already"):
        year.main(["--keep", str(tmp_path), "--add-raw-days", "1", *common])


@pytest.mark.parametrize("days", ["0", "-1", "4"])
def test_a_raw_window_of_no_days_or_more_than_the_year_is_refused(tmp_path: Path, days) -> None:
    (tmp_path / "annex.duckdb").write_bytes(b"kept")  # never touched: refused before
    with pytest.raises(SystemExit):
        year.main(["--keep", str(tmp_path), "--days", "3", "--add-raw-days", days, "--no-record"])
    assert (tmp_path / "annex.duckdb").read_bytes() == b"kept"


def test_steps_again_in_a_folder_without_a_year_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no kept year"):
        year.main(["--keep", str(tmp_path), "--steps-only", "--no-record"])
    assert list(tmp_path.iterdir()) == []

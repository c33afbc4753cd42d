"""Compaction (issue 39 item 2): expired raw rows move to Parquet, one atomic step per
partition, and nothing an analyst or a report reads changes.

The warehouse is collected on three simulated days (``export_scenario``: inventory from the
simulator and DCGM samples) and rolled up; a one-day retention then compacts the first day(s).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import textwrap
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest

from annex.settings import RetentionSettings, WarehouseSettings
from tests.helpers.export_scenario import DAY_ONE, collect_day, new_warehouse
from warehouse import Warehouse, compaction
from warehouse.compaction import compact_warehouse, compactable_tables
from warehouse.export import AS_OF_VARIABLE, export_warehouse
from warehouse.models.utilisation import refresh_gpu_hourly

RETENTION = RetentionSettings(telemetry_days=1, kubernetes_days=1, audit_days=8)
"""With the cut-off on the third day, the first day is past every retention but the audit's."""
DAYS = 3
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compaction-three-days")
    settings, wh = new_warehouse(root)
    for day in range(DAYS):
        collect_day(settings, wh, root, DAY_ONE + timedelta(days=day), seed=day + 1)
    with wh.writer() as con:
        refresh_gpu_hourly(con)
    wh.publish()
    return root


@pytest.fixture
def wh(collected: Path, tmp_path: Path) -> Warehouse:
    """A copy of the collected warehouse, so each test compacts its own."""
    for name in ("annex.duckdb", "annex.published.duckdb"):
        shutil.copy(collected / name, tmp_path / name)
    return Warehouse(WarehouseSettings(path=tmp_path / "annex.duckdb"))


def retention(wh: Warehouse) -> RetentionSettings:
    return replace(RETENTION, dir=wh.path.parent / "archive")


def snapshot(con: duckdb.DuckDBPyConnection, schema: str) -> dict[str, list[str]]:
    """Every relation of ``schema``, its rows as sorted text (as of a fixed moment)."""
    con.execute(f"SET VARIABLE {AS_OF_VARIABLE} = TIMESTAMP '{DAY_ONE + timedelta(days=DAYS)}'")
    names = [
        name
        for (name,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = ? UNION ALL "
            "SELECT view_name FROM duckdb_views() WHERE schema_name = ? AND NOT internal",
            [schema, schema],
        ).fetchall()
    ]
    return {
        name: sorted(
            repr(row) for row in con.execute(f'SELECT * FROM {schema}."{name}"').fetchall()
        )
        for name in sorted(names)
    }


def whole_tables(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """Every compactable table's rows, read through its archive view."""
    return {
        t.name: sorted(
            repr(row) for row in con.execute(f'SELECT * FROM archive."{t.table}"').fetchall()
        )
        for t in compactable_tables(con)
    }


def counts(wh: Warehouse) -> dict[str, int]:
    with wh.writer() as con:
        return {
            t.name: con.execute(f"SELECT count(*) FROM {t.plan.source}").fetchone()[0]  # type: ignore[index]
            for t in compactable_tables(con)
        }


def ledger(wh: Warehouse) -> list[tuple]:
    with wh.writer() as con:
        return con.execute(
            "SELECT table_name, cluster, day, rows, file, sha256 FROM audit.compactions "
            "ORDER BY ALL"
        ).fetchall()


def test_marts_and_every_row_are_the_same_after_compacting(wh: Warehouse) -> None:
    with wh.writer() as con:
        marts_before, rows_before = snapshot(con, "marts"), whole_tables(con)
    for figures in ("gpu_hourly", "gpu_daily", "node_gpu_hours", "namespace_gpu_hours"):
        assert marts_before[figures], f"marts.{figures} is empty: nothing would be compared"
    live_before = counts(wh)

    result = compact_warehouse(wh, retention(wh))

    moved = {p.table for p in result.partitions}
    assert "core.gpu_telemetry_samples" in moved and "raw.kubernetes_pods" in moved
    assert {p.day for p in result.partitions} == {DAY_ONE.date()}
    assert all(p.family != "audit" for p in result.partitions)  # 8 days: nothing expired
    live_after = counts(wh)
    assert live_after["core.gpu_telemetry_samples"] < live_before["core.gpu_telemetry_samples"]
    for partition in result.partitions:
        assert partition.file is not None and partition.file.is_file()
        assert partition.file.name == "data_0.parquet"
        assert str(partition.file.parent.relative_to(wh.path.parent / "archive")).endswith(
            f"day={DAY_ONE.date()}"
        )
    for _table, _cluster, _day, _rows, file, sha256 in ledger(wh):
        assert hashlib.sha256(Path(file).read_bytes()).hexdigest() == sha256
    with wh.writer() as con:
        assert snapshot(con, "marts") == marts_before
        assert whole_tables(con) == rows_before
    # the analysts' copy was published and reaches the Parquet files too
    with wh.reader() as con:
        assert snapshot(con, "marts") == marts_before
        assert whole_tables(con) == rows_before
        spanning = con.execute(
            "SELECT CAST(ts AS DATE), count(*), sum(value) FROM archive.gpu_telemetry_samples "
            "GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    assert [day for day, _, _ in spanning] == [
        (DAY_ONE + timedelta(days=d)).date() for d in range(DAYS)
    ]


def test_a_rerun_is_a_no_op_and_late_rows_go_to_a_second_file(wh: Warehouse) -> None:
    first = compact_warehouse(wh, retention(wh))
    files = {p.file: p.file.stat().st_mtime_ns for p in first.partitions if p.file}
    recorded = ledger(wh)

    again = compact_warehouse(wh, retention(wh))

    assert again.partitions == ()
    assert ledger(wh) == recorded
    assert {f: f.stat().st_mtime_ns for f in files} == files
    # a row that arrives late for a compacted day goes to data_1, beside data_0
    with wh.writer() as con:
        con.execute(
            "INSERT INTO core.gpu_telemetry_samples SELECT ts + INTERVAL 1 SECOND, series_id, "
            "value FROM archive.gpu_telemetry_samples ORDER BY ts LIMIT 1"
        )
    late = compact_warehouse(wh, retention(wh))
    [partition] = late.partitions
    assert partition.rows == 1 and partition.file is not None
    assert partition.file.name == "data_1.parquet"


def test_a_dry_run_lists_what_would_move_and_changes_nothing(wh: Warehouse) -> None:
    before = counts(wh)
    dry = compact_warehouse(wh, retention(wh), dry_run=True)
    assert dry.dry_run and dry.partitions and dry.rows > 0 and dry.bytes > 0
    assert counts(wh) == before
    assert ledger(wh) == []
    assert not (wh.path.parent / "archive").exists()
    real = compact_warehouse(wh, retention(wh))
    assert [(p.table, p.cluster, p.day, p.rows) for p in real.partitions] == [
        (p.table, p.cluster, p.day, p.rows) for p in dry.partitions
    ]


def test_telemetry_not_rolled_up_yet_is_never_compacted(wh: Warehouse) -> None:
    with wh.writer() as con:
        con.execute(
            "UPDATE audit.telemetry_loads SET rolled_up = false WHERE CAST(min_ts AS DATE) = ?",
            [DAY_ONE.date()],
        )
    planned = compact_warehouse(wh, retention(wh), dry_run=True)
    assert "core.gpu_telemetry_samples" not in {p.table for p in planned.partitions}
    assert "raw.kubernetes_pods" in {p.table for p in planned.partitions}


def test_a_refresh_never_rebuilds_an_hour_of_compacted_samples(wh: Warehouse) -> None:
    compact_warehouse(wh, retention(wh))
    with wh.writer() as con:
        hourly = snapshot(con, "marts")["gpu_hourly"]
        # a backfill reaching into the compacted day: its hours' telemetry rollup is final
        con.execute(
            "UPDATE audit.telemetry_loads SET rolled_up = false WHERE CAST(min_ts AS DATE) = ?",
            [DAY_ONE.date()],
        )
        refresh_gpu_hourly(con)
        assert snapshot(con, "marts")["gpu_hourly"] == hourly


CRASHING = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from annex.settings import RetentionSettings, WarehouseSettings
    from warehouse import Warehouse
    from warehouse.compaction import compact_warehouse

    path, archive, step, at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    seen = []

    def crash(name):
        if name == step:
            seen.append(name)
            if len(seen) == at:
                os._exit(9)  # as kill -9: no rollback, no close, no checkpoint

    retention = RetentionSettings(
        telemetry_days=1, kubernetes_days=1, audit_days=8, dir=Path(archive)
    )
    compact_warehouse(Warehouse(WarehouseSettings(path=Path(path))), retention, on_step=crash)
    """
)


@pytest.mark.parametrize("step", ["written", "committing"])
def test_a_crash_mid_partition_leaves_old_or_new_and_the_next_run_completes(
    wh: Warehouse, tmp_path: Path, step: str
) -> None:
    with wh.writer() as con:
        rows_before = whole_tables(con)
    live_before = counts(wh)
    archive = wh.path.parent / "archive"
    expected = compact_warehouse(
        Warehouse(_copy_of(wh, tmp_path / "reference")), replace(RETENTION, dir=tmp_path / "ref")
    )

    crashed = subprocess.run(
        [sys.executable, "-c", CRASHING, str(wh.path), str(archive), step, "2"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert crashed.returncode == 9, crashed.stderr

    # the first partition committed (new state), the second did not (old state): its rows are
    # still in DuckDB and the ledger does not name the file it wrote
    [done] = ledger(wh)
    live = counts(wh)
    assert live[done[0]] == live_before[done[0]] - done[3]
    assert sum(live_before.values()) - sum(live.values()) == done[3]
    stray = [p for p in archive.rglob("*.parquet") if str(p) != done[4]]
    assert len(stray) == 1
    with wh.writer() as con:
        assert whole_tables(con) == rows_before

    finished = compact_warehouse(wh, retention(wh))

    assert len(finished.partitions) == len(expected.partitions) - 1
    assert len(ledger(wh)) == len(expected.partitions)
    assert sum(counts(wh).values()) == sum(live_before.values()) - expected.rows
    with wh.writer() as con:
        assert whole_tables(con) == rows_before


def _copy_of(wh: Warehouse, folder: Path) -> WarehouseSettings:
    folder.mkdir()
    shutil.copy(wh.path, folder / wh.path.name)
    return WarehouseSettings(path=folder / wh.path.name)


def test_an_export_after_compacting_still_holds_every_sample(wh: Warehouse, tmp_path: Path):
    before = export_warehouse(wh, tmp_path / "before")
    compact_warehouse(wh, retention(wh))
    after = export_warehouse(wh, tmp_path / "after")

    def partitions(root: Path) -> dict[str, list[tuple]]:
        folder = root / "core" / "gpu_telemetry_samples"
        return {
            str(p.relative_to(folder)): duckdb.sql(
                f"SELECT * FROM read_parquet('{p}') ORDER BY ALL"
            ).fetchall()
            for p in sorted(folder.rglob("*.parquet"))
        }

    exported = partitions(before.dest)
    assert f"day={DAY_ONE.date()}/data_0.parquet" in exported
    assert partitions(after.dest) == exported
    assert {t.name: t.rows for t in after.tables} == {t.name: t.rows for t in before.tables}


def test_the_writer_lock_is_given_back_between_partitions(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compaction, "LOCK_SLICE_SECONDS", 0.0)
    monkeypatch.setattr(compaction, "LOCK_GAP_SECONDS", 0.0)
    sessions = []
    writer = Warehouse.writer

    def counted(self: Warehouse, on_wait=None):
        sessions.append(1)
        return writer(self, on_wait)

    monkeypatch.setattr(Warehouse, "writer", counted)
    result = compact_warehouse(wh, retention(wh))
    assert len(result.partitions) > 1
    assert len(sessions) >= len(result.partitions) + 1  # the plan's, then one a partition
    assert len(ledger(wh)) == len(result.partitions)

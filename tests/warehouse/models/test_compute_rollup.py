"""marts.gpu_pod_daily (migration 0011), the per-pod daily telemetry that training compute joins
instead of the GPU-hours: kept equal to a GROUP BY over marts.gpu_hourly by the utilisation
refresh, filled the same way by the migration, and joined without counting a reused pod name
twice.

The world (T0 = 2026-11-01 00:00 UTC), node-1, samples every 10 minutes, all pod-labelled:
* GPU-x carries pod label w0 from 00:00 to 06:00 (tensor_active 0.2) and again from 12:00 to
  18:00 (tensor_active 0.6): two Jobs whose pods had the same name, one after the other.
* GPU-y carries pod label w1 from 20:00 to 04:00 the next day (tensor_active 0.5).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from annex.model_registry import registry_rows
from annex.settings import WarehouseSettings
from services.compute import PeakTable
from tests.warehouse.models.test_compute import CONFIG, Telemetry, registry
from warehouse import Warehouse, load_collection
from warehouse.migrate import apply_migrations, discover_migrations
from warehouse.models.compute import refresh_compute
from warehouse.models.telemetry import TELEMETRY_MODEL
from warehouse.models.utilisation import rebuild_daily_rollups, refresh_gpu_hourly

T0 = datetime(2026, 11, 1)
DAY = T0.date()

# The oracle: what every row of marts.gpu_pod_daily must hold, straight from the GPU-hours,
# each sum exact (every value to 12 decimals, summed as a decimal: the same in any order).
ORACLE = """
SELECT cluster, day, workload_namespace, workload_pod, node_name,
       list(DISTINCT gpu_uuid ORDER BY gpu_uuid) AS gpu_uuids,
       min(hour) AS first_hour, max(hour) AS last_hour, count(*) AS gpu_hour_rows,
       oracle_exact_sum(pod_label_fraction) AS labelled_gpu_hours,
       oracle_exact_sum(CASE WHEN tensor_active IS NOT NULL THEN pod_label_fraction END)
           AS tensor_gpu_hours,
       oracle_exact_sum(tensor_active * pod_label_fraction) AS tensor_active_gpu_hours,
       oracle_exact_sum(CASE WHEN busy IS NOT NULL THEN pod_label_fraction END) AS busy_gpu_hours,
       oracle_exact_sum(busy * pod_label_fraction) AS busy_active_gpu_hours,
       oracle_exact_sum(CASE WHEN coalesce(energy_joules, energy_estimated_joules) IS NOT NULL
                THEN pod_label_fraction END) AS energy_gpu_hours,
       oracle_exact_sum(coalesce(energy_joules, energy_estimated_joules) * pod_label_fraction)
           AS energy_joules
FROM marts.gpu_hourly
WHERE workload_pod IS NOT NULL AND workload_namespace IS NOT NULL AND node_name IS NOT NULL
GROUP BY ALL
ORDER BY ALL
"""
COLUMNS = (
    "cluster, day, workload_namespace, workload_pod, node_name, gpu_uuids, first_hour, "
    "last_hour, gpu_hour_rows, labelled_gpu_hours, tensor_gpu_hours, tensor_active_gpu_hours, "
    "busy_gpu_hours, busy_active_gpu_hours, energy_gpu_hours, energy_joules"
)


def minutes(start_hour: int, end_hour: int) -> range:
    return range(start_hour * 60, end_hour * 60, 10)


def first_reuse() -> Telemetry:
    t = Telemetry()
    for gpu, pod, hours, tensor in (("GPU-x", "w0", (0, 6), 0.2), ("GPU-y", "w1", (20, 28), 0.5)):
        span = minutes(*hours)
        t.add(gpu, "tensor_active", span, [tensor] * len(span), pod=pod)
        t.add(gpu, "gr_engine_active", span, [0.9] * len(span), pod=pod)
        t.add(gpu, "power_usage", span, [400.0] * len(span), pod=pod)
    return t


def second_reuse() -> Telemetry:
    t = Telemetry()
    span = minutes(12, 18)
    t.add("GPU-x", "tensor_active", span, [0.6] * len(span), pod="w0")
    t.add("GPU-x", "gr_engine_active", span, [0.9] * len(span), pod="w0")
    return t


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    con.execute(
        "CREATE OR REPLACE TEMP MACRO oracle_exact_sum(x) AS "
        "CAST(sum(CAST(x AS DECIMAL(38, 12))) AS DOUBLE)"
    )
    return con.execute(sql).fetchall()


def stored(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return rows(con, f"SELECT {COLUMNS} FROM marts.gpu_pod_daily ORDER BY ALL")


def insert_jobs(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "INSERT INTO core.nodes (cluster, node_uid, node_name, gfd_product, gpu_capacity, "
        "gpu_allocatable, content_hash, valid_from, collection_id) VALUES "
        "('c', 'uid-node-1', 'node-1', 'NVIDIA-H100-80GB-HBM3', 8, 8, 0, ?, 'k8s-1')",
        [T0 - timedelta(days=1)],
    )
    for run_id, pod_uid, pod, start, end in (
        ("RA", "uid-a", "w0", 0, 6),
        ("RB", "uid-b", "w0", 12, 18),
        ("RC", "uid-c", "w1", 20, 28),
    ):
        job = f"job-{run_id}"
        con.execute(
            "INSERT INTO core.gpu_allocations (cluster, pod_uid, namespace, pod_name, job_name, "
            "node_name, resource_name, gpus, category, valid_from, valid_from_source, valid_to, "
            "opened_collection_id) VALUES ('c', ?, 'team', ?, ?, 'node-1', 'nvidia.com/gpu', 1, "
            "'workload', ?, 'scheduled', ?, 'k8s-1')",
            [pod_uid, pod, job, T0 + timedelta(hours=start), T0 + timedelta(hours=end)],
        )
        con.execute(
            "INSERT INTO core.lineage_runs (run_id, job_name, parent_run_id, state, started_at, "
            "ended_at, state_event_id, cluster, namespace, "
            "kubernetes_job_name, model_name, stage) VALUES (?, ?, NULL, 'COMPLETE', ?, ?, ?, "
            "'c', 'team', ?, 'toy-lm', 'PRETRAINING')",
            [run_id, job, T0 + timedelta(hours=start), T0 + timedelta(hours=end), f"ev-{run_id}",
             job],
        )  # fmt: skip


@pytest.fixture(scope="module")
def wh(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    path = tmp_path_factory.mktemp("rollup") / "w.duckdb"
    return Warehouse(WarehouseSettings(path=path, lock_timeout_seconds=5))


def test_the_refresh_keeps_the_daily_rows_equal_to_the_gpu_hours(wh: Warehouse) -> None:
    load_collection(
        wh, TELEMETRY_MODEL, cluster="c", batches=first_reuse().batches(), publish=False
    )
    with wh.writer() as con:
        refresh_gpu_hourly(con)
        first = stored(con)
        assert first == rows(con, ORACLE)
        got = {(r[3], r[1]): (r[5], r[6].hour, r[7].hour, r[8]) for r in first}
        assert got == {
            ("w0", DAY): (["GPU-x"], 0, 5, 6),
            ("w1", DAY): (["GPU-y"], 20, 23, 4),
            ("w1", DAY + timedelta(days=1)): (["GPU-y"], 0, 3, 4),
        }
    # a later load into the same day: the day is summed again whole, not just its new hours
    load_collection(
        wh, TELEMETRY_MODEL, cluster="c", batches=second_reuse().batches(), publish=False
    )
    with wh.writer() as con:
        refresh_gpu_hourly(con)
        second = stored(con)
        assert second == rows(con, ORACLE)
        (w0,) = [r for r in second if r[3] == "w0"]
        assert (w0[6].hour, w0[7].hour, w0[8]) == (0, 17, 12)
        close(w0[11], 6 * 0.2 + 6 * 0.6)
        # rerunning with nothing new changes nothing
        refresh_gpu_hourly(con)
        assert stored(con) == second
        # the explicit rebuild (for GPU-hours written another way) writes the same rows
        assert rebuild_daily_rollups(con, DAY, DAY + timedelta(days=1))["gpu_pod_daily"] == 3
        assert stored(con) == second


def close(actual: float, expected: float) -> None:
    assert actual == pytest.approx(expected, rel=1e-9), (actual, expected)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    path = tmp_path_factory.mktemp("reuse") / "w.duckdb"
    wh = Warehouse(WarehouseSettings(path=path, lock_timeout_seconds=5))
    for telemetry in (first_reuse(), second_reuse()):
        load_collection(
            wh, TELEMETRY_MODEL, cluster="c", batches=telemetry.batches(), publish=False
        )
    with wh.writer() as con:
        refresh_gpu_hourly(con)
    return wh


def test_a_reused_pod_name_counts_in_each_holding_once(loaded: Warehouse) -> None:
    with loaded.writer() as con:
        insert_jobs(con)
        counts = refresh_compute(
            con, CONFIG, registry_rows(registry()), PeakTable(), now=T0 + timedelta(days=2)
        )
        assert counts["runs"] == 3
        got = {
            run_id: (hours, tensor)
            for run_id, hours, tensor in rows(
                con,
                "SELECT run_id, telemetry_gpu_hours, tensor_active FROM marts.training_run_gpus",
            )
        }
        evidence = dict(
            rows(con, "SELECT run_id, evidence_gpu_uuids FROM marts.training_run_compute")
        )
    # w0's one daily row straddles both holdings: each gets only its own six hours
    assert set(got) == {"RA", "RB", "RC"}
    for run_id, hours, tensor in (("RA", 6, 0.2), ("RB", 6, 0.6), ("RC", 8, 0.5)):
        close(got[run_id][0], hours)
        close(got[run_id][1], tensor)
    assert evidence == {"RA": ["GPU-x"], "RB": ["GPU-x"], "RC": ["GPU-y"]}


def test_the_migration_fills_the_table_from_existing_gpu_hours(tmp_path: Path) -> None:
    migrations = discover_migrations()
    older = [m for m in migrations if m.version < 11]
    with duckdb.connect(str(tmp_path / "old.duckdb")) as con:
        apply_migrations(con, older, "old.duckdb")
        for gpu, pod, hour, tensor in (
            ("GPU-x", "w0", 0, 0.2), ("GPU-x", "w0", 1, 0.4), ("GPU-z", "w0", 1, 0.6),
            ("GPU-x", None, 2, 0.9),
            ("GPU-y", "w1", 23, 0.5), ("GPU-y", "w1", 24, None),
        ):  # fmt: skip
            at = T0 + timedelta(hours=hour)
            con.execute(
                "INSERT INTO marts.gpu_hourly (cluster, gpu_uuid, hour, day, node_name, samples, "
                "busy, tensor_active, energy_joules, workload_pod, workload_namespace, "
                "pod_label_fraction, refreshed_at) VALUES ('c', ?, ?, ?, 'node-1', 6, 0.9, ?, "
                "3.6e5, ?, ?, 0.5, ?)",
                [gpu, at, at.date(), tensor, pod, "team" if pod else None, T0],
            )
        apply_migrations(con, migrations, "old.duckdb")
        filled = stored(con)
        # the migration (applied, never edited) summed as floats; the refresh sums exactly
        oracle = rows(con, ORACLE)
        assert [r[:9] for r in filled] == [r[:9] for r in oracle]
        for got, want in zip(filled, oracle, strict=True):
            for a, b in zip(got[9:], want[9:], strict=True):
                assert a == b or a == pytest.approx(b, rel=1e-12), (got, want)
        # the unlabelled hour is left out; w0 held two GPUs; w1 spans two days
        assert [(r[3], r[5], r[8]) for r in filled] == [
            ("w0", ["GPU-x", "GPU-z"], 3),
            ("w1", ["GPU-y"], 1),
            ("w1", ["GPU-y"], 1),
        ]
        counts = rebuild_daily_rollups(con, date(2026, 11, 1), date(2026, 11, 2))
        assert counts["gpu_pod_daily"] == 3
        assert stored(con) == oracle


def test_a_pod_days_sums_do_not_depend_on_the_order_of_its_hours(tmp_path: Path) -> None:
    """Ten GPU-hours of 0.1 each make exactly 1.0 GPU-hours for the pod-day, however DuckDB
    orders them (a float SUM gives 0.9999999999999999 left to right)."""
    with duckdb.connect(str(tmp_path / "w.duckdb")) as con:
        apply_migrations(con, discover_migrations(), "w.duckdb")
        for n in range(10):
            at = T0 + timedelta(hours=n)
            con.execute(
                "INSERT INTO marts.gpu_hourly (cluster, gpu_uuid, hour, day, node_name, samples, "
                "busy, energy_joules, workload_pod, workload_namespace, pod_label_fraction, "
                "refreshed_at) VALUES ('c', 'GPU-x', ?, ?, 'node-1', 60, 0.1, 0.1, 'w0', 'team', "
                "0.1, ?)",
                [at, at.date(), T0],
            )
        rebuild_daily_rollups(con, DAY, DAY)
        assert rows(
            con,
            "SELECT labelled_gpu_hours, busy_gpu_hours, energy_gpu_hours FROM marts.gpu_pod_daily",
        ) == [(1.0, 1.0, 1.0)]

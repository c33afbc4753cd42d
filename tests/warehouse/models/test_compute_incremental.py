"""A refresh that recomputes only the runs whose evidence changed writes what a full rebuild
writes, row for row (warehouse/models/compute_inputs.py).

Every check runs the refresh as annex does (incremental after the first), then a full rebuild
of the same warehouse at the same moment inside a transaction it rolls back, and compares all
six compute marts (every column but ``refreshed_at``, which says when a row was computed).
The evidence arrives late and out of order: telemetry of a past day, a benchmark, a token
count, an earlier run that makes a later one a new model, a second run naming a claimed Job, a
node whose GPU model is corrected, a Job that ends.
"""

from __future__ import annotations

import dataclasses
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from annex.model_registry import registry_rows
from annex.settings import ComputeSettings
from services.compute import PeakTable
from tests.warehouse.models import test_compute as hand
from tests.warehouse.models.test_compute_rules import CONFIG, NOW, T0, World, model
from warehouse import load_collection
from warehouse.models.compute import COMPUTE_MARTS, refresh_compute
from warehouse.models.telemetry import TELEMETRY_MODEL
from warehouse.models.utilisation import refresh_gpu_hourly


def marts(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
    return {
        table: con.execute(f"SELECT * EXCLUDE (refreshed_at) FROM {table} ORDER BY ALL").fetchall()
        for table in COMPUTE_MARTS
    }


def refresh_and_compare(
    con: duckdb.DuckDBPyConnection,
    registry: list[dict],
    now: datetime,
    config: ComputeSettings = CONFIG,
) -> dict[str, int]:
    """Refresh as annex does, then check a full rebuild at the same moment writes the same."""
    counts = refresh_compute(con, config, registry, PeakTable(), now=now)
    refreshed = marts(con)
    con.execute("BEGIN TRANSACTION")
    try:
        refresh_compute(con, config, registry, PeakTable(), now=now, full=True)
        rebuilt = marts(con)
    finally:
        con.execute("ROLLBACK")
    for table in COMPUTE_MARTS:
        assert refreshed[table] == rebuilt[table], table
    return counts


def state(con: duckdb.DuckDBPyConnection) -> tuple[str, int, int]:
    """The last refresh's mode, runs and runs recomputed (audit.compute_refreshes)."""
    (row,) = con.execute(
        "SELECT mode, runs, runs_recomputed FROM audit.compute_refreshes ORDER BY rowid DESC "
        "LIMIT 1"
    ).fetchall()
    return row


class Evidence:
    """A World's statements in pieces applied one at a time: ``base`` (the node and the models'
    campaign runs) first, then each named piece in any order."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.base = list(world.statements)
        world.statements.clear()
        self.pieces: dict[str, list[tuple[str, list[Any]]]] = {}

    def apply(self, con: duckdb.DuckDBPyConnection, *names: str) -> None:
        """Run the statements of the pieces ``names``; with none, of the base and every piece."""
        statements = (
            [s for name in names for s in self.pieces[name]]
            if names
            else self.base + [s for piece in self.pieces.values() for s in piece]
        )
        for sql, params in statements:
            con.execute(sql, params)

    def piece(self, name: str, add) -> None:
        before = len(self.world.statements)
        add()
        self.pieces[name] = self.world.statements[before:]
        del self.world.statements[before:]


def rules_world(tmp_path: Path) -> tuple[World, Evidence]:
    """Two models, the rules' evidence as separate pieces that can arrive in any order."""
    world = World(tmp_path, model("lm"), model("other"))
    evidence = Evidence(world)
    day = T0 + timedelta(days=1)
    evidence.piece(
        "first run",
        lambda: (
            world.run("lm-1", job="job-1", tokens=1e12, start=day),
            world.pod("p1", "job-1", 8, day, day + timedelta(hours=10)),
        ),
    )
    evidence.piece(
        "its telemetry, day one",
        lambda: world.telemetry("p1", day, 40.0, 40 * 600.0 * 3600),
    )
    evidence.piece(
        "its telemetry, late rows of the same day",
        lambda: world.statements.append(
            (
                "INSERT INTO marts.gpu_pod_daily VALUES ('c', ?, 'team', 'p1', 'n1', ['GPU-2'], "
                "?, ?, 1, 40, NULL, NULL, NULL, NULL, 40, 8.6e7, ?)",
                [day.date(), day, day, NOW - timedelta(hours=1)],
            )
        ),
    )
    evidence.piece(
        "an earlier from-scratch run of the same model",
        lambda: (
            world.run("lm-0", job="job-0", tokens=1e11, start=T0),
            world.pod("p0", "job-0", 4, T0, T0 + timedelta(hours=5)),
        ),
    )
    evidence.piece(
        "a second run naming the first run's Job",
        lambda: world.run("lm-1b", job="job-1", tokens=1e12, start=day + timedelta(hours=1)),
    )
    evidence.piece(
        "a checkpoint read: the second run continues the first",
        lambda: world.checkpoint("lm-0", "lm-1"),
    )
    evidence.piece(
        "a GEMM benchmark on the node",
        lambda: world.statements.append(
            (
                "INSERT INTO core.gpu_benchmarks (cluster, record_id, ts, node_name, gpu_uuid, "
                "gpu_model, benchmark, dtype, frac_peak_flops, correct, collection_id, "
                "loaded_at) VALUES ('c', 'b-1', ?, 'n1', 'GPU-1', 'H100-SXM5-80GB', 'gemm', "
                "'bf16', 0.7, true, 'gb-1', ?)",
                [T0, NOW],
            )
        ),
    )
    evidence.piece(
        "a running run of the other model",
        lambda: (
            world.run("other-1", job="job-o", model="other", start=day, end=None, tokens=5e11),
            world.pod("po", "job-o", 16, day, None),
        ),
    )
    evidence.piece(
        "the node's GPU model corrected by a later node version",
        lambda: world.statements.append(
            (
                "INSERT INTO core.nodes (cluster, node_uid, node_name, gfd_product, "
                "gpu_capacity, gpu_allocatable, content_hash, valid_from, collection_id) "
                "VALUES ('c', 'uid-n1', 'n1', 'NVIDIA-A100-SXM4-80GB', 8, 8, 1, ?, 'k8s-2')",
                [NOW - timedelta(days=1)],
            )
        ),
    )
    return world, evidence


def test_evidence_in_any_order_gives_the_full_rebuilds_rows(tmp_path: Path) -> None:
    names = [
        "first run",
        "its telemetry, day one",
        "its telemetry, late rows of the same day",
        "an earlier from-scratch run of the same model",
        "a second run naming the first run's Job",
        "a checkpoint read: the second run continues the first",
        "a GEMM benchmark on the node",
        "a running run of the other model",
        "the node's GPU model corrected by a later node version",
    ]
    for seed in range(4):
        order = names[:] if seed == 0 else random.Random(seed).sample(names, len(names))
        world, evidence = rules_world(tmp_path / f"order-{seed}")
        registry = registry_rows(world.registry)
        modes = []
        with world.wh.writer() as con:
            for sql, params in evidence.base:
                con.execute(sql, params)
            for step, name in enumerate(order):
                evidence.apply(con, name)
                refresh_and_compare(con, registry, NOW + timedelta(minutes=step))
                modes.append(state(con)[0])
        # full: the first, and where the GPU model most GPU-hours ran on changed (the first
        # holdings; the node's GPU model corrected), which every run's energy may refer to
        assert modes[0] == "full" and modes.count("incremental") >= len(names) - 3, (order, modes)


def test_an_unchanged_warehouse_recomputes_only_what_time_moves(tmp_path: Path) -> None:
    world, evidence = rules_world(tmp_path)
    registry = registry_rows(world.registry)
    with world.wh.writer() as con:
        evidence.apply(con)
        first = refresh_and_compare(con, registry, NOW)
        assert state(con) == ("full", first["runs"], first["runs"])
        again = refresh_and_compare(con, registry, NOW + timedelta(hours=1))
        # only the running run (other-1, its pod still holding GPUs) moves with time
        assert state(con) == ("incremental", first["runs"], 1)
        assert again["recomputed"] == 1
        before = con.execute(
            "SELECT run_id, refreshed_at FROM marts.training_run_compute ORDER BY run_id"
        ).fetchall()
        assert {r for r, at in before if at == NOW + timedelta(hours=1)} == {"other-1"}


def test_what_every_run_shares_rebuilds_every_run(tmp_path: Path) -> None:
    world, evidence = rules_world(tmp_path)
    registry = registry_rows(world.registry)
    with world.wh.writer() as con:
        evidence.apply(con)
        runs = refresh_and_compare(con, registry, NOW)["runs"]
        # [compute]: the PUE
        refresh_and_compare(con, registry, NOW, dataclasses.replace(CONFIG, pue=1.3))
        assert state(con) == ("full", runs, runs)
        # the registry: a model's parameter count
        changed = [dict(r) for r in registry]
        changed[0]["parameters"] = 2 * changed[0]["parameters"]
        refresh_and_compare(con, changed, NOW)
        assert state(con) == ("full", runs, runs)
        # the peak table annex reads first
        con.execute(
            "INSERT INTO core.gpu_peak_reference (gpu_model, dtype, peak_tflops_dense, "
            "tdp_watts, source_url, updated_at) VALUES ('H100-SXM5-80GB', 'bf16', 900, 700, "
            "'https://example.com', ?)",
            [NOW],
        )
        refresh_and_compare(con, changed, NOW)
        assert state(con) == ("full", runs, runs)
        # marts that no longer match the state (rows written by something else)
        con.execute("DELETE FROM marts.training_run_compute WHERE run_id = 'lm-0'")
        refresh_and_compare(con, changed, NOW)
        assert state(con) == ("full", runs, runs)


def test_late_telemetry_through_the_real_rollups(tmp_path: Path) -> None:
    """The hand-worked scenario of test_compute.py with its telemetry loaded after a first
    refresh (rolled up by refresh_gpu_hourly), then R2 ending and its Job's pod closing."""
    from annex.settings import WarehouseSettings
    from warehouse import Warehouse

    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5))
    registry = registry_rows(hand.registry())
    with wh.writer() as con:
        hand.insert_core(con)
        refresh_and_compare(con, registry, hand.NOW, hand.CONFIG)
    load_collection(
        wh, TELEMETRY_MODEL, cluster="c", batches=hand.telemetry().batches(), publish=False
    )
    with wh.writer() as con:
        refresh_gpu_hourly(con)
        counts = refresh_and_compare(con, registry, hand.NOW, hand.CONFIG)
        assert state(con)[0] == "incremental"
        assert counts["recomputed"] >= 2  # R1 and R3 gained telemetry (R2 moves anyway)
        r1 = con.execute(
            "SELECT utilisation_source FROM marts.training_run_compute WHERE run_id = 'R1'"
        ).fetchall()
        assert r1 == [("telemetry_tensor_active",)]
        end = hand.NOW + timedelta(hours=1)
        con.execute(
            "UPDATE core.gpu_allocations SET valid_to = ?, valid_to_source = 'finished' "
            "WHERE pod_name = 'p2'",
            [end],
        )
        con.execute(
            "UPDATE core.lineage_runs SET state = 'COMPLETE', ended_at = ? WHERE run_id = 'R2'",
            [end],
        )
        refresh_and_compare(con, registry, end + timedelta(hours=1), hand.CONFIG)
        after = refresh_and_compare(con, registry, end + timedelta(hours=2), hand.CONFIG)
        assert after["recomputed"] == 0  # nothing runs, nothing holds GPUs, nothing arrived


@pytest.mark.parametrize("seed", [11, 12])
def test_a_day_rebuilt_with_the_same_rows_is_noticed(tmp_path: Path, seed: int) -> None:
    """A day's pod-days replaced by a rebuild (same count, new refreshed_at, new figures)."""
    world, evidence = rules_world(tmp_path)
    registry = registry_rows(world.registry)
    day = T0 + timedelta(days=1)
    with world.wh.writer() as con:
        evidence.apply(con)
        refresh_and_compare(con, registry, NOW)
        joules = random.Random(seed).uniform(1e7, 1e8)
        con.execute(
            "UPDATE marts.gpu_pod_daily SET energy_joules = ?, refreshed_at = ? WHERE day = ?",
            [joules, NOW + timedelta(minutes=5), day.date()],
        )
        counts = refresh_and_compare(con, registry, NOW + timedelta(minutes=10))
        assert counts["recomputed"] >= 2  # lm-1 (or its Job's claimant) and other-1


def test_sums_of_evidence_do_not_depend_on_their_order(tmp_path: Path) -> None:
    """Ten pod-days of 0.1 GPU-hours each: an exact sum gives 1.0 in any order (a float sum
    gives 0.9999999999999999 left to right, and DuckDB's parallel SUM adds in no fixed order)."""
    world = World(tmp_path, model("lm"))
    world.run("lm-1", job="job-1", tokens=1e12, start=T0, end=T0 + timedelta(days=10))
    world.pod("p1", "job-1", 1, T0, T0 + timedelta(days=10))
    for n in range(10):
        world.telemetry("p1", T0 + timedelta(days=n), 0.1, 0.1 * 300.0 * 3600)
    world.refresh()
    (row,) = world.rows(
        "SELECT telemetry_gpu_hours, energy_gpu_hours FROM marts.training_run_gpus "
        "WHERE run_id = 'lm-1'"
    )
    assert row == {"telemetry_gpu_hours": 1.0, "energy_gpu_hours": 1.0}

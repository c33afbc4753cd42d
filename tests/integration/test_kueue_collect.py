"""Kueue collected from the simulated API server over real sockets agrees with the world's
ground truth (simulator.world.truth.queued_workloads / queue_quotas); the default world holds
no Kueue objects and its other tables are collected as before."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from pypdf import PdfReader

from annex.settings import TOPOLOGY_PRESETS, KubernetesSettings, WarehouseSettings
from collectors.kubernetes import api_client_for, collect_cluster
from reports.definition import ReportRequest
from reports.generate import generate_report
from reports.period import month_period
from simulator.kubernetes import SimulatedCluster
from simulator.world import build_world, truth
from warehouse import Warehouse, load_collection
from warehouse.models.kubernetes import KUBERNETES_MODEL

pytestmark = pytest.mark.integration


def collect_into(world, tmp_path: Path) -> Warehouse:
    wh = Warehouse(WarehouseSettings(path=tmp_path / "annex.duckdb"))
    settings = KubernetesSettings(page_size=3, max_backoff_seconds=0.2)
    with SimulatedCluster(world) as sim:
        sim.write_kubeconfig(tmp_path / "kubeconfig")
        api = api_client_for(
            kubeconfig=tmp_path / "kubeconfig", context=None, in_cluster=False, settings=settings
        )
        batches = collect_cluster(
            api, cluster="sim", settings=settings, topology_levels=TOPOLOGY_PRESETS["generic"]
        )
        result = load_collection(
            wh, KUBERNETES_MODEL, cluster="sim", batches=batches, publish=False
        )
    assert result.status == "succeeded" and result.rejected_count == 0
    return wh


def query(wh: Warehouse, sql: str) -> list[tuple]:
    con = duckdb.connect(str(wh.settings.path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def naive(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=None) if value is not None else None


def test_collected_kueue_agrees_with_the_worlds_ground_truth(tmp_path):
    world = build_world(60, seed=7, features={"kueue"})
    wh = collect_into(world, tmp_path)

    expected = {
        (w.namespace, w.name): (
            w.job,
            w.local_queue,
            w.cluster_queue,
            w.state,
            w.gpus,
            naive(w.created if w.evicted is None else w.evicted),  # a requeued one waits again
            naive(w.admitted) if w.state in ("admitted", "finished") else None,
            naive(w.evicted),
            naive(w.finished),
        )
        for w in truth.queued_workloads(world)
    }
    rows = query(
        wh,
        "SELECT w.namespace, w.workload_name, w.owner_name, w.local_queue, "
        "coalesce(w.cluster_queue, l.cluster_queue), w.state, w.requested_gpus, w.queued_from, "
        "w.admitted_at, w.evicted_at, w.finished_at FROM core.kueue_workloads AS w "
        "JOIN core.kueue_local_queues AS l USING (cluster, namespace, local_queue)",
    )
    assert {(r[0], r[1]): r[2:] for r in rows} == expected

    quotas = {
        (q.cluster_queue, q.cohort, q.flavor, q.nominal, q.borrowing_limit, q.used, q.borrowed)
        for q in truth.queue_quotas(world)
    }
    assert any(q[-1] > 0 for q in quotas)  # the world borrows
    assert set(query(
        wh,
        "SELECT cluster_queue, cohort, flavor, nominal_gpus, borrowing_limit_gpus, used_gpus, "
        "borrowed_gpus FROM marts.queue_quota",
    )) == quotas  # fmt: skip

    # Every admission's wait, the 3 h one included, lands in the day it ended.
    admitted = sorted(
        (w.admitted - w.created).total_seconds()
        for w in truth.queued_workloads(world)
        if w.state in ("admitted", "finished") and w.admitted is not None
    )
    assert 3 * 3600 in admitted
    (total,) = query(wh, "SELECT sum(admitted_workloads) FROM marts.queue_wait")[0]
    assert total == len(admitted)
    (longest,) = query(wh, "SELECT max(wait_p95_seconds) FROM marts.queue_wait")[0]
    assert longest == 3 * 3600


def test_the_default_world_collects_the_same_and_no_kueue_objects(tmp_path):
    # The simulator serves Kueue's CRDs in every world (empty without the feature): the lists
    # run and find nothing. (A server without the group: tests/warehouse/marts/test_queues.py.)
    wh = collect_into(build_world(60, seed=7), tmp_path)
    counts = dict(query(wh, "SELECT resource, items FROM audit.kubernetes_lists"))
    assert {r: n for r, n in counts.items() if r.startswith("kueue_")} == {
        "kueue_workloads": 0, "kueue_cluster_queues": 0, "kueue_local_queues": 0,
        "kueue_resource_flavors": 0,
    }  # fmt: skip
    for table in ("workloads", "cluster_queues", "local_queues", "resource_flavors"):
        assert query(wh, f"SELECT count(*) FROM core.kueue_{table}") == [(0,)]


def test_the_fleet_report_shows_waiting_and_borrowing(tmp_path):
    wh = collect_into(build_world(60, seed=7, features={"kueue"}), tmp_path)
    wh.publish()
    request = ReportRequest(period=month_period("2026-11"))
    report = generate_report(wh, "fleet", request, tmp_path, generated_at=datetime(2026, 11, 2, 9))
    text = " ".join(" ".join(page.extract_text().split()) for page in PdfReader(report.path).pages)
    assert "9. Queues and waiting (Kueue)" in text
    # team-llm: nominal 16, borrow limit 8, 24 used, 8 borrowed, 1 pending
    assert "sim team-llm gpu-cohort h100-kueue nvidia.com/gpu 16 8 24 8 1" in text
    # team-llm's workloads were admitted after 3 h at worst (p95 of the worst day)
    assert {r["namespace"]: r["wait_p95_hours_max"] for r in report.evidence.records("queues")}[
        "team-llm"
    ] == 3.0

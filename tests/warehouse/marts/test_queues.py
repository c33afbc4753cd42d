"""Kueue in the warehouse, hand-worked: a workload queued 3 h then admitted waits 3 h, borrowing
above nominal quota shows as borrowed, p50/p95 of a small set, a requeued (preempted) workload
waits again from its eviction; a cluster without Kueue collects exactly as before.

The objects are written out here as the API server sends them (kueue.x-k8s.io/v1beta1); the
expected figures are worked by hand in the comments, not computed by annex's code.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from annex.settings import TOPOLOGY_PRESETS, KubernetesSettings, WarehouseSettings
from collectors.kubernetes import collect_cluster
from collectors.kubernetes.kueue import DISCOVERY_PATH
from collectors.kubernetes.listing import Lister
from tests.helpers import kubernetes_api as t
from warehouse import Warehouse, load_collection
from warehouse.models.kubernetes import KUBERNETES_MODEL

KUEUE = "/apis/kueue.x-k8s.io/v1beta1"
GPU = "nvidia.com/gpu"
HOUR = 3600
AS_OF = "2026-11-02 12:00:00"


def condition(kind: str, at: str, reason: str, status: str = "True") -> dict[str, Any]:
    return {"type": kind, "status": status, "lastTransitionTime": at, "reason": reason}


def workload(
    name: str,
    created: str,
    *,
    namespace: str = "team-a",
    queue: str = "a-queue",
    pods: int = 1,
    gpus_per_pod: int = 8,
    admitted: str | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": list(conditions or [])}
    if admitted:
        status["conditions"] += [
            condition("QuotaReserved", admitted, "QuotaReserved"),
            condition("Admitted", admitted, "Admitted"),
        ]
        status["admission"] = {
            "clusterQueue": "cq-a",
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"cpu": "h100", GPU: "h100"},
                    "resourceUsage": {"cpu": str(96 * pods), GPU: str(gpus_per_pod * pods)},
                    "count": pods,
                }
            ],
        }
    container = {"name": "trainer", "resources": {"limits": {GPU: str(gpus_per_pod)}}}
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "creationTimestamp": created,
            "ownerReferences": [{"kind": "Job", "name": f"job-{name}", "controller": True}],
        },
        "spec": {
            "queueName": queue,
            "podSets": [
                {"name": "main", "count": pods, "template": {"spec": {"containers": [container]}}}
            ],
        },
        "status": status,
    }  # fmt: skip


def cluster_queue(name: str, nominal: int, used: int, *, borrowed: int | None, limit: int | None):
    gpu: dict[str, Any] = {"name": GPU, "nominalQuota": str(nominal)}
    if limit is not None:
        gpu["borrowingLimit"] = str(limit)
    usage: dict[str, Any] = {"name": GPU, "total": str(used)}
    if borrowed is not None:
        usage["borrowed"] = str(borrowed)
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": {
            "cohort": "gpus",
            "resourceGroups": [{"coveredResources": ["cpu", GPU], "flavors": [
                {"name": "h100", "resources": [{"name": "cpu", "nominalQuota": "384"}, gpu]}]}],
        },
        "status": {"pendingWorkloads": 1, "admittedWorkloads": 2, "flavorsUsage": [
            {"name": "h100", "resources": [
                {"name": "cpu", "total": "192", "borrowed": "0"}, usage]}]},
    }  # fmt: skip


def local_queue(name: str, namespace: str, cq: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
        "spec": {"clusterQueue": cq},
    }


def kueue_world(workloads: list[dict], queues: list[dict] | None = None) -> dict[str, list]:
    return {
        "/api/v1/nodes": [], "/api/v1/pods": [], "/apis/batch/v1/jobs": [],
        "/apis/scheduling.k8s.io/v1/priorityclasses": [], "/api/v1/events": [],
        DISCOVERY_PATH: [],  # served: the group's discovery answers 200
        f"{KUEUE}/workloads": workloads,
        f"{KUEUE}/clusterqueues": queues or [],
        f"{KUEUE}/localqueues": [local_queue("a-queue", "team-a", "cq-a")],
        f"{KUEUE}/resourceflavors": [{"metadata": {"name": "h100", "uid": "uid-h100"}}],
    }  # fmt: skip


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    return Warehouse(WarehouseSettings(path=tmp_path / "annex.duckdb"))


def load(wh: Warehouse, fake: t.FakeCluster) -> None:
    settings = KubernetesSettings(page_size=2)
    batches = collect_cluster(
        t.FakeApiClient(fake),
        cluster="c1",
        settings=settings,
        topology_levels=TOPOLOGY_PRESETS["generic"],
        in_process=True,
        lister=Lister(settings, sleep=lambda s: None),
    )
    result = load_collection(wh, KUBERNETES_MODEL, cluster="c1", batches=batches, publish=False)
    assert result.status == "succeeded" and result.rejected_count == 0


def query(wh: Warehouse, sql: str) -> list[tuple]:
    con = duckdb.connect(str(wh.settings.path), read_only=True)
    try:
        con.execute(f"SET VARIABLE as_of = TIMESTAMP '{AS_OF}'")
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_workload_queued_3_hours_then_admitted_waited_3_hours(warehouse):
    load(warehouse, t.FakeCluster(kueue_world([
        workload("w", "2026-11-02T04:00:00Z", admitted="2026-11-02T07:00:00Z"),
    ])))  # fmt: skip
    (row,) = query(
        warehouse,
        "SELECT state, cluster_queue, owner_name, requested_gpus, queued_from, queued_to, "
        "admitted_from, admitted_to, admitted_gpus_by_flavor FROM core.kueue_workloads",
    )
    assert row[:4] == ("admitted", "cq-a", "job-w", 8)
    assert [str(v) for v in row[4:7]] == [
        "2026-11-02 04:00:00",  # queued from creation
        "2026-11-02 07:00:00",  # to admission
        "2026-11-02 07:00:00",  # admitted from then on
    ]
    assert row[7] is None
    assert row[8] == [{"flavor": "h100", "resource_name": GPU, "gpus": 8}]
    (wait,) = query(
        warehouse,
        "SELECT namespace, cluster_queue, CAST(day AS VARCHAR), waiting_workloads, "
        "still_waiting_workloads, queued_gpus, admitted_workloads, wait_p50_seconds, "
        "wait_p95_seconds FROM marts.queue_wait",
    )
    assert wait == ("team-a", "cq-a", "2026-11-02", 1, 0, 0, 1, 3 * HOUR, 3 * HOUR)


def test_p50_and_p95_of_a_small_set_and_the_demand_still_queued(warehouse):
    # Admitted on 2026-11-02 after waits of 1, 2, 3, 4 and 20 hours. Nearest rank: p50 is the
    # ceil(0.5 x 5) = 3rd wait (3 h), p95 the ceil(0.95 x 5) = 5th (20 h).
    waits = {"w1": 1, "w2": 2, "w3": 3, "w4": 4, "w20": 20}
    created = {"w1": "23", "w2": "22", "w3": "21", "w4": "20", "w20": "04"}  # hour, 11-01
    items = [
        workload(name, f"2026-11-01T{created[name]}:00:00Z", admitted="2026-11-02T00:00:00Z")
        for name in waits
    ]
    # Still waiting at AS_OF (12:00): 2 pods x 8 GPUs since 10:00, and a workload preempted at
    # 11:00 (requeued: it waits again from its eviction, 1 h so far, 4 GPUs).
    items.append(workload("q", "2026-11-02T10:00:00Z", pods=2))
    evicted = "2026-11-02T11:00:00Z"
    items.append(workload("p", "2026-11-02T01:00:00Z", gpus_per_pod=4, conditions=[
        condition("QuotaReserved", evicted, "Pending", "False"),
        condition("Evicted", evicted, "Preempted"),
        condition("Preempted", evicted, "InClusterQueue"),
    ]))  # fmt: skip
    load(warehouse, t.FakeCluster(kueue_world(items)))

    states = dict(query(warehouse, "SELECT workload_name, state FROM core.kueue_workloads"))
    assert states == {**{n: "admitted" for n in waits}, "q": "queued", "p": "preempted"}
    rows = query(
        warehouse,
        "SELECT CAST(day AS VARCHAR), waiting_workloads, still_waiting_workloads, queued_gpus, "
        "admitted_workloads, wait_p50_seconds, wait_p95_seconds, longest_wait_seconds "
        "FROM marts.queue_wait ORDER BY day",
    )
    assert rows == [
        # 11-01: the five wait through the day's end; nothing admitted yet; the longest (w20)
        # has waited 20 h by midnight.
        ("2026-11-01", 5, 5, 40, 0, None, None, 20 * HOUR),
        # 11-02: the five were admitted at 00:00 (waits are half-open: they waited on 11-01
        # only); q and p wait on until now (12:00): 16 + 4 GPUs, q the longest (2 h).
        ("2026-11-02", 2, 2, 20, 5, 3 * HOUR, 20 * HOUR, 2 * HOUR),
    ]


def test_borrowing_above_nominal_quota_shows_as_borrowed(warehouse):
    queues = [
        # nominal 16, 24 in use: 8 borrowed from the cohort (within its limit of 8)
        cluster_queue("cq-a", 16, 24, borrowed=8, limit=8),
        # the lender: 8 of its 16 in use
        cluster_queue("cq-b", 16, 8, borrowed=0, limit=None),
        # a status without `borrowed` (older Kueue): usage above nominal is what it borrows
        cluster_queue("cq-c", 8, 12, borrowed=None, limit=None),
    ]
    load(warehouse, t.FakeCluster(kueue_world([], queues)))
    rows = query(
        warehouse,
        "SELECT cluster_queue, cohort, flavor, resource_name, nominal_gpus, borrowing_limit_gpus, "
        "used_gpus, borrowed_gpus, unused_nominal_gpus FROM marts.queue_quota ORDER BY 1",
    )
    assert rows == [  # cpu is not a GPU: no row
        ("cq-a", "gpus", "h100", GPU, 16, 8, 24, 8, 0),
        ("cq-b", "gpus", "h100", GPU, 16, None, 8, 0, 8),
        ("cq-c", "gpus", "h100", GPU, 8, None, 12, 4, 0),
    ]


def test_a_cluster_without_kueue_is_collected_as_before(warehouse):
    world = kueue_world([workload("w", "2026-11-02T04:00:00Z")])
    del world[DISCOVERY_PATH]  # the API server does not serve kueue.x-k8s.io: 404
    fake = t.FakeCluster(world)
    load(warehouse, fake)
    kueue_lists = [path for path, _ in fake.requests if "kueue" in path and path != DISCOVERY_PATH]
    assert kueue_lists == []
    assert query(warehouse, "SELECT resource FROM audit.kubernetes_lists ORDER BY 1") == [
        ("events",), ("jobs",), ("nodes",), ("pods",), ("priority_classes",)
    ]  # fmt: skip
    assert query(warehouse, "SELECT count(*) FROM core.kueue_workloads") == [(0,)]
    assert query(warehouse, "SELECT count(*) FROM marts.queue_wait") == [(0,)]


def test_a_workload_still_queued_waits_only_up_to_the_latest_inventory(warehouse):
    """Evidence, not extrapolation: annex saw the workload queued at its last inventory, and
    knows nothing after. With the report's clock a month later, the wait still ends at that
    inventory: no day after it is counted, and the longest wait is the one seen."""
    load(warehouse, t.FakeCluster(kueue_world([workload("q", "2026-11-01T00:00:00Z")])))
    con = duckdb.connect(str(warehouse.settings.path), read_only=True)
    try:
        (seen,) = con.execute(
            "SELECT max(started_at) FROM audit.collections WHERE source = 'kubernetes'"
        ).fetchone()
        con.execute("SET VARIABLE as_of = TIMESTAMP '2099-01-01 00:00:00'")
        last_day, longest = con.execute(
            "SELECT max(day), arg_max(longest_wait_seconds, day) FROM marts.queue_wait"
        ).fetchone()
    finally:
        con.close()
    assert last_day == seen.date()
    assert longest == pytest.approx((seen - datetime(2026, 11, 1)).total_seconds(), abs=1e-3)

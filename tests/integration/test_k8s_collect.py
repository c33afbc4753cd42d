"""The Kubernetes collector against the simulated API server, over real sockets.

Expected figures are computed here from the world's objects with deliberately simple code
(not annex's), so the collector and the warehouse cannot agree with the test by construction.
"""

from __future__ import annotations

import time
from pathlib import Path

import duckdb
import pytest
import yaml

from annex.errors import CollectionError
from annex.settings import TOPOLOGY_PRESETS, KubernetesSettings, WarehouseSettings
from collectors.kubernetes import RESOURCES, api_client_for, collect_cluster
from simulator.kubernetes import Fault, SimulatedCluster
from simulator.world import build_world
from warehouse import Warehouse, load_collection
from warehouse.models.kubernetes import KUBERNETES_MODEL

pytestmark = pytest.mark.integration

PAGE_SIZE = 40
RBAC = Path(__file__).resolve().parents[2] / "deploy" / "rbac.yaml"
BALLOON_CLASSES = ("placeholder", "overprovisioning", "balloon")


@pytest.fixture
def sim(tmp_path: Path):
    with SimulatedCluster(build_world(60, seed=7)) as cluster:
        cluster.write_kubeconfig(tmp_path / "kubeconfig")
        yield cluster


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    return Warehouse(WarehouseSettings(path=tmp_path / "annex.duckdb"))


def settings(**overrides) -> KubernetesSettings:
    overrides.setdefault("page_size", PAGE_SIZE)
    overrides.setdefault("max_backoff_seconds", 0.2)
    return KubernetesSettings(**overrides)


def collect(sim: SimulatedCluster, tmp_path: Path, **overrides):
    kubernetes = settings(**overrides)
    api = api_client_for(
        kubeconfig=tmp_path / "kubeconfig", context=None, in_cluster=False, settings=kubernetes
    )
    return collect_cluster(
        api, cluster="sim", settings=kubernetes, topology_levels=TOPOLOGY_PRESETS["generic"]
    )


def lists_of(batches) -> dict[str, dict]:
    table, batch = batches[-1]
    assert table == "lists"
    return {row["resource"]: row for row in batch.to_pylist()}


def query(wh: Warehouse, sql: str) -> list[tuple]:
    con = duckdb.connect(str(wh.settings.path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


# --- an independent, simple statement of the rules ----------------------------------------


def _gpu(resources: dict | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for source in ("limits", "requests"):  # requests win over limits
        for name, value in ((resources or {}).get(source) or {}).items():
            if name.startswith("nvidia.com/"):
                out[name] = int(value)
    return out


def effective_gpus(spec: dict) -> dict[str, int]:
    total: dict[str, int] = {}
    for c in spec.get("containers", []):
        for k, v in _gpu(c.get("resources")).items():
            total[k] = total.get(k, 0) + v
    sidecars: dict[str, int] = {}
    peak: dict[str, int] = {}
    for c in spec.get("initContainers", []):
        own = _gpu(c.get("resources"))
        if c.get("restartPolicy") == "Always":
            for k, v in own.items():
                total[k] = total.get(k, 0) + v
                sidecars[k] = sidecars.get(k, 0) + v
            use = dict(sidecars)
        else:
            use = {k: own.get(k, 0) + sidecars.get(k, 0) for k in {*own, *sidecars}}
        for k, v in use.items():
            peak[k] = max(peak.get(k, 0), v)
    for k, v in peak.items():
        total[k] = max(total.get(k, 0), v)
    for k, v in _gpu({"requests": spec.get("overhead") or {}}).items():
        total[k] = total.get(k, 0) + v
    return {k: v for k, v in total.items() if v}


def expected_fleet(world) -> dict[str, int]:
    ready = {
        n["metadata"]["name"]: any(
            c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"]
        )
        and not n["spec"].get("unschedulable", False)
        for n in world.nodes
    }
    # With the MIG "single" strategy nvidia.com/gpu counts slices: not whole GPUs.
    mig_single = {
        n["metadata"]["name"]
        for n in world.nodes
        if n["metadata"].get("labels", {}).get("nvidia.com/mig.strategy") == "single"
    }
    workload = balloon = queued = 0
    held: dict[str, int] = {}
    for p in world.pods:
        gpus = effective_gpus(p["spec"]).get("nvidia.com/gpu", 0)
        node, phase = p["spec"].get("nodeName"), p["status"].get("phase")
        if not node and phase == "Pending":
            queued += gpus
        if not node or phase in ("Succeeded", "Failed") or node in mig_single:
            continue
        is_balloon = (
            p["spec"].get("priority", 0) < 0
            or p["spec"].get("priorityClassName") in BALLOON_CLASSES
        )
        if is_balloon:
            balloon += gpus
        else:
            workload += gpus
        held[node] = held.get(node, 0) + gpus
    capacity = allocatable = free = 0
    for n in world.nodes:
        if n["metadata"]["name"] in mig_single:
            continue
        cap = int(n["status"]["capacity"].get("nvidia.com/gpu", 0))
        alloc = int(n["status"]["allocatable"].get("nvidia.com/gpu", 0))
        capacity += cap
        allocatable += alloc
        if ready[n["metadata"]["name"]]:
            free += max(alloc - held.get(n["metadata"]["name"], 0), 0)
    return {
        "nodes": len(world.nodes),
        "capacity": capacity,
        "allocatable": allocatable,
        "workload": workload,
        "balloon": balloon,
        "free": free,
        "queued": queued,
    }


# --- tests --------------------------------------------------------------------------------


def test_full_collection_matches_the_world(sim, tmp_path, warehouse):
    result = load_collection(
        warehouse, KUBERNETES_MODEL, cluster="sim", batches=collect(sim, tmp_path), publish=False
    )
    assert result.status == "succeeded"
    world = sim.world
    assert result.row_counts["nodes"] == len(world.nodes)
    assert result.row_counts["pods"] == len(world.pods)
    assert result.row_counts["jobs"] == len(world.jobs)
    assert result.row_counts["priority_classes"] == len(world.priority_classes)
    expected = expected_fleet(world)
    (row,) = query(
        warehouse,
        "SELECT nodes, capacity_gpus, allocatable_gpus, allocated_workload_gpus, "
        "allocated_balloon_gpus, free_gpus, queued_gpus, snapshot_consistent, "
        "free_gpus + allocated_workload_gpus + allocated_balloon_gpus + unavailable_gpus "
        "FROM marts.fleet_summary",
    )
    assert row == (
        expected["nodes"],
        expected["capacity"],
        expected["allocatable"],
        expected["workload"],
        expected["balloon"],
        expected["free"],
        expected["queued"],
        True,
        expected["capacity"],
    )
    assert expected["workload"] > 0 and expected["capacity"] > 0  # a meaningful world


def test_requests_use_the_page_size_and_stay_within_rbac(sim, tmp_path):
    batches = list(collect(sim, tmp_path))
    documents = list(yaml.safe_load_all(RBAC.read_text()))
    rules = next(d for d in documents if d["kind"] == "ClusterRole")["rules"]
    # discovery documents (optional groups such as Kueue) are non-resource URLs anyone may read
    discovery = {r.discovery_path for r in RESOURCES if r.discovery_path}
    requests = [r for r in sim.requests if r.path not in discovery]
    assert requests
    for record in requests:
        parts = record.path.strip("/").split("/")
        group, resource = ("", parts[2]) if parts[0] == "api" else (parts[1], parts[3])
        assert resource != "secrets"
        assert record.method == "GET" and record.query.get("limit") == [str(PAGE_SIZE)]
        assert any(
            group in r["apiGroups"] and resource in r["resources"] and "list" in r["verbs"]
            for r in rules
        ), record.path
        assert record.user_agent.startswith("annex/")
    pod_pages = sum(1 for r in requests if r.path == "/api/v1/pods")
    assert pod_pages == -(-len(sim.world.pods) // PAGE_SIZE)
    assert lists_of(batches)["pods"]["pages"] == pod_pages


def test_expired_token_restarts_the_list_and_stays_consistent(sim, tmp_path):
    sim.faults.add(Fault("expire", resource="pods", skip=1))
    batches = list(collect(sim, tmp_path, max_list_restarts=2))
    pods = lists_of(batches)["pods"]
    assert (pods["restarts"], pods["consistent"], pods["items"]) == (1, True, len(sim.world.pods))


def test_exhausted_restarts_mark_the_snapshot_inconsistent(sim, tmp_path, warehouse):
    sim.faults.add(Fault("expire", resource="pods", skip=1))
    batches = list(collect(sim, tmp_path, max_list_restarts=0))
    pods = lists_of(batches)["pods"]
    assert (pods["restarts"], pods["consistent"]) == (0, False)
    load_collection(warehouse, KUBERNETES_MODEL, cluster="sim", batches=batches, publish=False)
    assert query(warehouse, "SELECT snapshot_consistent FROM marts.fleet_summary") == [(False,)]


def test_429_honours_retry_after(sim, tmp_path):
    sim.faults.add(Fault("status", status=429, resource="nodes"))
    batches = list(collect(sim, tmp_path))
    assert lists_of(batches)["nodes"]["retries"] == 1
    nodes = [r for r in sim.requests if r.path == "/api/v1/nodes"]
    assert nodes[0].status == 429
    assert nodes[1].started - nodes[0].started >= 1.0  # Retry-After: 1


def test_5xx_is_retried(sim, tmp_path):
    sim.faults.add(Fault("status", status=503, resource="pods", times=2))
    sim.faults.add(Fault("status", status=500, resource="jobs", times=1))
    batches = list(collect(sim, tmp_path))
    lists = lists_of(batches)
    assert (lists["pods"]["retries"], lists["jobs"]["retries"]) == (2, 1)
    assert lists["pods"]["items"] == len(sim.world.pods)


def test_truncated_pages_fail_the_collection_without_partial_rows(sim, tmp_path, warehouse):
    sim.faults.add(Fault("truncate", resource="pods", skip=1, times=None))
    with pytest.raises(CollectionError, match="pods"):
        load_collection(
            warehouse,
            KUBERNETES_MODEL,
            cluster="sim",
            batches=collect(sim, tmp_path, max_retries=2),
            publish=False,
        )
    assert query(warehouse, "SELECT status FROM audit.collections") == [("failed",)]
    for table in ("core.nodes", "core.pods", "core.gpu_allocations", "raw.kubernetes_nodes"):
        assert query(warehouse, f"SELECT count(*) FROM {table}") == [(0,)]


def test_reload_changes_nothing_and_a_deleted_pod_closes_its_interval(sim, tmp_path, warehouse):
    def load():
        return load_collection(
            warehouse,
            KUBERNETES_MODEL,
            cluster="sim",
            batches=collect(sim, tmp_path),
            publish=False,
        )

    def state():
        return {
            t: sorted(map(repr, query(warehouse, f"FROM {t}")))
            for t in ("core.nodes", "core.pods", "core.gpu_allocations", "raw.kubernetes_pods")
        }

    load()
    before = state()
    load()
    assert state() == before

    victim = next(
        p
        for p in sim.world.pods
        if p["spec"].get("nodeName")
        and p["status"]["phase"] == "Running"
        and effective_gpus(p["spec"])
    )
    sim.delete("pods", victim["metadata"]["name"], victim["metadata"]["namespace"])
    time.sleep(0.01)
    third = load()
    closed = query(
        warehouse,
        "SELECT valid_to_source, valid_to_inferred, closed_collection_id FROM "
        f"core.gpu_allocations WHERE pod_uid = '{victim['metadata']['uid']}'",
    )
    assert closed and all(row == ("vanished", True, third.collection_id) for row in closed)

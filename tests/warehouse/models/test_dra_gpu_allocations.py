"""GPUs held through DRA claims counted in core.gpu_allocations (mechanism dra) and in the
capacity buckets of marts.node_gpu_capacity, beside device-plugin requests (issue 38 item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from annex.settings import WarehouseSettings
from collectors.kubernetes import RESOURCES
from tests.helpers import kubernetes_api as t
from tests.warehouse.models.test_kubernetes_dra import CLAIMS, SLICES, load, query, world
from warehouse import Warehouse
from warehouse.models.utilisation import refresh_gpu_hourly

NODES = "/api/v1/nodes"
PODS = "/api/v1/pods"


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    return Warehouse(WarehouseSettings(path=tmp_path / "annex.duckdb"))


def dra_world() -> dict[str, list[dict]]:
    """test_kubernetes_dra's world with its nodes (DRA-only: no GPU extended resource) and the
    pods its claims are reserved for, plus a device-plugin node with one 8-GPU pod."""
    objects = world()
    objects[NODES] = [t.node(n, gpus=0) for n in ("h1", "a1", "g1", "g2")] + [t.node("dp", gpus=8)]
    pods = {"p-only": "h1", "p-a": "h1", "p-b": "h1", "p-mig0": "a1", "p-mig1": "a1",
            "p-g1": "g1", "p-g2": "g2"}  # fmt: skip
    objects[PODS] = [t.pod(uid, uid=uid, node_name=node, gpus=0) for uid, node in pods.items()]
    objects[PODS].append(t.pod("dp-pod", uid="p-dp", node_name="dp", gpus=8))
    return objects


HOLDINGS = [
    pytest.param(
        "p-only", [("nvidia.com/gpu", 2.0, "dra", "only")], id="GPUs only through a claim"
    ),
    pytest.param("p-a", [("nvidia.com/gpu", 0.5, "dra", "shared")], id="claim shared by two pods"),
    pytest.param("p-mig0", [("nvidia.com/mig-1g.10gb", 1.0, "dra", "mig")], id="MIG device by DRA"),
    pytest.param("p-g1", [("nvidia.com/gpu", 1.0, "dra", "cd1")], id="ComputeDomain: no channel"),
    pytest.param("p-dp", [("nvidia.com/gpu", 8.0, "device_plugin", None)], id="device plugin"),
]


@pytest.mark.parametrize(("pod_uid", "expected"), HOLDINGS)
def test_pods_hold_their_claims_gpus_beside_device_plugin_requests(
    warehouse, pod_uid, expected
) -> None:
    load(warehouse, dra_world())
    rows = query(
        warehouse,
        "SELECT resource_name, gpus, mechanism, claim_uid FROM core.gpu_allocations "
        f"WHERE pod_uid = '{pod_uid}' AND valid_to IS NULL ORDER BY 1",
    )
    assert rows == expected


CAPACITY = [
    pytest.param("h1", [("nvidia.com/gpu", 4, 3, 1)], id="claims and a shared claim"),
    pytest.param("a1", [("nvidia.com/mig-1g.10gb", 2, 2, 0)], id="MIG devices by DRA"),
    pytest.param("g1", [("nvidia.com/gpu", 1, 1, 0)], id="ComputeDomain node g1"),
    pytest.param("g2", [("nvidia.com/gpu", 1, 1, 0)], id="ComputeDomain node g2"),
    pytest.param("dp", [("nvidia.com/gpu", 8, 8, 0)], id="device-plugin node"),
]


@pytest.mark.parametrize(("node", "expected"), CAPACITY)
def test_dra_only_nodes_capacity_from_slices_and_buckets_sum_to_it(
    warehouse, node, expected
) -> None:
    load(warehouse, dra_world())
    rows = query(
        warehouse,
        "SELECT resource_name, capacity_gpus, allocated_workload_gpus, free_gpus, "
        "allocated_workload_gpus + allocated_balloon_gpus + free_gpus + unavailable_gpus "
        f"FROM marts.node_gpu_capacity WHERE node_name = '{node}' ORDER BY 1",
    )
    assert [r[:4] for r in rows] == expected
    assert all(r[4] == r[1] for r in rows)


def test_dra_holdings_close_with_their_pod_and_load_once(warehouse) -> None:
    objects = dra_world()
    load(warehouse, objects)
    load(warehouse, objects)  # the same snapshot again opens nothing
    assert query(
        warehouse, "SELECT count(*), sum(gpus) FROM core.gpu_allocations WHERE mechanism = 'dra'"
    ) == [(7, 7.0)]
    objects[PODS] = [p for p in objects[PODS] if p["metadata"]["uid"] != "p-only"]
    objects[CLAIMS] = [c for c in objects[CLAIMS] if c["metadata"]["uid"] != "only"]
    load(warehouse, objects)
    assert query(
        warehouse,
        "SELECT valid_to_source FROM core.gpu_allocations WHERE pod_uid = 'p-only'",
    ) == [("vanished",)]


def test_a_world_without_dra_has_only_device_plugin_rows(warehouse) -> None:
    objects = {r.api_path: [] for r in RESOURCES}
    objects[NODES] = [t.node("dp", gpus=8)]
    objects[PODS] = [t.pod("dp-pod", uid="p-dp", node_name="dp", gpus=8)]
    load(warehouse, objects)
    assert query(warehouse, "SELECT mechanism, gpus FROM core.gpu_allocations") == [
        ("device_plugin", 8.0)
    ]


def shared_node(name: str, strategy: str, replicas: int) -> dict:
    return t.node(
        name,
        gpus=8 * replicas,
        labels={
            "nvidia.com/gpu.replicas": str(replicas),
            "nvidia.com/gpu.sharing-strategy": strategy,
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED",
            "nvidia.com/gpu.count": "8",
        },
    )


SHARED = [
    # 8 physical GPUs, 32 shares: 5 pods with 1 replica, 1 with 2 -> 7 of 32 = 1.75 GPUs
    pytest.param(
        shared_node("ts", "time-slicing", 4), [1, 1, 1, 1, 1, 2],
        ("time-slicing", 4, 32, 8, 8, 1.75, 6.25), id="time-sliced node, 8 physical, 32 shares",
    ),
    pytest.param(
        shared_node("mps", "mps", 2), [1, 1, 1],
        ("mps", 2, 16, 8, 8, 1.5, 6.5), id="MPS node",
    ),
    pytest.param(
        t.node("plain", gpus=8), [8],
        ("none", 1, 8, 8, 8, 8.0, 0.0), id="unshared node",
    ),
]  # fmt: skip


def hami_pod(name: str, cores: int) -> dict:
    quantities = {"nvidia.com/gpu": "1", "nvidia.com/gpucores": str(cores),
                  "nvidia.com/gpumem": "20000"}  # fmt: skip
    container = t.container(requests={"cpu": "4"} | quantities, limits=quantities)
    return t.pod(name, uid=name, node_name="hami", containers=[container])


def test_a_hami_request_holds_its_gpucores_share_of_a_gpu(warehouse) -> None:
    objects = {r.api_path: [] for r in RESOURCES}
    # HAMi's device plugin: deviceSplitCount 10 -> 80 nvidia.com/gpu on 8 GPUs, no replicas label
    objects[NODES] = [
        t.node(
            "hami",
            gpus=80,
            labels={"nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": "1", "gpu": "on"},
        )
    ]
    objects[PODS] = [hami_pod("hami-25", 25), hami_pod("hami-50", 50)]
    load(warehouse, objects)
    rows = query(
        warehouse,
        "SELECT sharing_strategy, shares, advertised_gpus, capacity_gpus, "
        "allocated_workload_gpus, free_gpus, "
        "allocated_workload_gpus + allocated_balloon_gpus + free_gpus + unavailable_gpus "
        "FROM marts.node_gpu_capacity",
    )
    assert rows == [("hami", 10, 80, 8, 0.75, 7.25, 8.0)]


@pytest.mark.parametrize(("node", "replicas", "expected"), SHARED)
def test_shared_gpus_count_in_physical_gpus_and_buckets_sum_to_them(
    warehouse, node, replicas, expected
) -> None:
    name = node["metadata"]["name"]
    objects = {r.api_path: [] for r in RESOURCES}
    objects[NODES] = [node]
    objects[PODS] = [
        t.pod(f"{name}-{i}", uid=f"{name}-{i}", node_name=name, gpus=n)
        for i, n in enumerate(replicas)
    ]
    load(warehouse, objects)
    rows = query(
        warehouse,
        "SELECT sharing_strategy, shares, advertised_gpus, physical_gpus, capacity_gpus, "
        "allocated_workload_gpus, free_gpus, "
        "allocated_workload_gpus + allocated_balloon_gpus + free_gpus + unavailable_gpus "
        "FROM marts.node_gpu_capacity",
    )
    assert [r[:7] for r in rows] == [expected]
    assert rows[0][7] == rows[0][4]  # never more than one GPU per physical GPU


def test_namespace_figures_count_dra_and_shared_gpus_as_physical(warehouse) -> None:
    objects = dra_world()
    objects[NODES].append(shared_node("ts", "time-slicing", 4))
    objects[PODS] += [
        t.pod(f"ts-{i}", namespace="notebooks", uid=f"ts-{i}", node_name="ts", gpus=1)
        for i in range(6)
    ]
    load(warehouse, objects)
    rows = query(
        warehouse,
        "SELECT namespace, gpu_pods_counted, allocated_workload_gpus, mig_slices_allocated "
        "FROM marts.fleet_gpu_by_namespace ORDER BY 1",
    )
    # team-a: 2 (claim only) + 2 x 0.5 (shared claim) + 2 (ComputeDomain) + 8 (device plugin);
    # notebooks: 6 replicas of 4 per GPU = 1.5 GPUs, rounded
    assert rows == [("notebooks", 6, 2, 0), ("team-a", 8, 13, 2)]


def test_gpu_hours_count_dra_only_nodes_and_shared_gpus_in_physical_gpus(warehouse) -> None:
    objects = dra_world()
    objects[NODES].append(shared_node("ts", "time-slicing", 4))
    objects[PODS] += [t.pod(f"ts-{i}", uid=f"ts-{i}", node_name="ts", gpus=1) for i in range(6)]
    objects[NODES].append(
        t.node(
            "hami", gpus=80, labels={"nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": "1"}
        )
    )
    objects[PODS] += [hami_pod("hami-25", 25), hami_pod("hami-50", 50)]
    load(warehouse, objects)
    load(warehouse, objects)  # a second snapshot: the nodes' first observed interval
    with warehouse.writer() as con:
        refresh_gpu_hourly(con)
    rows = query(
        warehouse,
        "SELECT node_name, round(sum(capacity_gpu_hours) / sum(observed_hours), 6), "
        "round(sum(allocated_workload_gpu_hours) / sum(observed_hours), 6) "
        "FROM marts.node_gpu_hours WHERE observed_hours > 0 GROUP BY 1 ORDER BY 1",
    )
    # a1 publishes MIG devices only: no whole GPUs to count in GPU-hours
    assert rows == [
        ("dp", 8.0, 8.0),
        ("g1", 1.0, 1.0),
        ("g2", 1.0, 1.0),
        ("h1", 4.0, 3.0),
        ("hami", 8.0, 0.75),  # as capacity (marts.gpu_held): gpucores/100, 25 % + 50 %
        ("ts", 8.0, 1.5),
    ]


def test_namespace_figures_count_a_hami_request_by_its_gpucores(warehouse) -> None:
    objects = {r.api_path: [] for r in RESOURCES}
    objects[NODES] = [t.node("hami", gpus=80, labels={"nvidia.com/gpu.count": "8"})]
    objects[PODS] = [hami_pod(f"hami-{i}", 50) for i in range(3)]
    load(warehouse, objects)
    assert query(warehouse, "SELECT allocated_workload_gpus FROM marts.fleet_gpu_by_namespace") == [
        (2,)
    ]  # 3 x 50 % = 1.5 GPUs, rounded


def test_dra_only_capacity_follows_the_slice_version_valid_at_each_moment(warehouse) -> None:
    """h1 publishes 4 GPUs, then its driver republishes 2 (gpu-3 first changes its memory: a new
    version of the same GPU, never a fifth one): capacity is 4 until the change, 2 after."""
    objects = dra_world()
    objects[CLAIMS] = [c for c in objects[CLAIMS] if c["metadata"]["uid"] != "shared"]
    load(warehouse, objects)
    objects[SLICES][0]["spec"]["devices"][3]["capacity"]["memory"]["value"] = "40Gi"
    load(warehouse, objects)
    objects[SLICES][0]["spec"]["devices"] = objects[SLICES][0]["spec"]["devices"][:2]
    load(warehouse, objects)
    load(warehouse, objects)
    with warehouse.writer() as con:
        refresh_gpu_hourly(con)
    [(node_from, removed_at)] = query(
        warehouse,
        "SELECT (SELECT min(valid_from) FROM core.nodes WHERE node_name = 'h1'), "
        "(SELECT max(valid_to) FROM core.dra_devices WHERE dra_pool = 'h1')",
    )
    [(observed, capacity)] = query(
        warehouse,
        "SELECT sum(observed_hours), sum(capacity_gpu_hours) FROM marts.node_gpu_hours "
        "WHERE node_name = 'h1'",
    )
    before = (removed_at - node_from).total_seconds() / 3600
    assert 0 < before < observed
    assert capacity == pytest.approx(4 * before + 2 * (observed - before), rel=1e-6)

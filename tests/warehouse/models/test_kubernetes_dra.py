"""DRA in the warehouse: core.dra_devices (a version per device change), core.dra_claims
(current state) and marts.dra_gpu_claims (who holds which physical GPU through a claim)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from annex.settings import TOPOLOGY_PRESETS, KubernetesSettings, WarehouseSettings
from collectors.kubernetes import RESOURCES, collect_cluster
from collectors.kubernetes.collect import DRA_DISCOVERY_PATH
from collectors.kubernetes.listing import Lister
from tests.helpers import kubernetes_api as t
from tests.helpers.dra_objects import GPU, channel, claim, gpu, mig, resource_slice
from warehouse import Warehouse, load_collection
from warehouse.models.kubernetes import KUBERNETES_MODEL

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"
IMEX = "compute-domain.nvidia.com"


def world() -> dict[str, list[dict]]:
    objects: dict[str, list[dict]] = {r.api_path: [] for r in RESOURCES}
    objects[DRA_DISCOVERY_PATH] = []  # the API server serves resource.k8s.io/v1
    objects[SLICES] = [
        resource_slice("s-h", "h1", GPU, [gpu(f"gpu-{i}", f"GPU-h{i}") for i in range(4)]),
        resource_slice("s-a", "a1", GPU, [mig(f"gpu-4-mig-1g10gb-{i}", "GPU-a4", "1g.10gb")
                                          for i in range(2)]),
        resource_slice("s-g1", "g1", GPU, [gpu("gpu-0", "GPU-g1")]),
        resource_slice("s-g2", "g2", GPU, [gpu("gpu-0", "GPU-g2")]),
        resource_slice("s-c1", "g1", IMEX, [channel("channel-0")]),
        resource_slice("s-c2", "g2", IMEX, [channel("channel-0")]),
    ]  # fmt: skip
    objects[CLAIMS] = [
        # a pod holding GPUs only through a claim
        claim("only", [("gpus", GPU, "h1", "gpu-0"), ("gpus", GPU, "h1", "gpu-1")], ["p-only"]),
        # a claim shared by two pods
        claim("shared", [("gpu", GPU, "h1", "gpu-2")], ["p-a", "p-b"]),
        # MIG devices by DRA: both on physical GPU-a4
        claim("mig", [("m", GPU, "a1", "gpu-4-mig-1g10gb-0")], ["p-mig0"]),
        claim("mig1", [("m", GPU, "a1", "gpu-4-mig-1g10gb-1")], ["p-mig1"]),
        # a ComputeDomain spanning two nodes: each pod its node's GPU and IMEX channel
        claim("cd1", [("g", GPU, "g1", "gpu-0"), ("c", IMEX, "g1", "channel-0")], ["p-g1"]),
        claim("cd2", [("g", GPU, "g2", "gpu-0"), ("c", IMEX, "g2", "channel-0")], ["p-g2"]),
        claim("pending", [], []),
    ]
    return objects


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    return Warehouse(WarehouseSettings(path=tmp_path / "annex.duckdb"))


def load(wh: Warehouse, objects: dict[str, list[dict]]):
    kubernetes = KubernetesSettings(page_size=3)
    batches = collect_cluster(
        t.FakeApiClient(t.FakeCluster(objects)),
        cluster="c1",
        settings=kubernetes,
        topology_levels=TOPOLOGY_PRESETS["generic"],
        in_process=True,
        lister=Lister(kubernetes, sleep=lambda s: None),
    )
    return load_collection(wh, KUBERNETES_MODEL, cluster="c1", batches=batches, publish=False)


def query(wh: Warehouse, sql: str) -> list[tuple]:
    con = duckdb.connect(str(wh.settings.path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


HOLDINGS = [
    pytest.param("only", {("p-only", "GPU-h0", 1), ("p-only", "GPU-h1", 1)}, id="claim only"),
    pytest.param("shared", {("p-a", "GPU-h2", 2), ("p-b", "GPU-h2", 2)}, id="shared claim"),
    pytest.param("mig", {("p-mig0", "GPU-a4", 1)}, id="MIG device by DRA"),
    pytest.param("cd1", {("p-g1", "GPU-g1", 1)}, id="ComputeDomain: channel is no GPU"),
    pytest.param("pending", set(), id="unallocated claim"),
]


@pytest.mark.parametrize(("claim_uid", "expected"), HOLDINGS)
def test_each_claim_names_its_pods_physical_gpus(warehouse, claim_uid, expected) -> None:
    load(warehouse, world())
    rows = query(
        warehouse,
        "SELECT pod_uid, gpu_uuid, holder_pods FROM marts.dra_gpu_claims "
        f"WHERE claim_uid = '{claim_uid}'",
    )
    assert set(rows) == expected
    assert len(rows) == len(expected)


def test_gpus_held_through_claims_never_exceed_the_published_gpus(warehouse) -> None:
    """Counted once per (claim, device), or 1/holder_pods per pod: both give each physical GPU
    at most its own capacity (one), however many pods share the claim."""
    load(warehouse, world())
    per_gpu = query(
        warehouse,
        "SELECT gpu_uuid, sum(1.0 / holder_pods) FILTER (WHERE device_type = 'gpu') AS whole, "
        "count(DISTINCT claim_uid) FROM marts.dra_gpu_claims GROUP BY gpu_uuid ORDER BY 1",
    )
    assert per_gpu == [
        ("GPU-a4", None, 2),  # two MIG devices of one GPU
        ("GPU-g1", 1.0, 1),
        ("GPU-g2", 1.0, 1),
        ("GPU-h0", 1.0, 1),
        ("GPU-h1", 1.0, 1),
        ("GPU-h2", 1.0, 1),
    ]
    physical = query(
        warehouse,
        "SELECT node_name, count(DISTINCT gpu_uuid) FROM core.dra_devices "
        "WHERE valid_to IS NULL AND gpu_uuid IS NOT NULL GROUP BY 1 ORDER BY 1",
    )
    assert physical == [("a1", 1), ("g1", 1), ("g2", 1), ("h1", 4)]


def test_device_changes_make_versions_and_vanished_slices_close_them(warehouse) -> None:
    objects = world()
    load(warehouse, objects)
    load(warehouse, objects)  # the same snapshot again changes nothing
    assert query(warehouse, "SELECT count(*) FROM core.dra_devices") == [(10,)]
    assert query(warehouse, "SELECT count(*) FROM raw.kubernetes_resource_slices") == [(6,)]
    assert query(warehouse, "SELECT count(*) FROM raw.kubernetes_resource_claims") == [(7,)]
    # g2 leaves the cluster; h1's driver republishes gpu-3 with another memory size
    objects[SLICES] = [s for s in objects[SLICES] if s["spec"]["nodeName"] != "g2"]
    objects[SLICES][0]["spec"]["devices"][3]["capacity"]["memory"]["value"] = "40Gi"
    objects[SLICES][0]["spec"]["pool"]["generation"] = 2
    objects[CLAIMS] = [c for c in objects[CLAIMS] if c["metadata"]["uid"] != "cd2"]
    load(warehouse, objects)
    closed = query(
        warehouse,
        "SELECT dra_pool, device, closed_reason FROM core.dra_devices "
        "WHERE valid_to IS NOT NULL ORDER BY 1, 2",
    )
    assert closed == [
        ("g2", "channel-0", "removed"),
        ("g2", "gpu-0", "removed"),
        ("h1", "gpu-3", "changed"),
    ]
    # the pool generation alone makes no version: only gpu-3 changed on h1
    assert query(warehouse, "SELECT count(*) FROM core.dra_devices WHERE dra_pool = 'h1'") == [(5,)]
    assert query(
        warehouse,
        "SELECT present, vanished_at IS NOT NULL FROM core.dra_claims WHERE claim_uid = 'cd2'",
    ) == [(False, True)]
    assert query(
        warehouse, "SELECT count(*) FROM marts.dra_gpu_claims WHERE claim_uid = 'cd2'"
    ) == [(0,)]


def test_a_cluster_without_dra_loads_no_dra_rows(warehouse) -> None:
    load(warehouse, {r.api_path: [] for r in RESOURCES})  # discovery answers 404
    assert query(warehouse, "SELECT count(*) FROM core.dra_devices") == [(0,)]
    assert query(warehouse, "SELECT count(*) FROM core.dra_claims") == [(0,)]
    listed = query(warehouse, "SELECT DISTINCT resource FROM audit.kubernetes_lists")
    assert not {r[0] for r in listed} & {"resource_slices", "resource_claims"}


def test_a_cluster_that_stops_serving_dra_closes_no_devices(warehouse) -> None:
    """A cluster that stops serving DRA (404 discovery) is not listed for it: nothing is
    taken as removed."""
    load(warehouse, world())
    load(warehouse, {r.api_path: [] for r in RESOURCES})
    assert query(warehouse, "SELECT count(*) FROM core.dra_devices WHERE valid_to IS NULL") == [
        (10,)
    ]

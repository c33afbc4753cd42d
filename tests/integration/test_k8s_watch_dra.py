"""annex watch over a DRA and Kueue world: the simulated API server, the real client, a real
warehouse file (issue 38, item 2: "watched in `annex watch`").

The watch follows ResourceSlices, ResourceClaims and Kueue's objects where the server serves
them, and its GPU holdings through claims equal the simulator's ground truth
(``simulator.world.truth.gpu_holdings``) and the snapshot's; a claim deleted or deallocated
during the watch closes its holdings; a server without resource.k8s.io is watched as before.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pytest

from annex.settings import ClusterSettings, KubernetesSettings, Settings, WarehouseSettings
from collectors.kubernetes import api_client_for
from collectors.kubernetes.history import WATCHED, WatchOptions
from services.watch import WatchService
from simulator.kubernetes import Fault, SimulatedCluster
from simulator.world import build_world
from simulator.world.truth import gpu_holdings
from warehouse import Warehouse

pytestmark = pytest.mark.integration

CLUSTER = "sim"
OPTIONS = WatchOptions(timeout_seconds=2, max_batch_seconds=0.2, max_batch_events=50)
PLURALS = {
    "resource_slices": "resourceslices",
    "resource_claims": "resourceclaims",
    "kueue_workloads": "workloads",
    "kueue_cluster_queues": "clusterqueues",
    "kueue_local_queues": "localqueues",
    "kueue_resource_flavors": "resourceflavors",
}


@pytest.fixture(scope="module")
def world():
    return build_world(60, seed=7, features={"dra", "kueue"})


@pytest.fixture
def sim(world, tmp_path: Path):
    cluster = SimulatedCluster(world, bookmark_interval_seconds=0.2)
    with cluster:
        cluster.write_kubeconfig(tmp_path / "kubeconfig")
        yield cluster


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return replace(
        Settings(),
        kubernetes=KubernetesSettings(max_backoff_seconds=0.2, page_size=50),
        warehouse=WarehouseSettings(path=tmp_path / "annex.duckdb"),
    )


@pytest.fixture
def api(sim: SimulatedCluster, settings: Settings, tmp_path: Path):
    client = api_client_for(
        kubeconfig=tmp_path / "kubeconfig",
        context=None,
        in_cluster=False,
        settings=settings.kubernetes,
    )
    yield client
    client.close()


@pytest.fixture
def wh(settings: Settings) -> Warehouse:
    return Warehouse(settings.warehouse)


def catch_up(api, wh: Warehouse, settings: Settings, resources=None) -> WatchService:
    service = WatchService(
        api, wh, cluster=CLUSTER, settings=settings, options=OPTIONS, resources=resources
    )
    service.catch_up(timeout_seconds=60)
    return service


def query(wh: Warehouse, sql: str, *params) -> list[tuple]:
    with wh.writer() as con:
        return con.execute(sql, list(params)).fetchall()


def truth_by_pod(world) -> tuple[dict[tuple, float], dict[tuple, float]]:
    """DRA holdings of the ground truth, per (namespace, pod, node): whole GPUs, MIG devices."""
    whole: dict[tuple, float] = defaultdict(float)
    mig: dict[tuple, float] = defaultdict(float)
    for h in gpu_holdings(world):
        if h.mechanism != "dra":
            continue
        key = (h.namespace, h.pod, h.node)
        if "-mig-" in (h.device or ""):
            mig[key] += 1
        else:
            whole[key] += h.shares / h.shares_per_gpu
    return dict(whole), dict(mig)


def watched_dra(wh: Warehouse) -> tuple[dict[tuple, float], dict[tuple, float]]:
    rows = query(
        wh,
        "SELECT namespace, pod_name, node_name, resource_name = 'nvidia.com/gpu', sum(gpus) "
        "FROM marts.watched_gpu_allocations "
        "WHERE cluster = ? AND mechanism = 'dra' AND valid_to IS NULL GROUP BY ALL",
        CLUSTER,
    )
    whole = {(ns, p, n): round(g, 6) for ns, p, n, w, g in rows if w}
    mig = {(ns, p, n): round(g, 6) for ns, p, n, w, g in rows if not w}
    return whole, mig


def rounded(values: dict[tuple, float]) -> dict[tuple, float]:
    return {k: round(v, 6) for k, v in values.items()}


def test_the_watch_records_every_claim_and_slice_and_the_truths_dra_holdings(
    world, sim: SimulatedCluster, api, wh: Warehouse, settings: Settings
) -> None:
    service = catch_up(api, wh, settings)

    assert service.resources == WATCHED  # the simulator serves DRA and Kueue
    for table, plural in PLURALS.items():
        uids = {o["metadata"]["uid"] for o in sim.objects(plural)}
        assert uids, f"the DRA/Kueue world has {plural}"
        watched = {
            row[0]
            for row in query(
                wh,
                "SELECT uid FROM core.watched_objects WHERE cluster = ? AND resource = ? "
                "AND present",
                CLUSTER,
                table,
            )
        }
        assert watched == uids, table
    claims = query(wh, "SELECT count(*) FROM core.watched_resource_claims WHERE present")
    assert claims == [(len(sim.objects("resourceclaims")),)]
    devices = sum(len(s["spec"].get("devices", [])) for s in sim.objects("resourceslices"))
    assert query(wh, "SELECT count(*) FROM core.watched_dra_devices") == [(devices,)]

    whole, mig = truth_by_pod(world)
    assert whole and mig
    held_whole, held_mig = watched_dra(wh)
    assert held_whole == rounded(whole)
    assert held_mig == rounded(mig)
    # a claim shared by two pods: each holds half of its device
    assert any(abs(g - 0.5) < 1e-9 for g in held_whole.values())

    # The snapshot agrees, holding by holding, and the history counts each holding once.
    from services.inventory import collect_cluster_inventory

    target = ClusterSettings(name=CLUSTER, kubeconfig=settings.warehouse.path.parent / "kubeconfig")
    assert collect_cluster_inventory(settings, wh, target, publish=False).status == "succeeded"
    snapshot = query(
        wh,
        "SELECT pod_uid, resource_name, claim_uid, gpus FROM core.gpu_allocations "
        "WHERE cluster = ? AND mechanism = 'dra' AND valid_to IS NULL ORDER BY ALL",
        CLUSTER,
    )
    watch = query(
        wh,
        "SELECT pod_uid, resource_name, claim_uid, gpus FROM core.watched_gpu_allocations "
        "WHERE cluster = ? AND mechanism = 'dra' AND valid_to IS NULL ORDER BY ALL",
        CLUSTER,
    )
    assert watch == snapshot and watch
    history = query(
        wh,
        "SELECT recorded_by, count(*) FROM core.gpu_allocation_history "
        "WHERE cluster = ? AND mechanism = 'dra' GROUP BY ALL",
        CLUSTER,
    )
    assert history == [("watch", len(watch))]
    # and the watch-vs-snapshot reconciliation check finds no holding in one and not the other
    # (the watch is "behind" only because this snapshot was taken after its last commit)
    from pipelines.defs.watch.checks import watch_drift

    with wh.writer() as con:
        drift = watch_drift(con, CLUSTER).metadata
    assert drift["snapshots_compared"] == 1
    assert (drift["holdings_only_in_snapshot"], drift["holdings_only_in_watch"]) == (0, 0)

    # A second catch-up commits only what changed: nothing new opens.
    catch_up(api, wh, settings)
    assert watched_dra(wh) == (held_whole, held_mig)


def test_a_claim_deleted_or_deallocated_during_the_watch_closes_its_holdings(
    sim: SimulatedCluster, api, wh: Warehouse, settings: Settings
) -> None:
    catch_up(api, wh, settings)
    open_claims = query(
        wh,
        "SELECT DISTINCT c.claim_uid, c.namespace, c.claim_name FROM core.watched_resource_claims "
        "AS c JOIN core.watched_gpu_allocations AS a USING (cluster, claim_uid) "
        "WHERE a.valid_to IS NULL ORDER BY ALL",
    )
    assert len(open_claims) >= 2
    (deleted_uid, ns1, deleted), (released_uid, ns2, released) = open_claims[:2]

    def deallocate(claim: dict) -> None:
        claim["status"].pop("allocation", None)
        claim["status"].pop("reservedFor", None)

    sim.delete("resourceclaims", deleted, namespace=ns1)
    sim.mutate("resourceclaims", released, deallocate, namespace=ns2)
    catch_up(api, wh, settings)

    rows = dict(
        (uid, (source, inferred, closed))
        for uid, source, inferred, closed in query(
            wh,
            "SELECT claim_uid, valid_to_source, valid_to_inferred, valid_to IS NOT NULL "
            "FROM core.watched_gpu_allocations WHERE claim_uid IN (?, ?)",
            deleted_uid,
            released_uid,
        )
    )
    assert rows[deleted_uid] == ("claim_deleted", True, True)
    assert rows[released_uid] == ("claim_released", True, True)
    assert query(
        wh, "SELECT present FROM core.watched_resource_claims WHERE claim_uid = ?", deleted_uid
    ) == [(False,)]
    # every other holding stays open
    still_open = query(
        wh,
        "SELECT count(DISTINCT claim_uid) FROM core.watched_gpu_allocations "
        "WHERE mechanism = 'dra' AND valid_to IS NULL",
    )
    assert still_open == [(len(open_claims) - 2,)]


def test_a_cluster_not_serving_resource_k8s_io_is_watched_as_before(
    sim: SimulatedCluster, api, wh: Warehouse, settings: Settings
) -> None:
    sim.faults.add(Fault("status", status=404, path_prefix="/apis/resource.k8s.io", times=None))
    service = catch_up(api, wh, settings)

    assert "resource_slices" not in service.resources
    assert "resource_claims" not in service.resources
    assert {"pods", "nodes", "jobs", "events", "kueue_workloads"} <= set(service.resources)
    cursors = {row[0] for row in query(wh, "SELECT resource FROM core.watch_cursors")}
    assert cursors == set(service.resources)
    assert query(wh, "SELECT count(*) FROM core.watched_resource_claims") == [(0,)]
    mechanisms = query(
        wh, "SELECT DISTINCT mechanism FROM core.watched_gpu_allocations ORDER BY ALL"
    )
    assert mechanisms == [("device_plugin",)]

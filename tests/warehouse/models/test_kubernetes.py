"""The Kubernetes SQL model: staging matches the collector, merges keep history by change,
intervals open and close by the rules, and the marts add up. Expected figures are computed in
the tests from the objects themselves, not by annex's code."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import duckdb
import pytest

from annex.errors import CollectionError
from annex.settings import TOPOLOGY_PRESETS, KubernetesSettings, WarehouseSettings
from collectors.kubernetes import SCHEMAS, collect_cluster
from collectors.kubernetes.listing import Lister
from tests.helpers import kubernetes_api as t
from warehouse import Warehouse, load_collection
from warehouse.models.kubernetes import KUBERNETES_MODEL

NODES, PODS = "/api/v1/nodes", "/api/v1/pods"
STATE_TABLES = [
    "raw.kubernetes_nodes", "raw.kubernetes_pods", "raw.kubernetes_jobs",
    "raw.kubernetes_priority_classes", "raw.kubernetes_events", "core.nodes", "core.pods",
    "core.jobs", "core.priority_classes", "core.events", "core.gpu_allocations",
]  # fmt: skip


def world() -> dict[str, list[dict]]:
    zone_b = {"topology.kubernetes.io/zone": "us-east-1b"}
    nodes = [
        t.node("n1", labels={"karpenter.sh/nodepool": "a"}),
        t.node("n2", labels={"karpenter.sh/nodepool": "a", **zone_b}),
        t.node("n3", labels={"karpenter.sh/nodepool": "b", **zone_b}, allocatable_gpus=6),
        t.node("n4", ready="False", labels={"karpenter.sh/nodepool": "b"}),
        t.node("n5", unschedulable=True, product="NVIDIA-A100-SXM4-80GB"),
        t.node("mig1", gpus=0, mig={"1g.10gb": 14, "3g.40gb": 2}),
        t.node("cpu1", gpus=0),
    ]
    pods = [
        t.pod("train-0", node_name="n1", gpus=8, job="llm"),
        t.pod("train-1", node_name="n2", gpus=4, job="llm"),
        t.pod("eval-0", namespace="team-b", node_name="n3", gpus=2),
        t.pod("balloon-0", namespace="spare", node_name="n2", gpus=2, priority=-1000,
              priority_class="placeholder"),
        t.pod("stuck-0", node_name="n4", gpus=1),
        t.pod("drain-0", node_name="n5", gpus=8, deletion_timestamp="2026-11-02T09:05:00Z"),
        t.pod("done-0", node_name="n3", gpus=8, phase="Succeeded",
              finished_at="2026-11-02T08:40:00Z"),
        t.pod("queued-0", namespace="team-b", node_name=None, phase="Pending", gpus=4),
        t.pod("mig-0", namespace="team-b", node_name="mig1", containers=[
            t.container(limits={"nvidia.com/mig-1g.10gb": "3"})]),
        t.pod("ds-0", namespace="kube-system", node_name="n1", gpus=0),
    ]  # fmt: skip
    return {
        NODES: nodes,
        PODS: pods,
        "/apis/batch/v1/jobs": [t.job("llm", active=2)],
        "/apis/scheduling.k8s.io/v1/priorityclasses": [t.priority_class("placeholder", -1000)],
        "/api/v1/events": [t.event("e1"), t.event("e2", involved="train-1")],
    }


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    return Warehouse(WarehouseSettings(path=tmp_path / "annex.duckdb"))


def batches(fake: t.FakeCluster, **settings) -> Iterable:
    kubernetes = KubernetesSettings(page_size=settings.pop("page_size", 3), **settings)
    lister = Lister(kubernetes, sleep=lambda s: None)
    return collect_cluster(
        t.FakeApiClient(fake),
        cluster="c1",
        settings=kubernetes,
        topology_levels=TOPOLOGY_PRESETS["generic"],
        in_process=True,
        lister=lister,
    )


def load(wh: Warehouse, fake: t.FakeCluster, **settings):
    return load_collection(
        wh, KUBERNETES_MODEL, cluster="c1", batches=batches(fake, **settings), publish=False
    )


def query(wh: Warehouse, sql: str) -> list[tuple]:
    con = duckdb.connect(str(wh.settings.path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def snapshot(wh: Warehouse) -> dict[str, list[tuple]]:
    return {table: sorted(map(repr, query(wh, f"FROM {table}"))) for table in STATE_TABLES}


def test_staging_tables_match_the_collector_schemas():
    con = duckdb.connect()
    con.execute(KUBERNETES_MODEL.staging_sql)
    for table, arrow_schema in SCHEMAS.items():
        if table == "rejected":
            continue  # staged by the engine itself
        columns = [row[0] for row in con.execute(f"DESCRIBE stage_{table}").fetchall()]
        assert columns == arrow_schema.names, table


def test_every_core_and_marts_column_of_the_model_is_commented(warehouse):
    warehouse.migrate()
    missing = query(
        warehouse,
        "SELECT table_name || '.' || column_name FROM duckdb_columns() "
        "WHERE schema_name IN ('core', 'marts') AND comment IS NULL",
    )
    assert missing == []


def test_marts_add_up_to_what_the_objects_say(warehouse):
    objects = world()
    result = load(warehouse, t.FakeCluster(objects))
    assert result.status == "succeeded" and result.rejected_count == 0

    # Expectations from the objects, by the rules written out simply.
    nodes = {n["metadata"]["name"]: n for n in objects[NODES]}
    held: dict[tuple[str, str], int] = {}
    for p in objects[PODS]:
        node, phase = p["spec"].get("nodeName"), p["status"]["phase"]
        if not node or phase in ("Succeeded", "Failed"):
            continue
        kind = "balloon" if p["spec"].get("priority", 0) < 0 else "workload"
        for c in p["spec"]["containers"]:
            for res, qty in {**c["resources"].get("limits", {}),
                             **c["resources"].get("requests", {})}.items():  # fmt: skip
                if res.startswith("nvidia.com/"):
                    key = (node, f"{res}|{kind}")
                    held[key] = held.get(key, 0) + int(qty)
    rows = query(
        warehouse,
        "SELECT node_name, resource_name, capacity_gpus, allocatable_gpus, "
        "allocated_workload_gpus, allocated_balloon_gpus, free_gpus, unavailable_gpus "
        "FROM marts.node_gpu_capacity ORDER BY ALL",
    )
    for node, res, cap, alloc, work, ball, free, unavail in rows:
        status = nodes[node]["status"]
        assert cap == int(status["capacity"][res]) and alloc == int(status["allocatable"][res])
        assert work == held.get((node, f"{res}|workload"), 0)
        assert ball == held.get((node, f"{res}|balloon"), 0)
        assert free + work + ball + unavail == cap
        ready = nodes[node]["status"]["conditions"][-1]["status"] == "True"
        schedulable = ready and not nodes[node]["spec"].get("unschedulable", False)
        assert free == (alloc - work - ball if schedulable else 0)
    assert {(r[0], r[1]) for r in rows} == {
        (n, res)
        for n, obj in nodes.items()
        for res in obj["status"]["capacity"]
        if res.startswith("nvidia.com/")
    }

    summary = query(
        warehouse,
        "SELECT nodes, ready_nodes, gpu_nodes, capacity_gpus, allocatable_gpus, "
        "allocated_workload_gpus, allocated_balloon_gpus, free_gpus, unavailable_gpus, "
        "mig_slices_capacity, mig_slices_allocated, pods_counted, balloon_pods, queued_pods, "
        "queued_gpus, snapshot_consistent FROM marts.fleet_summary",
    )
    # n1..n5 have 8 GPUs (n3: 6 allocatable); n4 NotReady, n5 cordoned.
    # workload: train-0 8 + train-1 4 + eval-0 2 + stuck-0 1 (n4) + drain-0 8 (n5, terminating)
    # free: n1 0, n2 8-4-2 = 2, n3 6-2 = 4; unavailable: n3 2 + n4 8-1 + n5 0 = 9
    assert summary == [(7, 6, 6, 40, 38, 23, 2, 6, 9, 16, 3, 8, 1, 1, 4, True)]

    by_namespace = query(
        warehouse,
        "SELECT namespace, pods_counted, allocated_workload_gpus, allocated_balloon_gpus, "
        "mig_slices_allocated, queued_pods, queued_gpus FROM marts.fleet_gpu_by_namespace "
        "ORDER BY namespace",
    )
    assert by_namespace == [
        ("kube-system", 1, 0, 0, 0, 0, 0),
        ("spare", 1, 0, 2, 0, 0, 0),
        ("team-a", 4, 21, 0, 0, 0, 0),
        ("team-b", 2, 2, 0, 3, 1, 4),
    ]
    zones = query(
        warehouse,
        "SELECT failure_domain, capacity_gpus, blast_radius_gpus, allocated_workload_gpus FROM "
        "marts.fleet_gpu_by_domain WHERE level = 2 AND whole_gpus ORDER BY failure_domain",
    )
    assert zones == [("us-east-1/us-east-1a", 24, 24, 17), ("us-east-1/us-east-1b", 16, 16, 6)]
    models = query(
        warehouse,
        "SELECT gfd_product, capacity_gpus FROM marts.fleet_gpu_by_model WHERE whole_gpus "
        "ORDER BY 1",
    )
    assert models == [("NVIDIA-A100-SXM4-80GB", 8), ("NVIDIA-H100-80GB-HBM3", 32)]
    pools = query(
        warehouse,
        "SELECT node_pool, capacity_gpus, free_gpus FROM marts.fleet_gpu_by_pool WHERE whole_gpus "
        "ORDER BY 1",
    )
    assert pools == [("a", 16, 2), ("b", 16, 4), ("unknown", 8, 0)]
    done = query(
        warehouse,
        "SELECT valid_from, valid_to, valid_to_source FROM core.gpu_allocations "
        "WHERE pod_name = 'done-0'",
    )
    assert [(str(a), str(b), s) for a, b, s in done] == [
        ("2026-11-02 08:00:00", "2026-11-02 08:40:00", "finished")
    ]


def test_loading_the_same_snapshot_twice_changes_nothing(warehouse):
    fake = t.FakeCluster(world())
    load(warehouse, fake)
    before = snapshot(warehouse)
    load(warehouse, fake)
    assert snapshot(warehouse) == before
    assert query(warehouse, "SELECT count(*) FROM audit.kubernetes_lists") == [(10,)]


def test_changes_append_history_and_deletions_close_intervals(warehouse):
    objects = world()
    load(warehouse, t.FakeCluster(objects))
    # train-1 and the terminating drain-0 are gone, n5 leaves the cluster, n1 is cordoned
    gone = ("train-1", "drain-0")
    objects[PODS] = [p for p in objects[PODS] if p["metadata"]["name"] not in gone]
    objects[NODES] = [n for n in objects[NODES] if n["metadata"]["name"] != "n5"]
    objects[NODES][0]["spec"]["unschedulable"] = True
    second = load(warehouse, t.FakeCluster(objects))
    closed = query(
        warehouse,
        "SELECT pod_name, valid_to_source, valid_to_inferred, closed_collection_id "
        "FROM core.gpu_allocations WHERE valid_to IS NOT NULL AND pod_name <> 'done-0' "
        "ORDER BY 1",
    )
    # drain-0 was terminating: closed at its deletionTimestamp
    assert closed == [
        ("drain-0", "deleted", True, second.collection_id),
        ("train-1", "vanished", True, second.collection_id),
    ]
    assert query(
        warehouse, "SELECT present, vanished_at IS NOT NULL FROM core.pods WHERE pod_name='train-1'"
    ) == [(False, True)]
    versions = query(
        warehouse,
        "SELECT node_name, unschedulable, closed_reason FROM core.nodes "
        "WHERE node_name IN ('n1', 'n5') ORDER BY node_name, valid_from",
    )
    assert versions == [("n1", False, "changed"), ("n1", True, None), ("n5", True, "removed")]
    # raw grows by the changes only: one new n1 version, no pod rewritten
    assert query(warehouse, "SELECT count(*) FROM raw.kubernetes_nodes") == [(8,)]
    assert query(warehouse, "SELECT count(*) FROM raw.kubernetes_pods") == [(10,)]
    assert (
        query(
            warehouse,
            "SELECT valid_to FROM core.gpu_allocations WHERE pod_name = 'drain-0'",
        )[0][0].isoformat()
        == "2026-11-02T09:05:00"
    )


def test_a_reboot_is_a_new_node_version_and_the_same_boot_is_not(warehouse):
    objects = world()
    load(warehouse, t.FakeCluster(objects))
    load(warehouse, t.FakeCluster(objects))
    objects[NODES][0] = t.node("n1", labels={"karpenter.sh/nodepool": "a"}, boot_id="boot-2")
    load(warehouse, t.FakeCluster(objects))
    assert query(
        warehouse,
        "SELECT boot_id, system_uuid IS NOT NULL, closed_reason FROM core.nodes "
        "WHERE node_name = 'n1' ORDER BY valid_from",
    ) == [("boot-n1", True, "changed"), ("boot-2", True, None)]
    assert query(
        warehouse, "SELECT boot_id FROM raw.kubernetes_nodes WHERE node_name = 'n1' ORDER BY 1"
    ) == [("boot-2",), ("boot-n1",)]


def test_inconsistent_snapshot_never_closes_absent_objects(warehouse):
    objects = world()
    load(warehouse, t.FakeCluster(objects))
    objects[PODS] = [p for p in objects[PODS] if p["metadata"]["name"] != "train-1"]
    fake = t.FakeCluster(objects)
    fake.expire_tokens_at_page[PODS] = 2
    load(warehouse, fake, max_list_restarts=0)
    assert query(
        warehouse,
        "SELECT count(*) FROM core.gpu_allocations WHERE pod_name='train-1' AND valid_to IS NULL",
    ) == [(1,)]
    assert query(warehouse, "SELECT snapshot_consistent FROM marts.fleet_summary") == [(False,)]


def test_restarted_list_keeps_only_its_last_attempt(warehouse):
    fake = t.FakeCluster(world())
    fake.expire_tokens_at_page[PODS] = 3
    result = load(warehouse, fake, max_list_restarts=2)
    assert result.row_counts["pods"] > 10  # the first attempt's pages were staged too
    assert query(warehouse, "SELECT count(*), count(DISTINCT pod_uid) FROM core.pods") == [(10, 10)]
    assert query(
        warehouse, "SELECT restarts, consistent FROM audit.kubernetes_lists WHERE resource='pods'"
    ) == [(1, True)]


def test_failed_collection_leaves_no_rows(warehouse):
    fake = t.FakeCluster(world())
    fake.faults.append(t.FakeFault(PODS, truncate=True, page=2, times=99))
    with pytest.raises(CollectionError, match="page 2"):
        load(warehouse, fake, max_retries=1)
    assert query(warehouse, "SELECT status FROM audit.collections") == [("failed",)]
    for table in STATE_TABLES:
        assert query(warehouse, f"SELECT count(*) FROM {table}") == [(0,)], table


def test_rejected_pod_goes_to_audit_and_the_rest_loads(warehouse):
    objects = world()
    bad = t.pod("bad-0", containers=[t.container(limits={"nvidia.com/gpu": "1.5"})])
    objects[PODS].append(bad)
    result = load(warehouse, t.FakeCluster(objects))
    assert result.rejected_count == 1
    assert query(warehouse, "SELECT reason_code, locator FROM audit.rejected") == [
        ("invalid_gpu_quantity", "pods/team-a/bad-0 (uid uid-pod-team-a-bad-0)")
    ]
    assert query(warehouse, "SELECT count(*) FROM core.pods") == [(10,)]

"""GPUs pending pods ask for through DRA claims (issue 38): marts.pending_gpu_demand per pod,
and queued_gpus of marts.fleet_summary and marts.fleet_gpu_by_namespace counting them."""

from __future__ import annotations

from pathlib import Path

import pytest

from annex.settings import WarehouseSettings
from tests.helpers import kubernetes_api as t
from tests.warehouse.models.test_kubernetes_dra import CLAIMS, load, query, world
from warehouse import Warehouse

PODS = "/api/v1/pods"
TEMPLATES = "/apis/resource.k8s.io/v1/resourceclaimtemplates"


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    return Warehouse(WarehouseSettings(path=tmp_path / "annex.duckdb"))


def requests(device_class: str, count: int | None = 1, mode: str | None = None) -> dict:
    exactly: dict = {"deviceClassName": device_class}
    if count is not None:
        exactly["count"] = count
    if mode is not None:
        exactly["allocationMode"] = mode
    return {"devices": {"requests": [{"name": "r", "exactly": exactly}]}}


def unallocated(name: str, spec: dict) -> dict:
    return {"metadata": {"name": name, "namespace": "team-a", "uid": name}, "spec": spec}


def waiting(uid: str, claims: list[dict], gpus: int = 0, statuses: list | None = None) -> dict:
    pod = t.pod(uid, uid=uid, node_name=None, phase="Pending", gpus=gpus, scheduled_at=None,
                started_at=None)  # fmt: skip
    pod["spec"]["resourceClaims"] = claims
    if statuses:
        pod["status"]["resourceClaimStatuses"] = statuses
    return pod


def pending_world() -> dict[str, list[dict]]:
    objects = world()
    objects[TEMPLATES] = [
        {
            "metadata": {"name": "train-gpus", "namespace": "team-a", "uid": "t1"},
            "spec": {"spec": requests("gpu.nvidia.com", 2)},
        }
    ]
    objects[CLAIMS] += [
        unallocated("gen", requests("gpu.nvidia.com", 3)),
        unallocated("sq", requests("gpu.nvidia.com", 2)),
        unallocated("every", requests("gpu.nvidia.com", None, "All")),
        unallocated("slice", requests("mig.nvidia.com", 1)),
        unallocated("imex", requests("compute-domain-default-channel.nvidia.com", 1)),
    ]
    template = [{"name": "gpus", "resourceClaimTemplateName": "train-gpus"}]
    objects[PODS] = [
        t.pod("p-only", uid="p-only", node_name="h1", gpus=0),
        waiting("q-tmpl", template),
        waiting("q-gen", template, statuses=[{"name": "gpus", "resourceClaimName": "gen"}]),
        waiting("q-s1", [{"name": "s", "resourceClaimName": "sq"}]),
        waiting("q-s2", [{"name": "s", "resourceClaimName": "sq"}]),
        waiting("q-all", [{"name": "a", "resourceClaimName": "every"}]),
        waiting("q-mig", [{"name": "m", "resourceClaimName": "slice"}]),
        waiting("q-imex", [{"name": "c", "resourceClaimName": "imex"}]),
        waiting("q-dp", template, gpus=4),
        waiting("q-held", [{"name": "s", "resourceClaimName": "claim-shared"}]),
        waiting("q-lost", [{"name": "s", "resourceClaimName": "nowhere"}]),
    ]
    return objects


DEMAND = [
    pytest.param("q-tmpl", (0, 2.0, 0.0, 0, 0, 2.0), id="template, claim not created yet"),
    pytest.param("q-gen", (0, 3.0, 0.0, 0, 0, 3.0), id="the claim generated from a template"),
    pytest.param("q-s1", (0, 1.0, 0.0, 0, 0, 1.0), id="claim shared by two pending pods: 1/2"),
    pytest.param("q-all", (0, 0.0, 0.0, 1, 0, 0.0), id="allocationMode All: apart"),
    pytest.param("q-mig", (0, 0.0, 1.0, 0, 0, 0.0), id="MIG device class"),
    pytest.param("q-imex", (0, 0.0, 0.0, 0, 0, 0.0), id="IMEX channel: no GPU"),
    pytest.param("q-dp", (4, 2.0, 0.0, 0, 0, 6.0), id="device plugin + claim"),
    pytest.param("q-held", (0, 0.0, 0.0, 0, 0, 0.0), id="allocated claim: held already"),
    pytest.param("q-lost", (0, 0.0, 0.0, 0, 1, 0.0), id="claim not found: unresolved"),
]


@pytest.mark.parametrize(("pod_uid", "expected"), DEMAND)
def test_pending_pods_demand_counts_their_claims(warehouse, pod_uid, expected) -> None:
    load(warehouse, pending_world())
    rows = query(
        warehouse,
        "SELECT device_plugin_gpus, dra_gpus, dra_mig_slices, dra_all_requests, "
        "unresolved_claims, pending_gpus FROM marts.pending_gpu_demand "
        f"WHERE pod_uid = '{pod_uid}'",
    )
    assert rows == [expected]


def test_bound_pods_are_no_pending_demand(warehouse) -> None:
    load(warehouse, pending_world())
    assert query(warehouse, "SELECT * FROM marts.pending_gpu_demand WHERE pod_uid = 'p-only'") == []


def test_a_shared_pending_claim_counts_once_in_the_fleet_figures(warehouse) -> None:
    load(warehouse, pending_world())
    # GPUs: 2 (template) + 3 (generated) + 2 (shared, once) + 4 + 2 (device plugin + template);
    # the namespace's GPU pods: all but the IMEX, held and unresolved ones
    expected = (10, 13, 9, 1)
    assert query(
        warehouse,
        "SELECT queued_pods, queued_gpus, queued_dra_gpus, queued_dra_all_requests "
        "FROM marts.fleet_summary",
    ) == [expected]
    assert query(
        warehouse,
        "SELECT queued_pods, queued_gpus, queued_dra_gpus, queued_dra_all_requests, "
        "queued_gpu_pods, queued_mig_slices FROM marts.fleet_gpu_by_namespace "
        "WHERE namespace = 'team-a'",
    ) == [(*expected, 7, 1)]

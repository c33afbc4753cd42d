"""Attestation coverage of GPUs held through DRA claims and of shared GPUs (issue 38 item 3):
a DRA-only node advertises no GPU extended resource, so its GPUs are the devices its
ResourceSlices publish (joined by UUID); a time-sliced node advertises replicas x GPUs, and both
its attestation (one token per physical GPU) and its GPU-hours are in physical GPUs."""

from __future__ import annotations

import pytest

from tests.warehouse.models.test_attestation_coverage import (
    CLUSTER,
    Evidence,
    at,
    hours_by_node,
    inventory,
    load,
    refresh,
)
from warehouse import Warehouse


def dra_devices(wh: Warehouse, node: str, gpus: int) -> None:
    """``gpus`` GPUs of ``node`` in its ResourceSlice (UUIDs as the evidence names them)."""
    with wh.writer() as con:
        con.execute("UPDATE core.nodes SET gpu_capacity = 0, gpu_allocatable = 0")
        for i in range(gpus):
            con.execute(
                "INSERT INTO core.dra_devices (cluster, driver, dra_pool, device, node_name, "
                "device_type, gpu_uuid, content_hash, valid_from, collection_id) "
                "VALUES (?, 'gpu.nvidia.com', ?, ?, ?, 'gpu', ?, 0, ?, 'k8s-1')",
                [CLUSTER, node, f"gpu-{i}", node, f"{node}-gpu{i}", at("00:00")],
            )


def share(wh: Warehouse, replicas: int) -> None:
    """The nodes time-sliced: GFD's replicas label, replicas x GPUs advertised."""
    with wh.writer() as con:
        con.execute(
            "UPDATE core.nodes SET gpu_capacity = gpu_capacity * ?, "
            "gpu_allocatable = gpu_allocatable * ?, "
            "labels = MAP {'nvidia.com/gpu.replicas': ?, "
            "'nvidia.com/gpu.sharing-strategy': 'time-slicing'}, "
            "gpu_resources = [{'resource_name': 'nvidia.com/gpu', "
            "'capacity': gpu_capacity * ?, 'allocatable': gpu_allocatable * ?}]",
            [replicas, replicas, str(replicas), replicas, replicas],
        )


CASES = [
    # (setup, holding: (gpus, mechanism), attested GPUs, expected GPU-hours by category)
    pytest.param(lambda wh: dra_devices(wh, "node-a", 2), (2.0, "dra"), 2,
                 (2.0, 2.0, 0.0, 0.0, 0.0), id="DRA-only node, both GPUs attested"),
    pytest.param(lambda wh: dra_devices(wh, "node-a", 2), (1.0, "dra"), 1,
                 (1.0, 0.0, 0.0, 1.0, 0.0), id="DRA-only node, one of its two GPUs attested"),
    pytest.param(lambda wh: share(wh, 4), (4.0, "device_plugin"), 2,
                 (1.0, 1.0, 0.0, 0.0, 0.0), id="time-sliced node: 4 replicas are 1 GPU"),
    pytest.param(lambda wh: None, (2.0, "device_plugin"), 2,
                 (2.0, 2.0, 0.0, 0.0, 0.0), id="device-plugin node"),
]  # fmt: skip


@pytest.mark.parametrize(("setup", "holding", "attested", "expected"), CASES)
def test_dra_held_and_shared_gpus_are_covered_in_physical_gpus(
    wh: Warehouse, setup, holding, attested, expected
) -> None:
    gpus, mechanism = holding
    inventory(
        wh,
        [{"name": "node-a", "capacity": 2, "boot": "a1", "valid_from": at("00:00")}],
        [{"pod": "p1", "node": "node-a", "gpus": gpus, "valid_from": at("01:00"),
          "valid_to": at("02:00")}],
        horizon=at("12:00"),
    )  # fmt: skip
    with wh.writer() as con:
        con.execute(
            "UPDATE core.gpu_allocations SET mechanism = ?, "
            "claim_uid = CASE WHEN ? = 'dra' THEN 'claim-1' END",
            [mechanism, mechanism],
        )
    setup(wh)
    ev = Evidence()
    ev.submit("node-a", "a1", at("01:00"), gpus=attested)
    load(wh, ev)
    refresh(wh)
    assert hours_by_node(wh) == {"node-a": expected}

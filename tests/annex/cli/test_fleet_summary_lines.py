"""The CLI's fleet summary headline: shared GPUs as physical GPUs beside the shares the
scheduler sees, GPUs held through DRA claims, and a Kueue line, each only where its data
exists (a plain cluster's headline is as before)."""

from __future__ import annotations

import io
from datetime import datetime
from typing import Any

from rich.console import Console

from annex.cli.summary import _headline

SUMMARY = {
    "cluster": "c1",
    "nodes": 10,
    "ready_nodes": 10,
    "cordoned_nodes": 0,
    "gpu_nodes": 9,
    "capacity_gpus": 72,
    "allocated_workload_gpus": 40,
    "allocated_balloon_gpus": 8,
    "free_gpus": 24,
    "unavailable_gpus": 0,
    "mig_slices_allocated": 0,
    "mig_slices_capacity": 0,
    "pods": 50,
    "pods_counted": 45,
    "balloon_pods": 1,
    "queued_pods": 2,
    "queued_gpus": 8,
    "last_collected_at": datetime(2026, 11, 29, 3, 0),
    "snapshot_consistent": True,
    "last_collection_id": "x",
}
TIME_SLICED = {
    "sharing_strategy": "time-slicing",
    "nodes": 1,
    "physical_gpus": 8,
    "shares_advertised": 32,
    "shares_allocated": 24,
    "held_gpus": 6.0,
}
HAMI = TIME_SLICED | {
    "sharing_strategy": "hami",
    "shares_advertised": 80,
    "shares_allocated": None,
    "held_gpus": 0.75,
}
DRA = {"claims": 11, "gpus": 28, "mig_devices": 4, "pods": 12}
QUEUES = {
    "waiting_workloads": 3,
    "queued_gpus": 32,
    "cluster_queues": 2,
    "wait_p95_seconds": 3 * 3600.0,
    "quota_queues": 2,
    "borrowed_gpus": 8,
}
NO_QUEUES = dict.fromkeys(QUEUES) | {"quota_queues": 0}


def headline(*args: Any) -> str:
    out = io.StringIO()
    Console(file=out, width=200).print(_headline(SUMMARY, *args))
    return " ".join(out.getvalue().split())


def test_shared_gpus_are_physical_gpus_beside_their_shares() -> None:
    text = headline([TIME_SLICED, HAMI], None, NO_QUEUES)
    assert "GPUs (whole) 72 physical" in text
    shares = "24 shares allocated = 6.0 physical GPUs held"
    assert f"shared: time-slicing 8 on 1 node as 32 shares; {shares}" in text
    assert (
        "shared: hami 8 on 1 node as 80 shares; 0.8 physical GPUs held (by nvidia.com/gpucores %)"
        in text
    )


def test_dra_held_gpus_are_named_under_the_allocation() -> None:
    text = headline([], DRA, NO_QUEUES)
    assert (
        "through DRA claims 28 GPUs, 4 MIG devices in 11 claims held by 12 pods (counted above)"
        in text
    )


def test_the_queues_line_where_kueue_runs() -> None:
    text = headline([], None, QUEUES)
    assert (
        "queues (Kueue) 3 workloads waiting for 32 GPUs in 2 ClusterQueues; p95 wait 3.0 h "
        "(worst day of the last 7); 8 GPUs borrowed above nominal quota"
    ) in text
    idle = headline([], None, NO_QUEUES | {"quota_queues": 2, "borrowed_gpus": 0})
    assert "queues (Kueue) 0 workloads waiting for 0 GPUs" in idle
    assert "borrowed" not in idle


def test_a_plain_cluster_headline_is_unchanged() -> None:
    text = headline([], None, NO_QUEUES)
    assert headline() == text
    for absent in ("shared", "DRA", "queues", "physical"):
        assert absent not in text

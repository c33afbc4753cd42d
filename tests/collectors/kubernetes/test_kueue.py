"""Kueue's decoders: one table-driven decoder, each object a table of column readers."""

from __future__ import annotations

import json
from datetime import datetime
from typing import ClassVar

import pyarrow as pa
import pytest

from annex.settings import TOPOLOGY_PRESETS, BalloonRule
from collectors.kubernetes.decode import DecodeContext
from collectors.kubernetes.kueue import (
    KUEUE_DECODERS,
    KueueDecoder,
    LocalQueue,
    LocalQueueList,
)

CONTEXT = DecodeContext(balloons=BalloonRule(), topology_levels=TOPOLOGY_PRESETS["generic"])
T0 = "2026-11-02T08:00:00Z"


def meta(name: str, namespace: str | None = None) -> dict:
    return {
        "uid": f"uid-{name}",
        "name": name,
        **({"namespace": namespace} if namespace else {}),
        "resourceVersion": "7",
        "creationTimestamp": T0,
    }


def container(**requests: str) -> dict:
    return {"name": "c", "image": "x", "resources": {"requests": requests, "limits": requests}}


def workload(name: str, *containers: dict, count: int = 1, conditions=(), admission=None):
    return {
        "metadata": {**meta(name, "team-a"), "labels": {"team": "a"}},
        "spec": {
            "queueName": "lq",
            "podSets": [{"name": "main", "count": count, "template": {"spec": {
                "containers": list(containers)}}}],
        },
        "status": {
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": at, "reason": r}
                for t, at, r in conditions
            ],
            **({"admission": admission} if admission else {}),
        },
    }  # fmt: skip


OBJECTS = {
    "kueue_workloads": workload(
        "w1",
        container(**{"nvidia.com/gpu": "2"}),
        count=2,
        conditions=[("QuotaReserved", T0, "r"), ("Admitted", "2026-11-02T11:00:00Z", "a")],
        admission={
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "flavors": {"nvidia.com/gpu": "h100"},
                                   "resourceUsage": {"nvidia.com/gpu": "4", "cpu": "8"}}],
        },
    ),
    "kueue_cluster_queues": {
        "metadata": meta("cq"),
        "spec": {"cohort": "all", "resourceGroups": [{"flavors": [{"name": "h100", "resources": [
            {"name": "nvidia.com/gpu", "nominalQuota": "16", "borrowingLimit": "8"},
            {"name": "nvidia.com/gpumem", "nominalQuota": "80000"}]}]}]},
        "status": {"pendingWorkloads": 1, "admittedWorkloads": 2, "flavorsUsage": [
            {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "total": "20",
                                             "borrowed": "4"}]}]},
    },
    "kueue_local_queues": {
        "metadata": meta("lq", "team-a"),
        "spec": {"clusterQueue": "cq"},
        "status": {"pendingWorkloads": 1, "admittedWorkloads": 0},
    },
    "kueue_resource_flavors": {
        "metadata": meta("h100"),
        "spec": {"nodeLabels": {"pool": "h100"}},
    },
}  # fmt: skip

EXPECTED = {
    "kueue_workloads": {
        "workload_name": "w1",
        "local_queue": "lq",
        "cluster_queue": "cq",
        "requested_gpus": 4,
        "admitted_gpus_by_flavor": [
            {"flavor": "h100", "resource_name": "nvidia.com/gpu", "gpus": 4}
        ],
        "state": "admitted",
        "queued_from": datetime(2026, 11, 2, 8),
        "queued_to": datetime(2026, 11, 2, 11),
        "admitted_from": datetime(2026, 11, 2, 11),
        "labels": [("team", "a")],
    },
    "kueue_cluster_queues": {
        "cluster_queue": "cq",
        "cohort": "all",
        "pending_workloads": 1,
        "quotas": [
            {"flavor": "h100", "resource_name": "nvidia.com/gpu", "is_gpu": True,
             "nominal_quota": 16.0, "borrowing_limit": 8.0, "lending_limit": None, "used": 20.0,
             "borrowed": 4.0},
            {"flavor": "h100", "resource_name": "nvidia.com/gpumem", "is_gpu": False,
             "nominal_quota": 80000.0, "borrowing_limit": None, "lending_limit": None,
             "used": None, "borrowed": None},
        ],
    },
    "kueue_local_queues": {"local_queue": "lq", "namespace": "team-a", "cluster_queue": "cq"},
    "kueue_resource_flavors": {"flavor": "h100", "node_labels": [("pool", "h100")]},
}  # fmt: skip


def build(table: str, items: list[dict]):
    decoder = KUEUE_DECODERS[table](CONTEXT)
    body = json.dumps({"metadata": {}, "items": items}).encode()
    batch, rejected = decoder.build(decoder.decode(body), 0)
    assert batch.schema == decoder.arrow_schema
    return batch.to_pylist(), rejected


@pytest.mark.parametrize("table", sorted(OBJECTS))
def test_each_kueue_object_decodes_through_its_column_table(table):
    rows, rejected = build(table, [OBJECTS[table]])
    assert rejected == []
    row = rows[0]
    for column, value in EXPECTED[table].items():
        assert row[column] == value, column
    assert row["resource_version"] == "7"
    assert row["creation_timestamp"] == datetime(2026, 11, 2, 8)
    assert row["list_attempt"] == 0


def test_a_hami_workload_counts_its_gpus_never_its_cores_or_memory():
    hami = workload(
        "hami",
        container(**{"nvidia.com/gpu": "1", "nvidia.com/gpucores": "25",
                     "nvidia.com/gpumem": "20000"}),
        count=3,
    )  # fmt: skip
    (row,), _ = build("kueue_workloads", [hami])
    assert row["requested_gpus"] == 3
    assert sorted((r["resource_name"], r["gpus"]) for r in row["gpu_requests"]) == [
        ("nvidia.com/gpu", 3),
        ("nvidia.com/gpucores", 75),
    ]
    assert row["state"] == "queued" and row["queued_to"] is None


@pytest.mark.parametrize(
    ("table", "obj", "message"),
    [
        ("kueue_workloads", workload("bad", container(**{"nvidia.com/gpu": "0.5"})),
         "workload GPU quantity"),
        ("kueue_cluster_queues", {**OBJECTS["kueue_cluster_queues"], "spec": {"resourceGroups": [
            {"flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "x"}]}]}]}},
         "cluster queue quota"),
    ],
)  # fmt: skip
def test_an_invalid_quantity_rejects_only_that_object(table, obj, message):
    rows, rejected = build(table, [obj, OBJECTS[table]])
    assert len(rows) == 1
    assert [r.reason_code for r in rejected] == ["invalid_quantity"]
    assert message in rejected[0].message


def test_a_decoder_whose_readers_miss_a_column_is_refused_at_definition():
    with pytest.raises(TypeError, match="do not match the columns"):

        class Broken(KueueDecoder):
            table = "kueue_local_queues"
            list_type = LocalQueueList
            item_type = LocalQueue
            arrow_schema = pa.schema([("local_queue", pa.string()), ("list_attempt", pa.int32())])
            readers: ClassVar[dict] = {}

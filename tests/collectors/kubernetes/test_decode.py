"""Decoding real-shaped list pages into Arrow, with exact expected values."""

from __future__ import annotations

import json
import uuid
from datetime import datetime

import msgspec
import pytest

from annex.settings import TOPOLOGY_PRESETS, BalloonRule, KubernetesSettings
from collectors.kubernetes import schema
from collectors.kubernetes.decode import (
    DecodeContext,
    EventDecoder,
    JobDecoder,
    NodeDecoder,
    PodDecoder,
    PriorityClassDecoder,
)
from tests.helpers import kubernetes_api as t

CONTEXT = DecodeContext(balloons=BalloonRule(), topology_levels=TOPOLOGY_PRESETS["generic"])


def page(kind: str, items: list[dict], **metadata) -> bytes:
    return json.dumps(
        {"kind": kind, "apiVersion": "v1", "metadata": metadata, "items": items}
    ).encode()


def build(decoder_type, body: bytes, attempt: int = 0):
    decoder = decoder_type(CONTEXT)
    decoded = decoder.decode(body)
    batch, rejected = decoder.build(decoded, attempt)
    assert batch.schema == decoder.arrow_schema
    return decoded, batch.to_pylist(), rejected


def test_node_page():
    nodes = [
        t.node("gpu-1", labels={"karpenter.sh/nodepool": "h100-pool"}),
        t.node(
            "gpu-2",
            gpus=8,
            allocatable_gpus=7,
            ready="Unknown",
            unschedulable=True,
            mig={"1g.10gb": 7},
            labels={"topology.kubernetes.io/zone": "us-east-1b"},
        ),
        t.node("cpu-1", gpus=0, labels={"nvidia.com/gpu.product": ""}),
    ]
    decoded, rows, rejected = build(
        NodeDecoder, page("NodeList", nodes, resourceVersion="99", **{"continue": "tok"})
    )
    assert decoded.metadata.resource_version == "99" and decoded.metadata.continue_ == "tok"
    assert rejected == []
    first, second, cpu = rows
    assert first["node_uid"] == "uid-node-gpu-1" and first["node_name"] == "gpu-1"
    assert first["creation_timestamp"] == datetime(2026, 10, 1, 8, 0, 0)
    assert first["pool"] == "h100-pool"
    assert first["instance_type"] == "p5.48xlarge"
    assert first["gpu_product"] == "NVIDIA-H100-80GB-HBM3"
    assert first["gpu_memory_bytes"] == 81559 * 1024 * 1024
    assert (first["gpu_capacity"], first["gpu_allocatable"]) == (8, 8)
    assert first["gpu_resources"] == [
        {"resource_name": "nvidia.com/gpu", "capacity": 8, "allocatable": 8}
    ]
    assert first["cuda_driver_version"] == "550.90.07"
    assert first["mig_strategy"] == "none"
    assert first["cpu_capacity_millicores"] == 192_000
    assert first["cpu_allocatable_millicores"] == 191_450
    assert first["memory_capacity_bytes"] == 2097152 * 1024
    assert first["ready"] is True and first["ready_reason"] == "KubeletReady"
    assert first["ready_since"] == datetime(2026, 10, 1, 8, 2, 0)
    assert first["unschedulable"] is False and first["taints"] == []
    assert first["kubelet_version"] == "v1.33.2"
    assert first["provider_id"].startswith("aws:///us-east-1a/i-")
    assert first["boot_id"] == "boot-gpu-1"
    assert first["system_uuid"] == str(uuid.uuid5(uuid.NAMESPACE_DNS, "gpu-1"))
    assert dict(first["labels"])["kubernetes.io/hostname"] == "gpu-1"
    assert [lvl["domain"] for lvl in first["topology"]] == [
        "us-east-1",
        "us-east-1/us-east-1a",
        "us-east-1/us-east-1a/gpu-1",
    ]
    assert first["list_attempt"] == 0

    assert (second["gpu_capacity"], second["gpu_allocatable"]) == (8, 7)
    assert second["ready"] is False and second["unschedulable"] is True
    assert second["taints"] == [
        {"key": "node.kubernetes.io/unschedulable", "value": None, "effect": "NoSchedule"}
    ]
    assert second["mig_strategy"] == "mixed"
    assert sorted((r["resource_name"], r["capacity"]) for r in second["gpu_resources"]) == [
        ("nvidia.com/gpu", 8),
        ("nvidia.com/mig-1g.10gb", 7),
    ]
    assert second["topology"][1]["value"] == "us-east-1b"

    assert cpu["gpu_capacity"] == 0 and cpu["gpu_resources"] == []
    assert cpu["gpu_product"] == ""  # an empty label is kept as the API says


@pytest.mark.parametrize(
    ("labels", "pool_labels", "expected"),
    [
        ({"acme.com/pool": "train-a"}, (), None),  # not a convention annex knows
        ({"acme.com/pool": "train-a"}, ("acme.com/pool",), "train-a"),
        # the configured label wins over a managed service's own
        ({"acme.com/pool": "train-a", "karpenter.sh/nodepool": "k"}, ("acme.com/pool",), "train-a"),
        ({"karpenter.sh/nodepool": "k"}, ("acme.com/pool",), "k"),  # the others still count
    ],
)
def test_node_pool_from_the_configured_labels_first(labels, pool_labels, expected):
    settings = KubernetesSettings(pool_labels=pool_labels)
    decoder = NodeDecoder(DecodeContext.from_settings(settings, TOPOLOGY_PRESETS["generic"]))
    decoded = decoder.decode(page("NodeList", [t.node("n-1", labels=labels)]))
    batch, rejected = decoder.build(decoded, 0)
    assert rejected == [] and batch.to_pylist()[0]["pool"] == expected


def test_pod_page_classifies_and_applies_pod_requests():
    pods = [
        t.pod("train-0", job="llm-pretrain", gpus=8),
        t.pod("balloon-0", gpus=4, priority=-1000, priority_class="placeholder"),
        t.pod(
            "queued-0",
            node_name=None,
            phase="Pending",
            gpus=2,
            nominated_node_name="node-9",
            scheduled_at=None,
        ),
        t.pod("done-0", phase="Succeeded", finished_at="2026-11-02T08:30:00Z"),
        t.pod(
            "sidecar-0",
            containers=[
                t.container(requests={"nvidia.com/gpu": "2"}, limits={"nvidia.com/gpu": "2"})
            ],
            init_containers=[
                t.container("proxy", limits={"nvidia.com/gpu": "1"}, restart_policy="Always"),
                t.container(
                    "warmup", requests={"nvidia.com/gpu": "4"}, limits={"nvidia.com/gpu": "4"}
                ),
            ],
            overhead={"cpu": "250m", "nvidia.com/mig-1g.10gb": "1"},
        ),
        t.pod("daemon-0", gpus=0, deletion_timestamp="2026-11-02T09:00:30Z"),
    ]
    _, rows, rejected = build(PodDecoder, page("PodList", pods, resourceVersion="5"), attempt=2)
    assert rejected == []
    by_name = {r["pod_name"]: r for r in rows}

    train = by_name["train-0"]
    assert train["pod_uid"] == "uid-pod-team-a-train-0" and train["namespace"] == "team-a"
    assert train["node_name"] == "node-1" and train["phase"] == "Running"
    assert (train["owner_kind"], train["owner_name"], train["job_name"]) == (
        "Job",
        "llm-pretrain",
        "llm-pretrain",
    )
    assert train["gpus"] == 8
    assert train["gpu_requests"] == [{"resource_name": "nvidia.com/gpu", "gpus": 8}]
    assert (train["counted"], train["queued"], train["is_balloon"]) == (True, False, False)
    assert train["category"] == "workload"
    assert train["scheduled_at"] == datetime(2026, 11, 2, 8, 0, 0)
    assert train["started_at"] == datetime(2026, 11, 2, 8, 0, 5)
    assert train["finished_at"] is None
    assert train["priority"] == 0 and train["qos_class"] == "Burstable"
    assert train["list_attempt"] == 2

    balloon = by_name["balloon-0"]
    assert balloon["is_balloon"] and balloon["category"] == "balloon" and balloon["counted"]
    assert balloon["priority_class_name"] == "placeholder" and balloon["priority"] == -1000

    queued = by_name["queued-0"]
    assert queued["node_name"] is None and queued["nominated_node_name"] == "node-9"
    assert (queued["counted"], queued["queued"], queued["gpus"]) == (False, True, 2)
    assert queued["scheduled_at"] is None  # PodScheduled is False

    done = by_name["done-0"]
    assert (done["counted"], done["queued"]) == (False, False)
    assert done["finished_at"] == datetime(2026, 11, 2, 8, 30, 0)

    # main 2 + sidecar 1 = 3; warmup runs beside the sidecar: 4 + 1 = 5; plus no GPU overhead
    sidecar = by_name["sidecar-0"]
    assert sidecar["gpus"] == 5
    assert {r["resource_name"]: r["gpus"] for r in sidecar["gpu_requests"]} == {
        "nvidia.com/gpu": 5,
        "nvidia.com/mig-1g.10gb": 1,
    }

    daemon = by_name["daemon-0"]
    assert daemon["gpus"] == 0 and daemon["gpu_requests"] == []
    assert daemon["deletion_timestamp"] == datetime(2026, 11, 2, 9, 0, 30)
    assert daemon["counted"]  # terminating pods still count


def test_bad_gpu_quantity_rejects_only_that_pod_with_its_raw_bytes():
    bad = t.pod(
        "bad-0",
        containers=[
            t.container(requests={"nvidia.com/gpu": "0.5"}, limits={"nvidia.com/gpu": "0.5"})
        ],
    )
    body = page("PodList", [t.pod("good-0"), bad, t.pod("good-1")])
    _, rows, rejected = build(PodDecoder, body)
    assert [r["pod_name"] for r in rows] == ["good-0", "good-1"]
    assert len(rejected) == 1
    (rejection,) = rejected
    assert rejection.reason_code == "invalid_gpu_quantity"
    assert "team-a/bad-0" in rejection.locator and "0.5" in rejection.message
    assert json.loads(rejection.raw)["metadata"]["name"] == "bad-0"


def test_item_of_wrong_shape_is_salvaged_item_by_item():
    wrong = t.pod("wrong-0")
    wrong["spec"]["priority"] = "high"  # not an integer
    body = page("PodList", [t.pod("good-0"), wrong, t.pod("good-1")], resourceVersion="7")
    decoded, rows, rejected = build(PodDecoder, body)
    assert decoded.metadata.resource_version == "7"
    assert [r["pod_name"] for r in rows] == ["good-0", "good-1"]
    assert [r.reason_code for r in rejected] == ["invalid_object"]
    assert json.loads(rejected[0].raw)["spec"]["priority"] == "high"


def test_truncated_page_raises_decode_error():
    body = page("PodList", [t.pod("a"), t.pod("b")])
    with pytest.raises(msgspec.DecodeError):
        PodDecoder(CONTEXT).decode(body[: len(body) // 2])


def test_missing_uid_is_rejected():
    nameless = t.pod("x")
    del nameless["metadata"]["uid"]
    _, rows, rejected = build(PodDecoder, page("PodList", [nameless]))
    assert rows == [] and rejected[0].reason_code == "missing_identity"


def test_unparseable_timestamp_becomes_null_not_a_lost_page():
    odd = t.pod("odd")
    odd["metadata"]["creationTimestamp"] = "yesterday"
    _, rows, _ = build(PodDecoder, page("PodList", [t.pod("ok"), odd]))
    assert rows[0]["creation_timestamp"] == datetime(2026, 11, 2, 7, 59, 58)
    assert rows[1]["creation_timestamp"] is None


def test_jobs_priority_classes_events():
    finished = t.job("j2", active=0)
    finished["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
    finished["status"]["completionTime"] = "2026-11-02T08:10:00Z"
    finished["status"]["succeeded"] = 4
    _, jobs, _ = build(JobDecoder, page("JobList", [t.job("j1", active=3), finished]))
    assert jobs[0]["job_name"] == "j1" and jobs[0]["active"] == 3
    assert jobs[0]["parallelism"] == 3 and jobs[0]["finished_condition"] is None
    assert jobs[1]["finished_condition"] == "Complete" and jobs[1]["succeeded"] == 4
    assert jobs[1]["completed_at"] == datetime(2026, 11, 2, 8, 10, 0)

    _, classes, _ = build(
        PriorityClassDecoder,
        page(
            "PriorityClassList",
            [t.priority_class("placeholder", -1000), t.priority_class("high", 1000)],
        ),
    )
    assert [(c["priority_class_name"], c["value"], c["is_balloon"]) for c in classes] == [
        ("placeholder", -1000, True),
        ("high", 1000, False),
    ]

    series = t.event("e2", involved="p2")
    series["series"] = {"count": 12, "lastObservedTime": "2026-11-02T08:05:00.123456Z"}
    del series["lastTimestamp"]
    _, events, _ = build(EventDecoder, page("EventList", [t.event("e1"), series]))
    assert events[0]["involved_uid"] == "uid-pod-team-a-p1" and events[0]["count"] == 1
    assert events[0]["reporting_component"] == "default-scheduler"
    assert events[1]["count"] == 12
    assert events[1]["last_timestamp"] == datetime(2026, 11, 2, 8, 5, 0, 123456)


def test_schemas_cover_every_yielded_table():
    assert set(schema.SCHEMAS) == {
        "nodes",
        "pods",
        "jobs",
        "priority_classes",
        "events",
        "kueue_workloads",
        "kueue_cluster_queues",
        "kueue_local_queues",
        "kueue_resource_flavors",
        "resource_slices",
        "resource_claims",
        "resource_claim_templates",
        "rejected",
        "lists",
    }


def test_object_repeated_within_one_snapshot_is_kept_once_and_a_restart_resets():
    decoder = PodDecoder(CONTEXT)
    first = decoder.decode(page("PodList", [t.pod("a"), t.pod("b")]))
    again = decoder.decode(page("PodList", [t.pod("b"), t.pod("c")]))
    batch1, rejected1 = decoder.build(first, 0)
    batch2, rejected2 = decoder.build(again, 0)
    assert [r["pod_name"] for r in batch1.to_pylist()] == ["a", "b"]
    assert [r["pod_name"] for r in batch2.to_pylist()] == ["c"]
    assert rejected1 == []
    assert [r.reason_code for r in rejected2] == ["duplicate_object"]
    assert json.loads(rejected2[0].raw)["metadata"]["name"] == "b"
    # A restarted list (attempt 1) is a new snapshot: the same objects are welcome again.
    restarted, rejected3 = decoder.build(decoder.decode(page("PodList", [t.pod("a")])), 1)
    assert [r["pod_name"] for r in restarted.to_pylist()] == ["a"] and rejected3 == []

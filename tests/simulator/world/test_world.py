"""The simulated world: deterministic, realistic, varied, and a valid cluster state.

Expectations are computed here from the objects with the test's own small code (the
PodRequests rule, the scheduler's counting rule), never from annex or the generator.
"""

from __future__ import annotations

import datetime
import json
from collections import Counter, defaultdict

import orjson
import pytest
from kubernetes.client import ApiClient

from simulator.world import build_world

NODES = 60


@pytest.fixture(scope="module")
def world():
    return build_world(NODES, seed=7)


def gpu_resources(quantities: dict) -> dict[str, int]:
    return {k: int(v) for k, v in quantities.items() if k.startswith("nvidia.com/")}


def container_request(container: dict) -> dict[str, int]:
    """Extended resources: the request, falling back to the limit."""
    resources = container.get("resources", {})
    merged = {**gpu_resources(resources.get("limits", {}))}
    merged.update(gpu_resources(resources.get("requests", {})))
    return merged


def effective_request(pod: dict) -> dict[str, int]:
    """Upstream component-helpers PodRequests, for GPU resources (reference §4)."""
    spec = pod["spec"]
    total: Counter = Counter()
    for container in spec["containers"]:
        total.update(container_request(container))
    sidecars: Counter = Counter()
    init_peak: dict[str, int] = {}
    for container in spec.get("initContainers", []):
        request = container_request(container)
        if container.get("restartPolicy") == "Always":
            sidecars.update(request)
            use = dict(sidecars)
        else:
            use = dict(Counter(request) + sidecars)
        for resource, amount in use.items():
            init_peak[resource] = max(init_peak.get(resource, 0), amount)
    containers = total + sidecars
    effective = {
        r: max(containers.get(r, 0), init_peak.get(r, 0)) for r in set(containers) | set(init_peak)
    }
    for resource, amount in gpu_resources(spec.get("overhead", {})).items():
        effective[resource] = effective.get(resource, 0) + amount
    return {r: v for r, v in effective.items() if v}


def counted(pod: dict) -> bool:
    """The scheduler's filter: bound, and not Succeeded or Failed."""
    return bool(pod["spec"].get("nodeName")) and pod["status"]["phase"] not in (
        "Succeeded",
        "Failed",
    )


def test_same_seed_same_world_and_other_seed_differs():
    first, second = build_world(25, seed=3), build_world(25, seed=3)
    for name, items in first.objects().items():
        assert orjson.dumps(items) == orjson.dumps(second.objects()[name]), name
    assert [g.uuid for g in first.gpus] == [g.uuid for g in second.gpus]
    other = build_world(25, seed=4)
    assert [n["metadata"]["uid"] for n in other.nodes] != [
        n["metadata"]["uid"] for n in first.nodes
    ]


@pytest.mark.parametrize("nodes", [1, 2, 9, 60, 200])
def test_sizes(nodes):
    world = build_world(nodes, seed=1)
    assert len(world.nodes) == nodes
    assert len({n["metadata"]["name"] for n in world.nodes}) == nodes
    per_node = len(world.pods) / nodes
    if nodes >= 60:
        assert 8 <= per_node <= 14, per_node
    pod_sizes = [len(orjson.dumps(p)) for p in world.pods]
    assert min(pod_sizes) >= 2_000 and max(pod_sizes) <= 9_000
    gpu_node_sizes = [
        len(orjson.dumps(n))
        for n in world.nodes
        if "nvidia.com/gpu.product" in n["metadata"]["labels"]
    ]
    assert gpu_node_sizes and min(gpu_node_sizes) >= 7_000 and max(gpu_node_sizes) <= 20_000


def test_size_limits():
    with pytest.raises(ValueError):
        build_world(0)
    with pytest.raises(ValueError):
        build_world(7_501)


def test_names_uids_and_resource_versions_are_unique(world):
    everything = [o for items in world.objects().values() for o in items]
    uids = [o["metadata"]["uid"] for o in everything]
    assert len(uids) == len(set(uids))
    rvs = [int(o["metadata"]["resourceVersion"]) for o in everything]
    assert len(rvs) == len(set(rvs)) and max(rvs) == world.resource_version
    keys = [(o["metadata"].get("namespace"), o["metadata"]["name"]) for o in world.pods]
    assert len(keys) == len(set(keys))
    for item in everything:
        assert "kind" not in item and "apiVersion" not in item
        assert item["metadata"]["annotations"]["simulator.annex.dev/simulated"] == "true"


def test_no_node_is_over_allocated_by_the_scheduler_rule(world):
    allocatable = {
        n["metadata"]["name"]: gpu_resources(n["status"]["allocatable"]) for n in world.nodes
    }
    used: dict[str, Counter] = defaultdict(Counter)
    for pod in world.pods:
        if counted(pod):
            used[pod["spec"]["nodeName"]].update(effective_request(pod))
    assert used, "some pods must hold GPUs"
    for node, requests in used.items():
        for resource, amount in requests.items():
            assert amount <= allocatable[node].get(resource, 0), (node, resource, amount)
    # the generator's own bookkeeping agrees with the rule applied to its objects
    for node, resources in world.gpu_allocated.items():
        for resource, amount in resources.items():
            assert used[node].get(resource, 0) == amount, (node, resource)


def test_every_pod_phase_and_pending_kind_is_present(world):
    phases = Counter(p["status"]["phase"] for p in world.pods)
    assert set(phases) == {"Pending", "Running", "Succeeded", "Failed", "Unknown"}
    pending = [p for p in world.pods if p["status"]["phase"] == "Pending"]
    assert any(p["spec"].get("nodeName") for p in pending), "bound but not started"
    assert any(not p["spec"].get("nodeName") for p in pending), "queued"
    assert any(p["status"].get("nominatedNodeName") for p in pending)
    assert any("deletionTimestamp" in p["metadata"] for p in world.pods)
    for pod in world.pods:
        if pod["status"]["phase"] == "Succeeded":
            state = pod["status"]["containerStatuses"][0]["state"]["terminated"]
            assert state["exitCode"] == 0 and state["startedAt"] <= state["finishedAt"]
    assert any(p["status"].get("reason") == "Evicted" for p in world.pods)


def test_gpu_workload_variety(world):
    pods = world.pods
    balloons = [p for p in pods if p["spec"].get("priorityClassName") == "placeholder"]
    assert balloons and all(p["spec"]["priority"] == -1000 for p in balloons)
    assert any(effective_request(p).get("nvidia.com/gpu") for p in balloons if counted(p))
    assert any("nvidia.com/mig-3g.40gb" in effective_request(p) for p in pods)
    assert any(
        c.get("restartPolicy") == "Always" and container_request(c)
        for p in pods
        for c in p["spec"].get("initContainers", [])
    ), "a sidecar requesting GPUs"
    sidecar_pods = [
        p
        for p in pods
        if any(c.get("restartPolicy") == "Always" for c in p["spec"].get("initContainers", []))
    ]
    assert {effective_request(p)["nvidia.com/gpu"] for p in sidecar_pods} == {3}
    assert any("overhead" in p["spec"] and effective_request(p) for p in pods)
    limits_only = [
        p
        for p in pods
        for c in p["spec"]["containers"]
        if "nvidia.com/gpu" in c["resources"].get("limits", {})
        and "nvidia.com/gpu" not in c["resources"].get("requests", {})
    ]
    assert limits_only
    training = [
        p for p in pods if p["metadata"].get("ownerReferences", [{}])[0].get("kind") == "Job"
    ]
    assert any(p["metadata"]["labels"].get("training.annex.dev/run") for p in training)
    namespaces = {p["metadata"]["namespace"] for p in training}
    assert namespaces & {"team-llm", "team-vision", "team-speech", "research"}


def test_nodes_are_realistic_and_varied(world):
    labels = [n["metadata"]["labels"] for n in world.nodes]
    gpu_nodes = [n for n in world.nodes if "nvidia.com/gpu.product" in n["metadata"]["labels"]]
    assert len(gpu_nodes) < len(world.nodes), "a CPU-only system pool"
    products = {n["metadata"]["labels"]["nvidia.com/gpu.product"] for n in gpu_nodes}
    assert {"NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-SXM4-40GB"} <= products
    for node in gpu_nodes:
        node_labels = node["metadata"]["labels"]
        for key in ("gpu.count", "gpu.memory", "gpu.family", "cuda.driver.major", "mig.strategy"):
            assert f"nvidia.com/{key}" in node_labels
        assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in node[
            "spec"
        ]["taints"]
    strategies = {n["metadata"]["labels"]["nvidia.com/mig.strategy"] for n in gpu_nodes}
    assert {"none", "single", "mixed"} <= strategies
    assert any(
        k.startswith("nvidia.com/mig-") for n in world.nodes for k in n["status"]["allocatable"]
    )
    assert any("cloud.google.com/gce-topology-block" in x for x in labels)
    assert any("topology.k8s.aws/network-node-layer-3" in x for x in labels)
    assert any("network.topology.nvidia.com/leaf" in x for x in labels)
    assert any("nvidia.com/gpu.clique" in x for x in labels)
    assert any("topology.kubernetes.io/zone" not in x for x in labels), "some nodes lack labels"
    ready = Counter(
        next(c["status"] for c in n["status"]["conditions"] if c["type"] == "Ready")
        for n in world.nodes
    )
    assert ready["True"] and (ready["False"] + ready["Unknown"]) >= 1
    assert any(n["spec"].get("unschedulable") for n in world.nodes)
    assert any(
        int(n["status"]["allocatable"].get("nvidia.com/gpu", 0))
        < int(n["status"]["capacity"].get("nvidia.com/gpu", 0))
        for n in world.nodes
    ), "unhealthy GPUs"
    for node in world.nodes:
        assert len(node["status"]["images"]) <= 50


def test_gpu_uuids_match_the_nodes(world):
    uuids = [g.uuid for g in world.gpus]
    assert len(uuids) == len(set(uuids)) and all(u.startswith("GPU-") for u in uuids)
    by_node = Counter(g.node for g in world.gpus)
    for node in world.nodes:
        count = node["metadata"]["labels"].get("nvidia.com/gpu.count")
        if count and node["metadata"]["labels"]["nvidia.com/mig.strategy"] != "single":
            assert by_node[node["metadata"]["name"]] == int(count)


def test_jobs_priority_classes_and_events(world):
    job_names = {(j["metadata"]["namespace"], j["metadata"]["name"]) for j in world.jobs}
    for pod in world.pods:
        owner = pod["metadata"].get("ownerReferences", [{}])[0]
        if owner.get("kind") == "Job":
            assert (pod["metadata"]["namespace"], owner["name"]) in job_names
    conditions = {c["type"] for j in world.jobs for c in j["status"].get("conditions", [])}
    assert {"Complete", "Failed"} <= conditions
    values = {p["metadata"]["name"]: p["value"] for p in world.priority_classes}
    assert values["placeholder"] == -1000 and values["system-node-critical"] == 2000001000
    reasons = {e["reason"] for e in world.events}
    assert {"FailedScheduling", "Evicted", "NodeNotReady"} <= reasons


def _normalise(value):
    """Timestamps compare as instants: the client re-serialises them as +00:00 isoformat."""
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    if isinstance(value, str) and len(value) >= 20 and value[4:5] == "-" and value[10:11] == "T":
        try:
            return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
    return value


def _round_trip(api: ApiClient, item: dict, model: str) -> dict:
    text = json.dumps(item)
    try:
        obj = api.deserialize(text, model, "application/json")
    except TypeError:  # older generators take a response object
        obj = api.deserialize(type("FakeResponse", (), {"data": text})(), model)
    return api.sanitize_for_serialization(obj)


@pytest.mark.parametrize(
    ("resource", "model"),
    [
        ("nodes", "V1Node"),
        ("pods", "V1Pod"),
        ("jobs", "V1Job"),
        ("priorityclasses", "V1PriorityClass"),
        ("events", "CoreV1Event"),
        ("namespaces", "V1Namespace"),
    ],
)
def test_every_object_survives_the_kubernetes_client_models(resource, model):
    world = build_world(50, seed=11)
    api = ApiClient()
    items = world.objects()[resource]
    assert items
    for item in items:
        assert _normalise(_round_trip(api, item, model)) == _normalise(item), item["metadata"][
            "name"
        ]

"""The opt-in world features (DRA, shared GPUs, Kueue): off by default, faithful when on.

Shapes: every resource.k8s.io/v1 object and every pod survives a round trip through the
`kubernetes` client's models (fields it does not know would be dropped); the CRDs carry the
fields their upstream schemas require (kueue.x-k8s.io/v1beta1 CRDs in kubernetes-sigs/kueue
config/components/crd/bases; ComputeDomain in NVIDIA/k8s-dra-driver-gpu
deployments/helm/.../crds/resource.nvidia.com_computedomains.yaml).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from datetime import timedelta

import pytest
from kubernetes import client

from simulator.world import build_world
from simulator.world.features import FEATURES, extra_nodes, feature_pools
from simulator.world.truth import gpu_holdings, node_gpus, queue_quotas, queued_workloads
from simulator.world.workloads import gpu_need

ALL = frozenset(FEATURES)
NODES = 60
HAMI_ONLY = ("nvidia.com/gpucores", "nvidia.com/gpumem")
SEED = 4


@pytest.fixture(scope="module")
def world():
    return build_world(NODES, seed=SEED, features=ALL)


def _by_name(items: list[dict]) -> dict[tuple[str, str], dict]:
    return {(i["metadata"].get("namespace", ""), i["metadata"]["name"]): i for i in items}


# ---- off by default -------------------------------------------------------------------------


def test_default_world_has_no_feature_objects_and_ignores_empty_features():
    plain = build_world(30, seed=SEED)
    assert build_world(30, seed=SEED, features=()) == plain
    assert build_world(30, seed=SEED, features=None) == plain
    for name in (
        "device_classes",
        "resource_slices",
        "resource_claims",
        "resource_claim_templates",
        "compute_domains",
        "resource_flavors",
        "cluster_queues",
        "local_queues",
        "workloads",
        "feature_holdings",
        "queued_workloads",
        "queue_quotas",
    ):
        assert getattr(plain, name) == [], name
    assert plain.gpu_sharing == {} and plain.features == frozenset()


def test_feature_world_starts_with_the_default_world_of_the_remaining_nodes(world):
    base = build_world(NODES - extra_nodes(NODES, ALL), seed=SEED)
    assert len(world.nodes) == NODES
    assert world.nodes[: len(base.nodes)] == base.nodes
    assert world.pods[: len(base.pods)] == base.pods
    assert world.jobs[: len(base.jobs)] == base.jobs
    assert world.events[: len(base.events)] == base.events
    assert world.gpus[: len(base.gpus)] == base.gpus
    assert world.training_runs[: len(base.training_runs)] == base.training_runs
    assert world.resource_version > base.resource_version
    versions = [
        int(o["metadata"]["resourceVersion"]) for items in world.objects().values() for o in items
    ]
    assert len(versions) == len(set(versions)) and max(versions) == world.resource_version


def test_unknown_feature_and_too_few_nodes_are_refused():
    with pytest.raises(ValueError, match="unknown world features"):
        build_world(40, features={"gpudirect"})
    with pytest.raises(ValueError, match="need"):
        build_world(5, features=ALL)


def test_feature_pools_grow_with_the_cluster():
    small = dict((p.name, n) for p, n in feature_pools(60, ALL))
    large = dict((p.name, n) for p, n in feature_pools(7500, ALL))
    assert small["h100-dra"] == 3 and large["h100-dra"] == 150
    assert extra_nodes(7500, ALL) < 7500 * 0.07


# ---- round trips through the kubernetes client's models ---------------------------------------

_API = client.ApiClient()
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|\+00:00)$")


def _normal(value):
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, str) and _TIME.match(value):
        return value.replace("+00:00", "Z").split(".")[0].removesuffix("Z") + "Z"
    return value


def _round_trip(obj: dict, api_version: str, kind: str, model: str) -> None:
    body = {"apiVersion": api_version, "kind": kind, **obj}
    parsed = _API._ApiClient__deserialize(body, model)  # what the client does with a response
    back = _API.sanitize_for_serialization(parsed)
    assert _normal(back) == _normal(body), f"{kind} {obj['metadata']['name']}"


@pytest.mark.parametrize(
    ("attribute", "kind", "model"),
    [
        ("device_classes", "DeviceClass", "V1DeviceClass"),
        ("resource_slices", "ResourceSlice", "V1ResourceSlice"),
        ("resource_claims", "ResourceClaim", "ResourceV1ResourceClaim"),
        ("resource_claim_templates", "ResourceClaimTemplate", "V1ResourceClaimTemplate"),
    ],
)
def test_dra_objects_survive_the_client_models(world, attribute, kind, model):
    items = getattr(world, attribute)
    assert items
    for obj in items:
        _round_trip(obj, "resource.k8s.io/v1", kind, model)


def test_feature_pods_nodes_and_jobs_survive_the_client_models(world):
    base = build_world(NODES - extra_nodes(NODES, ALL), seed=SEED)
    for obj in world.pods[len(base.pods) :]:
        _round_trip(obj, "v1", "Pod", "V1Pod")
    for obj in world.nodes[len(base.nodes) :]:
        _round_trip(obj, "v1", "Node", "V1Node")
    for obj in world.jobs[len(base.jobs) :]:
        _round_trip(obj, "batch/v1", "Job", "V1Job")


# required fields per the upstream CRD schemas (path -> required keys; "[]" = each item)
_REQUIRED = {
    "ComputeDomain": {
        "": ["spec"],
        "spec": ["numNodes", "channel"],
        "spec.channel": ["resourceClaimTemplate"],
        "spec.channel.resourceClaimTemplate": ["name"],
        "status.nodes[]": ["name", "ipAddress", "cliqueID", "index"],
    },
    "ResourceFlavor": {"": ["spec"]},
    "ClusterQueue": {
        "spec.resourceGroups[]": ["coveredResources", "flavors"],
        "spec.resourceGroups[].flavors[]": ["name", "resources"],
        "spec.resourceGroups[].flavors[].resources[]": ["name", "nominalQuota"],
        "status.flavorsUsage[]": ["name", "resources"],
        "status.flavorsUsage[].resources[]": ["name"],
        "status.flavorsReservation[]": ["name", "resources"],
        "status.conditions[]": ["type", "status", "lastTransitionTime", "reason", "message"],
    },
    "LocalQueue": {
        "spec": ["clusterQueue"],
        "status.flavorUsage[]": ["name", "resources"],
        "status.flavorsReservation[]": ["name", "resources"],
        "status.conditions[]": ["type", "status", "lastTransitionTime", "reason", "message"],
    },
    "Workload": {
        "spec": ["podSets"],
        "spec.podSets[]": ["name", "template", "count"],
        "spec.podSets[].template": ["spec"],
        "status.admission": ["clusterQueue", "podSetAssignments"],
        "status.admission.podSetAssignments[]": ["name"],
        "status.conditions[]": ["type", "status", "lastTransitionTime", "reason", "message"],
    },
}


def _at(obj, path: str) -> list:
    nodes = [obj]
    for part in [p for p in path.split(".") if p]:
        many = part.endswith("[]")
        key = part.removesuffix("[]")
        nodes = [n[key] for n in nodes if isinstance(n, dict) and key in n]
        if many:
            nodes = [item for n in nodes for item in n]
    return nodes


@pytest.mark.parametrize(
    ("attribute", "kind"),
    [
        ("compute_domains", "ComputeDomain"),
        ("resource_flavors", "ResourceFlavor"),
        ("cluster_queues", "ClusterQueue"),
        ("local_queues", "LocalQueue"),
        ("workloads", "Workload"),
    ],
)
def test_crd_objects_carry_the_fields_their_schemas_require(world, attribute, kind):
    items = getattr(world, attribute)
    assert items
    for obj in items:
        for path, keys in _REQUIRED[kind].items():
            for node in _at(obj, path):
                missing = [k for k in keys if k not in node]
                assert not missing, f"{kind} {obj['metadata']['name']} {path}: {missing}"
    for workload in world.workloads:  # each pod set's template is a valid PodTemplateSpec
        for pod_set in workload["spec"]["podSets"]:
            _round_trip(
                {"metadata": {"name": pod_set["name"]}, "template": pod_set["template"]},
                "v1",
                "PodTemplate",
                "V1PodTemplate",
            )


# ---- DRA -----------------------------------------------------------------------------------


def test_dra_nodes_advertise_no_gpu_extended_resource(world):
    dra_nodes = [n for n in world.nodes if world.node_pools[n["metadata"]["name"]].endswith("-dra")]
    dra_nodes += [
        n for n in world.nodes if world.node_pools[n["metadata"]["name"]] == "a100-dra-mig"
    ]
    assert dra_nodes
    for node in dra_nodes:
        for key in ("capacity", "allocatable"):
            assert not [r for r in node["status"][key] if r.startswith("nvidia.com/")]
        assert node["metadata"]["labels"]["nvidia.com/gpu.deploy.device-plugin"] == "false"


def test_claims_allocate_published_devices_to_pods_that_name_them(world):
    devices = {
        (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]): d
        for s in world.resource_slices
        for d in s["spec"]["devices"]
    }
    for s in world.resource_slices:
        assert s["spec"]["pool"]["name"] == s["spec"]["nodeName"]
    pods = _by_name(world.pods)
    taken: Counter = Counter()
    for claim in world.resource_claims:
        meta = claim["metadata"]
        status = claim.get("status")
        if status is None:  # the waiting pod's claim
            continue
        node = status["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0][
            "values"
        ][0]
        for result in status["allocation"]["devices"]["results"]:
            key = (result["driver"], result["pool"], result["device"])
            assert key in devices and result["pool"] == node
            taken[key] += 1
        for ref in status["reservedFor"]:
            pod = pods[(meta["namespace"], ref["name"])]
            assert pod["metadata"]["uid"] == ref["uid"] and pod["spec"]["nodeName"] == node
            named = {c.get("resourceClaimName") for c in pod["spec"]["resourceClaims"]}
            named |= {
                s["resourceClaimName"] for s in pod["status"].get("resourceClaimStatuses", [])
            }
            assert meta["name"] in named
    assert taken and max(taken.values()) == 1  # no device in two claims


def test_dra_cases_are_all_there(world):
    claims = world.resource_claims
    shared = [c for c in claims if len(c.get("status", {}).get("reservedFor", [])) == 2]
    assert len(shared) == 1 and "generateName" not in shared[0]["metadata"]
    assert [c for c in claims if "status" not in c], "a claim still waiting for allocation"
    mig = [
        r
        for c in claims
        for r in c.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])
        if "-mig-" in r["device"]
    ]
    assert {r["device"].split("-mig-")[1].rsplit("-", 1)[0] for r in mig} == {"1g10gb", "3g40gb"}
    (domain,) = world.compute_domains
    nodes = {n["name"] for n in domain["status"]["nodes"]}
    assert len(nodes) == domain["spec"]["numNodes"] >= 2
    channel = [
        c
        for c in claims
        if c.get("status", {}).get("allocation", {}).get("devices", {}).get("config")
    ]
    assert {c["status"]["allocation"]["devices"]["results"][0]["pool"] for c in channel} == nodes
    config = channel[0]["status"]["allocation"]["devices"]["config"][0]["opaque"]["parameters"]
    assert config["domainID"] == domain["metadata"]["uid"]
    # DRA pods hold GPUs only through claims: no nvidia.com/ resource in any container
    claimed = {
        (c["metadata"]["namespace"], r["name"])
        for c in claims
        for r in c.get("status", {}).get("reservedFor", [])
    }
    for key in claimed:
        pod = _by_name(world.pods)[key]
        for spec in pod["spec"]["containers"]:
            resources = spec.get("resources", {})
            assert not [r for r in resources.get("requests", {}) if r.startswith("nvidia.com/")]
            assert not [r for r in resources.get("limits", {}) if r.startswith("nvidia.com/")]


# ---- shared GPUs ---------------------------------------------------------------------------


def test_time_sliced_and_mps_nodes_advertise_replicas_with_gfd_labels(world):
    seen = set()
    for node in world.nodes:
        labels = node["metadata"]["labels"]
        strategy = labels.get("nvidia.com/gpu.sharing-strategy")
        if strategy in ("time-slicing", "mps"):
            replicas = int(labels["nvidia.com/gpu.replicas"])
            assert (strategy, replicas) in (("time-slicing", 4), ("mps", 2))
            assert labels["nvidia.com/gpu.count"] == "8"
            assert labels["nvidia.com/gpu.product"].endswith("-SHARED")
            assert node["status"]["capacity"]["nvidia.com/gpu"] == str(8 * replicas)
            seen.add(strategy)
    assert seen == {"time-slicing", "mps"}


def test_hami_pods_ask_for_a_fraction_of_one_gpu(world):
    hami = [p for p in world.pods if p["spec"]["schedulerName"] == "hami-scheduler"]
    cores = sorted(
        int(p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpucores"])
        for p in hami
    )
    assert cores == [25, 50]
    assert {
        p["metadata"]["annotations"]["hami.io/vgpu-devices-allocated"].split(",")[0] for p in hami
    } == {h.gpu_uuid for h in gpu_holdings(world) if h.mechanism == "hami"}


# ---- ground truth ------------------------------------------------------------------------


def test_holdings_cover_each_mechanism_and_never_exceed_a_gpu(world):
    holdings = gpu_holdings(world)
    assert {h.mechanism for h in holdings} == {
        "device-plugin",
        "dra",
        "time-slicing",
        "mps",
        "hami",
    }
    gpus = {g.uuid: g for g in world.gpus}
    used: defaultdict[str, float] = defaultdict(float)
    for h in holdings:
        assert gpus[h.gpu_uuid].node == h.node
        used[h.gpu_uuid] += h.shares / h.shares_per_gpu
    assert max(used.values()) <= 1 + 1e-9
    sliced = [h for h in holdings if h.mechanism == "time-slicing"]
    assert {h.shares_per_gpu for h in sliced} == {4}
    pods = _by_name(world.pods)
    for h in holdings:
        pod = pods[(h.namespace, h.pod)]
        assert pod["spec"]["nodeName"] == h.node
        assert pod["status"]["phase"] not in ("Succeeded", "Failed")


def test_shared_replicas_add_up_to_what_the_pods_request(world):
    pods = _by_name(world.pods)
    by_pod: Counter = Counter()
    for h in gpu_holdings(world):
        if h.mechanism in ("time-slicing", "mps"):
            by_pod[(h.namespace, h.pod)] += h.shares
    assert by_pod
    for key, shares in by_pod.items():
        requests = pods[key]["spec"]["containers"][0]["resources"]["requests"]
        assert int(requests["nvidia.com/gpu"]) == shares


def test_default_world_holdings_are_device_plugin_only():
    plain = build_world(30, seed=SEED)
    holdings = gpu_holdings(plain)
    assert holdings and {h.mechanism for h in holdings} == {"device-plugin"}
    assert queued_workloads(plain) == [] and queue_quotas(plain) == []


# ---- Kueue ---------------------------------------------------------------------------------


def test_a_workload_queued_three_hours_then_admitted(world):
    waited = [
        w
        for w in queued_workloads(world)
        if w.admitted and w.admitted - w.created == timedelta(hours=3)
    ]
    assert len(waited) == 1 and waited[0].state == "admitted"
    obj = _by_name(world.workloads)[(waited[0].namespace, waited[0].name)]
    conditions = {c["type"]: c for c in obj["status"]["conditions"]}
    assert obj["metadata"]["creationTimestamp"] == "2026-11-02T04:00:00Z"
    assert conditions["Admitted"]["lastTransitionTime"] == "2026-11-02T07:00:00Z"


def test_borrowing_above_nominal_quota_shows_in_status(world):
    quotas = {q.cluster_queue: q for q in queue_quotas(world)}
    assert quotas["team-llm"].borrowed == quotas["team-llm"].used - quotas["team-llm"].nominal > 0
    assert quotas["team-llm"].borrowed <= quotas["team-llm"].borrowing_limit
    assert quotas["team-vision"].borrowed == 0
    queues = _by_name(world.cluster_queues)
    usage = queues[("", "team-llm")]["status"]["flavorsUsage"][0]["resources"]
    gpu = next(r for r in usage if r["name"] == "nvidia.com/gpu")
    assert gpu == {
        "name": "nvidia.com/gpu",
        "total": str(quotas["team-llm"].used),
        "borrowed": str(quotas["team-llm"].borrowed),
    }


def test_workloads_agree_with_jobs_and_pods(world):
    jobs = _by_name(world.jobs)
    running: Counter = Counter()
    for pod in world.pods:
        owner = (pod["metadata"].get("ownerReferences") or [{}])[0]
        if owner.get("kind") == "Job" and pod["status"]["phase"] == "Running":
            running[(pod["metadata"]["namespace"], owner["name"])] += 1
    states = Counter()
    for truth in queued_workloads(world):
        states[truth.state] += 1
        job = jobs[(truth.namespace, truth.job)]
        assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == truth.local_queue
        if truth.state == "admitted":
            assert running[(truth.namespace, truth.job)] * 8 == truth.gpus
            assert not job["spec"]["suspend"]
        elif truth.state in ("queued", "preempted"):
            assert job["spec"]["suspend"] and running[(truth.namespace, truth.job)] == 0
    assert set(states) == {"admitted", "queued", "preempted", "finished"}
    used = Counter()
    for truth in queued_workloads(world):
        if truth.state == "admitted":
            used[truth.cluster_queue] += truth.gpus
    assert used == {q.cluster_queue: q.used for q in queue_quotas(world)}
    preempted = next(
        w for w in world.workloads if any(c["type"] == "Evicted" for c in w["status"]["conditions"])
    )
    evicted = next(c for c in preempted["status"]["conditions"] if c["type"] == "Evicted")
    assert evicted["status"] == "True" and evicted["reason"] == "Preempted"
    assert "admission" not in preempted["status"]


# ---- the world's usual invariants hold with the features on ---------------------------------


def test_names_uids_versions_unique_and_no_node_over_allocated(world):
    everything = [o for items in world.objects().values() for o in items]
    uids = [o["metadata"]["uid"] for o in everything]
    assert len(uids) == len(set(uids))
    for plural, items in world.objects().items():
        keys = [(o["metadata"].get("namespace"), o["metadata"]["name"]) for o in items]
        assert len(keys) == len(set(keys)), plural
    for item in everything:
        assert "kind" not in item and "apiVersion" not in item
        assert item["metadata"]["annotations"]["simulator.annex.dev/simulated"] == "true"
    allocatable = {n["metadata"]["name"]: n["status"]["allocatable"] for n in world.nodes}
    used: defaultdict[str, Counter] = defaultdict(Counter)
    for pod in world.pods:
        node = pod["spec"].get("nodeName")
        if not node or pod["status"]["phase"] in ("Succeeded", "Failed"):
            continue
        need = gpu_need(
            pod["spec"]["containers"],
            pod["spec"].get("initContainers", []),
            pod["spec"].get("overhead"),
        )
        # HAMi's gpucores/gpumem are its scheduler's to check, never node resources
        used[node].update({k: v for k, v in need.items() if k not in HAMI_ONLY})
    for node, requests in used.items():
        for resource, amount in requests.items():
            assert amount <= int(allocatable[node].get(resource, 0)), (node, resource)
    for node, resources in world.gpu_allocated.items():
        for resource, amount in resources.items():
            assert used[node].get(resource, 0) == amount, (node, resource)


def test_telemetry_sees_gpus_held_through_claims_and_shares_as_busy(world):
    from simulator.world.activity import gpu_activity

    roles = {a.gpu.uuid: a for a in gpu_activity(world)}
    for holding in gpu_holdings(world):
        if holding.mechanism != "device-plugin":
            activity = roles[holding.gpu_uuid]
            assert activity.role not in ("free", "unavailable"), holding
            assert activity.pod is not None


def test_node_gpus_separate_physical_gpus_from_advertised_shares(world):
    nodes = {n["metadata"]["name"]: n for n in world.nodes}
    seen = set()
    for name, gpus in node_gpus(world).items():
        allocatable = nodes[name]["status"]["allocatable"]
        seen.add((gpus.allocation, gpus.sharing))
        if gpus.allocation == "dra":
            assert "nvidia.com/gpu" not in allocatable and gpus.shares_per_gpu == 1
        elif gpus.sharing != "none":
            assert int(allocatable["nvidia.com/gpu"]) == gpus.physical_gpus * gpus.shares_per_gpu
    assert {
        ("dra", "none"),
        ("device-plugin", "none"),
        ("device-plugin", "time-slicing"),
        ("device-plugin", "mps"),
        ("device-plugin", "hami"),
    } <= seen
    sliced = next(g for g in node_gpus(world).values() if g.sharing == "time-slicing")
    assert (sliced.physical_gpus, sliced.physical_gpus * sliced.shares_per_gpu) == (8, 32)

"""What the simulated GPUs do (simulator.world.activity) and the probe Job that measured them.

Expectations come from the world's API objects and this file's own small code (the
scheduler's counting rule, the FLOP/byte formulas, the reference peak table), never from the
generator's bookkeeping.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from datetime import datetime, timedelta

import orjson
import pytest

from simulator.world import build_world
from simulator.world.activity import DEGRADED_KINDS, ROLES, degraded_gpus, gpu_activity

NODES = 80
PROBES = "annex-probes"
# dense peaks of reference §2.2: product -> (bf16 TFLOP/s, fp8 TFLOP/s, HBM GB/s)
PEAKS = {
    "NVIDIA-H100-80GB-HBM3": (989.4, 1978.9, 3350.0),
    "NVIDIA-A100-SXM4-80GB": (312.0, None, 2039.0),
    "NVIDIA-A100-SXM4-40GB": (312.0, None, 1555.0),
}
DTYPE_BYTES = {"fp8": 1, "bf16": 2, "fp32": 4}
DCGM_NAMES = {  # GFD product label -> DCGM modelName
    "NVIDIA-H100-80GB-HBM3": "NVIDIA H100 80GB HBM3",
    "NVIDIA-A100-SXM4-80GB": "NVIDIA A100-SXM4-80GB",
    "NVIDIA-A100-SXM4-40GB": "NVIDIA A100-SXM4-40GB",
    "NVIDIA-GB200": "NVIDIA GB200",
}


@pytest.fixture(scope="module")
def world():
    return build_world(NODES, seed=21)


@pytest.fixture(scope="module")
def activity(world):
    return gpu_activity(world)


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def gpu_request(pod: dict) -> dict[str, int]:
    """Effective extended-resource request (PodRequests rule, reference §4)."""

    def request(container: dict) -> Counter:
        resources = container.get("resources", {})
        merged = {**resources.get("limits", {}), **resources.get("requests", {})}
        return Counter({k: int(v) for k, v in merged.items() if k.startswith("nvidia.com/")})

    spec = pod["spec"]
    total = sum((request(c) for c in spec["containers"]), Counter())
    sidecars: Counter = Counter()
    peak: Counter = Counter()
    for container in spec.get("initContainers", []):
        if container.get("restartPolicy") == "Always":
            sidecars += request(container)
            peak |= sidecars
        else:
            peak |= request(container) + sidecars
    effective = (total + sidecars) | peak
    effective += Counter(
        {k: int(v) for k, v in spec.get("overhead", {}).items() if k.startswith("nvidia.com/")}
    )
    return dict(effective)


def holding(pod: dict) -> bool:
    return bool(pod["spec"].get("nodeName")) and pod["status"]["phase"] not in (
        "Succeeded",
        "Failed",
    )


def node_labels(world) -> dict[str, dict]:
    return {n["metadata"]["name"]: n["metadata"]["labels"] for n in world.nodes}


# ---- activity ------------------------------------------------------------------------------


def test_deterministic_cached_and_in_gpu_order(world, activity):
    assert [a.gpu for a in activity] == world.gpus
    assert gpu_activity(world) is activity
    again = gpu_activity(build_world(NODES, seed=21))
    assert [(a.gpu.uuid, a.role, a.since, a.pod, a.degraded) for a in again] == [
        (a.gpu.uuid, a.role, a.since, a.pod, a.degraded) for a in activity
    ]
    other = gpu_activity(build_world(NODES, seed=22))
    assert {a.gpu.uuid for a in other if a.degraded} != {a.gpu.uuid for a in activity if a.degraded}


def test_roles_follow_the_pods_holding_the_gpus(world, activity):
    assert {a.role for a in activity} <= set(ROLES)
    assert {"training", "inference", "idle", "balloon", "free", "unavailable"} <= {
        a.role for a in activity
    }
    pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in world.pods}
    now = world.now.timestamp()
    for a in activity:
        assert (a.role == "unavailable") == (not a.gpu.healthy)
        assert a.since <= now and a.driver_loaded_at <= now
        if a.role in ("free", "unavailable"):
            assert a.pod is None and a.namespace is None and a.container is None
            continue
        pod = pods[(a.namespace, a.pod)]
        assert holding(pod) and pod["spec"]["nodeName"] == a.gpu.node
        assert gpu_request(pod)
        assert a.container in {c["name"] for c in pod["spec"]["containers"]} | {
            c["name"] for c in pod["spec"].get("initContainers", [])
        }
        labels = pod["metadata"].get("labels", {})
        if a.role == "balloon":
            assert pod["spec"]["priority"] < 0
        elif pod["status"]["phase"] == "Pending":
            assert a.role == "idle"
        elif "training.annex.dev/run" in labels:
            assert a.role == "training"
        elif pod["metadata"]["namespace"] == "inference":
            assert a.role == "inference"
        if not a.gpu.mig_devices:
            assert a.since == epoch(pod["status"]["startTime"])


def test_whole_gpus_held_match_the_scheduler_rule(world, activity):
    """Per node, GPUs with a pod == nvidia.com/gpu held by bound, non-terminal pods."""
    single = {
        name for name, labels in node_labels(world).items()
        if labels.get("nvidia.com/mig.strategy") == "single"
    }  # fmt: skip
    held: Counter = Counter()
    for pod in world.pods:
        if holding(pod) and pod["spec"]["nodeName"] not in single:
            held[pod["spec"]["nodeName"]] += gpu_request(pod).get("nvidia.com/gpu", 0)
    with_pod = Counter(a.gpu.node for a in activity if a.pod and not a.gpu.mig_devices)
    assert +held == +with_pod
    # a pod's GPUs are consecutive healthy indices on its node
    by_pod: dict[str, list[int]] = defaultdict(list)
    for a in activity:
        if a.pod and not a.gpu.mig_devices:
            by_pod[a.pod].append(a.gpu.index)
    for indices in by_pod.values():
        assert indices == list(range(indices[0], indices[0] + len(indices)))


def test_mig_gpus_take_their_role_from_their_mig_devices(world, activity):
    mig = [a for a in activity if a.gpu.mig_devices and a.gpu.healthy]
    assert mig
    assert {a.role for a in mig} <= {"research", "idle", "free"}
    assert any(a.role != "free" for a in mig) and any(a.role == "free" for a in mig)
    pods = {p["metadata"]["name"]: p for p in world.pods}
    for a in mig:
        if a.pod:
            request = gpu_request(pods[a.pod])
            assert any(k.startswith("nvidia.com/mig-") or k == "nvidia.com/gpu" for k in request)


def test_degraded_gpus_of_each_kind_including_probed_ones(world, activity):
    degraded = [a for a in activity if a.degraded]
    healthy = sum(1 for a in activity if a.gpu.healthy)
    assert max(3, round(0.01 * healthy)) == len(degraded)
    assert all(a.gpu.healthy for a in degraded)
    assert degraded_gpus(world) == {a.gpu.uuid: a.degraded for a in degraded}
    probed = set(world.probe_pods)
    for kind in DEGRADED_KINDS:
        assert any(a.degraded == kind and a.gpu.node in probed for a in degraded), kind


def test_tiny_worlds_have_no_degraded_gpus():
    tiny = build_world(5, seed=1)
    assert not any(a.degraded for a in gpu_activity(tiny))


def test_driver_loads_and_exporter_generations(world, activity):
    now = world.now.timestamp()
    by_node: dict[str, set] = defaultdict(set)
    for a in activity:
        by_node[a.gpu.node].add((a.driver_loaded_at, a.exporter_generation, a.driver_version))
    assert all(len(values) == 1 for values in by_node.values()), "per node"
    loads = [next(iter(v))[0] for v in by_node.values()]
    assert any(now - 3600 < t < now - 600 for t in loads), "one reload inside the last hour"
    assert sum(1 for t in loads if now - t < 2 * 86400) >= 1
    labels = node_labels(world)
    for node, values in by_node.items():
        (_loaded, _generation, driver) = next(iter(values))
        assert driver == labels[node]["nvidia.com/cuda.driver-version.full"]
    pools: dict[str, set] = defaultdict(set)
    for a in activity:
        pools[world.node_pools[a.gpu.node]].add(a.exporter_generation)
    assert all(len(g) == 1 for g in pools.values())
    assert {"4.8", "4.9"} == set().union(*pools.values())


# ---- the probe Job -------------------------------------------------------------------------


def probe_pods(world) -> list[dict]:
    return [p for p in world.pods if p["metadata"]["namespace"] == PROBES]


def test_probe_job_runs_once_on_every_ready_full_gpu_node(world):
    (job,) = [j for j in world.jobs if j["metadata"]["namespace"] == PROBES]
    name = job["metadata"]["name"]
    assert name == world.probe_job
    created = datetime.strptime(name.removeprefix("annex-gpubench-"), "%Y%m%d%H%M")
    assert job["metadata"]["creationTimestamp"] == created.strftime("%Y-%m-%dT%H:%M:00Z")
    spec, status = job["spec"], job["status"]
    assert spec["completionMode"] == "Indexed" and spec["activeDeadlineSeconds"] > 0
    assert {c["type"] for c in status["conditions"]} == {"Complete", "SuccessCriteriaMet"}
    assert any(n["metadata"]["name"] == PROBES for n in world.namespaces)
    expected = set()
    for node in world.nodes:
        labels = node["metadata"]["labels"]
        ready = any(
            c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"]
        )
        if (
            labels.get("nvidia.com/mig.strategy") == "none"
            and ready
            and not node["spec"].get("unschedulable")
        ):
            expected.add(node["metadata"]["name"])
    pods = probe_pods(world)
    assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(expected)
    assert status["succeeded"] == spec["completions"] == len(pods)
    assert world.probe_pods == {p["spec"]["nodeName"]: p["metadata"]["name"] for p in pods}
    indices = sorted(int(p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"])
                     for p in pods)  # fmt: skip
    assert indices == list(range(len(pods)))


def test_probe_pods_are_low_priority_pinned_and_hold_nothing(world):
    classes = {c["metadata"]["name"]: c["value"] for c in world.priority_classes}
    workload = [v for n, v in classes.items() if n not in ("placeholder", "annex-probe")]
    now = world.now
    allocatable = {n["metadata"]["name"]: n["status"]["allocatable"] for n in world.nodes}
    for pod in probe_pods(world):
        metadata, spec, status = pod["metadata"], pod["spec"], pod["status"]
        labels = metadata["labels"]
        assert labels["app.kubernetes.io/name"] == "annex-gpubench"
        assert labels["app.kubernetes.io/component"] == "probe"
        assert labels["batch.kubernetes.io/job-name"] == world.probe_job
        assert metadata["ownerReferences"][0]["name"] == world.probe_job
        assert [c["name"] for c in spec["containers"]] == ["gpubench"]
        assert classes["placeholder"] < spec["priority"] <= min(workload)
        assert spec["priority"] >= 0, "annex's balloon rule counts pods below 0 as balloons"
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        fields = terms["nodeSelectorTerms"][0]["matchFields"][0]
        assert fields["values"] == [spec["nodeName"]]
        assert any(t.get("key") == "nvidia.com/gpu" for t in spec["tolerations"])
        request = gpu_request(pod)["nvidia.com/gpu"]
        assert request == int(allocatable[spec["nodeName"]]["nvidia.com/gpu"])
        assert status["phase"] == "Succeeded" and not holding(pod)
        (container,) = status["containerStatuses"]
        state = container["state"]["terminated"]
        assert state["exitCode"] == 0 and state["reason"] == "Completed"
        started, finished = epoch(state["startedAt"]), epoch(state["finishedAt"])
        assert now - timedelta(hours=2.5) < datetime.fromtimestamp(started, now.tzinfo)
        assert started < finished < (now - timedelta(hours=1.5)).timestamp()


# ---- the probe logs ------------------------------------------------------------------------


def records_of(text: str) -> tuple[list[dict], list[str]]:
    records, bad = [], []
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            bad.append(line)
    return records, bad


def test_logs_hold_one_record_per_healthy_gpu_and_benchmark(world, activity):
    degraded = {a.gpu.uuid: a.degraded for a in activity if a.degraded}
    gpus = {g.uuid: g for g in world.gpus}
    faulty = {f.pod for f in world.probe_faults.values()}
    assert len(faulty) == 1
    gemm: dict[tuple, list[tuple[float, str]]] = defaultdict(list)
    for pod in probe_pods(world):
        name, node = pod["metadata"]["name"], pod["spec"]["nodeName"]
        text = world.pod_logs[(PROBES, name)]
        assert text == world.pod_logs[(PROBES, name)], "rendered the same every time"
        lines = text.splitlines()
        assert any(line.startswith("[gpubench] compiling") for line in lines)
        records, bad = records_of(text)
        if name in faulty:
            continue
        assert not bad
        healthy = [g for g in world.gpus_on(node) if g.healthy]
        product = healthy[0].product
        benchmarks = Counter((r["benchmark"], r["dtype"]) for r in records)
        fp8 = product in ("NVIDIA-H100-80GB-HBM3", "NVIDIA-GB200")
        assert set(benchmarks) == {
            ("gemm", "bf16"),
            *([("gemm", "fp8")] if fp8 else []),
            ("copy", "fp32"),
            ("triad", "fp32"),
            ("softmax", "bf16"),
            ("layernorm", "bf16"),
        }
        assert set(benchmarks.values()) == {len(healthy)}
        assert len({r["record_id"] for r in records}) == len(records)
        for r in records:
            check_record(r, pod, gpus, product)
            if r["benchmark"] == "gemm" and r["dtype"] == "bf16":
                gemm[(product,)].append((r["achieved_tflops"], degraded.get(r["gpu_uuid"], "")))
    # a slow GPU stands out of its cohort; healthy ones sit close to the median
    for values in gemm.values():
        median = statistics.median(v for v, _ in values)
        for value, kind in values:
            if kind == "slow":
                assert value < 0.7 * median
            elif not kind:
                assert 0.95 * median < value < 1.05 * median


def check_record(r: dict, pod: dict, gpus: dict, product: str) -> None:
    assert r["schema_version"] == 1 and r["simulated"] is True and r["backend"] == "cuda"
    assert (r["namespace"], r["pod"], r["node"]) == (
        PROBES,
        pod["metadata"]["name"],
        pod["spec"]["nodeName"],
    )
    gpu = gpus[r["gpu_uuid"]]
    assert gpu.node == r["node"] and gpu.index == r["gpu_index"] and gpu.healthy
    assert r["gpu_model"] == DCGM_NAMES[gpu.product]
    shape, elem = r["shape"], DTYPE_BYTES[r["dtype"]]
    if r["benchmark"] == "gemm":
        m, n, k = shape["M"], shape["N"], shape["K"]
        out = 2 if r["dtype"] == "fp8" else elem
        assert (r["flops"], r["bytes"]) == (2 * m * n * k, elem * (m * k + n * k) + out * m * n)
    elif r["benchmark"] == "copy":
        assert (r["flops"], r["bytes"]) == (0, 2 * shape["N"] * elem)
    elif r["benchmark"] == "triad":
        assert (r["flops"], r["bytes"]) == (2 * shape["N"], 3 * shape["N"] * elem)
    elif r["benchmark"] == "softmax":
        assert r["bytes"] == 2 * shape["M"] * shape["N"] * elem
    else:
        m, n = shape["M"], shape["N"]
        assert r["bytes"] == 2 * m * n * elem + 2 * n * elem
    assert 0 < r["ms_p20"] <= r["ms_p50"] <= r["ms_p80"] < 1.01 * r["ms_p50"]
    seconds = r["ms_p50"] / 1e3
    assert r["achieved_tflops"] == pytest.approx(r["flops"] / seconds / 1e12, rel=1e-4)
    assert r["achieved_gbps"] == pytest.approx(r["bytes"] / seconds / 1e9, rel=1e-4)
    peak = PEAKS.get(product)
    if peak is None:  # GB200: no dense reference figure
        assert r["peak_tflops"] is None and r["peak_gbps"] is None and r["gpu_sku"] is None
        return
    bf16, fp8, hbm = peak
    assert r["peak_gbps"] == hbm and r["peak_source"].startswith("https://glennklockwood.com")
    if r["benchmark"] == "gemm":
        assert r["peak_tflops"] == (fp8 if r["dtype"] == "fp8" else bf16)
        assert 0.3 < r["frac_peak_flops"] < 1.0
    else:
        assert 0.3 * hbm < r["achieved_gbps"] < hbm
    assert r["ts"].endswith("Z") and r["correct"] is True


def test_planted_faults(world):
    faults = world.probe_faults
    assert set(faults) == {
        "truncated_json",
        "above_peak",
        "foreign_gpu",
        "negative_time",
        "duplicate",
    }
    (pod,) = {f.pod for f in faults.values()}
    node = next(p for p in probe_pods(world) if p["metadata"]["name"] == pod)["spec"]["nodeName"]
    lines = world.pod_logs[(PROBES, pod)].splitlines()
    line = {kind: lines[f.line - 1] for kind, f in faults.items()}
    with pytest.raises(json.JSONDecodeError):
        json.loads(line["truncated_json"])
    assert (
        line["truncated_json"].startswith("{")
        and faults["truncated_json"].record_id in (line["truncated_json"])
    )
    above = json.loads(line["above_peak"])
    assert above["achieved_tflops"] > 1.05 * above["peak_tflops"]
    foreign = json.loads(line["foreign_gpu"])
    owner = next(g for g in world.gpus if g.uuid == foreign["gpu_uuid"])
    assert foreign["node"] == node and owner.node != node and owner.node in world.probe_pods
    negative = json.loads(line["negative_time"])
    assert negative["ms_p50"] < 0 and negative["ms_p20"] <= negative["ms_p50"] <= negative["ms_p80"]
    duplicate = line["duplicate"]
    assert lines.count(duplicate) == 2 and lines.index(duplicate) < faults["duplicate"].line - 1
    for kind, fault in faults.items():
        if kind != "truncated_json":
            assert json.loads(line[kind])["record_id"] == fault.record_id
    records, _bad = records_of("\n".join(lines))
    assert len({r["record_id"] for r in records}) == len(records) - 1, "only the duplicate"


def test_logs_are_deterministic_and_lazy():
    first, second = build_world(30, seed=4), build_world(30, seed=4)
    assert (
        set(first.pod_logs)
        == set(second.pod_logs)
        == {(PROBES, name) for name in first.probe_pods.values()}
    )
    for key in first.pod_logs:
        assert first.pod_logs[key] == second.pod_logs[key]
    assert orjson.dumps(first.probe_faults) == orjson.dumps(second.probe_faults)
    other = build_world(30, seed=5)
    assert other.pod_logs[next(iter(other.pod_logs))] not in set(first.pod_logs.values())

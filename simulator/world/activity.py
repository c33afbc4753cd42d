"""What every physical GPU is doing: the one source the telemetry and benchmark stand-ins share.

`gpu_activity(world)` derives, for each GPU in `world.gpus` (in that order), its role, the
pod holding it, whether it is degraded, when its driver was loaded and which dcgm-exporter
generation reports it. It reads only the world's objects (pods, nodes) and its seed, so
the DCGM exporter, the Prometheus range API and the probe pods' benchmark records agree
with the Kubernetes API server. The result is computed once per world and cached on it
(about 1 s at 7,500 nodes); `degraded_gpus(world)` is the cheap part the probe logs need.
`dcgm_model_name(gpu)` gives the `modelName` DCGM reports (GFD's product label respelled).

Rules:
- Pod-to-GPU assignment, per node: bound pods that are not Succeeded/Failed and whose
  effective request (the PodRequests rule, `gpu_need`) names an `nvidia.com/` resource,
  in creation order (ties: order in `world.pods`), take consecutive healthy devices:
  `nvidia.com/gpu` takes whole GPUs that are neither unhealthy nor MIG-split (on a MIG
  "single" node it takes 1g MIG devices); `nvidia.com/mig-<profile>` takes MIG devices of
  that profile. A MIG-split GPU takes the role of the earliest-started pod on any of its
  devices, or "free". Within a pod, GPUs go to its containers in order (main containers,
  then sidecars; the rest, held for init containers, to the first container).
- Roles: "balloon" (label `annex.dev/balloon=true`, class `placeholder`, or priority below
  -10, the Cluster Autoscaler's expendable cutoff); "idle" for a bound pod still Pending
  (allocated, nothing running) and for notebooks/sandboxes (`app` notebook|sandbox:
  allocated, mostly unused); "training" (Job pods labelled `training.annex.dev/run`);
  "inference" (namespace `inference` or `app.kubernetes.io/component=inference`);
  "research" for any other pod; "free" when no pod holds the GPU; "unavailable" when the
  device plugin no longer advertises it (`Gpu.healthy` false).
- `since`: the holding pod's `status.startTime` (earliest one for a MIG-split GPU); for
  "free", the node's creation; for "unavailable", a seeded moment 3-48 h ago when the
  GPU fell off. Before `since` the GPU counts as "free".
- Degraded: about 1% of healthy GPUs (at least 3 once the world has 10 GPU nodes), kinds
  cycling slow, hot, xid; the first three (one of each kind) sit on nodes the probe Job
  ran on (`world.probe_pods`), the rest anywhere. Chosen by an RNG of its own seeded from
  the world's seed, so the choice does not move the world's other objects.
- `driver_loaded_at`: per node, a minute after its `nvidia-driver-daemonset` pod started
  (node creation + 10 min if there is none). About 2% of GPU nodes (at least one once the
  world has 10 GPU nodes) reloaded their driver recently, which resets the energy counter:
  the first between 10 and 50 minutes before `world.now` (inside a one-hour collection
  window), the others 1-48 h before it.
- `exporter_generation`: per node pool (`EXPORTER_GENERATIONS`, default "4.8").
- `past`: where the world has a history (`world.history`, a `WorldHistory`), the GPU's
  holdings before `since`: the history's past GPU pods (earlier pods, and the present's
  finished ones while they ran), each from its `startTime` to its end, take devices by the
  assignment rule above among the past pods running at the same time (the present pods start
  after the earlier ones end). Clipped to end by `since` (by `world.now` for a GPU free at
  the present: it is free again after its last past holding); none on shared-GPU nodes or
  for unavailable GPUs. Between holdings the GPU is "free". Without a history `past` is
  empty and everything above is unchanged.
"""

from __future__ import annotations

import gc
import random
import threading
from dataclasses import dataclass
from datetime import datetime
from itertools import chain, pairwise
from typing import NamedTuple

from simulator.world.catalog import DRIVER, POOLS
from simulator.world.model import Gpu, World
from simulator.world.workloads import gpu_need

ROLES = ("training", "inference", "research", "idle", "balloon", "free", "unavailable")
DEGRADED_KINDS = ("slow", "hot", "xid")
DEGRADED_FRACTION = 0.01
DRIVER_RELOAD_FRACTION = 0.02
DRIVER_VERSION = f"{DRIVER[0]}.{DRIVER[1]}.{DRIVER[2]}"
# node pool -> dcgm-exporter generation: "4.8" (DCGM_FI_* names, %, mJ, MHz) or "4.9" (the
# DCGM 4.7 names and SI units of exporter 4.9.0); pools not listed run "4.8"
EXPORTER_GENERATIONS = {"h100-eks": "4.9", "a100-mig-mixed": "4.9", "gb200-nvl": "4.9"}
# GFD product label -> the modelName DCGM (NVML) reports for the same GPU
DCGM_MODEL_NAMES = {
    "NVIDIA-H100-80GB-HBM3": "NVIDIA H100 80GB HBM3",
    "NVIDIA-A100-SXM4-80GB": "NVIDIA A100-SXM4-80GB",
    "NVIDIA-A100-SXM4-40GB": "NVIDIA A100-SXM4-40GB",
    "NVIDIA-GB200": "NVIDIA GB200",
}

_GPU = "nvidia.com/gpu"
_POOL_STRATEGY = {pool.name: pool.mig_strategy for pool in POOLS}
_LOCK = threading.Lock()


class PastHolding(NamedTuple):
    """A pod of the world's history holding a GPU from `begin` to `end` (epoch seconds)."""

    begin: float
    end: float
    role: str  # one of ROLES, by the same rule as the present's
    pod: str
    namespace: str
    container: str


@dataclass(frozen=True)
class GpuActivity:
    """One physical GPU's state over the world's recent history (see the module docstring)."""

    gpu: Gpu
    role: str  # one of ROLES
    since: float  # epoch seconds the current role began; before it the GPU was "free"
    pod: str | None
    namespace: str | None
    container: str | None
    degraded: str | None  # None | "slow" | "hot" | "xid"
    driver_loaded_at: float  # epoch seconds: the energy counter counts from here
    exporter_generation: str  # "4.8" | "4.9"
    driver_version: str
    # the holdings of the world's history before `since`, ascending and disjoint (see above)
    past: tuple[PastHolding, ...] = ()


def gpu_activity(world: World) -> list[GpuActivity]:
    """Every GPU of `world.gpus`, in order; deterministic, computed once per world."""
    return _cached(world, "activity", _compute)


def degraded_gpus(world: World) -> dict[str, str]:
    """GPU UUID -> "slow" | "hot" | "xid" for the degraded GPUs (cheap: no pod assignment)."""
    return _cached(world, "degraded", _degraded)


def _cached(world: World, key: str, compute):
    cache = world.activity_cache
    if cache is None or key not in cache:
        with _LOCK:
            if world.activity_cache is None:
                world.activity_cache = {}
            cache = world.activity_cache
            if key not in cache:
                # no cycles here, and the world's millions of dicts would make every cyclic
                # GC pass rescan them (as in build_world): pause it while computing
                collecting = gc.isenabled()
                gc.disable()
                try:
                    cache[key] = compute(world)
                finally:
                    if collecting:
                        gc.enable()
    return cache[key]


def dcgm_model_name(gpu: Gpu) -> str:
    """The `modelName` DCGM reports for `gpu` (GFD's product label with spaces)."""
    return DCGM_MODEL_NAMES.get(gpu.product, gpu.product.replace("-", " "))


# ---- computation ---------------------------------------------------------------------------


@dataclass
class _Holder:
    role: str
    since: float
    pod: str
    namespace: str
    container: str


def _compute(world: World) -> list[GpuActivity]:
    rng = random.Random(f"annex-activity:{world.seed}:unavailable")
    now = world.now.timestamp()
    created = {
        n["metadata"]["name"]: _epoch(n["metadata"]["creationTimestamp"]) for n in world.nodes
    }
    by_node: dict[str, list[Gpu]] = {}
    for gpu in world.gpus:
        by_node.setdefault(gpu.node, []).append(gpu)

    holders, driver_pods = _assign(world, by_node)
    if world.feature_holdings:
        _feature_holders(world, holders)
    degraded = _cached(world, "degraded", _degraded)
    loaded = _driver_loads(by_node, created, driver_pods, world.seed, now)
    past = _past_holdings(world, by_node)

    result = []
    for gpu in world.gpus:
        generation = EXPORTER_GENERATIONS.get(world.node_pools.get(gpu.node, ""), "4.8")
        holder = holders.get(gpu.uuid)
        if not gpu.healthy:
            role, since, pod, namespace, container = (
                "unavailable",
                now - rng.uniform(3, 48) * 3600,
                None,
                None,
                None,
            )
        elif holder is None:
            role, since = "free", created.get(gpu.node, now)
            pod = namespace = container = None
        else:
            role, since = holder.role, holder.since
            pod, namespace, container = holder.pod, holder.namespace, holder.container
        result.append(
            GpuActivity(
                gpu=gpu,
                role=role,
                since=since,
                pod=pod,
                namespace=namespace,
                container=container,
                degraded=degraded.get(gpu.uuid) if gpu.healthy else None,
                driver_loaded_at=loaded[gpu.node],
                exporter_generation=generation,
                driver_version=DRIVER_VERSION,
                past=_before(past.get(gpu.uuid), now if role == "free" else since)
                if gpu.healthy
                else (),
            )
        )
    return result


def _past_holdings(world: World, by_node: dict[str, list[Gpu]]) -> dict[str, list[PastHolding]]:
    """GPU UUID -> the holdings of the history's past GPU pods (the rule, per moment).

    On a node whose past pods ran one after another (the history's earlier pods), each ran
    alone, so it took the first devices: computed once per template (its copies share spec and
    labels), and one holding shared by the GPUs it took. Where past pods overlapped (the
    present's finished pods), the rule is applied between each start and end."""
    history = getattr(world, "history", None)
    if history is None:
        return {}
    spans_by_node: dict[str, list[tuple[float, float, int, dict, tuple[str, str]]]] = {}
    for position, (node, pod, begin, end, template) in enumerate(history.past_gpu_pods):
        if node in by_node and node not in world.gpu_sharing and end > begin:
            spans_by_node.setdefault(node, []).append((begin, end, position, pod, template))
    out: dict[str, list[PastHolding]] = {}
    for node, spans in spans_by_node.items():
        spans.sort(key=lambda span: (span[0], span[2]))
        devices = _devices(
            by_node[node], _POOL_STRATEGY.get(world.node_pools.get(node, ""), "none")
        )
        if all(a[1] <= b[0] for a, b in pairwise(spans)):
            _one_at_a_time(spans, devices, out)
        else:
            _overlapping(spans, devices, out)
    return out


def _entry(position: int, pod: dict) -> tuple[str, int, dict, dict[str, int]] | None:
    spec = pod["spec"]
    need = gpu_need(spec["containers"], spec.get("initContainers", []), spec.get("overhead"))
    return (pod["metadata"]["creationTimestamp"], position, pod, need) if need else None


def _one_at_a_time(spans: list, devices: dict[str, list[Gpu]], out: dict) -> None:
    """Past pods of one node that never overlapped: each took the first devices alone. The
    GPUs a template's copies took with one container share one list of holdings."""
    # template -> [(role, container, shared holdings)]; GPU -> the shared lists it is in
    alone: dict[tuple[str, str], list[tuple[str, str, list[PastHolding]]]] = {}
    member: dict[str, list[list[PastHolding]]] = {}
    for begin, end, position, pod, template in spans:
        taken = alone.get(template)
        if taken is None:
            entry = _entry(position, pod)
            holders: dict[str, _Holder] = {}
            if entry is not None:
                _take([entry], devices, holders, None)
            groups: dict[tuple[str, str], list[PastHolding]] = {}
            for uuid, h in holders.items():
                shared = groups.get((h.role, h.container))
                if shared is None:
                    shared = groups[(h.role, h.container)] = []
                member.setdefault(uuid, []).append(shared)
            taken = alone[template] = [(r, c, shared) for (r, c), shared in groups.items()]
        metadata = pod["metadata"]
        name, namespace = metadata["name"], metadata["namespace"]
        for role, container, shared in taken:
            shared.append(PastHolding(begin, end, role, name, namespace, container))
    for uuid, lists in member.items():
        if len(lists) == 1:
            out[uuid] = lists[0]
        else:
            out[uuid] = sorted(h for shared in lists for h in shared)


def _overlapping(spans: list, devices: dict[str, list[Gpu]], out: dict) -> None:
    entries = [(begin, end, _entry(position, pod)) for begin, end, position, pod, _ in spans]
    cuts = sorted({t for begin, end, _ in entries for t in (begin, end)})
    for lo, hi in pairwise(cuts):
        running = [e for begin, end, e in entries if e is not None and begin <= lo and end >= hi]
        if not running:
            continue
        holders: dict[str, _Holder] = {}
        _take(sorted(running, key=lambda e: (e[0], e[1])), devices, holders, None)
        for uuid, h in holders.items():
            held = out.setdefault(uuid, [])
            last = held[-1] if held else None
            if (
                last is not None
                and last.end == lo
                and last[3:] == (h.pod, h.namespace, h.container)
            ):
                held[-1] = last._replace(end=hi)
            else:
                held.append(PastHolding(lo, hi, h.role, h.pod, h.namespace, h.container))


def _before(held: list[PastHolding] | None, since: float) -> tuple[PastHolding, ...]:
    """`held` ending by `since` (the present's holding takes over then)."""
    if not held:
        return ()
    if held[-1].end <= since:
        return tuple(held)
    return tuple(h if h.end <= since else h._replace(end=since) for h in held if h.begin < since)


def device_plugin_assignments(world: World) -> list[tuple[dict, Gpu]]:
    """(pod, physical GPU) for each device the device plugin gave a pod, by the rules above.

    One entry per device: a pod holding three MIG devices of one GPU appears three times.
    Computed once per world (cached beside the activity).
    Nodes whose GPUs are shared (`world.gpu_sharing`) are left out: their pods hold replicas,
    recorded in `world.feature_holdings`.
    """
    return _cached(world, "assignments", _assignments)


def _assignments(world: World) -> list[tuple[dict, Gpu]]:
    by_node: dict[str, list[Gpu]] = {}
    for gpu in world.gpus:
        by_node.setdefault(gpu.node, []).append(gpu)
    record: list[tuple[dict, Gpu]] = []
    _assign(world, by_node, record)
    return record


def _assign(
    world: World, by_node: dict[str, list[Gpu]], record: list[tuple[dict, Gpu]] | None = None
) -> tuple[dict[str, _Holder], dict[str, float]]:
    """GPU UUID -> the pod holding it; node -> start of its driver DaemonSet pod."""
    pods_by_node: dict[str, list[tuple[str, int, dict, dict[str, int]]]] = {}
    driver_pods: dict[str, float] = {}
    shared = world.gpu_sharing
    for position, pod in enumerate(world.pods):
        spec = pod["spec"]
        node = spec.get("nodeName")
        if not node or node not in by_node:
            continue
        phase = pod["status"].get("phase")
        if phase in ("Succeeded", "Failed"):
            continue
        metadata = pod["metadata"]
        owners = metadata.get("ownerReferences")
        if owners and owners[0].get("kind") == "DaemonSet":  # node agents: no GPUs
            if metadata["name"].startswith("nvidia-driver-daemonset-"):
                started = pod["status"].get("startTime")
                if started:
                    driver_pods[node] = _epoch(started)
            continue
        if node in shared or not _asks_for_gpus(spec):
            continue
        need = gpu_need(spec["containers"], spec.get("initContainers", []), spec.get("overhead"))
        if need:
            key = (pod["metadata"]["creationTimestamp"], position, pod, need)
            pods_by_node.setdefault(node, []).append(key)

    holders: dict[str, _Holder] = {}
    for node, entries in pods_by_node.items():
        entries.sort(key=lambda e: (e[0], e[1]))
        devices = _devices(
            by_node[node], _POOL_STRATEGY.get(world.node_pools.get(node, ""), "none")
        )
        _take(entries, devices, holders, record)
    return holders, driver_pods


def _take(
    entries: list[tuple[str, int, dict, dict[str, int]]],
    devices: dict[str, list[Gpu]],
    holders: dict[str, _Holder],
    record: list[tuple[dict, Gpu]] | None,
) -> None:
    """One node's pods (in creation order) take consecutive devices; the earliest-started
    pod on a GPU's devices holds it."""
    taken = dict.fromkeys(devices, 0)
    for _created, _position, pod, need in entries:
        role = _role(pod)
        since = _epoch(pod["status"].get("startTime") or pod["metadata"]["creationTimestamp"])
        containers = _container_per_device(pod["spec"], sum(need.values()))
        slot = 0
        for resource, amount in sorted(need.items()):
            pool = devices.get(resource, [])
            start = taken.get(resource, 0)
            for gpu in pool[start : start + amount]:
                name = containers[min(slot, len(containers) - 1)]
                slot += 1
                if record is not None:
                    record.append((pod, gpu))
                if gpu.uuid not in holders or holders[gpu.uuid].since > since:
                    holders[gpu.uuid] = _Holder(
                        role, since, pod["metadata"]["name"], pod["metadata"]["namespace"], name
                    )
            taken[resource] = start + amount


def _feature_holders(world: World, holders: dict[str, _Holder]) -> None:
    """GPUs held through DRA or sharing: the earliest-started holder takes the GPU's role."""
    pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in world.pods}
    for holding in world.feature_holdings:
        pod = pods.get((holding.namespace, holding.pod))
        if pod is None or pod["status"].get("phase") in ("Succeeded", "Failed"):
            continue
        since = _epoch(pod["status"].get("startTime") or pod["metadata"]["creationTimestamp"])
        current = holders.get(holding.gpu_uuid)
        if current is None or current.since > since:
            holders[holding.gpu_uuid] = _Holder(
                _role(pod),
                since,
                holding.pod,
                holding.namespace,
                pod["spec"]["containers"][0]["name"],
            )


def _devices(gpus: list[Gpu], strategy: str) -> dict[str, list[Gpu]]:
    """Schedulable devices per resource, each as the physical GPU it lives on."""
    devices: dict[str, list[Gpu]] = {}
    for gpu in gpus:
        if not gpu.healthy:
            continue
        if not gpu.mig_devices:
            devices.setdefault(_GPU, []).append(gpu)
            continue
        for _uuid, profile in gpu.mig_devices:
            resource = _GPU if strategy == "single" else f"nvidia.com/mig-{profile}"
            devices.setdefault(resource, []).append(gpu)
    return devices


def _asks_for_gpus(spec: dict) -> bool:
    for container in chain(spec["containers"], spec.get("initContainers", ())):
        resources = container.get("resources") or {}
        for quantities in (resources.get("limits"), resources.get("requests")):
            if quantities and any(k.startswith("nvidia.com/") for k in quantities):
                return True
    return bool(spec.get("overhead")) and any(k.startswith("nvidia.com/") for k in spec["overhead"])


def _container_per_device(spec: dict, total: int) -> list[str]:
    names: list[str] = []
    sidecars = [c for c in spec.get("initContainers", ()) if c.get("restartPolicy") == "Always"]
    for container in chain(spec["containers"], sidecars):
        resources = container.get("resources") or {}
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        count = sum(int(v) for k, v in merged.items() if k.startswith("nvidia.com/"))
        names.extend([container["name"]] * count)
    first = spec["containers"][0]["name"]
    names.extend([first] * max(0, total - len(names)))
    return names[:total] or [first]


def _role(pod: dict) -> str:
    metadata, spec = pod["metadata"], pod["spec"]
    labels = metadata.get("labels") or {}
    if (
        labels.get("annex.dev/balloon") == "true"
        or spec.get("priorityClassName") == "placeholder"
        or spec.get("priority", 0) < -10
    ):
        return "balloon"
    if pod["status"].get("phase") == "Pending":
        return "idle"
    owner = (metadata.get("ownerReferences") or [{}])[0]
    if owner.get("kind") == "Job" and "training.annex.dev/run" in labels:
        return "training"
    if metadata["namespace"] == "inference" or labels.get("app.kubernetes.io/component") == (
        "inference"
    ):
        return "inference"
    if labels.get("app") in ("notebook", "sandbox"):
        return "idle"
    return "research"


def _degraded(world: World) -> dict[str, str]:
    rng = random.Random(f"annex-activity:{world.seed}:degraded")
    by_node: dict[str, list[Gpu]] = {}
    for gpu in world.gpus:
        by_node.setdefault(gpu.node, []).append(gpu)
    healthy = [g for g in world.gpus if g.healthy]
    if len(by_node) < 10 or not healthy:
        return {}
    count = max(len(DEGRADED_KINDS), round(DEGRADED_FRACTION * len(healthy)))
    probed = [g for node in sorted(world.probe_pods) for g in by_node.get(node, ()) if g.healthy]
    chosen: dict[str, str] = {}
    for kind in DEGRADED_KINDS:  # one of each kind where the probe Job measured it
        candidates = [g for g in probed if g.uuid not in chosen] or [
            g for g in healthy if g.uuid not in chosen
        ]
        if candidates:
            chosen[rng.choice(candidates).uuid] = kind
    rest = [g for g in healthy if g.uuid not in chosen]
    extra = rng.sample(rest, min(len(rest), count - len(chosen)))
    for i, gpu in enumerate(extra):
        chosen[gpu.uuid] = DEGRADED_KINDS[i % len(DEGRADED_KINDS)]
    return chosen


def _driver_loads(
    by_node: dict[str, list[Gpu]],
    created: dict[str, float],
    driver_pods: dict[str, float],
    seed: int,
    now: float,
) -> dict[str, float]:
    rng = random.Random(f"annex-activity:{seed}:driver")
    loaded = {
        node: driver_pods[node] + 60 if node in driver_pods else created.get(node, now) + 600
        for node in by_node
    }
    nodes = sorted(by_node)
    if len(nodes) >= 10:
        count = max(1, round(DRIVER_RELOAD_FRACTION * len(nodes)))
        for i, node in enumerate(rng.sample(nodes, count)):
            ago = rng.uniform(600, 3000) if i == 0 else rng.uniform(3600, 48 * 3600)
            loaded[node] = max(loaded[node], now - ago)
    return loaded


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


__all__ = [
    "DCGM_MODEL_NAMES",
    "DEGRADED_KINDS",
    "DRIVER_VERSION",
    "EXPORTER_GENERATIONS",
    "ROLES",
    "GpuActivity",
    "PastHolding",
    "dcgm_model_name",
    "degraded_gpus",
    "gpu_activity",
]

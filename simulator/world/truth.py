"""Ground truth the collectors are checked against: who holds which GPU, who waited how long.

    from simulator.world.truth import gpu_holdings, queue_quotas, queued_workloads
    world = build_world(100, seed=1, features={"dra", "sharing", "kueue"})
    gpu_holdings(world)  # [GpuHolding(namespace, pod, node, gpu_uuid, mechanism, shares, ...)]

`gpu_holdings(world)`: one entry per (pod, physical GPU) for every pod that holds GPUs now
(bound, not Succeeded/Failed), by mechanism:
- "device-plugin": whole GPUs and MIG devices requested as extended resources, assigned as
  `simulator.world.activity` assigns them (creation order, consecutive healthy devices);
  a MIG device of a GPU split into k is 1/k of it;
- "dra": devices in the pod's claims' allocation results (`simulator.world.dra`); a claim
  reserved for several pods splits its devices equally among them;
- "time-slicing" / "mps": replicas of a shared GPU (1/replicas each); "hami": gpucores/100.
A GPU's shares never add up to more than 1 (`shares / shares_per_gpu` summed per GPU).

`node_gpus(world)`: per GPU node, its physical GPUs (healthy ones), how many shares it
advertises and how (`sharing`: "none", "time-slicing", "mps", "hami"; `allocation`:
"device-plugin" or "dra" for nodes that advertise no GPU extended resource).

`pending_dra_demand(world)`: per pending pod (Pending, no node) that names DRA claims, the
GPUs they ask for: whole GPUs (class gpu.nvidia.com) and MIG devices (mig.nvidia.com) of its
unallocated claims, or of its templates before their claims exist; a claim named by k pending
pods gives each 1/k; an allocationMode All request is counted apart (`all_requests`).

`queued_workloads(world)`: each Kueue Workload's state and times (created, admitted,
evicted, finished); `queue_quotas(world)`: per ClusterQueue and flavor, nominal quota,
borrowing limit, GPUs used and borrowed. Both empty unless the world was built with "kueue".
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

from simulator.world.activity import device_plugin_assignments
from simulator.world.features import DRA_POOLS
from simulator.world.model import GpuHolding, QueuedWorkload, QueueQuota, World


@dataclass(frozen=True)
class NodeGpus:
    """One GPU node's capacity in physical GPUs and in the shares it advertises."""

    node: str
    physical_gpus: int
    healthy_gpus: int
    shares_per_gpu: int  # 1 unless shared: replicas (time-slicing, MPS) or HAMi's split count
    sharing: str  # "none" | "time-slicing" | "mps" | "hami"
    allocation: str  # "device-plugin" | "dra"


def gpu_holdings(world: World) -> list[GpuHolding]:
    """Every pod's hold on every physical GPU, sorted by (node, GPU UUID, namespace, pod)."""
    # tens of thousands of small objects beside the world's millions of dicts: the cyclic GC
    # would rescan the world many times over (as in build_world), so it pauses meanwhile
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _holdings(world)
    finally:
        if collecting:
            gc.enable()


def _holdings(world: World) -> list[GpuHolding]:
    per_gpu = {gpu.uuid: max(1, len(gpu.mig_devices)) for gpu in world.gpus}
    merged: dict[tuple[str, str, str], GpuHolding] = {}
    for pod, gpu in device_plugin_assignments(world):
        metadata = pod["metadata"]
        key = (metadata["namespace"], metadata["name"], gpu.uuid)
        previous = merged.get(key)
        merged[key] = GpuHolding(
            namespace=metadata["namespace"],
            pod=metadata["name"],
            node=gpu.node,
            gpu_uuid=gpu.uuid,
            mechanism="device-plugin",
            shares=(previous.shares if previous else 0) + 1,
            shares_per_gpu=per_gpu[gpu.uuid],
        )
    holdings = [*merged.values(), *world.feature_holdings]
    holdings.sort(key=lambda h: (h.node, h.gpu_uuid, h.namespace, h.pod, h.device or ""))
    return holdings


def node_gpus(world: World) -> dict[str, NodeGpus]:
    """Node name -> its GPUs, for every node with at least one GPU."""
    physical: dict[str, int] = {}
    healthy: dict[str, int] = {}
    for gpu in world.gpus:
        physical[gpu.node] = physical.get(gpu.node, 0) + 1
        healthy[gpu.node] = healthy.get(gpu.node, 0) + int(gpu.healthy)
    result = {}
    for node, count in physical.items():
        sharing, shares = world.gpu_sharing.get(node, ("none", 1))
        dra = world.node_pools.get(node) in DRA_POOLS
        result[node] = NodeGpus(
            node, count, healthy[node], shares, sharing, "dra" if dra else "device-plugin"
        )
    return result


@dataclass(frozen=True)
class PendingDraDemand:
    """GPUs one pending pod asks for through its DRA claims (none allocated yet)."""

    namespace: str
    pod: str
    gpus: float
    mig_devices: float
    all_requests: int


_GPU_CLASSES = {"gpu.nvidia.com": "gpu", "mig.nvidia.com": "mig"}


def pending_dra_demand(world: World) -> list[PendingDraDemand]:
    """Every pending pod naming DRA claims, sorted by (namespace, pod)."""
    claims = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in world.resource_claims}
    templates = {
        (t["metadata"]["namespace"], t["metadata"]["name"]): t
        for t in world.resource_claim_templates
    }
    pending = [
        p
        for p in world.pods
        if not p["spec"].get("nodeName")
        and p["status"].get("phase", "Pending") == "Pending"
        and p["spec"].get("resourceClaims")
    ]
    sharers: dict[tuple[str, str], int] = {}
    resolved: list[tuple[dict, list[tuple[tuple[str, str] | None, dict]]]] = []
    for pod in pending:
        namespace = pod["metadata"]["namespace"]
        generated = {
            s["name"]: s.get("resourceClaimName")
            for s in pod["status"].get("resourceClaimStatuses", [])
        }
        specs: list[tuple[tuple[str, str] | None, dict]] = []
        for entry in pod["spec"]["resourceClaims"]:
            name = entry.get("resourceClaimName") or generated.get(entry["name"])
            if name is not None:
                claim = claims[(namespace, name)]
                if claim.get("status", {}).get("allocation"):
                    continue  # its devices are held already
                key = (namespace, name)
                sharers[key] = sharers.get(key, 0) + 1
                specs.append((key, claim["spec"]))
            else:
                template = templates[(namespace, entry["resourceClaimTemplateName"])]
                specs.append((None, template["spec"]["spec"]))
        resolved.append((pod, specs))
    demand = []
    for pod, specs in resolved:
        totals = {"gpu": 0.0, "mig": 0.0}
        every = 0
        for key, spec in specs:
            k = sharers[key] if key is not None else 1
            for request in spec["devices"]["requests"]:
                exactly = request.get("exactly") or request["firstAvailable"][0]
                kind = _GPU_CLASSES.get(exactly["deviceClassName"])
                if kind is None:
                    continue
                if exactly.get("allocationMode", "ExactCount") == "All":
                    every += 1
                else:
                    totals[kind] += exactly.get("count", 1) / k
        demand.append(
            PendingDraDemand(
                pod["metadata"]["namespace"],
                pod["metadata"]["name"],
                totals["gpu"],
                totals["mig"],
                every,
            )
        )
    demand.sort(key=lambda d: (d.namespace, d.pod))
    return demand


def queued_workloads(world: World) -> list[QueuedWorkload]:
    return list(world.queued_workloads)


def queue_quotas(world: World) -> list[QueueQuota]:
    return list(world.queue_quotas)


__all__ = [
    "NodeGpus",
    "PendingDraDemand",
    "gpu_holdings",
    "node_gpus",
    "pending_dra_demand",
    "queue_quotas",
    "queued_workloads",
]

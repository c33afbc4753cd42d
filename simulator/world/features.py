"""Opt-in parts of the world: DRA, shared GPUs, Kueue (`build_world(..., features={...})`).

Off by default, so the default world stays byte-for-byte what it was. When on, the world is
the default world of `nodes - extra_nodes(nodes, features)` nodes (same seed, same objects,
same RVs), followed by the feature pools and their objects, drawn from an RNG of their own:

- "dra": pools whose GPUs are allocated only through DRA (`simulator.world.dra`);
- "sharing": time-sliced and MPS pools, a HAMi pool (`simulator.world.sharing`);
- "kueue": a pool behind Kueue queues, with its Workloads (`simulator.world.kueue`).

Their ground truth (who holds which physical GPU by which mechanism; each workload's wait)
is read through `simulator.world.truth`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from simulator.world.catalog import FEATURE_POOLS, HAMI_SPLIT_COUNT, SHARED_POOLS, PoolProfile
from simulator.world.model import Ids, World
from simulator.world.nodes import NodeFactory, NodeSlot
from simulator.world.pods import PodFactory, PodPlan
from simulator.world.workloads import EventPlan, JobPlan, Placement

FEATURES = ("dra", "sharing", "kueue")
DRA_POOLS = frozenset(pool.name for pool, _minimum in FEATURE_POOLS["dra"])


def check_features(features: Iterable[str] | None) -> frozenset[str]:
    chosen = frozenset(features or ())
    unknown = sorted(chosen - set(FEATURES))
    if unknown:
        raise ValueError(f"unknown world features {unknown}: choose from {list(FEATURES)}")
    return chosen


def feature_pools(nodes: int, features: frozenset[str]) -> list[tuple[PoolProfile, int]]:
    """The feature pools and their sizes: max(minimum, round(weight * nodes)) each."""
    return [
        (pool, max(minimum, round(pool.weight * nodes)))
        for feature in FEATURES
        if feature in features
        for pool, minimum in FEATURE_POOLS[feature]
    ]


def extra_nodes(nodes: int, features: frozenset[str]) -> int:
    """How many of `nodes` the feature pools take (the default part gets the rest)."""
    return sum(count for _pool, count in feature_pools(nodes, features))


@dataclass(eq=False)
class FeatureBuild:
    """What the feature builders share: the world, its own RNG, RVs, renderers."""

    world: World
    ids: Ids
    now: datetime
    next_rv: Callable[[], int]
    placement: Placement
    pod_factory: PodFactory
    slots: dict[str, list[NodeSlot]]
    nodes: dict[str, dict] = field(default_factory=dict)  # name -> Node object
    rendered: dict[int, dict] = field(default_factory=dict)  # id(PodPlan) -> Pod object

    def add_pod(self, plan: PodPlan) -> dict:
        pod = self.pod_factory.render(plan, self.next_rv())
        self.rendered[id(plan)] = pod
        self.world.pods.append(pod)
        return pod

    def add_job(self, job: JobPlan) -> dict:
        from simulator.world.build import _job

        obj = _job(self.ids, job, self.next_rv())
        self.world.jobs.append(obj)
        self.world.training_runs.append(job.run)
        return obj

    def pod(self, plan: PodPlan) -> dict:
        return self.rendered[id(plan)]


def add_features(world: World, features: frozenset[str], nodes: int) -> None:
    """Append the feature pools' nodes and objects to a finished default world."""
    if not features:
        return
    from simulator.world.build import _event

    rng = random.Random(f"annex-simulator:{world.seed}:features")
    ids = Ids(rng)
    ids.names.update(p["metadata"]["name"] for p in world.pods)
    ids.names.update(j["metadata"]["name"] for j in world.jobs)
    rv = world.resource_version

    def next_rv() -> int:
        nonlocal rv
        rv += 1
        return rv

    factory = NodeFactory(ids, world.now)
    factory.index = len(world.nodes)  # node IPs and pod CIDRs continue after the default part
    factory.names.update(n["metadata"]["name"] for n in world.nodes)
    slots: dict[str, list[NodeSlot]] = {}
    for pool, count in feature_pools(nodes, features):
        slots[pool.name] = factory.pool_slots(pool, count)
    every = [slot for group in slots.values() for slot in group]
    build = FeatureBuild(
        world,
        ids,
        world.now,
        next_rv,
        Placement(ids, world.now, every),
        PodFactory(ids, world.now),
        slots,
    )
    for slot in every:
        _share(slot)
        node = _render_node(factory, slot, next_rv())
        build.nodes[slot.name] = node
        world.nodes.append(node)
        world.gpus.extend(slot.gpus)
        world.node_pools[slot.name] = slot.pool.name
    world.features = features
    if "dra" in features:
        from simulator.world.dra import add_dra

        add_dra(build)
    if "sharing" in features:
        from simulator.world.sharing import add_sharing

        add_sharing(build)
    if "kueue" in features:
        from simulator.world.kueue import add_kueue

        add_kueue(build)
    for slot in every:
        if slot.pool.name not in DRA_POOLS:  # DRA nodes advertise no GPU extended resource
            world.gpu_allocated[slot.name] = {
                r: slot.allocatable[r] - slot.free[r] for r in slot.allocatable
            }
    jobs = build.placement.jobs
    job_objects = world.jobs[len(world.jobs) - len(jobs) :]
    for event in build.placement.events:
        world.events.append(
            _event(ids, event, build.rendered, build.nodes, job_objects, jobs, next_rv())
        )
    world.resource_version = rv


def _share(slot: NodeSlot) -> None:
    """Shared pools advertise replicas, not GPUs: 8 GPUs with 4 replicas read 32."""
    sharing = SHARED_POOLS.get(slot.pool.name)
    replicas = sharing[1] if sharing else HAMI_SPLIT_COUNT if slot.pool.name == "h100-hami" else 0
    if replicas:
        amount = slot.pool.gpus_per_node * replicas
        slot.capacity = {"nvidia.com/gpu": amount}
        slot.allocatable = {"nvidia.com/gpu": amount}
        slot.free = dict(slot.allocatable)


def _render_node(factory: NodeFactory, slot: NodeSlot, rv: int) -> dict:
    node = factory.render(slot, rv)
    labels = node["metadata"]["labels"]
    pool = slot.pool.name
    if pool in DRA_POOLS:
        # NVIDIA's DRA driver publishes the GPUs as ResourceSlices; no device plugin runs
        for key in ("capacity", "allocatable"):
            resources = node["status"][key]
            for name in [r for r in resources if r.startswith("nvidia.com/")]:
                del resources[name]
        labels["nvidia.com/gpu.deploy.device-plugin"] = "false"
        labels["nvidia.com/dra-kubelet-plugin"] = "true"
    elif pool in SHARED_POOLS:
        strategy, replicas = SHARED_POOLS[pool]
        labels["nvidia.com/gpu.replicas"] = str(replicas)
        labels["nvidia.com/gpu.sharing-strategy"] = strategy
        # renameByDefault false: GFD appends -SHARED to the product label
        labels["nvidia.com/gpu.product"] += "-SHARED"
        if strategy == "mps":
            labels["nvidia.com/mps.capable"] = "true"
    elif pool == "h100-hami":
        labels["gpu"] = "on"  # HAMi's device plugin runs where this label is set
        node["metadata"]["annotations"]["hami.io/node-nvidia-register"] = "".join(
            f"{gpu.uuid},{HAMI_SPLIT_COUNT},{gpu.memory_mib},100,NVIDIA-{gpu.product},0,true:"
            for gpu in slot.gpus
        )
    return node


__all__ = [
    "DRA_POOLS",
    "FEATURES",
    "EventPlan",
    "FeatureBuild",
    "add_features",
    "check_features",
    "extra_nodes",
    "feature_pools",
]

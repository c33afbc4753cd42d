"""`build_world`: one seeded RNG, nodes first, then placement, then rendering with RVs."""

from __future__ import annotations

import gc
import random
from collections.abc import Iterable
from datetime import datetime, timedelta

from simulator.world.catalog import (
    PRIORITY_CLASSES,
    SIMULATED_ANNOTATION,
    SYSTEM_NAMESPACES,
    TEAM_NAMESPACES,
)
from simulator.world.features import add_features, check_features, extra_nodes
from simulator.world.gpubench import PRIORITY_CLASS as PROBE_PRIORITY_CLASS
from simulator.world.gpubench import add_probe_job
from simulator.world.model import DEFAULT_NOW, Ids, World, micro_timestamp, timestamp
from simulator.world.nodes import NodeFactory, NodeSlot
from simulator.world.pods import PodFactory, PodPlan
from simulator.world.workloads import GPU, EventPlan, JobPlan, Placement, gpu_need

MAX_NODES = 7500
FIRST_RESOURCE_VERSION = 1000


def build_world(
    nodes: int,
    seed: int = 0,
    *,
    now: datetime | None = None,
    not_ready_fraction: float = 0.01,
    cordoned_fraction: float = 0.015,
    unhealthy_gpu_fraction: float = 0.02,
    features: Iterable[str] | None = None,
) -> World:
    """Build a valid cluster state of `nodes` nodes (1..7,500), identical for the same inputs.

    `now` fixes the clock the timestamps count back from (default: a fixed instant, so worlds
    compare equal across runs). The fractions choose how many nodes are NotReady, cordoned,
    or have GPUs the device plugin no longer advertises (at least one each from 10 nodes up).

    `features` (default none) adds opt-in parts, any of "dra", "sharing", "kueue"
    (`simulator.world.features`): their pools take `extra_nodes(nodes, features)` of the
    `nodes`, and the rest is exactly the default world of that many nodes.
    """
    if not 1 <= nodes <= MAX_NODES:
        raise ValueError(f"nodes must be between 1 and {MAX_NODES}, got {nodes}")
    chosen = check_features(features)
    extra = extra_nodes(nodes, chosen)
    if chosen and nodes - extra < 1:
        raise ValueError(
            f"features {sorted(chosen)} need {extra} nodes of their own: ask for at least "
            f"{extra + 1} nodes, got {nodes}"
        )
    # Millions of small dicts and no cycles: the cyclic GC would rescan them over and over
    # (about 40% of the build time at 7,500 nodes), so it pauses while the world is built.
    collecting = gc.isenabled()
    gc.disable()
    try:
        world = _build(
            nodes - extra,
            seed,
            now or DEFAULT_NOW,
            not_ready_fraction,
            cordoned_fraction,
            unhealthy_gpu_fraction,
        )
        add_features(world, chosen, nodes)
        return world
    finally:
        if collecting:
            gc.enable()


def _build(
    nodes: int,
    seed: int,
    now: datetime,
    not_ready_fraction: float,
    cordoned_fraction: float,
    unhealthy_gpu_fraction: float,
) -> World:
    rng = random.Random(f"annex-simulator:{seed}")
    ids = Ids(rng)
    node_factory = NodeFactory(ids, now)
    slots = node_factory.slots(nodes)

    def pick(fraction: float, candidates: list[NodeSlot]) -> list[NodeSlot]:
        if nodes < 10 or not candidates:
            return []
        count = min(len(candidates), max(1, round(fraction * nodes)))
        return rng.sample(candidates, count)

    gpu_slots = [s for s in slots if s.is_gpu]
    for slot in pick(unhealthy_gpu_fraction, gpu_slots):
        node_factory.mark_unhealthy(slot, rng.choice((1, 1, 2)))
    for slot in pick(cordoned_fraction, slots):
        slot.cordoned = True

    placement = Placement(ids, now, slots)
    placement.place_all()
    _choose_not_ready(rng, placement, pick(not_ready_fraction, gpu_slots))

    world = World(seed=seed, now=now)
    rv = _Versions(FIRST_RESOURCE_VERSION)
    world.namespaces = [_namespace(ids, name, now, rv.next()) for name in _namespaces()]
    world.priority_classes = [
        _priority_class(ids, name, value, text, now, rv.next())
        for name, (value, text) in PRIORITY_CLASSES.items()
        if name != PROBE_PRIORITY_CLASS  # added with the probe Job, last
    ]
    node_objects = {slot.name: node_factory.render(slot, rv.next()) for slot in slots}
    world.nodes = list(node_objects.values())
    world.jobs = [_job(ids, job, rv.next()) for job in placement.jobs]
    pod_factory = PodFactory(ids, now)
    rendered: dict[int, dict] = {}
    for plan in placement.pods:
        rendered[id(plan)] = pod_factory.render(plan, rv.next())
    world.pods = list(rendered.values())
    world.events = [
        _event(ids, event, rendered, node_objects, world.jobs, placement.jobs, rv.next())
        for event in placement.events
    ]
    world.gpus = [gpu for slot in slots for gpu in slot.gpus]
    world.training_runs = placement.runs
    world.node_pools = {slot.name: slot.pool.name for slot in slots}
    world.gpu_allocated = {
        slot.name: {r: slot.allocatable[r] - slot.free[r] for r in slot.allocatable}
        for slot in slots
        if slot.is_gpu
    }
    # last, so that every object before it is the same with or without the probe Job
    add_probe_job(
        world,
        slots,
        ids,
        rv.next,
        lambda name, version: _namespace(ids, name, now, version),
        lambda name, value, text, version: _priority_class(ids, name, value, text, now, version),
    )
    world.resource_version = rv.current
    return world


class _Versions:
    def __init__(self, start: int) -> None:
        self.current = start

    def next(self) -> int:
        self.current += 1
        return self.current


def _namespaces() -> list[str]:
    return sorted({*SYSTEM_NAMESPACES, *TEAM_NAMESPACES, "research"})


def _choose_not_ready(rng: random.Random, placement: Placement, chosen: list[NodeSlot]) -> None:
    """NotReady nodes keep their pods; on nodes whose kubelet went silent they read Unknown."""
    if not chosen:
        return
    busy = {
        id(p.node)
        for p in placement.pods
        if p.node is not None
        and p.phase == "Running"
        and p.owner is not None
        and p.owner.get("kind") in ("Job", "ReplicaSet")
    }
    chosen.sort(key=lambda s: (id(s) not in busy, s.index))
    for i, slot in enumerate(chosen):
        slot.ready = "Unknown" if i % 2 == 0 else "False"
        placement.events.append(
            EventPlan(
                slot,
                "NodeNotReady",
                f"Node {slot.name} status is now: NodeNotReady",
                "Normal",
                "node-controller",
                placement.now - timedelta(minutes=30),
            )
        )
    silent = {id(s) for s in chosen if s.ready == "Unknown"}
    for plan in placement.pods:
        if (
            plan.node is not None
            and id(plan.node) in silent
            and plan.phase == "Running"
            and plan.owner is not None
            and plan.owner.get("kind") != "DaemonSet"
        ):
            plan.phase = "Unknown"
    del rng


def _namespace(ids: Ids, name: str, now: datetime, rv: int) -> dict:
    labels = {"kubernetes.io/metadata.name": name}
    if name.startswith("team-") or name == "research":
        labels["annex.dev/team"] = name.removeprefix("team-")
    if name.startswith("annex-"):
        labels["app.kubernetes.io/part-of"] = "annex"
    return {
        "metadata": {
            "name": name,
            "uid": ids.uid(),
            "resourceVersion": str(rv),
            "creationTimestamp": timestamp(now - timedelta(days=300)),
            "labels": labels,
            "annotations": {SIMULATED_ANNOTATION: "true"},
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def _priority_class(ids: Ids, name: str, value: int, text: str, now: datetime, rv: int) -> dict:
    metadata: dict = {
        "name": name,
        "uid": ids.uid(),
        "resourceVersion": str(rv),
        "creationTimestamp": timestamp(now - timedelta(days=300)),
        "annotations": {SIMULATED_ANNOTATION: "true"},
    }
    body = {
        "metadata": metadata,
        "value": value,
        "description": text,
        "preemptionPolicy": "Never" if name == "placeholder" else "PreemptLowerPriority",
    }
    if name == "default":
        body["globalDefault"] = False
    return body


def _job(ids: Ids, job: JobPlan, rv: int) -> dict:
    run = job.run
    size = len(job.pods)
    spec = {
        "parallelism": size,
        "completions": size,
        "backoffLimit": 0,
        "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": job.uid}},
        "template": {"metadata": {"labels": job.labels}, "spec": job.template_spec},
        "completionMode": "Indexed",
        "suspend": False,
        "podReplacementPolicy": "TerminatingOrFailed",
    }
    status: dict = {"startTime": timestamp(job.created + timedelta(seconds=1))}
    if run.state in ("completed", "failed"):
        finished = timestamp(run.finished or job.created)
        spec["ttlSecondsAfterFinished"] = 86400
        if run.state == "completed":
            status["completionTime"] = finished
            status["succeeded"] = size
            status["completedIndexes"] = "0" if size == 1 else f"0-{size - 1}"
            kinds = (
                (
                    "SuccessCriteriaMet",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                ),
                ("Complete", "CompletionsReached", "Reached expected number of succeeded pods"),
            )
        else:
            status["failed"] = size
            kinds = (
                (
                    "FailureTarget",
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                ),
                ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
            )
        status["conditions"] = [
            {
                "type": kind,
                "status": "True",
                "lastProbeTime": finished,
                "lastTransitionTime": finished,
                "reason": reason,
                "message": message,
            }
            for kind, reason, message in kinds
        ]
        status["ready"] = 0
    else:
        status["active"] = size
        status["ready"] = sum(1 for p in job.pods if p.phase == "Running")
    status["terminating"] = 0
    status["uncountedTerminatedPods"] = {}
    return {
        "metadata": {
            "name": run.job_name,
            "namespace": run.namespace,
            "uid": job.uid,
            "resourceVersion": str(rv),
            "generation": 1,
            "creationTimestamp": timestamp(job.created),
            "labels": {k: v for k, v in job.labels.items() if k.startswith("training.")},
            "annotations": {SIMULATED_ANNOTATION: "true"},
        },
        "spec": spec,
        "status": status,
    }


def _event(
    ids: Ids,
    event: EventPlan,
    pods: dict[int, dict],
    nodes: dict[str, dict],
    jobs: list[dict],
    job_plans: list[JobPlan],
    rv: int,
) -> dict:
    target = event.target
    if isinstance(target, PodPlan):
        obj = pods[id(target)]
        involved = {
            "kind": "Pod",
            "namespace": target.namespace,
            "name": target.name,
            "uid": obj["metadata"]["uid"],
            "apiVersion": "v1",
            "resourceVersion": obj["metadata"]["resourceVersion"],
        }
        namespace = target.namespace
    elif isinstance(target, NodeSlot):
        involved = {"kind": "Node", "name": target.name, "uid": target.name, "apiVersion": "v1"}
        namespace = "default"
    else:
        assert isinstance(target, JobPlan)
        obj = jobs[job_plans.index(target)]
        involved = {
            "kind": "Job",
            "namespace": target.run.namespace,
            "name": target.run.job_name,
            "uid": target.uid,
            "apiVersion": "batch/v1",
            "resourceVersion": obj["metadata"]["resourceVersion"],
        }
        namespace = target.run.namespace
    when = timestamp(event.when)
    body: dict = {
        "metadata": {
            "name": f"{involved['name']}.{ids.hex(16)}",
            "namespace": namespace,
            "uid": ids.uid(),
            "resourceVersion": str(rv),
            "creationTimestamp": when,
            "annotations": {SIMULATED_ANNOTATION: "true"},
        },
        "involvedObject": involved,
        "reason": event.reason,
        "message": event.message,
    }
    if event.component == "default-scheduler":  # events.k8s.io-style: eventTime, no counts
        body["source"] = {}
        body["eventTime"] = micro_timestamp(event.when)
        body["type"] = event.kind
        body["action"] = "Scheduling"
        body["reportingComponent"] = "default-scheduler"
        body["reportingInstance"] = "default-scheduler-control-plane-0"
        return body
    source = {"component": event.component}
    if event.component == "kubelet" and isinstance(target, PodPlan) and target.node:
        source["host"] = target.node.name
    body["source"] = source
    body["firstTimestamp"] = when
    body["lastTimestamp"] = when
    body["count"] = event.count
    body["type"] = event.kind
    body["reportingComponent"] = event.component
    body["reportingInstance"] = ""
    return body


__all__ = ["GPU", "MAX_NODES", "build_world", "gpu_need"]

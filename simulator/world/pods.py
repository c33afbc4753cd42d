"""Pod objects: spec as admission leaves it, status as the kubelet reports it, per phase.

Containers, tolerations and volume templates are shared between pods of one workload (the
dicts are reused, not copied), which keeps a 75,000-pod world in memory; whoever changes a
pod later (the API server's mutations) copies it first.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from simulator.world.catalog import PRIORITY_CLASSES, SIMULATED_ANNOTATION
from simulator.world.model import Ids, timestamp
from simulator.world.nodes import NodeSlot

GPU_TOLERATIONS = [
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]
DAEMONSET_TOLERATIONS = [
    {"operator": "Exists"},
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


def container(
    name: str,
    image: str,
    *,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    command: list[str] | None = None,
    args: list[str] | None = None,
    env: list[dict] | None = None,
    mounts: list[dict] | None = None,
    ports: list[dict] | None = None,
    restart_policy: str | None = None,
) -> dict:
    """A container spec with the defaults the API server fills in."""
    spec: dict = {"name": name, "image": image}
    if command:
        spec["command"] = command
    if args:
        spec["args"] = args
    if ports:
        spec["ports"] = ports
    if env:
        spec["env"] = env
    resources: dict = {}
    if limits:
        resources["limits"] = limits
    if requests:
        resources["requests"] = requests
    spec["resources"] = resources
    if mounts:
        spec["volumeMounts"] = mounts
    spec["terminationMessagePath"] = "/dev/termination-log"
    spec["terminationMessagePolicy"] = "File"
    spec["imagePullPolicy"] = "IfNotPresent"
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    return spec


@dataclass(eq=False)
class PodPlan:
    """Everything that decides one pod; `PodFactory.render` turns it into the object."""

    namespace: str
    name: str
    containers: list[dict]
    created: datetime
    phase: str = "Running"  # Pending | Running | Succeeded | Failed | Unknown
    node: NodeSlot | None = None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    owner: dict | None = None
    generate_name: str | None = None
    init_containers: list[dict] = field(default_factory=list)
    volumes: list[dict] = field(default_factory=list)
    priority_class: str | None = None
    restart_policy: str = "Always"
    service_account: str = "default"
    tolerations: list[dict] | None = None
    node_selector: dict[str, str] | None = None
    affinity: dict | None = None
    runtime_class: str | None = None
    overhead: dict[str, str] | None = None
    host_network: bool = False
    terminating: bool = False
    nominated_node: str | None = None
    unschedulable_message: str | None = None
    failure: str | None = None  # "Error" | "OOMKilled" | "Evicted"
    finished: datetime | None = None
    resource_claims: list[dict] | None = None


class PodFactory:
    """Renders PodPlans into Pod objects with status matching the phase."""

    def __init__(self, ids: Ids, now: datetime) -> None:
        self.ids = ids
        self.rng = ids.rng
        self.now = now

    def render(self, plan: PodPlan, rv: int) -> dict:
        access = f"kube-api-access-{self.ids.suffix(5)}"
        access_mount = {
            "name": access,
            "readOnly": True,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
        }
        containers = [_with_mount(c, access_mount) for c in plan.containers]
        inits = [_with_mount(c, access_mount) for c in plan.init_containers]
        metadata: dict = {"name": plan.name}
        if plan.generate_name:
            metadata["generateName"] = plan.generate_name
        metadata["namespace"] = plan.namespace
        metadata["uid"] = self.ids.uid()
        metadata["resourceVersion"] = str(rv)
        metadata["creationTimestamp"] = timestamp(plan.created)
        if plan.terminating:
            metadata["deletionTimestamp"] = timestamp(
                self.now + timedelta(seconds=self.ids.randint(5, 25))
            )
            metadata["deletionGracePeriodSeconds"] = 30
        metadata["labels"] = plan.labels
        metadata["annotations"] = {**plan.annotations, SIMULATED_ANNOTATION: "true"}
        if plan.owner:
            metadata["ownerReferences"] = [plan.owner]

        spec: dict = {"volumes": [*plan.volumes, _access_volume(access)]}
        if inits:
            spec["initContainers"] = inits
        spec["containers"] = containers
        spec["restartPolicy"] = plan.restart_policy
        spec["terminationGracePeriodSeconds"] = 30
        spec["dnsPolicy"] = "ClusterFirstWithHostNet" if plan.host_network else "ClusterFirst"
        if plan.node_selector:
            spec["nodeSelector"] = plan.node_selector
        spec["serviceAccountName"] = plan.service_account
        spec["serviceAccount"] = plan.service_account
        if plan.node is not None:
            spec["nodeName"] = plan.node.name
        if plan.host_network:
            spec["hostNetwork"] = True
        spec["securityContext"] = {}
        if plan.affinity:
            spec["affinity"] = plan.affinity
        spec["schedulerName"] = "default-scheduler"
        if plan.tolerations:
            spec["tolerations"] = plan.tolerations
        if plan.priority_class:
            spec["priorityClassName"] = plan.priority_class
            spec["priority"] = PRIORITY_CLASSES[plan.priority_class][0]
        else:
            spec["priority"] = 0
        if plan.runtime_class:
            spec["runtimeClassName"] = plan.runtime_class
        spec["enableServiceLinks"] = True
        spec["preemptionPolicy"] = "PreemptLowerPriority"
        if plan.overhead:
            spec["overhead"] = plan.overhead
        if plan.resource_claims:
            spec["resourceClaims"] = plan.resource_claims
        return {"metadata": metadata, "spec": spec, "status": self._status(plan, containers)}

    def _status(self, plan: PodPlan, containers: list[dict]) -> dict:
        # epoch seconds, not datetimes: this runs for every one of ~75,000 pods
        created = int(plan.created.timestamp())
        scheduled = created + self.ids.randint(1, 20)
        started = scheduled + self.ids.randint(5, 240)
        if plan.node is None:
            status: dict = {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "lastTransitionTime": timestamp(scheduled),
                        "reason": "Unschedulable",
                        "message": plan.unschedulable_message or "0/1 nodes are available.",
                    }
                ],
            }
            if plan.nominated_node:
                status["nominatedNodeName"] = plan.nominated_node
            status["qosClass"] = _qos(plan.containers)
            return status

        node = plan.node
        pod_ip = node.internal_ip if plan.host_network else node.next_pod_ip()
        phase = plan.phase
        ready = phase == "Running"
        done = phase in ("Succeeded", "Failed")
        status = {"phase": phase}
        if plan.failure == "Evicted":
            status["message"] = (
                "The node was low on resource: ephemeral-storage. Threshold quantity: "
                "10Gi, available: 8123456Ki."
            )
            status["reason"] = "Evicted"
        started_at = timestamp(started)
        when_ready = timestamp(started + self.ids.randint(2, 30))
        reason = "PodCompleted" if done else None
        unready = None if ready or done else _unready(containers)
        not_ready_reason = reason or (None if ready else "ContainersNotReady")
        status["conditions"] = [
            _pod_condition(
                "PodReadyToStartContainers",
                "True" if phase != "Pending" and not done else "False",
                started_at,
            ),
            _pod_condition("Initialized", "True", started_at, reason),
            _pod_condition(
                "Ready", "True" if ready else "False", when_ready, not_ready_reason, unready
            ),
            _pod_condition(
                "ContainersReady",
                "True" if ready else "False",
                when_ready,
                not_ready_reason,
                unready,
            ),
            _pod_condition("PodScheduled", "True", timestamp(scheduled)),
        ]
        status["hostIP"] = node.internal_ip
        status["hostIPs"] = [{"ip": node.internal_ip}]
        if phase != "Pending":
            status["podIP"] = pod_ip
            status["podIPs"] = [{"ip": pod_ip}]
        status["startTime"] = timestamp(scheduled)
        finished = (
            int(plan.finished.timestamp())
            if plan.finished
            else started + self.ids.randint(1800, 100000)
        )
        if plan.init_containers:
            status["initContainerStatuses"] = [
                self._container_status(
                    c,
                    phase if c.get("restartPolicy") == "Always" else "Succeeded",
                    plan,
                    started_at,
                    timestamp(started) if c.get("restartPolicy") != "Always" else None,
                    init=True,
                )
                for c in plan.init_containers
            ]
        finished_at = timestamp(finished) if done else None
        status["containerStatuses"] = [
            self._container_status(c, phase, plan, started_at, finished_at) for c in plan.containers
        ]
        status["qosClass"] = _qos(plan.containers)
        return status

    def _container_status(
        self,
        spec: dict,
        phase: str,
        plan: PodPlan,
        started_at: str,
        finished_at: str | None,
        init: bool = False,
    ) -> dict:
        image = spec["image"]
        status: dict = {"name": spec["name"]}
        if phase == "Pending":
            status["state"] = {"waiting": {"reason": "ContainerCreating"}}
            status["lastState"] = {}
            status["ready"] = False
            status["restartCount"] = 0
            status["image"] = image
            status["imageID"] = ""
            status["started"] = False
            return status
        container_id = f"containerd://{self.ids.hex(64)}"
        if phase in ("Running", "Unknown"):
            state = {"running": {"startedAt": started_at}}
        else:
            exit_code, reason = 0, "Completed"
            if phase == "Failed":
                exit_code, reason = {
                    "OOMKilled": (137, "OOMKilled"),
                    "Evicted": (137, "ContainerStatusUnknown"),
                }.get(plan.failure or "", (1, "Error"))
            state = {
                "terminated": {
                    "exitCode": exit_code,
                    "reason": reason,
                    "startedAt": started_at,
                    "finishedAt": finished_at or started_at,
                    "containerID": container_id,
                }
            }
        status["state"] = state
        status["lastState"] = {}
        status["ready"] = phase == "Running"
        status["restartCount"] = 0
        status["image"] = image
        status["imageID"] = _image_id(image)
        status["containerID"] = container_id
        status["started"] = phase in ("Running", "Unknown") and not (
            init and spec.get("restartPolicy") != "Always"
        )
        return status


_IMAGE_IDS: dict[str, str] = {}


def _image_id(image: str) -> str:
    """The digest an image tag resolved to; one per image across the cluster."""
    if image not in _IMAGE_IDS:
        digest = hashlib.sha256(image.encode()).hexdigest()
        _IMAGE_IDS[image] = f"{image.split(':')[0]}@sha256:{digest}"
    return _IMAGE_IDS[image]


def _with_mount(spec: dict, mount: dict) -> dict:
    copy = dict(spec)
    copy["volumeMounts"] = [*spec.get("volumeMounts", ()), mount]
    # keep the API's field order: volumeMounts come before terminationMessagePath
    return copy


def _access_volume(name: str) -> dict:
    return {"name": name, "projected": _ACCESS_SOURCE}


_ACCESS_SOURCE = {
    "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {
            "configMap": {
                "name": "kube-root-ca.crt",
                "items": [{"key": "ca.crt", "path": "ca.crt"}],
            }
        },
        {
            "downwardAPI": {
                "items": [
                    {
                        "path": "namespace",
                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                    }
                ]
            }
        },
    ],
    "defaultMode": 420,
}


def _pod_condition(
    kind: str, status: str, since: str, reason: str | None = None, message: str | None = None
) -> dict:
    condition = {"type": kind, "status": status, "lastTransitionTime": since}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def _unready(containers: list[dict]) -> str:
    return "containers with unready status: [" + " ".join(c["name"] for c in containers) + "]"


def _qos(containers: list[dict]) -> str:
    """QoS class from cpu/memory only, as the API server computes it."""
    any_set = False
    guaranteed = True
    for spec in containers:
        resources = spec.get("resources", {})
        requests = resources.get("requests", {})
        limits = resources.get("limits", {})
        for resource in ("cpu", "memory"):
            if resource in requests or resource in limits:
                any_set = True
            if (
                resource not in limits
                or requests.get(resource, limits[resource]) != limits[resource]
            ):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"

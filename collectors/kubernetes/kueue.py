"""Kueue (kueue.x-k8s.io/v1beta1): who waits for GPUs, and how each team's quota is used.

Kueue admits batch workloads against quotas: a ``Workload`` (one per Job) waits in a team's
``LocalQueue``, which feeds a ``ClusterQueue`` holding nominal quota per ``ResourceFlavor`` and
resource, borrowing from its cohort up to a limit. These decoders keep what the queue marts need:

* a Workload's queue, owner job, GPUs requested (its pod sets: count × the PodRequests rule) and
  admitted per flavor, and the times its conditions changed (``lastTransitionTime`` of
  QuotaReserved, Admitted, Evicted, Preempted, Finished), from which its queued and admitted
  intervals follow (``queued_from``/``queued_to``, ``admitted_from``/``admitted_to``);
* a ClusterQueue's cohort and, per flavor and resource, nominal quota, borrowing and lending
  limits, and the usage and borrowing its status reports;
* LocalQueues (namespace → ClusterQueue: a queued workload names only its local queue) and
  ResourceFlavors (their node labels).

Kueue is optional: ``collect`` lists these only when the API server serves the group.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pyarrow as pa

from collectors.kubernetes import objects, schema
from collectors.kubernetes.decode import (
    Rejected,
    ResourceDecoder,
    _condition,
    _controller,
    _labels,
    _list_of_structs,
    _timestamps,
    pod_gpu_requests,
)
from collectors.kubernetes.quantity import parse_quantity
from collectors.kubernetes.requests import is_gpu_resource

GROUP_VERSION = "kueue.x-k8s.io/v1beta1"
DISCOVERY_PATH = f"/apis/{GROUP_VERSION}"
"""The group version's discovery document: served exactly when Kueue's CRDs are installed."""


class _Struct(msgspec.Struct, rename="camel", gc=False):
    pass


# --- workloads ---------------------------------------------------------------------------------


class PodTemplate(_Struct):
    spec: objects.PodSpec = msgspec.field(default_factory=objects.PodSpec)


class PodSet(_Struct):
    name: str = ""
    count: int = 1
    template: PodTemplate = msgspec.field(default_factory=PodTemplate)


class WorkloadSpec(_Struct):
    queue_name: str | None = None
    priority_class_name: str | None = None
    priority: int | None = None
    active: bool | None = None
    pod_sets: list[PodSet] = []


class PodSetAssignment(_Struct):
    name: str = ""
    flavors: dict[str, str] | None = None
    resource_usage: dict[str, objects.Quantity] | None = None
    count: int | None = None


class Admission(_Struct):
    cluster_queue: str | None = None
    pod_set_assignments: list[PodSetAssignment] = []


class WorkloadStatus(_Struct):
    conditions: list[objects.Condition] | None = None
    admission: Admission | None = None


class Workload(_Struct):
    metadata: objects.ObjectMeta = msgspec.field(default_factory=objects.ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)
    status: WorkloadStatus = msgspec.field(default_factory=WorkloadStatus)


class WorkloadList(_Struct):
    metadata: objects.ListMeta = msgspec.field(default_factory=objects.ListMeta)
    items: list[Workload] = []


# --- queues and flavors ------------------------------------------------------------------------


class ResourceQuota(_Struct):
    name: str = ""
    nominal_quota: objects.Quantity | None = None
    borrowing_limit: objects.Quantity | None = None
    lending_limit: objects.Quantity | None = None


class FlavorQuotas(_Struct):
    name: str = ""
    resources: list[ResourceQuota] = []


class ResourceGroup(_Struct):
    flavors: list[FlavorQuotas] = []


class ClusterQueueSpec(_Struct):
    cohort: str | None = None
    queueing_strategy: str | None = None
    resource_groups: list[ResourceGroup] = []


class ResourceUsage(_Struct):
    name: str = ""
    total: objects.Quantity | None = None
    borrowed: objects.Quantity | None = None


class FlavorUsage(_Struct):
    name: str = ""
    resources: list[ResourceUsage] = []


class ClusterQueueStatus(_Struct):
    pending_workloads: int | None = None
    admitted_workloads: int | None = None
    flavors_usage: list[FlavorUsage] | None = None


class ClusterQueue(_Struct):
    metadata: objects.ObjectMeta = msgspec.field(default_factory=objects.ObjectMeta)
    spec: ClusterQueueSpec = msgspec.field(default_factory=ClusterQueueSpec)
    status: ClusterQueueStatus = msgspec.field(default_factory=ClusterQueueStatus)


class ClusterQueueList(_Struct):
    metadata: objects.ListMeta = msgspec.field(default_factory=objects.ListMeta)
    items: list[ClusterQueue] = []


class LocalQueueSpec(_Struct):
    cluster_queue: str | None = None


class LocalQueueStatus(_Struct):
    pending_workloads: int | None = None
    admitted_workloads: int | None = None


class LocalQueue(_Struct):
    metadata: objects.ObjectMeta = msgspec.field(default_factory=objects.ObjectMeta)
    spec: LocalQueueSpec = msgspec.field(default_factory=LocalQueueSpec)
    status: LocalQueueStatus = msgspec.field(default_factory=LocalQueueStatus)


class LocalQueueList(_Struct):
    metadata: objects.ListMeta = msgspec.field(default_factory=objects.ListMeta)
    items: list[LocalQueue] = []


class ResourceFlavorSpec(_Struct):
    node_labels: dict[str, str] | None = None


class ResourceFlavor(_Struct):
    metadata: objects.ObjectMeta = msgspec.field(default_factory=objects.ObjectMeta)
    spec: ResourceFlavorSpec = msgspec.field(default_factory=ResourceFlavorSpec)


class ResourceFlavorList(_Struct):
    metadata: objects.ListMeta = msgspec.field(default_factory=objects.ListMeta)
    items: list[ResourceFlavor] = []


# --- what a workload's conditions say ----------------------------------------------------------


def _true_since(status: WorkloadStatus, kind: str) -> tuple[str | None, str | None]:
    """(lastTransitionTime, reason) of condition ``kind`` when it is True; else (None, None)."""
    condition = _condition(status.conditions, kind)
    if condition is None or condition.status != "True":
        return None, None
    return condition.last_transition_time, condition.reason


def workload_state(workload: Workload) -> str:
    """finished, admitted, quota_reserved, preempted, evicted, inactive or queued."""
    status = workload.status
    if _true_since(status, "Finished")[0]:
        return "finished"
    if _true_since(status, "Admitted")[0]:
        return "admitted"
    if _true_since(status, "QuotaReserved")[0]:
        return "quota_reserved"
    if workload.spec.active is False:
        return "inactive"
    if _true_since(status, "Preempted")[0]:
        return "preempted"
    if _true_since(status, "Evicted")[0]:
        return "evicted"
    return "queued"


def _gpus_requested(spec: WorkloadSpec) -> dict[str, int]:
    """GPU-like requests over all pod sets: count × the pod's PodRequests."""
    total: dict[str, int] = {}
    for pod_set in spec.pod_sets:
        for name, gpus in pod_gpu_requests(pod_set.template.spec).items():
            total[name] = total.get(name, 0) + gpus * pod_set.count
    return total


def _gpus_admitted(admission: Admission | None) -> list[tuple[str | None, str, int]]:
    """(flavor, resource_name, gpus) of the admission's GPU-like resource usage."""
    if admission is None:
        return []
    total: dict[tuple[str | None, str], int] = {}
    for assignment in admission.pod_set_assignments:
        flavors = assignment.flavors or {}
        for name, value in (assignment.resource_usage or {}).items():
            if is_gpu_resource(name):
                key = (flavors.get(name), name)
                total[key] = total.get(key, 0) + int(parse_quantity(value))
    return [(flavor, name, gpus) for (flavor, name), gpus in total.items()]


class WorkloadDecoder(ResourceDecoder[Workload]):
    table = "kueue_workloads"
    list_type = WorkloadList
    item_type = Workload
    arrow_schema = schema.KUEUE_WORKLOADS

    def check(self, item: Workload) -> tuple[dict[str, int], list[tuple[str | None, str, int]]]:
        super().check(item)
        try:
            return _gpus_requested(item.spec), _gpus_admitted(item.status.admission)
        except (ValueError, ZeroDivisionError) as exc:
            raise Rejected("invalid_quantity", f"workload GPU quantity: {exc}") from None

    def columns(self, items: list[Workload], extras: list[Any]) -> list[pa.Array]:
        metas = [w.metadata for w in items]
        owners = [_controller(m) for m in metas]
        statuses = [w.status for w in items]
        states = [workload_state(w) for w in items]
        reserved = [_true_since(s, "QuotaReserved")[0] for s in statuses]
        admitted = [_true_since(s, "Admitted")[0] for s in statuses]
        evicted = [_true_since(s, "Evicted") for s in statuses]
        preempted = [_true_since(s, "Preempted") for s in statuses]
        finished = [_true_since(s, "Finished")[0] for s in statuses]
        created = [m.creation_timestamp for m in metas]
        # Queued from creation, or from the last eviction (Kueue requeues an evicted workload);
        # until admission. Admitted from admission until it finished (or was evicted).
        waiting = ("queued", "preempted", "evicted", "quota_reserved")
        queued_from = [
            e[0] if state in waiting and e[0] else c
            for state, e, c in zip(states, evicted, created, strict=True)
        ]
        requests = [e[0] for e in extras]
        # The queued interval ends, and the admitted one starts, at admission.
        admission = [
            None if state in waiting else a for state, a in zip(states, admitted, strict=True)
        ]
        return [
            pa.array([m.uid for m in metas], pa.string()),
            pa.array([m.namespace for m in metas], pa.string()),
            pa.array([m.name for m in metas], pa.string()),
            pa.array([m.resource_version for m in metas], pa.string()),
            _timestamps(created),
            _labels([m.labels for m in metas]),
            pa.array([w.spec.queue_name for w in items], pa.string()),
            pa.array(
                [s.admission.cluster_queue if s.admission else None for s in statuses], pa.string()
            ),
            pa.array([o.kind if o else None for o in owners], pa.string()),
            pa.array([o.name if o else None for o in owners], pa.string()),
            pa.array([w.spec.priority_class_name for w in items], pa.string()),
            pa.array([w.spec.priority for w in items], pa.int32()),
            _list_of_structs([list(r.items()) for r in requests], schema.GPU_REQUEST),
            pa.array([sum(r.values()) for r in requests], pa.int64()),
            _list_of_structs([e[1] for e in extras], schema.FLAVOR_GPUS),
            pa.array(states, pa.string()),
            _timestamps(reserved),
            _timestamps(admitted),
            _timestamps([e[0] for e in evicted]),
            pa.array([e[1] for e in evicted], pa.string()),
            _timestamps([p[0] for p in preempted]),
            pa.array([p[1] for p in preempted], pa.string()),
            _timestamps(finished),
            _timestamps(queued_from),
            _timestamps(admission),
            _timestamps(admission),
            _timestamps(finished),
        ]


def _amount(value: objects.Quantity | None) -> float | None:
    """A quantity in its base unit (count, cores, bytes) as a float; None when absent."""
    return None if value is None else float(parse_quantity(value))


class ClusterQueueDecoder(ResourceDecoder[ClusterQueue]):
    table = "kueue_cluster_queues"
    list_type = ClusterQueueList
    item_type = ClusterQueue
    arrow_schema = schema.KUEUE_CLUSTER_QUEUES

    def check(self, item: ClusterQueue) -> list[tuple[Any, ...]]:
        super().check(item)
        try:
            return _quotas(item)
        except (ValueError, ZeroDivisionError) as exc:
            raise Rejected("invalid_quantity", f"cluster queue quota: {exc}") from None

    def columns(self, items: list[ClusterQueue], extras: list[Any]) -> list[pa.Array]:
        metas = [q.metadata for q in items]
        return [
            pa.array([m.uid for m in metas], pa.string()),
            pa.array([m.name for m in metas], pa.string()),
            pa.array([m.resource_version for m in metas], pa.string()),
            _timestamps([m.creation_timestamp for m in metas]),
            pa.array([q.spec.cohort for q in items], pa.string()),
            pa.array([q.spec.queueing_strategy for q in items], pa.string()),
            pa.array([q.status.pending_workloads for q in items], pa.int32()),
            pa.array([q.status.admitted_workloads for q in items], pa.int32()),
            _list_of_structs(extras, schema.QUEUE_QUOTA),
        ]


def _quotas(queue: ClusterQueue) -> list[tuple[Any, ...]]:
    """Per (flavor, resource): GPU-like or not, nominal, borrowing and lending limits, used,
    borrowed."""
    usage: dict[tuple[str, str], ResourceUsage] = {
        (flavor.name, r.name): r
        for flavor in queue.status.flavors_usage or ()
        for r in flavor.resources
    }
    rows = []
    for group in queue.spec.resource_groups:
        for flavor in group.flavors:
            for r in flavor.resources:
                used = usage.get((flavor.name, r.name))
                rows.append(
                    (
                        flavor.name,
                        r.name,
                        is_gpu_resource(r.name),
                        _amount(r.nominal_quota),
                        _amount(r.borrowing_limit),
                        _amount(r.lending_limit),
                        _amount(used.total) if used else None,
                        _amount(used.borrowed) if used else None,
                    )
                )
    return rows


class LocalQueueDecoder(ResourceDecoder[LocalQueue]):
    table = "kueue_local_queues"
    list_type = LocalQueueList
    item_type = LocalQueue
    arrow_schema = schema.KUEUE_LOCAL_QUEUES

    def columns(self, items: list[LocalQueue], extras: list[Any]) -> list[pa.Array]:
        metas = [q.metadata for q in items]
        return [
            pa.array([m.uid for m in metas], pa.string()),
            pa.array([m.namespace for m in metas], pa.string()),
            pa.array([m.name for m in metas], pa.string()),
            pa.array([m.resource_version for m in metas], pa.string()),
            _timestamps([m.creation_timestamp for m in metas]),
            pa.array([q.spec.cluster_queue for q in items], pa.string()),
            pa.array([q.status.pending_workloads for q in items], pa.int32()),
            pa.array([q.status.admitted_workloads for q in items], pa.int32()),
        ]


class ResourceFlavorDecoder(ResourceDecoder[ResourceFlavor]):
    table = "kueue_resource_flavors"
    list_type = ResourceFlavorList
    item_type = ResourceFlavor
    arrow_schema = schema.KUEUE_RESOURCE_FLAVORS

    def columns(self, items: list[ResourceFlavor], extras: list[Any]) -> list[pa.Array]:
        metas = [f.metadata for f in items]
        return [
            pa.array([m.uid for m in metas], pa.string()),
            pa.array([m.name for m in metas], pa.string()),
            pa.array([m.resource_version for m in metas], pa.string()),
            _timestamps([m.creation_timestamp for m in metas]),
            _labels([f.spec.node_labels for f in items]),
        ]


KUEUE_DECODERS: dict[str, type[ResourceDecoder[Any]]] = {
    "kueue_workloads": WorkloadDecoder,
    "kueue_cluster_queues": ClusterQueueDecoder,
    "kueue_local_queues": LocalQueueDecoder,
    "kueue_resource_flavors": ResourceFlavorDecoder,
}

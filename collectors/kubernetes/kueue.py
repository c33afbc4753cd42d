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

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

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
    """GPU requests over all pod sets: count × the pod's PodRequests (devices and HAMi cores)."""
    total: dict[str, int] = {}
    for pod_set in spec.pod_sets:
        for name, gpus in pod_gpu_requests(pod_set.template.spec).items():
            total[name] = total.get(name, 0) + gpus * pod_set.count
    return total


def _gpus_admitted(admission: Admission | None) -> list[tuple[str | None, str, int]]:
    """(flavor, resource_name, gpus) of the admission's GPU device usage."""
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


def _amount(value: objects.Quantity | None) -> float | None:
    """A quantity in its base unit (count, cores, bytes) as a float; None when absent."""
    return None if value is None else float(parse_quantity(value))


def _quotas(queue: ClusterQueue) -> list[tuple[Any, ...]]:
    """Per (flavor, resource): GPU devices or not, nominal, borrowing and lending limits, used,
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


_WAITING = ("queued", "preempted", "evicted", "quota_reserved")


def _workload_facts(workload: Workload) -> dict[str, Any]:
    """What a Workload's columns read beyond its fields: GPUs, state and condition times."""
    status = workload.status
    state = workload_state(workload)
    created = workload.metadata.creation_timestamp
    evicted_at, eviction_reason = _true_since(status, "Evicted")
    admitted_at = _true_since(status, "Admitted")[0]
    requests = _gpus_requested(workload.spec)
    return {
        "requests": requests,
        "admitted_by_flavor": _gpus_admitted(status.admission),
        "state": state,
        "evicted": (evicted_at, eviction_reason),
        # Queued from creation, or from the last eviction (Kueue requeues an evicted workload);
        # until admission. Admitted from admission until it finished (or was evicted).
        "queued_from": evicted_at if state in _WAITING and evicted_at else created,
        # The queued interval ends, and the admitted one starts, at admission.
        "admission": None if state in _WAITING else admitted_at,
    }


# --- one table-driven decoder ------------------------------------------------------------------

Reader = Callable[[Any, Any], Any]
"""One column's value from (the object, what ``facts`` derived of it)."""


def _encode(values: list[Any], arrow_field: pa.Field) -> pa.Array:
    """A column's values as its schema type says (timestamps parsed, labels, lists of structs)."""
    kind = arrow_field.type
    if kind == schema.TIMESTAMP:
        return _timestamps(values)
    if kind == schema.LABELS:
        return _labels(values)
    if pa.types.is_list(kind) and pa.types.is_struct(kind.value_type):
        return _list_of_structs(values, kind.value_type)
    return pa.array(values, kind)


class KueueDecoder(ResourceDecoder[Any]):
    """Kueue's objects as tables: each subclass names, per column of its schema, what it reads.

    The columns follow ``arrow_schema`` (less ``list_attempt``, which ``build`` adds) and each is
    encoded by its type; ``facts`` derives once per object what several columns read (an
    invalid quantity there rejects the object, ``invalid`` says which).
    """

    readers: ClassVar[Mapping[str, Reader]]
    facts: ClassVar[Callable[[Any], Any] | None] = None
    invalid: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        wanted = [f.name for f in cls.arrow_schema if f.name != "list_attempt"]
        if sorted(wanted) != sorted(cls.readers):
            raise TypeError(
                f"{cls.__name__}: readers {sorted(cls.readers)} do not match the columns of "
                f"{cls.table} {sorted(wanted)}"
            )

    def check(self, item: Any) -> Any:
        super().check(item)
        facts = type(self).facts
        if facts is None:
            return None
        try:
            return facts(item)
        except (ValueError, ZeroDivisionError) as exc:
            raise Rejected("invalid_quantity", f"{self.invalid}: {exc}") from None

    def columns(self, items: list[Any], extras: list[Any]) -> list[pa.Array]:
        return [
            _encode([self.readers[f.name](i, e) for i, e in zip(items, extras, strict=True)], f)
            for f in self.arrow_schema
            if f.name != "list_attempt"
        ]


def _meta(attribute: str) -> Reader:
    return lambda item, _facts: getattr(item.metadata, attribute)


def _fact(key: str) -> Reader:
    return lambda _item, facts: facts[key]


def _since(kind: str, part: int = 0) -> Reader:
    return lambda item, _facts: _true_since(item.status, kind)[part]


_IDENTITY: dict[str, Reader] = {
    "resource_version": _meta("resource_version"),
    "creation_timestamp": _meta("creation_timestamp"),
}


class WorkloadDecoder(KueueDecoder):
    table = "kueue_workloads"
    list_type = WorkloadList
    item_type = Workload
    arrow_schema = schema.KUEUE_WORKLOADS
    facts = staticmethod(_workload_facts)
    invalid = "workload GPU quantity"
    readers: ClassVar[Mapping[str, Reader]] = {
        **_IDENTITY,
        "workload_uid": _meta("uid"),
        "namespace": _meta("namespace"),
        "workload_name": _meta("name"),
        "labels": _meta("labels"),
        "local_queue": lambda w, _f: w.spec.queue_name,
        "cluster_queue": lambda w, _f: (
            w.status.admission.cluster_queue if w.status.admission else None
        ),
        "owner_kind": lambda w, _f: o.kind if (o := _controller(w.metadata)) else None,
        "owner_name": lambda w, _f: o.name if (o := _controller(w.metadata)) else None,
        "priority_class_name": lambda w, _f: w.spec.priority_class_name,
        "priority": lambda w, _f: w.spec.priority,
        "gpu_requests": lambda _w, f: list(f["requests"].items()),
        # GPU devices only: HAMi's gpucores (percent) is a share of them, not more GPUs
        "requested_gpus": lambda _w, f: sum(
            n for name, n in f["requests"].items() if is_gpu_resource(name)
        ),
        "admitted_gpus_by_flavor": _fact("admitted_by_flavor"),
        "state": _fact("state"),
        "quota_reserved_at": _since("QuotaReserved"),
        "admitted_at": _since("Admitted"),
        "evicted_at": lambda _w, f: f["evicted"][0],
        "eviction_reason": lambda _w, f: f["evicted"][1],
        "preempted_at": _since("Preempted"),
        "preemption_reason": _since("Preempted", 1),
        "finished_at": _since("Finished"),
        "queued_from": _fact("queued_from"),
        "queued_to": _fact("admission"),
        "admitted_from": _fact("admission"),
        "admitted_to": _since("Finished"),
    }


class ClusterQueueDecoder(KueueDecoder):
    table = "kueue_cluster_queues"
    list_type = ClusterQueueList
    item_type = ClusterQueue
    arrow_schema = schema.KUEUE_CLUSTER_QUEUES
    facts = staticmethod(_quotas)
    invalid = "cluster queue quota"
    readers: ClassVar[Mapping[str, Reader]] = {
        **_IDENTITY,
        "cluster_queue_uid": _meta("uid"),
        "cluster_queue": _meta("name"),
        "cohort": lambda q, _f: q.spec.cohort,
        "queueing_strategy": lambda q, _f: q.spec.queueing_strategy,
        "pending_workloads": lambda q, _f: q.status.pending_workloads,
        "admitted_workloads": lambda q, _f: q.status.admitted_workloads,
        "quotas": lambda _q, quotas: quotas,
    }


class LocalQueueDecoder(KueueDecoder):
    table = "kueue_local_queues"
    list_type = LocalQueueList
    item_type = LocalQueue
    arrow_schema = schema.KUEUE_LOCAL_QUEUES
    readers: ClassVar[Mapping[str, Reader]] = {
        **_IDENTITY,
        "local_queue_uid": _meta("uid"),
        "namespace": _meta("namespace"),
        "local_queue": _meta("name"),
        "cluster_queue": lambda q, _f: q.spec.cluster_queue,
        "pending_workloads": lambda q, _f: q.status.pending_workloads,
        "admitted_workloads": lambda q, _f: q.status.admitted_workloads,
    }


class ResourceFlavorDecoder(KueueDecoder):
    table = "kueue_resource_flavors"
    list_type = ResourceFlavorList
    item_type = ResourceFlavor
    arrow_schema = schema.KUEUE_RESOURCE_FLAVORS
    readers: ClassVar[Mapping[str, Reader]] = {
        **_IDENTITY,
        "resource_flavor_uid": _meta("uid"),
        "flavor": _meta("name"),
        "node_labels": lambda f, _f: f.spec.node_labels,
    }


KUEUE_DECODERS: dict[str, type[ResourceDecoder[Any]]] = {
    "kueue_workloads": WorkloadDecoder,
    "kueue_cluster_queues": ClusterQueueDecoder,
    "kueue_local_queues": LocalQueueDecoder,
    "kueue_resource_flavors": ResourceFlavorDecoder,
}

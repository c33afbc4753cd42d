"""Decode one list page into one Arrow ``RecordBatch`` (plus the records it cannot use).

A page is decoded by a reused ``msgspec`` decoder into the partial structs of ``objects``; then
each column is built with one pass over the page's items. Memory is O(page): nothing of a page
survives once its batch is built. A page whose JSON does not fit the structs (a field of the
wrong type) is decoded again item by item, so that one bad object is rejected with its reason
and original bytes while the rest of the page is kept. A page that is not JSON at all
(truncated) raises ``msgspec.DecodeError`` for the caller to re-fetch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import msgspec
import pyarrow as pa

from annex.settings import BalloonRule, KubernetesSettings
from collectors.kubernetes import objects, schema
from collectors.kubernetes.balloons import BALLOON, WORKLOAD, is_balloon
from collectors.kubernetes.phases import is_counted, is_queued, is_terminal
from collectors.kubernetes.quantity import parse_bytes, parse_count, parse_millicores
from collectors.kubernetes.requests import (
    GPU_RESOURCE,
    container_gpu_requests,
    effective_requests,
    is_gpu_resource,
)
from collectors.kubernetes.topology import domain_path

RAW_CAP_BYTES = 64 * 1024
"""Rejected records keep at most this much of their original JSON."""

POOL_LABELS = (
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
    "oci.oraclecloud.com/node-pool-name",
    "node.kubernetes.io/pool",
    "nodepool",
    "pool",
)
"""Node-pool labels of the managed Kubernetes services and common conventions, first wins."""

INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
"""GPU feature discovery reports the memory of one GPU in MiB."""
MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"
DRIVER_FULL_LABEL = "nvidia.com/cuda.driver-version.full"
DRIVER_PART_LABELS = (
    ("nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver.major"),
    ("nvidia.com/cuda.driver-version.minor", "nvidia.com/cuda.driver.minor"),
    ("nvidia.com/cuda.driver-version.revision", "nvidia.com/cuda.driver.rev"),
)


@dataclass(frozen=True)
class DecodeContext:
    """What decoding needs beyond the page: the classification rules from the settings."""

    balloons: BalloonRule = field(default_factory=BalloonRule)
    topology_levels: tuple[tuple[str, ...], ...] = ()
    pool_labels: tuple[str, ...] = POOL_LABELS
    """The labels naming a node's pool, first wins: the settings' own, then ``POOL_LABELS``."""

    @classmethod
    def from_settings(
        cls, settings: KubernetesSettings, topology_levels: tuple[tuple[str, ...], ...] = ()
    ) -> DecodeContext:
        """The rules ``settings`` give (balloons, pool labels) and a topology profile's levels."""
        return cls(
            balloons=settings.balloons,
            topology_levels=topology_levels,
            pool_labels=tuple(dict.fromkeys(settings.pool_labels + POOL_LABELS)),
        )


@dataclass(frozen=True)
class Rejection:
    locator: str
    reason_code: str
    message: str
    raw: bytes | None


class Rejected(Exception):
    """Raised by a row builder: this object cannot be used (the message says why)."""

    def __init__(self, reason_code: str, message: str) -> None:
        super().__init__(message)
        self.reason_code = reason_code
        self.message = message


T = TypeVar("T")


@dataclass
class DecodedPage(Generic[T]):
    """A page's list metadata, its decodable items and those rejected while decoding."""

    metadata: objects.ListMeta
    items: list[T]
    rejected: list[Rejection]
    body: bytes
    raw_items: list[msgspec.Raw] | None = None
    """The undecoded items, aligned with ``items``; filled only when needed."""

    def raw_item(self, index: int) -> bytes:
        """The original JSON of ``items[index]`` (rare path: re-decodes the page lazily)."""
        if self.raw_items is None:
            self.raw_items = msgspec.json.decode(self.body, type=objects.RawList).items
        return bytes(self.raw_items[index])[:RAW_CAP_BYTES]


# ---------------------------------------------------------------------------------------------
# Column helpers


def _timestamps(values: list[str | None]) -> pa.Array:
    """RFC 3339 strings → naive-UTC timestamps, vectorised; an unparseable one becomes null."""
    strings = pa.array(values, pa.string())
    try:
        return strings.cast(pa.timestamp("us", tz="UTC")).cast(schema.TIMESTAMP)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([_one_timestamp(v) for v in values], schema.TIMESTAMP)


def _one_timestamp(value: str | None) -> Any:
    if value is None:
        return None
    try:
        return pa.array([value]).cast(pa.timestamp("us", tz="UTC"))[0].as_py().replace(tzinfo=None)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _labels(maps: Iterable[Mapping[str, str] | None]) -> pa.Array:
    offsets = [0]
    keys: list[str] = []
    values: list[str] = []
    total = 0
    for labels in maps:
        if labels:
            keys.extend(labels.keys())
            values.extend(labels.values())
            total += len(labels)
        offsets.append(total)
    return pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()), pa.array(keys, pa.string()), pa.array(values, pa.string())
    )


def _list_of_structs(rows: Sequence[Sequence[tuple[Any, ...]]], struct: pa.StructType) -> pa.Array:
    """A ``list<struct>`` column from, per row, a list of tuples in the struct's field order."""
    offsets = [0]
    flat: list[tuple[Any, ...]] = []
    for row in rows:
        flat.extend(row)
        offsets.append(len(flat))
    children = [
        pa.array([item[i] for item in flat], struct.field(i).type) for i in range(struct.num_fields)
    ]
    values = pa.StructArray.from_arrays(children, fields=list(struct))
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values)


def _first_label(labels: Mapping[str, str] | None, keys: Sequence[str]) -> str | None:
    if not labels:
        return None
    for key in keys:
        value = labels.get(key)
        if value:
            return value
    return None


def _controller(meta: objects.ObjectMeta) -> objects.OwnerReference | None:
    refs = meta.owner_references
    if not refs:
        return None
    for ref in refs:
        if ref.controller:
            return ref
    return refs[0]


def _condition(conditions: list[objects.Condition] | None, kind: str) -> objects.Condition | None:
    if conditions:
        for condition in conditions:
            if condition.type == kind:
                return condition
    return None


def _locator(resource: str, meta: objects.ObjectMeta) -> str:
    where = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
    return f"{resource}/{where} (uid {meta.uid or 'missing'})"


# ---------------------------------------------------------------------------------------------
# Resource decoders


class ResourceDecoder(Generic[T]):
    """Decodes pages of one resource and builds its RecordBatch.

    Subclasses say which structs to decode into (``list_type``/``item_type``), the table and its
    schema, and ``columns``: the page's items → the batch's arrays, minus ``list_attempt``.
    ``check`` returns what ``columns`` needs of an item beyond its fields, or raises
    ``Rejected`` for an item the table cannot hold.
    """

    table: str
    list_type: type
    item_type: type
    arrow_schema: pa.Schema

    def __init__(self, context: DecodeContext) -> None:
        self.context = context
        self._page_decoder = msgspec.json.Decoder(self.list_type)
        self._raw_decoder = msgspec.json.Decoder(objects.RawList)
        self._item_decoder = msgspec.json.Decoder(self.item_type)
        self._seen_uids: set[str] = set()
        self._seen_attempt = -1

    def decode(self, body: bytes) -> DecodedPage[T]:
        """Decode a page. Raises ``msgspec.DecodeError`` when the body is not (complete) JSON."""
        try:
            page = self._page_decoder.decode(body)
            return DecodedPage(page.metadata, page.items, [], body)
        except msgspec.ValidationError:
            pass  # valid JSON, but some item does not fit: salvage item by item
        raw = self._raw_decoder.decode(body)
        items: list[T] = []
        kept_raw: list[msgspec.Raw] = []
        rejected: list[Rejection] = []
        for index, item in enumerate(raw.items):
            try:
                items.append(self._item_decoder.decode(item))
                kept_raw.append(item)
            except msgspec.DecodeError as exc:
                rejected.append(
                    Rejection(
                        f"{self.table}/item {index} of page",
                        "invalid_object",
                        f"{self.table} object does not match the Kubernetes API schema: {exc}",
                        bytes(item)[:RAW_CAP_BYTES],
                    )
                )
        return DecodedPage(raw.metadata, items, rejected, body, kept_raw)

    def build(self, page: DecodedPage[T], attempt: int) -> tuple[pa.RecordBatch, list[Rejection]]:
        """The page's RecordBatch and every rejection (decoding's and the builder's)."""
        rejected = list(page.rejected)
        keep: list[T] = []
        extras: list[Any] = []
        if attempt != self._seen_attempt:  # a restarted list is a new snapshot
            self._seen_uids.clear()
            self._seen_attempt = attempt
        seen = self._seen_uids
        for index, item in enumerate(page.items):
            try:
                extras.append(self.check(item))
                uid = item.metadata.uid  # type: ignore[attr-defined]
                if uid in seen:
                    extras.pop()
                    raise Rejected(
                        "duplicate_object",
                        f"the list returned {self.table} uid {uid} twice in one snapshot; "
                        "the first copy was kept",
                    )
                seen.add(uid)
            except Rejected as why:
                locator = _locator(self.table, item.metadata)  # type: ignore[attr-defined]
                raw = page.raw_item(index)
                rejected.append(Rejection(locator, why.reason_code, why.message, raw))
                continue
            keep.append(item)
        arrays = self.columns(keep, extras)
        arrays.append(pa.array([attempt] * len(keep), pa.int32()))
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema), rejected

    def check(self, item: T) -> Any:
        meta = item.metadata  # type: ignore[attr-defined]
        if not meta.uid or not meta.name:
            raise Rejected("missing_identity", f"{self.table} object has no metadata.uid/name")
        return None

    def columns(self, items: list[T], extras: list[Any]) -> list[pa.Array]:
        raise NotImplementedError


class NodeDecoder(ResourceDecoder[objects.Node]):
    table = "nodes"
    list_type = objects.NodeList
    item_type = objects.Node
    arrow_schema = schema.NODES

    def check(self, item: objects.Node) -> None:
        super().check(item)
        status = item.status
        for source in (status.capacity, status.allocatable):
            for name, value in (source or {}).items():
                if is_gpu_resource(name) or name in ("cpu", "memory"):
                    try:
                        parse_count(value) if is_gpu_resource(name) else parse_bytes(value)
                    except ValueError as exc:
                        raise Rejected(
                            "invalid_quantity", f"node resource {name} = {value!r}: {exc}"
                        ) from None

    def columns(self, items: list[objects.Node], extras: list[Any]) -> list[pa.Array]:
        metas = [n.metadata for n in items]
        labels = [m.labels or {} for m in metas]
        capacities = [n.status.capacity or {} for n in items]
        allocatables = [n.status.allocatable or {} for n in items]
        gpu_resources = [
            [
                (name, parse_count(value), parse_count(alloc.get(name, 0)))
                for name, value in cap.items()
                if is_gpu_resource(name)
            ]
            for cap, alloc in zip(capacities, allocatables, strict=True)
        ]
        ready = [_condition(n.status.conditions, "Ready") for n in items]
        levels = self.context.topology_levels
        topology = [
            [
                (d.level, d.level_label, d.label, d.value, d.domain_key)
                for d in domain_path(node_labels, levels)
            ]
            for node_labels in labels
        ]
        infos = [n.status.node_info for n in items]
        return [
            pa.array([m.uid for m in metas], pa.string()),
            pa.array([m.name for m in metas], pa.string()),
            pa.array([m.resource_version for m in metas], pa.string()),
            _timestamps([m.creation_timestamp for m in metas]),
            _timestamps([m.deletion_timestamp for m in metas]),
            _labels(labels),
            pa.array([_first_label(lab, self.context.pool_labels) for lab in labels], pa.string()),
            pa.array([_first_label(lab, INSTANCE_TYPE_LABELS) for lab in labels], pa.string()),
            pa.array([lab.get(GPU_PRODUCT_LABEL) for lab in labels], pa.string()),
            pa.array([_gpu_memory_bytes(lab) for lab in labels], pa.int64()),
            pa.array([parse_count(c.get(GPU_RESOURCE, 0)) for c in capacities], pa.int64()),
            pa.array([parse_count(a.get(GPU_RESOURCE, 0)) for a in allocatables], pa.int64()),
            _list_of_structs(gpu_resources, schema.GPU_RESOURCE),
            pa.array([lab.get(MIG_STRATEGY_LABEL) for lab in labels], pa.string()),
            pa.array([_driver_version(lab) for lab in labels], pa.string()),
            pa.array([_optional(parse_millicores, c.get("cpu")) for c in capacities], pa.int64()),
            pa.array([_optional(parse_millicores, a.get("cpu")) for a in allocatables], pa.int64()),
            pa.array([_optional(parse_bytes, c.get("memory")) for c in capacities], pa.int64()),
            pa.array([_optional(parse_bytes, a.get("memory")) for a in allocatables], pa.int64()),
            pa.array([r is not None and r.status == "True" for r in ready], pa.bool_()),
            pa.array([r.reason if r else None for r in ready], pa.string()),
            _timestamps([r.last_transition_time if r else None for r in ready]),
            pa.array([bool(n.spec.unschedulable) for n in items], pa.bool_()),
            _list_of_structs(
                [[(t.key, t.value, t.effect) for t in n.spec.taints or ()] for n in items],
                schema.TAINT,
            ),
            _list_of_structs(topology, schema.TOPOLOGY_LEVEL),
            pa.array([i.kubelet_version if i else None for i in infos], pa.string()),
            pa.array([i.container_runtime_version if i else None for i in infos], pa.string()),
            pa.array([n.spec.provider_id for n in items], pa.string()),
            pa.array([i.boot_id if i else None for i in infos], pa.string()),
            pa.array([i.system_uuid if i else None for i in infos], pa.string()),
        ]


def _optional(parse: Callable[[Any], int], value: Any) -> int | None:
    return None if value is None else parse(value)


def _gpu_memory_bytes(labels: Mapping[str, str]) -> int | None:
    value = labels.get(GPU_MEMORY_LABEL)
    if value and value.isdigit():
        return int(value) * 2**20
    return None


def _driver_version(labels: Mapping[str, str]) -> str | None:
    full = labels.get(DRIVER_FULL_LABEL)
    if full:
        return full
    parts = [_first_label(labels, keys) for keys in DRIVER_PART_LABELS]
    if parts[0] is None:
        return None
    return ".".join(p for p in parts if p is not None)


class PodDecoder(ResourceDecoder[objects.Pod]):
    table = "pods"
    list_type = objects.PodList
    item_type = objects.Pod
    arrow_schema = schema.PODS

    def check(self, item: objects.Pod) -> dict[str, int]:
        """Also computes the pod's effective GPU requests: a bad quantity rejects the pod."""
        super().check(item)
        try:
            return pod_gpu_requests(item.spec)
        except ValueError as exc:
            raise Rejected(
                "invalid_gpu_quantity",
                f"pod GPU request cannot be counted ({exc}); the pod is left out of allocations",
            ) from None

    def columns(self, items: list[objects.Pod], extras: list[Any]) -> list[pa.Array]:
        requests: list[dict[str, int]] = extras
        metas = [p.metadata for p in items]
        specs = [p.spec for p in items]
        statuses = [p.status for p in items]
        owners = [_controller(m) for m in metas]
        rule = self.context.balloons
        balloon = [is_balloon(s.priority, s.priority_class_name, rule) for s in specs]
        scheduled = [_condition(s.conditions, "PodScheduled") for s in statuses]
        pairs = list(zip(specs, statuses, strict=True))
        return [
            pa.array([m.uid for m in metas], pa.string()),
            pa.array([m.namespace for m in metas], pa.string()),
            pa.array([m.name for m in metas], pa.string()),
            pa.array([m.resource_version for m in metas], pa.string()),
            _timestamps([m.creation_timestamp for m in metas]),
            _timestamps([m.deletion_timestamp for m in metas]),
            _labels([m.labels for m in metas]),
            pa.array([o.kind if o else None for o in owners], pa.string()),
            pa.array([o.name if o else None for o in owners], pa.string()),
            pa.array([_job_name(m, o) for m, o in zip(metas, owners, strict=True)], pa.string()),
            pa.array([s.node_name or None for s in specs], pa.string()),
            pa.array([s.nominated_node_name or None for s in statuses], pa.string()),
            pa.array([s.scheduler_name for s in specs], pa.string()),
            pa.array([s.runtime_class_name for s in specs], pa.string()),
            pa.array([s.priority for s in specs], pa.int32()),
            pa.array([s.priority_class_name or None for s in specs], pa.string()),
            pa.array([s.phase for s in statuses], pa.string()),
            pa.array([s.reason for s in statuses], pa.string()),
            pa.array([s.qos_class for s in statuses], pa.string()),
            _timestamps(
                [c.last_transition_time if c and c.status == "True" else None for c in scheduled]
            ),
            _timestamps([s.start_time for s in statuses]),
            _timestamps([_finished_at(s) for s in statuses]),
            _list_of_structs([list(r.items()) for r in requests], schema.GPU_REQUEST),
            pa.array([r.get(GPU_RESOURCE, 0) for r in requests], pa.int64()),
            pa.array([is_counted(sp.node_name, st.phase) for sp, st in pairs], pa.bool_()),
            pa.array([is_queued(sp.node_name, st.phase) for sp, st in pairs], pa.bool_()),
            pa.array(balloon, pa.bool_()),
            pa.array([BALLOON if b else WORKLOAD for b in balloon], pa.string()),
            _list_of_structs([_claim_sources(p) for p in items], schema.CLAIM_SOURCE),
        ]


def _claim_sources(pod: objects.Pod) -> list[tuple[str, str | None, str | None]]:
    """(pod_claim, claim_name, claim_template_name) per ``spec.resourceClaims[]`` entry; a
    template entry's claim is the one ``status.resourceClaimStatuses`` names (once created)."""
    entries = pod.spec.resource_claims
    if not entries:
        return []
    generated = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses or ()}
    return [
        (
            e.name,
            e.resource_claim_name or generated.get(e.name),
            e.resource_claim_template_name,
        )
        for e in entries
    ]


def _device_requests(spec: objects.ResourceClaimSpec) -> list[tuple[Any, ...]]:
    """(request, device_class_name, allocation_mode, device_count) per device request.

    ``firstAvailable`` lists alternatives in the user's order of preference: the first is taken
    (the scheduler's first choice; which one it allocates shows in the claim's results).
    ``allocationMode: All`` has no count: NULL, never a guess.
    """
    rows: list[tuple[Any, ...]] = []
    for request in (spec.devices.requests if spec.devices else None) or ():
        choice: objects.ExactDeviceRequest | objects.DeviceSubRequest | None = request.exactly
        if choice is None and request.first_available:
            choice = request.first_available[0]
        if choice is None:
            rows.append((request.name, None, None, None))
            continue
        mode = choice.allocation_mode or "ExactCount"
        count = None if mode == "All" else (choice.count if choice.count is not None else 1)
        rows.append((request.name, choice.device_class_name or None, mode, count))
    return rows


_NOT_GPU = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})
"""Resources nearly every container names: skipping them is the fast path for non-GPU pods."""


def _may_name_gpus(quantities: dict[str, objects.Quantity] | None) -> bool:
    return quantities is not None and bool(quantities.keys() - _NOT_GPU)


def pod_gpu_requests(spec: objects.PodSpec) -> dict[str, int]:
    """The PodRequests rule over a decoded pod spec (fast path: pods without GPUs)."""
    resources = [c.resources for c in spec.containers]
    init_resources = [c.resources for c in spec.init_containers or ()]
    names_gpus = _may_name_gpus(spec.overhead) or any(
        r is not None and (_may_name_gpus(r.requests) or _may_name_gpus(r.limits))
        for r in (*resources, *init_resources)
    )
    if not names_gpus:
        return {}
    regular = [container_gpu_requests(r.requests, r.limits) for r in resources if r is not None]
    init = [
        (
            container_gpu_requests(r.requests, r.limits) if r is not None else {},
            container.restart_policy == "Always",
        )
        for container, r in zip(spec.init_containers or (), init_resources, strict=True)
    ]
    overhead = container_gpu_requests(spec.overhead, None) if spec.overhead else None
    return effective_requests(regular, init, overhead)


def _job_name(meta: objects.ObjectMeta, owner: objects.OwnerReference | None) -> str | None:
    if owner is not None and owner.kind == "Job":
        return owner.name
    return _first_label(meta.labels, JOB_NAME_LABELS)


def _finished_at(status: objects.PodStatus) -> str | None:
    """When a finished pod's last container ended (RFC 3339 strings sort chronologically when
    they share the API's UTC ``Z`` format)."""
    if not is_terminal(status.phase) or not status.container_statuses:
        return None
    ends = [
        cs.state.terminated.finished_at
        for cs in status.container_statuses
        if cs.state is not None
        and cs.state.terminated is not None
        and cs.state.terminated.finished_at
    ]
    return max(ends) if ends else None


class JobDecoder(ResourceDecoder[objects.Job]):
    table = "jobs"
    list_type = objects.JobList
    item_type = objects.Job
    arrow_schema = schema.JOBS

    def columns(self, items: list[objects.Job], extras: list[Any]) -> list[pa.Array]:
        metas = [j.metadata for j in items]
        owners = [_controller(m) for m in metas]
        statuses = [j.status for j in items]
        return [
            pa.array([m.uid for m in metas], pa.string()),
            pa.array([m.namespace for m in metas], pa.string()),
            pa.array([m.name for m in metas], pa.string()),
            pa.array([m.resource_version for m in metas], pa.string()),
            _timestamps([m.creation_timestamp for m in metas]),
            _labels([m.labels for m in metas]),
            pa.array([o.kind if o else None for o in owners], pa.string()),
            pa.array([o.name if o else None for o in owners], pa.string()),
            pa.array([j.spec.parallelism for j in items], pa.int32()),
            pa.array([j.spec.completions for j in items], pa.int32()),
            pa.array([bool(j.spec.suspend) for j in items], pa.bool_()),
            pa.array([s.active or 0 for s in statuses], pa.int32()),
            pa.array([s.succeeded or 0 for s in statuses], pa.int32()),
            pa.array([s.failed or 0 for s in statuses], pa.int32()),
            _timestamps([s.start_time for s in statuses]),
            _timestamps([s.completion_time for s in statuses]),
            pa.array([_job_finished(s) for s in statuses], pa.string()),
        ]


def _job_finished(status: objects.JobStatus) -> str | None:
    for kind in ("Complete", "Failed"):
        condition = _condition(status.conditions, kind)
        if condition is not None and condition.status == "True":
            return kind
    return None


class PriorityClassDecoder(ResourceDecoder[objects.PriorityClass]):
    table = "priority_classes"
    list_type = objects.PriorityClassList
    item_type = objects.PriorityClass
    arrow_schema = schema.PRIORITY_CLASSES

    def columns(self, items: list[objects.PriorityClass], extras: list[Any]) -> list[pa.Array]:
        metas = [p.metadata for p in items]
        rule = self.context.balloons
        return [
            pa.array([m.uid for m in metas], pa.string()),
            pa.array([m.name for m in metas], pa.string()),
            pa.array([m.resource_version for m in metas], pa.string()),
            _timestamps([m.creation_timestamp for m in metas]),
            pa.array([p.value for p in items], pa.int32()),
            pa.array([p.global_default for p in items], pa.bool_()),
            pa.array([p.preemption_policy for p in items], pa.string()),
            pa.array([p.description for p in items], pa.string()),
            pa.array([is_balloon(p.value, p.metadata.name, rule) for p in items], pa.bool_()),
        ]


class EventDecoder(ResourceDecoder[objects.Event]):
    table = "events"
    list_type = objects.EventList
    item_type = objects.Event
    arrow_schema = schema.EVENTS

    def columns(self, items: list[objects.Event], extras: list[Any]) -> list[pa.Array]:
        metas = [e.metadata for e in items]
        involved = [e.involved_object for e in items]
        return [
            pa.array([m.uid for m in metas], pa.string()),
            pa.array([m.namespace for m in metas], pa.string()),
            pa.array([m.name for m in metas], pa.string()),
            pa.array([m.resource_version for m in metas], pa.string()),
            _timestamps([m.creation_timestamp for m in metas]),
            pa.array([i.kind for i in involved], pa.string()),
            pa.array([i.namespace for i in involved], pa.string()),
            pa.array([i.name for i in involved], pa.string()),
            pa.array([i.uid for i in involved], pa.string()),
            pa.array([e.reason for e in items], pa.string()),
            pa.array([e.type for e in items], pa.string()),
            pa.array([_event_count(e) for e in items], pa.int32()),
            _timestamps([e.first_timestamp for e in items]),
            _timestamps([_event_last(e) for e in items]),
            _timestamps([e.event_time for e in items]),
            pa.array([_event_component(e) for e in items], pa.string()),
            pa.array([e.source.host if e.source else None for e in items], pa.string()),
            pa.array([e.message for e in items], pa.string()),
        ]


def _event_count(event: objects.Event) -> int:
    """How often it happened: ``series.count`` for events.k8s.io-style series, else ``count``."""
    if event.series is not None and event.series.count:
        return event.series.count
    return event.count or 1


def _event_last(event: objects.Event) -> str | None:
    if event.last_timestamp:
        return event.last_timestamp
    if event.series is not None and event.series.last_observed_time:
        return event.series.last_observed_time
    return event.event_time


def _event_component(event: objects.Event) -> str | None:
    if event.reporting_component:
        return event.reporting_component
    return event.source.component if event.source else None


class ResourceSliceDecoder(ResourceDecoder[objects.ResourceSlice]):
    """ResourceSlices: one row per slice, its devices as a list (exploded in the warehouse)."""

    table = "resource_slices"
    list_type = objects.ResourceSliceList
    item_type = objects.ResourceSlice
    arrow_schema = schema.RESOURCE_SLICES

    def columns(self, items: list[objects.ResourceSlice], extras: list[Any]) -> list[pa.Array]:
        metas = [r.metadata for r in items]
        specs = [r.spec for r in items]
        return [
            pa.array([m.uid for m in metas], pa.string()),
            pa.array([m.name for m in metas], pa.string()),
            pa.array([m.resource_version for m in metas], pa.string()),
            _timestamps([m.creation_timestamp for m in metas]),
            pa.array([s.driver for s in specs], pa.string()),
            pa.array([s.node_name or None for s in specs], pa.string()),
            pa.array([bool(s.all_nodes) for s in specs], pa.bool_()),
            pa.array([s.pool.name for s in specs], pa.string()),
            pa.array([s.pool.generation for s in specs], pa.int64()),
            _list_of_structs(
                [[_dra_device(d) for d in s.devices or ()] for s in specs], schema.DRA_DEVICE
            ),
        ]


def _attribute(device: objects.Device, name: str) -> str | None:
    """A string attribute of a device (the NVIDIA driver's are unqualified names)."""
    value = (device.attributes or {}).get(name)
    return value.string if value is not None else None


def _dra_device(device: objects.Device) -> tuple[Any, ...]:
    """(device, device_type, gpu_uuid, mig_uuid, mig_profile, nvml_device_name, memory_bytes).

    A MIG device's own ``uuid`` is the MIG instance's; its physical GPU is ``parentUUID``.
    Devices that are not GPUs (``type`` channel or daemon) carry no ``gpu_uuid``.
    """
    kind = _attribute(device, "type")
    uuid = _attribute(device, "uuid")
    parent = _attribute(device, "parentUUID")
    is_mig = kind == "mig" or parent is not None
    if is_mig:
        gpu_uuid, mig_uuid = parent, uuid
    elif uuid is not None and uuid.startswith("GPU-"):
        gpu_uuid, mig_uuid = uuid, None
    else:
        gpu_uuid, mig_uuid = None, None
    memory = (device.capacity or {}).get("memory")
    try:
        memory_bytes = _optional(parse_bytes, memory.value) if memory is not None else None
    except ValueError:
        memory_bytes = None  # an unreadable quantity loses the figure, not the slice
    return (
        device.name,
        kind,
        gpu_uuid,
        mig_uuid,
        _attribute(device, "profile") if is_mig else None,
        _attribute(device, "productName"),
        memory_bytes,
    )


class ResourceClaimDecoder(ResourceDecoder[objects.ResourceClaim]):
    """ResourceClaims: allocation results and the pods the claim is reserved for."""

    table = "resource_claims"
    list_type = objects.ResourceClaimList
    item_type = objects.ResourceClaim
    arrow_schema = schema.RESOURCE_CLAIMS

    def columns(self, items: list[objects.ResourceClaim], extras: list[Any]) -> list[pa.Array]:
        metas = [c.metadata for c in items]
        statuses = [c.status for c in items]
        results = [
            [
                (r.request, r.driver, r.pool, r.device)
                for r in (
                    s.allocation.devices.results or ()
                    if s.allocation is not None and s.allocation.devices is not None
                    else ()
                )
            ]
            for s in statuses
        ]
        reserved = [
            [r.uid for r in s.reserved_for or () if r.resource == "pods" and r.uid]
            for s in statuses
        ]
        return [
            pa.array([m.uid for m in metas], pa.string()),
            pa.array([m.namespace for m in metas], pa.string()),
            pa.array([m.name for m in metas], pa.string()),
            pa.array([m.resource_version for m in metas], pa.string()),
            _timestamps([m.creation_timestamp for m in metas]),
            _timestamps([m.deletion_timestamp for m in metas]),
            pa.array([s.allocation is not None for s in statuses], pa.bool_()),
            _list_of_structs(results, schema.DRA_RESULT),
            pa.array(reserved, pa.list_(pa.string())),
            _list_of_structs([_device_requests(c.spec) for c in items], schema.DEVICE_REQUEST),
        ]


class ResourceClaimTemplateDecoder(ResourceDecoder[objects.ResourceClaimTemplate]):
    """ResourceClaimTemplates: the devices each claim made from the template will request (a
    pending pod's demand before the resourceclaim controller has created its claim)."""

    table = "resource_claim_templates"
    list_type = objects.ResourceClaimTemplateList
    item_type = objects.ResourceClaimTemplate
    arrow_schema = schema.RESOURCE_CLAIM_TEMPLATES

    def columns(
        self, items: list[objects.ResourceClaimTemplate], extras: list[Any]
    ) -> list[pa.Array]:
        metas = [t.metadata for t in items]
        return [
            pa.array([m.uid for m in metas], pa.string()),
            pa.array([m.namespace for m in metas], pa.string()),
            pa.array([m.name for m in metas], pa.string()),
            pa.array([m.resource_version for m in metas], pa.string()),
            _timestamps([m.creation_timestamp for m in metas]),
            _list_of_structs([_device_requests(t.spec.spec) for t in items], schema.DEVICE_REQUEST),
        ]


DECODERS: dict[str, type[ResourceDecoder[Any]]] = {
    "nodes": NodeDecoder,
    "pods": PodDecoder,
    "jobs": JobDecoder,
    "priority_classes": PriorityClassDecoder,
    "events": EventDecoder,
    "resource_slices": ResourceSliceDecoder,
    "resource_claims": ResourceClaimDecoder,
    "resource_claim_templates": ResourceClaimTemplateDecoder,
}


def rejected_batch(rejections: Sequence[Rejection]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            pa.array([r.locator for r in rejections], pa.string()),
            pa.array([r.reason_code for r in rejections], pa.string()),
            pa.array([r.message for r in rejections], pa.string()),
            pa.array([r.raw for r in rejections], pa.binary()),
        ],
        schema=schema.REJECTED,
    )

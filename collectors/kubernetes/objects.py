"""msgspec Structs holding only the fields annex keeps of each Kubernetes object.

Decoding a list page straight into these typed, partial structs skips everything else in the
JSON (managedFields, env, volumes, images …) without building dicts for it: about 11× faster
than ``orjson.loads`` into dicts (reference, "Measured: listing 75,000 pods"). Field names are
the API's (camelCase via ``rename="camel"``); every field has a default because the API omits
empty fields. ``gc=False``: these structs never form reference cycles, so the garbage collector
need not track the hundreds of thousands a page holds.
"""

from __future__ import annotations

import msgspec

Quantity = str | int | float
"""The API sends quantities as strings; numbers are accepted and parsed the same way."""


class _Struct(msgspec.Struct, rename="camel", gc=False):
    pass


class OwnerReference(_Struct):
    kind: str = ""
    name: str = ""
    controller: bool = False


class ObjectMeta(_Struct):
    name: str = ""
    namespace: str | None = None
    uid: str = ""
    resource_version: str | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None


class ListMeta(_Struct):
    resource_version: str | None = None
    # ``continue`` is a Python keyword: map it explicitly.
    continue_: str | None = msgspec.field(default=None, name="continue")
    remaining_item_count: int | None = None


class Condition(_Struct):
    type: str = ""
    status: str = ""
    reason: str | None = None
    last_transition_time: str | None = None


# --- nodes -----------------------------------------------------------------------------------


class Taint(_Struct):
    key: str = ""
    value: str | None = None
    effect: str = ""


class NodeSpec(_Struct):
    unschedulable: bool = False
    taints: list[Taint] | None = None
    provider_id: str | None = msgspec.field(default=None, name="providerID")


class NodeInfo(_Struct):
    kubelet_version: str | None = None
    container_runtime_version: str | None = None
    # The API's spelling is not camelCase of the snake names: map them explicitly.
    boot_id: str | None = msgspec.field(default=None, name="bootID")
    system_uuid: str | None = msgspec.field(default=None, name="systemUUID")


class NodeStatus(_Struct):
    capacity: dict[str, Quantity] | None = None
    allocatable: dict[str, Quantity] | None = None
    conditions: list[Condition] | None = None
    node_info: NodeInfo | None = None


class Node(_Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class NodeList(_Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Node] = []


# --- pods ------------------------------------------------------------------------------------


class ResourceRequirements(_Struct):
    requests: dict[str, Quantity] | None = None
    limits: dict[str, Quantity] | None = None


class Container(_Struct):
    resources: ResourceRequirements | None = None
    restart_policy: str | None = None


class PodResourceClaim(_Struct):
    """``spec.resourceClaims[]``: a claim the pod uses, named directly or made from a template."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodResourceClaimStatus(_Struct):
    """``status.resourceClaimStatuses[]``: the claim generated for a template entry."""

    name: str = ""
    resource_claim_name: str | None = None


class PodSpec(_Struct):
    node_name: str | None = None
    scheduler_name: str | None = None
    runtime_class_name: str | None = None
    priority: int | None = None
    priority_class_name: str | None = None
    containers: list[Container] = []
    init_containers: list[Container] | None = None
    overhead: dict[str, Quantity] | None = None
    resource_claims: list[PodResourceClaim] | None = None


class Terminated(_Struct):
    finished_at: str | None = None


class ContainerState(_Struct):
    terminated: Terminated | None = None


class ContainerStatus(_Struct):
    state: ContainerState | None = None


class PodStatus(_Struct):
    phase: str | None = None
    reason: str | None = None
    nominated_node_name: str | None = None
    qos_class: str | None = None
    start_time: str | None = None
    conditions: list[Condition] | None = None
    container_statuses: list[ContainerStatus] | None = None
    resource_claim_statuses: list[PodResourceClaimStatus] | None = None


class Pod(_Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


class PodList(_Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Pod] = []


# --- jobs ------------------------------------------------------------------------------------


class JobSpec(_Struct):
    parallelism: int | None = None
    completions: int | None = None
    suspend: bool | None = None


class JobStatus(_Struct):
    active: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    start_time: str | None = None
    completion_time: str | None = None
    conditions: list[Condition] | None = None


class Job(_Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: JobSpec = msgspec.field(default_factory=JobSpec)
    status: JobStatus = msgspec.field(default_factory=JobStatus)


class JobList(_Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Job] = []


# --- priority classes ------------------------------------------------------------------------


class PriorityClass(_Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    preemption_policy: str | None = None
    description: str | None = None


class PriorityClassList(_Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[PriorityClass] = []


# --- events (core/v1) ------------------------------------------------------------------------


class ObjectReference(_Struct):
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None


class EventSource(_Struct):
    component: str | None = None
    host: str | None = None


class EventSeries(_Struct):
    count: int | None = None
    last_observed_time: str | None = None


class Event(_Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    involved_object: ObjectReference = msgspec.field(default_factory=ObjectReference)
    reason: str | None = None
    message: str | None = None
    type: str | None = None
    count: int | None = None
    first_timestamp: str | None = None
    last_timestamp: str | None = None
    event_time: str | None = None
    series: EventSeries | None = None
    reporting_component: str | None = None
    source: EventSource | None = None


class EventList(_Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Event] = []


# --- DRA: ResourceSlices and ResourceClaims (resource.k8s.io/v1) -----------------------------


class DeviceAttribute(_Struct):
    """One typed attribute value of a DRA device: exactly one field is set."""

    string: str | None = None
    # ``int`` and ``bool`` would shadow the builtins in the class body: map them explicitly.
    int_: int | None = msgspec.field(default=None, name="int")
    bool_: bool | None = msgspec.field(default=None, name="bool")
    version: str | None = None


class DeviceCapacity(_Struct):
    value: Quantity | None = None


class Device(_Struct):
    name: str = ""
    attributes: dict[str, DeviceAttribute] | None = None
    capacity: dict[str, DeviceCapacity] | None = None


class ResourcePool(_Struct):
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


class ResourceSliceSpec(_Struct):
    driver: str = ""
    node_name: str | None = None
    all_nodes: bool | None = None
    pool: ResourcePool = msgspec.field(default_factory=ResourcePool)
    devices: list[Device] | None = None


class ResourceSlice(_Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec = msgspec.field(default_factory=ResourceSliceSpec)


class ResourceSliceList(_Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[ResourceSlice] = []


class DeviceRequestAllocationResult(_Struct):
    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""


class DeviceAllocationResult(_Struct):
    results: list[DeviceRequestAllocationResult] | None = None


class AllocationResult(_Struct):
    devices: DeviceAllocationResult | None = None


class ResourceClaimConsumerReference(_Struct):
    api_group: str | None = None
    resource: str = ""
    name: str = ""
    uid: str = ""


class ResourceClaimStatus(_Struct):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] | None = None


class DeviceSubRequest(_Struct):
    """A ``firstAvailable`` alternative (resource.k8s.io/v1 DeviceSubRequest)."""

    name: str = ""
    device_class_name: str = ""
    allocation_mode: str | None = None
    count: int | None = None


class ExactDeviceRequest(_Struct):
    device_class_name: str = ""
    allocation_mode: str | None = None
    count: int | None = None


class DeviceRequest(_Struct):
    """``spec.devices.requests[]``: exactly one of ``exactly`` and ``firstAvailable`` is set."""

    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] | None = None


class DeviceClaim(_Struct):
    requests: list[DeviceRequest] | None = None


class ResourceClaimSpec(_Struct):
    devices: DeviceClaim | None = None


class ResourceClaim(_Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = msgspec.field(default_factory=ResourceClaimStatus)


class ResourceClaimList(_Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[ResourceClaim] = []


class ResourceClaimTemplateSpec(_Struct):
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(_Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = msgspec.field(default_factory=ResourceClaimTemplateSpec)


class ResourceClaimTemplateList(_Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[ResourceClaimTemplate] = []


# --- for salvaging a page that does not fit the structs ----------------------------------------


class RawList(_Struct):
    """A page with its items left undecoded: used to decode items one by one (so that one bad
    item is rejected, not the whole page) and to keep a rejected item's original bytes."""

    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[msgspec.Raw] = []


class Status(_Struct):
    """The API's error body (``kind: Status``); a 410 Expired carries an inconsistent
    continue token in ``metadata.continue``."""

    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    message: str | None = None
    reason: str | None = None
    code: int | None = None

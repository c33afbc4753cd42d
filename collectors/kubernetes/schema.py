"""The Arrow schemas of the tables the Kubernetes collector yields.

These are the collector's contract with the warehouse: ``warehouse/models/kubernetes.py``
stages each table by these column names, and a unit test checks that both agree. Names follow
the API's field names in snake case (as kube-state-metrics and Steampipe do), units are in the
names (``_bytes``, ``_millicores``), GPU counts are integers and times are naive UTC.

Every object table carries ``list_attempt``: the restart number of the paged list the row came
from. A list that lost its snapshot (410 Expired) is restarted from the beginning; the rows of
abandoned attempts were already handed over page by page, so the warehouse keeps only the rows
of each resource's last attempt.
"""

from __future__ import annotations

import pyarrow as pa

TIMESTAMP = pa.timestamp("us")
"""Naive UTC, as DESIGN §2 asks for large tables."""

LABELS = pa.map_(pa.string(), pa.string())

GPU_RESOURCE = pa.struct(
    [
        ("resource_name", pa.string()),
        ("capacity", pa.int64()),
        ("allocatable", pa.int64()),
    ]
)
"""One GPU-like extended resource of a node (``nvidia.com/gpu``, ``nvidia.com/mig-1g.10gb``)."""

GPU_REQUEST = pa.struct([("resource_name", pa.string()), ("gpus", pa.int64())])
"""A pod's effective request (upstream PodRequests rule) of one GPU-like resource."""

TAINT = pa.struct([("key", pa.string()), ("value", pa.string()), ("effect", pa.string())])

TOPOLOGY_LEVEL = pa.struct(
    [
        ("level", pa.int16()),
        ("level_label", pa.string()),
        ("label", pa.string()),
        ("value", pa.string()),
        ("domain", pa.string()),
    ]
)
"""One level of a node's failure-domain path: ``level`` counts from 1 (broadest);
``level_label`` is the level's canonical (first) label key; ``label`` the key the node actually
carries (null when it carries none); ``value`` its value or ``unknown``; ``domain`` the domain
key, the values from the top level down to this one joined by ``/``."""

NODES = pa.schema(
    [
        ("node_uid", pa.string()),
        ("node_name", pa.string()),
        ("resource_version", pa.string()),
        ("creation_timestamp", TIMESTAMP),
        ("deletion_timestamp", TIMESTAMP),
        ("labels", LABELS),
        ("pool", pa.string()),
        ("instance_type", pa.string()),
        ("gpu_product", pa.string()),
        ("gpu_memory_bytes", pa.int64()),
        ("gpu_capacity", pa.int64()),
        ("gpu_allocatable", pa.int64()),
        ("gpu_resources", pa.list_(GPU_RESOURCE)),
        ("mig_strategy", pa.string()),
        ("cuda_driver_version", pa.string()),
        ("cpu_capacity_millicores", pa.int64()),
        ("cpu_allocatable_millicores", pa.int64()),
        ("memory_capacity_bytes", pa.int64()),
        ("memory_allocatable_bytes", pa.int64()),
        ("ready", pa.bool_()),
        ("ready_reason", pa.string()),
        ("ready_since", TIMESTAMP),
        ("unschedulable", pa.bool_()),
        ("taints", pa.list_(TAINT)),
        ("topology", pa.list_(TOPOLOGY_LEVEL)),
        ("kubelet_version", pa.string()),
        ("container_runtime_version", pa.string()),
        ("provider_id", pa.string()),
        ("boot_id", pa.string()),  # status.nodeInfo.bootID: changes at every reboot
        ("system_uuid", pa.string()),  # status.nodeInfo.systemUUID: the VM's SMBIOS UUID
        ("list_attempt", pa.int32()),
    ]
)

CLAIM_SOURCE = pa.struct(
    [
        ("pod_claim", pa.string()),
        ("claim_name", pa.string()),
        ("claim_template_name", pa.string()),
    ]
)
"""One ``spec.resourceClaims[]`` entry of a pod: its name in the pod, the ResourceClaim it
names (``resourceClaimName``, or for a template entry the claim generated for the pod, from
``status.resourceClaimStatuses``: NULL until created) and the ResourceClaimTemplate, if any."""

PODS = pa.schema(
    [
        ("pod_uid", pa.string()),
        ("namespace", pa.string()),
        ("pod_name", pa.string()),
        ("resource_version", pa.string()),
        ("creation_timestamp", TIMESTAMP),
        ("deletion_timestamp", TIMESTAMP),
        ("labels", LABELS),
        ("owner_kind", pa.string()),
        ("owner_name", pa.string()),
        ("job_name", pa.string()),
        ("node_name", pa.string()),
        ("nominated_node_name", pa.string()),
        ("scheduler_name", pa.string()),
        ("runtime_class_name", pa.string()),
        ("priority", pa.int32()),
        ("priority_class_name", pa.string()),
        ("phase", pa.string()),
        ("reason", pa.string()),
        ("qos_class", pa.string()),
        ("scheduled_at", TIMESTAMP),
        ("started_at", TIMESTAMP),
        ("finished_at", TIMESTAMP),
        ("gpu_requests", pa.list_(GPU_REQUEST)),
        ("gpus", pa.int64()),
        ("counted", pa.bool_()),
        ("queued", pa.bool_()),
        ("is_balloon", pa.bool_()),
        ("category", pa.string()),
        ("claim_sources", pa.list_(CLAIM_SOURCE)),
        ("list_attempt", pa.int32()),
    ]
)

JOBS = pa.schema(
    [
        ("job_uid", pa.string()),
        ("namespace", pa.string()),
        ("job_name", pa.string()),
        ("resource_version", pa.string()),
        ("creation_timestamp", TIMESTAMP),
        ("labels", LABELS),
        ("owner_kind", pa.string()),
        ("owner_name", pa.string()),
        ("parallelism", pa.int32()),
        ("completions", pa.int32()),
        ("suspend", pa.bool_()),
        ("active", pa.int32()),
        ("succeeded", pa.int32()),
        ("failed", pa.int32()),
        ("started_at", TIMESTAMP),
        ("completed_at", TIMESTAMP),
        ("finished_condition", pa.string()),
        ("list_attempt", pa.int32()),
    ]
)

PRIORITY_CLASSES = pa.schema(
    [
        ("priority_class_uid", pa.string()),
        ("priority_class_name", pa.string()),
        ("resource_version", pa.string()),
        ("creation_timestamp", TIMESTAMP),
        ("value", pa.int32()),
        ("global_default", pa.bool_()),
        ("preemption_policy", pa.string()),
        ("description", pa.string()),
        ("is_balloon", pa.bool_()),
        ("list_attempt", pa.int32()),
    ]
)

EVENTS = pa.schema(
    [
        ("event_uid", pa.string()),
        ("namespace", pa.string()),
        ("event_name", pa.string()),
        ("resource_version", pa.string()),
        ("creation_timestamp", TIMESTAMP),
        ("involved_kind", pa.string()),
        ("involved_namespace", pa.string()),
        ("involved_name", pa.string()),
        ("involved_uid", pa.string()),
        ("reason", pa.string()),
        ("type", pa.string()),
        ("count", pa.int32()),
        ("first_timestamp", TIMESTAMP),
        ("last_timestamp", TIMESTAMP),
        ("event_time", TIMESTAMP),
        ("reporting_component", pa.string()),
        ("source_host", pa.string()),
        ("message", pa.string()),
        ("list_attempt", pa.int32()),
    ]
)

DRA_DEVICE = pa.struct(
    [
        ("device", pa.string()),
        ("device_type", pa.string()),
        ("gpu_uuid", pa.string()),
        ("mig_uuid", pa.string()),
        ("mig_profile", pa.string()),
        ("nvml_device_name", pa.string()),
        ("memory_bytes", pa.int64()),
    ]
)
"""One device a ResourceSlice publishes. ``gpu_uuid`` is the physical GPU's UUID (a MIG
device's ``parentUUID``), null for devices that are not GPUs (IMEX channels, daemons);
``nvml_device_name`` is the driver's ``productName`` attribute (the NVML name)."""

RESOURCE_SLICES = pa.schema(
    [
        ("resource_slice_uid", pa.string()),
        ("resource_slice_name", pa.string()),
        ("resource_version", pa.string()),
        ("creation_timestamp", TIMESTAMP),
        ("driver", pa.string()),
        ("node_name", pa.string()),
        ("all_nodes", pa.bool_()),
        ("dra_pool", pa.string()),
        ("pool_generation", pa.int64()),
        ("devices", pa.list_(DRA_DEVICE)),
        ("list_attempt", pa.int32()),
    ]
)

DRA_RESULT = pa.struct(
    [
        ("request", pa.string()),
        ("driver", pa.string()),
        ("dra_pool", pa.string()),
        ("device", pa.string()),
    ]
)
"""One allocated device of a ResourceClaim (``status.allocation.devices.results[]``)."""

DEVICE_REQUEST = pa.struct(
    [
        ("request", pa.string()),
        ("device_class_name", pa.string()),
        ("allocation_mode", pa.string()),
        ("device_count", pa.int64()),
    ]
)
"""One ``spec.devices.requests[]`` entry of a claim or template: ``exactly``, or the first of
``firstAvailable`` (the scheduler's first choice); ``allocation_mode`` ExactCount (default) or
All; ``device_count`` NULL for All (the count is unknown until allocated)."""

RESOURCE_CLAIMS = pa.schema(
    [
        ("claim_uid", pa.string()),
        ("namespace", pa.string()),
        ("claim_name", pa.string()),
        ("resource_version", pa.string()),
        ("creation_timestamp", TIMESTAMP),
        ("deletion_timestamp", TIMESTAMP),
        ("allocated", pa.bool_()),
        ("results", pa.list_(DRA_RESULT)),
        ("reserved_for_pod_uids", pa.list_(pa.string())),
        ("device_requests", pa.list_(DEVICE_REQUEST)),
        ("list_attempt", pa.int32()),
    ]
)

RESOURCE_CLAIM_TEMPLATES = pa.schema(
    [
        ("claim_template_uid", pa.string()),
        ("namespace", pa.string()),
        ("claim_template_name", pa.string()),
        ("resource_version", pa.string()),
        ("creation_timestamp", TIMESTAMP),
        ("device_requests", pa.list_(DEVICE_REQUEST)),
        ("list_attempt", pa.int32()),
    ]
)

FLAVOR_GPUS = pa.struct(
    [("flavor", pa.string()), ("resource_name", pa.string()), ("gpus", pa.int64())]
)
QUEUE_QUOTA = pa.struct(
    [
        ("flavor", pa.string()),
        ("resource_name", pa.string()),
        ("is_gpu", pa.bool_()),
        ("nominal_quota", pa.float64()),
        ("borrowing_limit", pa.float64()),
        ("lending_limit", pa.float64()),
        ("used", pa.float64()),
        ("borrowed", pa.float64()),
    ]
)

KUEUE_WORKLOADS = pa.schema(
    [
        ("workload_uid", pa.string()),
        ("namespace", pa.string()),
        ("workload_name", pa.string()),
        ("resource_version", pa.string()),
        ("creation_timestamp", TIMESTAMP),
        ("labels", LABELS),
        ("local_queue", pa.string()),
        ("cluster_queue", pa.string()),
        ("owner_kind", pa.string()),
        ("owner_name", pa.string()),
        ("priority_class_name", pa.string()),
        ("priority", pa.int32()),
        ("gpu_requests", pa.list_(GPU_REQUEST)),
        ("requested_gpus", pa.int64()),
        ("admitted_gpus_by_flavor", pa.list_(FLAVOR_GPUS)),
        ("state", pa.string()),
        ("quota_reserved_at", TIMESTAMP),
        ("admitted_at", TIMESTAMP),
        ("evicted_at", TIMESTAMP),
        ("eviction_reason", pa.string()),
        ("preempted_at", TIMESTAMP),
        ("preemption_reason", pa.string()),
        ("finished_at", TIMESTAMP),
        ("queued_from", TIMESTAMP),
        ("queued_to", TIMESTAMP),
        ("admitted_from", TIMESTAMP),
        ("admitted_to", TIMESTAMP),
        ("list_attempt", pa.int32()),
    ]
)

KUEUE_CLUSTER_QUEUES = pa.schema(
    [
        ("cluster_queue_uid", pa.string()),
        ("cluster_queue", pa.string()),
        ("resource_version", pa.string()),
        ("creation_timestamp", TIMESTAMP),
        ("cohort", pa.string()),
        ("queueing_strategy", pa.string()),
        ("pending_workloads", pa.int32()),
        ("admitted_workloads", pa.int32()),
        ("quotas", pa.list_(QUEUE_QUOTA)),
        ("list_attempt", pa.int32()),
    ]
)

KUEUE_LOCAL_QUEUES = pa.schema(
    [
        ("local_queue_uid", pa.string()),
        ("namespace", pa.string()),
        ("local_queue", pa.string()),
        ("resource_version", pa.string()),
        ("creation_timestamp", TIMESTAMP),
        ("cluster_queue", pa.string()),
        ("pending_workloads", pa.int32()),
        ("admitted_workloads", pa.int32()),
        ("list_attempt", pa.int32()),
    ]
)

KUEUE_RESOURCE_FLAVORS = pa.schema(
    [
        ("resource_flavor_uid", pa.string()),
        ("flavor", pa.string()),
        ("resource_version", pa.string()),
        ("creation_timestamp", TIMESTAMP),
        ("node_labels", LABELS),
        ("list_attempt", pa.int32()),
    ]
)

REJECTED = pa.schema(
    [
        ("locator", pa.string()),
        ("reason_code", pa.string()),
        ("message", pa.string()),
        ("raw", pa.binary()),
    ]
)

LISTS = pa.schema(
    [
        ("resource", pa.string()),
        ("api_path", pa.string()),
        ("resource_version", pa.string()),
        ("consistent", pa.bool_()),
        ("pages", pa.int32()),
        ("items", pa.int64()),
        ("rejected", pa.int64()),
        ("restarts", pa.int32()),
        ("retries", pa.int32()),
        ("requests", pa.int32()),
        ("response_bytes", pa.int64()),
        ("page_size", pa.int32()),
        ("started_at", TIMESTAMP),
        ("finished_at", TIMESTAMP),
        ("latency_max_seconds", pa.float64()),
        ("latency_p50_seconds", pa.float64()),
        ("latency_p99_seconds", pa.float64()),
        ("latency_total_seconds", pa.float64()),
    ]
)

SCHEMAS: dict[str, pa.Schema] = {
    "nodes": NODES,
    "pods": PODS,
    "jobs": JOBS,
    "priority_classes": PRIORITY_CLASSES,
    "events": EVENTS,
    "kueue_workloads": KUEUE_WORKLOADS,
    "kueue_cluster_queues": KUEUE_CLUSTER_QUEUES,
    "kueue_local_queues": KUEUE_LOCAL_QUEUES,
    "kueue_resource_flavors": KUEUE_RESOURCE_FLAVORS,
    "resource_slices": RESOURCE_SLICES,
    "resource_claims": RESOURCE_CLAIMS,
    "resource_claim_templates": RESOURCE_CLAIM_TEMPLATES,
    "rejected": REJECTED,
    "lists": LISTS,
}
"""Every table name ``collect_cluster`` yields, with its schema."""

-- 0002 kubernetes: cluster state from collectors/kubernetes (raw versions, core state and
-- intervals, the audit of every list) and the GPU capacity marts.
-- Never edit this file once applied anywhere: add a new migration instead.

CREATE TABLE raw.kubernetes_nodes (
    cluster VARCHAR NOT NULL,
    collection_id VARCHAR NOT NULL,
    collected_at TIMESTAMP NOT NULL,
    content_hash UBIGINT NOT NULL,
    node_uid VARCHAR,
    node_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    deletion_timestamp TIMESTAMP,
    labels MAP(VARCHAR, VARCHAR),
    pool VARCHAR,
    instance_type VARCHAR,
    gpu_product VARCHAR,
    gpu_memory_bytes BIGINT,
    gpu_capacity BIGINT,
    gpu_allocatable BIGINT,
    gpu_resources STRUCT(resource_name VARCHAR, capacity BIGINT, allocatable BIGINT)[],
    mig_strategy VARCHAR,
    cuda_driver_version VARCHAR,
    cpu_capacity_millicores BIGINT,
    cpu_allocatable_millicores BIGINT,
    memory_capacity_bytes BIGINT,
    memory_allocatable_bytes BIGINT,
    ready BOOLEAN,
    ready_reason VARCHAR,
    ready_since TIMESTAMP,
    unschedulable BOOLEAN,
    taints STRUCT(key VARCHAR, value VARCHAR, effect VARCHAR)[],
    topology STRUCT(level SMALLINT, level_label VARCHAR, label VARCHAR, value VARCHAR, domain VARCHAR)[],
    kubelet_version VARCHAR,
    container_runtime_version VARCHAR,
    provider_id VARCHAR
);

COMMENT ON TABLE raw.kubernetes_nodes IS
    'Kept fields of Kubernetes nodes as collected, appended only when an object''s kept fields change (content_hash differs from its current version in core): history grows with change, not with snapshots.';

CREATE TABLE raw.kubernetes_pods (
    cluster VARCHAR NOT NULL,
    collection_id VARCHAR NOT NULL,
    collected_at TIMESTAMP NOT NULL,
    content_hash UBIGINT NOT NULL,
    pod_uid VARCHAR,
    namespace VARCHAR,
    pod_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    deletion_timestamp TIMESTAMP,
    labels MAP(VARCHAR, VARCHAR),
    owner_kind VARCHAR,
    owner_name VARCHAR,
    job_name VARCHAR,
    node_name VARCHAR,
    nominated_node_name VARCHAR,
    scheduler_name VARCHAR,
    runtime_class_name VARCHAR,
    priority INTEGER,
    priority_class_name VARCHAR,
    phase VARCHAR,
    reason VARCHAR,
    qos_class VARCHAR,
    scheduled_at TIMESTAMP,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    gpu_requests STRUCT(resource_name VARCHAR, gpus BIGINT)[],
    gpus BIGINT,
    counted BOOLEAN,
    queued BOOLEAN,
    is_balloon BOOLEAN,
    category VARCHAR
);

COMMENT ON TABLE raw.kubernetes_pods IS
    'Kept fields of Kubernetes pods as collected, appended only when an object''s kept fields change (content_hash differs from its current version in core): history grows with change, not with snapshots.';

CREATE TABLE raw.kubernetes_jobs (
    cluster VARCHAR NOT NULL,
    collection_id VARCHAR NOT NULL,
    collected_at TIMESTAMP NOT NULL,
    content_hash UBIGINT NOT NULL,
    job_uid VARCHAR,
    namespace VARCHAR,
    job_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    labels MAP(VARCHAR, VARCHAR),
    owner_kind VARCHAR,
    owner_name VARCHAR,
    parallelism INTEGER,
    completions INTEGER,
    suspend BOOLEAN,
    active INTEGER,
    succeeded INTEGER,
    failed INTEGER,
    started_at TIMESTAMP,
    completed_at TIMESTAMP,
    finished_condition VARCHAR
);

COMMENT ON TABLE raw.kubernetes_jobs IS
    'Kept fields of Kubernetes jobs as collected, appended only when an object''s kept fields change (content_hash differs from its current version in core): history grows with change, not with snapshots.';

CREATE TABLE raw.kubernetes_priority_classes (
    cluster VARCHAR NOT NULL,
    collection_id VARCHAR NOT NULL,
    collected_at TIMESTAMP NOT NULL,
    content_hash UBIGINT NOT NULL,
    priority_class_uid VARCHAR,
    priority_class_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    value INTEGER,
    global_default BOOLEAN,
    preemption_policy VARCHAR,
    description VARCHAR,
    is_balloon BOOLEAN
);

COMMENT ON TABLE raw.kubernetes_priority_classes IS
    'Kept fields of Kubernetes priority classes as collected, appended only when an object''s kept fields change (content_hash differs from its current version in core): history grows with change, not with snapshots.';

CREATE TABLE raw.kubernetes_events (
    cluster VARCHAR NOT NULL,
    collection_id VARCHAR NOT NULL,
    collected_at TIMESTAMP NOT NULL,
    content_hash UBIGINT NOT NULL,
    event_uid VARCHAR,
    namespace VARCHAR,
    event_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    involved_kind VARCHAR,
    involved_namespace VARCHAR,
    involved_name VARCHAR,
    involved_uid VARCHAR,
    reason VARCHAR,
    type VARCHAR,
    count INTEGER,
    first_timestamp TIMESTAMP,
    last_timestamp TIMESTAMP,
    event_time TIMESTAMP,
    reporting_component VARCHAR,
    source_host VARCHAR,
    message VARCHAR
);

COMMENT ON TABLE raw.kubernetes_events IS
    'Kept fields of Kubernetes events as collected, appended only when an object''s kept fields change (content_hash differs from its current version in core): history grows with change, not with snapshots.';

CREATE TABLE core.nodes (
    cluster VARCHAR NOT NULL,
    node_uid VARCHAR,
    node_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    deletion_timestamp TIMESTAMP,
    labels MAP(VARCHAR, VARCHAR),
    pool VARCHAR,
    instance_type VARCHAR,
    gpu_product VARCHAR,
    gpu_memory_bytes BIGINT,
    gpu_capacity BIGINT,
    gpu_allocatable BIGINT,
    gpu_resources STRUCT(resource_name VARCHAR, capacity BIGINT, allocatable BIGINT)[],
    mig_strategy VARCHAR,
    cuda_driver_version VARCHAR,
    cpu_capacity_millicores BIGINT,
    cpu_allocatable_millicores BIGINT,
    memory_capacity_bytes BIGINT,
    memory_allocatable_bytes BIGINT,
    ready BOOLEAN,
    ready_reason VARCHAR,
    ready_since TIMESTAMP,
    unschedulable BOOLEAN,
    taints STRUCT(key VARCHAR, value VARCHAR, effect VARCHAR)[],
    topology STRUCT(level SMALLINT, level_label VARCHAR, label VARCHAR, value VARCHAR, domain VARCHAR)[],
    kubelet_version VARCHAR,
    container_runtime_version VARCHAR,
    provider_id VARCHAR,
    content_hash UBIGINT NOT NULL,
    valid_from TIMESTAMP NOT NULL,
    valid_to TIMESTAMP,
    closed_reason VARCHAR,
    collection_id VARCHAR NOT NULL,
    closed_collection_id VARCHAR
);

COMMENT ON TABLE core.nodes IS
    'Kubernetes nodes as slowly changing rows: one row per version of a node''s kept fields, valid from valid_from to valid_to (NULL = current). Current nodes: WHERE valid_to IS NULL.';

COMMENT ON COLUMN core.nodes.cluster IS
    'Cluster name as configured in annex ([[clusters]] name).';
COMMENT ON COLUMN core.nodes.node_uid IS
    'metadata.uid of the Node: stable for the life of the node object.';
COMMENT ON COLUMN core.nodes.node_name IS
    'metadata.name of the Node (what pods'' spec.nodeName refers to).';
COMMENT ON COLUMN core.nodes.resource_version IS
    'metadata.resourceVersion of the object when this version of its kept fields was first collected (opaque).';
COMMENT ON COLUMN core.nodes.creation_timestamp IS
    'metadata.creationTimestamp (UTC).';
COMMENT ON COLUMN core.nodes.deletion_timestamp IS
    'metadata.deletionTimestamp (UTC): set while the node object is being deleted.';
COMMENT ON COLUMN core.nodes.labels IS
    'metadata.labels (attacker-controllable text: escape before display).';
COMMENT ON COLUMN core.nodes.pool IS
    'Node pool, from the first present of the managed-Kubernetes pool labels (cloud.google.com/gke-nodepool, eks.amazonaws.com/nodegroup, karpenter.sh/nodepool, kubernetes.azure.com/agentpool, agentpool, oci.oraclecloud.com/node-pool-name, node.kubernetes.io/pool, nodepool, pool); NULL when none.';
COMMENT ON COLUMN core.nodes.instance_type IS
    'Label node.kubernetes.io/instance-type (or the beta label).';
COMMENT ON COLUMN core.nodes.gpu_product IS
    'GPU model from the GPU feature discovery label nvidia.com/gpu.product; NULL on nodes without it.';
COMMENT ON COLUMN core.nodes.gpu_memory_bytes IS
    'Memory of one GPU in bytes, from the GFD label nvidia.com/gpu.memory (MiB).';
COMMENT ON COLUMN core.nodes.gpu_capacity IS
    'status.capacity of nvidia.com/gpu (whole GPUs; with MIG strategy single these are MIG slices); 0 when absent.';
COMMENT ON COLUMN core.nodes.gpu_allocatable IS
    'status.allocatable of nvidia.com/gpu; 0 when absent. Lower than capacity when the device plugin reports GPUs unhealthy.';
COMMENT ON COLUMN core.nodes.gpu_resources IS
    'Every GPU-like extended resource of the node (nvidia.com/gpu, MIG nvidia.com/mig-<profile>, amd.com/gpu, gpu.intel.com/*) with capacity and allocatable counts.';
COMMENT ON COLUMN core.nodes.mig_strategy IS
    'GFD label nvidia.com/mig.strategy: none, single (MIG slices exposed as nvidia.com/gpu) or mixed (one nvidia.com/mig-<profile> resource per profile).';
COMMENT ON COLUMN core.nodes.cuda_driver_version IS
    'NVIDIA driver version from GFD labels (nvidia.com/cuda.driver-version.full, or major.minor.rev).';
COMMENT ON COLUMN core.nodes.cpu_capacity_millicores IS
    'status.capacity cpu in millicores.';
COMMENT ON COLUMN core.nodes.cpu_allocatable_millicores IS
    'status.allocatable cpu in millicores.';
COMMENT ON COLUMN core.nodes.memory_capacity_bytes IS
    'status.capacity memory in bytes.';
COMMENT ON COLUMN core.nodes.memory_allocatable_bytes IS
    'status.allocatable memory in bytes.';
COMMENT ON COLUMN core.nodes.ready IS
    'Whether the Ready condition is True (false when False, Unknown or missing).';
COMMENT ON COLUMN core.nodes.ready_reason IS
    'reason of the Ready condition (e.g. KubeletReady, NodeStatusUnknown).';
COMMENT ON COLUMN core.nodes.ready_since IS
    'lastTransitionTime of the Ready condition (UTC).';
COMMENT ON COLUMN core.nodes.unschedulable IS
    'spec.unschedulable: the node is cordoned.';
COMMENT ON COLUMN core.nodes.taints IS
    'spec.taints (key, value, effect).';
COMMENT ON COLUMN core.nodes.topology IS
    'Failure-domain path of the node under the configured topology profile, broadest level first: level (1 = top), level_label (canonical label key of the level), label (key the node carries, NULL if none), value (or ''unknown''), domain (values from the top down to this level joined by /: the domain key).';
COMMENT ON COLUMN core.nodes.kubelet_version IS
    'status.nodeInfo.kubeletVersion.';
COMMENT ON COLUMN core.nodes.container_runtime_version IS
    'status.nodeInfo.containerRuntimeVersion.';
COMMENT ON COLUMN core.nodes.provider_id IS
    'spec.providerID: the cloud instance behind the node.';
COMMENT ON COLUMN core.nodes.content_hash IS
    '64-bit DuckDB hash() of this version''s kept fields (resource_version excluded): a new version is recorded only when it changes.';
COMMENT ON COLUMN core.nodes.valid_from IS
    'collected_at of the collection that first saw this version (UTC).';
COMMENT ON COLUMN core.nodes.valid_to IS
    'collected_at of the collection that saw a newer version, or whose consistent node list no longer held the node (UTC); NULL for the current version.';
COMMENT ON COLUMN core.nodes.closed_reason IS
    'changed (a newer version follows) or removed (gone from a consistent list); NULL while current.';
COMMENT ON COLUMN core.nodes.collection_id IS
    'The collection that first saw this version (audit.collections).';
COMMENT ON COLUMN core.nodes.closed_collection_id IS
    'The collection that closed this version.';

CREATE TABLE core.pods (
    cluster VARCHAR NOT NULL,
    pod_uid VARCHAR,
    namespace VARCHAR,
    pod_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    deletion_timestamp TIMESTAMP,
    labels MAP(VARCHAR, VARCHAR),
    owner_kind VARCHAR,
    owner_name VARCHAR,
    job_name VARCHAR,
    node_name VARCHAR,
    nominated_node_name VARCHAR,
    scheduler_name VARCHAR,
    runtime_class_name VARCHAR,
    priority INTEGER,
    priority_class_name VARCHAR,
    phase VARCHAR,
    reason VARCHAR,
    qos_class VARCHAR,
    scheduled_at TIMESTAMP,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    gpu_requests STRUCT(resource_name VARCHAR, gpus BIGINT)[],
    gpus BIGINT,
    counted BOOLEAN,
    queued BOOLEAN,
    is_balloon BOOLEAN,
    category VARCHAR,
    content_hash UBIGINT NOT NULL,
    first_seen_at TIMESTAMP NOT NULL,
    changed_at TIMESTAMP NOT NULL,
    present BOOLEAN NOT NULL,
    vanished_at TIMESTAMP,
    collection_id VARCHAR NOT NULL
);

COMMENT ON TABLE core.pods IS
    'Kubernetes pods, one row per pod (current state, including pods that have vanished: present = false). History of their kept fields is in raw.kubernetes_pods, their GPU holdings as intervals in core.gpu_allocations.';

COMMENT ON COLUMN core.pods.cluster IS
    'Cluster name as configured in annex ([[clusters]] name).';
COMMENT ON COLUMN core.pods.pod_uid IS
    'metadata.uid of the Pod.';
COMMENT ON COLUMN core.pods.namespace IS
    'metadata.namespace of the Pod.';
COMMENT ON COLUMN core.pods.pod_name IS
    'metadata.name of the Pod.';
COMMENT ON COLUMN core.pods.resource_version IS
    'metadata.resourceVersion when this version of its kept fields was first collected (opaque).';
COMMENT ON COLUMN core.pods.creation_timestamp IS
    'metadata.creationTimestamp (UTC).';
COMMENT ON COLUMN core.pods.deletion_timestamp IS
    'metadata.deletionTimestamp (UTC): set while terminating; a terminating pod still holds its GPUs.';
COMMENT ON COLUMN core.pods.labels IS
    'metadata.labels (attacker-controllable text: escape before display).';
COMMENT ON COLUMN core.pods.owner_kind IS
    'Kind of the controlling ownerReference (Job, ReplicaSet, DaemonSet, ...).';
COMMENT ON COLUMN core.pods.owner_name IS
    'Name of the controlling ownerReference.';
COMMENT ON COLUMN core.pods.job_name IS
    'The batch/v1 Job the pod belongs to: its controlling owner when that is a Job, else the batch.kubernetes.io/job-name (or job-name) label.';
COMMENT ON COLUMN core.pods.node_name IS
    'spec.nodeName: the node the pod is bound to; NULL while unscheduled.';
COMMENT ON COLUMN core.pods.nominated_node_name IS
    'status.nominatedNodeName: a node the scheduler picked pending preemption; holds nothing.';
COMMENT ON COLUMN core.pods.scheduler_name IS
    'spec.schedulerName.';
COMMENT ON COLUMN core.pods.runtime_class_name IS
    'spec.runtimeClassName (its overhead is included in the requests).';
COMMENT ON COLUMN core.pods.priority IS
    'spec.priority (resolved from the priority class at admission).';
COMMENT ON COLUMN core.pods.priority_class_name IS
    'spec.priorityClassName.';
COMMENT ON COLUMN core.pods.phase IS
    'status.phase: Pending, Running, Succeeded, Failed or Unknown.';
COMMENT ON COLUMN core.pods.reason IS
    'status.reason (e.g. Evicted).';
COMMENT ON COLUMN core.pods.qos_class IS
    'status.qosClass: Guaranteed, Burstable or BestEffort.';
COMMENT ON COLUMN core.pods.scheduled_at IS
    'lastTransitionTime of the PodScheduled condition when True: when the pod was bound (UTC).';
COMMENT ON COLUMN core.pods.started_at IS
    'status.startTime: when the kubelet accepted the pod (UTC).';
COMMENT ON COLUMN core.pods.finished_at IS
    'For Succeeded/Failed pods, the latest finishedAt of the containers'' terminated states (UTC).';
COMMENT ON COLUMN core.pods.gpu_requests IS
    'Effective requests of each GPU-like resource by the upstream PodRequests rule (containers and sidecars summed, max with each init container, plus overhead; requests falling back to limits).';
COMMENT ON COLUMN core.pods.gpus IS
    'Effective request of whole GPUs (nvidia.com/gpu); 0 when none. MIG slices are in gpu_requests only.';
COMMENT ON COLUMN core.pods.counted IS
    'Whether the pod holds its requests on its node now: bound (node_name set) and phase not Succeeded/Failed, the scheduler''s own rule. Terminating pods count.';
COMMENT ON COLUMN core.pods.queued IS
    'Whether the pod is demand waiting to be scheduled: phase Pending and not bound to a node.';
COMMENT ON COLUMN core.pods.is_balloon IS
    'Whether the pod is a balloon (placeholder reserving capacity): priority below the configured threshold or a configured placeholder priority class.';
COMMENT ON COLUMN core.pods.category IS
    'workload or balloon: the bucket its allocated GPUs are reported in.';
COMMENT ON COLUMN core.pods.content_hash IS
    '64-bit DuckDB hash() of the kept fields (resource_version excluded); the row is updated only when it changes.';
COMMENT ON COLUMN core.pods.first_seen_at IS
    'collected_at of the first collection that saw the object (UTC).';
COMMENT ON COLUMN core.pods.changed_at IS
    'collected_at of the collection that first saw the current kept fields (UTC).';
COMMENT ON COLUMN core.pods.present IS
    'True while the object exists: false once a consistent list no longer held it (inconsistent lists never mark objects gone).';
COMMENT ON COLUMN core.pods.vanished_at IS
    'collected_at of the first consistent list that no longer held the object (UTC); NULL while present.';
COMMENT ON COLUMN core.pods.collection_id IS
    'The collection that last changed this row (audit.collections).';

CREATE TABLE core.jobs (
    cluster VARCHAR NOT NULL,
    job_uid VARCHAR,
    namespace VARCHAR,
    job_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    labels MAP(VARCHAR, VARCHAR),
    owner_kind VARCHAR,
    owner_name VARCHAR,
    parallelism INTEGER,
    completions INTEGER,
    suspend BOOLEAN,
    active INTEGER,
    succeeded INTEGER,
    failed INTEGER,
    started_at TIMESTAMP,
    completed_at TIMESTAMP,
    finished_condition VARCHAR,
    content_hash UBIGINT NOT NULL,
    first_seen_at TIMESTAMP NOT NULL,
    changed_at TIMESTAMP NOT NULL,
    present BOOLEAN NOT NULL,
    vanished_at TIMESTAMP,
    collection_id VARCHAR NOT NULL
);

COMMENT ON TABLE core.jobs IS
    'Kubernetes batch/v1 Jobs, one row per job (current state; present = false once deleted).';

COMMENT ON COLUMN core.jobs.cluster IS
    'Cluster name as configured in annex ([[clusters]] name).';
COMMENT ON COLUMN core.jobs.job_uid IS
    'metadata.uid of the Job.';
COMMENT ON COLUMN core.jobs.namespace IS
    'metadata.namespace of the Job.';
COMMENT ON COLUMN core.jobs.job_name IS
    'metadata.name of the Job (pods'' job_name).';
COMMENT ON COLUMN core.jobs.resource_version IS
    'metadata.resourceVersion when this version of its kept fields was first collected (opaque).';
COMMENT ON COLUMN core.jobs.creation_timestamp IS
    'metadata.creationTimestamp (UTC).';
COMMENT ON COLUMN core.jobs.labels IS
    'metadata.labels (attacker-controllable text: escape before display).';
COMMENT ON COLUMN core.jobs.owner_kind IS
    'Kind of the controlling ownerReference (CronJob, JobSet, ...).';
COMMENT ON COLUMN core.jobs.owner_name IS
    'Name of the controlling ownerReference.';
COMMENT ON COLUMN core.jobs.parallelism IS
    'spec.parallelism.';
COMMENT ON COLUMN core.jobs.completions IS
    'spec.completions.';
COMMENT ON COLUMN core.jobs.suspend IS
    'spec.suspend.';
COMMENT ON COLUMN core.jobs.active IS
    'status.active: pods running or pending.';
COMMENT ON COLUMN core.jobs.succeeded IS
    'status.succeeded.';
COMMENT ON COLUMN core.jobs.failed IS
    'status.failed.';
COMMENT ON COLUMN core.jobs.started_at IS
    'status.startTime (UTC).';
COMMENT ON COLUMN core.jobs.completed_at IS
    'status.completionTime (UTC): set when the job completed successfully.';
COMMENT ON COLUMN core.jobs.finished_condition IS
    'Complete or Failed when that condition is True; NULL while the job runs.';
COMMENT ON COLUMN core.jobs.content_hash IS
    '64-bit DuckDB hash() of the kept fields (resource_version excluded); the row is updated only when it changes.';
COMMENT ON COLUMN core.jobs.first_seen_at IS
    'collected_at of the first collection that saw the object (UTC).';
COMMENT ON COLUMN core.jobs.changed_at IS
    'collected_at of the collection that first saw the current kept fields (UTC).';
COMMENT ON COLUMN core.jobs.present IS
    'True while the object exists: false once a consistent list no longer held it (inconsistent lists never mark objects gone).';
COMMENT ON COLUMN core.jobs.vanished_at IS
    'collected_at of the first consistent list that no longer held the object (UTC); NULL while present.';
COMMENT ON COLUMN core.jobs.collection_id IS
    'The collection that last changed this row (audit.collections).';

CREATE TABLE core.priority_classes (
    cluster VARCHAR NOT NULL,
    priority_class_uid VARCHAR,
    priority_class_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    value INTEGER,
    global_default BOOLEAN,
    preemption_policy VARCHAR,
    description VARCHAR,
    is_balloon BOOLEAN,
    content_hash UBIGINT NOT NULL,
    first_seen_at TIMESTAMP NOT NULL,
    changed_at TIMESTAMP NOT NULL,
    present BOOLEAN NOT NULL,
    vanished_at TIMESTAMP,
    collection_id VARCHAR NOT NULL
);

COMMENT ON TABLE core.priority_classes IS
    'Kubernetes PriorityClasses, one row per class (current state; present = false once deleted), with the balloon rule applied.';

COMMENT ON COLUMN core.priority_classes.cluster IS
    'Cluster name as configured in annex ([[clusters]] name).';
COMMENT ON COLUMN core.priority_classes.priority_class_uid IS
    'metadata.uid of the PriorityClass.';
COMMENT ON COLUMN core.priority_classes.priority_class_name IS
    'metadata.name of the PriorityClass (pods'' priority_class_name).';
COMMENT ON COLUMN core.priority_classes.resource_version IS
    'metadata.resourceVersion when this version of its kept fields was first collected (opaque).';
COMMENT ON COLUMN core.priority_classes.creation_timestamp IS
    'metadata.creationTimestamp (UTC).';
COMMENT ON COLUMN core.priority_classes.value IS
    'value: the priority of its pods.';
COMMENT ON COLUMN core.priority_classes.global_default IS
    'globalDefault: used for pods naming no class.';
COMMENT ON COLUMN core.priority_classes.preemption_policy IS
    'preemptionPolicy: PreemptLowerPriority or Never.';
COMMENT ON COLUMN core.priority_classes.description IS
    'description.';
COMMENT ON COLUMN core.priority_classes.is_balloon IS
    'Whether pods of this class are balloons under the configured balloon rule.';
COMMENT ON COLUMN core.priority_classes.content_hash IS
    '64-bit DuckDB hash() of the kept fields (resource_version excluded); the row is updated only when it changes.';
COMMENT ON COLUMN core.priority_classes.first_seen_at IS
    'collected_at of the first collection that saw the object (UTC).';
COMMENT ON COLUMN core.priority_classes.changed_at IS
    'collected_at of the collection that first saw the current kept fields (UTC).';
COMMENT ON COLUMN core.priority_classes.present IS
    'True while the object exists: false once a consistent list no longer held it (inconsistent lists never mark objects gone).';
COMMENT ON COLUMN core.priority_classes.vanished_at IS
    'collected_at of the first consistent list that no longer held the object (UTC); NULL while present.';
COMMENT ON COLUMN core.priority_classes.collection_id IS
    'The collection that last changed this row (audit.collections).';

CREATE TABLE core.events (
    cluster VARCHAR NOT NULL,
    event_uid VARCHAR,
    namespace VARCHAR,
    event_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    involved_kind VARCHAR,
    involved_namespace VARCHAR,
    involved_name VARCHAR,
    involved_uid VARCHAR,
    reason VARCHAR,
    type VARCHAR,
    count INTEGER,
    first_timestamp TIMESTAMP,
    last_timestamp TIMESTAMP,
    event_time TIMESTAMP,
    reporting_component VARCHAR,
    source_host VARCHAR,
    message VARCHAR,
    content_hash UBIGINT NOT NULL,
    first_seen_at TIMESTAMP NOT NULL,
    changed_at TIMESTAMP NOT NULL,
    present BOOLEAN NOT NULL,
    vanished_at TIMESTAMP,
    collection_id VARCHAR NOT NULL
);

COMMENT ON TABLE core.events IS
    'Kubernetes core/v1 Events, one row per event object (latest count and timestamps; present = false once expired from the API server, by default after 1 h).';

COMMENT ON COLUMN core.events.cluster IS
    'Cluster name as configured in annex ([[clusters]] name).';
COMMENT ON COLUMN core.events.event_uid IS
    'metadata.uid of the Event (core/v1).';
COMMENT ON COLUMN core.events.namespace IS
    'metadata.namespace of the Event.';
COMMENT ON COLUMN core.events.event_name IS
    'metadata.name of the Event.';
COMMENT ON COLUMN core.events.resource_version IS
    'metadata.resourceVersion when this version of its kept fields was first collected (opaque).';
COMMENT ON COLUMN core.events.creation_timestamp IS
    'metadata.creationTimestamp (UTC).';
COMMENT ON COLUMN core.events.involved_kind IS
    'involvedObject.kind (Pod, Node, Job, ...).';
COMMENT ON COLUMN core.events.involved_namespace IS
    'involvedObject.namespace.';
COMMENT ON COLUMN core.events.involved_name IS
    'involvedObject.name.';
COMMENT ON COLUMN core.events.involved_uid IS
    'involvedObject.uid (joins pod_uid / node_uid / job_uid).';
COMMENT ON COLUMN core.events.reason IS
    'reason (e.g. FailedScheduling, Preempted, NodeNotReady).';
COMMENT ON COLUMN core.events.type IS
    'type: Normal or Warning.';
COMMENT ON COLUMN core.events.count IS
    'How often it happened: series.count when a series, else count (1 when absent).';
COMMENT ON COLUMN core.events.first_timestamp IS
    'firstTimestamp (UTC).';
COMMENT ON COLUMN core.events.last_timestamp IS
    'lastTimestamp, else series.lastObservedTime, else eventTime (UTC).';
COMMENT ON COLUMN core.events.event_time IS
    'eventTime (UTC, microseconds) when set by the reporter.';
COMMENT ON COLUMN core.events.reporting_component IS
    'reportingComponent, else source.component.';
COMMENT ON COLUMN core.events.source_host IS
    'source.host: the node that reported it.';
COMMENT ON COLUMN core.events.message IS
    'message (attacker-controllable text: escape before display).';
COMMENT ON COLUMN core.events.content_hash IS
    '64-bit DuckDB hash() of the kept fields (resource_version excluded); the row is updated only when it changes.';
COMMENT ON COLUMN core.events.first_seen_at IS
    'collected_at of the first collection that saw the object (UTC).';
COMMENT ON COLUMN core.events.changed_at IS
    'collected_at of the collection that first saw the current kept fields (UTC).';
COMMENT ON COLUMN core.events.present IS
    'True while the object exists: false once a consistent list no longer held it (inconsistent lists never mark objects gone).';
COMMENT ON COLUMN core.events.vanished_at IS
    'collected_at of the first consistent list that no longer held the object (UTC); NULL while present.';
COMMENT ON COLUMN core.events.collection_id IS
    'The collection that last changed this row (audit.collections).';

CREATE TABLE core.gpu_allocations (
    cluster VARCHAR NOT NULL,
    pod_uid VARCHAR NOT NULL,
    namespace VARCHAR,
    pod_name VARCHAR,
    job_name VARCHAR,
    node_name VARCHAR NOT NULL,
    resource_name VARCHAR NOT NULL,
    gpus BIGINT NOT NULL,
    category VARCHAR NOT NULL,
    priority_class_name VARCHAR,
    valid_from TIMESTAMP NOT NULL,
    valid_from_source VARCHAR NOT NULL,
    valid_to TIMESTAMP,
    valid_to_source VARCHAR,
    valid_to_inferred BOOLEAN,
    opened_collection_id VARCHAR NOT NULL,
    closed_collection_id VARCHAR
);

COMMENT ON TABLE core.gpu_allocations IS
    'GPU holdings as intervals: one row per pod and GPU-like resource it requested while bound to a node, from its scheduling to its end. A pod absent from a consistent snapshot is closed at the collection time (valid_to_inferred); inconsistent snapshots never close anything. Open rows (valid_to IS NULL) are the current allocations.';

COMMENT ON COLUMN core.gpu_allocations.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN core.gpu_allocations.pod_uid IS
    'metadata.uid of the pod holding the GPUs (core.pods).';
COMMENT ON COLUMN core.gpu_allocations.namespace IS
    'Namespace of the pod.';
COMMENT ON COLUMN core.gpu_allocations.pod_name IS
    'Name of the pod.';
COMMENT ON COLUMN core.gpu_allocations.job_name IS
    'The batch/v1 Job of the pod, if any.';
COMMENT ON COLUMN core.gpu_allocations.node_name IS
    'The node the GPUs are on.';
COMMENT ON COLUMN core.gpu_allocations.resource_name IS
    'GPU-like resource: nvidia.com/gpu (whole GPUs) or a MIG nvidia.com/mig-<profile> (slices; never add them to whole GPUs).';
COMMENT ON COLUMN core.gpu_allocations.gpus IS
    'Effective request of the resource (PodRequests rule): GPUs, or MIG slices for MIG resources.';
COMMENT ON COLUMN core.gpu_allocations.category IS
    'workload or balloon (placeholder pods reserving capacity).';
COMMENT ON COLUMN core.gpu_allocations.priority_class_name IS
    'spec.priorityClassName of the pod.';
COMMENT ON COLUMN core.gpu_allocations.valid_from IS
    'Start of the holding (UTC): when the pod was scheduled (PodScheduled), else started, else created, else first collected (see valid_from_source).';
COMMENT ON COLUMN core.gpu_allocations.valid_from_source IS
    'Which timestamp valid_from is: scheduled, started, created or collected.';
COMMENT ON COLUMN core.gpu_allocations.valid_to IS
    'End of the holding (UTC); NULL while the pod still holds the GPUs.';
COMMENT ON COLUMN core.gpu_allocations.valid_to_source IS
    'Which timestamp valid_to is: finished (containers'' finishedAt), collected (pod seen finished without finish times), deleted (vanished while terminating: its deletionTimestamp) or vanished (gone from a consistent list: the collection time).';
COMMENT ON COLUMN core.gpu_allocations.valid_to_inferred IS
    'True when valid_to is not the pod''s own finish time but inferred from a collection (the holding ended at or before it).';
COMMENT ON COLUMN core.gpu_allocations.opened_collection_id IS
    'The collection that first saw the holding.';
COMMENT ON COLUMN core.gpu_allocations.closed_collection_id IS
    'The collection that closed it.';

CREATE TABLE audit.kubernetes_lists (
    collection_id VARCHAR NOT NULL,
    cluster VARCHAR NOT NULL,
    resource VARCHAR,
    api_path VARCHAR,
    resource_version VARCHAR,
    consistent BOOLEAN,
    pages INTEGER,
    items BIGINT,
    rejected BIGINT,
    restarts INTEGER,
    retries INTEGER,
    requests INTEGER,
    response_bytes BIGINT,
    page_size INTEGER,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    latency_max_seconds DOUBLE,
    latency_p50_seconds DOUBLE,
    latency_p99_seconds DOUBLE,
    latency_total_seconds DOUBLE
);

COMMENT ON TABLE audit.kubernetes_lists IS
    'One row per Kubernetes list per collection: the snapshot it reflects, whether it is consistent, and how the API server behaved (restarts after 410, retries, latency).';

COMMENT ON COLUMN audit.kubernetes_lists.collection_id IS
    'The collection (audit.collections).';
COMMENT ON COLUMN audit.kubernetes_lists.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN audit.kubernetes_lists.resource IS
    'Resource listed: nodes, pods, jobs, priority_classes or events.';
COMMENT ON COLUMN audit.kubernetes_lists.api_path IS
    'API path of the list, e.g. /api/v1/pods.';
COMMENT ON COLUMN audit.kubernetes_lists.resource_version IS
    'metadata.resourceVersion of the list''s first page: the snapshot the list reflects (opaque).';
COMMENT ON COLUMN audit.kubernetes_lists.consistent IS
    'True when every page came from that one snapshot; false when a 410 Expired forced the server''s inconsistent continuation (objects absent from an inconsistent list are never treated as deleted).';
COMMENT ON COLUMN audit.kubernetes_lists.pages IS
    'Pages of the final pass over the list.';
COMMENT ON COLUMN audit.kubernetes_lists.items IS
    'Objects in the final pass (rejected ones included).';
COMMENT ON COLUMN audit.kubernetes_lists.rejected IS
    'Objects rejected into audit.rejected.';
COMMENT ON COLUMN audit.kubernetes_lists.restarts IS
    'How often the list was restarted from the beginning after its continue token expired (410).';
COMMENT ON COLUMN audit.kubernetes_lists.retries IS
    'Requests retried after 429, 5xx, connection errors or undecodable bodies.';
COMMENT ON COLUMN audit.kubernetes_lists.requests IS
    'HTTP requests made, retries and restarts included.';
COMMENT ON COLUMN audit.kubernetes_lists.response_bytes IS
    'Bytes of response bodies received (after gzip decoding).';
COMMENT ON COLUMN audit.kubernetes_lists.page_size IS
    'limit sent with each request.';
COMMENT ON COLUMN audit.kubernetes_lists.started_at IS
    'When the list started (UTC).';
COMMENT ON COLUMN audit.kubernetes_lists.finished_at IS
    'When its last page arrived (UTC).';
COMMENT ON COLUMN audit.kubernetes_lists.latency_max_seconds IS
    'Slowest request, reading the body included.';
COMMENT ON COLUMN audit.kubernetes_lists.latency_p50_seconds IS
    'Median request latency.';
COMMENT ON COLUMN audit.kubernetes_lists.latency_p99_seconds IS
    '99th-percentile request latency (nearest rank).';
COMMENT ON COLUMN audit.kubernetes_lists.latency_total_seconds IS
    'Sum of request latencies.';

CREATE VIEW core.node_gpu_resources AS
SELECT
    n.cluster,
    n.node_uid,
    n.node_name,
    r.resource_name,
    r.capacity,
    r.allocatable,
    n.valid_from,
    n.valid_to
FROM (SELECT *, unnest(gpu_resources) AS r FROM core.nodes) AS n;

COMMENT ON VIEW core.node_gpu_resources IS
    'GPU-like extended resources of every node version in core.nodes, one row per node version and resource (nvidia.com/gpu, MIG nvidia.com/mig-<profile>, ...). Current: WHERE valid_to IS NULL.';
COMMENT ON COLUMN core.node_gpu_resources.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN core.node_gpu_resources.node_uid IS 'metadata.uid of the node (core.nodes).';
COMMENT ON COLUMN core.node_gpu_resources.node_name IS 'metadata.name of the node.';
COMMENT ON COLUMN core.node_gpu_resources.resource_name IS 'Extended resource name, e.g. nvidia.com/gpu or nvidia.com/mig-1g.10gb.';
COMMENT ON COLUMN core.node_gpu_resources.capacity IS 'status.capacity of the resource (devices or MIG slices).';
COMMENT ON COLUMN core.node_gpu_resources.allocatable IS 'status.allocatable of the resource (healthy devices the scheduler may hand out).';
COMMENT ON COLUMN core.node_gpu_resources.valid_from IS 'Start of the node version (core.nodes.valid_from, UTC).';
COMMENT ON COLUMN core.node_gpu_resources.valid_to IS 'End of the node version (core.nodes.valid_to, UTC); NULL when current.';

CREATE VIEW marts.node_gpu_capacity AS
WITH current_nodes AS (
    SELECT *, unnest(gpu_resources) AS r FROM core.nodes WHERE valid_to IS NULL
),
held AS (
    SELECT
        cluster,
        node_name,
        resource_name,
        CAST(sum(gpus) FILTER (WHERE category = 'workload') AS BIGINT) AS workload,
        CAST(sum(gpus) FILTER (WHERE category = 'balloon') AS BIGINT) AS balloon
    FROM core.gpu_allocations
    WHERE valid_to IS NULL
    GROUP BY cluster, node_name, resource_name
),
buckets AS (
    SELECT
        n.cluster,
        n.node_uid,
        n.node_name,
        n.pool,
        n.gpu_product,
        n.instance_type,
        n.mig_strategy,
        n.topology,
        n.ready,
        n.unschedulable,
        n.ready AND NOT n.unschedulable AS schedulable,
        n.r.resource_name AS resource_name,
        n.r.resource_name = 'nvidia.com/gpu' AND coalesce(n.mig_strategy, 'none') <> 'single'
            AS whole_gpus,
        n.r.capacity AS capacity,
        n.r.allocatable AS allocatable,
        coalesce(h.workload, 0) AS allocated_workload,
        coalesce(h.balloon, 0) AS allocated_balloon
    FROM current_nodes AS n
    LEFT JOIN held AS h
        ON h.cluster = n.cluster AND h.node_name = n.node_name
        AND h.resource_name = n.r.resource_name
)
SELECT
    cluster,
    node_uid,
    node_name,
    pool,
    gpu_product,
    instance_type,
    mig_strategy,
    topology,
    ready,
    unschedulable,
    schedulable,
    resource_name,
    whole_gpus,
    capacity,
    allocatable,
    allocated_workload,
    allocated_balloon,
    CASE WHEN schedulable
        THEN greatest(allocatable - allocated_workload - allocated_balloon, 0) ELSE 0 END AS free,
    greatest(capacity - greatest(allocatable, allocated_workload + allocated_balloon), 0)
        + CASE WHEN schedulable
            THEN 0 ELSE greatest(allocatable - allocated_workload - allocated_balloon, 0) END
        AS unavailable,
    greatest(allocated_workload + allocated_balloon - allocatable, 0)
        AS allocated_beyond_allocatable
FROM buckets;

COMMENT ON VIEW marts.node_gpu_capacity IS
    'Per current node and GPU-like resource: capacity split into allocated_workload + allocated_balloon + free + unavailable (= capacity). free only on Ready, uncordoned nodes; unavailable = capacity - allocatable (unhealthy devices) plus the unallocated allocatable of NotReady or cordoned nodes. Balloons are never free.';
COMMENT ON COLUMN marts.node_gpu_capacity.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.node_gpu_capacity.node_uid IS 'metadata.uid of the node.';
COMMENT ON COLUMN marts.node_gpu_capacity.node_name IS 'metadata.name of the node.';
COMMENT ON COLUMN marts.node_gpu_capacity.pool IS 'Node pool (core.nodes.pool); NULL when the node carries no pool label.';
COMMENT ON COLUMN marts.node_gpu_capacity.gpu_product IS 'GPU model (GFD nvidia.com/gpu.product); NULL when unlabelled.';
COMMENT ON COLUMN marts.node_gpu_capacity.instance_type IS 'Label node.kubernetes.io/instance-type.';
COMMENT ON COLUMN marts.node_gpu_capacity.mig_strategy IS 'GFD nvidia.com/mig.strategy: none, single or mixed.';
COMMENT ON COLUMN marts.node_gpu_capacity.topology IS 'Failure-domain path of the node (core.nodes.topology).';
COMMENT ON COLUMN marts.node_gpu_capacity.ready IS 'Whether the node''s Ready condition is True.';
COMMENT ON COLUMN marts.node_gpu_capacity.unschedulable IS 'Whether the node is cordoned (spec.unschedulable).';
COMMENT ON COLUMN marts.node_gpu_capacity.schedulable IS 'ready and not unschedulable: only then is unallocated capacity free.';
COMMENT ON COLUMN marts.node_gpu_capacity.resource_name IS 'nvidia.com/gpu (whole GPUs) or a MIG nvidia.com/mig-<profile> (slices: never add to whole GPUs).';
COMMENT ON COLUMN marts.node_gpu_capacity.whole_gpus IS 'True when the row counts whole GPUs: nvidia.com/gpu on a node whose MIG strategy is not single (with single, nvidia.com/gpu counts MIG slices).';
COMMENT ON COLUMN marts.node_gpu_capacity.capacity IS 'status.capacity of the resource.';
COMMENT ON COLUMN marts.node_gpu_capacity.allocatable IS 'status.allocatable of the resource.';
COMMENT ON COLUMN marts.node_gpu_capacity.allocated_workload IS 'Held by counted workload pods (open core.gpu_allocations, category workload).';
COMMENT ON COLUMN marts.node_gpu_capacity.allocated_balloon IS 'Held by counted balloon (placeholder) pods: reserved, not idle.';
COMMENT ON COLUMN marts.node_gpu_capacity.free IS 'allocatable - allocated on Ready, uncordoned nodes (never below 0); 0 elsewhere.';
COMMENT ON COLUMN marts.node_gpu_capacity.unavailable IS 'capacity - max(allocatable, allocated), plus the unallocated allocatable of NotReady or cordoned nodes.';
COMMENT ON COLUMN marts.node_gpu_capacity.allocated_beyond_allocatable IS 'Allocated above allocatable (devices went unhealthy under running pods); 0 normally.';

CREATE VIEW marts.fleet_gpu_by_model AS
SELECT
    cluster,
    coalesce(gpu_product, 'unknown') AS gpu_product,
    resource_name,
    bool_and(whole_gpus) AS whole_gpus,
    count(*) AS nodes,
    count(*) FILTER (WHERE schedulable) AS schedulable_nodes,
    CAST(sum(capacity) AS BIGINT) AS capacity,
    CAST(sum(allocatable) AS BIGINT) AS allocatable,
    CAST(sum(allocated_workload) AS BIGINT) AS allocated_workload,
    CAST(sum(allocated_balloon) AS BIGINT) AS allocated_balloon,
    CAST(sum(free) AS BIGINT) AS free,
    CAST(sum(unavailable) AS BIGINT) AS unavailable
FROM marts.node_gpu_capacity
GROUP BY cluster, coalesce(gpu_product, 'unknown'), resource_name, whole_gpus;

COMMENT ON VIEW marts.fleet_gpu_by_model IS
    'GPU capacity buckets per cluster, GPU model and resource (whole GPUs and each MIG profile on separate rows). capacity = allocated_workload + allocated_balloon + free + unavailable.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.gpu_product IS 'GPU model (GFD nvidia.com/gpu.product), unknown when unlabelled.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.resource_name IS 'nvidia.com/gpu or a MIG nvidia.com/mig-<profile>.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.whole_gpus IS 'True when the row counts whole GPUs (see marts.node_gpu_capacity.whole_gpus).';
COMMENT ON COLUMN marts.fleet_gpu_by_model.nodes IS 'Current nodes offering the resource.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.schedulable_nodes IS 'Of those, Ready and uncordoned.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.capacity IS 'Sum of capacity.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.allocatable IS 'Sum of allocatable.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.allocated_workload IS 'Held by workload pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.allocated_balloon IS 'Held by balloon (placeholder) pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.free IS 'Free on Ready, uncordoned nodes.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.unavailable IS 'Unhealthy devices and the unallocated capacity of NotReady or cordoned nodes.';

CREATE VIEW marts.fleet_gpu_by_pool AS
SELECT
    cluster,
    coalesce(pool, 'unknown') AS pool,
    resource_name,
    bool_and(whole_gpus) AS whole_gpus,
    count(*) AS nodes,
    count(*) FILTER (WHERE schedulable) AS schedulable_nodes,
    CAST(sum(capacity) AS BIGINT) AS capacity,
    CAST(sum(allocatable) AS BIGINT) AS allocatable,
    CAST(sum(allocated_workload) AS BIGINT) AS allocated_workload,
    CAST(sum(allocated_balloon) AS BIGINT) AS allocated_balloon,
    CAST(sum(free) AS BIGINT) AS free,
    CAST(sum(unavailable) AS BIGINT) AS unavailable
FROM marts.node_gpu_capacity
GROUP BY cluster, coalesce(pool, 'unknown'), resource_name, whole_gpus;

COMMENT ON VIEW marts.fleet_gpu_by_pool IS
    'GPU capacity buckets per cluster, node pool and resource. capacity = allocated_workload + allocated_balloon + free + unavailable.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.pool IS 'Node pool (core.nodes.pool), unknown when the node carries no pool label.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.resource_name IS 'nvidia.com/gpu or a MIG nvidia.com/mig-<profile>.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.whole_gpus IS 'True when the row counts whole GPUs (see marts.node_gpu_capacity.whole_gpus).';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.nodes IS 'Current nodes of the pool offering the resource.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.schedulable_nodes IS 'Of those, Ready and uncordoned.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.capacity IS 'Sum of capacity.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.allocatable IS 'Sum of allocatable.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.allocated_workload IS 'Held by workload pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.allocated_balloon IS 'Held by balloon (placeholder) pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.free IS 'Free on Ready, uncordoned nodes.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.unavailable IS 'Unhealthy devices and the unallocated capacity of NotReady or cordoned nodes.';

CREATE VIEW marts.fleet_gpu_by_domain AS
WITH levels AS (
    SELECT *, unnest(topology) AS t FROM marts.node_gpu_capacity
),
domains AS (
    SELECT
        cluster,
        t.level AS level,
        t.level_label AS level_label,
        t.domain AS domain,
        t.value AS value,
        resource_name,
        bool_and(whole_gpus) AS whole_gpus,
        count(*) AS nodes,
        count(*) FILTER (WHERE schedulable) AS schedulable_nodes,
        CAST(sum(capacity) AS BIGINT) AS capacity,
        CAST(sum(allocatable) AS BIGINT) AS allocatable,
        CAST(sum(allocated_workload) AS BIGINT) AS allocated_workload,
        CAST(sum(allocated_balloon) AS BIGINT) AS allocated_balloon,
        CAST(sum(free) AS BIGINT) AS free,
        CAST(sum(unavailable) AS BIGINT) AS unavailable
    FROM levels
    GROUP BY cluster, t.level, t.level_label, t.domain, t.value, resource_name, whole_gpus
)
SELECT
    *,
    capacity AS blast_radius_gpus,
    allocated_workload AS blast_radius_workload_gpus,
    capacity / sum(capacity) OVER (PARTITION BY cluster, level, resource_name, whole_gpus)
        AS blast_radius_share
FROM domains;

COMMENT ON VIEW marts.fleet_gpu_by_domain IS
    'GPU capacity buckets per failure domain of the configured topology profile, at every level (region, zone, block, rack, ... down to the node), and the blast radius: GPUs lost if the domain fails. Nodes missing a level''s labels are in domain value unknown.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.level IS 'Level of the profile, 1 = broadest.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.level_label IS 'Canonical label key of the level, e.g. topology.kubernetes.io/zone.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.domain IS 'Domain key: label values from the top level down to this one, joined by /.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.value IS 'The label value at this level (unknown when missing).';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.resource_name IS 'nvidia.com/gpu or a MIG nvidia.com/mig-<profile>.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.whole_gpus IS 'True when the row counts whole GPUs (see marts.node_gpu_capacity.whole_gpus).';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.nodes IS 'Current nodes in the domain offering the resource.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.schedulable_nodes IS 'Of those, Ready and uncordoned.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.capacity IS 'Sum of capacity.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.allocatable IS 'Sum of allocatable.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.allocated_workload IS 'Held by workload pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.allocated_balloon IS 'Held by balloon (placeholder) pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.free IS 'Free on Ready, uncordoned nodes.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.unavailable IS 'Unhealthy devices and the unallocated capacity of NotReady or cordoned nodes.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.blast_radius_gpus IS 'GPUs (or slices) lost if this domain fails: its whole capacity.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.blast_radius_workload_gpus IS 'GPUs held by workload pods in the domain: the work a failure would interrupt.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.blast_radius_share IS 'blast_radius_gpus as a fraction of the cluster''s capacity of the resource.';

CREATE VIEW marts.fleet_gpu_by_namespace AS
SELECT
    cluster,
    namespace,
    count(*) FILTER (WHERE counted) AS pods_counted,
    count(*) FILTER (WHERE counted AND len(gpu_requests) > 0) AS gpu_pods_counted,
    count(*) FILTER (WHERE counted AND is_balloon) AS balloon_pods,
    coalesce(CAST(sum(gpus) FILTER (WHERE counted AND category = 'workload') AS BIGINT), 0)
        AS gpus_workload,
    coalesce(CAST(sum(gpus) FILTER (WHERE counted AND category = 'balloon') AS BIGINT), 0)
        AS gpus_balloon,
    coalesce(CAST(sum(list_sum(list_transform(
        list_filter(gpu_requests, lambda x: starts_with(x.resource_name, 'nvidia.com/mig-')),
        lambda x: x.gpus))) FILTER (WHERE counted) AS BIGINT), 0) AS mig_slices_allocated,
    count(*) FILTER (WHERE queued) AS queued_pods,
    count(*) FILTER (WHERE queued AND len(gpu_requests) > 0) AS queued_gpu_pods,
    coalesce(CAST(sum(gpus) FILTER (WHERE queued) AS BIGINT), 0) AS queued_gpus,
    coalesce(CAST(sum(list_sum(list_transform(
        list_filter(gpu_requests, lambda x: starts_with(x.resource_name, 'nvidia.com/mig-')),
        lambda x: x.gpus))) FILTER (WHERE queued) AS BIGINT), 0) AS queued_mig_slices,
    count(*) FILTER (WHERE node_name IS NULL AND nominated_node_name IS NOT NULL)
        AS nominated_pods
FROM core.pods
WHERE present
GROUP BY cluster, namespace;

COMMENT ON VIEW marts.fleet_gpu_by_namespace IS
    'Per cluster and namespace: GPUs held now (workload vs balloon) and the queued demand, from the pods present in the latest snapshot. Whole GPUs are nvidia.com/gpu requests; MIG slices are counted separately.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.namespace IS 'Kubernetes namespace.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.pods_counted IS 'Pods holding their requests now (bound, not Succeeded/Failed).';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.gpu_pods_counted IS 'Of those, pods requesting any GPU-like resource.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.balloon_pods IS 'Counted balloon (placeholder) pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.gpus_workload IS 'nvidia.com/gpu held by counted workload pods (on MIG-single nodes these are slices).';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.gpus_balloon IS 'nvidia.com/gpu held by counted balloon pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.mig_slices_allocated IS 'MIG slices (nvidia.com/mig-* resources, all profiles) held by counted pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.queued_pods IS 'Pods waiting to be scheduled (Pending, not bound).';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.queued_gpu_pods IS 'Of those, pods requesting any GPU-like resource.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.queued_gpus IS 'nvidia.com/gpu requested by queued pods: pending demand.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.queued_mig_slices IS 'MIG slices requested by queued pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.nominated_pods IS 'Unbound pods nominated for a node (waiting for a preemption); they hold nothing yet.';

CREATE VIEW marts.fleet_summary AS
WITH last_collection AS (
    SELECT cluster, collection_id, started_at
    FROM audit.collections
    WHERE source = 'kubernetes' AND status = 'succeeded'
    QUALIFY row_number() OVER (PARTITION BY cluster ORDER BY started_at DESC) = 1
),
snapshot AS (
    SELECT l.cluster, bool_and(k.consistent) AS consistent
    FROM last_collection AS l
    JOIN audit.kubernetes_lists AS k USING (collection_id)
    GROUP BY l.cluster
),
nodes AS (
    SELECT
        cluster,
        count(*) AS nodes,
        count(*) FILTER (WHERE ready) AS ready_nodes,
        count(*) FILTER (WHERE ready AND NOT unschedulable) AS schedulable_nodes,
        count(*) FILTER (WHERE unschedulable) AS cordoned_nodes,
        count(*) FILTER (WHERE len(gpu_resources) > 0) AS gpu_nodes
    FROM core.nodes
    WHERE valid_to IS NULL
    GROUP BY cluster
),
gpus AS (
    SELECT
        cluster,
        CAST(sum(capacity) FILTER (WHERE whole_gpus) AS BIGINT) AS gpus_capacity,
        CAST(sum(allocatable) FILTER (WHERE whole_gpus) AS BIGINT) AS gpus_allocatable,
        CAST(sum(allocated_workload) FILTER (WHERE whole_gpus) AS BIGINT)
            AS gpus_allocated_workload,
        CAST(sum(allocated_balloon) FILTER (WHERE whole_gpus) AS BIGINT) AS gpus_allocated_balloon,
        CAST(sum(free) FILTER (WHERE whole_gpus) AS BIGINT) AS gpus_free,
        CAST(sum(unavailable) FILTER (WHERE whole_gpus) AS BIGINT) AS gpus_unavailable,
        CAST(sum(capacity) FILTER (WHERE NOT whole_gpus) AS BIGINT) AS mig_slices_capacity,
        CAST(sum(allocated_workload + allocated_balloon) FILTER (WHERE NOT whole_gpus)
            AS BIGINT)
            AS mig_slices_allocated
    FROM marts.node_gpu_capacity
    GROUP BY cluster
),
pods AS (
    SELECT
        cluster,
        count(*) AS pods,
        count(*) FILTER (WHERE counted) AS pods_counted,
        count(*) FILTER (WHERE counted AND len(gpu_requests) > 0) AS gpu_pods_counted,
        count(*) FILTER (WHERE counted AND is_balloon) AS balloon_pods,
        count(*) FILTER (WHERE queued) AS queued_pods,
        coalesce(CAST(sum(gpus) FILTER (WHERE queued) AS BIGINT), 0) AS queued_gpus
    FROM core.pods
    WHERE present
    GROUP BY cluster
)
SELECT
    l.cluster,
    coalesce(n.nodes, 0) AS nodes,
    coalesce(n.ready_nodes, 0) AS ready_nodes,
    coalesce(n.schedulable_nodes, 0) AS schedulable_nodes,
    coalesce(n.cordoned_nodes, 0) AS cordoned_nodes,
    coalesce(n.gpu_nodes, 0) AS gpu_nodes,
    coalesce(g.gpus_capacity, 0) AS gpus_capacity,
    coalesce(g.gpus_allocatable, 0) AS gpus_allocatable,
    coalesce(g.gpus_allocated_workload, 0) AS gpus_allocated_workload,
    coalesce(g.gpus_allocated_balloon, 0) AS gpus_allocated_balloon,
    coalesce(g.gpus_free, 0) AS gpus_free,
    coalesce(g.gpus_unavailable, 0) AS gpus_unavailable,
    coalesce(g.mig_slices_capacity, 0) AS mig_slices_capacity,
    coalesce(g.mig_slices_allocated, 0) AS mig_slices_allocated,
    coalesce(p.pods, 0) AS pods,
    coalesce(p.pods_counted, 0) AS pods_counted,
    coalesce(p.gpu_pods_counted, 0) AS gpu_pods_counted,
    coalesce(p.balloon_pods, 0) AS balloon_pods,
    coalesce(p.queued_pods, 0) AS queued_pods,
    coalesce(p.queued_gpus, 0) AS queued_gpus,
    l.collection_id AS last_collection_id,
    l.started_at AS last_collected_at,
    coalesce(s.consistent, false) AS snapshot_consistent
FROM last_collection AS l
LEFT JOIN nodes AS n USING (cluster)
LEFT JOIN gpus AS g USING (cluster)
LEFT JOIN pods AS p USING (cluster)
LEFT JOIN snapshot AS s USING (cluster);

COMMENT ON VIEW marts.fleet_summary IS
    'One row per cluster with a successful Kubernetes collection: nodes, whole GPUs by bucket (capacity = allocated_workload + allocated_balloon + free + unavailable), MIG slices apart, pods, queued demand, and the latest collection with whether its snapshot was consistent.';
COMMENT ON COLUMN marts.fleet_summary.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.fleet_summary.nodes IS 'Current nodes.';
COMMENT ON COLUMN marts.fleet_summary.ready_nodes IS 'Nodes whose Ready condition is True.';
COMMENT ON COLUMN marts.fleet_summary.schedulable_nodes IS 'Ready and not cordoned.';
COMMENT ON COLUMN marts.fleet_summary.cordoned_nodes IS 'Nodes with spec.unschedulable.';
COMMENT ON COLUMN marts.fleet_summary.gpu_nodes IS 'Nodes with any GPU-like resource in their capacity.';
COMMENT ON COLUMN marts.fleet_summary.gpus_capacity IS 'Whole GPUs (nvidia.com/gpu, MIG-single nodes excluded) in node capacity.';
COMMENT ON COLUMN marts.fleet_summary.gpus_allocatable IS 'Whole GPUs allocatable.';
COMMENT ON COLUMN marts.fleet_summary.gpus_allocated_workload IS 'Whole GPUs held by workload pods.';
COMMENT ON COLUMN marts.fleet_summary.gpus_allocated_balloon IS 'Whole GPUs held by balloon (placeholder) pods.';
COMMENT ON COLUMN marts.fleet_summary.gpus_free IS 'Whole GPUs free on Ready, uncordoned nodes.';
COMMENT ON COLUMN marts.fleet_summary.gpus_unavailable IS 'Whole GPUs unhealthy, or unallocated on NotReady or cordoned nodes.';
COMMENT ON COLUMN marts.fleet_summary.mig_slices_capacity IS 'MIG slices in node capacity (mixed-strategy profiles and single-strategy nvidia.com/gpu).';
COMMENT ON COLUMN marts.fleet_summary.mig_slices_allocated IS 'MIG slices held by pods.';
COMMENT ON COLUMN marts.fleet_summary.pods IS 'Pods present in the latest snapshot.';
COMMENT ON COLUMN marts.fleet_summary.pods_counted IS 'Pods holding their requests (bound, not Succeeded/Failed).';
COMMENT ON COLUMN marts.fleet_summary.gpu_pods_counted IS 'Counted pods requesting any GPU-like resource.';
COMMENT ON COLUMN marts.fleet_summary.balloon_pods IS 'Counted balloon (placeholder) pods.';
COMMENT ON COLUMN marts.fleet_summary.queued_pods IS 'Pods waiting to be scheduled (Pending, not bound).';
COMMENT ON COLUMN marts.fleet_summary.queued_gpus IS 'nvidia.com/gpu requested by queued pods.';
COMMENT ON COLUMN marts.fleet_summary.last_collection_id IS 'The latest successful Kubernetes collection of the cluster (audit.collections).';
COMMENT ON COLUMN marts.fleet_summary.last_collected_at IS 'When it started (UTC): the time the figures describe.';
COMMENT ON COLUMN marts.fleet_summary.snapshot_consistent IS 'Whether every list of that collection was a consistent snapshot (audit.kubernetes_lists).';

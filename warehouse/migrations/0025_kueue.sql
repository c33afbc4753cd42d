-- 0025: Kueue (issue 38): who waits for GPUs, and how each team's ClusterQueue quota is used.
-- raw.kubernetes_kueue_*: kept fields, a row per change (the history); core.kueue_*: current state,
-- merged like core.jobs (warehouse/models/kubernetes.py CURRENT_STATE_TABLES). Empty on clusters
-- without Kueue (the collector skips the group when the API server does not serve it).

CREATE TABLE raw.kubernetes_kueue_workloads (
    cluster VARCHAR NOT NULL,
    collection_id VARCHAR NOT NULL,
    collected_at TIMESTAMP NOT NULL,
    content_hash UBIGINT NOT NULL,
    workload_uid VARCHAR,
    namespace VARCHAR,
    workload_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    labels MAP(VARCHAR, VARCHAR),
    local_queue VARCHAR,
    cluster_queue VARCHAR,
    owner_kind VARCHAR,
    owner_name VARCHAR,
    priority_class_name VARCHAR,
    priority INTEGER,
    gpu_requests STRUCT(resource_name VARCHAR, gpus BIGINT)[],
    requested_gpus BIGINT,
    admitted_gpus_by_flavor STRUCT(flavor VARCHAR, resource_name VARCHAR, gpus BIGINT)[],
    state VARCHAR,
    quota_reserved_at TIMESTAMP,
    admitted_at TIMESTAMP,
    evicted_at TIMESTAMP,
    eviction_reason VARCHAR,
    preempted_at TIMESTAMP,
    preemption_reason VARCHAR,
    finished_at TIMESTAMP,
    queued_from TIMESTAMP,
    queued_to TIMESTAMP,
    admitted_from TIMESTAMP,
    admitted_to TIMESTAMP
);

COMMENT ON TABLE raw.kubernetes_kueue_workloads IS
    'Kept fields of Kueue workloads as collected, appended only when an object''s kept fields change (content_hash differs from its current version in core): history grows with change, not with snapshots.';

CREATE TABLE raw.kubernetes_kueue_cluster_queues (
    cluster VARCHAR NOT NULL,
    collection_id VARCHAR NOT NULL,
    collected_at TIMESTAMP NOT NULL,
    content_hash UBIGINT NOT NULL,
    cluster_queue_uid VARCHAR,
    cluster_queue VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    cohort VARCHAR,
    queueing_strategy VARCHAR,
    pending_workloads INTEGER,
    admitted_workloads INTEGER,
    quotas STRUCT(flavor VARCHAR, resource_name VARCHAR, is_gpu BOOLEAN, nominal_quota DOUBLE, borrowing_limit DOUBLE, lending_limit DOUBLE, used DOUBLE, borrowed DOUBLE)[]
);

COMMENT ON TABLE raw.kubernetes_kueue_cluster_queues IS
    'Kept fields of Kueue cluster queues as collected, appended only when an object''s kept fields change (content_hash differs from its current version in core): history grows with change, not with snapshots.';

CREATE TABLE raw.kubernetes_kueue_local_queues (
    cluster VARCHAR NOT NULL,
    collection_id VARCHAR NOT NULL,
    collected_at TIMESTAMP NOT NULL,
    content_hash UBIGINT NOT NULL,
    local_queue_uid VARCHAR,
    namespace VARCHAR,
    local_queue VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    cluster_queue VARCHAR,
    pending_workloads INTEGER,
    admitted_workloads INTEGER
);

COMMENT ON TABLE raw.kubernetes_kueue_local_queues IS
    'Kept fields of Kueue local queues as collected, appended only when an object''s kept fields change (content_hash differs from its current version in core): history grows with change, not with snapshots.';

CREATE TABLE raw.kubernetes_kueue_resource_flavors (
    cluster VARCHAR NOT NULL,
    collection_id VARCHAR NOT NULL,
    collected_at TIMESTAMP NOT NULL,
    content_hash UBIGINT NOT NULL,
    resource_flavor_uid VARCHAR,
    flavor VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    node_labels MAP(VARCHAR, VARCHAR)
);

COMMENT ON TABLE raw.kubernetes_kueue_resource_flavors IS
    'Kept fields of Kueue resource flavors as collected, appended only when an object''s kept fields change (content_hash differs from its current version in core): history grows with change, not with snapshots.';

CREATE TABLE core.kueue_workloads (
    cluster VARCHAR NOT NULL,
    workload_uid VARCHAR,
    namespace VARCHAR,
    workload_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    labels MAP(VARCHAR, VARCHAR),
    local_queue VARCHAR,
    cluster_queue VARCHAR,
    owner_kind VARCHAR,
    owner_name VARCHAR,
    priority_class_name VARCHAR,
    priority INTEGER,
    gpu_requests STRUCT(resource_name VARCHAR, gpus BIGINT)[],
    requested_gpus BIGINT,
    admitted_gpus_by_flavor STRUCT(flavor VARCHAR, resource_name VARCHAR, gpus BIGINT)[],
    state VARCHAR,
    quota_reserved_at TIMESTAMP,
    admitted_at TIMESTAMP,
    evicted_at TIMESTAMP,
    eviction_reason VARCHAR,
    preempted_at TIMESTAMP,
    preemption_reason VARCHAR,
    finished_at TIMESTAMP,
    queued_from TIMESTAMP,
    queued_to TIMESTAMP,
    admitted_from TIMESTAMP,
    admitted_to TIMESTAMP,
    content_hash UBIGINT NOT NULL,
    first_seen_at TIMESTAMP NOT NULL,
    changed_at TIMESTAMP NOT NULL,
    present BOOLEAN NOT NULL,
    vanished_at TIMESTAMP,
    collection_id VARCHAR NOT NULL
);

COMMENT ON TABLE core.kueue_workloads IS
    'Kueue Workloads (kueue.x-k8s.io/v1beta1), one row per workload (current state; present = false once deleted; every earlier version in raw.kubernetes_kueue_workloads): who waits for GPUs, in which queue, since when, and when it was admitted, evicted or finished.';

COMMENT ON COLUMN core.kueue_workloads.cluster IS
    'Cluster name as configured in annex ([[clusters]] name).';
COMMENT ON COLUMN core.kueue_workloads.workload_uid IS
    'metadata.uid of the Workload.';
COMMENT ON COLUMN core.kueue_workloads.namespace IS
    'metadata.namespace of the Workload (the team).';
COMMENT ON COLUMN core.kueue_workloads.workload_name IS
    'metadata.name of the Workload.';
COMMENT ON COLUMN core.kueue_workloads.resource_version IS
    'metadata.resourceVersion when this version of its kept fields was first collected (opaque).';
COMMENT ON COLUMN core.kueue_workloads.creation_timestamp IS
    'metadata.creationTimestamp (UTC): when the workload was submitted to its queue.';
COMMENT ON COLUMN core.kueue_workloads.labels IS
    'metadata.labels.';
COMMENT ON COLUMN core.kueue_workloads.local_queue IS
    'spec.queueName: the LocalQueue in the workload''s namespace (core.kueue_local_queues maps it to its ClusterQueue).';
COMMENT ON COLUMN core.kueue_workloads.cluster_queue IS
    'status.admission.clusterQueue: the ClusterQueue that admitted it; NULL while not admitted (see local_queue).';
COMMENT ON COLUMN core.kueue_workloads.owner_kind IS
    'Kind of the controlling owner (Job, JobSet, RayJob, ...): the job the workload stands for.';
COMMENT ON COLUMN core.kueue_workloads.owner_name IS
    'Name of the controlling owner: for a batch/v1 Job, core.jobs.job_name.';
COMMENT ON COLUMN core.kueue_workloads.priority_class_name IS
    'spec.priorityClassName.';
COMMENT ON COLUMN core.kueue_workloads.priority IS
    'spec.priority (higher preempts lower within a ClusterQueue).';
COMMENT ON COLUMN core.kueue_workloads.gpu_requests IS
    'GPU-like resources requested over all pod sets (pod set count x the pod''s PodRequests), per resource name.';
COMMENT ON COLUMN core.kueue_workloads.requested_gpus IS
    'Sum of gpu_requests: the GPUs the workload needs to be admitted.';
COMMENT ON COLUMN core.kueue_workloads.admitted_gpus_by_flavor IS
    'status.admission.podSetAssignments: GPU-like resource usage per ResourceFlavor and resource; empty while not admitted.';
COMMENT ON COLUMN core.kueue_workloads.state IS
    'From its conditions: finished, admitted, quota_reserved (quota held, admission checks pending), inactive (spec.active false), preempted or evicted (requeued, waiting again), queued.';
COMMENT ON COLUMN core.kueue_workloads.quota_reserved_at IS
    'lastTransitionTime of condition QuotaReserved while True (UTC).';
COMMENT ON COLUMN core.kueue_workloads.admitted_at IS
    'lastTransitionTime of condition Admitted while True (UTC).';
COMMENT ON COLUMN core.kueue_workloads.evicted_at IS
    'lastTransitionTime of condition Evicted while True (UTC).';
COMMENT ON COLUMN core.kueue_workloads.eviction_reason IS
    'reason of condition Evicted while True (Preempted, InactiveWorkload, PodsReadyTimeout, ...).';
COMMENT ON COLUMN core.kueue_workloads.preempted_at IS
    'lastTransitionTime of condition Preempted while True (UTC).';
COMMENT ON COLUMN core.kueue_workloads.preemption_reason IS
    'reason of condition Preempted while True (InClusterQueue, InCohortReclamation, ...).';
COMMENT ON COLUMN core.kueue_workloads.finished_at IS
    'lastTransitionTime of condition Finished while True (UTC).';
COMMENT ON COLUMN core.kueue_workloads.queued_from IS
    'Start of the current (or last) wait: creation, or the last eviction of a requeued workload (UTC).';
COMMENT ON COLUMN core.kueue_workloads.queued_to IS
    'End of that wait, at admission (UTC); NULL while still waiting.';
COMMENT ON COLUMN core.kueue_workloads.admitted_from IS
    'Start of the admitted interval (= queued_to; UTC); NULL while not admitted.';
COMMENT ON COLUMN core.kueue_workloads.admitted_to IS
    'End of the admitted interval, at Finished (UTC); NULL while admitted or never admitted.';
COMMENT ON COLUMN core.kueue_workloads.content_hash IS
    'Hash of the kept fields (resource_version excluded): a new raw version is appended only when it changes.';
COMMENT ON COLUMN core.kueue_workloads.first_seen_at IS
    'When annex first collected this object (UTC).';
COMMENT ON COLUMN core.kueue_workloads.changed_at IS
    'When annex collected the current version of its kept fields (UTC).';
COMMENT ON COLUMN core.kueue_workloads.present IS
    'False once a consistent list no longer returns the object (deleted).';
COMMENT ON COLUMN core.kueue_workloads.vanished_at IS
    'When a consistent list first no longer returned it (UTC); NULL while present.';
COMMENT ON COLUMN core.kueue_workloads.collection_id IS
    'The collection that last wrote this row (audit.collections).';

CREATE TABLE core.kueue_cluster_queues (
    cluster VARCHAR NOT NULL,
    cluster_queue_uid VARCHAR,
    cluster_queue VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    cohort VARCHAR,
    queueing_strategy VARCHAR,
    pending_workloads INTEGER,
    admitted_workloads INTEGER,
    quotas STRUCT(flavor VARCHAR, resource_name VARCHAR, is_gpu BOOLEAN, nominal_quota DOUBLE, borrowing_limit DOUBLE, lending_limit DOUBLE, used DOUBLE, borrowed DOUBLE)[],
    content_hash UBIGINT NOT NULL,
    first_seen_at TIMESTAMP NOT NULL,
    changed_at TIMESTAMP NOT NULL,
    present BOOLEAN NOT NULL,
    vanished_at TIMESTAMP,
    collection_id VARCHAR NOT NULL
);

COMMENT ON TABLE core.kueue_cluster_queues IS
    'Kueue ClusterQueues, one row per queue (current state; every earlier version in raw.kubernetes_kueue_cluster_queues, so quota and usage have history): cohort, and per flavor and resource the nominal quota, borrowing and lending limits, and the usage and borrowing status reports.';

COMMENT ON COLUMN core.kueue_cluster_queues.cluster IS
    'Cluster name as configured in annex ([[clusters]] name).';
COMMENT ON COLUMN core.kueue_cluster_queues.cluster_queue_uid IS
    'metadata.uid of the ClusterQueue.';
COMMENT ON COLUMN core.kueue_cluster_queues.cluster_queue IS
    'metadata.name of the ClusterQueue.';
COMMENT ON COLUMN core.kueue_cluster_queues.resource_version IS
    'metadata.resourceVersion when this version of its kept fields was first collected (opaque).';
COMMENT ON COLUMN core.kueue_cluster_queues.creation_timestamp IS
    'metadata.creationTimestamp (UTC).';
COMMENT ON COLUMN core.kueue_cluster_queues.cohort IS
    'spec.cohort: queues of one cohort lend each other unused quota.';
COMMENT ON COLUMN core.kueue_cluster_queues.queueing_strategy IS
    'spec.queueingStrategy (BestEffortFIFO, StrictFIFO).';
COMMENT ON COLUMN core.kueue_cluster_queues.pending_workloads IS
    'status.pendingWorkloads.';
COMMENT ON COLUMN core.kueue_cluster_queues.admitted_workloads IS
    'status.admittedWorkloads.';
COMMENT ON COLUMN core.kueue_cluster_queues.quotas IS
    'Per flavor and resource of spec.resourceGroups: whether the resource is GPU-like (is_gpu: nvidia.com/gpu, MIG, AMD, Intel), nominalQuota, borrowingLimit, lendingLimit (NULL: none) and status.flavorsUsage total (used) and borrowed, in the resource''s base unit (a count, cores, bytes).';
COMMENT ON COLUMN core.kueue_cluster_queues.content_hash IS
    'Hash of the kept fields (resource_version excluded): a new raw version is appended only when it changes.';
COMMENT ON COLUMN core.kueue_cluster_queues.first_seen_at IS
    'When annex first collected this object (UTC).';
COMMENT ON COLUMN core.kueue_cluster_queues.changed_at IS
    'When annex collected the current version of its kept fields (UTC).';
COMMENT ON COLUMN core.kueue_cluster_queues.present IS
    'False once a consistent list no longer returns the object (deleted).';
COMMENT ON COLUMN core.kueue_cluster_queues.vanished_at IS
    'When a consistent list first no longer returned it (UTC); NULL while present.';
COMMENT ON COLUMN core.kueue_cluster_queues.collection_id IS
    'The collection that last wrote this row (audit.collections).';

CREATE TABLE core.kueue_local_queues (
    cluster VARCHAR NOT NULL,
    local_queue_uid VARCHAR,
    namespace VARCHAR,
    local_queue VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    cluster_queue VARCHAR,
    pending_workloads INTEGER,
    admitted_workloads INTEGER,
    content_hash UBIGINT NOT NULL,
    first_seen_at TIMESTAMP NOT NULL,
    changed_at TIMESTAMP NOT NULL,
    present BOOLEAN NOT NULL,
    vanished_at TIMESTAMP,
    collection_id VARCHAR NOT NULL
);

COMMENT ON TABLE core.kueue_local_queues IS
    'Kueue LocalQueues, one row per queue (current state): the namespace''s (team''s) queue and the ClusterQueue it feeds.';

COMMENT ON COLUMN core.kueue_local_queues.cluster IS
    'Cluster name as configured in annex ([[clusters]] name).';
COMMENT ON COLUMN core.kueue_local_queues.local_queue_uid IS
    'metadata.uid of the LocalQueue.';
COMMENT ON COLUMN core.kueue_local_queues.namespace IS
    'metadata.namespace of the LocalQueue (the team).';
COMMENT ON COLUMN core.kueue_local_queues.local_queue IS
    'metadata.name of the LocalQueue (what workloads name as spec.queueName).';
COMMENT ON COLUMN core.kueue_local_queues.resource_version IS
    'metadata.resourceVersion when this version of its kept fields was first collected (opaque).';
COMMENT ON COLUMN core.kueue_local_queues.creation_timestamp IS
    'metadata.creationTimestamp (UTC).';
COMMENT ON COLUMN core.kueue_local_queues.cluster_queue IS
    'spec.clusterQueue: the ClusterQueue it submits to.';
COMMENT ON COLUMN core.kueue_local_queues.pending_workloads IS
    'status.pendingWorkloads.';
COMMENT ON COLUMN core.kueue_local_queues.admitted_workloads IS
    'status.admittedWorkloads.';
COMMENT ON COLUMN core.kueue_local_queues.content_hash IS
    'Hash of the kept fields (resource_version excluded): a new raw version is appended only when it changes.';
COMMENT ON COLUMN core.kueue_local_queues.first_seen_at IS
    'When annex first collected this object (UTC).';
COMMENT ON COLUMN core.kueue_local_queues.changed_at IS
    'When annex collected the current version of its kept fields (UTC).';
COMMENT ON COLUMN core.kueue_local_queues.present IS
    'False once a consistent list no longer returns the object (deleted).';
COMMENT ON COLUMN core.kueue_local_queues.vanished_at IS
    'When a consistent list first no longer returned it (UTC); NULL while present.';
COMMENT ON COLUMN core.kueue_local_queues.collection_id IS
    'The collection that last wrote this row (audit.collections).';

CREATE TABLE core.kueue_resource_flavors (
    cluster VARCHAR NOT NULL,
    resource_flavor_uid VARCHAR,
    flavor VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    node_labels MAP(VARCHAR, VARCHAR),
    content_hash UBIGINT NOT NULL,
    first_seen_at TIMESTAMP NOT NULL,
    changed_at TIMESTAMP NOT NULL,
    present BOOLEAN NOT NULL,
    vanished_at TIMESTAMP,
    collection_id VARCHAR NOT NULL
);

COMMENT ON TABLE core.kueue_resource_flavors IS
    'Kueue ResourceFlavors, one row per flavor (current state): the node labels that say which nodes a flavor''s quota stands for.';

COMMENT ON COLUMN core.kueue_resource_flavors.cluster IS
    'Cluster name as configured in annex ([[clusters]] name).';
COMMENT ON COLUMN core.kueue_resource_flavors.resource_flavor_uid IS
    'metadata.uid of the ResourceFlavor.';
COMMENT ON COLUMN core.kueue_resource_flavors.flavor IS
    'metadata.name of the ResourceFlavor.';
COMMENT ON COLUMN core.kueue_resource_flavors.resource_version IS
    'metadata.resourceVersion when this version of its kept fields was first collected (opaque).';
COMMENT ON COLUMN core.kueue_resource_flavors.creation_timestamp IS
    'metadata.creationTimestamp (UTC).';
COMMENT ON COLUMN core.kueue_resource_flavors.node_labels IS
    'spec.nodeLabels: the labels of the flavor''s nodes.';
COMMENT ON COLUMN core.kueue_resource_flavors.content_hash IS
    'Hash of the kept fields (resource_version excluded): a new raw version is appended only when it changes.';
COMMENT ON COLUMN core.kueue_resource_flavors.first_seen_at IS
    'When annex first collected this object (UTC).';
COMMENT ON COLUMN core.kueue_resource_flavors.changed_at IS
    'When annex collected the current version of its kept fields (UTC).';
COMMENT ON COLUMN core.kueue_resource_flavors.present IS
    'False once a consistent list no longer returns the object (deleted).';
COMMENT ON COLUMN core.kueue_resource_flavors.vanished_at IS
    'When a consistent list first no longer returned it (UTC); NULL while present.';
COMMENT ON COLUMN core.kueue_resource_flavors.collection_id IS
    'The collection that last wrote this row (audit.collections).';

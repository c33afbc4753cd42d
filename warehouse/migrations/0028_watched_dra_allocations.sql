-- 0028 annex watch follows DRA's ResourceSlices and ResourceClaims and Kueue's objects where the
-- API server serves them, and records GPUs held through ResourceClaims (issue 38 item 2, watch).
--   core.watched_resource_claims / core.watched_dra_devices / core.watched_dra_pods: the watch's
--     current state of claims, of the GPU devices slices publish, and of pods that name claims.
--     A pod, its claims and their devices arrive in different watch streams, committed in any
--     order; whichever commits last opens the holding (warehouse/models/watch_dra_*.sql).
--   core.watched_gpu_allocations gains mechanism (device_plugin | dra) and claim_uid as
--     core.gpu_allocations did in 0027; gpus becomes DOUBLE (a claim reserved for k pods gives
--     each 1/k). DuckDB cannot drop a constraint, so the table is rebuilt with the same rows (in
--     their order) and comments, without its PRIMARY KEY (a pod may now hold the same resource
--     by the device plugin and by claims): the commits insert a key only when it is new
--     (anti-join), as the snapshot merge does for core.gpu_allocations (see 0017 for why annex's
--     large tables carry no ART index).
--   core.gpu_allocation_history: a snapshot row is dropped where the watch holds the same pod,
--     resource, mechanism and claim; DRA rows now come from the watch where it saw them.
-- Never edit this file once applied anywhere: add a new migration instead.

CREATE TABLE core.watched_gpu_allocations_0028 (
    cluster VARCHAR NOT NULL,
    pod_uid VARCHAR NOT NULL,
    namespace VARCHAR,
    pod_name VARCHAR,
    job_name VARCHAR,
    node_name VARCHAR NOT NULL,
    resource_name VARCHAR NOT NULL,
    gpus DOUBLE NOT NULL,
    category VARCHAR NOT NULL,
    priority_class_name VARCHAR,
    valid_from TIMESTAMP NOT NULL,
    valid_from_source VARCHAR NOT NULL,
    valid_to TIMESTAMP,
    valid_to_source VARCHAR,
    valid_to_inferred BOOLEAN,
    opened_resource_version VARCHAR NOT NULL,
    closed_resource_version VARCHAR,
    opened_at TIMESTAMP NOT NULL,
    closed_at TIMESTAMP,
    mechanism VARCHAR NOT NULL DEFAULT 'device_plugin',
    claim_uid VARCHAR
);

INSERT INTO core.watched_gpu_allocations_0028 BY NAME
SELECT *, 'device_plugin' AS mechanism, CAST(NULL AS VARCHAR) AS claim_uid
FROM core.watched_gpu_allocations;

DROP TABLE core.watched_gpu_allocations;
ALTER TABLE core.watched_gpu_allocations_0028 RENAME TO watched_gpu_allocations;

COMMENT ON TABLE core.watched_gpu_allocations IS
    'GPU holdings as intervals built from the watch: one row per pod and GPU-like resource it held while bound to a node (mechanism device_plugin), or per pod, ResourceClaim and resource of the GPU or MIG devices allocated to a claim reserved for it (mechanism dra), with start and end taken from the pod''s own timestamps (scheduling, container start and finish, deletion), not from when annex saw them. Same keys as core.gpu_allocations (the snapshot-built history), but complete: pods that start and are deleted between two snapshots are here too. Each (cluster, pod_uid, resource_name, mechanism, claim_uid) is stored once (the commits insert only new keys).';
COMMENT ON COLUMN core.watched_gpu_allocations.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN core.watched_gpu_allocations.pod_uid IS 'metadata.uid of the pod holding the GPUs.';
COMMENT ON COLUMN core.watched_gpu_allocations.namespace IS 'Namespace of the pod.';
COMMENT ON COLUMN core.watched_gpu_allocations.pod_name IS 'Name of the pod.';
COMMENT ON COLUMN core.watched_gpu_allocations.job_name IS 'The batch/v1 Job of the pod, if any.';
COMMENT ON COLUMN core.watched_gpu_allocations.node_name IS 'The node the GPUs are on.';
COMMENT ON COLUMN core.watched_gpu_allocations.resource_name IS
    'GPU-like resource: nvidia.com/gpu (whole GPUs) or a MIG nvidia.com/mig-<profile> (slices; never add them to whole GPUs). A DRA GPU device counts as nvidia.com/gpu, a DRA MIG device as nvidia.com/mig-<its profile>; IMEX channels and daemons (ComputeDomains) are not GPUs and make no row.';
COMMENT ON COLUMN core.watched_gpu_allocations.gpus IS
    'Effective request of the resource (PodRequests rule): GPUs, or MIG slices for MIG resources. For a dra row: the claim''s allocated devices of that resource divided by the pods the claim is reserved for when the row opened (a claim shared by k pods gives each 1/k: GPU-hours counted once).';
COMMENT ON COLUMN core.watched_gpu_allocations.category IS
    'workload or balloon (placeholder pods reserving capacity).';
COMMENT ON COLUMN core.watched_gpu_allocations.priority_class_name IS 'spec.priorityClassName of the pod.';
COMMENT ON COLUMN core.watched_gpu_allocations.valid_from IS
    'Start of the holding (UTC): the pod''s PodScheduled time, else its start, else its creation, else when annex received it (see valid_from_source).';
COMMENT ON COLUMN core.watched_gpu_allocations.valid_from_source IS
    'Which timestamp valid_from is: scheduled, started, created or observed.';
COMMENT ON COLUMN core.watched_gpu_allocations.valid_to IS
    'End of the holding (UTC); NULL while the pod holds the GPUs.';
COMMENT ON COLUMN core.watched_gpu_allocations.valid_to_source IS
    'Which timestamp valid_to is: finished (containers'' finishedAt), deleted (the pod was deleted before finishing: its deletionTimestamp, the end of its grace period), observed (no such timestamp: when annex received the end), relisted (gone when a list after a 410 Expired was taken: the list time), and for dra rows claim_deleted (the claim was deleted: its deletionTimestamp, else when annex received the deletion) or claim_released (the claim was deallocated or no longer reserved for the pod: when annex received that change).';
COMMENT ON COLUMN core.watched_gpu_allocations.valid_to_inferred IS
    'True when valid_to is not a timestamp the pod or claim carried (observed, relisted, claim_released, claim_deleted without a deletionTimestamp): the holding ended at or before it.';
COMMENT ON COLUMN core.watched_gpu_allocations.opened_resource_version IS
    'resourceVersion of the change (or list) that opened the row: of the pod, or for a dra row of whichever of the pod, its claim or the claim''s ResourceSlice was committed last.';
COMMENT ON COLUMN core.watched_gpu_allocations.closed_resource_version IS
    'resourceVersion of the change (or list) that closed it.';
COMMENT ON COLUMN core.watched_gpu_allocations.opened_at IS 'When annex committed the opening (UTC).';
COMMENT ON COLUMN core.watched_gpu_allocations.closed_at IS
    'When annex committed the closing (UTC); closed_at - valid_to is the watch''s lag.';
COMMENT ON COLUMN core.watched_gpu_allocations.mechanism IS
    'How the pod holds the GPUs: device_plugin (extended resource in the pod''s containers) or dra (devices allocated to a ResourceClaim reserved for the pod).';
COMMENT ON COLUMN core.watched_gpu_allocations.claim_uid IS
    'metadata.uid of the ResourceClaim (core.watched_resource_claims) for a dra row; NULL for device_plugin rows.';

CREATE TABLE core.watched_resource_claims (
    cluster VARCHAR NOT NULL,
    claim_uid VARCHAR NOT NULL,
    namespace VARCHAR,
    claim_name VARCHAR,
    resource_version VARCHAR,
    creation_timestamp TIMESTAMP,
    deletion_timestamp TIMESTAMP,
    allocated BOOLEAN,
    results STRUCT(request VARCHAR, driver VARCHAR, dra_pool VARCHAR, device VARCHAR)[],
    reserved_for_pod_uids VARCHAR[],
    present BOOLEAN NOT NULL,
    first_seen_at TIMESTAMP NOT NULL,
    changed_at TIMESTAMP NOT NULL,
    gone_at TIMESTAMP
);

COMMENT ON TABLE core.watched_resource_claims IS
    'DRA ResourceClaims as annex watch last saw them, one row per claim (present = false once deleted or absent from a relist): the devices allocated to it and the pods it is reserved for. With core.watched_dra_devices and core.watched_dra_pods, the watch''s source of dra rows in core.watched_gpu_allocations; the snapshot''s is core.dra_claims.';
COMMENT ON COLUMN core.watched_resource_claims.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN core.watched_resource_claims.claim_uid IS 'metadata.uid of the ResourceClaim.';
COMMENT ON COLUMN core.watched_resource_claims.namespace IS 'metadata.namespace of the ResourceClaim (its pods'' namespace).';
COMMENT ON COLUMN core.watched_resource_claims.claim_name IS 'metadata.name of the ResourceClaim.';
COMMENT ON COLUMN core.watched_resource_claims.resource_version IS 'metadata.resourceVersion of the last state seen.';
COMMENT ON COLUMN core.watched_resource_claims.creation_timestamp IS 'metadata.creationTimestamp (UTC).';
COMMENT ON COLUMN core.watched_resource_claims.deletion_timestamp IS 'metadata.deletionTimestamp of the last state seen (UTC): set once deletion was requested.';
COMMENT ON COLUMN core.watched_resource_claims.allocated IS 'Whether status.allocation is set: the scheduler allocated devices to the claim.';
COMMENT ON COLUMN core.watched_resource_claims.results IS
    'status.allocation.devices.results[]: each allocated device as {request, driver, dra_pool (the result''s pool), device}; empty until allocated.';
COMMENT ON COLUMN core.watched_resource_claims.reserved_for_pod_uids IS
    'status.reservedFor[] entries of resource pods: the uids of the pods using the claim (two or more for a shared claim).';
COMMENT ON COLUMN core.watched_resource_claims.present IS 'False once the claim is gone (a DELETED event, or absence from a relist).';
COMMENT ON COLUMN core.watched_resource_claims.first_seen_at IS 'When annex first received the claim (UTC).';
COMMENT ON COLUMN core.watched_resource_claims.changed_at IS 'When annex received its last change (UTC).';
COMMENT ON COLUMN core.watched_resource_claims.gone_at IS 'When annex learnt it was gone (UTC): the DELETED event''s arrival, or the relist; NULL while present.';

CREATE TABLE core.watched_dra_devices (
    cluster VARCHAR NOT NULL,
    resource_slice_uid VARCHAR NOT NULL,
    resource_slice_name VARCHAR,
    driver VARCHAR,
    dra_pool VARCHAR,
    device VARCHAR,
    node_name VARCHAR,
    device_type VARCHAR,
    gpu_uuid VARCHAR,
    mig_profile VARCHAR,
    changed_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE core.watched_dra_devices IS
    'The devices the ResourceSlices annex watch follows publish now, one row per slice and device (a slice''s rows are replaced when it changes and removed when it is deleted or absent from a relist). The watch resolves a claim''s allocation results to GPUs and MIG devices here; the snapshot''s history of devices is core.dra_devices.';
COMMENT ON COLUMN core.watched_dra_devices.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN core.watched_dra_devices.resource_slice_uid IS 'metadata.uid of the ResourceSlice.';
COMMENT ON COLUMN core.watched_dra_devices.resource_slice_name IS 'metadata.name of the ResourceSlice.';
COMMENT ON COLUMN core.watched_dra_devices.driver IS 'spec.driver of the slice, e.g. gpu.nvidia.com or compute-domain.nvidia.com.';
COMMENT ON COLUMN core.watched_dra_devices.dra_pool IS 'spec.pool.name of the slice: the DRA pool; not a node pool.';
COMMENT ON COLUMN core.watched_dra_devices.device IS 'spec.devices[].name: the device name a claim''s allocation result names, unique within (driver, dra_pool).';
COMMENT ON COLUMN core.watched_dra_devices.node_name IS 'spec.nodeName: the node whose devices the slice publishes; NULL for slices of all nodes or a node selector.';
COMMENT ON COLUMN core.watched_dra_devices.device_type IS 'The driver''s type attribute: gpu, mig, channel or daemon; NULL when the driver sets none.';
COMMENT ON COLUMN core.watched_dra_devices.gpu_uuid IS 'UUID of the physical GPU the device is or is part of (a MIG device''s parentUUID); NULL for devices that are not GPUs.';
COMMENT ON COLUMN core.watched_dra_devices.mig_profile IS 'The profile attribute of a MIG device, e.g. 1g.10gb; NULL for whole GPUs.';
COMMENT ON COLUMN core.watched_dra_devices.changed_at IS 'When annex received the slice''s state this row comes from (UTC).';

CREATE TABLE core.watched_dra_pods (
    cluster VARCHAR NOT NULL,
    pod_uid VARCHAR NOT NULL,
    namespace VARCHAR,
    pod_name VARCHAR,
    job_name VARCHAR,
    node_name VARCHAR,
    category VARCHAR NOT NULL,
    priority_class_name VARCHAR,
    phase VARCHAR,
    scheduled_at TIMESTAMP,
    started_at TIMESTAMP,
    creation_timestamp TIMESTAMP,
    finished_at TIMESTAMP,
    deletion_timestamp TIMESTAMP,
    present BOOLEAN NOT NULL,
    first_seen_at TIMESTAMP NOT NULL,
    changed_at TIMESTAMP NOT NULL,
    gone_at TIMESTAMP,
    gone_how VARCHAR
);

COMMENT ON TABLE core.watched_dra_pods IS
    'Pods that name ResourceClaims (spec.resourceClaims), as annex watch last saw them, one row per pod: what a dra row of core.watched_gpu_allocations takes from its pod (node, timestamps, end), kept because a pod''s claims may be committed after the pod.';
COMMENT ON COLUMN core.watched_dra_pods.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN core.watched_dra_pods.pod_uid IS 'metadata.uid of the pod.';
COMMENT ON COLUMN core.watched_dra_pods.namespace IS 'Namespace of the pod.';
COMMENT ON COLUMN core.watched_dra_pods.pod_name IS 'Name of the pod.';
COMMENT ON COLUMN core.watched_dra_pods.job_name IS 'The batch/v1 Job of the pod, if any.';
COMMENT ON COLUMN core.watched_dra_pods.node_name IS 'spec.nodeName: the node the pod is bound to; NULL while unscheduled.';
COMMENT ON COLUMN core.watched_dra_pods.category IS 'workload or balloon (placeholder pods reserving capacity).';
COMMENT ON COLUMN core.watched_dra_pods.priority_class_name IS 'spec.priorityClassName of the pod.';
COMMENT ON COLUMN core.watched_dra_pods.phase IS 'status.phase of the last state seen.';
COMMENT ON COLUMN core.watched_dra_pods.scheduled_at IS 'The PodScheduled condition''s lastTransitionTime (UTC).';
COMMENT ON COLUMN core.watched_dra_pods.started_at IS 'status.startTime (UTC).';
COMMENT ON COLUMN core.watched_dra_pods.creation_timestamp IS 'metadata.creationTimestamp (UTC).';
COMMENT ON COLUMN core.watched_dra_pods.finished_at IS 'The latest finishedAt of its terminated containers once the pod ended (UTC).';
COMMENT ON COLUMN core.watched_dra_pods.deletion_timestamp IS 'metadata.deletionTimestamp of the last state seen (UTC).';
COMMENT ON COLUMN core.watched_dra_pods.present IS 'False once the pod is gone (a DELETED event, or absence from a relist).';
COMMENT ON COLUMN core.watched_dra_pods.first_seen_at IS 'When annex first received the pod (UTC).';
COMMENT ON COLUMN core.watched_dra_pods.changed_at IS 'When annex received its last change (UTC).';
COMMENT ON COLUMN core.watched_dra_pods.gone_at IS 'When annex learnt it was gone (UTC); NULL while present.';
COMMENT ON COLUMN core.watched_dra_pods.gone_how IS 'deleted (a DELETED event) or relisted (absent from a list after a 410); NULL while present.';

COMMENT ON TABLE core.watched_objects IS
    'Every object annex watch has seen (pods, nodes, jobs, events, and ResourceSlices, ResourceClaims and Kueue''s objects where the API server serves them), one row per object: its last state''s identity and whether it still exists (a DELETED event, or absence from a relist).';
COMMENT ON COLUMN core.watched_objects.resource IS
    'pods, nodes, jobs, events, resource_slices, resource_claims, kueue_workloads, kueue_cluster_queues, kueue_local_queues or kueue_resource_flavors.';
COMMENT ON COLUMN core.watch_cursors.resource IS
    'Resource watched: pods, nodes, jobs, events, and resource_slices, resource_claims (DRA) and the kueue_* resources where the API server serves them.';
COMMENT ON COLUMN audit.kubernetes_requests.resource IS
    'pods, nodes, jobs, events, resource_slices, resource_claims or a kueue_* resource.';

-- The best record of each holding: the watch's where it has the same pod, resource, mechanism
-- and claim, else the snapshot's.
CREATE OR REPLACE VIEW core.gpu_allocation_history AS
SELECT cluster, pod_uid, namespace, pod_name, job_name, node_name, resource_name,
       gpus, category, priority_class_name, valid_from, valid_from_source, valid_to,
       valid_to_source, valid_to_inferred, 'watch' AS recorded_by, mechanism
FROM core.watched_gpu_allocations
UNION ALL
SELECT a.cluster, a.pod_uid, a.namespace, a.pod_name, a.job_name, a.node_name, a.resource_name,
       a.gpus, a.category, a.priority_class_name, a.valid_from, a.valid_from_source, a.valid_to,
       a.valid_to_source, a.valid_to_inferred, 'snapshot' AS recorded_by, a.mechanism
FROM core.gpu_allocations AS a
WHERE NOT EXISTS (
    SELECT 1 FROM core.watched_gpu_allocations AS w
    WHERE w.cluster = a.cluster AND w.pod_uid = a.pod_uid AND w.resource_name = a.resource_name
      AND w.mechanism = a.mechanism AND w.claim_uid IS NOT DISTINCT FROM a.claim_uid
);

COMMENT ON VIEW core.gpu_allocation_history IS
    'GPU holdings as intervals, the best record of each: from the watch (core.watched_gpu_allocations: exact times, pods that lived between two snapshots included) where annex watch saw the holding (same pod, resource, mechanism and claim), else from the hourly snapshots (core.gpu_allocations). Utilisation, training compute and attestation coverage count GPU-hours from here.';
COMMENT ON COLUMN core.gpu_allocation_history.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN core.gpu_allocation_history.pod_uid IS 'metadata.uid of the pod holding the GPUs.';
COMMENT ON COLUMN core.gpu_allocation_history.namespace IS 'Namespace of the pod.';
COMMENT ON COLUMN core.gpu_allocation_history.pod_name IS 'Name of the pod.';
COMMENT ON COLUMN core.gpu_allocation_history.job_name IS 'The batch/v1 Job of the pod, if any.';
COMMENT ON COLUMN core.gpu_allocation_history.node_name IS 'The node the GPUs are on.';
COMMENT ON COLUMN core.gpu_allocation_history.resource_name IS 'nvidia.com/gpu or a MIG nvidia.com/mig-<profile> (slices; never add them to whole GPUs).';
COMMENT ON COLUMN core.gpu_allocation_history.gpus IS 'Effective request of the resource (GPUs, or MIG slices); for a dra row the claim''s devices / the pods it is reserved for.';
COMMENT ON COLUMN core.gpu_allocation_history.category IS 'workload or balloon (placeholder pods reserving capacity).';
COMMENT ON COLUMN core.gpu_allocation_history.priority_class_name IS 'spec.priorityClassName of the pod.';
COMMENT ON COLUMN core.gpu_allocation_history.valid_from IS 'Start of the holding (UTC), from the pod''s own timestamps (see valid_from_source).';
COMMENT ON COLUMN core.gpu_allocation_history.valid_from_source IS 'Which timestamp valid_from is: scheduled, started, created or observed.';
COMMENT ON COLUMN core.gpu_allocation_history.valid_to IS 'End of the holding (UTC); NULL while the pod holds the GPUs.';
COMMENT ON COLUMN core.gpu_allocation_history.valid_to_source IS 'Which timestamp valid_to is (finished, deleted, observed, relisted, claim_deleted, claim_released, or the snapshot''s collection time when inferred).';
COMMENT ON COLUMN core.gpu_allocation_history.valid_to_inferred IS 'True when valid_to is not a timestamp the pod or claim carried: the holding ended at or before it.';
COMMENT ON COLUMN core.gpu_allocation_history.recorded_by IS 'watch (annex watch: exact and complete) or snapshot (the hourly collection: pods that lived between two snapshots are missing).';
COMMENT ON COLUMN core.gpu_allocation_history.mechanism IS 'device_plugin or dra (how the pod holds the GPUs).';

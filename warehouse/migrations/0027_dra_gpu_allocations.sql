-- 0027 GPU holdings through DRA claims (issue 38 item 2, second part).
--   core.gpu_allocations.mechanism: device_plugin (a container's resources) or dra (the devices
--     allocated to a ResourceClaim the pod uses); existing rows are device_plugin.
--   core.gpu_allocations.claim_uid: the claim of a dra row (a pod may hold several claims).
--   core.gpu_allocations.gpus becomes DOUBLE: a claim reserved for k pods gives each holder
--     1/k of each allocated device, so GPU-hours of a shared claim are counted once.
--     Device-plugin rows keep whole numbers.
ALTER TABLE core.gpu_allocations ADD COLUMN mechanism VARCHAR DEFAULT 'device_plugin';
UPDATE core.gpu_allocations SET mechanism = 'device_plugin' WHERE mechanism IS NULL;
ALTER TABLE core.gpu_allocations ADD COLUMN claim_uid VARCHAR;
ALTER TABLE core.gpu_allocations ALTER COLUMN gpus TYPE DOUBLE;

COMMENT ON TABLE core.gpu_allocations IS
    'GPU holdings as intervals: one row per pod and GPU-like resource it requested while bound to a node (mechanism device_plugin), or per pod, ResourceClaim and resource of the GPU or MIG devices allocated to the claim (mechanism dra), from its scheduling to its end. A pod absent from a consistent snapshot is closed at the collection time (valid_to_inferred); inconsistent snapshots never close anything. Open rows (valid_to IS NULL) are the current allocations.';
COMMENT ON COLUMN core.gpu_allocations.gpus IS
    'Effective request of the resource (PodRequests rule): GPUs, or MIG slices for MIG resources. For a dra row: the claim''s allocated devices of that resource divided by the pods the claim is reserved for (a claim shared by k pods gives each 1/k: GPU-hours counted once).';
COMMENT ON COLUMN core.gpu_allocations.resource_name IS
    'GPU-like resource: nvidia.com/gpu (whole GPUs) or a MIG nvidia.com/mig-<profile> (slices; never add them to whole GPUs). A DRA GPU device counts as nvidia.com/gpu, a DRA MIG device as nvidia.com/mig-<its profile>; IMEX channels and daemons (ComputeDomains) are not GPUs and make no row.';
COMMENT ON COLUMN core.gpu_allocations.mechanism IS
    'How the pod holds the GPUs: device_plugin (extended resource in the pod''s containers) or dra (devices allocated to a ResourceClaim reserved for the pod).';
COMMENT ON COLUMN core.gpu_allocations.claim_uid IS
    'metadata.uid of the ResourceClaim (core.dra_claims) for a dra row; NULL for device_plugin rows.';

-- core.gpu_allocation_history: the watch records device-plugin requests only, so a watched
-- pod's snapshot rows are dropped only for device_plugin; its DRA rows always come from the
-- snapshots. The mechanism column is added (watch rows are device_plugin).
CREATE OR REPLACE VIEW core.gpu_allocation_history AS
SELECT cluster, pod_uid, namespace, pod_name, job_name, node_name, resource_name,
       CAST(gpus AS DOUBLE) AS gpus,
       category, priority_class_name, valid_from, valid_from_source, valid_to, valid_to_source,
       valid_to_inferred, 'watch' AS recorded_by, 'device_plugin' AS mechanism
FROM core.watched_gpu_allocations
UNION ALL
SELECT a.cluster, a.pod_uid, a.namespace, a.pod_name, a.job_name, a.node_name, a.resource_name,
       a.gpus, a.category, a.priority_class_name, a.valid_from, a.valid_from_source, a.valid_to,
       a.valid_to_source, a.valid_to_inferred, 'snapshot' AS recorded_by, a.mechanism
FROM core.gpu_allocations AS a
WHERE a.mechanism = 'dra' OR NOT EXISTS (
    SELECT 1 FROM core.watched_gpu_allocations AS w
    WHERE w.cluster = a.cluster AND w.pod_uid = a.pod_uid AND w.resource_name = a.resource_name
);

COMMENT ON VIEW core.gpu_allocation_history IS
    'GPU holdings as intervals, the best record of each: from the watch (core.watched_gpu_allocations: exact times, pods that lived between two snapshots included) where annex watch saw the pod, else from the hourly snapshots (core.gpu_allocations). Utilisation, training compute and attestation coverage count GPU-hours from here.';
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
COMMENT ON COLUMN core.gpu_allocation_history.valid_to_source IS 'Which timestamp valid_to is (finished, deleted, observed, relisted, or the snapshot''s collection time when inferred).';
COMMENT ON COLUMN core.gpu_allocation_history.valid_to_inferred IS 'True when valid_to is not a timestamp the pod carried: the holding ended at or before it.';
COMMENT ON COLUMN core.gpu_allocation_history.recorded_by IS 'watch (annex watch: exact and complete) or snapshot (the hourly collection: pods that lived between two snapshots are missing).';
COMMENT ON COLUMN core.gpu_allocation_history.mechanism IS 'device_plugin or dra (core.gpu_allocations.mechanism); the watch records device-plugin requests only.';

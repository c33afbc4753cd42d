-- marts.watched_gpu_allocations: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.watched_gpu_allocations AS
SELECT
    cluster, pod_uid, namespace, pod_name, job_name, node_name, resource_name, gpus, category,
    priority_class_name, valid_from, valid_from_source, valid_to, valid_to_source,
    valid_to_inferred,
    CAST(gpus * date_diff('second', valid_from, valid_to) AS BIGINT) AS gpu_seconds,
    CAST(gpus * date_diff('second', valid_from, valid_to) AS DOUBLE) / 3600.0 AS gpu_hours,
    mechanism, claim_uid
FROM core.watched_gpu_allocations;

COMMENT ON VIEW marts.watched_gpu_allocations IS
    'GPU holdings from the watch (core.watched_gpu_allocations) with their GPU-seconds: the exact allocation history, short jobs included, for utilisation and training-compute figures. Open holdings have NULL gpu_seconds.';
COMMENT ON COLUMN marts.watched_gpu_allocations.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.watched_gpu_allocations.pod_uid IS
    'metadata.uid of the pod.';
COMMENT ON COLUMN marts.watched_gpu_allocations.namespace IS
    'Namespace of the pod.';
COMMENT ON COLUMN marts.watched_gpu_allocations.pod_name IS
    'Name of the pod.';
COMMENT ON COLUMN marts.watched_gpu_allocations.job_name IS
    'The batch/v1 Job of the pod, if any.';
COMMENT ON COLUMN marts.watched_gpu_allocations.node_name IS
    'The node the GPUs are on.';
COMMENT ON COLUMN marts.watched_gpu_allocations.resource_name IS
    'nvidia.com/gpu (whole GPUs) or a MIG resource (slices; never add them to whole GPUs).';
COMMENT ON COLUMN marts.watched_gpu_allocations.gpus IS
    'GPUs (or MIG slices) held; for a dra row the claim''s devices / the pods it is reserved for (a shared claim''s GPU-hours counted once).';
COMMENT ON COLUMN marts.watched_gpu_allocations.category IS
    'workload or balloon.';
COMMENT ON COLUMN marts.watched_gpu_allocations.priority_class_name IS
    'spec.priorityClassName.';
COMMENT ON COLUMN marts.watched_gpu_allocations.valid_from IS
    'Start of the holding (UTC).';
COMMENT ON COLUMN marts.watched_gpu_allocations.valid_from_source IS
    'scheduled, started, created or observed.';
COMMENT ON COLUMN marts.watched_gpu_allocations.valid_to IS
    'End of the holding (UTC); NULL while held.';
COMMENT ON COLUMN marts.watched_gpu_allocations.valid_to_source IS
    'finished, deleted, observed, relisted, claim_deleted or claim_released (see core.watched_gpu_allocations).';
COMMENT ON COLUMN marts.watched_gpu_allocations.valid_to_inferred IS
    'True when valid_to is not a timestamp the pod carried.';
COMMENT ON COLUMN marts.watched_gpu_allocations.gpu_seconds IS
    'gpus x whole seconds from valid_from to valid_to (the API''s timestamps have second precision); NULL while held.';
COMMENT ON COLUMN marts.watched_gpu_allocations.gpu_hours IS
    'gpu_seconds / 3600.';
COMMENT ON COLUMN marts.watched_gpu_allocations.mechanism IS
    'How the pod holds the GPUs: device_plugin (extended resource in its containers) or dra (devices allocated to a ResourceClaim reserved for it).';
COMMENT ON COLUMN marts.watched_gpu_allocations.claim_uid IS
    'metadata.uid of the ResourceClaim for a dra row; NULL for device_plugin rows.';

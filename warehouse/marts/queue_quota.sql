-- marts.queue_quota: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.queue_quota AS
WITH quotas AS (
    SELECT cluster, cluster_queue, cohort, pending_workloads, admitted_workloads, changed_at,
           unnest(quotas) AS q
    FROM core.kueue_cluster_queues
    WHERE present
)
SELECT
    cluster,
    cluster_queue,
    cohort,
    q.flavor AS flavor,
    q.resource_name AS resource_name,
    CAST(q.nominal_quota AS BIGINT) AS nominal_gpus,
    CAST(q.borrowing_limit AS BIGINT) AS borrowing_limit_gpus,
    CAST(q.lending_limit AS BIGINT) AS lending_limit_gpus,
    CAST(coalesce(q.used, 0) AS BIGINT) AS used_gpus,
    -- Kueue reports what it borrowed; an older status without the field: usage above nominal.
    CAST(coalesce(q.borrowed, greatest(coalesce(q.used, 0) - q.nominal_quota, 0)) AS BIGINT)
        AS borrowed_gpus,
    CAST(greatest(q.nominal_quota - coalesce(q.used, 0), 0) AS BIGINT) AS unused_nominal_gpus,
    pending_workloads,
    admitted_workloads,
    changed_at
FROM quotas
WHERE q.is_gpu;

COMMENT ON VIEW marts.queue_quota IS
    'Per Kueue ClusterQueue, ResourceFlavor and GPU-like resource (current state, from core.kueue_cluster_queues; earlier versions in raw.kubernetes_kueue_cluster_queues): nominal quota, borrowing and lending limits, GPUs in use and GPUs borrowed from the cohort above the nominal quota. MIG resources are slices, never add them to whole GPUs.';
COMMENT ON COLUMN marts.queue_quota.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.queue_quota.cluster_queue IS
    'The ClusterQueue (metadata.name).';
COMMENT ON COLUMN marts.queue_quota.cohort IS
    'spec.cohort: the queues that lend each other unused quota.';
COMMENT ON COLUMN marts.queue_quota.flavor IS
    'The ResourceFlavor (core.kueue_resource_flavors: which nodes it stands for).';
COMMENT ON COLUMN marts.queue_quota.resource_name IS
    'GPU-like resource: nvidia.com/gpu, a MIG nvidia.com/mig-<profile> (slices), amd.com/gpu, gpu.intel.com/*.';
COMMENT ON COLUMN marts.queue_quota.nominal_gpus IS
    'nominalQuota: the GPUs the queue is guaranteed.';
COMMENT ON COLUMN marts.queue_quota.borrowing_limit_gpus IS
    'borrowingLimit: how many GPUs above nominal it may borrow from its cohort; NULL: no limit (the cohort''s unused quota).';
COMMENT ON COLUMN marts.queue_quota.lending_limit_gpus IS
    'lendingLimit: how many of its unused GPUs the cohort may borrow; NULL: all of them.';
COMMENT ON COLUMN marts.queue_quota.used_gpus IS
    'status.flavorsUsage total: GPUs held by its admitted workloads.';
COMMENT ON COLUMN marts.queue_quota.borrowed_gpus IS
    'status.flavorsUsage borrowed: GPUs in use above the nominal quota, lent by the cohort (where status lacks it: used above nominal).';
COMMENT ON COLUMN marts.queue_quota.unused_nominal_gpus IS
    'Nominal GPUs it does not use (what the cohort may borrow, within lending_limit_gpus).';
COMMENT ON COLUMN marts.queue_quota.pending_workloads IS
    'status.pendingWorkloads of the queue (all flavors).';
COMMENT ON COLUMN marts.queue_quota.admitted_workloads IS
    'status.admittedWorkloads of the queue (all flavors).';
COMMENT ON COLUMN marts.queue_quota.changed_at IS
    'When annex collected this version of the queue''s quota and status (UTC).';

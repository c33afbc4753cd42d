-- marts.fleet_gpu_by_namespace: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.fleet_gpu_by_namespace AS
SELECT
    cluster,
    namespace,
    count(*) FILTER (WHERE counted) AS pods_counted,
    count(*) FILTER (WHERE counted AND len(gpu_requests) > 0) AS gpu_pods_counted,
    count(*) FILTER (WHERE counted AND is_balloon) AS balloon_pods,
    coalesce(CAST(sum(gpus) FILTER (WHERE counted AND category = 'workload') AS BIGINT), 0)
        AS allocated_workload_gpus,
    coalesce(CAST(sum(gpus) FILTER (WHERE counted AND category = 'balloon') AS BIGINT), 0)
        AS allocated_balloon_gpus,
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
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.namespace IS
    'Kubernetes namespace.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.pods_counted IS
    'Pods holding their requests now (bound, not Succeeded/Failed).';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.gpu_pods_counted IS
    'Of those, pods requesting any GPU-like resource.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.balloon_pods IS
    'Counted balloon (placeholder) pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.allocated_workload_gpus IS
    'nvidia.com/gpu held by counted workload pods (on MIG-single nodes these are slices).';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.allocated_balloon_gpus IS
    'nvidia.com/gpu held by counted balloon pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.mig_slices_allocated IS
    'MIG slices (nvidia.com/mig-* resources, all profiles) held by counted pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.queued_pods IS
    'Pods waiting to be scheduled (Pending, not bound).';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.queued_gpu_pods IS
    'Of those, pods requesting any GPU-like resource.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.queued_gpus IS
    'nvidia.com/gpu requested by queued pods: pending demand.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.queued_mig_slices IS
    'MIG slices requested by queued pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.nominated_pods IS
    'Unbound pods nominated for a node (waiting for a preemption); they hold nothing yet.';

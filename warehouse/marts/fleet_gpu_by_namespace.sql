-- marts.fleet_gpu_by_namespace: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.fleet_gpu_by_namespace AS
WITH node_shares AS (
    -- shared GPUs as marts.node_gpu_capacity counts them (marts.gpu_held): a time-sliced or
    -- MPS replica is 1/shares of a GPU, a HAMi request nvidia.com/gpucores percent of it
    SELECT cluster, node_name, shares, sharing_strategy
    FROM marts.node_gpu_capacity
    WHERE resource_name = 'nvidia.com/gpu'
),
dra AS (
    -- GPUs held through DRA claims (no container requests them): core.gpu_allocations
    SELECT cluster, pod_uid,
           sum(gpus) FILTER (WHERE resource_name = 'nvidia.com/gpu') AS dra_gpus,
           sum(gpus) FILTER (WHERE starts_with(resource_name, 'nvidia.com/mig-')) AS dra_mig_slices
    FROM core.gpu_allocations
    WHERE valid_to IS NULL AND mechanism = 'dra'
    GROUP BY cluster, pod_uid
),
pods AS (
    SELECT
        p.*,
        marts.gpu_held(p.gpus, s.shares, s.sharing_strategy, list_filter(
            p.gpu_requests, lambda x: x.resource_name = 'nvidia.com/gpucores')[1].gpus)
            + coalesce(d.dra_gpus, 0) AS held_gpus,
        coalesce(d.dra_mig_slices, 0) AS held_dra_mig_slices,
        d.pod_uid IS NOT NULL AS holds_dra
    FROM core.pods AS p
    LEFT JOIN node_shares AS s ON s.cluster = p.cluster AND s.node_name = p.node_name
    LEFT JOIN dra AS d ON d.cluster = p.cluster AND d.pod_uid = p.pod_uid
    WHERE p.present
),
pending AS (
    -- device-plugin requests plus GPUs of unallocated DRA claims (marts.pending_gpu_demand)
    SELECT
        cluster, namespace,
        count(*) FILTER (WHERE len(gpu_requests) > 0 OR dra_gpus > 0 OR dra_mig_slices > 0
                         OR dra_all_requests > 0) AS queued_gpu_pods,
        CAST(round(sum(pending_gpus)) AS BIGINT) AS queued_gpus,
        CAST(round(sum(dra_gpus)) AS BIGINT) AS queued_dra_gpus,
        CAST(round(sum(device_plugin_mig_slices + dra_mig_slices)) AS BIGINT) AS queued_mig_slices,
        CAST(sum(dra_all_requests) AS BIGINT) AS queued_dra_all_requests
    FROM marts.pending_gpu_demand
    JOIN core.pods USING (cluster, pod_uid, namespace)
    GROUP BY cluster, namespace
),
summed AS (
SELECT
    cluster,
    namespace,
    count(*) FILTER (WHERE counted) AS pods_counted,
    count(*) FILTER (WHERE counted AND (len(gpu_requests) > 0 OR holds_dra)) AS gpu_pods_counted,
    count(*) FILTER (WHERE counted AND is_balloon) AS balloon_pods,
    coalesce(CAST(sum(held_gpus) FILTER (WHERE counted AND category = 'workload') AS BIGINT), 0)
        AS allocated_workload_gpus,
    coalesce(CAST(sum(held_gpus) FILTER (WHERE counted AND category = 'balloon') AS BIGINT), 0)
        AS allocated_balloon_gpus,
    coalesce(CAST(sum(coalesce(list_sum(list_transform(
        list_filter(gpu_requests, lambda x: starts_with(x.resource_name, 'nvidia.com/mig-')),
        lambda x: x.gpus)), 0) + held_dra_mig_slices) FILTER (WHERE counted) AS BIGINT), 0)
        AS mig_slices_allocated,
    count(*) FILTER (WHERE queued) AS queued_pods,
    count(*) FILTER (WHERE node_name IS NULL AND nominated_node_name IS NOT NULL)
        AS nominated_pods
FROM pods
GROUP BY cluster, namespace
)
SELECT
    s.* EXCLUDE (nominated_pods),
    coalesce(q.queued_gpu_pods, 0) AS queued_gpu_pods,
    coalesce(q.queued_gpus, 0) AS queued_gpus,
    coalesce(q.queued_mig_slices, 0) AS queued_mig_slices,
    s.nominated_pods,
    coalesce(q.queued_dra_gpus, 0) AS queued_dra_gpus,
    coalesce(q.queued_dra_all_requests, 0) AS queued_dra_all_requests
FROM summed AS s
LEFT JOIN pending AS q USING (cluster, namespace);

COMMENT ON VIEW marts.fleet_gpu_by_namespace IS
    'Per cluster and namespace: GPUs held now (workload vs balloon) and the queued demand, from the pods present in the latest snapshot. Whole GPUs are nvidia.com/gpu requests (a time-sliced or MPS replica as 1/replicas of a GPU, a HAMi request as gpucores percent) plus GPU devices of DRA claims (core.gpu_allocations, mechanism dra); MIG slices are counted separately.';
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
    'Physical GPUs held by counted workload pods, rounded: nvidia.com/gpu requests (a shared GPU''s replica 1/replicas, a HAMi request gpucores/100; on MIG-single nodes these are slices) plus GPU devices of their DRA claims (1/k of a claim shared by k pods).';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.allocated_balloon_gpus IS
    'Physical GPUs held by counted balloon pods (as allocated_workload_gpus).';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.mig_slices_allocated IS
    'MIG slices (nvidia.com/mig-* resources, all profiles, and MIG devices of DRA claims) held by counted pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.queued_pods IS
    'Pods waiting to be scheduled (Pending, not bound).';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.queued_gpu_pods IS
    'Of those, pods requesting any GPU-like resource, through their containers or DRA claims.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.queued_gpus IS
    'Whole GPUs queued pods ask for: nvidia.com/gpu requests plus GPUs of their unallocated DRA claims (marts.pending_gpu_demand; a claim shared by pending pods counted once): pending demand.';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.queued_mig_slices IS
    'MIG slices requested by queued pods (nvidia.com/mig-* requests and MIG devices of their DRA claims).';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.queued_dra_gpus IS
    'Of queued_gpus, those asked for through DRA claims or claim templates (class gpu.nvidia.com).';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.queued_dra_all_requests IS
    'DRA GPU requests of queued pods with allocationMode All (every matching device: a count unknown until allocated, in no GPU figure).';
COMMENT ON COLUMN marts.fleet_gpu_by_namespace.nominated_pods IS
    'Unbound pods nominated for a node (waiting for a preemption); they hold nothing yet.';

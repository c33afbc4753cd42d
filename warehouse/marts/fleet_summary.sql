-- marts.fleet_summary: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.fleet_summary AS
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
        count(*) FILTER (WHERE unschedulable) AS cordoned_nodes
    FROM core.nodes
    WHERE valid_to IS NULL
    GROUP BY cluster
),
gpus AS (
    SELECT
        cluster,
        -- a DRA-only node advertises no GPU resource: its ResourceSlices' GPUs count it
        count(DISTINCT node_uid) AS gpu_nodes,
        CAST(sum(capacity_gpus) FILTER (WHERE whole_gpus) AS BIGINT) AS capacity_gpus,
        CAST(sum(allocatable_gpus) FILTER (WHERE whole_gpus) AS BIGINT) AS allocatable_gpus,
        CAST(sum(allocated_workload_gpus) FILTER (WHERE whole_gpus) AS BIGINT)
            AS allocated_workload_gpus,
        CAST(sum(allocated_balloon_gpus) FILTER (WHERE whole_gpus) AS BIGINT) AS allocated_balloon_gpus,
        CAST(sum(free_gpus) FILTER (WHERE whole_gpus) AS BIGINT) AS free_gpus,
        CAST(sum(unavailable_gpus) FILTER (WHERE whole_gpus) AS BIGINT) AS unavailable_gpus,
        CAST(sum(capacity_gpus) FILTER (WHERE NOT whole_gpus) AS BIGINT) AS mig_slices_capacity,
        CAST(sum(allocated_workload_gpus + allocated_balloon_gpus) FILTER (WHERE NOT whole_gpus)
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
        count(*) FILTER (WHERE queued) AS queued_pods
    FROM core.pods
    WHERE present
    GROUP BY cluster
),
pending AS (
    -- device-plugin requests plus GPUs of unallocated DRA claims (marts.pending_gpu_demand)
    SELECT
        cluster,
        CAST(round(sum(pending_gpus)) AS BIGINT) AS queued_gpus,
        CAST(round(sum(dra_gpus)) AS BIGINT) AS queued_dra_gpus,
        CAST(sum(dra_all_requests) AS BIGINT) AS queued_dra_all_requests
    FROM marts.pending_gpu_demand
    GROUP BY cluster
)
SELECT
    l.cluster,
    coalesce(n.nodes, 0) AS nodes,
    coalesce(n.ready_nodes, 0) AS ready_nodes,
    coalesce(n.schedulable_nodes, 0) AS schedulable_nodes,
    coalesce(n.cordoned_nodes, 0) AS cordoned_nodes,
    coalesce(g.gpu_nodes, 0) AS gpu_nodes,
    coalesce(g.capacity_gpus, 0) AS capacity_gpus,
    coalesce(g.allocatable_gpus, 0) AS allocatable_gpus,
    coalesce(g.allocated_workload_gpus, 0) AS allocated_workload_gpus,
    coalesce(g.allocated_balloon_gpus, 0) AS allocated_balloon_gpus,
    coalesce(g.free_gpus, 0) AS free_gpus,
    coalesce(g.unavailable_gpus, 0) AS unavailable_gpus,
    coalesce(g.mig_slices_capacity, 0) AS mig_slices_capacity,
    coalesce(g.mig_slices_allocated, 0) AS mig_slices_allocated,
    coalesce(p.pods, 0) AS pods,
    coalesce(p.pods_counted, 0) AS pods_counted,
    coalesce(p.gpu_pods_counted, 0) AS gpu_pods_counted,
    coalesce(p.balloon_pods, 0) AS balloon_pods,
    coalesce(p.queued_pods, 0) AS queued_pods,
    coalesce(q.queued_gpus, 0) AS queued_gpus,
    coalesce(q.queued_dra_gpus, 0) AS queued_dra_gpus,
    coalesce(q.queued_dra_all_requests, 0) AS queued_dra_all_requests,
    l.collection_id AS last_collection_id,
    l.started_at AS last_collected_at,
    coalesce(s.consistent, false) AS snapshot_consistent
FROM last_collection AS l
LEFT JOIN nodes AS n USING (cluster)
LEFT JOIN gpus AS g USING (cluster)
LEFT JOIN pods AS p USING (cluster)
LEFT JOIN pending AS q USING (cluster)
LEFT JOIN snapshot AS s USING (cluster);

COMMENT ON VIEW marts.fleet_summary IS
    'One row per cluster with a successful Kubernetes collection: nodes, whole GPUs by bucket (capacity_gpus = allocated_workload_gpus + allocated_balloon_gpus + free_gpus + unavailable_gpus), MIG slices apart, pods, queued demand, and the latest collection with whether its snapshot was consistent.';
COMMENT ON COLUMN marts.fleet_summary.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.fleet_summary.nodes IS
    'Current nodes.';
COMMENT ON COLUMN marts.fleet_summary.ready_nodes IS
    'Nodes whose Ready condition is True.';
COMMENT ON COLUMN marts.fleet_summary.schedulable_nodes IS
    'Ready and not cordoned.';
COMMENT ON COLUMN marts.fleet_summary.cordoned_nodes IS
    'Nodes with spec.unschedulable.';
COMMENT ON COLUMN marts.fleet_summary.gpu_nodes IS
    'Nodes with any GPU-like resource in their capacity, or GPU devices in their ResourceSlices (DRA) (marts.node_gpu_capacity).';
COMMENT ON COLUMN marts.fleet_summary.capacity_gpus IS
    'Whole GPUs (nvidia.com/gpu, MIG-single nodes excluded) in node capacity.';
COMMENT ON COLUMN marts.fleet_summary.allocatable_gpus IS
    'Whole GPUs allocatable.';
COMMENT ON COLUMN marts.fleet_summary.allocated_workload_gpus IS
    'Whole GPUs held by workload pods.';
COMMENT ON COLUMN marts.fleet_summary.allocated_balloon_gpus IS
    'Whole GPUs held by balloon (placeholder) pods.';
COMMENT ON COLUMN marts.fleet_summary.free_gpus IS
    'Whole GPUs free on Ready, uncordoned nodes.';
COMMENT ON COLUMN marts.fleet_summary.unavailable_gpus IS
    'Whole GPUs unhealthy, or unallocated on NotReady or cordoned nodes.';
COMMENT ON COLUMN marts.fleet_summary.mig_slices_capacity IS
    'MIG slices in node capacity (mixed-strategy profiles and single-strategy nvidia.com/gpu).';
COMMENT ON COLUMN marts.fleet_summary.mig_slices_allocated IS
    'MIG slices held by pods.';
COMMENT ON COLUMN marts.fleet_summary.pods IS
    'Pods present in the latest snapshot.';
COMMENT ON COLUMN marts.fleet_summary.pods_counted IS
    'Pods holding their requests (bound, not Succeeded/Failed).';
COMMENT ON COLUMN marts.fleet_summary.gpu_pods_counted IS
    'Counted pods requesting any GPU-like resource.';
COMMENT ON COLUMN marts.fleet_summary.balloon_pods IS
    'Counted balloon (placeholder) pods.';
COMMENT ON COLUMN marts.fleet_summary.queued_pods IS
    'Pods waiting to be scheduled (Pending, not bound).';
COMMENT ON COLUMN marts.fleet_summary.queued_gpus IS
    'Whole GPUs queued pods ask for: nvidia.com/gpu requests plus GPUs of their unallocated DRA claims (marts.pending_gpu_demand; a claim shared by pending pods counted once), rounded.';
COMMENT ON COLUMN marts.fleet_summary.queued_dra_gpus IS
    'Of queued_gpus, those asked for through DRA claims or claim templates (class gpu.nvidia.com).';
COMMENT ON COLUMN marts.fleet_summary.queued_dra_all_requests IS
    'DRA GPU requests of queued pods with allocationMode All (every matching device: a count unknown until allocated, in no GPU figure).';
COMMENT ON COLUMN marts.fleet_summary.last_collection_id IS
    'The latest successful Kubernetes collection of the cluster (audit.collections).';
COMMENT ON COLUMN marts.fleet_summary.last_collected_at IS
    'When it started (UTC): the time the figures describe.';
COMMENT ON COLUMN marts.fleet_summary.snapshot_consistent IS
    'Whether every list of that collection was a consistent snapshot (audit.kubernetes_lists).';

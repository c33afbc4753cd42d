-- marts.fleet_gpu_by_pool: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.fleet_gpu_by_pool AS
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
COMMENT ON COLUMN marts.fleet_gpu_by_pool.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.pool IS
    'Node pool (core.nodes.pool), unknown when the node carries no pool label.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.resource_name IS
    'nvidia.com/gpu or a MIG nvidia.com/mig-<profile>.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.whole_gpus IS
    'True when the row counts whole GPUs (see marts.node_gpu_capacity.whole_gpus).';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.nodes IS
    'Current nodes of the pool offering the resource.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.schedulable_nodes IS
    'Of those, Ready and uncordoned.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.capacity IS
    'Sum of capacity.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.allocatable IS
    'Sum of allocatable.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.allocated_workload IS
    'Held by workload pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.allocated_balloon IS
    'Held by balloon (placeholder) pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.free IS
    'Free on Ready, uncordoned nodes.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.unavailable IS
    'Unhealthy devices and the unallocated capacity of NotReady or cordoned nodes.';

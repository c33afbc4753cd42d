-- marts.fleet_gpu_by_pool: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.fleet_gpu_by_pool AS
SELECT
    cluster,
    coalesce(node_pool, 'unknown') AS node_pool,
    resource_name,
    bool_and(whole_gpus) AS whole_gpus,
    count(*) AS nodes,
    count(*) FILTER (WHERE schedulable) AS schedulable_nodes,
    CAST(sum(capacity_gpus) AS BIGINT) AS capacity_gpus,
    CAST(sum(allocatable_gpus) AS BIGINT) AS allocatable_gpus,
    CAST(sum(allocated_workload_gpus) AS BIGINT) AS allocated_workload_gpus,
    CAST(sum(allocated_balloon_gpus) AS BIGINT) AS allocated_balloon_gpus,
    CAST(sum(free_gpus) AS BIGINT) AS free_gpus,
    CAST(sum(unavailable_gpus) AS BIGINT) AS unavailable_gpus
FROM marts.node_gpu_capacity
GROUP BY cluster, coalesce(node_pool, 'unknown'), resource_name, whole_gpus;

COMMENT ON VIEW marts.fleet_gpu_by_pool IS
    'GPU capacity buckets per cluster, node pool and resource. capacity_gpus = allocated_workload_gpus + allocated_balloon_gpus + free_gpus + unavailable_gpus.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.node_pool IS
    'Node pool (core.nodes.node_pool), unknown when the node carries no pool label.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.resource_name IS
    'nvidia.com/gpu or a MIG nvidia.com/mig-<profile>.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.whole_gpus IS
    'True when the row counts whole GPUs (see marts.node_gpu_capacity.whole_gpus).';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.nodes IS
    'Current nodes of the pool offering the resource.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.schedulable_nodes IS
    'Of those, Ready and uncordoned.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.capacity_gpus IS
    'Sum of capacity.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.allocatable_gpus IS
    'Sum of allocatable.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.allocated_workload_gpus IS
    'Held by workload pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.allocated_balloon_gpus IS
    'Held by balloon (placeholder) pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.free_gpus IS
    'Free on Ready, uncordoned nodes.';
COMMENT ON COLUMN marts.fleet_gpu_by_pool.unavailable_gpus IS
    'Unhealthy devices and the unallocated capacity of NotReady or cordoned nodes.';

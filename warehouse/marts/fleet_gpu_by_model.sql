-- marts.fleet_gpu_by_model: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.fleet_gpu_by_model AS
SELECT
    cluster,
    coalesce(gpu_product, 'unknown') AS gpu_product,
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
GROUP BY cluster, coalesce(gpu_product, 'unknown'), resource_name, whole_gpus;

COMMENT ON VIEW marts.fleet_gpu_by_model IS
    'GPU capacity buckets per cluster, GPU model and resource (whole GPUs and each MIG profile on separate rows). capacity = allocated_workload + allocated_balloon + free + unavailable.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.gpu_product IS
    'GPU model (GFD nvidia.com/gpu.product), unknown when unlabelled.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.resource_name IS
    'nvidia.com/gpu or a MIG nvidia.com/mig-<profile>.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.whole_gpus IS
    'True when the row counts whole GPUs (see marts.node_gpu_capacity.whole_gpus).';
COMMENT ON COLUMN marts.fleet_gpu_by_model.nodes IS
    'Current nodes offering the resource.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.schedulable_nodes IS
    'Of those, Ready and uncordoned.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.capacity IS
    'Sum of capacity.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.allocatable IS
    'Sum of allocatable.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.allocated_workload IS
    'Held by workload pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.allocated_balloon IS
    'Held by balloon (placeholder) pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.free IS
    'Free on Ready, uncordoned nodes.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.unavailable IS
    'Unhealthy devices and the unallocated capacity of NotReady or cordoned nodes.';

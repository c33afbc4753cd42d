-- marts.fleet_gpu_by_model: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.fleet_gpu_by_model AS
SELECT
    cluster,
    gpu_model,
    coalesce(gfd_product, 'unknown') AS gfd_product,
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
GROUP BY cluster, gpu_model, coalesce(gfd_product, 'unknown'), resource_name, whole_gpus;

COMMENT ON VIEW marts.fleet_gpu_by_model IS
    'GPU capacity buckets per cluster, GPU model and resource (whole GPUs and each MIG profile on separate rows). capacity_gpus = allocated_workload_gpus + allocated_balloon_gpus + free_gpus + unavailable_gpus.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.gpu_model IS
    'Canonical GPU model (marts.gpu_models); NULL when unlabelled or unknown to annex.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.gfd_product IS
    'GFD label nvidia.com/gpu.product as written (a MIG-partitioned node has its own), unknown when unlabelled.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.resource_name IS
    'nvidia.com/gpu or a MIG nvidia.com/mig-<profile>.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.whole_gpus IS
    'True when the row counts whole GPUs (see marts.node_gpu_capacity.whole_gpus).';
COMMENT ON COLUMN marts.fleet_gpu_by_model.nodes IS
    'Current nodes offering the resource.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.schedulable_nodes IS
    'Of those, Ready and uncordoned.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.capacity_gpus IS
    'Sum of capacity.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.allocatable_gpus IS
    'Sum of allocatable.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.allocated_workload_gpus IS
    'Held by workload pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.allocated_balloon_gpus IS
    'Held by balloon (placeholder) pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.free_gpus IS
    'Free on Ready, uncordoned nodes.';
COMMENT ON COLUMN marts.fleet_gpu_by_model.unavailable_gpus IS
    'Unhealthy devices and the unallocated capacity of NotReady or cordoned nodes.';

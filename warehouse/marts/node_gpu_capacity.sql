-- marts.node_gpu_capacity: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.node_gpu_capacity AS
WITH current_nodes AS (
    SELECT *, unnest(gpu_resources) AS r FROM core.nodes WHERE valid_to IS NULL
),
held AS (
    SELECT
        cluster,
        node_name,
        resource_name,
        CAST(sum(gpus) FILTER (WHERE category = 'workload') AS BIGINT) AS workload,
        CAST(sum(gpus) FILTER (WHERE category = 'balloon') AS BIGINT) AS balloon
    FROM core.gpu_allocations
    WHERE valid_to IS NULL
    GROUP BY cluster, node_name, resource_name
),
buckets AS (
    SELECT
        n.cluster,
        n.node_uid,
        n.node_name,
        n.pool,
        n.gpu_product,
        n.instance_type,
        n.mig_strategy,
        n.topology,
        n.ready,
        n.unschedulable,
        n.ready AND NOT n.unschedulable AS schedulable,
        n.r.resource_name AS resource_name,
        n.r.resource_name = 'nvidia.com/gpu' AND coalesce(n.mig_strategy, 'none') <> 'single'
            AS whole_gpus,
        n.r.capacity AS capacity,
        n.r.allocatable AS allocatable,
        coalesce(h.workload, 0) AS allocated_workload,
        coalesce(h.balloon, 0) AS allocated_balloon
    FROM current_nodes AS n
    LEFT JOIN held AS h
        ON h.cluster = n.cluster AND h.node_name = n.node_name
        AND h.resource_name = n.r.resource_name
)
SELECT
    cluster,
    node_uid,
    node_name,
    pool,
    gpu_product,
    instance_type,
    mig_strategy,
    topology,
    ready,
    unschedulable,
    schedulable,
    resource_name,
    whole_gpus,
    capacity,
    allocatable,
    allocated_workload,
    allocated_balloon,
    CASE WHEN schedulable
        THEN greatest(allocatable - allocated_workload - allocated_balloon, 0) ELSE 0 END AS free,
    greatest(capacity - greatest(allocatable, allocated_workload + allocated_balloon), 0)
        + CASE WHEN schedulable
            THEN 0 ELSE greatest(allocatable - allocated_workload - allocated_balloon, 0) END
        AS unavailable,
    greatest(allocated_workload + allocated_balloon - allocatable, 0)
        AS allocated_beyond_allocatable
FROM buckets;

COMMENT ON VIEW marts.node_gpu_capacity IS
    'Per current node and GPU-like resource: capacity split into allocated_workload + allocated_balloon + free + unavailable (= capacity). free only on Ready, uncordoned nodes; unavailable = capacity - allocatable (unhealthy devices) plus the unallocated allocatable of NotReady or cordoned nodes. Balloons are never free.';
COMMENT ON COLUMN marts.node_gpu_capacity.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.node_gpu_capacity.node_uid IS
    'metadata.uid of the node.';
COMMENT ON COLUMN marts.node_gpu_capacity.node_name IS
    'metadata.name of the node.';
COMMENT ON COLUMN marts.node_gpu_capacity.pool IS
    'Node pool (core.nodes.pool); NULL when the node carries no pool label.';
COMMENT ON COLUMN marts.node_gpu_capacity.gpu_product IS
    'GPU model (GFD nvidia.com/gpu.product); NULL when unlabelled.';
COMMENT ON COLUMN marts.node_gpu_capacity.instance_type IS
    'Label node.kubernetes.io/instance-type.';
COMMENT ON COLUMN marts.node_gpu_capacity.mig_strategy IS
    'GFD nvidia.com/mig.strategy: none, single or mixed.';
COMMENT ON COLUMN marts.node_gpu_capacity.topology IS
    'Failure-domain path of the node (core.nodes.topology).';
COMMENT ON COLUMN marts.node_gpu_capacity.ready IS
    'Whether the node''s Ready condition is True.';
COMMENT ON COLUMN marts.node_gpu_capacity.unschedulable IS
    'Whether the node is cordoned (spec.unschedulable).';
COMMENT ON COLUMN marts.node_gpu_capacity.schedulable IS
    'ready and not unschedulable: only then is unallocated capacity free.';
COMMENT ON COLUMN marts.node_gpu_capacity.resource_name IS
    'nvidia.com/gpu (whole GPUs) or a MIG nvidia.com/mig-<profile> (slices: never add to whole GPUs).';
COMMENT ON COLUMN marts.node_gpu_capacity.whole_gpus IS
    'True when the row counts whole GPUs: nvidia.com/gpu on a node whose MIG strategy is not single (with single, nvidia.com/gpu counts MIG slices).';
COMMENT ON COLUMN marts.node_gpu_capacity.capacity IS
    'status.capacity of the resource.';
COMMENT ON COLUMN marts.node_gpu_capacity.allocatable IS
    'status.allocatable of the resource.';
COMMENT ON COLUMN marts.node_gpu_capacity.allocated_workload IS
    'Held by counted workload pods (open core.gpu_allocations, category workload).';
COMMENT ON COLUMN marts.node_gpu_capacity.allocated_balloon IS
    'Held by counted balloon (placeholder) pods: reserved, not idle.';
COMMENT ON COLUMN marts.node_gpu_capacity.free IS
    'allocatable - allocated on Ready, uncordoned nodes (never below 0); 0 elsewhere.';
COMMENT ON COLUMN marts.node_gpu_capacity.unavailable IS
    'capacity - max(allocatable, allocated), plus the unallocated allocatable of NotReady or cordoned nodes.';
COMMENT ON COLUMN marts.node_gpu_capacity.allocated_beyond_allocatable IS
    'Allocated above allocatable (devices went unhealthy under running pods); 0 normally.';

-- marts.node_gpu_capacity: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.node_gpu_capacity AS
WITH dra_resources AS (
    -- DRA-only nodes advertise no GPU extended resource: their GPU and MIG devices are in
    -- ResourceSlices (IMEX channels and daemons carry no gpu_uuid: not GPUs), counted in the
    -- device plugin's buckets; a resource the node also advertises is counted from the node.
    SELECT
        cluster,
        node_name,
        CASE WHEN mig_profile IS NOT NULL THEN 'nvidia.com/mig-' || mig_profile
            ELSE 'nvidia.com/gpu' END AS resource_name,
        count(*) AS devices
    FROM core.dra_devices
    WHERE valid_to IS NULL AND gpu_uuid IS NOT NULL AND node_name IS NOT NULL
    GROUP BY ALL
),
current_nodes AS (
    SELECT *, unnest(gpu_resources) AS r FROM core.nodes WHERE valid_to IS NULL
    UNION ALL BY NAME
    SELECT n.*, {
        'resource_name': d.resource_name, 'capacity': d.devices, 'allocatable': d.devices
    } AS r
    FROM core.nodes AS n
    JOIN dra_resources AS d ON d.cluster = n.cluster AND d.node_name = n.node_name
    WHERE n.valid_to IS NULL
      AND NOT list_contains(
          list_transform(coalesce(n.gpu_resources, []), lambda x: x.resource_name),
          d.resource_name)
),
shared AS (
    -- Shared GPUs (marts.gpu_shares, warehouse/marts/macros/gpu_sharing.sql): the node
    -- advertises shares x devices and everything below is in devices.
    SELECT
        *,
        marts.gpu_shares(labels, r.resource_name, r.capacity, mig_strategy) AS shares,
        marts.gpu_sharing_strategy(labels, r.resource_name, r.capacity, mig_strategy)
            AS sharing_strategy
    FROM current_nodes
),
held AS (
    -- in devices (marts.gpu_held): a replica is 1/shares of its device, a HAMi pod holds
    -- nvidia.com/gpucores percent of each GPU it requests; a claim shared by k pods gives each
    -- 1/k (core.gpu_allocations)
    SELECT
        a.cluster,
        a.node_name,
        a.resource_name,
        sum(a.holding) FILTER (WHERE a.category = 'workload') AS workload,
        sum(a.holding) FILTER (WHERE a.category = 'balloon') AS balloon
    FROM (
        SELECT
            a.*,
            marts.gpu_held(a.gpus, n.shares, n.sharing_strategy, c.gpus) AS holding
        FROM core.gpu_allocations AS a
        LEFT JOIN shared AS n
            ON n.cluster = a.cluster AND n.node_name = a.node_name
            AND n.r.resource_name = a.resource_name
        LEFT JOIN core.gpu_allocations AS c
            ON c.cluster = a.cluster AND c.pod_uid = a.pod_uid AND c.valid_to IS NULL
            AND c.resource_name = 'nvidia.com/gpucores' AND a.mechanism = 'device_plugin'
        WHERE a.valid_to IS NULL
    ) AS a
    GROUP BY a.cluster, a.node_name, a.resource_name
),
buckets AS (
    SELECT
        n.cluster,
        n.node_uid,
        n.node_name,
        n.node_pool,
        n.gfd_product,
        m.gpu_model,
        n.instance_type,
        n.mig_strategy,
        n.topology,
        n.ready,
        n.unschedulable,
        n.ready AND NOT n.unschedulable AS schedulable,
        n.r.resource_name AS resource_name,
        n.r.resource_name = 'nvidia.com/gpu' AND coalesce(n.mig_strategy, 'none') <> 'single'
            AS whole_gpus,
        n.sharing_strategy,
        n.shares,
        n.r.capacity AS advertised_gpus,
        n.r.capacity // n.shares AS capacity_gpus,
        n.r.allocatable // n.shares AS allocatable_gpus,
        -- rounded: k holders of 1/k each must add up to exactly 1, never to 1 + epsilon
        round(CAST(coalesce(h.workload, 0) AS DOUBLE), 9) AS allocated_workload_gpus,
        round(CAST(coalesce(h.balloon, 0) AS DOUBLE), 9) AS allocated_balloon_gpus
    FROM shared AS n
    LEFT JOIN marts.gpu_models AS m ON m.source = 'gfd_product' AND m.spelling = n.gfd_product
    LEFT JOIN held AS h
        ON h.cluster = n.cluster AND h.node_name = n.node_name
        AND h.resource_name = n.r.resource_name
)
SELECT
    cluster,
    node_uid,
    node_name,
    node_pool,
    gfd_product,
    gpu_model,
    instance_type,
    mig_strategy,
    topology,
    ready,
    unschedulable,
    schedulable,
    resource_name,
    whole_gpus,
    sharing_strategy,
    shares,
    advertised_gpus,
    CASE WHEN whole_gpus THEN capacity_gpus END AS physical_gpus,
    capacity_gpus,
    allocatable_gpus,
    allocated_workload_gpus,
    allocated_balloon_gpus,
    CASE WHEN schedulable
        THEN greatest(allocatable_gpus - allocated_workload_gpus - allocated_balloon_gpus, 0) ELSE 0 END AS free_gpus,
    greatest(capacity_gpus - greatest(allocatable_gpus, allocated_workload_gpus + allocated_balloon_gpus), 0)
        + CASE WHEN schedulable
            THEN 0 ELSE greatest(allocatable_gpus - allocated_workload_gpus - allocated_balloon_gpus, 0) END
        AS unavailable_gpus,
    greatest(allocated_workload_gpus + allocated_balloon_gpus - allocatable_gpus, 0)
        AS allocated_beyond_allocatable_gpus
FROM buckets;

COMMENT ON VIEW marts.node_gpu_capacity IS
    'Per current node and GPU-like resource: capacity_gpus split into allocated_workload_gpus + allocated_balloon_gpus + free_gpus + unavailable_gpus (= capacity_gpus), counted in devices of the resource (physical GPUs, or MIG slices for a MIG resource), device-plugin and DRA holdings together (core.gpu_allocations.mechanism). A shared GPU (time-slicing, MPS: shares replicas per device) counts once: a pod holding 1 of 4 replicas holds 0.25. A DRA-only node (no GPU extended resource) counts the GPU and MIG devices its ResourceSlices publish. free_gpus only on Ready, uncordoned nodes; unavailable_gpus = capacity - allocatable (unhealthy devices) plus the unallocated allocatable of NotReady or cordoned nodes. Balloons are never free.';
COMMENT ON COLUMN marts.node_gpu_capacity.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.node_gpu_capacity.node_uid IS
    'metadata.uid of the node.';
COMMENT ON COLUMN marts.node_gpu_capacity.node_name IS
    'metadata.name of the node.';
COMMENT ON COLUMN marts.node_gpu_capacity.node_pool IS
    'Node pool (core.nodes.node_pool); NULL when the node carries no pool label.';
COMMENT ON COLUMN marts.node_gpu_capacity.gfd_product IS
    'GFD label nvidia.com/gpu.product as written (MIG and SHARED suffixes included); NULL when unlabelled.';
COMMENT ON COLUMN marts.node_gpu_capacity.gpu_model IS
    'Canonical GPU model of gfd_product (marts.gpu_models); NULL when unlabelled or unknown to annex.';
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
COMMENT ON COLUMN marts.node_gpu_capacity.sharing_strategy IS
    'time-slicing or mps (GFD nvidia.com/gpu.sharing-strategy, with a replicas label), hami (nvidia.com/gpu advertises a multiple of GFD''s nvidia.com/gpu.count, replicas label absent or 1: HAMi''s deviceSplitCount), or none.';
COMMENT ON COLUMN marts.node_gpu_capacity.shares IS
    'Shares advertised per device: the GFD label <resource_name>.replicas (e.g. nvidia.com/gpu.replicas), for HAMi advertised / nvidia.com/gpu.count; 1 when not shared.';
COMMENT ON COLUMN marts.node_gpu_capacity.advertised_gpus IS
    'status.capacity of the resource as advertised (shares x devices on a shared node); for a DRA-only node the devices its ResourceSlices publish.';
COMMENT ON COLUMN marts.node_gpu_capacity.physical_gpus IS
    'Physical GPUs behind a whole-GPU row (= capacity_gpus); NULL for MIG rows (slices, not GPUs).';
COMMENT ON COLUMN marts.node_gpu_capacity.capacity_gpus IS
    'Devices of the resource: status.capacity / shares (a DRA-only node: the GPU or MIG devices its ResourceSlices publish).';
COMMENT ON COLUMN marts.node_gpu_capacity.allocatable_gpus IS
    'status.allocatable / shares (a DRA-only node: as capacity_gpus).';
COMMENT ON COLUMN marts.node_gpu_capacity.allocated_workload_gpus IS
    'Held by counted workload pods (open core.gpu_allocations, category workload, device-plugin and DRA), in devices: a replica is 1/shares, a HAMi request nvidia.com/gpucores/100 of each GPU, a claim shared by k pods 1/k; fractional then.';
COMMENT ON COLUMN marts.node_gpu_capacity.allocated_balloon_gpus IS
    'Held by counted balloon (placeholder) pods: reserved, not idle.';
COMMENT ON COLUMN marts.node_gpu_capacity.free_gpus IS
    'allocatable - allocated on Ready, uncordoned nodes (never below 0); 0 elsewhere.';
COMMENT ON COLUMN marts.node_gpu_capacity.unavailable_gpus IS
    'capacity - max(allocatable, allocated), plus the unallocated allocatable of NotReady or cordoned nodes.';
COMMENT ON COLUMN marts.node_gpu_capacity.allocated_beyond_allocatable_gpus IS
    'Allocated above allocatable (devices went unhealthy under running pods); 0 normally.';

-- marts.fleet_gpu_by_domain: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.fleet_gpu_by_domain AS
WITH levels AS (
    SELECT *, unnest(topology) AS t FROM marts.node_gpu_capacity
),
failure_domains AS (
    SELECT
        cluster,
        t.level AS level,
        t.level_label AS level_label,
        t.domain AS failure_domain,
        t.value AS value,
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
    FROM levels
    GROUP BY cluster, t.level, t.level_label, t.domain, t.value, resource_name, whole_gpus
)
SELECT
    *,
    capacity_gpus AS blast_radius_gpus,
    allocated_workload_gpus AS blast_radius_workload_gpus,
    capacity_gpus
        / sum(capacity_gpus) OVER (PARTITION BY cluster, level, resource_name, whole_gpus)
        AS blast_radius_share
FROM failure_domains;

COMMENT ON VIEW marts.fleet_gpu_by_domain IS
    'GPU capacity buckets per failure domain of the configured topology profile, at every level (region, zone, block, rack, ... down to the node), and the blast radius: GPUs lost if the domain fails. Nodes missing a level''s labels are in domain value unknown.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.level IS
    'Level of the profile, 1 = broadest.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.level_label IS
    'Canonical label key of the level, e.g. topology.kubernetes.io/zone.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.failure_domain IS
    'Domain key: label values from the top level down to this one, joined by /.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.value IS
    'The label value at this level (unknown when missing).';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.resource_name IS
    'nvidia.com/gpu or a MIG nvidia.com/mig-<profile>.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.whole_gpus IS
    'True when the row counts whole GPUs (see marts.node_gpu_capacity.whole_gpus).';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.nodes IS
    'Current nodes in the domain offering the resource.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.schedulable_nodes IS
    'Of those, Ready and uncordoned.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.capacity_gpus IS
    'Sum of capacity.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.allocatable_gpus IS
    'Sum of allocatable.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.allocated_workload_gpus IS
    'Held by workload pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.allocated_balloon_gpus IS
    'Held by balloon (placeholder) pods.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.free_gpus IS
    'Free on Ready, uncordoned nodes.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.unavailable_gpus IS
    'Unhealthy devices and the unallocated capacity of NotReady or cordoned nodes.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.blast_radius_gpus IS
    'GPUs (or slices) lost if this domain fails: its whole capacity.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.blast_radius_workload_gpus IS
    'GPUs held by workload pods in the domain: the work a failure would interrupt.';
COMMENT ON COLUMN marts.fleet_gpu_by_domain.blast_radius_share IS
    'blast_radius_gpus as a fraction of the cluster''s capacity of the resource.';

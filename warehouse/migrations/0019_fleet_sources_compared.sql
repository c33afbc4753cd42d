-- 0019 Fleet figures whose two sources are compared only where both saw the hour (issue 40,
-- item 9). Allocated-but-idle GPU-hours are measured by DCGM telemetry (busy < 0.05 on a
-- GPU-hour a workload pod's label held) and allocated GPU-hours by the inventory (core.nodes
-- versions and core.gpu_allocations intervals). Until now the two were summed over whatever each
-- had seen, so a node-hour the inventory never observed (the demo's inventory is one snapshot,
-- an instant, while its telemetry spans hours) counted idle GPU-hours against an allocation of
-- 0. From here: allocated_idle_gpu_hours counts only GPU-hours on node-hours the inventory
-- observed, and at most the inventory's allocation of the row (idle <= allocated by
-- construction); allocated_observed_gpu_hours is the allocation both sources saw (the base of
-- an idle share); telemetry on node-hours the inventory did not observe is shown apart
-- (telemetry_only_gpu_hours, telemetry_only_idle_gpu_hours), never compared with allocation.
-- refresh_gpu_hourly (warehouse/models/utilisation.py) writes the new columns; the rows already
-- there are brought to the same rule below. The daily views are re-created with the new
-- columns. Never edit this file once applied anywhere: add a new migration instead.

ALTER TABLE marts.node_gpu_hours ADD COLUMN allocated_observed_gpu_hours DOUBLE DEFAULT 0;
ALTER TABLE marts.node_gpu_hours ADD COLUMN telemetry_only_gpu_hours BIGINT DEFAULT 0;
ALTER TABLE marts.node_gpu_hours ADD COLUMN telemetry_only_idle_gpu_hours DOUBLE DEFAULT 0;
ALTER TABLE marts.namespace_gpu_hours ADD COLUMN allocated_observed_gpu_hours DOUBLE DEFAULT 0;
ALTER TABLE marts.namespace_gpu_hours ADD COLUMN telemetry_only_gpu_hours DOUBLE DEFAULT 0;
ALTER TABLE marts.namespace_gpu_hours ADD COLUMN telemetry_only_idle_gpu_hours DOUBLE DEFAULT 0;

-- Namespace-hours first: they read the node-hours' idle figures as they were.
UPDATE marts.namespace_gpu_hours AS a
SET allocated_observed_gpu_hours = least(a.allocated_workload_gpu_hours, t.observed_held),
    allocated_idle_gpu_hours = least(a.allocated_workload_gpu_hours, t.observed_idle),
    telemetry_only_gpu_hours = t.unobserved_held,
    telemetry_only_idle_gpu_hours = t.unobserved_idle
FROM (
    SELECT
        g.cluster,
        g.workload_namespace AS namespace,
        g.hour,
        coalesce(sum(g.pod_label_fraction) FILTER (WHERE n.observed), 0) AS observed_held,
        coalesce(sum(g.pod_label_fraction) FILTER (WHERE n.observed AND g.busy < 0.05), 0)
            AS observed_idle,
        coalesce(sum(g.pod_label_fraction) FILTER (WHERE n.observed IS NULL), 0)
            AS unobserved_held,
        coalesce(sum(g.pod_label_fraction) FILTER (WHERE n.observed IS NULL AND g.busy < 0.05),
                 0) AS unobserved_idle
    FROM marts.gpu_hourly AS g
    LEFT JOIN (
        SELECT DISTINCT cluster, node_name, hour, true AS observed
        FROM marts.node_gpu_hours
        WHERE observed_hours > 0
    ) AS n ON n.cluster = g.cluster AND n.node_name = g.node_name AND n.hour = g.hour
    WHERE g.pod_category = 'workload'
    GROUP BY g.cluster, g.workload_namespace, g.hour
) AS t
WHERE t.cluster = a.cluster AND t.namespace IS NOT DISTINCT FROM a.namespace AND t.hour = a.hour;

UPDATE marts.node_gpu_hours
SET allocated_observed_gpu_hours = CASE WHEN observed_hours > 0
        THEN least(allocated_workload_gpu_hours, dcgm_allocated_gpu_hours) ELSE 0 END,
    allocated_idle_gpu_hours = CASE WHEN observed_hours > 0
        THEN least(allocated_workload_gpu_hours, allocated_idle_gpu_hours) ELSE 0 END,
    telemetry_only_gpu_hours = CASE WHEN observed_hours > 0 THEN 0 ELSE telemetry_gpu_hours END,
    telemetry_only_idle_gpu_hours = CASE WHEN observed_hours > 0
        THEN 0 ELSE allocated_idle_gpu_hours END;

COMMENT ON COLUMN marts.node_gpu_hours.allocated_workload_gpu_hours IS 'Inventory allocation of record: Σ over core.gpu_allocations (nvidia.com/gpu, category workload) on the node of gpus × the overlap of the interval (open intervals up to the latest kubernetes collection) with the node version''s time in the hour, exact to the microsecond. Where the intervals hold more GPU-hours than the version has (intervals that outlive a capacity drop), every holder keeps its share of the capacity, so capacity = allocated_workload + allocated_balloon + free + unavailable always.';
COMMENT ON COLUMN marts.node_gpu_hours.allocated_idle_gpu_hours IS 'Allocated but idle, compared with the inventory: Σ pod_label_fraction of the node''s GPU-hours whose pod_category is workload and whose busy < 0.05 (engine active under 5 % of the hour), counted only when the inventory observed the node in the hour (observed_hours > 0) and never more than allocated_workload_gpu_hours (so it never exceeds allocated_observed_gpu_hours either); 0 in a telemetry-only row (see telemetry_only_idle_gpu_hours). Which GPU a pod holds is known only from the DCGM pod label, so idleness uses the DCGM proxy; the allocation it is held to is the inventory''s.';
COMMENT ON COLUMN marts.node_gpu_hours.allocated_observed_gpu_hours IS 'Allocated GPU-hours both sources saw: when the inventory observed the node in the hour, the smaller of allocated_workload_gpu_hours (inventory) and dcgm_allocated_gpu_hours (DCGM pod labels), else 0. The base of an idle share: allocated_idle_gpu_hours <= this <= allocated_workload_gpu_hours.';
COMMENT ON COLUMN marts.node_gpu_hours.telemetry_only_gpu_hours IS 'telemetry_gpu_hours when the inventory did not observe the node in the hour (observed_hours = 0: before its first collection, after a node left, a hostname the inventory does not know), else 0. Telemetry the inventory cannot be compared with: no allocation, capacity or idle share is computed from it.';
COMMENT ON COLUMN marts.node_gpu_hours.telemetry_only_idle_gpu_hours IS 'In such a telemetry-only row: Σ pod_label_fraction of the GPU-hours whose pod_category is workload and whose busy < 0.05. Idle by DCGM alone, shown apart and never added to allocated_idle_gpu_hours.';
COMMENT ON COLUMN marts.namespace_gpu_hours.allocated_idle_gpu_hours IS 'Allocated but idle, compared with the inventory: Σ pod_label_fraction of the namespace''s workload GPU-hours whose busy < 0.05 (engine active under 5 % of the hour) on nodes the inventory observed in the hour (a marts.node_gpu_hours row with observed_hours > 0), at most allocated_workload_gpu_hours (the inventory''s allocation of the namespace in the hour), so never above it; telemetry on unobserved nodes goes to telemetry_only_idle_gpu_hours.';
COMMENT ON COLUMN marts.namespace_gpu_hours.allocated_observed_gpu_hours IS 'Allocated GPU-hours both sources saw: the smaller of allocated_workload_gpu_hours and the DCGM-allocated GPU-hours of the namespace on nodes the inventory observed in the hour. The base of the team''s idle share: allocated_idle_gpu_hours <= this <= allocated_workload_gpu_hours.';
COMMENT ON COLUMN marts.namespace_gpu_hours.telemetry_only_gpu_hours IS 'DCGM-allocated GPU-hours of the namespace (Σ pod_label_fraction, workload pods) on nodes the inventory did not observe in the hour: telemetry the inventory cannot be compared with, never counted as allocation or idleness.';
COMMENT ON COLUMN marts.namespace_gpu_hours.telemetry_only_idle_gpu_hours IS 'Of those, the GPU-hours whose busy < 0.05: idle by DCGM alone, shown apart.';

DROP VIEW marts.gpu_hours_daily_by_node;

CREATE VIEW marts.gpu_hours_daily_by_node AS
SELECT
    cluster,
    node_name,
    day,
    arg_max(node_uid, hour) FILTER (WHERE node_uid IS NOT NULL) AS node_uid,
    arg_max(pool, hour) FILTER (WHERE observed_hours > 0) AS pool,
    arg_max(gpu_product, hour) FILTER (WHERE gpu_product IS NOT NULL) AS gpu_product,
    arg_max(failure_domain, hour) FILTER (WHERE observed_hours > 0) AS failure_domain,
    sum(observed_hours) AS observed_hours,
    sum(capacity_gpu_hours) AS capacity_gpu_hours,
    sum(allocatable_gpu_hours) AS allocatable_gpu_hours,
    sum(allocated_workload_gpu_hours) AS allocated_workload_gpu_hours,
    sum(allocated_balloon_gpu_hours) AS allocated_balloon_gpu_hours,
    sum(free_gpu_hours) AS free_gpu_hours,
    sum(unavailable_gpu_hours) AS unavailable_gpu_hours,
    sum(allocated_workload_gpu_hours) / nullif(sum(capacity_gpu_hours), 0)
        AS allocated_workload_share,
    CAST(sum(telemetry_gpu_hours) AS BIGINT) AS telemetry_gpu_hours,
    sum(dcgm_allocated_gpu_hours) AS dcgm_allocated_gpu_hours,
    sum(allocated_idle_gpu_hours) AS allocated_idle_gpu_hours,
    sum(allocated_observed_gpu_hours) AS allocated_observed_gpu_hours,
    CAST(sum(telemetry_only_gpu_hours) AS BIGINT) AS telemetry_only_gpu_hours,
    sum(telemetry_only_idle_gpu_hours) AS telemetry_only_idle_gpu_hours,
    sum(busy_gpu_hours) / nullif(sum(busy_observed_gpu_hours), 0) AS busy,
    sum(sm_active_gpu_hours) / nullif(sum(sm_active_observed_gpu_hours), 0) AS sm_active,
    sum(tensor_active_gpu_hours) / nullif(sum(tensor_active_observed_gpu_hours), 0)
        AS tensor_active,
    sum(dram_active_gpu_hours) / nullif(sum(dram_active_observed_gpu_hours), 0) AS dram_active,
    sum(energy_joules) / 3.6e9 AS energy_mwh,
    sum(energy_estimated_joules) / 3.6e9 AS energy_estimated_mwh
FROM marts.node_gpu_hours
GROUP BY cluster, node_name, day;

COMMENT ON VIEW marts.gpu_hours_daily_by_node IS
    'marts.node_gpu_hours summed per node and UTC day: inventory GPU-hours (capacity = allocated_workload + allocated_balloon + free + unavailable), the DCGM allocation proxy, allocated-but-idle GPU-hours, activity means weighted by GPU-hours and energy.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.node_name IS 'Node name; NULL for telemetry without a hostname label.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.day IS 'UTC date.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.node_uid IS 'metadata.uid of the node in its latest hour of the day.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.pool IS 'Node pool in its latest observed hour of the day.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.gpu_product IS 'GPU model in its latest hour of the day.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.failure_domain IS 'Top-level failure domain in its latest observed hour of the day.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.observed_hours IS 'Hours of the day the inventory observed the node (at most 24).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.capacity_gpu_hours IS 'Σ capacity GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.allocatable_gpu_hours IS 'Σ allocatable GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.allocated_workload_gpu_hours IS 'Σ GPU-hours held by workload pods (inventory intervals).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.allocated_balloon_gpu_hours IS 'Σ GPU-hours held by balloon (placeholder) pods: reserved, not idle.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.free_gpu_hours IS 'Σ free GPU-hours (allocatable, unallocated, on Ready uncordoned node versions).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.unavailable_gpu_hours IS 'Σ unavailable GPU-hours (unhealthy devices, unallocated capacity of NotReady or cordoned versions).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.allocated_workload_share IS 'allocated_workload_gpu_hours / capacity_gpu_hours: allocation (reference §4), not utilisation; NULL without capacity.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.telemetry_gpu_hours IS 'GPU-hours with DCGM samples.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.dcgm_allocated_gpu_hours IS 'Σ DCGM allocation proxy GPU-hours (workload pod labels).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.allocated_idle_gpu_hours IS 'Σ allocated-but-idle GPU-hours compared with the inventory: workload-labelled GPU-hours with busy < 0.05 (engine active under 5 % of the hour) on node-hours the inventory observed, each node-hour at most its inventory allocation; never above allocated_workload_gpu_hours or allocated_observed_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.allocated_observed_gpu_hours IS 'Σ allocated GPU-hours both sources saw (per hour the smaller of the inventory''s and the DCGM pod labels'', on observed node-hours): the base of the idle share.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.telemetry_only_gpu_hours IS 'Σ telemetry GPU-hours on node-hours the inventory did not observe: not compared with allocation or capacity. Non-zero on a day without capacity: the day has telemetry only.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.telemetry_only_idle_gpu_hours IS 'Σ idle GPU-hours by DCGM alone in those telemetry-only hours: shown apart, never in allocated_idle_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.busy IS 'Mean busy (gr_engine_active, or gpu_util without it) over the GPU-hours with a value, each GPU-hour weighing the same.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.sm_active IS 'Mean sm_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.tensor_active IS 'Mean tensor_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.dram_active IS 'Mean dram_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.energy_mwh IS 'Σ GPU energy (counter, else power estimate) in MWh (joules / 3.6e9); GPUs only, not the host.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_node.energy_estimated_mwh IS 'The part of energy_mwh from the power-gauge estimate.';

DROP VIEW marts.gpu_hours_daily_by_namespace;

CREATE VIEW marts.gpu_hours_daily_by_namespace AS
SELECT
    cluster,
    namespace,
    day,
    sum(allocated_workload_gpu_hours) AS allocated_workload_gpu_hours,
    sum(allocated_balloon_gpu_hours) AS allocated_balloon_gpu_hours,
    sum(dcgm_allocated_gpu_hours) AS dcgm_allocated_gpu_hours,
    sum(allocated_idle_gpu_hours) AS allocated_idle_gpu_hours,
    sum(allocated_observed_gpu_hours) AS allocated_observed_gpu_hours,
    sum(telemetry_only_gpu_hours) AS telemetry_only_gpu_hours,
    sum(telemetry_only_idle_gpu_hours) AS telemetry_only_idle_gpu_hours,
    sum(busy_gpu_hours) / nullif(sum(busy_observed_gpu_hours), 0) AS busy,
    sum(sm_active_gpu_hours) / nullif(sum(sm_active_observed_gpu_hours), 0) AS sm_active,
    sum(tensor_active_gpu_hours) / nullif(sum(tensor_active_observed_gpu_hours), 0)
        AS tensor_active,
    sum(dram_active_gpu_hours) / nullif(sum(dram_active_observed_gpu_hours), 0) AS dram_active,
    sum(energy_joules) / 3.6e9 AS energy_mwh,
    sum(energy_estimated_joules) / 3.6e9 AS energy_estimated_mwh
FROM marts.namespace_gpu_hours
GROUP BY cluster, namespace, day;

COMMENT ON VIEW marts.gpu_hours_daily_by_namespace IS
    'Per namespace (team = namespace) and UTC day, from marts.namespace_gpu_hours: GPU-hours allocated by the inventory (workload, balloon), the DCGM pod-label proxy, allocated-but-idle GPU-hours, activity means weighted by the team''s GPU-hours and attributed energy. Capacity, free and unavailable are per node (marts.gpu_hours_daily_by_node, _by_pool, _by_domain).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.namespace IS 'Kubernetes namespace (the team).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.day IS 'UTC date.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.allocated_workload_gpu_hours IS 'Σ GPU-hours held by the namespace''s workload pods (inventory intervals).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.allocated_balloon_gpu_hours IS 'Σ GPU-hours held by its balloon (placeholder) pods.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.dcgm_allocated_gpu_hours IS 'Σ GPU-hours its workload pods held by the DCGM pod-label proxy.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.allocated_idle_gpu_hours IS 'Σ allocated-but-idle GPU-hours compared with the inventory: its workload GPU-hours with busy < 0.05 on nodes the inventory observed, each hour at most the namespace''s inventory allocation; never above allocated_workload_gpu_hours or allocated_observed_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.allocated_observed_gpu_hours IS 'Σ allocated GPU-hours both sources saw (per hour the smaller of the inventory''s and the DCGM pod labels'' on observed nodes): the base of the team''s idle share.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.telemetry_only_gpu_hours IS 'Σ its DCGM-allocated GPU-hours on nodes the inventory did not observe: not compared with its allocation.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.telemetry_only_idle_gpu_hours IS 'Σ idle GPU-hours by DCGM alone in those hours: shown apart, never in allocated_idle_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.busy IS 'Mean busy of its GPU-hours, weighted by pod_label_fraction.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.sm_active IS 'Mean sm_active of its GPU-hours, weighted by pod_label_fraction.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.tensor_active IS 'Mean tensor_active of its GPU-hours, weighted by pod_label_fraction.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.dram_active IS 'Mean dram_active of its GPU-hours, weighted by pod_label_fraction.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.energy_mwh IS 'GPU energy attributed by pod label (energy × pod_label_fraction), MWh.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.energy_estimated_mwh IS 'The part of energy_mwh from the power-gauge estimate.';

DROP VIEW marts.gpu_hours_daily_by_pool;

CREATE VIEW marts.gpu_hours_daily_by_pool AS
SELECT
    cluster,
    coalesce(pool, 'unknown') AS pool,
    day,
    count(DISTINCT node_name) FILTER (WHERE observed_hours > 0) AS nodes,
    sum(capacity_gpu_hours) AS capacity_gpu_hours,
    sum(allocatable_gpu_hours) AS allocatable_gpu_hours,
    sum(allocated_workload_gpu_hours) AS allocated_workload_gpu_hours,
    sum(allocated_balloon_gpu_hours) AS allocated_balloon_gpu_hours,
    sum(free_gpu_hours) AS free_gpu_hours,
    sum(unavailable_gpu_hours) AS unavailable_gpu_hours,
    sum(allocated_workload_gpu_hours) / nullif(sum(capacity_gpu_hours), 0)
        AS allocated_workload_share,
    CAST(sum(telemetry_gpu_hours) AS BIGINT) AS telemetry_gpu_hours,
    sum(dcgm_allocated_gpu_hours) AS dcgm_allocated_gpu_hours,
    sum(allocated_idle_gpu_hours) AS allocated_idle_gpu_hours,
    sum(allocated_observed_gpu_hours) AS allocated_observed_gpu_hours,
    CAST(sum(telemetry_only_gpu_hours) AS BIGINT) AS telemetry_only_gpu_hours,
    sum(telemetry_only_idle_gpu_hours) AS telemetry_only_idle_gpu_hours,
    sum(busy_gpu_hours) / nullif(sum(busy_observed_gpu_hours), 0) AS busy,
    sum(sm_active_gpu_hours) / nullif(sum(sm_active_observed_gpu_hours), 0) AS sm_active,
    sum(tensor_active_gpu_hours) / nullif(sum(tensor_active_observed_gpu_hours), 0)
        AS tensor_active,
    sum(dram_active_gpu_hours) / nullif(sum(dram_active_observed_gpu_hours), 0) AS dram_active,
    sum(energy_joules) / 3.6e9 AS energy_mwh,
    sum(energy_estimated_joules) / 3.6e9 AS energy_estimated_mwh
FROM marts.node_gpu_hours
GROUP BY cluster, coalesce(pool, 'unknown'), day;

COMMENT ON VIEW marts.gpu_hours_daily_by_pool IS
    'marts.node_gpu_hours summed per node pool and UTC day (the pool of each node-hour): capacity = allocated_workload + allocated_balloon + free + unavailable GPU-hours (inventory), the DCGM allocation proxy, allocated-but-idle GPU-hours, activity means weighted by GPU-hours, energy. Hourly: GROUP BY pool, hour on marts.node_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.pool IS 'Node pool (core.nodes.pool); unknown when unlabelled or seen only by telemetry.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.day IS 'UTC date.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.nodes IS 'Nodes of the pool the inventory observed that day.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.capacity_gpu_hours IS 'Σ capacity GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocatable_gpu_hours IS 'Σ allocatable GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocated_workload_gpu_hours IS 'Σ GPU-hours held by workload pods (inventory intervals).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocated_balloon_gpu_hours IS 'Σ GPU-hours held by balloon (placeholder) pods: reserved, not idle.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.free_gpu_hours IS 'Σ free GPU-hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.unavailable_gpu_hours IS 'Σ unavailable GPU-hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocated_workload_share IS 'allocated_workload_gpu_hours / capacity_gpu_hours: allocation, not utilisation; NULL without capacity.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.telemetry_gpu_hours IS 'GPU-hours with DCGM samples.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.dcgm_allocated_gpu_hours IS 'Σ DCGM allocation proxy GPU-hours (workload pod labels).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocated_idle_gpu_hours IS 'Σ allocated-but-idle GPU-hours compared with the inventory: workload-labelled GPU-hours with busy < 0.05 (engine active under 5 % of the hour) on node-hours the inventory observed, each node-hour at most its inventory allocation; never above allocated_workload_gpu_hours or allocated_observed_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocated_observed_gpu_hours IS 'Σ allocated GPU-hours both sources saw (per hour the smaller of the inventory''s and the DCGM pod labels'', on observed node-hours): the base of the idle share.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.telemetry_only_gpu_hours IS 'Σ telemetry GPU-hours on node-hours the inventory did not observe: not compared with allocation or capacity. Non-zero on a day without capacity: the day has telemetry only.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.telemetry_only_idle_gpu_hours IS 'Σ idle GPU-hours by DCGM alone in those telemetry-only hours: shown apart, never in allocated_idle_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.busy IS 'Mean busy (gr_engine_active, or gpu_util without it) over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.sm_active IS 'Mean sm_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.tensor_active IS 'Mean tensor_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.dram_active IS 'Mean dram_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.energy_mwh IS 'Σ GPU energy (counter, else power estimate), MWh.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.energy_estimated_mwh IS 'The part of energy_mwh from the power-gauge estimate.';

DROP VIEW marts.gpu_hours_daily_by_domain;

CREATE VIEW marts.gpu_hours_daily_by_domain AS
SELECT
    cluster,
    coalesce(failure_domain, 'unknown') AS failure_domain,
    day,
    count(DISTINCT node_name) FILTER (WHERE observed_hours > 0) AS nodes,
    sum(capacity_gpu_hours) AS capacity_gpu_hours,
    sum(allocatable_gpu_hours) AS allocatable_gpu_hours,
    sum(allocated_workload_gpu_hours) AS allocated_workload_gpu_hours,
    sum(allocated_balloon_gpu_hours) AS allocated_balloon_gpu_hours,
    sum(free_gpu_hours) AS free_gpu_hours,
    sum(unavailable_gpu_hours) AS unavailable_gpu_hours,
    sum(allocated_workload_gpu_hours) / nullif(sum(capacity_gpu_hours), 0)
        AS allocated_workload_share,
    CAST(sum(telemetry_gpu_hours) AS BIGINT) AS telemetry_gpu_hours,
    sum(dcgm_allocated_gpu_hours) AS dcgm_allocated_gpu_hours,
    sum(allocated_idle_gpu_hours) AS allocated_idle_gpu_hours,
    sum(allocated_observed_gpu_hours) AS allocated_observed_gpu_hours,
    CAST(sum(telemetry_only_gpu_hours) AS BIGINT) AS telemetry_only_gpu_hours,
    sum(telemetry_only_idle_gpu_hours) AS telemetry_only_idle_gpu_hours,
    sum(busy_gpu_hours) / nullif(sum(busy_observed_gpu_hours), 0) AS busy,
    sum(sm_active_gpu_hours) / nullif(sum(sm_active_observed_gpu_hours), 0) AS sm_active,
    sum(tensor_active_gpu_hours) / nullif(sum(tensor_active_observed_gpu_hours), 0)
        AS tensor_active,
    sum(dram_active_gpu_hours) / nullif(sum(dram_active_observed_gpu_hours), 0) AS dram_active,
    sum(energy_joules) / 3.6e9 AS energy_mwh,
    sum(energy_estimated_joules) / 3.6e9 AS energy_estimated_mwh
FROM marts.node_gpu_hours
GROUP BY cluster, coalesce(failure_domain, 'unknown'), day;

COMMENT ON VIEW marts.gpu_hours_daily_by_domain IS
    'marts.node_gpu_hours summed per top-level failure domain (level 1 of core.nodes.topology under the configured profile; every level with blast radius is in marts.fleet_gpu_by_domain) and UTC day: inventory GPU-hours by bucket, DCGM allocation proxy, allocated-but-idle GPU-hours, activity means, energy.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.failure_domain IS 'Top-level failure domain (its label value; unknown when nodes lack the label or are seen only by telemetry).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.day IS 'UTC date.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.nodes IS 'Nodes of the domain the inventory observed that day.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.capacity_gpu_hours IS 'Σ capacity GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.allocatable_gpu_hours IS 'Σ allocatable GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.allocated_workload_gpu_hours IS 'Σ GPU-hours held by workload pods (inventory intervals).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.allocated_balloon_gpu_hours IS 'Σ GPU-hours held by balloon (placeholder) pods: reserved, not idle.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.free_gpu_hours IS 'Σ free GPU-hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.unavailable_gpu_hours IS 'Σ unavailable GPU-hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.allocated_workload_share IS 'allocated_workload_gpu_hours / capacity_gpu_hours: allocation, not utilisation; NULL without capacity.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.telemetry_gpu_hours IS 'GPU-hours with DCGM samples.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.dcgm_allocated_gpu_hours IS 'Σ DCGM allocation proxy GPU-hours (workload pod labels).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.allocated_idle_gpu_hours IS 'Σ allocated-but-idle GPU-hours compared with the inventory: workload-labelled GPU-hours with busy < 0.05 (engine active under 5 % of the hour) on node-hours the inventory observed, each node-hour at most its inventory allocation; never above allocated_workload_gpu_hours or allocated_observed_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.allocated_observed_gpu_hours IS 'Σ allocated GPU-hours both sources saw (per hour the smaller of the inventory''s and the DCGM pod labels'', on observed node-hours): the base of the idle share.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.telemetry_only_gpu_hours IS 'Σ telemetry GPU-hours on node-hours the inventory did not observe: not compared with allocation or capacity. Non-zero on a day without capacity: the day has telemetry only.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.telemetry_only_idle_gpu_hours IS 'Σ idle GPU-hours by DCGM alone in those telemetry-only hours: shown apart, never in allocated_idle_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.busy IS 'Mean busy (gr_engine_active, or gpu_util without it) over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.sm_active IS 'Mean sm_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.tensor_active IS 'Mean tensor_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.dram_active IS 'Mean dram_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.energy_mwh IS 'Σ GPU energy (counter, else power estimate), MWh.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_domain.energy_estimated_mwh IS 'The part of energy_mwh from the power-gauge estimate.';

DROP VIEW marts.gpu_hours_daily_by_model;

CREATE VIEW marts.gpu_hours_daily_by_model AS
SELECT
    cluster,
    coalesce(gpu_product, 'unknown') AS gpu_product,
    day,
    count(DISTINCT node_name) FILTER (WHERE observed_hours > 0) AS nodes,
    sum(capacity_gpu_hours) AS capacity_gpu_hours,
    sum(allocatable_gpu_hours) AS allocatable_gpu_hours,
    sum(allocated_workload_gpu_hours) AS allocated_workload_gpu_hours,
    sum(allocated_balloon_gpu_hours) AS allocated_balloon_gpu_hours,
    sum(free_gpu_hours) AS free_gpu_hours,
    sum(unavailable_gpu_hours) AS unavailable_gpu_hours,
    sum(allocated_workload_gpu_hours) / nullif(sum(capacity_gpu_hours), 0)
        AS allocated_workload_share,
    CAST(sum(telemetry_gpu_hours) AS BIGINT) AS telemetry_gpu_hours,
    sum(dcgm_allocated_gpu_hours) AS dcgm_allocated_gpu_hours,
    sum(allocated_idle_gpu_hours) AS allocated_idle_gpu_hours,
    sum(allocated_observed_gpu_hours) AS allocated_observed_gpu_hours,
    CAST(sum(telemetry_only_gpu_hours) AS BIGINT) AS telemetry_only_gpu_hours,
    sum(telemetry_only_idle_gpu_hours) AS telemetry_only_idle_gpu_hours,
    sum(busy_gpu_hours) / nullif(sum(busy_observed_gpu_hours), 0) AS busy,
    sum(sm_active_gpu_hours) / nullif(sum(sm_active_observed_gpu_hours), 0) AS sm_active,
    sum(tensor_active_gpu_hours) / nullif(sum(tensor_active_observed_gpu_hours), 0)
        AS tensor_active,
    sum(dram_active_gpu_hours) / nullif(sum(dram_active_observed_gpu_hours), 0) AS dram_active,
    sum(energy_joules) / 3.6e9 AS energy_mwh,
    sum(energy_estimated_joules) / 3.6e9 AS energy_estimated_mwh
FROM marts.node_gpu_hours
GROUP BY cluster, coalesce(gpu_product, 'unknown'), day;

COMMENT ON VIEW marts.gpu_hours_daily_by_model IS
    'marts.node_gpu_hours summed per GPU model and UTC day: inventory GPU-hours by bucket, DCGM allocation proxy, allocated-but-idle GPU-hours, activity means, energy.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.gpu_product IS 'GPU model of the node (GFD nvidia.com/gpu.product; DCGM modelName for telemetry-only nodes), unknown when neither.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.day IS 'UTC date.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.nodes IS 'Nodes of that model the inventory observed that day.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.capacity_gpu_hours IS 'Σ capacity GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.allocatable_gpu_hours IS 'Σ allocatable GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.allocated_workload_gpu_hours IS 'Σ GPU-hours held by workload pods (inventory intervals).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.allocated_balloon_gpu_hours IS 'Σ GPU-hours held by balloon (placeholder) pods: reserved, not idle.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.free_gpu_hours IS 'Σ free GPU-hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.unavailable_gpu_hours IS 'Σ unavailable GPU-hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.allocated_workload_share IS 'allocated_workload_gpu_hours / capacity_gpu_hours: allocation, not utilisation; NULL without capacity.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.telemetry_gpu_hours IS 'GPU-hours with DCGM samples.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.dcgm_allocated_gpu_hours IS 'Σ DCGM allocation proxy GPU-hours (workload pod labels).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.allocated_idle_gpu_hours IS 'Σ allocated-but-idle GPU-hours compared with the inventory: workload-labelled GPU-hours with busy < 0.05 (engine active under 5 % of the hour) on node-hours the inventory observed, each node-hour at most its inventory allocation; never above allocated_workload_gpu_hours or allocated_observed_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.allocated_observed_gpu_hours IS 'Σ allocated GPU-hours both sources saw (per hour the smaller of the inventory''s and the DCGM pod labels'', on observed node-hours): the base of the idle share.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.telemetry_only_gpu_hours IS 'Σ telemetry GPU-hours on node-hours the inventory did not observe: not compared with allocation or capacity. Non-zero on a day without capacity: the day has telemetry only.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.telemetry_only_idle_gpu_hours IS 'Σ idle GPU-hours by DCGM alone in those telemetry-only hours: shown apart, never in allocated_idle_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.busy IS 'Mean busy (gr_engine_active, or gpu_util without it) over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.sm_active IS 'Mean sm_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.tensor_active IS 'Mean tensor_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.dram_active IS 'Mean dram_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.energy_mwh IS 'Σ GPU energy (counter, else power estimate), MWh.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_model.energy_estimated_mwh IS 'The part of energy_mwh from the power-gauge estimate.';

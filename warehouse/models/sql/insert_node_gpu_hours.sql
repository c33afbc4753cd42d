-- Run by warehouse/models/utilisation.py (_INSERT_NODE_HOURS).
INSERT INTO marts.node_gpu_hours BY NAME
WITH held AS (
    SELECT
        segment,
        coalesce(sum(gpu_hours) FILTER (WHERE category = 'workload'), 0) AS workload,
        coalesce(sum(gpu_hours) FILTER (WHERE category = 'balloon'), 0) AS balloon
    FROM util_held
    GROUP BY segment
),
buckets AS (
    SELECT
        s.*,
        s.capacity * s.seg_hours AS cap,
        s.allocatable * s.seg_hours AS alloc,
        coalesce(h.workload, 0) AS workload,
        coalesce(h.balloon, 0) AS balloon
    FROM util_segments AS s
    LEFT JOIN held AS h USING (segment)
),
inventory AS (
    SELECT
        cluster,
        node_name,
        hour,
        arg_max(node_uid, seg_to) AS node_uid,
        arg_max(node_pool, seg_to) AS node_pool,
        arg_max(gpu_model, seg_to) AS gpu_model,
        arg_max(failure_domain, seg_to) AS failure_domain,
        sum(seg_hours) AS observed_hours,
        sum(cap) AS capacity_gpu_hours,
        sum(alloc) AS allocatable_gpu_hours,
        sum(workload) AS allocated_workload_gpu_hours,
        sum(balloon) AS allocated_balloon_gpu_hours,
        sum(CASE WHEN schedulable THEN greatest(alloc - workload - balloon, 0) ELSE 0 END)
            AS free_gpu_hours,
        sum(greatest(cap - greatest(alloc, workload + balloon), 0)
            + CASE WHEN schedulable THEN 0 ELSE greatest(alloc - workload - balloon, 0) END)
            AS unavailable_gpu_hours,
        sum(greatest(workload + balloon - alloc, 0)) AS allocated_beyond_allocatable_gpu_hours
    FROM buckets
    GROUP BY cluster, node_name, hour
),
telemetry AS (
    SELECT
        cluster,
        node_name,
        hour,
        max(gpu_model) AS gpu_model,
        count(*) AS telemetry_gpu_hours,
        coalesce(sum(pod_label_fraction) FILTER (WHERE pod_category = 'workload'), 0)
            AS dcgm_allocated_gpu_hours,
        coalesce(sum(pod_label_fraction)
            FILTER (WHERE pod_category = 'workload' AND busy < {idle_busy_threshold}), 0)
            AS dcgm_idle_gpu_hours,
        coalesce(sum(busy), 0) AS busy_gpu_hours,
        count(busy) AS busy_observed_gpu_hours,
        coalesce(sum(sm_active), 0) AS sm_active_gpu_hours,
        count(sm_active) AS sm_active_observed_gpu_hours,
        coalesce(sum(tensor_active), 0) AS tensor_active_gpu_hours,
        count(tensor_active) AS tensor_active_observed_gpu_hours,
        coalesce(sum(dram_active), 0) AS dram_active_gpu_hours,
        count(dram_active) AS dram_active_observed_gpu_hours,
        coalesce(sum(coalesce(energy_joules, energy_estimated_joules)), 0) AS energy_joules,
        coalesce(sum(energy_estimated_joules) FILTER (WHERE energy_joules IS NULL), 0)
            AS energy_estimated_joules
    FROM ({telemetry_in_chunk})
    GROUP BY cluster, node_name, hour
)
SELECT
    coalesce(i.cluster, t.cluster) AS cluster,
    coalesce(i.node_name, t.node_name) AS node_name,
    coalesce(i.hour, t.hour) AS hour,
    CAST(coalesce(i.hour, t.hour) AS DATE) AS day,
    i.node_uid,
    i.node_pool,
    coalesce(i.gpu_model, t.gpu_model) AS gpu_model,
    i.failure_domain,
    coalesce(i.observed_hours, 0) AS observed_hours,
    coalesce(i.capacity_gpu_hours, 0) AS capacity_gpu_hours,
    coalesce(i.allocatable_gpu_hours, 0) AS allocatable_gpu_hours,
    coalesce(i.allocated_workload_gpu_hours, 0) AS allocated_workload_gpu_hours,
    coalesce(i.allocated_balloon_gpu_hours, 0) AS allocated_balloon_gpu_hours,
    coalesce(i.free_gpu_hours, 0) AS free_gpu_hours,
    coalesce(i.unavailable_gpu_hours, 0) AS unavailable_gpu_hours,
    coalesce(i.allocated_beyond_allocatable_gpu_hours, 0)
        AS allocated_beyond_allocatable_gpu_hours,
    coalesce(t.telemetry_gpu_hours, 0) AS telemetry_gpu_hours,
    coalesce(t.dcgm_allocated_gpu_hours, 0) AS dcgm_allocated_gpu_hours,
    -- the two sources are compared only where both saw the node-hour (i: the inventory
    -- observed it), and idle is held to the inventory's allocation: idle <= allocated
    CASE WHEN i.cluster IS NULL THEN 0
        ELSE least(coalesce(t.dcgm_allocated_gpu_hours, 0), i.allocated_workload_gpu_hours)
    END AS allocated_observed_gpu_hours,
    CASE WHEN i.cluster IS NULL THEN 0
        ELSE least(coalesce(t.dcgm_idle_gpu_hours, 0), i.allocated_workload_gpu_hours)
    END AS allocated_idle_gpu_hours,
    CASE WHEN i.cluster IS NULL THEN coalesce(t.telemetry_gpu_hours, 0) ELSE 0 END
        AS telemetry_only_gpu_hours,
    CASE WHEN i.cluster IS NULL THEN coalesce(t.dcgm_idle_gpu_hours, 0) ELSE 0 END
        AS telemetry_only_idle_gpu_hours,
    coalesce(t.busy_gpu_hours, 0) AS busy_gpu_hours,
    coalesce(t.busy_observed_gpu_hours, 0) AS busy_observed_gpu_hours,
    coalesce(t.sm_active_gpu_hours, 0) AS sm_active_gpu_hours,
    coalesce(t.sm_active_observed_gpu_hours, 0) AS sm_active_observed_gpu_hours,
    coalesce(t.tensor_active_gpu_hours, 0) AS tensor_active_gpu_hours,
    coalesce(t.tensor_active_observed_gpu_hours, 0) AS tensor_active_observed_gpu_hours,
    coalesce(t.dram_active_gpu_hours, 0) AS dram_active_gpu_hours,
    coalesce(t.dram_active_observed_gpu_hours, 0) AS dram_active_observed_gpu_hours,
    coalesce(t.energy_joules, 0) AS energy_joules,
    coalesce(t.energy_estimated_joules, 0) AS energy_estimated_joules,
    CAST($now AS TIMESTAMP) AS refreshed_at
FROM inventory AS i
FULL OUTER JOIN telemetry AS t
    ON t.cluster = i.cluster AND t.node_name = i.node_name AND t.hour = i.hour

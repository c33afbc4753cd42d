-- Run by warehouse/models/utilisation.py (_INSERT_NAMESPACE_HOURS).
INSERT INTO marts.namespace_gpu_hours BY NAME
WITH inventory AS (
    SELECT
        cluster,
        namespace,
        hour,
        coalesce(sum(gpu_hours) FILTER (WHERE category = 'workload'), 0)
            AS allocated_workload_gpu_hours,
        coalesce(sum(gpu_hours) FILTER (WHERE category = 'balloon'), 0)
            AS allocated_balloon_gpu_hours
    FROM util_held
    GROUP BY cluster, namespace, hour
),
observed AS (
    SELECT DISTINCT cluster, node_name, hour FROM util_segments
),
telemetry AS (
    SELECT
        g.cluster,
        g.workload_namespace AS namespace,
        g.hour,
        sum(g.pod_label_fraction) AS dcgm_allocated_gpu_hours,
        coalesce(sum(g.pod_label_fraction) FILTER (WHERE o.hour IS NOT NULL), 0)
            AS dcgm_observed_gpu_hours,
        coalesce(sum(g.pod_label_fraction)
            FILTER (WHERE o.hour IS NOT NULL AND g.busy < {idle_busy_threshold}), 0)
            AS dcgm_observed_idle_gpu_hours,
        coalesce(sum(g.pod_label_fraction) FILTER (WHERE o.hour IS NULL), 0)
            AS telemetry_only_gpu_hours,
        coalesce(sum(g.pod_label_fraction)
            FILTER (WHERE o.hour IS NULL AND g.busy < {idle_busy_threshold}), 0)
            AS telemetry_only_idle_gpu_hours,
        coalesce(sum(busy * pod_label_fraction), 0) AS busy_gpu_hours,
        coalesce(sum(pod_label_fraction) FILTER (WHERE busy IS NOT NULL), 0)
            AS busy_observed_gpu_hours,
        coalesce(sum(sm_active * pod_label_fraction), 0) AS sm_active_gpu_hours,
        coalesce(sum(pod_label_fraction) FILTER (WHERE sm_active IS NOT NULL), 0)
            AS sm_active_observed_gpu_hours,
        coalesce(sum(tensor_active * pod_label_fraction), 0) AS tensor_active_gpu_hours,
        coalesce(sum(pod_label_fraction) FILTER (WHERE tensor_active IS NOT NULL), 0)
            AS tensor_active_observed_gpu_hours,
        coalesce(sum(dram_active * pod_label_fraction), 0) AS dram_active_gpu_hours,
        coalesce(sum(pod_label_fraction) FILTER (WHERE dram_active IS NOT NULL), 0)
            AS dram_active_observed_gpu_hours,
        coalesce(sum(coalesce(energy_joules, energy_estimated_joules) * pod_label_fraction), 0)
            AS energy_joules,
        coalesce(sum(energy_estimated_joules * pod_label_fraction)
            FILTER (WHERE energy_joules IS NULL), 0) AS energy_estimated_joules
    FROM ({telemetry_in_chunk}) AS g
    LEFT JOIN observed AS o
        ON o.cluster = g.cluster AND o.node_name = g.node_name AND o.hour = g.hour
    WHERE g.pod_category = 'workload'
    GROUP BY g.cluster, g.workload_namespace, g.hour
)
SELECT
    coalesce(i.cluster, t.cluster) AS cluster,
    coalesce(i.namespace, t.namespace) AS namespace,
    coalesce(i.hour, t.hour) AS hour,
    CAST(coalesce(i.hour, t.hour) AS DATE) AS day,
    coalesce(i.allocated_workload_gpu_hours, 0) AS allocated_workload_gpu_hours,
    coalesce(i.allocated_balloon_gpu_hours, 0) AS allocated_balloon_gpu_hours,
    coalesce(t.dcgm_allocated_gpu_hours, 0) AS dcgm_allocated_gpu_hours,
    -- compared with the inventory only on the nodes it observed in the hour, and held to the
    -- namespace's inventory allocation: idle <= allocated_observed <= allocated_workload
    least(coalesce(t.dcgm_observed_gpu_hours, 0), coalesce(i.allocated_workload_gpu_hours, 0))
        AS allocated_observed_gpu_hours,
    least(coalesce(t.dcgm_observed_idle_gpu_hours, 0),
          coalesce(i.allocated_workload_gpu_hours, 0)) AS allocated_idle_gpu_hours,
    coalesce(t.telemetry_only_gpu_hours, 0) AS telemetry_only_gpu_hours,
    coalesce(t.telemetry_only_idle_gpu_hours, 0) AS telemetry_only_idle_gpu_hours,
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
    ON t.cluster = i.cluster AND t.namespace IS NOT DISTINCT FROM i.namespace AND t.hour = i.hour

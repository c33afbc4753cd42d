-- The GPU-days (migration 0013) of the (cluster, day)s in util_gpu_days, $first..$last, summed
-- again whole from marts.gpu_hourly after delete_gpu_daily.sql. The idle threshold is
-- warehouse.models.utilisation.IDLE_BUSY_THRESHOLD (filled in when the module loads), the same
-- threshold as the hourly marts'. Run by warehouse/models/utilisation.py.
INSERT INTO marts.gpu_daily BY NAME
WITH namespaces AS (
    SELECT cluster, gpu_uuid, day, workload_namespace, sum(pod_label_fraction) AS held
    FROM marts.gpu_hourly AS g
    WHERE workload_namespace IS NOT NULL AND day >= $first AND day <= $last
      AND EXISTS (SELECT 1 FROM util_gpu_days AS u WHERE u.cluster = g.cluster AND u.day = g.day)
    GROUP BY ALL
),
tops AS (
    SELECT cluster, gpu_uuid, day,
           arg_max(workload_namespace, (held, workload_namespace)) AS top_namespace,
           max(held) AS top_namespace_gpu_hours
    FROM namespaces
    GROUP BY ALL
)
SELECT
    g.cluster,
    g.gpu_uuid,
    g.day,
    arg_max(g.node_name, g.hour) AS node_name,
    arg_max(g.nvml_device_name, g.hour) AS nvml_device_name,
    arg_max(g.gpu_model, g.hour) AS gpu_model,
    count(*) AS hours_reporting,
    CAST(sum(g.samples) AS BIGINT) AS samples,
    avg(g.busy) AS busy,
    count(g.busy) AS busy_hours,
    avg(g.sm_active) AS sm_active,
    avg(g.tensor_active) AS tensor_active,
    avg(g.dram_active) AS dram_active,
    avg(g.power_watts) AS power_watts,
    sum(coalesce(g.energy_joules, g.energy_estimated_joules)) AS energy_joules,
    sum(g.energy_estimated_joules) FILTER (WHERE g.energy_joules IS NULL)
        AS energy_estimated_joules,
    max(g.max_gpu_temp_c) AS max_gpu_temp_c,
    avg(g.mean_sm_clock_mhz) AS mean_sm_clock_mhz,
    arg_max(g.xid_last, g.hour) FILTER (WHERE g.xid_last IS NOT NULL) AS xid_last,
    CAST(sum(g.xid_samples) AS BIGINT) AS xid_samples,
    max(g.uncorrectable_remapped_rows_max) AS uncorrectable_remapped_rows_max,
    max(g.correctable_remapped_rows_max) AS correctable_remapped_rows_max,
    max(g.row_remap_failure_max) AS row_remap_failure_max,
    coalesce(sum(g.pod_label_fraction) FILTER (WHERE g.pod_category = 'workload'), 0)
        AS dcgm_allocated_gpu_hours,
    coalesce(sum(g.pod_label_fraction)
                 FILTER (WHERE g.pod_category = 'workload' AND g.busy < {idle_busy_threshold}), 0)
        AS allocated_idle_gpu_hours,
    any_value(t.top_namespace) AS top_namespace,
    any_value(t.top_namespace_gpu_hours) AS top_namespace_gpu_hours,
    CAST($now AS TIMESTAMP) AS refreshed_at
FROM marts.gpu_hourly AS g
LEFT JOIN tops AS t USING (cluster, gpu_uuid, day)
WHERE g.day >= $first AND g.day <= $last
  AND EXISTS (SELECT 1 FROM util_gpu_days AS u WHERE u.cluster = g.cluster AND u.day = g.day)
GROUP BY g.cluster, g.gpu_uuid, g.day

-- The pod-node-days (migration 0011) of the (cluster, day)s in util_pod_days, $first..$last,
-- summed whole from marts.gpu_hourly after delete_gpu_pod_daily.sql, with exact_sum
-- (create_exact_sum.sql) so a day rebuilt from the same GPU-hours gives the same figures to the
-- last bit. Run by warehouse/models/utilisation.py.
INSERT INTO marts.gpu_pod_daily BY NAME
SELECT
    g.cluster,
    g.day,
    g.workload_namespace,
    g.workload_pod,
    g.node_name,
    list_sort(list_distinct(list(g.gpu_uuid))) AS gpu_uuids,
    min(g.hour) AS first_hour,
    max(g.hour) AS last_hour,
    count(*) AS gpu_hour_rows,
    exact_sum(g.pod_label_fraction) AS labelled_gpu_hours,
    exact_sum(CASE WHEN g.tensor_active IS NOT NULL THEN g.pod_label_fraction END)
        AS tensor_gpu_hours,
    exact_sum(g.tensor_active * g.pod_label_fraction) AS tensor_active_gpu_hours,
    exact_sum(CASE WHEN g.busy IS NOT NULL THEN g.pod_label_fraction END) AS busy_gpu_hours,
    exact_sum(g.busy * g.pod_label_fraction) AS busy_active_gpu_hours,
    exact_sum(CASE WHEN coalesce(g.energy_joules, g.energy_estimated_joules) IS NOT NULL
                   THEN g.pod_label_fraction END) AS energy_gpu_hours,
    exact_sum(coalesce(g.energy_joules, g.energy_estimated_joules) * g.pod_label_fraction)
        AS energy_joules,
    CAST($now AS TIMESTAMP) AS refreshed_at
FROM marts.gpu_hourly AS g
WHERE g.day >= $first AND g.day <= $last
  AND g.workload_pod IS NOT NULL AND g.workload_namespace IS NOT NULL AND g.node_name IS NOT NULL
  AND EXISTS (SELECT 1 FROM util_pod_days AS u WHERE u.cluster = g.cluster AND u.day = g.day)
GROUP BY g.cluster, g.day, g.workload_namespace, g.workload_pod, g.node_name

-- marts.gpu_hours_daily_by_namespace: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.gpu_hours_daily_by_namespace AS
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
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.namespace IS
    'Kubernetes namespace (the team).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.day IS
    'UTC date.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.allocated_workload_gpu_hours IS
    'Σ GPU-hours held by the namespace''s workload pods (inventory intervals).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.allocated_balloon_gpu_hours IS
    'Σ GPU-hours held by its balloon (placeholder) pods.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.dcgm_allocated_gpu_hours IS
    'Σ GPU-hours its workload pods held by the DCGM pod-label proxy.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.allocated_idle_gpu_hours IS
    'Σ allocated-but-idle GPU-hours compared with the inventory: its workload GPU-hours with busy < 0.05 on nodes the inventory observed, each hour at most the namespace''s inventory allocation; never above allocated_workload_gpu_hours or allocated_observed_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.allocated_observed_gpu_hours IS
    'Σ allocated GPU-hours both sources saw (per hour the smaller of the inventory''s and the DCGM pod labels'' on observed nodes): the base of the team''s idle share.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.telemetry_only_gpu_hours IS
    'Σ its DCGM-allocated GPU-hours on nodes the inventory did not observe: not compared with its allocation.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.telemetry_only_idle_gpu_hours IS
    'Σ idle GPU-hours by DCGM alone in those hours: shown apart, never in allocated_idle_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.busy IS
    'Mean busy of its GPU-hours, weighted by pod_label_fraction.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.sm_active IS
    'Mean sm_active of its GPU-hours, weighted by pod_label_fraction.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.tensor_active IS
    'Mean tensor_active of its GPU-hours, weighted by pod_label_fraction.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.dram_active IS
    'Mean dram_active of its GPU-hours, weighted by pod_label_fraction.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.energy_mwh IS
    'GPU energy attributed by pod label (energy × pod_label_fraction), MWh.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_namespace.energy_estimated_mwh IS
    'The part of energy_mwh from the power-gauge estimate.';

-- marts.gpu_hours_daily_by_pool: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.gpu_hours_daily_by_pool AS
SELECT
    cluster,
    coalesce(node_pool, 'unknown') AS node_pool,
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
GROUP BY cluster, coalesce(node_pool, 'unknown'), day;

COMMENT ON VIEW marts.gpu_hours_daily_by_pool IS
    'marts.node_gpu_hours summed per node pool and UTC day (the pool of each node-hour): capacity = allocated_workload + allocated_balloon + free + unavailable GPU-hours (inventory), the DCGM allocation proxy, allocated-but-idle GPU-hours, activity means weighted by GPU-hours, energy. Hourly: GROUP BY node_pool, hour on marts.node_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.node_pool IS
    'Node pool (core.nodes.node_pool); unknown when unlabelled or seen only by telemetry.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.day IS
    'UTC date.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.nodes IS
    'Nodes of the pool the inventory observed that day.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.capacity_gpu_hours IS
    'Σ capacity GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocatable_gpu_hours IS
    'Σ allocatable GPU-hours (inventory).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocated_workload_gpu_hours IS
    'Σ GPU-hours held by workload pods (inventory intervals).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocated_balloon_gpu_hours IS
    'Σ GPU-hours held by balloon (placeholder) pods: reserved, not idle.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.free_gpu_hours IS
    'Σ free GPU-hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.unavailable_gpu_hours IS
    'Σ unavailable GPU-hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocated_workload_share IS
    'allocated_workload_gpu_hours / capacity_gpu_hours: allocation, not utilisation; NULL without capacity.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.telemetry_gpu_hours IS
    'GPU-hours with DCGM samples.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.dcgm_allocated_gpu_hours IS
    'Σ DCGM allocation proxy GPU-hours (workload pod labels).';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocated_idle_gpu_hours IS
    'Σ allocated-but-idle GPU-hours compared with the inventory: workload-labelled GPU-hours with busy < 0.05 (engine active under 5 % of the hour) on node-hours the inventory observed, each node-hour at most its inventory allocation; never above allocated_workload_gpu_hours or allocated_observed_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.allocated_observed_gpu_hours IS
    'Σ allocated GPU-hours both sources saw (per hour the smaller of the inventory''s and the DCGM pod labels'', on observed node-hours): the base of the idle share.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.telemetry_only_gpu_hours IS
    'Σ telemetry GPU-hours on node-hours the inventory did not observe: not compared with allocation or capacity. Non-zero on a day without capacity: the day has telemetry only.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.telemetry_only_idle_gpu_hours IS
    'Σ idle GPU-hours by DCGM alone in those telemetry-only hours: shown apart, never in allocated_idle_gpu_hours.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.busy IS
    'Mean busy (gr_engine_active, or gpu_util without it) over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.sm_active IS
    'Mean sm_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.tensor_active IS
    'Mean tensor_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.dram_active IS
    'Mean dram_active over the GPU-hours with a value.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.energy_mwh IS
    'Σ GPU energy (counter, else power estimate), MWh.';
COMMENT ON COLUMN marts.gpu_hours_daily_by_pool.energy_estimated_mwh IS
    'The part of energy_mwh from the power-gauge estimate.';

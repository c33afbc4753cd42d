-- marts.gpu_daily becomes a table (it was a view over marts.gpu_hourly): the fleet report's
-- allocated-but-idle GPUs and an analyst's per-GPU daily figures over a month read 1.9 million
-- rows instead of aggregating 45 million GPU-hours each time. refresh_gpu_hourly rebuilds the
-- (cluster, day)s of the hours it rebuilds (warehouse/models/utilisation.py), both the telemetry
-- hours and the inventory hours (whose pod categories it may change). Two columns are new:
-- busy_hours and top_namespace_gpu_hours, so figures over several days combine exactly.

DROP VIEW marts.gpu_daily;

CREATE TABLE marts.gpu_daily (
    cluster VARCHAR NOT NULL,
    gpu_uuid VARCHAR NOT NULL,
    day DATE NOT NULL,
    node_name VARCHAR,
    gpu_model VARCHAR,
    hours_reporting BIGINT NOT NULL,
    samples BIGINT,
    busy DOUBLE,
    busy_hours BIGINT NOT NULL,
    sm_active DOUBLE,
    tensor_active DOUBLE,
    dram_active DOUBLE,
    power_watts DOUBLE,
    energy_joules DOUBLE,
    energy_estimated_joules DOUBLE,
    max_gpu_temp_c DOUBLE,
    mean_sm_clock_mhz DOUBLE,
    xid_last INTEGER,
    xid_samples BIGINT,
    uncorrectable_remapped_rows_max BIGINT,
    correctable_remapped_rows_max BIGINT,
    row_remap_failure_max BIGINT,
    dcgm_allocated_gpu_hours DOUBLE NOT NULL,
    allocated_idle_gpu_hours DOUBLE NOT NULL,
    top_namespace VARCHAR,
    top_namespace_gpu_hours DOUBLE,
    refreshed_at TIMESTAMP NOT NULL
);

INSERT INTO marts.gpu_daily BY NAME
WITH namespaces AS (
    SELECT cluster, gpu_uuid, day, workload_namespace, sum(pod_label_fraction) AS held
    FROM marts.gpu_hourly
    WHERE workload_namespace IS NOT NULL
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
                 FILTER (WHERE g.pod_category = 'workload' AND g.busy < 0.05), 0)
        AS allocated_idle_gpu_hours,
    any_value(t.top_namespace) AS top_namespace,
    any_value(t.top_namespace_gpu_hours) AS top_namespace_gpu_hours,
    CAST(now() AS TIMESTAMP) AS refreshed_at
FROM marts.gpu_hourly AS g
LEFT JOIN tops AS t USING (cluster, gpu_uuid, day)
GROUP BY g.cluster, g.gpu_uuid, g.day;

COMMENT ON TABLE marts.gpu_daily IS
    'DCGM telemetry per GPU and UTC day, from marts.gpu_hourly: a table since migration 0013, rebuilt for the days refresh_gpu_hourly touches (a month of a 60,000-GPU fleet is 1.9 million rows here against 45 million GPU-hours to aggregate on every query). Means are means of the hourly means over the hours that have a value (each reporting hour weighs the same). Telemetry only: busy is engine activity (liveness), allocation comes from the pod labels (proxy), not MFU.';
COMMENT ON COLUMN marts.gpu_daily.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_daily.gpu_uuid IS 'GPU UUID.';
COMMENT ON COLUMN marts.gpu_daily.day IS 'UTC date.';
COMMENT ON COLUMN marts.gpu_daily.node_name IS 'Node of the GPU''s latest hour of the day.';
COMMENT ON COLUMN marts.gpu_daily.gpu_model IS 'DCGM modelName of its latest hour of the day.';
COMMENT ON COLUMN marts.gpu_daily.hours_reporting IS 'Hours of the day with samples of the GPU (at most 24).';
COMMENT ON COLUMN marts.gpu_daily.samples IS 'Σ gpu_hourly.samples: samples of the busy signal.';
COMMENT ON COLUMN marts.gpu_daily.busy IS 'Mean of the hourly busy (gr_engine_active, or gpu_util without it) over busy_hours, ratio 0-1.';
COMMENT ON COLUMN marts.gpu_daily.sm_active IS 'Mean of the hourly sm_active, ratio 0-1.';
COMMENT ON COLUMN marts.gpu_daily.tensor_active IS 'Mean of the hourly tensor_active, ratio 0-1.';
COMMENT ON COLUMN marts.gpu_daily.dram_active IS 'Mean of the hourly dram_active, ratio 0-1.';
COMMENT ON COLUMN marts.gpu_daily.power_watts IS 'Mean of the hourly mean power, watts.';
COMMENT ON COLUMN marts.gpu_daily.energy_joules IS 'Σ over the hours of energy_joules (counter increases), or energy_estimated_joules (power × time) in hours without counter increases.';
COMMENT ON COLUMN marts.gpu_daily.energy_estimated_joules IS 'The part of energy_joules that came from the power estimate; NULL when none did.';
COMMENT ON COLUMN marts.gpu_daily.max_gpu_temp_c IS 'Highest GPU temperature sample of the day, degrees Celsius.';
COMMENT ON COLUMN marts.gpu_daily.mean_sm_clock_mhz IS 'Mean of the hourly mean SM clock, MHz.';
COMMENT ON COLUMN marts.gpu_daily.xid_last IS 'xid_last of the latest hour of the day that showed a non-zero XID code; NULL when none.';
COMMENT ON COLUMN marts.gpu_daily.xid_samples IS 'Samples of the day showing a non-zero XID code.';
COMMENT ON COLUMN marts.gpu_daily.uncorrectable_remapped_rows_max IS 'Highest uncorrectable remapped rows count of the day.';
COMMENT ON COLUMN marts.gpu_daily.correctable_remapped_rows_max IS 'Highest correctable remapped rows count of the day.';
COMMENT ON COLUMN marts.gpu_daily.row_remap_failure_max IS 'Highest row remap failure flag of the day (1 = failed).';
COMMENT ON COLUMN marts.gpu_daily.dcgm_allocated_gpu_hours IS 'Σ pod_label_fraction over the hours whose pod_category is workload: hours the GPU was held by a workload pod, by the DCGM pod-label proxy (balloons excluded).';
COMMENT ON COLUMN marts.gpu_daily.allocated_idle_gpu_hours IS 'Of those, the hours whose busy < 0.05 (engine active under 5 % of the hour): allocated but idle.';
COMMENT ON COLUMN marts.gpu_daily.top_namespace IS 'The workload_namespace with the most pod-labelled hours of the day (ties: the greater name); NULL when none.';
COMMENT ON COLUMN marts.gpu_daily.top_namespace_gpu_hours IS 'The pod-labelled GPU-hours of top_namespace that day (to find a period''s top namespace: sum it per namespace over the days).';
COMMENT ON COLUMN marts.gpu_daily.busy_hours IS 'Hours of the day with a busy value (the weight of busy: a period''s mean is Σ busy × busy_hours / Σ busy_hours).';
COMMENT ON COLUMN marts.gpu_daily.refreshed_at IS 'When refresh_gpu_hourly last rebuilt the day (UTC).';

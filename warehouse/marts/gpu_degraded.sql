-- marts.gpu_degraded: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.gpu_degraded AS
WITH sweep AS (
    SELECT
        *,
        coalesce(gpu_model, nvml_device_name) AS cohort_gpu,
        CASE WHEN benchmark = 'gemm' THEN 'achieved_tflops' ELSE 'achieved_gbps' END AS metric,
        CASE WHEN benchmark = 'gemm' THEN achieved_tflops ELSE achieved_gbps END AS value
    FROM marts.gpu_benchmark_summary
),
recent AS (
    SELECT *
    FROM sweep
    WHERE value IS NOT NULL
    QUALIFY measured_at >= max(measured_at) OVER (
        PARTITION BY cluster, benchmark, shape, dtype, cohort_gpu, triton_version
    ) - INTERVAL 7 DAY
),
cohorts AS (
    SELECT
        *,
        count(*) OVER cohort AS cohort_gpus,
        median(value) OVER cohort AS cohort_median,
        mad(value) OVER cohort AS cohort_mad
    FROM recent
    WINDOW cohort AS (PARTITION BY cluster, benchmark, shape, dtype, cohort_gpu, triton_version)
),
clocks AS (
    SELECT c.cluster, c.record_id, avg(h.mean_sm_clock_mhz) AS sm_clock_mhz
    FROM cohorts AS c
    JOIN marts.gpu_hourly AS h
        ON h.cluster = c.cluster AND h.gpu_uuid = c.gpu_uuid
        AND h.hour BETWEEN date_trunc('hour', c.measured_at) - INTERVAL 1 HOUR
            AND date_trunc('hour', c.measured_at) + INTERVAL 1 HOUR
    WHERE c.cohort_gpus >= 5
    GROUP BY c.cluster, c.record_id
),
flagged AS (
    SELECT
        c.*,
        greatest(c.cohort_median - 3 * 1.4826 * c.cohort_mad, 0.9 * c.cohort_median)
            AS threshold,
        k.sm_clock_mhz,
        median(k.sm_clock_mhz) OVER (
            PARTITION BY c.cluster, c.benchmark, c.shape, c.dtype, c.cohort_gpu, c.triton_version
        ) AS cohort_median_sm_clock_mhz
    FROM cohorts AS c
    LEFT JOIN clocks AS k ON k.cluster = c.cluster AND k.record_id = c.record_id
    WHERE c.cohort_gpus >= 5
    QUALIFY c.value < greatest(c.cohort_median - 3 * 1.4826 * c.cohort_mad, 0.9 * c.cohort_median)
),
evidence AS (
    SELECT
        f.cluster,
        f.record_id,
        count(h.hour) AS telemetry_hours,
        max(h.max_gpu_temp_c) AS max_gpu_temp_c,
        arg_max(h.xid_last, h.hour) FILTER (WHERE h.xid_last IS NOT NULL) AS xid_last,
        CAST(sum(h.xid_samples) AS BIGINT) AS xid_samples,
        max(h.uncorrectable_remapped_rows_max) AS uncorrectable_remapped_rows_max,
        max(h.row_remap_failure_max) AS row_remap_failure_max
    FROM flagged AS f
    LEFT JOIN marts.gpu_hourly AS h
        ON h.cluster = f.cluster AND h.gpu_uuid = f.gpu_uuid
        AND h.hour BETWEEN date_trunc('hour', f.measured_at) - INTERVAL 24 HOUR
            AND date_trunc('hour', f.measured_at) + INTERVAL 1 HOUR
    GROUP BY f.cluster, f.record_id
),
verdicts AS (
    SELECT
        f.*,
        e.telemetry_hours,
        e.max_gpu_temp_c,
        e.xid_last,
        e.xid_samples,
        e.uncorrectable_remapped_rows_max,
        e.row_remap_failure_max,
        f.sm_clock_mhz / nullif(f.cohort_median_sm_clock_mhz, 0) AS sm_clock_ratio,
        CASE
            WHEN e.xid_last IS NOT NULL THEN 'XID errors'
            WHEN e.max_gpu_temp_c >= 85 THEN 'hot'
            WHEN f.sm_clock_mhz < 0.9 * f.cohort_median_sm_clock_mhz
                THEN 'slow (clock-throttled)'
            ELSE 'slow, no telemetry corroboration'
        END AS verdict
    FROM flagged AS f
    JOIN evidence AS e ON e.cluster = f.cluster AND e.record_id = f.record_id
)
SELECT
    cluster,
    gpu_uuid,
    node_name,
    gpu_model,
    nvml_device_name,
    benchmark,
    shape,
    dtype,
    triton_version,
    measured_at,
    record_id,
    metric,
    value,
    cohort_gpus,
    cohort_median,
    cohort_mad,
    threshold,
    value / nullif(cohort_median, 0) AS ratio_to_median,
    value < cohort_median - 3 * 1.4826 * cohort_mad AS below_mad_rule,
    value < 0.9 * cohort_median AS below_ratio_rule,
    telemetry_hours,
    sm_clock_mhz,
    cohort_median_sm_clock_mhz,
    sm_clock_ratio,
    max_gpu_temp_c,
    xid_last,
    xid_samples,
    uncorrectable_remapped_rows_max,
    row_remap_failure_max,
    verdict <> 'slow, no telemetry corroboration' AS corroborated,
    verdict
FROM verdicts;

COMMENT ON VIEW marts.gpu_degraded IS
    'GPUs slower than their peers (reference §5.2), with the evidence. The latest sweep: each GPU''s latest valid measurement per benchmark, shape and dtype (marts.gpu_benchmark_summary), kept when at most 7 days older than its cohort''s newest. Cohort: same cluster, benchmark, shape, dtype, GPU SKU and Triton version; only cohorts of at least 5 GPUs are judged. A GPU is listed when its throughput (achieved_tflops for gemm, achieved_gbps for the memory-bound copy, triad, softmax, layernorm) is below cohort median − 3 × 1.4826 × MAD or below 0.9 × median; then DCGM telemetry (marts.gpu_hourly) around the measurement says why. One row per flagged measurement.';
COMMENT ON COLUMN marts.gpu_degraded.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_degraded.gpu_uuid IS
    'The slow GPU.';
COMMENT ON COLUMN marts.gpu_degraded.node_name IS
    'Node it was measured on.';
COMMENT ON COLUMN marts.gpu_degraded.gpu_model IS
    'Canonical GPU model matched at ingest; NULL when annex does not know it (the cohort is then the GPUs of the same nvml_device_name).';
COMMENT ON COLUMN marts.gpu_degraded.nvml_device_name IS
    'NVML device name the probe saw (torch), e.g. NVIDIA H100 80GB HBM3.';
COMMENT ON COLUMN marts.gpu_degraded.benchmark IS
    'Benchmark of the measurement.';
COMMENT ON COLUMN marts.gpu_degraded.shape IS
    'Problem shape (JSON text as recorded).';
COMMENT ON COLUMN marts.gpu_degraded.dtype IS
    'Element type.';
COMMENT ON COLUMN marts.gpu_degraded.triton_version IS
    'Triton version (part of the cohort: compilers change kernel speed).';
COMMENT ON COLUMN marts.gpu_degraded.measured_at IS
    'When the measurement was taken (UTC).';
COMMENT ON COLUMN marts.gpu_degraded.record_id IS
    'The measurement (core.gpu_benchmarks.record_id).';
COMMENT ON COLUMN marts.gpu_degraded.metric IS
    'Which throughput is judged: achieved_tflops (gemm) or achieved_gbps (memory-bound benchmarks).';
COMMENT ON COLUMN marts.gpu_degraded.value IS
    'The GPU''s throughput in that metric (TFLOP/s or GB/s).';
COMMENT ON COLUMN marts.gpu_degraded.cohort_gpus IS
    'GPUs in the cohort (at least 5).';
COMMENT ON COLUMN marts.gpu_degraded.cohort_median IS
    'Median throughput of the cohort.';
COMMENT ON COLUMN marts.gpu_degraded.cohort_mad IS
    'Median absolute deviation of the cohort''s throughput from its median (unscaled; 1.4826 × MAD estimates the standard deviation).';
COMMENT ON COLUMN marts.gpu_degraded.threshold IS
    'max(cohort_median − 3 × 1.4826 × cohort_mad, 0.9 × cohort_median): values below it are flagged.';
COMMENT ON COLUMN marts.gpu_degraded.ratio_to_median IS
    'value / cohort_median.';
COMMENT ON COLUMN marts.gpu_degraded.below_mad_rule IS
    'value < cohort_median − 3 × 1.4826 × cohort_mad (a robust 3-sigma outlier).';
COMMENT ON COLUMN marts.gpu_degraded.below_ratio_rule IS
    'value < 0.9 × cohort_median (more than 10 % slow).';
COMMENT ON COLUMN marts.gpu_degraded.telemetry_hours IS
    'Hours of marts.gpu_hourly for the GPU from 24 h before to 1 h after the measurement''s hour (the evidence window of the columns below); 0 = no telemetry.';
COMMENT ON COLUMN marts.gpu_degraded.sm_clock_mhz IS
    'Mean of the GPU''s hourly mean SM clock in the hour of the measurement and the hours before and after, MHz.';
COMMENT ON COLUMN marts.gpu_degraded.cohort_median_sm_clock_mhz IS
    'Median of sm_clock_mhz (same hours around each GPU''s own measurement) over the cohort''s GPUs.';
COMMENT ON COLUMN marts.gpu_degraded.sm_clock_ratio IS
    'sm_clock_mhz / cohort_median_sm_clock_mhz; below 0.9 counts as clock-throttled.';
COMMENT ON COLUMN marts.gpu_degraded.max_gpu_temp_c IS
    'Highest GPU temperature in the evidence window, degrees Celsius; 85 or more counts as hot.';
COMMENT ON COLUMN marts.gpu_degraded.xid_last IS
    'Latest non-zero XID code in the evidence window (e.g. 13, 31, 48, 79); NULL when none.';
COMMENT ON COLUMN marts.gpu_degraded.xid_samples IS
    'Samples in the evidence window showing a non-zero XID code.';
COMMENT ON COLUMN marts.gpu_degraded.uncorrectable_remapped_rows_max IS
    'Highest uncorrectable remapped rows count in the evidence window.';
COMMENT ON COLUMN marts.gpu_degraded.row_remap_failure_max IS
    'Highest row remap failure flag in the evidence window (1 = replace the GPU).';
COMMENT ON COLUMN marts.gpu_degraded.corroborated IS
    'Whether telemetry explains the slowness (verdict other than slow, no telemetry corroboration).';
COMMENT ON COLUMN marts.gpu_degraded.verdict IS
    'First that applies: XID errors (a non-zero XID in the evidence window); hot (max_gpu_temp_c >= 85); slow (clock-throttled) (sm_clock_ratio < 0.9); else slow, no telemetry corroboration (rerun the benchmark, check NVLink/PCIe and HBM).';

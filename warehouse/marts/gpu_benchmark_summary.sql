-- marts.gpu_benchmark_summary: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.gpu_benchmark_summary AS
WITH valid AS (
    SELECT *
    FROM core.gpu_benchmarks
    WHERE backend IS DISTINCT FROM 'interpreter'
      AND correct IS DISTINCT FROM false
      AND gpu_uuid IS NOT NULL
),
latest AS (
    SELECT
        *,
        count(*) OVER (PARTITION BY cluster, gpu_uuid, benchmark, dtype, shape) AS measurements
    FROM valid
    QUALIFY row_number() OVER (
        PARTITION BY cluster, gpu_uuid, benchmark, dtype, shape ORDER BY ts DESC, record_id DESC
    ) = 1
),
hbm AS (
    SELECT gpu_model, max(peak_hbm_gbps) AS peak_hbm_gbps
    FROM core.gpu_peak_reference
    GROUP BY gpu_model
)
SELECT
    l.cluster,
    l.gpu_uuid,
    l.benchmark,
    l.dtype,
    l.shape,
    l.node_name,
    l.nvml_device_name,
    l.gpu_model,
    l.backend,
    l.triton_version,
    l.ts AS measured_at,
    l.record_id,
    l.measurements,
    l.achieved_tflops,
    l.achieved_gbps,
    p.peak_tflops_dense AS peak_tflops,
    h.peak_hbm_gbps AS peak_gbps,
    l.achieved_tflops / nullif(p.peak_tflops_dense, 0) AS frac_peak_flops,
    l.achieved_gbps / nullif(h.peak_hbm_gbps, 0) AS frac_peak_bw,
    coalesce(l.simulated, false) AS simulated
FROM latest AS l
LEFT JOIN core.gpu_peak_reference AS p ON p.gpu_model = l.gpu_model AND p.dtype = l.dtype
LEFT JOIN hbm AS h ON h.gpu_model = l.gpu_model;

COMMENT ON VIEW marts.gpu_benchmark_summary IS
    'Per GPU, benchmark, dtype and shape: the latest valid Triton probe measurement (backend interpreter and correct = false excluded) with its fraction of the dense peak from core.gpu_peak_reference. Kernel throughput, not MFU.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.gpu_uuid IS
    'GPU UUID (joins marts.gpu_hourly).';
COMMENT ON COLUMN marts.gpu_benchmark_summary.benchmark IS
    'gemm, copy, triad, softmax or layernorm.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.dtype IS
    'Element type of the measurement.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.shape IS
    'Problem shape (JSON text as recorded).';
COMMENT ON COLUMN marts.gpu_benchmark_summary.node_name IS
    'Node of the latest measurement.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.nvml_device_name IS
    'NVML device name the probe saw (torch), e.g. NVIDIA H100 80GB HBM3.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.gpu_model IS
    'Canonical GPU model matched at ingest (annex''s SKU key); NULL when annex has no peak for it.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.backend IS
    'cuda or hip.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.triton_version IS
    'Triton version of the latest measurement.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.measured_at IS
    'When the latest measurement was taken (UTC).';
COMMENT ON COLUMN marts.gpu_benchmark_summary.record_id IS
    'record_id of the latest measurement (core.gpu_benchmarks).';
COMMENT ON COLUMN marts.gpu_benchmark_summary.measurements IS
    'Valid measurements of this GPU, benchmark, dtype and shape ever loaded.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.achieved_tflops IS
    'Achieved TFLOP/s of the latest measurement (flops / p50 time, recomputed at ingest).';
COMMENT ON COLUMN marts.gpu_benchmark_summary.achieved_gbps IS
    'Achieved GB/s of the latest measurement (bytes / p50 time).';
COMMENT ON COLUMN marts.gpu_benchmark_summary.peak_tflops IS
    'Dense peak TFLOP/s of the SKU for the dtype (core.gpu_peak_reference); NULL when unknown.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.peak_gbps IS
    'Peak HBM GB/s of the SKU (core.gpu_peak_reference); NULL when unknown.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.frac_peak_flops IS
    'achieved_tflops / peak_tflops: compute-bound kernels'' (gemm) fraction of peak.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.frac_peak_bw IS
    'achieved_gbps / peak_gbps: memory-bound kernels'' (copy, triad, softmax, layernorm) fraction of peak.';
COMMENT ON COLUMN marts.gpu_benchmark_summary.simulated IS
    'True when the measurement came from annex''s simulator.';

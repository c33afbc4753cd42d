-- 0004 GPU evidence: benchmark records from the Triton probes, DCGM telemetry (long form,
-- compact), the peak reference, and the audit of every exporter scrape or Prometheus window.
-- Never edit this file once applied anywhere: add a new migration instead.

CREATE TABLE core.gpu_peak_reference (
    gpu_sku VARCHAR NOT NULL,
    dtype VARCHAR NOT NULL,
    peak_tflops_dense DOUBLE,
    peak_hbm_gbps DOUBLE,
    tdp_watts DOUBLE,
    source_url VARCHAR,
    updated_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE core.gpu_peak_reference IS
    'Dense peak throughput per GPU SKU and dtype (NVIDIA headline tensor figures are 2:4-sparse, i.e. twice these). The yardstick for every fraction of peak; refreshed from annex''s own table (probes/gpubench/peaks.py) by each benchmark collection.';
COMMENT ON COLUMN core.gpu_peak_reference.gpu_sku IS 'GPU SKU, e.g. H100-SXM5-80GB (PCIe and NVL parts are other SKUs).';
COMMENT ON COLUMN core.gpu_peak_reference.dtype IS 'Data type of the peak: bf16, fp16, fp8, tf32 or fp32.';
COMMENT ON COLUMN core.gpu_peak_reference.peak_tflops_dense IS 'Dense peak in TFLOP/s (tensor cores; fp32 is the vector rate).';
COMMENT ON COLUMN core.gpu_peak_reference.peak_hbm_gbps IS 'Peak HBM bandwidth in GB/s (10^9 bytes per second).';
COMMENT ON COLUMN core.gpu_peak_reference.tdp_watts IS 'Thermal design power in watts (the TDP-based energy fallback).';
COMMENT ON COLUMN core.gpu_peak_reference.source_url IS 'Where the figures come from.';
COMMENT ON COLUMN core.gpu_peak_reference.updated_at IS 'When a collection last wrote this row (UTC).';

CREATE TABLE core.gpu_benchmarks (
    cluster VARCHAR NOT NULL,
    record_id VARCHAR NOT NULL,
    schema_version INTEGER,
    ts TIMESTAMP NOT NULL,
    namespace VARCHAR,
    job VARCHAR,
    pod VARCHAR,
    pod_uid VARCHAR,
    node VARCHAR,
    gpu_index INTEGER,
    gpu_uuid VARCHAR,
    gpu_model VARCHAR,
    gpu_sku VARCHAR,
    driver_version VARCHAR,
    backend VARCHAR,
    triton_version VARCHAR,
    torch_version VARCHAR,
    benchmark VARCHAR NOT NULL,
    kernel VARCHAR,
    kernel_config VARCHAR,
    shape VARCHAR,
    dtype VARCHAR,
    timer VARCHAR,
    warmup_ms DOUBLE,
    rep_ms DOUBLE,
    l2_flush BOOLEAN,
    n_samples INTEGER,
    ms_p20 DOUBLE,
    ms_p50 DOUBLE,
    ms_p80 DOUBLE,
    flops DOUBLE,
    bytes DOUBLE,
    achieved_tflops DOUBLE,
    achieved_gbps DOUBLE,
    peak_tflops DOUBLE,
    peak_gbps DOUBLE,
    peak_source VARCHAR,
    frac_peak_flops DOUBLE,
    frac_peak_bw DOUBLE,
    correct BOOLEAN,
    simulated BOOLEAN,
    locator VARCHAR,
    collection_id VARCHAR NOT NULL,
    loaded_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE core.gpu_benchmarks IS
    'One row per benchmark measurement printed by a Triton probe pod (record format of reference §5.1), read from the pod''s log. Unique by record_id. flops, bytes, achieved_* and the peak fractions are recomputed at ingest from the shape, dtype and p50 time, never taken from the record. backend = interpreter rows come from tests and are excluded from every mart.';
COMMENT ON COLUMN core.gpu_benchmarks.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN core.gpu_benchmarks.record_id IS 'The record''s own UUID: loading the same record twice keeps one row.';
COMMENT ON COLUMN core.gpu_benchmarks.schema_version IS 'Record format version (1).';
COMMENT ON COLUMN core.gpu_benchmarks.ts IS 'When the measurement was taken (UTC), as the probe reported it.';
COMMENT ON COLUMN core.gpu_benchmarks.namespace IS 'Namespace of the probe pod.';
COMMENT ON COLUMN core.gpu_benchmarks.job IS 'The probe Job.';
COMMENT ON COLUMN core.gpu_benchmarks.pod IS 'The probe pod whose log carried the record.';
COMMENT ON COLUMN core.gpu_benchmarks.pod_uid IS 'metadata.uid of that pod.';
COMMENT ON COLUMN core.gpu_benchmarks.node IS 'Node the probe ran on (checked against the pod''s spec.nodeName).';
COMMENT ON COLUMN core.gpu_benchmarks.gpu_index IS 'CUDA device index on the node.';
COMMENT ON COLUMN core.gpu_benchmarks.gpu_uuid IS 'GPU UUID (joins DCGM telemetry''s UUID label, core.gpu_telemetry_series.gpu_uuid).';
COMMENT ON COLUMN core.gpu_benchmarks.gpu_model IS 'GPU product name as the probe saw it.';
COMMENT ON COLUMN core.gpu_benchmarks.gpu_sku IS 'SKU matched from gpu_model at ingest (core.gpu_peak_reference); NULL when annex has no peak for it.';
COMMENT ON COLUMN core.gpu_benchmarks.driver_version IS 'NVIDIA driver version reported by the probe.';
COMMENT ON COLUMN core.gpu_benchmarks.backend IS 'cuda, hip, or interpreter (Triton''s CPU interpreter: test-only, excluded from marts).';
COMMENT ON COLUMN core.gpu_benchmarks.triton_version IS 'Triton version of the probe.';
COMMENT ON COLUMN core.gpu_benchmarks.torch_version IS 'torch version of the probe (its reference implementation).';
COMMENT ON COLUMN core.gpu_benchmarks.benchmark IS 'gemm, copy, triad, softmax or layernorm.';
COMMENT ON COLUMN core.gpu_benchmarks.kernel IS 'Kernel name with its shape, as launched.';
COMMENT ON COLUMN core.gpu_benchmarks.kernel_config IS 'Tile sizes, warps and stages of the kernel (JSON text).';
COMMENT ON COLUMN core.gpu_benchmarks.shape IS 'Problem shape (JSON text, e.g. {"M":8192,"N":8192,"K":8192}).';
COMMENT ON COLUMN core.gpu_benchmarks.dtype IS 'Element type: bf16, fp8, fp16, fp32.';
COMMENT ON COLUMN core.gpu_benchmarks.timer IS 'triton.testing.do_bench (GPU stream time, L2 flushed) or perf_counter (interpreter).';
COMMENT ON COLUMN core.gpu_benchmarks.warmup_ms IS 'Warm-up budget of do_bench in milliseconds of run time.';
COMMENT ON COLUMN core.gpu_benchmarks.rep_ms IS 'Measurement budget of do_bench in milliseconds of run time.';
COMMENT ON COLUMN core.gpu_benchmarks.l2_flush IS 'Whether L2 was flushed before every timed call.';
COMMENT ON COLUMN core.gpu_benchmarks.n_samples IS 'Timed calls behind the quantiles, when reported.';
COMMENT ON COLUMN core.gpu_benchmarks.ms_p20 IS '20th percentile of the per-call time, milliseconds.';
COMMENT ON COLUMN core.gpu_benchmarks.ms_p50 IS 'Median per-call time, milliseconds: the basis of achieved_*.';
COMMENT ON COLUMN core.gpu_benchmarks.ms_p80 IS '80th percentile of the per-call time, milliseconds.';
COMMENT ON COLUMN core.gpu_benchmarks.flops IS 'Floating-point operations of one call, from annex''s work(shape, dtype) (GEMM: 2MNK).';
COMMENT ON COLUMN core.gpu_benchmarks.bytes IS 'Bytes one call must move to and from HBM, from work(shape, dtype).';
COMMENT ON COLUMN core.gpu_benchmarks.achieved_tflops IS 'flops / (ms_p50 · 10^9): achieved TFLOP/s of the kernel. Kernel throughput, not MFU.';
COMMENT ON COLUMN core.gpu_benchmarks.achieved_gbps IS 'bytes / (ms_p50 · 10^6): achieved GB/s.';
COMMENT ON COLUMN core.gpu_benchmarks.peak_tflops IS 'Dense peak TFLOP/s of the SKU for the dtype (core.gpu_peak_reference).';
COMMENT ON COLUMN core.gpu_benchmarks.peak_gbps IS 'Peak HBM GB/s of the SKU.';
COMMENT ON COLUMN core.gpu_benchmarks.peak_source IS 'Source of the peak figures.';
COMMENT ON COLUMN core.gpu_benchmarks.frac_peak_flops IS 'achieved_tflops / peak_tflops (compute-bound kernels'' figure of merit).';
COMMENT ON COLUMN core.gpu_benchmarks.frac_peak_bw IS 'achieved_gbps / peak_gbps (memory-bound kernels'' figure of merit).';
COMMENT ON COLUMN core.gpu_benchmarks.correct IS 'Whether the kernel''s output matched the torch reference before it was timed.';
COMMENT ON COLUMN core.gpu_benchmarks.simulated IS 'True when the record came from annex''s simulator (reports show the mark).';
COMMENT ON COLUMN core.gpu_benchmarks.locator IS 'Where the record was read: namespace/pod and log line.';
COMMENT ON COLUMN core.gpu_benchmarks.collection_id IS 'The collection that loaded it (audit.collections).';
COMMENT ON COLUMN core.gpu_benchmarks.loaded_at IS 'When it was loaded (UTC).';

CREATE TABLE core.gpu_benchmark_pods (
    cluster VARCHAR NOT NULL,
    pod_uid VARCHAR NOT NULL,
    namespace VARCHAR,
    pod VARCHAR,
    job VARCHAR,
    node VARCHAR,
    phase VARCHAR,
    finished_at TIMESTAMP,
    log_bytes BIGINT,
    log_truncated BOOLEAN,
    records INTEGER,
    rejected INTEGER,
    text_lines INTEGER,
    collection_id VARCHAR NOT NULL,
    read_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE core.gpu_benchmark_pods IS
    'One row per completed probe pod whose log annex has read; a pod is read once (later collections skip it).';
COMMENT ON COLUMN core.gpu_benchmark_pods.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN core.gpu_benchmark_pods.pod_uid IS 'metadata.uid of the probe pod.';
COMMENT ON COLUMN core.gpu_benchmark_pods.namespace IS 'Namespace of the probe pod.';
COMMENT ON COLUMN core.gpu_benchmark_pods.pod IS 'Name of the probe pod.';
COMMENT ON COLUMN core.gpu_benchmark_pods.job IS 'The probe Job (batch.kubernetes.io/job-name).';
COMMENT ON COLUMN core.gpu_benchmark_pods.node IS 'spec.nodeName of the pod.';
COMMENT ON COLUMN core.gpu_benchmark_pods.phase IS 'Succeeded or Failed.';
COMMENT ON COLUMN core.gpu_benchmark_pods.finished_at IS 'When its container terminated (UTC).';
COMMENT ON COLUMN core.gpu_benchmark_pods.log_bytes IS 'Bytes of log read.';
COMMENT ON COLUMN core.gpu_benchmark_pods.log_truncated IS 'True when the log reached gpubench.max_log_bytes and was cut: records past the cut are missing.';
COMMENT ON COLUMN core.gpu_benchmark_pods.records IS 'Records accepted from the log (before the warehouse''s own checks).';
COMMENT ON COLUMN core.gpu_benchmark_pods.rejected IS 'Lines rejected by the collector (audit.rejected).';
COMMENT ON COLUMN core.gpu_benchmark_pods.text_lines IS 'Plain log lines that were not records (progress text).';
COMMENT ON COLUMN core.gpu_benchmark_pods.collection_id IS 'The collection that read it.';
COMMENT ON COLUMN core.gpu_benchmark_pods.read_at IS 'When it was read (UTC).';

CREATE TABLE core.gpu_telemetry_series (
    cluster VARCHAR NOT NULL,
    series_id UINTEGER NOT NULL,
    series_key UBIGINT NOT NULL,
    gpu_uuid VARCHAR,
    field_id USMALLINT,
    metric VARCHAR NOT NULL,
    unit VARCHAR,
    kind VARCHAR,
    exporter_metric VARCHAR,
    hostname VARCHAR,
    gpu_index INTEGER,
    model_name VARCHAR,
    pci_bus_id VARCHAR,
    device VARCHAR,
    pod VARCHAR,
    namespace VARCHAR,
    container VARCHAR,
    mig_profile VARCHAR,
    mig_instance VARCHAR,
    driver_version VARCHAR,
    labels MAP(VARCHAR, VARCHAR),
    source VARCHAR,
    target VARCHAR,
    first_ts TIMESTAMP,
    last_ts TIMESTAMP,
    first_collection_id VARCHAR NOT NULL,
    last_collection_id VARCHAR NOT NULL
);

COMMENT ON TABLE core.gpu_telemetry_series IS
    'One row per DCGM time series: a GPU, a canonical metric and the workload labels it carried (a new pod on the GPU starts a new series). Samples are in core.gpu_telemetry_samples under series_id. Names and units are normalised across exporter versions through the alias table keyed on DCGM field id (collectors/telemetry/fields.py).';
COMMENT ON COLUMN core.gpu_telemetry_series.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN core.gpu_telemetry_series.series_id IS 'Compact id of the series (1, 2, 3, ... in order of first appearance), the key of its samples.';
COMMENT ON COLUMN core.gpu_telemetry_series.series_key IS 'Hash of the identity (cluster, gpu_uuid, metric, hostname, pod, namespace, container, mig_profile, mig_instance): the same series from a scrape and from Prometheus is one series.';
COMMENT ON COLUMN core.gpu_telemetry_series.gpu_uuid IS 'GPU UUID (DCGM label UUID, or uuid with --use-old-namespace); joins core.gpu_benchmarks.gpu_uuid.';
COMMENT ON COLUMN core.gpu_telemetry_series.field_id IS 'DCGM field id; NULL for a DCGM_FI_* name annex does not know (kept, not dropped).';
COMMENT ON COLUMN core.gpu_telemetry_series.metric IS 'Canonical metric name (e.g. gr_engine_active, tensor_active, power_usage, total_energy_consumption), or the received name when unknown.';
COMMENT ON COLUMN core.gpu_telemetry_series.unit IS 'Canonical unit of the samples: ratio (0-1), watts, joules, mhz, celsius, mib, count or code.';
COMMENT ON COLUMN core.gpu_telemetry_series.kind IS 'gauge or counter (counters may reset: use increases, never differences of raw values).';
COMMENT ON COLUMN core.gpu_telemetry_series.exporter_metric IS 'The metric name as the exporter sent it (it differs across exporter versions).';
COMMENT ON COLUMN core.gpu_telemetry_series.hostname IS 'Node the exporter runs on (label Hostname or hostname).';
COMMENT ON COLUMN core.gpu_telemetry_series.gpu_index IS 'GPU index on the node (label gpu).';
COMMENT ON COLUMN core.gpu_telemetry_series.model_name IS 'GPU product name (label modelName).';
COMMENT ON COLUMN core.gpu_telemetry_series.pci_bus_id IS 'PCI bus id of the GPU.';
COMMENT ON COLUMN core.gpu_telemetry_series.device IS 'Device name, e.g. nvidia0.';
COMMENT ON COLUMN core.gpu_telemetry_series.pod IS 'Pod the exporter saw holding the GPU (pod, or exported_pod through a Service); NULL when none or not reported.';
COMMENT ON COLUMN core.gpu_telemetry_series.namespace IS 'Namespace of that pod.';
COMMENT ON COLUMN core.gpu_telemetry_series.container IS 'Container of that pod.';
COMMENT ON COLUMN core.gpu_telemetry_series.mig_profile IS 'MIG GPU instance profile (GPU_I_PROFILE); NULL for a whole GPU.';
COMMENT ON COLUMN core.gpu_telemetry_series.mig_instance IS 'MIG GPU instance id (GPU_I_ID).';
COMMENT ON COLUMN core.gpu_telemetry_series.driver_version IS 'Driver version label (DCGM_FI_DRIVER_VERSION, DCGM_FI_SYSTEM_DRIVER_VERSION from exporter 4.9.0).';
COMMENT ON COLUMN core.gpu_telemetry_series.labels IS 'Every other label of the series (attacker-controllable text: escape before display).';
COMMENT ON COLUMN core.gpu_telemetry_series.source IS 'How it was first collected: scrape (exporter /metrics) or query_range (Prometheus).';
COMMENT ON COLUMN core.gpu_telemetry_series.target IS 'Exporter or Prometheus URL it was first collected from (no credentials).';
COMMENT ON COLUMN core.gpu_telemetry_series.first_ts IS 'Earliest sample loaded (UTC).';
COMMENT ON COLUMN core.gpu_telemetry_series.last_ts IS 'Latest sample loaded (UTC): samples at or before it are treated as already loaded (reruns and overlapping windows load once).';
COMMENT ON COLUMN core.gpu_telemetry_series.first_collection_id IS 'Collection that first saw the series.';
COMMENT ON COLUMN core.gpu_telemetry_series.last_collection_id IS 'Latest collection that loaded samples of it.';

CREATE TABLE core.gpu_telemetry_samples (
    ts TIMESTAMP NOT NULL,
    series_id UINTEGER NOT NULL,
    value DOUBLE NOT NULL
);

COMMENT ON TABLE core.gpu_telemetry_samples IS
    'DCGM samples, long form and compact: a time, a series (core.gpu_telemetry_series) and a value in the series'' canonical unit. About 4 bytes per sample on disk; a day of one field for 60,000 GPUs at one-minute steps is 86.4 million rows. Query through the marts (marts.gpu_hourly, marts.gpu_daily), or join series_id.';
COMMENT ON COLUMN core.gpu_telemetry_samples.ts IS 'Sample time (UTC): the exporter''s timestamp, the scrape time when it sent none, or the Prometheus step time.';
COMMENT ON COLUMN core.gpu_telemetry_samples.series_id IS 'The series (core.gpu_telemetry_series.series_id).';
COMMENT ON COLUMN core.gpu_telemetry_samples.value IS 'Value in the series'' canonical unit (ratios 0-1, watts, joules, ...). NaN and infinite samples are never stored.';

CREATE TABLE audit.telemetry_targets (
    collection_id VARCHAR NOT NULL,
    cluster VARCHAR NOT NULL,
    target VARCHAR,
    source VARCHAR,
    started_at TIMESTAMP,
    duration_ms DOUBLE,
    http_status INTEGER,
    status VARCHAR,
    error VARCHAR,
    series INTEGER,
    samples BIGINT,
    skipped_nan BIGINT,
    unknown_metrics INTEGER,
    non_dcgm_metrics INTEGER
);

COMMENT ON TABLE audit.telemetry_targets IS
    'One row per exporter scraped or Prometheus window queried by a telemetry collection: what was read, what failed and why. A failed target does not abort the others; what was not collected shows here.';
COMMENT ON COLUMN audit.telemetry_targets.collection_id IS 'The collection (audit.collections).';
COMMENT ON COLUMN audit.telemetry_targets.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN audit.telemetry_targets.target IS 'Exporter /metrics URL or Prometheus query window (no credentials).';
COMMENT ON COLUMN audit.telemetry_targets.source IS 'scrape or query_range.';
COMMENT ON COLUMN audit.telemetry_targets.started_at IS 'When the request started (UTC).';
COMMENT ON COLUMN audit.telemetry_targets.duration_ms IS 'Request time to the last byte, milliseconds.';
COMMENT ON COLUMN audit.telemetry_targets.http_status IS 'HTTP status of the response; NULL when none came.';
COMMENT ON COLUMN audit.telemetry_targets.status IS 'ok or failed.';
COMMENT ON COLUMN audit.telemetry_targets.error IS 'Why it failed.';
COMMENT ON COLUMN audit.telemetry_targets.series IS 'GPU series read.';
COMMENT ON COLUMN audit.telemetry_targets.samples IS 'Samples read.';
COMMENT ON COLUMN audit.telemetry_targets.skipped_nan IS 'NaN or infinite samples skipped.';
COMMENT ON COLUMN audit.telemetry_targets.unknown_metrics IS 'DCGM_FI_* metrics not in annex''s alias table (kept under their own names).';
COMMENT ON COLUMN audit.telemetry_targets.non_dcgm_metrics IS 'Other metric families (go_*, process_*), ignored.';

CREATE TABLE audit.telemetry_loads (
    collection_id VARCHAR NOT NULL,
    cluster VARCHAR NOT NULL,
    min_ts TIMESTAMP,
    max_ts TIMESTAMP,
    series INTEGER,
    samples_received BIGINT,
    samples_loaded BIGINT,
    rolled_up BOOLEAN NOT NULL
);

COMMENT ON TABLE audit.telemetry_loads IS
    'One row per telemetry collection that loaded samples: the time span it covered, how many samples it received and how many were new (the rest were already loaded), and whether the hourly marts have been rebuilt for it.';
COMMENT ON COLUMN audit.telemetry_loads.collection_id IS 'The collection (audit.collections).';
COMMENT ON COLUMN audit.telemetry_loads.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN audit.telemetry_loads.min_ts IS 'Earliest sample received (UTC).';
COMMENT ON COLUMN audit.telemetry_loads.max_ts IS 'Latest sample received (UTC).';
COMMENT ON COLUMN audit.telemetry_loads.series IS 'Series received.';
COMMENT ON COLUMN audit.telemetry_loads.samples_received IS 'Samples received from the collector.';
COMMENT ON COLUMN audit.telemetry_loads.samples_loaded IS 'Samples stored (received minus those at or before their series'' last_ts).';
COMMENT ON COLUMN audit.telemetry_loads.rolled_up IS 'Whether marts.gpu_hourly has been rebuilt for its hours.';

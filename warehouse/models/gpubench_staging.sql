-- Staging tables of the benchmark collector (collectors/gpubench); columns match its Arrow
-- schemas by name.
CREATE TEMP TABLE stage_gpubench_records (
    record_id VARCHAR, schema_version INTEGER, ts TIMESTAMP, namespace VARCHAR, job VARCHAR,
    pod VARCHAR, pod_uid VARCHAR, node VARCHAR, gpu_index INTEGER, gpu_uuid VARCHAR,
    gpu_model VARCHAR, gpu_sku VARCHAR, driver_version VARCHAR, backend VARCHAR,
    triton_version VARCHAR, torch_version VARCHAR, benchmark VARCHAR, kernel VARCHAR,
    kernel_config VARCHAR, shape VARCHAR, dtype VARCHAR, timer VARCHAR, warmup_ms DOUBLE,
    rep_ms DOUBLE, l2_flush BOOLEAN, n_samples INTEGER, ms_p20 DOUBLE, ms_p50 DOUBLE,
    ms_p80 DOUBLE, flops DOUBLE, bytes DOUBLE, achieved_tflops DOUBLE, achieved_gbps DOUBLE,
    peak_tflops DOUBLE, peak_gbps DOUBLE, peak_source VARCHAR, frac_peak_flops DOUBLE,
    frac_peak_bw DOUBLE, correct BOOLEAN, simulated BOOLEAN, locator VARCHAR
);

CREATE TEMP TABLE stage_gpubench_pods (
    pod_uid VARCHAR, namespace VARCHAR, pod VARCHAR, job VARCHAR, node VARCHAR, phase VARCHAR,
    finished_at TIMESTAMP, log_bytes BIGINT, log_truncated BOOLEAN, records INTEGER,
    rejected INTEGER, text_lines INTEGER
);

CREATE TEMP TABLE stage_gpu_peaks (
    gpu_sku VARCHAR, dtype VARCHAR, peak_tflops_dense DOUBLE, peak_hbm_gbps DOUBLE,
    tdp_watts DOUBLE, source_url VARCHAR
);

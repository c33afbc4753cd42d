-- 0034 What each training run's compute figures were computed from (issue 39: compute for a
-- year of a 60,000-GPU fleet in seconds). refresh_compute (warehouse/models/compute.py and
-- compute_inputs.py) recomputes only the runs whose evidence changed since the refresh that
-- wrote the marts, and rebuilds every run when what all runs share changed. Until the first
-- refresh after this migration these tables are empty: that refresh rebuilds every run.
-- Never edit this file once applied anywhere: add a new migration instead.

CREATE TABLE meta.compute_state (
    refreshed_at TIMESTAMP NOT NULL,
    shared_inputs_digest VARCHAR NOT NULL
);
COMMENT ON TABLE meta.compute_state IS
    'The refresh_compute that wrote the compute marts as they are: one row, replaced by each refresh (audit.compute_refreshes keeps every refresh). The next refresh compares what every run shares with shared_inputs_digest: the same, it recomputes only the runs whose own inputs changed (meta.compute_run_inputs, meta.compute_telemetry_days); different, it rebuilds every run.';
COMMENT ON COLUMN meta.compute_state.refreshed_at IS 'The refresh''s now (UTC): its time, or [compute] as_of.';
COMMENT ON COLUMN meta.compute_state.shared_inputs_digest IS
    'SHA-256 (hex) of what every run''s figures depend on: the model registry, the [compute] settings, core.gpu_peak_reference, the GPU model most GPU-hours ran on, the refresh''s code and the DuckDB version.';

ALTER TABLE audit.compute_refreshes ADD COLUMN mode VARCHAR;
ALTER TABLE audit.compute_refreshes ADD COLUMN runs_recomputed INTEGER;
COMMENT ON COLUMN audit.compute_refreshes.mode IS
    'full (every run recomputed: no earlier state, what every run shares changed, or annex compute --full-refresh) or incremental (meta.compute_state); NULL for refreshes before migration 0034, all full.';
COMMENT ON COLUMN audit.compute_refreshes.runs_recomputed IS
    'Runs the refresh recomputed (all of them when full); the others kept their rows. NULL before migration 0034.';

CREATE TABLE meta.compute_run_inputs (
    run_id VARCHAR NOT NULL PRIMARY KEY,
    inputs_digest UBIGINT NOT NULL
);
COMMENT ON TABLE meta.compute_run_inputs IS
    'Per training run in marts.training_run_compute, a digest of its own inputs at the refresh in meta.compute_state, telemetry aside (meta.compute_telemetry_days): its lineage row and facets, its Job''s holdings in physical GPUs with their GPU models, its nodes'' GEMM benchmarks (or the fleet''s medians where they have none), its token counts, the Job claim it lost, its lifecycle stage and exclusion. A run whose digest changed is recomputed.';
COMMENT ON COLUMN meta.compute_run_inputs.run_id IS 'The OpenLineage run (marts.training_run_compute.run_id).';
COMMENT ON COLUMN meta.compute_run_inputs.inputs_digest IS 'DuckDB hash() of the run''s inputs listed in the table comment.';

CREATE TABLE meta.compute_telemetry_days (
    cluster VARCHAR NOT NULL,
    day DATE NOT NULL,
    pod_days BIGINT NOT NULL,
    refreshed_at TIMESTAMP,
    PRIMARY KEY (cluster, day)
);
COMMENT ON TABLE meta.compute_telemetry_days IS
    'The days of marts.gpu_pod_daily as the refresh in meta.compute_state read them: a day whose rows or last rebuild differ now (rebuilt from late telemetry, new, gone) makes every run holding GPUs on that cluster that day be recomputed.';
COMMENT ON COLUMN meta.compute_telemetry_days.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN meta.compute_telemetry_days.day IS 'UTC day of marts.gpu_pod_daily.';
COMMENT ON COLUMN meta.compute_telemetry_days.pod_days IS 'Rows of marts.gpu_pod_daily for the cluster and day.';
COMMENT ON COLUMN meta.compute_telemetry_days.refreshed_at IS 'The latest refreshed_at among them (the day''s last rebuild).';

COMMENT ON COLUMN marts.training_run_compute.refreshed_at IS
    'When refresh_compute computed the row (UTC). A refresh recomputes only runs whose evidence changed (meta.compute_state): an unchanged run keeps the row, and the time, of the refresh that computed it.';
COMMENT ON COLUMN marts.training_run_gpus.refreshed_at IS
    'When refresh_compute computed the row (UTC); kept with its run''s row while the run''s evidence is unchanged (marts.training_run_compute.refreshed_at).';
COMMENT ON COLUMN audit.compute_refreshes.runs IS
    'Rows in marts.training_run_compute after the refresh (those it recomputed and those it kept unchanged).';

-- Staging tables of the telemetry collector (collectors/telemetry): columns match its Arrow
-- schemas by name. Series and samples are not staged: the telemetry sink receives them (see
-- warehouse/models/telemetry.py), keeps the series as Arrow and appends the samples straight
-- into core.gpu_telemetry_samples.

-- per series that had samples: its first and last sample time and how many samples it had in
-- this collection (one row per series, or several that the merge folds)
CREATE TEMP TABLE stage_telemetry_extents (
    series_index UINTEGER NOT NULL,
    first_ts TIMESTAMP NOT NULL,
    last_ts TIMESTAMP NOT NULL,
    samples BIGINT NOT NULL
);

CREATE TEMP TABLE stage_telemetry_targets (
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
    non_dcgm_metrics INTEGER,
    blank_values BIGINT
);

-- collection-local series_index -> warehouse series_id, and the series' last_ts before this
-- collection (its samples at or before it are already loaded)
CREATE TEMP TABLE telemetry_series_map (
    series_index UINTEGER NOT NULL,
    series_id UINTEGER NOT NULL,
    watermark TIMESTAMP
);

-- series this collection is the first to see: their ids are taken when the sink maps them, their
-- core.gpu_telemetry_series rows are written by the merge (with their extents)
CREATE TEMP TABLE telemetry_fresh_series (
    series_index UINTEGER NOT NULL,
    series_key UBIGINT NOT NULL,
    series_id UINTEGER NOT NULL
);

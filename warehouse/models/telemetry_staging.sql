-- Staging tables of the telemetry collector (collectors/telemetry): columns match its Arrow
-- schemas by name. Samples are not staged: they are appended straight into
-- core.gpu_telemetry_samples (see warehouse/models/telemetry.py).
CREATE TEMP TABLE stage_telemetry_series (
    series_index UINTEGER NOT NULL,
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
    target VARCHAR
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
    non_dcgm_metrics INTEGER
);

-- collection-local series_index -> warehouse series_id, and the series' last_ts before this
-- collection (its samples at or before it are already loaded)
CREATE TEMP TABLE telemetry_series_map (
    series_index UINTEGER NOT NULL,
    series_id UINTEGER NOT NULL,
    watermark TIMESTAMP
);

-- 0001 foundation: the schemas, and the audit trail every collection writes.
-- Never edit this file once applied anywhere: add a new migration instead.

CREATE SCHEMA IF NOT EXISTS raw;
CREATE SCHEMA IF NOT EXISTS core;
CREATE SCHEMA IF NOT EXISTS marts;
CREATE SCHEMA IF NOT EXISTS audit;
CREATE SCHEMA IF NOT EXISTS meta;

CREATE TABLE audit.collections (
    collection_id VARCHAR NOT NULL PRIMARY KEY,
    source VARCHAR NOT NULL,
    cluster VARCHAR NOT NULL,
    started_at TIMESTAMP NOT NULL,
    finished_at TIMESTAMP,
    status VARCHAR NOT NULL
        CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted')),
    row_counts MAP(VARCHAR, BIGINT),
    rejected_count BIGINT,
    error VARCHAR,
    annex_version VARCHAR
);

COMMENT ON TABLE audit.collections IS
    'One row per collection (one run of one collector against one cluster). Everything a collection loads is committed in one transaction with its final status here; a failed or killed collection leaves only this row.';
COMMENT ON COLUMN audit.collections.collection_id IS
    'Unique id of the collection (UUID4 text); referenced by audit.rejected and by the rows it loaded.';
COMMENT ON COLUMN audit.collections.source IS
    'Evidence source that was collected, e.g. kubernetes, telemetry, attestation, lineage.';
COMMENT ON COLUMN audit.collections.cluster IS 'Cluster name as configured in annex ([[clusters]] name).';
COMMENT ON COLUMN audit.collections.started_at IS
    'When the collection started (UTC); also the collected_at of the rows it loaded.';
COMMENT ON COLUMN audit.collections.finished_at IS
    'When it succeeded, failed or was interrupted (UTC); NULL while running and when the process was killed.';
COMMENT ON COLUMN audit.collections.status IS
    'running (in progress, or killed and not yet noticed), succeeded, failed (error says why; nothing was loaded) or interrupted (the process was stopped or killed; nothing was loaded).';
COMMENT ON COLUMN audit.collections.row_counts IS
    'Rows received per staging table (table name -> rows), including rejected; NULL unless succeeded.';
COMMENT ON COLUMN audit.collections.rejected_count IS
    'Input records rejected and kept in audit.rejected; NULL unless succeeded.';
COMMENT ON COLUMN audit.collections.error IS
    'Why the collection failed or was interrupted; NULL when it succeeded.';
COMMENT ON COLUMN audit.collections.annex_version IS 'Version of annex that ran the collection.';

CREATE TABLE audit.rejected (
    collection_id VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    cluster VARCHAR NOT NULL,
    locator VARCHAR,
    reason_code VARCHAR NOT NULL,
    message VARCHAR,
    raw BLOB,
    raw_truncated BOOLEAN NOT NULL,
    raw_bytes BIGINT,
    rejected_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE audit.rejected IS
    'Input records a collector could not accept, with the reason and the raw bytes (capped), so bad input is never silently dropped and never aborts good input.';
COMMENT ON COLUMN audit.rejected.collection_id IS 'The collection that received the record (audit.collections).';
COMMENT ON COLUMN audit.rejected.source IS 'Evidence source of the collection, e.g. kubernetes.';
COMMENT ON COLUMN audit.rejected.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN audit.rejected.locator IS
    'Where in the input the record was, e.g. "pods page 3 item 17 (ns/name)".';
COMMENT ON COLUMN audit.rejected.reason_code IS
    'Machine-readable reason, stable across versions (e.g. missing_field, bad_quantity).';
COMMENT ON COLUMN audit.rejected.message IS 'Human-readable explanation of the rejection.';
COMMENT ON COLUMN audit.rejected.raw IS
    'The raw input bytes of the record, cut to the first 65536 bytes (see raw_truncated).';
COMMENT ON COLUMN audit.rejected.raw_truncated IS 'True when raw was cut to the cap.';
COMMENT ON COLUMN audit.rejected.raw_bytes IS 'Size of the original raw input in bytes, before any cut.';
COMMENT ON COLUMN audit.rejected.rejected_at IS 'When the collection recorded the rejection (UTC).';

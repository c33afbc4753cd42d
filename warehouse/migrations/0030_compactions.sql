-- 0030 retention and compaction (issue 39, item 2): the ledger of raw rows moved out of DuckDB
-- to Hive-partitioned Parquet by `annex warehouse compact` (warehouse/compaction.py), and the
-- schema of the views that read them back (archive.<table>: live rows and the ledger's files,
-- re-created by code on migrate and after each compaction). A Parquet file is trusted only
-- when a row here names it. Rows are only ever added.
-- Never edit this file once applied anywhere: add a new migration instead.

CREATE SCHEMA IF NOT EXISTS archive;

CREATE TABLE audit.compactions (
    table_name VARCHAR NOT NULL,
    family VARCHAR NOT NULL,
    cluster VARCHAR,
    day DATE NOT NULL,
    rows BIGINT NOT NULL,
    bytes BIGINT NOT NULL,
    file VARCHAR NOT NULL,
    sha256 VARCHAR NOT NULL,
    compacted_at TIMESTAMP NOT NULL,
    PRIMARY KEY (file)
);

COMMENT ON TABLE audit.compactions IS
    'Every partition of raw rows moved to Parquet by annex warehouse compact (one row per file, written in the same transaction that deleted the rows): archive.<table> reads exactly the files listed here. Added to, never changed.';
COMMENT ON COLUMN audit.compactions.table_name IS 'The table the rows left: core.gpu_telemetry_samples, raw.kubernetes_<resource>, audit.kubernetes_requests or audit.telemetry_targets.';
COMMENT ON COLUMN audit.compactions.family IS 'Its [retention] family (telemetry, kubernetes, audit): <family>_days is how long its rows stayed in DuckDB.';
COMMENT ON COLUMN audit.compactions.cluster IS 'The partition''s cluster; NULL for a table partitioned by day only (telemetry samples carry no cluster: their series do).';
COMMENT ON COLUMN audit.compactions.day IS 'The partition''s UTC day, of the table''s own time column (ts, collected_at, requested_at or started_at).';
COMMENT ON COLUMN audit.compactions.rows IS 'Rows moved: written to the file and deleted from the table.';
COMMENT ON COLUMN audit.compactions.bytes IS 'Size of the Parquet file.';
COMMENT ON COLUMN audit.compactions.file IS 'Absolute path of the Parquet file: <retention dir>/<schema>/<table>/[cluster=<name>/]day=<YYYY-MM-DD>/data_<n>.parquet (n counts the partition''s earlier files: late rows of a compacted day).';
COMMENT ON COLUMN audit.compactions.sha256 IS 'SHA-256 of the file when written: a file whose hash differs was changed since.';
COMMENT ON COLUMN audit.compactions.compacted_at IS 'When it was compacted (UTC).';

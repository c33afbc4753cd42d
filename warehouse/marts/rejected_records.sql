-- marts.rejected_records: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.rejected_records AS
SELECT collection_id, source, cluster, locator, reason_code, message, raw_bytes, rejected_at
FROM audit.rejected;

COMMENT ON VIEW marts.rejected_records IS
    'Input records the collectors could not accept, with the reason (from audit.rejected, without the raw bytes, which stay there): bad input is kept and counted, never silently dropped.';
COMMENT ON COLUMN marts.rejected_records.collection_id IS
    'The collection that received it (marts.collections).';
COMMENT ON COLUMN marts.rejected_records.source IS
    'Evidence source of the collection.';
COMMENT ON COLUMN marts.rejected_records.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.rejected_records.locator IS
    'Where in the input the record was, e.g. a page and item, or a file and line.';
COMMENT ON COLUMN marts.rejected_records.reason_code IS
    'Machine-readable reason, stable across versions (e.g. missing_field, schema_violation).';
COMMENT ON COLUMN marts.rejected_records.message IS
    'Human-readable explanation.';
COMMENT ON COLUMN marts.rejected_records.raw_bytes IS
    'Size of the record as received, in bytes (the bytes themselves: audit.rejected.raw).';
COMMENT ON COLUMN marts.rejected_records.rejected_at IS
    'When it was rejected (UTC).';

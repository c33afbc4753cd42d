-- 0032 compaction of lineage payloads and attestation claims (issue 39, item 2): past
-- [retention] lineage_days and attestation_days, `annex warehouse compact` moves the event JSON
-- of core.lineage_events and the token claims of core.attestation_records to Parquet while the
-- rows stay (ids, times, hashes, verdicts): a compacted row holds NULL there, and
-- archive.lineage_events / archive.attestation_records read it back (warehouse/compaction.py).
-- Never edit this file once applied anywhere: add a new migration instead.

ALTER TABLE core.lineage_events ALTER COLUMN payload DROP NOT NULL;

COMMENT ON COLUMN core.lineage_events.payload IS 'The event as JSON, unchanged except for facets dropped as too large (see findings). NULL once compacted past [retention] lineage_days: archive.lineage_events reads it back from Parquet (audit.compactions), archive.lineage_facets the facet history.';
COMMENT ON COLUMN core.attestation_records.claims IS 'The token''s payload as JSON (sorted keys); NULL when it could not be parsed, or once compacted past [retention] attestation_days: archive.attestation_records reads it back from Parquet (audit.compactions).';
COMMENT ON COLUMN audit.compactions.table_name IS 'The table the data left: core.gpu_telemetry_samples, raw.kubernetes_<resource>, audit.kubernetes_requests or audit.telemetry_targets (whole rows), core.lineage_events (payload) or core.attestation_records (claims: the rows stay, the column is set to NULL).';
COMMENT ON COLUMN audit.compactions.family IS 'Its [retention] family (telemetry, kubernetes, audit, lineage, attestation): <family>_days is how long its rows stayed in DuckDB whole.';
COMMENT ON COLUMN audit.compactions.rows IS 'Rows moved: written to the file and deleted from the table (for core.lineage_events and core.attestation_records: whose payload or claims were written to the file, beside the row''s key, and set to NULL).';
COMMENT ON COLUMN audit.compactions.day IS 'The partition''s UTC day, of the table''s own time column (ts, collected_at, requested_at, started_at, event_time or received_at).';

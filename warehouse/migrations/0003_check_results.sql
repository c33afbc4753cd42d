-- Asset-check outcomes, kept as evidence: reports cite which checks passed on which collection.

CREATE TABLE audit.check_results (
    checked_at TIMESTAMP NOT NULL,
    check_name VARCHAR NOT NULL,
    asset VARCHAR NOT NULL,
    cluster VARCHAR,
    collection_id VARCHAR,
    passed BOOLEAN NOT NULL,
    severity VARCHAR NOT NULL,
    blocking BOOLEAN NOT NULL,
    run_id VARCHAR,
    details JSON
);

COMMENT ON TABLE audit.check_results IS
    'One row per asset-check evaluation (Dagster): the verdict, what it judged and the figures behind it, so reports can cite data-quality evidence.';
COMMENT ON COLUMN audit.check_results.checked_at IS 'When the check ran (UTC).';
COMMENT ON COLUMN audit.check_results.check_name IS 'The check, e.g. inventory_no_duplicate_uids.';
COMMENT ON COLUMN audit.check_results.asset IS 'The asset checked, e.g. cluster_inventory.';
COMMENT ON COLUMN audit.check_results.cluster IS 'The cluster checked; NULL when the check covered every cluster.';
COMMENT ON COLUMN audit.check_results.collection_id IS 'The cluster''s latest succeeded collection when the check ran (audit.collections); NULL without a cluster.';
COMMENT ON COLUMN audit.check_results.passed IS 'The verdict.';
COMMENT ON COLUMN audit.check_results.severity IS 'ERROR or WARN: how much a failure matters.';
COMMENT ON COLUMN audit.check_results.blocking IS 'Whether a failure stops downstream assets (the published copy keeps the last good state).';
COMMENT ON COLUMN audit.check_results.run_id IS 'The Dagster run that evaluated the check.';
COMMENT ON COLUMN audit.check_results.details IS 'The figures the check judged, as JSON (counts, ages, offending examples).';

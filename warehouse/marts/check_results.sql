-- marts.check_results: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.check_results AS
SELECT checked_at, check_name, asset, cluster, collection_id, passed, severity, blocking,
       run_id, details
FROM audit.check_results;

COMMENT ON VIEW marts.check_results IS
    'Every asset-check evaluation (Dagster) with its verdict and figures, from audit.check_results: the data-quality evidence reports cite.';
COMMENT ON COLUMN marts.check_results.checked_at IS
    'When the check ran (UTC).';
COMMENT ON COLUMN marts.check_results.check_name IS
    'The check, e.g. inventory_no_duplicate_uids.';
COMMENT ON COLUMN marts.check_results.asset IS
    'The asset checked.';
COMMENT ON COLUMN marts.check_results.cluster IS
    'The cluster checked; NULL when the check covered every cluster.';
COMMENT ON COLUMN marts.check_results.collection_id IS
    'The cluster''s latest succeeded collection when the check ran; NULL without a cluster.';
COMMENT ON COLUMN marts.check_results.passed IS
    'The verdict.';
COMMENT ON COLUMN marts.check_results.severity IS
    'ERROR or WARN.';
COMMENT ON COLUMN marts.check_results.blocking IS
    'Whether a failure stops downstream assets.';
COMMENT ON COLUMN marts.check_results.run_id IS
    'The Dagster run that evaluated it.';
COMMENT ON COLUMN marts.check_results.details IS
    'The figures behind the verdict (JSON).';

-- marts.collections: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.collections AS
SELECT collection_id, source, cluster, status, started_at, finished_at,
       date_diff('millisecond', started_at, finished_at) / 1000.0 AS duration_s,
       rejected_count, error, annex_version
FROM audit.collections;

COMMENT ON VIEW marts.collections IS
    'Every collection annex ran (one collector against one cluster), failed and interrupted ones included, from audit.collections: what the evidence rests on and what was not collected.';
COMMENT ON COLUMN marts.collections.collection_id IS
    'Unique id of the collection; the rows it loaded and its rejected records carry it.';
COMMENT ON COLUMN marts.collections.source IS
    'Evidence source collected: kubernetes, telemetry, attestation, lineage, ...';
COMMENT ON COLUMN marts.collections.cluster IS
    'Cluster name as configured in annex ([[clusters]] name).';
COMMENT ON COLUMN marts.collections.status IS
    'running, succeeded, failed or interrupted; only succeeded collections left rows behind.';
COMMENT ON COLUMN marts.collections.started_at IS
    'When the collection started (UTC).';
COMMENT ON COLUMN marts.collections.finished_at IS
    'When it finished (UTC); NULL while running or when it was killed.';
COMMENT ON COLUMN marts.collections.duration_s IS
    'finished_at - started_at in seconds; NULL without finished_at.';
COMMENT ON COLUMN marts.collections.rejected_count IS
    'Input records it rejected (marts.rejected_records has them with reasons).';
COMMENT ON COLUMN marts.collections.error IS
    'Why it failed, with what to do; NULL when it succeeded.';
COMMENT ON COLUMN marts.collections.annex_version IS
    'The annex version that ran it.';

-- The lineage refresh becomes incremental: it recomputes the closures of only the model
-- checkpoints that the collections since the previous refresh can have changed (their own
-- checkpoint, or a version of their current closure, was written by a run those collections
-- brought edges for, or changed its model name, stage or checkpoint status), instead of every
-- checkpoint's closure at every refresh, which grows with the whole history. Which lineage
-- collections the marts already reflect is recorded here; the first refresh after this
-- migration finds none recorded and rebuilds everything once.

CREATE TABLE audit.lineage_refreshes (
    refreshed_at TIMESTAMP NOT NULL,
    mode VARCHAR NOT NULL CHECK (mode IN ('full', 'incremental')),
    collections BIGINT NOT NULL,
    touched_versions BIGINT,
    models_recomputed BIGINT NOT NULL,
    cycles_searched BOOLEAN NOT NULL,
    models BIGINT NOT NULL,
    model_inputs BIGINT NOT NULL,
    cycle_versions BIGINT NOT NULL,
    milliseconds BIGINT NOT NULL
);

COMMENT ON TABLE audit.lineage_refreshes IS
    'One row per run of refresh_lineage: whether it rebuilt the lineage marts whole (full: the first refresh, or one asked for) or recomputed only the model checkpoints that new lineage collections can have changed (incremental), and how much it did.';
COMMENT ON COLUMN audit.lineage_refreshes.refreshed_at IS 'When the refresh ran (UTC).';
COMMENT ON COLUMN audit.lineage_refreshes.mode IS 'full (every closure rebuilt) or incremental.';
COMMENT ON COLUMN audit.lineage_refreshes.collections IS 'Lineage collections it took in: succeeded, and not yet reflected by an earlier refresh (audit.lineage_refreshed_collections).';
COMMENT ON COLUMN audit.lineage_refreshes.touched_versions IS 'Incremental only: dataset versions those collections can have changed the upstream of (outputs of runs with new edges; checkpoints new, gone, renamed or restaged). NULL for a full refresh.';
COMMENT ON COLUMN audit.lineage_refreshes.models_recomputed IS 'Model checkpoints whose closure was recomputed (all of them for a full refresh).';
COMMENT ON COLUMN audit.lineage_refreshes.cycles_searched IS 'marts.lineage_cycles was rebuilt from every edge: a full refresh, or a run with new edges is on a cycle (one of its outputs reaches, downstream, one of its own inputs); otherwise the cycles found before stand.';
COMMENT ON COLUMN audit.lineage_refreshes.models IS 'Rows of marts.lineage_models afterwards.';
COMMENT ON COLUMN audit.lineage_refreshes.model_inputs IS 'Rows of marts.lineage_model_inputs afterwards.';
COMMENT ON COLUMN audit.lineage_refreshes.cycle_versions IS 'Rows of marts.lineage_cycles afterwards.';
COMMENT ON COLUMN audit.lineage_refreshes.milliseconds IS 'Time the refresh took.';

CREATE TABLE audit.lineage_refreshed_collections (
    collection_id VARCHAR PRIMARY KEY,
    refreshed_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE audit.lineage_refreshed_collections IS
    'The lineage collections (audit.collections) that the lineage marts reflect: the next refresh takes in the succeeded lineage collections not listed here. Written in the refresh''s transaction.';
COMMENT ON COLUMN audit.lineage_refreshed_collections.collection_id IS 'A lineage collection (audit.collections).';
COMMENT ON COLUMN audit.lineage_refreshed_collections.refreshed_at IS 'The refresh that took it in (audit.lineage_refreshes.refreshed_at).';

COMMENT ON TABLE marts.lineage_models IS
    'Every model checkpoint: a dataset version of kind MODEL that a run produced. Kept by refresh_lineage: rows are written again when the checkpoint''s closure or own columns change (audit.lineage_refreshes).';
COMMENT ON COLUMN marts.lineage_models.refreshed_at IS 'When refresh_lineage last wrote the row (UTC).';
COMMENT ON COLUMN marts.lineage_cycles.refreshed_at IS 'When refresh_lineage last searched the cycles and found it (UTC); the search runs again only when a run with new edges is on a cycle.';

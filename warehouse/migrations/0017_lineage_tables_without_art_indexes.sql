-- The largest lineage tables without ART indexes. A PRIMARY KEY in DuckDB is an ART index that
-- must be held in memory whole: the first insert of a collection loads it (some 82 bytes per
-- key for these ids; core.lineage_events, runs, dataset_versions and run_io hold about four
-- keys per event, so a year of 10 million events would load some 3 GB before each
-- collection), and every insert maintains it on one core (1.1-1.4 s of a 200,000-event
-- collection for run_io alone). None of them needs one: the merge (warehouse/models/
-- lineage_merge.sql) inserts an event only when its event_id is new (read within the batch's
-- eventTime range) and merges runs, versions and edges by their keys (MERGE INTO, a join),
-- so each key is still stored once; tests/unit/test_warehouse_lineage.py checks it. The
-- small jobs and datasets tables keep theirs. DuckDB cannot drop a constraint, so each table
-- is rebuilt with the same columns, rows (in their order), NOT NULL and CHECK constraints and
-- comments.

CREATE TABLE core.lineage_events_0017 (
    event_id VARCHAR NOT NULL,
    received_at TIMESTAMP,
    event_time TIMESTAMP NOT NULL,
    event_time_offset_minutes SMALLINT,
    event_kind VARCHAR NOT NULL,
    event_type VARCHAR,
    run_id VARCHAR,
    job_namespace VARCHAR,
    job_name VARCHAR,
    producer VARCHAR,
    schema_url VARCHAR,
    payload JSON NOT NULL,
    findings VARCHAR[],
    source_locator VARCHAR,
    "day" DATE NOT NULL,
    collection_id VARCHAR NOT NULL,
    loaded_at TIMESTAMP NOT NULL
);
INSERT INTO core.lineage_events_0017 SELECT * FROM core.lineage_events;
DROP TABLE core.lineage_events;
ALTER TABLE core.lineage_events_0017 RENAME TO lineage_events;
COMMENT ON TABLE core.lineage_events IS
    'Every accepted OpenLineage event (RunEvent, JobEvent, DatasetEvent), stored as received once: its event_id is the SHA-256 of its RFC 8785 canonical JSON, so an event resent, in another key order or with other whitespace, changes nothing. Arrival order is kept (received_at) but never decides anything: run state and facets go by eventTime.';
COMMENT ON COLUMN core.lineage_events.event_id IS 'Hex SHA-256 of the event''s RFC 8785 (JCS) canonical JSON as received.';
COMMENT ON COLUMN core.lineage_events.received_at IS 'When annex''s intake (or the file reader) received the event (UTC).';
COMMENT ON COLUMN core.lineage_events.event_time IS 'eventTime converted to UTC.';
COMMENT ON COLUMN core.lineage_events.event_time_offset_minutes IS 'The UTC offset eventTime was sent with, in minutes.';
COMMENT ON COLUMN core.lineage_events.event_kind IS 'RunEvent, JobEvent or DatasetEvent.';
COMMENT ON COLUMN core.lineage_events.event_type IS 'START, RUNNING, COMPLETE, ABORT, FAIL or OTHER; NULL when the event has none (it then only adds metadata).';
COMMENT ON COLUMN core.lineage_events.run_id IS 'run.runId (lower-case UUID text); NULL for job and dataset events.';
COMMENT ON COLUMN core.lineage_events.job_namespace IS 'job.namespace (NULL for dataset events).';
COMMENT ON COLUMN core.lineage_events.job_name IS 'job.name (NULL for dataset events).';
COMMENT ON COLUMN core.lineage_events.producer IS 'The event''s producer URI.';
COMMENT ON COLUMN core.lineage_events.schema_url IS 'The event''s schemaURL.';
COMMENT ON COLUMN core.lineage_events.payload IS 'The event as JSON, unchanged except for facets dropped as too large (see findings).';
COMMENT ON COLUMN core.lineage_events.findings IS 'What the ingester changed or noticed, e.g. facet_too_large: <path>.';
COMMENT ON COLUMN core.lineage_events.source_locator IS 'Where the event was read: spool file#line or file path#line.';
COMMENT ON COLUMN core.lineage_events.day IS 'UTC date of event_time (the export partition).';
COMMENT ON COLUMN core.lineage_events.collection_id IS 'The collection that loaded the event (audit.collections).';
COMMENT ON COLUMN core.lineage_events.loaded_at IS 'When that collection started (UTC).';

CREATE TABLE core.lineage_runs_0017 (
    run_id VARCHAR NOT NULL,
    job_id VARCHAR,
    job_namespace VARCHAR,
    job_name VARCHAR,
    parent_run_id VARCHAR,
    state VARCHAR,
    started_at TIMESTAMP,
    ended_at TIMESTAMP,
    state_event_time TIMESTAMP,
    state_event_id VARCHAR,
    first_event_time TIMESTAMP,
    last_event_time TIMESTAMP,
    events INTEGER,
    kubernetes_cluster VARCHAR,
    kubernetes_namespace VARCHAR,
    kubernetes_job_name VARCHAR,
    model_name VARCHAR,
    stage VARCHAR
);
INSERT INTO core.lineage_runs_0017 SELECT * FROM core.lineage_runs;
DROP TABLE core.lineage_runs;
ALTER TABLE core.lineage_runs_0017 RENAME TO lineage_runs;
COMMENT ON TABLE core.lineage_runs IS
    'OpenLineage runs, one row per runId, recomputed from all of the run''s events whenever a collection brings one: state by eventTime, never by arrival (reference openlineage.md §4). A COMPLETE without a START still makes the run.';
COMMENT ON COLUMN core.lineage_runs.run_id IS 'run.runId (lower-case UUID text).';
COMMENT ON COLUMN core.lineage_runs.job_id IS 'The run''s job (core.lineage_jobs), from its latest event.';
COMMENT ON COLUMN core.lineage_runs.job_namespace IS 'job.namespace of the run''s latest event.';
COMMENT ON COLUMN core.lineage_runs.job_name IS 'job.name of the run''s latest event.';
COMMENT ON COLUMN core.lineage_runs.parent_run_id IS 'run.runId of the current parent run facet (e.g. the training campaign).';
COMMENT ON COLUMN core.lineage_runs.state IS 'eventType of the terminal event (COMPLETE, ABORT, FAIL) with the latest eventTime; without one, of the latest event with an eventType (START, RUNNING, OTHER). Ties in eventTime: the larger event_id, so arrival order never matters.';
COMMENT ON COLUMN core.lineage_runs.started_at IS 'eventTime of the earliest START (UTC); NULL when no START arrived.';
COMMENT ON COLUMN core.lineage_runs.ended_at IS 'eventTime of the terminal event that decides state (UTC); NULL while the run has none.';
COMMENT ON COLUMN core.lineage_runs.state_event_time IS 'eventTime of the event that decides state (UTC).';
COMMENT ON COLUMN core.lineage_runs.state_event_id IS 'event_id of the event that decides state (core.lineage_events).';
COMMENT ON COLUMN core.lineage_runs.first_event_time IS 'Earliest eventTime of the run''s events (UTC).';
COMMENT ON COLUMN core.lineage_runs.last_event_time IS 'Latest eventTime of the run''s events (UTC).';
COMMENT ON COLUMN core.lineage_runs.events IS 'Distinct events of the run stored.';
COMMENT ON COLUMN core.lineage_runs.kubernetes_cluster IS 'annex_trainingRun.kubernetes.cluster of the current facet: the cluster of the training run''s Kubernetes Job.';
COMMENT ON COLUMN core.lineage_runs.kubernetes_namespace IS 'annex_trainingRun.kubernetes.namespace: the Job''s namespace.';
COMMENT ON COLUMN core.lineage_runs.kubernetes_job_name IS 'annex_trainingRun.kubernetes.jobName: the Job''s name (core.jobs.job_name).';
COMMENT ON COLUMN core.lineage_runs.model_name IS 'annex_trainingRun.modelName of the current facet.';
COMMENT ON COLUMN core.lineage_runs.stage IS 'annex_trainingRun.stage: PRETRAINING, FINE_TUNING, SYNTHETIC_GENERATION, EVALUATION or DATA_PROCESSING.';

CREATE TABLE core.lineage_dataset_versions_0017 (
    dataset_version_id VARCHAR NOT NULL,
    dataset_id VARCHAR NOT NULL,
    namespace VARCHAR NOT NULL,
    "name" VARCHAR NOT NULL,
    "version" VARCHAR,
    version_source VARCHAR NOT NULL,
    produced_by_run_id VARCHAR,
    produced_at TIMESTAMP,
    created_at TIMESTAMP
);
INSERT INTO core.lineage_dataset_versions_0017 SELECT * FROM core.lineage_dataset_versions;
DROP TABLE core.lineage_dataset_versions;
ALTER TABLE core.lineage_dataset_versions_0017 RENAME TO lineage_dataset_versions;
COMMENT ON TABLE core.lineage_dataset_versions IS
    'Immutable dataset versions, the nodes of the lineage graph. The version is the version facet''s datasetVersion; else, for a run''s output, the producing run''s runId (as Marquez does); else (an input, or a dataset or job event, without a version facet) NULL: the dataset''s external, unversioned node, which no run produces. Send a version facet on inputs to link them to the run that produced them.';
COMMENT ON COLUMN core.lineage_dataset_versions.dataset_version_id IS 'md5 of namespace, chr(31), name, chr(31), version (chr(30) for a NULL version): warehouse.models.lineage.dataset_version_id computes it.';
COMMENT ON COLUMN core.lineage_dataset_versions.dataset_id IS 'The dataset (core.lineage_datasets).';
COMMENT ON COLUMN core.lineage_dataset_versions.namespace IS 'Dataset namespace.';
COMMENT ON COLUMN core.lineage_dataset_versions.name IS 'Dataset name.';
COMMENT ON COLUMN core.lineage_dataset_versions.version IS 'The version (see the table); NULL for the external, unversioned node.';
COMMENT ON COLUMN core.lineage_dataset_versions.version_source IS 'facet (the version facet), run (an output without one: the producing runId) or none (NULL version). A version named both ways (a run that sends its runId as datasetVersion) has facet.';
COMMENT ON COLUMN core.lineage_dataset_versions.produced_by_run_id IS 'The run whose output it is, by the earliest such event (a tie in eventTime: the smaller run id); NULL for sources (leaves). A version two runs claim keeps the earlier one here; the closure follows every producing run (core.lineage_run_io).';
COMMENT ON COLUMN core.lineage_dataset_versions.produced_at IS 'eventTime of the earliest event naming it as that run''s output (UTC).';
COMMENT ON COLUMN core.lineage_dataset_versions.created_at IS 'Earliest eventTime of an event naming the version (UTC).';

CREATE TABLE core.lineage_run_io_0017 (
    run_id VARCHAR NOT NULL,
    dataset_version_id VARCHAR NOT NULL,
    direction VARCHAR NOT NULL,
    first_event_time TIMESTAMP,
    first_event_id VARCHAR,
    collection_id VARCHAR,
    CHECK (direction IN ('INPUT', 'OUTPUT'))
);
INSERT INTO core.lineage_run_io_0017 SELECT * FROM core.lineage_run_io;
DROP TABLE core.lineage_run_io;
ALTER TABLE core.lineage_run_io_0017 RENAME TO lineage_run_io;
COMMENT ON TABLE core.lineage_run_io IS
    'The edges of the lineage graph: which dataset versions each run read (INPUT) and wrote (OUTPUT), accumulated over all of the run''s events. An event whose run reads and writes the same version is rejected (audit.rejected, reads_own_output); a loop across events is reported in marts.lineage_cycles.';
COMMENT ON COLUMN core.lineage_run_io.run_id IS 'The run (core.lineage_runs).';
COMMENT ON COLUMN core.lineage_run_io.dataset_version_id IS 'The dataset version (core.lineage_dataset_versions).';
COMMENT ON COLUMN core.lineage_run_io.direction IS 'INPUT (read by the run) or OUTPUT (written by it).';
COMMENT ON COLUMN core.lineage_run_io.first_event_time IS 'eventTime of the earliest event naming the edge (UTC).';
COMMENT ON COLUMN core.lineage_run_io.first_event_id IS 'That event (core.lineage_events); a tie in eventTime: the smaller event_id.';
COMMENT ON COLUMN core.lineage_run_io.collection_id IS 'The collection that first loaded the edge.';

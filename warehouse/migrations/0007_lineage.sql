-- 0007 lineage: training-data lineage from OpenLineage events (reference openlineage.md §3, §4).
-- Every event as received (core.lineage_events, unique by its content hash), normalised by the
-- merge of warehouse/models/lineage.py into jobs, runs, datasets, dataset versions, run inputs
-- and outputs and facets, and the marts rebuilt by refresh_lineage (warehouse/models/
-- lineage_refresh.py): each model checkpoint's upstream closure, cycle findings, the EU AI Act
-- training-content summary (Commission template C(2025) 8311) and the link from a training run
-- to its Kubernetes Job.
-- Never edit this file once applied anywhere: add a new migration instead.

CREATE TABLE core.lineage_events (
    event_id VARCHAR PRIMARY KEY,
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
    day DATE NOT NULL,
    collection_id VARCHAR NOT NULL,
    loaded_at TIMESTAMP NOT NULL
);

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

CREATE TABLE core.lineage_jobs (
    job_id VARCHAR PRIMARY KEY,
    namespace VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    first_event_time TIMESTAMP,
    last_event_time TIMESTAMP
);

COMMENT ON TABLE core.lineage_jobs IS
    'OpenLineage jobs (a processing step or training stage, by namespace and name), one row per job seen in any event. Their facets are in core.lineage_facets (entity_kind ''job'').';
COMMENT ON COLUMN core.lineage_jobs.job_id IS 'md5 of namespace, chr(31), name: the job''s key in core.lineage_facets.';
COMMENT ON COLUMN core.lineage_jobs.namespace IS 'job.namespace.';
COMMENT ON COLUMN core.lineage_jobs.name IS 'job.name.';
COMMENT ON COLUMN core.lineage_jobs.first_event_time IS 'Earliest eventTime of an event naming the job (UTC).';
COMMENT ON COLUMN core.lineage_jobs.last_event_time IS 'Latest eventTime of an event naming the job (UTC).';

CREATE TABLE core.lineage_runs (
    run_id VARCHAR PRIMARY KEY,
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

CREATE TABLE core.lineage_datasets (
    dataset_id VARCHAR PRIMARY KEY,
    namespace VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    first_event_time TIMESTAMP
);

COMMENT ON TABLE core.lineage_datasets IS
    'OpenLineage datasets (a corpus, shard, mixture, crawl batch or model checkpoint), by namespace and name (hf://datasets + org/repo, crawl://crawler + crawl id, s3://bucket + key).';
COMMENT ON COLUMN core.lineage_datasets.dataset_id IS 'md5 of namespace, chr(31), name.';
COMMENT ON COLUMN core.lineage_datasets.namespace IS 'Dataset namespace: the data source.';
COMMENT ON COLUMN core.lineage_datasets.name IS 'Dataset name: the path within the source.';
COMMENT ON COLUMN core.lineage_datasets.kind IS 'MODEL when the current datasetType facet of any of its versions says MODEL (a checkpoint), else DATASET.';
COMMENT ON COLUMN core.lineage_datasets.first_event_time IS 'Earliest eventTime of an event naming the dataset (UTC).';

CREATE TABLE core.lineage_dataset_versions (
    dataset_version_id VARCHAR PRIMARY KEY,
    dataset_id VARCHAR NOT NULL,
    namespace VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    version VARCHAR,
    version_source VARCHAR NOT NULL,
    produced_by_run_id VARCHAR,
    produced_at TIMESTAMP,
    created_at TIMESTAMP
);

COMMENT ON TABLE core.lineage_dataset_versions IS
    'Immutable dataset versions, the nodes of the lineage graph. The version is the version facet''s datasetVersion; else, for a run''s output, the producing run''s runId (as Marquez does); else (an input, or a dataset or job event, without a version facet) NULL: the dataset''s external, unversioned node, which no run produces. Send a version facet on inputs to link them to the run that produced them.';
COMMENT ON COLUMN core.lineage_dataset_versions.dataset_version_id IS 'md5 of namespace, chr(31), name, chr(31), version (chr(30) for a NULL version): warehouse.models.lineage.dataset_version_id computes it.';
COMMENT ON COLUMN core.lineage_dataset_versions.dataset_id IS 'The dataset (core.lineage_datasets).';
COMMENT ON COLUMN core.lineage_dataset_versions.namespace IS 'Dataset namespace.';
COMMENT ON COLUMN core.lineage_dataset_versions.name IS 'Dataset name.';
COMMENT ON COLUMN core.lineage_dataset_versions.version IS 'The version (see the table); NULL for the external, unversioned node.';
COMMENT ON COLUMN core.lineage_dataset_versions.version_source IS 'facet (the version facet), run (an output without one: the producing runId) or none (NULL version).';
COMMENT ON COLUMN core.lineage_dataset_versions.produced_by_run_id IS 'The run whose output it is, by the earliest such event; NULL for sources (leaves). A version two runs claim keeps the earlier one here; the closure follows every producing run (core.lineage_run_io).';
COMMENT ON COLUMN core.lineage_dataset_versions.produced_at IS 'eventTime of the earliest event naming it as that run''s output (UTC).';
COMMENT ON COLUMN core.lineage_dataset_versions.created_at IS 'Earliest eventTime of an event naming the version (UTC).';

CREATE TABLE core.lineage_run_io (
    run_id VARCHAR NOT NULL,
    dataset_version_id VARCHAR NOT NULL,
    direction VARCHAR NOT NULL CHECK (direction IN ('INPUT', 'OUTPUT')),
    first_event_time TIMESTAMP,
    first_event_id VARCHAR,
    collection_id VARCHAR,
    PRIMARY KEY (run_id, dataset_version_id, direction)
);

COMMENT ON TABLE core.lineage_run_io IS
    'The edges of the lineage graph: which dataset versions each run read (INPUT) and wrote (OUTPUT), accumulated over all of the run''s events. An event whose run reads and writes the same version is rejected (audit.rejected, reads_own_output); a loop across events is reported in marts.lineage_cycles.';
COMMENT ON COLUMN core.lineage_run_io.run_id IS 'The run (core.lineage_runs).';
COMMENT ON COLUMN core.lineage_run_io.dataset_version_id IS 'The dataset version (core.lineage_dataset_versions).';
COMMENT ON COLUMN core.lineage_run_io.direction IS 'INPUT (read by the run) or OUTPUT (written by it).';
COMMENT ON COLUMN core.lineage_run_io.first_event_time IS 'eventTime of the earliest event naming the edge (UTC).';
COMMENT ON COLUMN core.lineage_run_io.first_event_id IS 'That event (core.lineage_events).';
COMMENT ON COLUMN core.lineage_run_io.collection_id IS 'The collection that first loaded the edge.';

CREATE TABLE core.lineage_facets (
    entity_kind VARCHAR NOT NULL,
    entity_id VARCHAR NOT NULL,
    facet_name VARCHAR NOT NULL,
    event_id VARCHAR NOT NULL,
    event_time TIMESTAMP NOT NULL,
    deleted BOOLEAN NOT NULL,
    facet JSON,
    run_id VARCHAR,
    dataset_version_id VARCHAR,
    day DATE NOT NULL,
    collection_id VARCHAR NOT NULL
);

COMMENT ON TABLE core.lineage_facets IS
    'Every facet of every stored event: one row per entity, facet name and event (unique by construction: an event is normalised once, when first stored). A facet re-sent for the same entity replaces the older one by eventTime (core.lineage_current_facets).';
COMMENT ON COLUMN core.lineage_facets.entity_kind IS 'run, job, dataset (a dataset version''s facets), input (inputFacets of a run''s input) or output (outputFacets).';
COMMENT ON COLUMN core.lineage_facets.entity_id IS 'run: run_id; job: job_id; dataset: dataset_version_id; input/output: run_id || ''/'' || dataset_version_id.';
COMMENT ON COLUMN core.lineage_facets.facet_name IS 'The facet key, e.g. annex_licensing, version, datasetType, annex_trainingRun.';
COMMENT ON COLUMN core.lineage_facets.event_id IS 'The event it came in (core.lineage_events).';
COMMENT ON COLUMN core.lineage_facets.event_time IS 'That event''s eventTime (UTC): the order facets replace each other in.';
COMMENT ON COLUMN core.lineage_facets.deleted IS 'The facet is {"_deleted": true}: from this eventTime on the entity has no such facet.';
COMMENT ON COLUMN core.lineage_facets.facet IS 'The facet object as sent.';
COMMENT ON COLUMN core.lineage_facets.run_id IS 'The run, for run, input and output facets.';
COMMENT ON COLUMN core.lineage_facets.dataset_version_id IS 'The dataset version, for dataset, input and output facets.';
COMMENT ON COLUMN core.lineage_facets.day IS 'UTC date of event_time (the export partition).';
COMMENT ON COLUMN core.lineage_facets.collection_id IS 'The collection that loaded it.';

CREATE TABLE core.lineage_facet_heads (
    entity_kind VARCHAR NOT NULL,
    entity_id VARCHAR NOT NULL,
    facet_name VARCHAR NOT NULL,
    event_id VARCHAR NOT NULL,
    event_time TIMESTAMP NOT NULL,
    deleted BOOLEAN NOT NULL,
    facet JSON,
    run_id VARCHAR,
    dataset_version_id VARCHAR
);

COMMENT ON TABLE core.lineage_facet_heads IS
    'The latest row of core.lineage_facets per entity and facet name (one row each), by eventTime (ties: the larger event_id), deletions included; kept by the merge for the entities a collection touches, so an older event arriving later never overrides a newer facet. Read core.lineage_current_facets.';
COMMENT ON COLUMN core.lineage_facet_heads.entity_kind IS 'As core.lineage_facets.entity_kind.';
COMMENT ON COLUMN core.lineage_facet_heads.entity_id IS 'As core.lineage_facets.entity_id.';
COMMENT ON COLUMN core.lineage_facet_heads.facet_name IS 'The facet key.';
COMMENT ON COLUMN core.lineage_facet_heads.event_id IS 'The event of the latest facet.';
COMMENT ON COLUMN core.lineage_facet_heads.event_time IS 'Its eventTime (UTC).';
COMMENT ON COLUMN core.lineage_facet_heads.deleted IS 'The latest facet is a _deleted marker.';
COMMENT ON COLUMN core.lineage_facet_heads.facet IS 'The latest facet object.';
COMMENT ON COLUMN core.lineage_facet_heads.run_id IS 'The run, for run, input and output facets.';
COMMENT ON COLUMN core.lineage_facet_heads.dataset_version_id IS 'The dataset version, for dataset, input and output facets.';

CREATE VIEW core.lineage_current_facets AS
SELECT entity_kind, entity_id, facet_name, event_id, event_time, facet, run_id, dataset_version_id
FROM core.lineage_facet_heads
WHERE NOT deleted;

COMMENT ON VIEW core.lineage_current_facets IS
    'The current facets of every entity: per entity and facet name the one with the latest eventTime, unless that one is a _deleted marker.';
COMMENT ON COLUMN core.lineage_current_facets.entity_kind IS 'run, job, dataset, input or output.';
COMMENT ON COLUMN core.lineage_current_facets.entity_id IS 'As core.lineage_facets.entity_id.';
COMMENT ON COLUMN core.lineage_current_facets.facet_name IS 'The facet key.';
COMMENT ON COLUMN core.lineage_current_facets.event_id IS 'The event it came in.';
COMMENT ON COLUMN core.lineage_current_facets.event_time IS 'Its eventTime (UTC).';
COMMENT ON COLUMN core.lineage_current_facets.facet IS 'The facet object.';
COMMENT ON COLUMN core.lineage_current_facets.run_id IS 'The run, for run, input and output facets.';
COMMENT ON COLUMN core.lineage_current_facets.dataset_version_id IS 'The dataset version, for dataset, input and output facets.';

CREATE VIEW core.lineage_version_facets AS
WITH own AS (
    SELECT dataset_version_id, facet_name, facet, event_time, false AS inherited
    FROM core.lineage_current_facets
    WHERE entity_kind = 'dataset'
),
unversioned AS (
    SELECT v.dataset_id, o.facet_name, o.facet, o.event_time
    FROM own AS o
    JOIN core.lineage_dataset_versions AS v ON v.dataset_version_id = o.dataset_version_id
    WHERE v.version IS NULL
)
SELECT * FROM own
UNION ALL
SELECT v.dataset_version_id, u.facet_name, u.facet, u.event_time, true
FROM core.lineage_dataset_versions AS v
JOIN unversioned AS u ON u.dataset_id = v.dataset_id
WHERE v.version IS NOT NULL
  AND NOT EXISTS (
      SELECT 1 FROM own AS o
      WHERE o.dataset_version_id = v.dataset_version_id AND o.facet_name = u.facet_name
  );

COMMENT ON VIEW core.lineage_version_facets IS
    'The effective dataset facets of each dataset version: its own current facets, and for a facet it has none of, the current one of its dataset''s unversioned node (what dataset events, Croissant and Hugging Face card imports without a version facet say about the dataset as a whole).';
COMMENT ON COLUMN core.lineage_version_facets.dataset_version_id IS 'The dataset version.';
COMMENT ON COLUMN core.lineage_version_facets.facet_name IS 'The facet key.';
COMMENT ON COLUMN core.lineage_version_facets.facet IS 'The facet object.';
COMMENT ON COLUMN core.lineage_version_facets.event_time IS 'eventTime of the event it came in (UTC).';
COMMENT ON COLUMN core.lineage_version_facets.inherited IS 'True when taken from the dataset''s unversioned node.';

-- Marts, rebuilt by refresh_lineage ----------------------------------------------------------

CREATE TABLE marts.lineage_models (
    model_version_id VARCHAR NOT NULL,
    model_name VARCHAR NOT NULL,
    namespace VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    version VARCHAR,
    produced_by_run_id VARCHAR,
    stage VARCHAR,
    created_at TIMESTAMP,
    upstream_versions BIGINT NOT NULL,
    leaf_versions BIGINT NOT NULL,
    on_cycle BOOLEAN NOT NULL,
    refreshed_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE marts.lineage_models IS
    'Every model checkpoint: a dataset version of kind MODEL that a run produced. Rebuilt by refresh_lineage.';
COMMENT ON COLUMN marts.lineage_models.model_version_id IS 'The checkpoint''s dataset_version_id.';
COMMENT ON COLUMN marts.lineage_models.model_name IS 'annex_trainingRun.modelName of the producing run; else the checkpoint''s dataset name.';
COMMENT ON COLUMN marts.lineage_models.namespace IS 'Checkpoint namespace.';
COMMENT ON COLUMN marts.lineage_models.name IS 'Checkpoint name.';
COMMENT ON COLUMN marts.lineage_models.version IS 'Checkpoint version.';
COMMENT ON COLUMN marts.lineage_models.produced_by_run_id IS 'The run that produced it.';
COMMENT ON COLUMN marts.lineage_models.stage IS 'annex_trainingRun.stage of that run.';
COMMENT ON COLUMN marts.lineage_models.created_at IS 'Earliest eventTime naming the checkpoint (UTC).';
COMMENT ON COLUMN marts.lineage_models.upstream_versions IS 'Dataset versions in its upstream closure (marts.lineage_model_inputs).';
COMMENT ON COLUMN marts.lineage_models.leaf_versions IS 'Of those, leaves: versions no run produced (sources).';
COMMENT ON COLUMN marts.lineage_models.on_cycle IS 'The checkpoint or a version of its closure is on a cycle (marts.lineage_cycles).';
COMMENT ON COLUMN marts.lineage_models.refreshed_at IS 'When refresh_lineage built the row (UTC).';

CREATE TABLE marts.lineage_model_inputs (
    model_version_id VARCHAR NOT NULL,
    model_name VARCHAR NOT NULL,
    dataset_version_id VARCHAR NOT NULL,
    namespace VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    version VARCHAR,
    kind VARCHAR NOT NULL,
    depth INTEGER NOT NULL,
    is_leaf BOOLEAN NOT NULL,
    in_eu_scope BOOLEAN NOT NULL
);

COMMENT ON TABLE marts.lineage_model_inputs IS
    'The transitive upstream closure of every model checkpoint: each dataset version it was derived from, once (a recursion over the node set that ends on diamonds and cycles), walking from a version to every run that wrote it and to that run''s inputs.';
COMMENT ON COLUMN marts.lineage_model_inputs.model_version_id IS 'The checkpoint (marts.lineage_models).';
COMMENT ON COLUMN marts.lineage_model_inputs.model_name IS 'Its model name.';
COMMENT ON COLUMN marts.lineage_model_inputs.dataset_version_id IS 'An upstream dataset version (core.lineage_dataset_versions).';
COMMENT ON COLUMN marts.lineage_model_inputs.namespace IS 'Its dataset namespace.';
COMMENT ON COLUMN marts.lineage_model_inputs.name IS 'Its dataset name.';
COMMENT ON COLUMN marts.lineage_model_inputs.version IS 'Its version.';
COMMENT ON COLUMN marts.lineage_model_inputs.kind IS 'MODEL (another checkpoint, e.g. a base model or a teacher) or DATASET.';
COMMENT ON COLUMN marts.lineage_model_inputs.depth IS 'Fewest runs between it and the checkpoint (1: an input of the run that wrote the checkpoint).';
COMMENT ON COLUMN marts.lineage_model_inputs.is_leaf IS 'No run produced it: a source.';
COMMENT ON COLUMN marts.lineage_model_inputs.in_eu_scope IS 'Reached without passing through another model''s checkpoint (one of another model_name): the training content of this model for the EU summary. A teacher checkpoint itself is in scope (a generator model), its own training data is not.';

CREATE TABLE marts.lineage_cycles (
    cycle_id VARCHAR NOT NULL,
    dataset_version_id VARCHAR NOT NULL,
    namespace VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    version VARCHAR,
    cycle_versions BIGINT NOT NULL,
    example_run_id VARCHAR,
    refreshed_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE marts.lineage_cycles IS
    'Findings: dataset versions on a cycle of the lineage graph (a version upstream of itself, which only a producer reusing version ids can cause). One row per version on a cycle; versions that reach each other share a cycle_id. The closures end on cycles; this table says where they are.';
COMMENT ON COLUMN marts.lineage_cycles.cycle_id IS 'The smallest dataset_version_id of the versions that reach each other (a strongly connected component).';
COMMENT ON COLUMN marts.lineage_cycles.dataset_version_id IS 'A version on the cycle.';
COMMENT ON COLUMN marts.lineage_cycles.namespace IS 'Its dataset namespace.';
COMMENT ON COLUMN marts.lineage_cycles.name IS 'Its dataset name.';
COMMENT ON COLUMN marts.lineage_cycles.version IS 'Its version.';
COMMENT ON COLUMN marts.lineage_cycles.cycle_versions IS 'Versions in the component.';
COMMENT ON COLUMN marts.lineage_cycles.example_run_id IS 'A run that wrote this version and read a version of the component.';
COMMENT ON COLUMN marts.lineage_cycles.refreshed_at IS 'When refresh_lineage found it (UTC).';

CREATE MACRO marts.lineage_upstream(version_id) AS TABLE
WITH RECURSIVE up(dv) AS (
    SELECT i.dataset_version_id
    FROM core.lineage_run_io AS o
    JOIN core.lineage_run_io AS i ON i.run_id = o.run_id AND i.direction = 'INPUT'
    WHERE o.dataset_version_id = version_id AND o.direction = 'OUTPUT'
    UNION
    SELECT i.dataset_version_id
    FROM up
    JOIN core.lineage_run_io AS o ON o.dataset_version_id = up.dv AND o.direction = 'OUTPUT'
    JOIN core.lineage_run_io AS i ON i.run_id = o.run_id AND i.direction = 'INPUT'
)
SELECT
    up.dv AS dataset_version_id,
    v.namespace,
    v.name,
    v.version,
    NOT EXISTS (
        SELECT 1 FROM core.lineage_run_io AS p
        WHERE p.dataset_version_id = up.dv AND p.direction = 'OUTPUT'
    ) AS is_leaf
FROM up
JOIN core.lineage_dataset_versions AS v ON v.dataset_version_id = up.dv;

-- The current facets of each version of a model's closure, one row per version, the fields the
-- EU summary reads pulled out (NULL where the facet is missing).
CREATE VIEW marts.lineage_model_sources AS
WITH f AS (
    SELECT
        dataset_version_id,
        any_value(facet) FILTER (WHERE facet_name = 'annex_source') AS src,
        any_value(facet) FILTER (WHERE facet_name = 'annex_licensing') AS lic,
        any_value(facet) FILTER (WHERE facet_name = 'annex_content') AS content,
        any_value(facet) FILTER (WHERE facet_name = 'annex_crawl') AS crawl,
        any_value(facet) FILTER (WHERE facet_name = 'annex_personalData') AS personal,
        any_value(facet) FILTER (WHERE facet_name = 'annex_illegalContent') AS illegal
    FROM core.lineage_version_facets
    WHERE facet_name IN ('annex_source', 'annex_licensing', 'annex_content', 'annex_crawl',
                         'annex_personalData', 'annex_illegalContent')
    GROUP BY dataset_version_id
)
SELECT
    m.model_version_id,
    m.model_name,
    m.dataset_version_id,
    m.namespace,
    m.name,
    m.version,
    m.kind,
    m.depth,
    m.is_leaf,
    CASE
        WHEN m.kind = 'MODEL' THEN 'MODEL'
        ELSE coalesce(f.src ->> '$.sourceCategory', CASE WHEN m.is_leaf THEN 'UNKNOWN' ELSE 'DERIVED' END)
    END AS source_category,
    CAST(f.src -> '$.publiclyAvailable' AS BOOLEAN) AS publicly_available,
    f.src ->> '$.description' AS description,
    CAST(f.src -> '$.generatorModels' AS VARCHAR[]) AS generator_models,
    f.lic ->> '$.spdxExpression' AS spdx_expression,
    f.lic ->> '$.hfLicenseId' AS hf_license_id,
    f.lic ->> '$.copyrightStatus' AS copyright_status,
    f.lic ->> '$.tdmExceptionReliedOn' AS tdm_exception,
    f.lic ->> '$.licensor' AS licensor,
    f.content ->> '$.modality' AS modality,
    CAST(f.content -> '$.size.tokens' AS HUGEINT) AS size_tokens,
    CAST(f.content -> '$.size.bytes' AS HUGEINT) AS size_bytes,
    CAST(f.content -> '$.size.items' AS HUGEINT) AS size_items,
    CAST(f.content -> '$.languages' AS VARCHAR[]) AS languages,
    CAST(f.content -> '$.contentTypes' AS VARCHAR[]) AS content_types,
    TRY_CAST(f.content ->> '$.latestCollectionDate' AS DATE) AS latest_collection_date,
    f.content -> '$.domainStats' AS domain_stats,
    f.crawl,
    f.personal ->> '$.present' AS personal_data_present,
    f.personal ->> '$.sensitive' AS personal_data_sensitive,
    CAST(f.personal -> '$.measures' AS VARCHAR[]) AS personal_data_measures,
    CAST(f.illegal -> '$.measures' AS VARCHAR[]) AS illegal_content_measures,
    CAST(f.illegal -> '$.removedItems' AS HUGEINT) AS illegal_content_removed_items
FROM marts.lineage_model_inputs AS m
LEFT JOIN f ON f.dataset_version_id = m.dataset_version_id
WHERE m.in_eu_scope;

COMMENT ON VIEW marts.lineage_model_sources IS
    'The training content of each model for the EU summary: the versions of its closure in EU scope (marts.lineage_model_inputs.in_eu_scope), with the fields of their effective annex_ facets (core.lineage_version_facets). The other marts.lineage_eu_* views read it.';
COMMENT ON COLUMN marts.lineage_model_sources.model_version_id IS 'The checkpoint.';
COMMENT ON COLUMN marts.lineage_model_sources.model_name IS 'Its model name.';
COMMENT ON COLUMN marts.lineage_model_sources.dataset_version_id IS 'An upstream version in EU scope.';
COMMENT ON COLUMN marts.lineage_model_sources.namespace IS 'Its dataset namespace.';
COMMENT ON COLUMN marts.lineage_model_sources.name IS 'Its dataset name.';
COMMENT ON COLUMN marts.lineage_model_sources.version IS 'Its version.';
COMMENT ON COLUMN marts.lineage_model_sources.kind IS 'MODEL or DATASET.';
COMMENT ON COLUMN marts.lineage_model_sources.depth IS 'Fewest runs between it and the checkpoint.';
COMMENT ON COLUMN marts.lineage_model_sources.is_leaf IS 'No run produced it.';
COMMENT ON COLUMN marts.lineage_model_sources.source_category IS 'annex_source.sourceCategory (PUBLIC_DATASET, PRIVATE_LICENSED, PRIVATE_THIRD_PARTY, CRAWLED, USER_DATA, SYNTHETIC, OTHER, DERIVED); MODEL for a checkpoint; without the facet UNKNOWN for a leaf (a gap to fix) and DERIVED otherwise.';
COMMENT ON COLUMN marts.lineage_model_sources.publicly_available IS 'annex_source.publiclyAvailable.';
COMMENT ON COLUMN marts.lineage_model_sources.description IS 'annex_source.description.';
COMMENT ON COLUMN marts.lineage_model_sources.generator_models IS 'annex_source.generatorModels (SYNTHETIC).';
COMMENT ON COLUMN marts.lineage_model_sources.spdx_expression IS 'annex_licensing.spdxExpression (SPDX id or expression, or NOASSERTION).';
COMMENT ON COLUMN marts.lineage_model_sources.hf_license_id IS 'annex_licensing.hfLicenseId.';
COMMENT ON COLUMN marts.lineage_model_sources.copyright_status IS 'annex_licensing.copyrightStatus.';
COMMENT ON COLUMN marts.lineage_model_sources.tdm_exception IS 'annex_licensing.tdmExceptionReliedOn (EU_DSM_ART3, EU_DSM_ART4, NONE).';
COMMENT ON COLUMN marts.lineage_model_sources.licensor IS 'annex_licensing.licensor.';
COMMENT ON COLUMN marts.lineage_model_sources.modality IS 'annex_content.modality (TEXT, IMAGE, AUDIO, VIDEO, OTHER).';
COMMENT ON COLUMN marts.lineage_model_sources.size_tokens IS 'annex_content.size.tokens.';
COMMENT ON COLUMN marts.lineage_model_sources.size_bytes IS 'annex_content.size.bytes.';
COMMENT ON COLUMN marts.lineage_model_sources.size_items IS 'annex_content.size.items.';
COMMENT ON COLUMN marts.lineage_model_sources.languages IS 'annex_content.languages (BCP-47).';
COMMENT ON COLUMN marts.lineage_model_sources.content_types IS 'annex_content.contentTypes.';
COMMENT ON COLUMN marts.lineage_model_sources.latest_collection_date IS 'annex_content.latestCollectionDate.';
COMMENT ON COLUMN marts.lineage_model_sources.domain_stats IS 'annex_content.domainStats (topN [{domain, tokens}], fullStatsUri).';
COMMENT ON COLUMN marts.lineage_model_sources.crawl IS 'The annex_crawl facet.';
COMMENT ON COLUMN marts.lineage_model_sources.personal_data_present IS 'annex_personalData.present (yes, no, noAssertion).';
COMMENT ON COLUMN marts.lineage_model_sources.personal_data_sensitive IS 'annex_personalData.sensitive.';
COMMENT ON COLUMN marts.lineage_model_sources.personal_data_measures IS 'annex_personalData.measures.';
COMMENT ON COLUMN marts.lineage_model_sources.illegal_content_measures IS 'annex_illegalContent.measures.';
COMMENT ON COLUMN marts.lineage_model_sources.illegal_content_removed_items IS 'annex_illegalContent.removedItems.';

-- EU template 1.3: size per modality, measured after pre-processing: the tokens the training
-- runs consumed (annex_trainingUsage.tokensConsumed on the inputs of PRETRAINING and
-- FINE_TUNING runs writing the checkpoint or a version of its EU scope), else the input's
-- annex_content size.
CREATE VIEW marts.lineage_eu_summary_size AS
WITH training_runs AS (
    SELECT DISTINCT s.model_version_id, s.model_name, o.run_id
    FROM (
        SELECT model_version_id, model_name, dataset_version_id FROM marts.lineage_model_sources
        UNION ALL
        SELECT model_version_id, model_name, model_version_id FROM marts.lineage_models
    ) AS s
    JOIN core.lineage_run_io AS o
        ON o.dataset_version_id = s.dataset_version_id AND o.direction = 'OUTPUT'
    JOIN core.lineage_runs AS r ON r.run_id = o.run_id
    LEFT JOIN marts.lineage_models AS other ON other.model_version_id = s.dataset_version_id
    WHERE r.stage IN ('PRETRAINING', 'FINE_TUNING')
      AND (other.model_name IS NULL OR other.model_name = s.model_name)
),
consumed AS (
    SELECT
        t.model_version_id,
        t.model_name,
        coalesce(c.facet ->> '$.modality', 'UNKNOWN') AS modality,
        CAST(coalesce(u.facet -> '$.tokensConsumed', c.facet -> '$.size.tokens') AS HUGEINT)
            AS tokens,
        CAST(c.facet -> '$.size.bytes' AS HUGEINT) AS bytes,
        CAST(c.facet -> '$.size.items' AS HUGEINT) AS items,
        u.facet IS NOT NULL AS measured_usage
    FROM training_runs AS t
    JOIN core.lineage_run_io AS i ON i.run_id = t.run_id AND i.direction = 'INPUT'
    JOIN core.lineage_dataset_versions AS v ON v.dataset_version_id = i.dataset_version_id
    JOIN core.lineage_datasets AS d ON d.dataset_id = v.dataset_id
    LEFT JOIN core.lineage_version_facets AS c
        ON c.dataset_version_id = i.dataset_version_id AND c.facet_name = 'annex_content'
    LEFT JOIN core.lineage_current_facets AS u
        ON u.entity_kind = 'input' AND u.entity_id = i.run_id || '/' || i.dataset_version_id
        AND u.facet_name = 'annex_trainingUsage'
    WHERE d.kind <> 'MODEL'
),
sized AS (
    SELECT
        model_version_id,
        any_value(model_name) AS model_name,
        modality,
        sum(tokens) AS tokens,
        sum(bytes) AS bytes,
        sum(items) AS items,
        count(*) AS training_inputs,
        bool_and(measured_usage) AS all_from_usage
    FROM consumed
    GROUP BY model_version_id, modality
)
SELECT
    *,
    CASE
        WHEN modality = 'TEXT' AND tokens IS NULL THEN NULL
        WHEN modality = 'TEXT' AND tokens < 1000000000 THEN 'Less than 1 billion tokens'
        WHEN modality = 'TEXT' AND tokens <= 10000000000000 THEN '1 billion to 10 trillion tokens'
        WHEN modality = 'TEXT' THEN 'More than 10 trillion tokens'
        WHEN modality = 'IMAGE' AND items IS NULL THEN NULL
        WHEN modality = 'IMAGE' AND items < 1000000 THEN 'Less than 1 million images'
        WHEN modality = 'IMAGE' AND items <= 1000000000 THEN '1 million to 1 billion images'
        WHEN modality = 'IMAGE' THEN 'More than 1 billion images'
    END AS band
FROM sized;

COMMENT ON VIEW marts.lineage_eu_summary_size IS
    'EU training-content summary 1.3, per model checkpoint and modality: the training data''s size after pre-processing (tokens the PRETRAINING and FINE_TUNING runs of its EU scope consumed, from annex_trainingUsage, else the inputs'' annex_content size), in the template''s bands for text and images; other modalities are reported as measured (band NULL).';
COMMENT ON COLUMN marts.lineage_eu_summary_size.model_version_id IS 'The checkpoint.';
COMMENT ON COLUMN marts.lineage_eu_summary_size.model_name IS 'Its model name.';
COMMENT ON COLUMN marts.lineage_eu_summary_size.modality IS 'annex_content.modality of the training inputs; UNKNOWN without one.';
COMMENT ON COLUMN marts.lineage_eu_summary_size.tokens IS 'Tokens consumed (annex_trainingUsage.tokensConsumed, else annex_content.size.tokens).';
COMMENT ON COLUMN marts.lineage_eu_summary_size.bytes IS 'annex_content.size.bytes of the training inputs.';
COMMENT ON COLUMN marts.lineage_eu_summary_size.items IS 'annex_content.size.items of the training inputs (images for IMAGE).';
COMMENT ON COLUMN marts.lineage_eu_summary_size.training_inputs IS 'Training-run input edges summed.';
COMMENT ON COLUMN marts.lineage_eu_summary_size.all_from_usage IS 'Every edge carried annex_trainingUsage (else some tokens are the inputs'' full size).';
COMMENT ON COLUMN marts.lineage_eu_summary_size.band IS 'The template''s range: text < 1B, 1B-10T, > 10T tokens; images < 1M, 1M-1B, > 1B; NULL for other modalities (report tokens, bytes, items as measured).';

CREATE VIEW marts.lineage_eu_sources AS
SELECT
    model_version_id,
    model_name,
    CASE source_category
        WHEN 'PUBLIC_DATASET' THEN '2.1'
        WHEN 'PRIVATE_LICENSED' THEN '2.2.1'
        WHEN 'PRIVATE_THIRD_PARTY' THEN '2.2.2'
        WHEN 'CRAWLED' THEN '2.3'
        WHEN 'USER_DATA' THEN '2.4'
        WHEN 'SYNTHETIC' THEN '2.5'
        WHEN 'OTHER' THEN '2.6'
    END AS section,
    source_category,
    dataset_version_id,
    namespace,
    name,
    version,
    is_leaf,
    publicly_available,
    description,
    spdx_expression,
    hf_license_id,
    copyright_status,
    tdm_exception,
    licensor,
    modality,
    size_tokens,
    languages,
    latest_collection_date,
    personal_data_present
FROM marts.lineage_model_sources
WHERE source_category NOT IN ('DERIVED', 'MODEL');

COMMENT ON VIEW marts.lineage_eu_sources IS
    'EU training-content summary section 2, per model checkpoint: every source of its training content by category (2.1 public datasets, 2.2.1 licensed from rightsholders, 2.2.2 other private third-party, 2.3 crawled, 2.4 user data, 2.5 synthetic, 2.6 other), with licence. Leaves without annex_source appear as UNKNOWN (section NULL): a gap to fix.';
COMMENT ON COLUMN marts.lineage_eu_sources.model_version_id IS 'The checkpoint.';
COMMENT ON COLUMN marts.lineage_eu_sources.model_name IS 'Its model name.';
COMMENT ON COLUMN marts.lineage_eu_sources.section IS 'Template section: 2.1, 2.2.1, 2.2.2, 2.3, 2.4, 2.5 or 2.6; NULL for UNKNOWN.';
COMMENT ON COLUMN marts.lineage_eu_sources.source_category IS 'annex_source.sourceCategory, or UNKNOWN.';
COMMENT ON COLUMN marts.lineage_eu_sources.dataset_version_id IS 'The source''s dataset version.';
COMMENT ON COLUMN marts.lineage_eu_sources.namespace IS 'Its dataset namespace.';
COMMENT ON COLUMN marts.lineage_eu_sources.name IS 'Its dataset name.';
COMMENT ON COLUMN marts.lineage_eu_sources.version IS 'Its version.';
COMMENT ON COLUMN marts.lineage_eu_sources.is_leaf IS 'No run produced it.';
COMMENT ON COLUMN marts.lineage_eu_sources.publicly_available IS 'annex_source.publiclyAvailable.';
COMMENT ON COLUMN marts.lineage_eu_sources.description IS 'annex_source.description.';
COMMENT ON COLUMN marts.lineage_eu_sources.spdx_expression IS 'annex_licensing.spdxExpression.';
COMMENT ON COLUMN marts.lineage_eu_sources.hf_license_id IS 'annex_licensing.hfLicenseId.';
COMMENT ON COLUMN marts.lineage_eu_sources.copyright_status IS 'annex_licensing.copyrightStatus.';
COMMENT ON COLUMN marts.lineage_eu_sources.tdm_exception IS 'annex_licensing.tdmExceptionReliedOn.';
COMMENT ON COLUMN marts.lineage_eu_sources.licensor IS 'annex_licensing.licensor.';
COMMENT ON COLUMN marts.lineage_eu_sources.modality IS 'annex_content.modality.';
COMMENT ON COLUMN marts.lineage_eu_sources.size_tokens IS 'annex_content.size.tokens.';
COMMENT ON COLUMN marts.lineage_eu_sources.languages IS 'annex_content.languages.';
COMMENT ON COLUMN marts.lineage_eu_sources.latest_collection_date IS 'annex_content.latestCollectionDate.';
COMMENT ON COLUMN marts.lineage_eu_sources.personal_data_present IS 'annex_personalData.present.';

CREATE VIEW marts.lineage_eu_crawlers AS
SELECT
    model_version_id,
    any_value(model_name) AS model_name,
    crawl ->> '$.crawlerName' AS crawler_name,
    string_agg(DISTINCT crawl ->> '$.purpose', ', ') AS purposes,
    min(TRY_CAST(crawl ->> '$.collectionPeriod.start' AS DATE)) AS collection_start,
    max(TRY_CAST(crawl ->> '$.collectionPeriod.end' AS DATE)) AS collection_end,
    string_agg(DISTINCT crawl ->> '$.optOut.robotsTxt', ', ') AS robots_txt,
    string_agg(DISTINCT crawl ->> '$.optOut.tdmrep', ', ') AS tdmrep,
    string_agg(DISTINCT crawl ->> '$.optOut.ietfAipref', ', ') AS ietf_aipref,
    string_agg(DISTINCT crawl ->> '$.optOut.aiTxt', ', ') AS ai_txt,
    string_agg(DISTINCT crawl ->> '$.optOut.checkedAt', ', ') AS opt_out_checked_at,
    sum(CAST(crawl -> '$.optOut.documentsExcluded' AS HUGEINT)) AS documents_excluded,
    string_agg(DISTINCT crawl ->> '$.paywallPolicy', ', ') AS paywall_policy,
    string_agg(DISTINCT modality, ', ') AS modalities,
    count(*) AS datasets
FROM marts.lineage_model_sources
WHERE source_category = 'CRAWLED' AND crawl IS NOT NULL
GROUP BY model_version_id, crawl ->> '$.crawlerName';

COMMENT ON VIEW marts.lineage_eu_crawlers IS
    'EU training-content summary 2.3, per model checkpoint and crawler: purpose, collection period, behaviour towards opt-outs (robots.txt, TDMRep, IETF AIPREF, ai.txt) and paywalls, from the annex_crawl facets of its crawled sources. Several values of one field are listed comma-separated.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.model_version_id IS 'The checkpoint.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.model_name IS 'Its model name.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.crawler_name IS 'annex_crawl.crawlerName.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.purposes IS 'annex_crawl.purpose values.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.collection_start IS 'Earliest collectionPeriod.start.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.collection_end IS 'Latest collectionPeriod.end.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.robots_txt IS 'optOut.robotsTxt values (RESPECTED, NOT_RESPECTED, NOT_CHECKED).';
COMMENT ON COLUMN marts.lineage_eu_crawlers.tdmrep IS 'optOut.tdmrep values.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.ietf_aipref IS 'optOut.ietfAipref values.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.ai_txt IS 'optOut.aiTxt values.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.opt_out_checked_at IS 'optOut.checkedAt values (FETCH_TIME, INGEST_TIME).';
COMMENT ON COLUMN marts.lineage_eu_crawlers.documents_excluded IS 'Sum of optOut.documentsExcluded.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.paywall_policy IS 'paywallPolicy values.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.modalities IS 'annex_content.modality values of the crawled datasets.';
COMMENT ON COLUMN marts.lineage_eu_crawlers.datasets IS 'Crawled dataset versions of the crawler.';

CREATE MACRO marts.lineage_top_domains(top_share) AS TABLE
WITH d AS (
    SELECT s.model_version_id, any_value(s.model_name) AS model_name, t.e.domain AS domain,
           sum(t.e.tokens) AS tokens
    FROM marts.lineage_model_sources AS s,
         unnest(CAST(s.domain_stats -> '$.topN' AS STRUCT(domain VARCHAR, tokens DOUBLE)[]))
             AS t(e)
    WHERE s.source_category = 'CRAWLED'
    GROUP BY s.model_version_id, t.e.domain
),
r AS (
    SELECT
        *,
        tokens / sum(tokens) OVER (PARTITION BY model_version_id) AS share,
        row_number() OVER (PARTITION BY model_version_id ORDER BY tokens DESC, domain) AS rank,
        count(*) OVER (PARTITION BY model_version_id) AS domains
    FROM d
)
SELECT model_version_id, model_name, domain, tokens, share, rank, domains
FROM r
WHERE rank <= ceil(top_share * domains);

CREATE VIEW marts.lineage_eu_top_domains AS
SELECT * FROM marts.lineage_top_domains(0.10);

COMMENT ON VIEW marts.lineage_eu_top_domains IS
    'EU training-content summary 2.3, the most relevant domain names per model checkpoint: the top 10% of the domains of its crawled sources by tokens (annex_content.domainStats.topN), with their share. For another cut-off (5% or 1,000 for SMEs) call the table macro marts.lineage_top_domains(share).';
COMMENT ON COLUMN marts.lineage_eu_top_domains.model_version_id IS 'The checkpoint.';
COMMENT ON COLUMN marts.lineage_eu_top_domains.model_name IS 'Its model name.';
COMMENT ON COLUMN marts.lineage_eu_top_domains.domain IS 'Domain name.';
COMMENT ON COLUMN marts.lineage_eu_top_domains.tokens IS 'Tokens from the domain over the crawled sources.';
COMMENT ON COLUMN marts.lineage_eu_top_domains.share IS 'Its share of the tokens of all domains listed.';
COMMENT ON COLUMN marts.lineage_eu_top_domains.rank IS '1 for the largest domain.';
COMMENT ON COLUMN marts.lineage_eu_top_domains.domains IS 'Domains listed for the checkpoint in all (the cut-off is ceil(share × domains)).';

CREATE VIEW marts.lineage_eu_synthetic AS
SELECT
    model_version_id,
    model_name,
    dataset_version_id,
    namespace,
    name,
    version,
    generator_models,
    (
        SELECT list(DISTINCT v.name ORDER BY v.name)
        FROM core.lineage_run_io AS o
        JOIN core.lineage_run_io AS i ON i.run_id = o.run_id AND i.direction = 'INPUT'
        JOIN core.lineage_dataset_versions AS v ON v.dataset_version_id = i.dataset_version_id
        JOIN core.lineage_datasets AS d ON d.dataset_id = v.dataset_id
        WHERE o.dataset_version_id = s.dataset_version_id AND o.direction = 'OUTPUT'
          AND d.kind = 'MODEL'
    ) AS generator_checkpoints,
    modality,
    size_tokens,
    description
FROM marts.lineage_model_sources AS s
WHERE source_category = 'SYNTHETIC';

COMMENT ON VIEW marts.lineage_eu_synthetic IS
    'EU training-content summary 2.5, per model checkpoint: the synthetic datasets of its training content with the models that generated them.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.model_version_id IS 'The checkpoint.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.model_name IS 'Its model name.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.dataset_version_id IS 'The synthetic dataset version.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.namespace IS 'Its dataset namespace.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.name IS 'Its dataset name.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.version IS 'Its version.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.generator_models IS 'annex_source.generatorModels.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.generator_checkpoints IS 'Names of the model checkpoints the runs that wrote the synthetic dataset read (the generators the lineage shows); NULL when none.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.modality IS 'annex_content.modality.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.size_tokens IS 'annex_content.size.tokens.';
COMMENT ON COLUMN marts.lineage_eu_synthetic.description IS 'annex_source.description.';

CREATE VIEW marts.lineage_eu_measures AS
WITH crawl AS (
    SELECT model_version_id, model_name, dataset_version_id, crawl
    FROM marts.lineage_model_sources
    WHERE crawl IS NOT NULL
),
measures AS (
    SELECT model_version_id, model_name, dataset_version_id, 'tdm_opt_out' AS kind,
           p.k || ': ' || coalesce(crawl ->> ('$.optOut.' || p.k), 'NOT_STATED') AS measure,
           CAST(crawl -> '$.optOut.documentsExcluded' AS HUGEINT) AS items
    FROM crawl, (VALUES ('robotsTxt'), ('tdmrep'), ('ietfAipref'), ('aiTxt')) AS p(k)
    UNION ALL
    SELECT model_version_id, model_name, dataset_version_id, 'paywall',
           'paywallPolicy: ' || coalesce(crawl ->> '$.paywallPolicy', 'NOT_STATED'), NULL
    FROM crawl
    UNION ALL
    SELECT model_version_id, model_name, dataset_version_id, 'illegal_content',
           unnest(illegal_content_measures), illegal_content_removed_items
    FROM marts.lineage_model_sources
    WHERE illegal_content_measures IS NOT NULL
    UNION ALL
    SELECT model_version_id, model_name, dataset_version_id, 'personal_data',
           unnest(personal_data_measures), NULL
    FROM marts.lineage_model_sources
    WHERE personal_data_measures IS NOT NULL
)
SELECT
    model_version_id,
    any_value(model_name) AS model_name,
    kind,
    measure,
    count(DISTINCT dataset_version_id) AS datasets,
    sum(items) AS items
FROM measures
GROUP BY model_version_id, kind, measure;

COMMENT ON VIEW marts.lineage_eu_measures IS
    'EU training-content summary 3.1 and 3.2, per model checkpoint: the measures its training content''s facets state: text-and-data-mining opt-outs honoured by crawlers (tdm_opt_out: signal and behaviour, documents excluded), paywall policy, illegal-content removal (with items removed), personal-data measures.';
COMMENT ON COLUMN marts.lineage_eu_measures.model_version_id IS 'The checkpoint.';
COMMENT ON COLUMN marts.lineage_eu_measures.model_name IS 'Its model name.';
COMMENT ON COLUMN marts.lineage_eu_measures.kind IS 'tdm_opt_out, paywall, illegal_content or personal_data.';
COMMENT ON COLUMN marts.lineage_eu_measures.measure IS 'The measure: signal: behaviour for opt-outs and paywalls, else the measure''s name as stated.';
COMMENT ON COLUMN marts.lineage_eu_measures.datasets IS 'Dataset versions stating it.';
COMMENT ON COLUMN marts.lineage_eu_measures.items IS 'Items concerned: documents excluded by opt-outs, items removed as illegal content (sums over the datasets).';

CREATE VIEW marts.lineage_run_jobs AS
WITH jobs AS (
    SELECT cluster, namespace, job_name, any_value(job_uid) AS job_uid,
           min(started_at) AS job_started_at, max(completed_at) AS job_completed_at,
           any_value(finished_condition) AS finished_condition, bool_or(present) AS present
    FROM core.jobs
    GROUP BY cluster, namespace, job_name
),
hours AS (
    SELECT cluster, namespace, job_name,
           sum(gpus * (epoch_us(coalesce(valid_to, CAST(timezone('UTC', now()) AS TIMESTAMP)))
                       - epoch_us(valid_from))) / 3.6e9 AS gpu_hours
    FROM core.gpu_allocations
    WHERE resource_name = 'nvidia.com/gpu' AND job_name IS NOT NULL
    GROUP BY cluster, namespace, job_name
)
SELECT
    r.run_id,
    r.model_name,
    r.stage,
    r.state,
    r.started_at,
    r.ended_at,
    r.kubernetes_cluster,
    r.kubernetes_namespace,
    r.kubernetes_job_name,
    r.kubernetes_cluster IS NOT NULL AND r.kubernetes_namespace IS NOT NULL
        AND r.kubernetes_job_name IS NOT NULL AS has_kubernetes_facet,
    j.job_name IS NOT NULL AS job_known,
    j.job_uid,
    j.job_started_at,
    j.job_completed_at,
    j.finished_condition AS job_finished_condition,
    h.gpu_hours
FROM core.lineage_runs AS r
LEFT JOIN jobs AS j
    ON j.cluster = r.kubernetes_cluster AND j.namespace = r.kubernetes_namespace
    AND j.job_name = r.kubernetes_job_name
LEFT JOIN hours AS h
    ON h.cluster = r.kubernetes_cluster AND h.namespace = r.kubernetes_namespace
    AND h.job_name = r.kubernetes_job_name
WHERE r.stage IN ('PRETRAINING', 'FINE_TUNING');

COMMENT ON VIEW marts.lineage_run_jobs IS
    'Every training run (annex_trainingRun.stage PRETRAINING or FINE_TUNING) with the Kubernetes Job its annex_trainingRun.kubernetes facet names (core.jobs by cluster, namespace and job name) and that Job''s GPU-hours (core.gpu_allocations). A check expects job_known for every row.';
COMMENT ON COLUMN marts.lineage_run_jobs.run_id IS 'The training run (core.lineage_runs).';
COMMENT ON COLUMN marts.lineage_run_jobs.model_name IS 'annex_trainingRun.modelName.';
COMMENT ON COLUMN marts.lineage_run_jobs.stage IS 'PRETRAINING or FINE_TUNING.';
COMMENT ON COLUMN marts.lineage_run_jobs.state IS 'The run''s state by event time.';
COMMENT ON COLUMN marts.lineage_run_jobs.started_at IS 'Earliest START (UTC).';
COMMENT ON COLUMN marts.lineage_run_jobs.ended_at IS 'Its terminal event''s time (UTC).';
COMMENT ON COLUMN marts.lineage_run_jobs.kubernetes_cluster IS 'annex_trainingRun.kubernetes.cluster.';
COMMENT ON COLUMN marts.lineage_run_jobs.kubernetes_namespace IS 'annex_trainingRun.kubernetes.namespace.';
COMMENT ON COLUMN marts.lineage_run_jobs.kubernetes_job_name IS 'annex_trainingRun.kubernetes.jobName.';
COMMENT ON COLUMN marts.lineage_run_jobs.has_kubernetes_facet IS 'The facet names a cluster, namespace and Job.';
COMMENT ON COLUMN marts.lineage_run_jobs.job_known IS 'core.jobs has that Job (collected by annex from that cluster).';
COMMENT ON COLUMN marts.lineage_run_jobs.job_uid IS 'The Job''s metadata.uid.';
COMMENT ON COLUMN marts.lineage_run_jobs.job_started_at IS 'The Job''s status.startTime (UTC).';
COMMENT ON COLUMN marts.lineage_run_jobs.job_completed_at IS 'The Job''s status.completionTime (UTC).';
COMMENT ON COLUMN marts.lineage_run_jobs.job_finished_condition IS 'Complete or Failed; NULL while it runs.';
COMMENT ON COLUMN marts.lineage_run_jobs.gpu_hours IS 'Whole-GPU hours its pods held (core.gpu_allocations, open holdings counted up to now); NULL without holdings.';

-- Versionless inputs, OTHER events and facet schema findings (issue 35, lineage).
--
-- 1. An input sent without a version facet (what dbt, Spark, Airflow and Marquez's own seed
--    data send) used to be linked to the dataset's unversioned node, which no run writes: a
--    model's closure stopped at the first job boundary. The merge (warehouse/models/
--    lineage_merge.sql, step 7) now reads such an input as the version of that dataset current
--    when the reading run started: the latest version written (its run's first event naming
--    it as an output) at or before the run's start by a run that COMPLETEd (Marquez's
--    "current version", by event time instead of arrival). The edge of
--    core.lineage_run_io points at that version; the version the event named is kept beside it
--    (named_version_id: the unversioned node, which keeps the facets and inputFacets sent with
--    the input). Edges stored before this migration get their resolution at the next lineage
--    collection (resolution NULL until then).
-- 2. marts.lineage_eu_summary_size reads a training input's inputFacets by the version the
--    event named (it was keyed by the edge's version, which is now the resolved one).
-- 3. core.lineage_facet_violations: the standard facets that break their own official schema,
--    from the findings the intake records on the (accepted) event.

ALTER TABLE core.lineage_run_io ADD COLUMN named_version_id VARCHAR;
ALTER TABLE core.lineage_run_io ADD COLUMN resolution VARCHAR;
ALTER TABLE core.lineage_run_io ADD COLUMN resolved_collection_id VARCHAR;

UPDATE core.lineage_run_io AS e
SET named_version_id = e.dataset_version_id,
    resolution = CASE
        WHEN e.direction = 'INPUT' AND v.version IS NULL THEN NULL  -- resolved at the next merge
        ELSE 'named'
    END
FROM core.lineage_dataset_versions AS v
WHERE v.dataset_version_id = e.dataset_version_id;

UPDATE core.lineage_run_io
SET named_version_id = dataset_version_id, resolution = 'named'
WHERE named_version_id IS NULL;

COMMENT ON TABLE core.lineage_run_io IS
    'The edges of the lineage graph: which dataset versions each run read (INPUT) and wrote (OUTPUT), accumulated over all of the run''s events. An input sent without a version facet is read as the dataset''s version current when the run started (the latest version written at or before it by a run that COMPLETEd: resolution as_of_start), or its unversioned node when none was (no_prior_write: a leaf); a version facet on the input always wins (named). An event whose run reads and writes the same version is rejected (audit.rejected, reads_own_output); a loop across events is reported in marts.lineage_cycles.';
COMMENT ON COLUMN core.lineage_run_io.dataset_version_id IS 'The dataset version read or written (core.lineage_dataset_versions): for an input sent without a version facet, the version it resolved to (see resolution).';
COMMENT ON COLUMN core.lineage_run_io.named_version_id IS 'The version the events named: the version facet''s, an output''s runId, or for an input without a version facet the dataset''s unversioned node. Its facets and inputFacets (core.lineage_facets, entity input: run_id || ''/'' || named_version_id) are keyed by it.';
COMMENT ON COLUMN core.lineage_run_io.resolution IS 'named (the version the events named: a version facet, or an output''s runId), as_of_start (an input without a version facet, read as the latest version written at or before this run''s start, by a run that COMPLETEd: written at the eventTime of that run''s first event naming it as an output; ties: the larger dataset_version_id) or no_prior_write (no such write: the dataset''s unversioned node, a leaf). NULL only until the next lineage collection after migration 0021.';
COMMENT ON COLUMN core.lineage_run_io.resolved_collection_id IS 'The collection whose events last moved the edge to another version (a write completing, a run''s start found earlier); NULL if it never moved. refresh_lineage recomputes the closures it changes.';

COMMENT ON COLUMN core.lineage_runs.state IS 'eventType of the terminal event (COMPLETE, ABORT, FAIL) with the latest eventTime; without one, of the latest START or RUNNING event. OTHER events carry metadata, not a state: their facets are merged but they never set or change the state (NULL for a run with only OTHER events or none with an eventType). Ties in eventTime: the larger event_id, so arrival order never matters.';
COMMENT ON COLUMN core.lineage_runs.state_event_time IS 'eventTime of the event that decides state (UTC).';
COMMENT ON COLUMN core.lineage_runs.state_event_id IS 'event_id of the event that decides state (core.lineage_events).';

CREATE VIEW core.lineage_facet_violations AS
SELECT
    e.event_id,
    e.event_time,
    e.run_id,
    e.job_namespace,
    e.job_name,
    e.producer,
    split_part(f.finding, ': ', 2) AS facet_path,
    regexp_extract(split_part(f.finding, ': ', 2), '\.([^.\[\]]+)$', 1) AS facet_name,
    f.finding[length('facet_schema_violation: ') + length(split_part(f.finding, ': ', 2)) + 3:]
        AS reason
FROM core.lineage_events AS e,
     unnest(e.findings) AS f(finding)
WHERE starts_with(f.finding, 'facet_schema_violation: ');

COMMENT ON VIEW core.lineage_facet_violations IS
    'Standard OpenLineage facets (dataSource, schema, sql, parent, columnLineage, ... : the keys with an official facet schema, collectors/lineage/spec/facets) that break their own schema, one row per facet and event. The event was accepted and stored whole (a facet violation never rejects an event valid against the OpenLineage event schema); the intake records the finding on the event (core.lineage_events.findings).';
COMMENT ON COLUMN core.lineage_facet_violations.event_id IS 'The event (core.lineage_events).';
COMMENT ON COLUMN core.lineage_facet_violations.event_time IS 'Its eventTime (UTC).';
COMMENT ON COLUMN core.lineage_facet_violations.run_id IS 'Its run, if a RunEvent.';
COMMENT ON COLUMN core.lineage_facet_violations.job_namespace IS 'Its job namespace.';
COMMENT ON COLUMN core.lineage_facet_violations.job_name IS 'Its job name.';
COMMENT ON COLUMN core.lineage_facet_violations.producer IS 'The producer URI that sent it.';
COMMENT ON COLUMN core.lineage_facet_violations.facet_path IS 'Where the facet is in the event, e.g. inputs[0].facets.schema or run.facets.parent.';
COMMENT ON COLUMN core.lineage_facet_violations.facet_name IS 'The facet key.';
COMMENT ON COLUMN core.lineage_facet_violations.reason IS 'Why: the schema checked against (class and version) and the first violations, each with the field it names.';

-- 2. ------------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW marts.lineage_eu_summary_size AS
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
        ON u.entity_kind = 'input' AND u.entity_id = i.run_id || '/' || i.named_version_id
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

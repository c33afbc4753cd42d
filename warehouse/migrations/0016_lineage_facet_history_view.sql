-- Facet history as a view over the stored events. core.lineage_facets held a copy of every
-- facet of every event: the same JSON as core.lineage_events.payload, again (3.6 copies per
-- current facet in a training world's lineage, where each run's events resend their
-- datasets' facets), a third of the warehouse's size and a fifth of a collection's CPU. The
-- payloads are kept whole, so the history is read from them instead: the view has the
-- table's columns and rows, and the merge (warehouse/models/lineage_merge.sql) derives the
-- facet heads with the same rules, through the macros below (one definition of the graph's
-- parse, of a dataset item's version and of the ids). core.lineage_facet_heads records the
-- collection that set each head, which the refresh used to read from the history. The intake
-- now stores each event's RFC 8785 canonical text, the one event_id hashes, as its payload.

ALTER TABLE core.lineage_facet_heads ADD COLUMN collection_id VARCHAR;

UPDATE core.lineage_facet_heads AS h
SET collection_id = f.collection_id
FROM core.lineage_facets AS f
WHERE f.entity_kind = h.entity_kind AND f.entity_id = h.entity_id
  AND f.facet_name = h.facet_name AND f.event_id = h.event_id;

COMMENT ON COLUMN core.lineage_facet_heads.collection_id IS 'The collection that set this head (NULL: set before annex recorded it, if its event''s facet row was gone).';
COMMENT ON TABLE core.lineage_facet_heads IS
    'The latest facet per entity and facet name (one row each; core.lineage_facets has every one), by eventTime (ties: the larger event_id), deletions included; kept by the merge for the entities a collection touches, so an older event arriving later never overrides a newer facet. Read core.lineage_current_facets.';

DROP TABLE core.lineage_facets;

-- The parts of an event the graph is built from: the dataset items and the facet maps (each
-- facet's JSON text). A shape the schema would refuse gives NULL, never an error.
CREATE MACRO core.lineage_graph(payload) AS TRY(json_transform(payload, '{
    "run": {"facets": "MAP(VARCHAR, JSON)"},
    "job": {"facets": "MAP(VARCHAR, JSON)"},
    "inputs": [{"namespace": "VARCHAR", "name": "VARCHAR", "facets": "MAP(VARCHAR, JSON)",
                "inputFacets": "MAP(VARCHAR, JSON)"}],
    "outputs": [{"namespace": "VARCHAR", "name": "VARCHAR", "facets": "MAP(VARCHAR, JSON)",
                 "outputFacets": "MAP(VARCHAR, JSON)"}],
    "dataset": {"namespace": "VARCHAR", "name": "VARCHAR", "facets": "MAP(VARCHAR, JSON)"}
}'));

-- A dataset item's version: its version facet's datasetVersion; else, for a run's output, the
-- runId; else NULL (the dataset's external, unversioned node).
CREATE MACRO core.lineage_item_version(facet_version, direction, event_kind, run_id) AS
    CASE
        WHEN facet_version IS NOT NULL THEN facet_version
        WHEN direction = 'OUTPUT' AND event_kind = 'RunEvent' THEN run_id
    END;

CREATE MACRO core.lineage_dataset_id(namespace, name) AS md5(namespace || chr(31) || name);

CREATE MACRO core.lineage_dataset_version_id(namespace, name, version) AS
    md5(namespace || chr(31) || name || chr(31) || coalesce(version, chr(30)));

CREATE MACRO core.lineage_job_id(namespace, name) AS md5(namespace || chr(31) || name);

-- {"_deleted": true}: the text test first, so only such facets are parsed (a CASE: an AND
-- would parse every facet).
CREATE MACRO core.lineage_facet_deleted(facet) AS
    CASE WHEN contains(facet, '"_deleted"')
        THEN coalesce(json_extract(facet, '$._deleted') = 'true'::JSON, false)
        ELSE false
    END;

COMMENT ON MACRO core.lineage_graph IS 'An OpenLineage event''s dataset items and facet maps (each facet as JSON text), parsed from its JSON; NULL when the JSON does not have that shape.';
COMMENT ON MACRO core.lineage_item_version IS 'A dataset item''s version: the version facet''s datasetVersion; else, for a RunEvent''s output, the runId; else NULL.';
COMMENT ON MACRO core.lineage_dataset_id IS 'A dataset''s key: md5 of namespace, chr(31), name.';
COMMENT ON MACRO core.lineage_dataset_version_id IS 'A dataset version''s key: md5 of namespace, chr(31), name, chr(31), version (chr(30) for none).';
COMMENT ON MACRO core.lineage_job_id IS 'A job''s key: md5 of namespace, chr(31), name.';
COMMENT ON MACRO core.lineage_facet_deleted IS 'Whether a facet is the {"_deleted": true} marker.';

CREATE VIEW core.lineage_facets AS
-- One pipeline from the scan of the events (no part read twice, so none is materialised; the
-- window's partition has day and event_time too, which an event_id determines): a filter on
-- day or event_time reaches that scan, whose zone maps skip the rest of the history.
WITH parsed AS (
    SELECT event_id, event_time, event_kind, run_id, job_namespace, job_name, day,
           collection_id, core.lineage_graph(payload) AS g
    FROM core.lineage_events
),
holders AS (  -- what carries facets: the run, the job and each dataset item, numbered as listed
    SELECT * EXCLUDE (g), unnest(list_concat(
        [{'direction': 'RUN', 'item': -2, 'namespace': NULL::VARCHAR, 'name': NULL::VARCHAR,
          'facets': g.run.facets, 'io_facets': NULL::MAP(VARCHAR, JSON)}],
        [{'direction': 'JOB', 'item': -1, 'namespace': NULL::VARCHAR, 'name': NULL::VARCHAR,
          'facets': g.job.facets, 'io_facets': NULL::MAP(VARCHAR, JSON)}],
        list_transform(g.inputs, lambda d, i: {
            'direction': 'INPUT', 'item': i - 1, 'namespace': d.namespace, 'name': d.name,
            'facets': d.facets, 'io_facets': d.inputFacets}),
        list_transform(g.outputs, lambda d, i: {
            'direction': 'OUTPUT', 'item': coalesce(len(g.inputs), 0) + i - 1,
            'namespace': d.namespace, 'name': d.name, 'facets': d.facets,
            'io_facets': d.outputFacets}),
        CASE WHEN g.dataset IS NOT NULL THEN [{
            'direction': 'DATASET', 'item': coalesce(len(g.inputs), 0) + coalesce(len(g.outputs), 0),
            'namespace': g.dataset.namespace, 'name': g.dataset.name,
            'facets': g.dataset.facets, 'io_facets': NULL::MAP(VARCHAR, JSON)}] END
    )) AS h
    FROM parsed
),
versioned AS (  -- a dataset listed twice on one side of an event: its first listing
    SELECT *,
           CASE WHEN h.direction NOT IN ('RUN', 'JOB') THEN core.lineage_dataset_version_id(
               h.namespace, h.name, core.lineage_item_version(
                   h.facets['version'] ->> '$.datasetVersion', h.direction, event_kind, run_id))
           END AS dataset_version_id
    FROM holders
    WHERE CASE h.direction
        WHEN 'RUN' THEN event_kind = 'RunEvent'
        WHEN 'JOB' THEN job_name IS NOT NULL
        ELSE h.namespace IS NOT NULL AND h.name IS NOT NULL
    END
    QUALIFY row_number() OVER (
        PARTITION BY event_id, day, event_time, h.direction, dataset_version_id ORDER BY h.item
    ) = 1
),
entries AS (  -- a holder's facets; a run's input and output also its inputFacets/outputFacets
    SELECT * EXCLUDE (h), h.direction AS direction, unnest(list_concat(
        list_transform(map_entries(h.facets), lambda f: {'io': false, 'f': f}),
        list_transform(
            map_entries(CASE WHEN h.direction IN ('INPUT', 'OUTPUT') AND run_id IS NOT NULL
                        THEN h.io_facets END),
            lambda f: {'io': true, 'f': f})
    )) AS e
    FROM versioned
)
SELECT
    CASE WHEN e.io THEN lower(direction) WHEN direction IN ('RUN', 'JOB') THEN lower(direction)
         ELSE 'dataset' END AS entity_kind,
    CASE
        WHEN e.io THEN run_id || '/' || dataset_version_id
        WHEN direction = 'RUN' THEN run_id
        WHEN direction = 'JOB' THEN core.lineage_job_id(job_namespace, job_name)
        ELSE dataset_version_id
    END AS entity_id,
    e.f.key AS facet_name,
    event_id,
    event_time,
    core.lineage_facet_deleted(e.f.value) AS deleted,
    e.f.value AS facet,
    CASE WHEN e.io OR direction = 'RUN' THEN run_id END AS run_id,
    dataset_version_id,
    day,
    collection_id
FROM entries;

COMMENT ON VIEW core.lineage_facets IS
    'Every facet of every stored event: one row per entity, facet name and event, read from the events'' payloads (core.lineage_events) by the rules the merge applies. It parses every payload it reads (some 9 s for 200,000 events on 2 cores): over a long history, filter on day or event_time, which skip the other events before any is parsed. A facet re-sent for the same entity replaces the older one by eventTime (core.lineage_current_facets).';
COMMENT ON COLUMN core.lineage_facets.entity_kind IS 'run, job, dataset (a dataset version''s facets), input (inputFacets of a run''s input) or output (outputFacets).';
COMMENT ON COLUMN core.lineage_facets.entity_id IS 'run: run_id; job: job_id; dataset: dataset_version_id; input/output: run_id || ''/'' || dataset_version_id.';
COMMENT ON COLUMN core.lineage_facets.facet_name IS 'The facet key, e.g. annex_licensing, version, datasetType, annex_trainingRun.';
COMMENT ON COLUMN core.lineage_facets.event_id IS 'The event it came in (core.lineage_events).';
COMMENT ON COLUMN core.lineage_facets.event_time IS 'That event''s eventTime (UTC): the order facets replace each other in.';
COMMENT ON COLUMN core.lineage_facets.deleted IS 'The facet is {"_deleted": true}: from this eventTime on the entity has no such facet.';
COMMENT ON COLUMN core.lineage_facets.facet IS 'The facet object as stored in the payload.';
COMMENT ON COLUMN core.lineage_facets.run_id IS 'The run, for run, input and output facets.';
COMMENT ON COLUMN core.lineage_facets.dataset_version_id IS 'The dataset version, for dataset, input and output facets.';
COMMENT ON COLUMN core.lineage_facets.day IS 'UTC date of event_time (the events'' export partition).';
COMMENT ON COLUMN core.lineage_facets.collection_id IS 'The collection that loaded its event.';

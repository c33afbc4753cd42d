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
WITH graph AS (
    SELECT event_id, event_time, event_kind, run_id, job_namespace, job_name, day,
           collection_id, core.lineage_graph(payload) AS g
    FROM core.lineage_events
),
listed AS (
    SELECT *, 'INPUT' AS direction, unnest(g.inputs) AS d,
           generate_subscripts(g.inputs, 1) - 1 AS item
    FROM graph
    UNION ALL
    SELECT *, 'OUTPUT', unnest(g.outputs),
           coalesce(len(g.inputs), 0) + generate_subscripts(g.outputs, 1) - 1
    FROM graph
),
items AS (
    SELECT event_id, event_time, event_kind, run_id, day, collection_id, direction, item,
           d.namespace AS namespace, d.name AS name, d.facets AS facets,
           CASE direction WHEN 'INPUT' THEN d.inputFacets ELSE d.outputFacets END AS io_facets
    FROM listed
    UNION ALL
    SELECT event_id, event_time, event_kind, run_id, day, collection_id, 'DATASET',
           coalesce(len(g.inputs), 0) + coalesce(len(g.outputs), 0),
           g.dataset.namespace, g.dataset.name, g.dataset.facets, NULL
    FROM graph
    WHERE g.dataset IS NOT NULL
),
versioned AS (  -- a dataset listed twice on one side of an event: its first listing
    SELECT *, core.lineage_dataset_version_id(namespace, name, core.lineage_item_version(
               facets['version'] ->> '$.datasetVersion', direction, event_kind, run_id))
               AS dataset_version_id
    FROM items
    WHERE namespace IS NOT NULL AND name IS NOT NULL
    QUALIFY row_number() OVER (
        PARTITION BY event_id, direction, dataset_version_id ORDER BY item) = 1
),
entries AS (
    SELECT event_id, event_time, day, collection_id, 'run' AS entity_kind,
           run_id AS entity_id, run_id, NULL AS dataset_version_id,
           unnest(map_entries(g.run.facets)) AS f
    FROM graph
    WHERE event_kind = 'RunEvent'
    UNION ALL
    SELECT event_id, event_time, day, collection_id, 'job',
           core.lineage_job_id(job_namespace, job_name), NULL, NULL,
           unnest(map_entries(g.job.facets))
    FROM graph
    WHERE job_name IS NOT NULL
    UNION ALL
    SELECT event_id, event_time, day, collection_id, 'dataset', dataset_version_id, NULL,
           dataset_version_id, unnest(map_entries(facets))
    FROM versioned
    UNION ALL
    SELECT event_id, event_time, day, collection_id, lower(direction),
           run_id || '/' || dataset_version_id, run_id, dataset_version_id,
           unnest(map_entries(io_facets))
    FROM versioned
    WHERE direction IN ('INPUT', 'OUTPUT') AND run_id IS NOT NULL
)
SELECT
    entity_kind,
    entity_id,
    f.key AS facet_name,
    event_id,
    event_time,
    core.lineage_facet_deleted(f.value) AS deleted,
    f.value AS facet,
    run_id,
    dataset_version_id,
    day,
    collection_id
FROM entries;

COMMENT ON COLUMN core.lineage_events.payload IS 'The event as JSON: its RFC 8785 canonical text, whose SHA-256 is event_id (keys sorted, numbers spelled as ECMAScript does); except for an event with facets dropped as too large (see findings) or with an integer beyond 2**53 (kept exact), and for events stored before migration 0016 (the event as orjson wrote it).';

COMMENT ON VIEW core.lineage_facets IS
    'Every facet of every stored event: one row per entity, facet name and event, read from the events'' payloads (core.lineage_events) by the rules the merge applies. It parses every payload it reads: filter on day or event_time, which narrow the events read, for a long history. A facet re-sent for the same entity replaces the older one by eventTime (core.lineage_current_facets).';
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

-- Merge of one lineage collection (runs in the collection's transaction, after staging).
--
-- 1. Rows the warehouse cannot key (no event_id or event_time, an unknown event_kind, no
--    payload, a RunEvent without run_id or job; a payload that is not JSON, in step 3, where
--    it is parsed) go to stage_rejected: a collector bug never aborts the good rows.
-- 2. New events: once per event_id (the content hash): a duplicate in the batch or one stored
--    before changes nothing. Stored events are read only within this batch's eventTime range
--    (a resent event has the same eventTime), so the check stays cheap on a year of events.
-- 3. The new events are normalised in set-based SQL. Their graphs come read by the collector
--    (collectors/lineage/graph.py: each dataset item, and each facet's place, name and the
--    span of its value in the payload); an event it did not read has its payload parsed here
--    once (json_transform into the datasets and facet maps, on every core): one row per dataset
--    item
--    (inputs, outputs, a dataset event's dataset) with its version (the version facet's
--    datasetVersion; else, for a run's output, the runId; else NULL: the dataset's external,
--    unversioned node), and one row per facet (run, job, dataset version, input, output).
--    An event whose run reads and writes the same version is rejected (reads_own_output).
-- 4. Jobs, datasets, versions and run inputs/outputs are upserted by their keys: first-seen
--    times only move earlier, a version's producer is the run of its earliest output event.
--    Jobs and datasets, a few rows, by ON CONFLICT; versions, edges and runs, which grow with
--    the events, by a join, as they have no index to check (migration 0017): versions and runs
--    by MERGE INTO; edges (and the facet heads, step 5), whose new rows are most of a batch,
--    by matching the stored rows first, then an UPDATE of the matched and a plain INSERT of
--    the rest (MERGE INTO's insert path cost 1.5x to 2x a plain INSERT of the same rows).
-- 5. core.lineage_facet_heads keeps the latest facet per entity and facet name by (eventTime,
--    event_id): an older event arriving later never replaces a newer facet. The facets of each
--    event are not stored again: core.lineage_facets reads them from the stored payloads.
-- 6. Derived state of what this batch touched only: the kind of its datasets (MODEL from the
--    current datasetType facets) and its runs, recomputed from all of their stored events
--    (state from the terminal event with the latest eventTime, else the latest
--    START or RUNNING: OTHER carries metadata, not a state; started_at the earliest START),
--    with their annex_trainingRun and parent facets from the heads.
-- 7. Inputs without a version facet are pointed at the dataset's version current when their
--    run started (the latest write, by a run that COMPLETEd, at or before it), again for every such
--    input of the datasets this batch's runs write or read: see the step.
-- Memory: the staged payloads are never copied into a temp table (lin_new keeps the narrow
-- columns and the staged row; the payloads go from the staging table to core once, where they
-- become JSON: checked by DuckDB's parser, about 1 CPU s for 200,000 events); items and
-- facets are smaller. A collection's size bounds it: load a large
-- backlog in collections of some tens of thousands of events. Nothing sorts the JSON columns
-- (duplicates and latest facets are found by grouping narrow keys): that is what would cost.

-- Order: nothing below depends on the order rows are written in (staged rows are named by
-- the stage table's rowid, written in arrival order before this runs; "first" and "latest" are
-- by explicit keys), so DuckDB need not keep it: each CREATE ... AS, INSERT and MERGE then
-- writes from every thread at once instead of reassembling the scan's order (200,000 events,
-- alternating runs on 2 cores: the collection 25.0 and 24.9 s against 28.4 and 26.0 s; lin_items
-- 6.1 -> 3.3 CPU s; every core table the same, EXCEPT ALL both ways).
-- The collection's connection is closed after its commit; the last statement resets it anyway.
SET preserve_insertion_order = false;

-- 1. -------------------------------------------------------------------------------------------
-- (payloads are not copied here: only the few rejected rows' are read back; a payload that is
-- not JSON is found where it is parsed, in step 3)
CREATE OR REPLACE TEMP TABLE lin_problems AS
SELECT
    rowid AS staged_row,
    event_id,
    CASE
        WHEN event_id IS NULL THEN 'event_id is missing'
        WHEN event_time IS NULL THEN 'event_time is missing'
        WHEN event_kind IS NULL OR event_kind NOT IN ('RunEvent', 'JobEvent', 'DatasetEvent')
            THEN format('event_kind {} is not RunEvent, JobEvent or DatasetEvent',
                        coalesce(event_kind, 'NULL'))
        WHEN payload IS NULL THEN 'payload is missing'
        WHEN event_kind = 'RunEvent' AND run_id IS NULL THEN 'a RunEvent without run_id'
        WHEN event_kind IN ('RunEvent', 'JobEvent')
             AND (job_namespace IS NULL OR job_name IS NULL)
            THEN format('a {} without job namespace and name', event_kind)
    END AS problem
FROM stage_lineage_events;

DELETE FROM lin_problems WHERE problem IS NULL;

INSERT INTO stage_rejected (locator, reason_code, message, raw)
SELECT
    coalesce(s.source_locator, 'lineage event'),
    'invalid_lineage_event',
    format('event {}: {}; the collector broke its output contract',
           coalesce(p.event_id, '?'), p.problem),
    encode(coalesce(s.payload, ''))
FROM lin_problems AS p
JOIN stage_lineage_events AS s ON s.rowid = p.staged_row;

-- 2. -------------------------------------------------------------------------------------------
SET VARIABLE lin_time_lo = (SELECT min(event_time) FROM stage_lineage_events);
SET VARIABLE lin_time_hi = (SELECT max(event_time) FROM stage_lineage_events);

CREATE OR REPLACE TEMP TABLE lin_new AS
SELECT s.rowid AS staged_row, s.event_id, s.event_time, s.event_kind, s.event_type, s.run_id,
       s.job_namespace, s.job_name, s.source_locator, s.event_index,
       coalesce(s.graph_read, false) AS graph_read
FROM stage_lineage_events AS s
WHERE s.rowid NOT IN (SELECT staged_row FROM lin_problems)
  -- twice in the batch: the first staged (narrow keys grouped, the payloads never sorted)
  AND s.rowid IN (SELECT min(rowid) FROM stage_lineage_events GROUP BY event_id)
  AND NOT EXISTS (
      SELECT 1 FROM core.lineage_events AS k
      WHERE k.event_time >= getvariable('lin_time_lo')
        AND k.event_time <= getvariable('lin_time_hi')
        AND k.event_id = s.event_id
  );

-- 3. -------------------------------------------------------------------------------------------
-- The graph parts of the new events: the datasets they name (inputs, outputs, a dataset
-- event's dataset) and their facets. For the events the collector read (graph_read: all the
-- intake's), they are stage_lineage_items and stage_lineage_facets, and no payload is parsed.
-- The others (a text the reader leaves to DuckDB's parser: see collectors/lineage/graph.c; all
-- of them where no C compiler built the reader) are parsed here once, into the datasets and
-- the facet maps (each facet's JSON text as stored; the macros are migration 0016's, shared
-- with the core.lineage_facets view). A shape the schema would refuse (a collector bug) gives
-- NULL there, never an error.
CREATE OR REPLACE TEMP TABLE lin_graph AS
SELECT
    rowid AS staged_row,
    core.lineage_graph(payload) AS g
FROM stage_lineage_events
WHERE rowid IN (SELECT staged_row FROM lin_new WHERE NOT graph_read);

-- A payload that is not JSON (a collector bug: the intake parsed and validated it) parses to
-- NULL under TRY: rejected, the rest of the batch goes on.
INSERT INTO stage_rejected (locator, reason_code, message, raw)
SELECT
    coalesce(s.source_locator, 'lineage event'),
    'invalid_lineage_event',
    format('event {}: the payload is not JSON; the collector broke its output contract',
           coalesce(s.event_id, '?')),
    encode(s.payload)
FROM lin_graph AS g
JOIN stage_lineage_events AS s ON s.rowid = g.staged_row
WHERE g.g IS NULL;

DELETE FROM lin_new WHERE staged_row IN (SELECT staged_row FROM lin_graph WHERE g IS NULL);
DELETE FROM lin_graph WHERE g IS NULL;

CREATE OR REPLACE TEMP TABLE lin_parsed AS
SELECT
    event_id,
    event_time,
    event_kind,
    event_type,
    run_id,
    job_namespace,
    job_name,
    CASE WHEN job_name IS NOT NULL THEN core.lineage_job_id(job_namespace, job_name) END AS job_id
FROM lin_new;

-- One row per dataset item, numbered from 0 in the event (inputs, outputs, then the dataset),
-- with its version: the version facet's datasetVersion; else, for a run's output, the runId;
-- else NULL, the dataset's external, unversioned node. A parsed event's facet maps come along
-- for the facet rows below (a read event's facets are in stage_lineage_facets).
CREATE OR REPLACE TEMP TABLE lin_items AS
WITH listed AS (
    SELECT staged_row, 'INPUT' AS direction, unnest(g.inputs) AS d,
           generate_subscripts(g.inputs, 1) - 1 AS item
    FROM lin_graph
    UNION ALL
    SELECT staged_row, 'OUTPUT', unnest(g.outputs),
           coalesce(len(g.inputs), 0) + generate_subscripts(g.outputs, 1) - 1
    FROM lin_graph
),
items AS (
    SELECT n.staged_row, i.direction, i.item, i.namespace, i.name, i.version AS facet_version,
           NULL::MAP(VARCHAR, JSON) AS facets, NULL::MAP(VARCHAR, JSON) AS io_facets
    FROM stage_lineage_items AS i
    JOIN lin_new AS n ON n.event_index = i.event_index AND n.graph_read
    UNION ALL
    SELECT staged_row, direction, item, d.namespace AS namespace, d.name AS name,
           d.facets['version'] ->> '$.datasetVersion', d.facets AS facets,
           CASE direction WHEN 'INPUT' THEN d.inputFacets ELSE d.outputFacets END AS io_facets
    FROM listed
    UNION ALL
    SELECT staged_row, 'DATASET', coalesce(len(g.inputs), 0) + coalesce(len(g.outputs), 0),
           g.dataset.namespace, g.dataset.name, g.dataset.facets['version'] ->> '$.datasetVersion',
           g.dataset.facets, NULL
    FROM lin_graph
    WHERE g.dataset IS NOT NULL
),
versioned AS (
    SELECT
        i.staged_row,
        n.event_id,
        n.event_time,
        n.event_kind,
        n.run_id,
        i.item,
        i.direction,
        i.namespace,
        i.name,
        i.facets,
        i.io_facets,
        i.facet_version
    FROM items AS i
    JOIN lin_new AS n ON n.staged_row = i.staged_row
    WHERE i.namespace IS NOT NULL AND i.name IS NOT NULL
)
SELECT
    staged_row,
    event_id,
    event_time,
    event_kind,
    run_id,
    item,
    direction,
    namespace,
    name,
    core.lineage_item_version(facet_version, direction, event_kind, run_id) AS version,
    CASE
        WHEN facet_version IS NOT NULL THEN 'facet'
        WHEN direction = 'OUTPUT' AND event_kind = 'RunEvent' THEN 'run'
        ELSE 'none'
    END AS version_source,
    core.lineage_dataset_id(namespace, name) AS dataset_id,
    core.lineage_dataset_version_id(namespace, name, core.lineage_item_version(
        facet_version, direction, event_kind, run_id)) AS dataset_version_id,
    facets,
    io_facets
FROM versioned;

-- A dataset listed twice on one side of an event: its first listing (grouping the narrow keys,
-- not sorting the items' JSON).
DELETE FROM lin_items
WHERE rowid NOT IN (
    SELECT arg_min(rowid, item) FROM lin_items GROUP BY event_id, direction, dataset_version_id
);

-- A run that reads and writes the same version would make the version its own ancestor.
CREATE OR REPLACE TEMP TABLE lin_loops AS
SELECT DISTINCT i.event_id, i.namespace, i.name, i.version
FROM lin_items AS i
JOIN lin_items AS o
    ON o.event_id = i.event_id AND o.dataset_version_id = i.dataset_version_id
WHERE i.direction = 'INPUT' AND o.direction = 'OUTPUT' AND i.run_id IS NOT NULL;

INSERT INTO stage_rejected (locator, reason_code, message, raw)
SELECT
    coalesce(n.source_locator, 'lineage event ' || n.event_id),
    'reads_own_output',
    format('run {} reads and writes the same dataset version {}/{}@{}{} (event {}): a version '
           'cannot be its own ancestor; send the output''s new version in its version facet',
           n.run_id, l.first.namespace, l.first.name, l.first.version,
           CASE WHEN l.loops > 1 THEN format(' and {} more', l.loops - 1) ELSE '' END,
           n.event_id),
    encode(s.payload)
FROM lin_new AS n
JOIN stage_lineage_events AS s ON s.rowid = n.staged_row
JOIN (  -- one loop named (the first by namespace, name, version: the same text at every rerun)
    SELECT event_id, min({'namespace': namespace, 'name': name, 'version': version}) AS first,
           count(*) AS loops
    FROM lin_loops GROUP BY event_id
) AS l ON l.event_id = n.event_id;

DELETE FROM lin_new WHERE event_id IN (SELECT event_id FROM lin_loops);
DELETE FROM lin_parsed WHERE event_id IN (SELECT event_id FROM lin_loops);
DELETE FROM lin_items WHERE event_id IN (SELECT event_id FROM lin_loops);

-- lin_new holds each event_id once and none stored before (step 2): that is what keeps an
-- event stored once (the table has no key index to check: migration 0017).
INSERT INTO core.lineage_events
    (event_id, received_at, event_time, event_time_offset_minutes, event_kind, event_type,
     run_id, job_namespace, job_name, producer, schema_url, payload, findings, source_locator,
     day, collection_id, loaded_at)
SELECT
    event_id, received_at, event_time, event_time_offset_minutes, event_kind, event_type,
    run_id, job_namespace, job_name, producer, schema_url, payload, findings, source_locator,
    CAST(event_time AS DATE), getvariable('collection_id'), getvariable('collected_at')
FROM stage_lineage_events
WHERE rowid IN (SELECT staged_row FROM lin_new);

-- 4. -------------------------------------------------------------------------------------------
INSERT INTO core.lineage_jobs (job_id, namespace, name, first_event_time, last_event_time)
SELECT job_id, any_value(job_namespace), any_value(job_name), min(event_time), max(event_time)
FROM lin_parsed
WHERE job_id IS NOT NULL
GROUP BY job_id
ON CONFLICT (job_id) DO UPDATE SET
    first_event_time = least(first_event_time, excluded.first_event_time),
    last_event_time = greatest(last_event_time, excluded.last_event_time);

INSERT INTO core.lineage_datasets (dataset_id, namespace, name, kind, first_event_time)
SELECT dataset_id, any_value(namespace), any_value(name), 'DATASET', min(event_time)
FROM lin_items
GROUP BY dataset_id
ON CONFLICT (dataset_id) DO UPDATE SET
    first_event_time = least(first_event_time, excluded.first_event_time);

MERGE INTO core.lineage_dataset_versions AS v
USING (
WITH producers AS (  -- (aggregates over the narrow keys, not a window: nothing is sorted)
    SELECT dataset_version_id, arg_min(run_id, (event_time, run_id)) AS run_id,
           min(event_time) AS event_time
    FROM lin_items
    WHERE direction = 'OUTPUT' AND run_id IS NOT NULL
    GROUP BY dataset_version_id
)
SELECT
    i.dataset_version_id,
    any_value(i.dataset_id) AS dataset_id,
    any_value(i.namespace) AS namespace,
    any_value(i.name) AS name,
    any_value(i.version) AS version,
    min(i.version_source) AS version_source,  -- 'facet' before 'run': see the UPDATE below
    any_value(p.run_id) AS produced_by_run_id,
    any_value(p.event_time) AS produced_at,
    min(i.event_time) AS created_at
FROM lin_items AS i
LEFT JOIN producers AS p ON p.dataset_version_id = i.dataset_version_id
GROUP BY i.dataset_version_id
) AS n
ON v.dataset_version_id = n.dataset_version_id
-- (the stored producer is replaced by an earlier one; on a tie, by the smaller run id, as
-- within a batch: the result does not depend on which collection brought which event)
WHEN MATCHED THEN UPDATE SET
    produced_by_run_id = CASE
        WHEN n.produced_at IS NOT NULL
             AND (v.produced_at IS NULL OR n.produced_at < v.produced_at
                  OR (n.produced_at = v.produced_at
                      AND n.produced_by_run_id < v.produced_by_run_id))
            THEN n.produced_by_run_id
        ELSE v.produced_by_run_id
    END,
    produced_at = CASE
        WHEN n.produced_at IS NOT NULL
             AND (v.produced_at IS NULL OR n.produced_at < v.produced_at)
            THEN n.produced_at
        ELSE v.produced_at
    END,
    created_at = least(v.created_at, n.created_at),
    -- one id, two sources: a run that sends its runId as its output's datasetVersion too. The
    -- version facet, what the producer said, is the source, whichever event came first.
    version_source = least(v.version_source, n.version_source)
WHEN NOT MATCHED THEN INSERT
    (dataset_version_id, dataset_id, namespace, name, version, version_source,
     produced_by_run_id, produced_at, created_at)
    VALUES (n.dataset_version_id, n.dataset_id, n.namespace, n.name, n.version,
            n.version_source, n.produced_by_run_id, n.produced_at, n.created_at);

-- (the stored rows are matched once, by the edge's key; the UPDATE and the INSERT then name
-- rows by rowid: 200,000 events, 321,000 new edges: 0.9 s against MERGE INTO's 1.4 s)
-- An edge is keyed by the version its events named (named_version_id): an input sent without
-- a version facet names the dataset's unversioned node, and step 7 points the stored edge at
-- the version current when its run started.
CREATE OR REPLACE TEMP TABLE lin_edges AS
SELECT run_id, dataset_version_id, direction, min(event_time) AS first_event_time,
       arg_min(event_id, (event_time, event_id)) AS first_event_id,
       bool_or(direction = 'INPUT' AND version_source = 'none') AS versionless
FROM lin_items
WHERE event_kind = 'RunEvent' AND direction IN ('INPUT', 'OUTPUT')
GROUP BY run_id, dataset_version_id, direction;

CREATE OR REPLACE TEMP TABLE lin_edge_match AS
SELECT n.rowid AS new_row, e.rowid AS stored_row
FROM lin_edges AS n
JOIN core.lineage_run_io AS e
    ON e.run_id = n.run_id AND e.named_version_id = n.dataset_version_id
    AND e.direction = n.direction;

-- (the earliest event naming the edge; on a tie in eventTime the smaller event_id, as within
-- a batch, whichever collection brought it)
UPDATE core.lineage_run_io AS e
SET first_event_time = n.first_event_time,
    first_event_id = n.first_event_id
FROM lin_edge_match AS m
JOIN lin_edges AS n ON n.rowid = m.new_row
WHERE e.rowid = m.stored_row
  AND (n.first_event_time < e.first_event_time
       OR (n.first_event_time = e.first_event_time AND n.first_event_id < e.first_event_id));

INSERT INTO core.lineage_run_io
    (run_id, dataset_version_id, direction, first_event_time, first_event_id, collection_id,
     named_version_id, resolution)
SELECT run_id, dataset_version_id, direction, first_event_time, first_event_id,
       getvariable('collection_id'), dataset_version_id,
       CASE WHEN versionless THEN 'no_prior_write' ELSE 'named' END  -- step 7 resolves
FROM lin_edges
WHERE rowid NOT IN (SELECT new_row FROM lin_edge_match);

-- 5. -------------------------------------------------------------------------------------------
-- The facets of the new events, one entry per entity, facet name and event: run facets of run
-- events, job facets of events with a job, a dataset version's facets and a run's input and
-- output facets. A read event's entries are narrow (where the value lies in the payload); a
-- parsed event's carry their text (the parsed payload's, already JSON).
-- They are not stored: the payloads are, and core.lineage_facets reads them there by these
-- rules; only the batch's latest per entity and facet name is kept, then merged into the heads.
-- "Latest" is by (eventTime, event_id): each new event is ranked once in that order (a sort of
-- the narrow keys of the batch's events), so one aggregate over the entries, keyed by an
-- integer, picks each facet's latest; the entries are never materialised, sorted or joined
-- back. Only then are the latest read facets' texts cut out of their payloads: substring() of
-- the staged text (on a JSON column, cast per facet, the same cut cost 4.7 against 0.8 CPU s
-- for 882,000 facets; a byte slice of the payload as BLOB, 3.4; a copy of the 103,000
-- payloads that hold them as text, 2.2-2.7), then json(), which writes them as the parsed maps
-- do (numbers, escapes: the same text either way).
-- (a table of its own: the same window in lin_new's statement sorts every lin_new column and
-- cost 0.3-0.4 CPU s more for 200,000 events)
CREATE OR REPLACE TEMP TABLE lin_rank AS
SELECT staged_row, row_number() OVER (ORDER BY event_time, event_id) AS event_rank
FROM lin_new;

CREATE OR REPLACE TEMP TABLE lin_facet_latest_at AS
WITH parsed AS (
    SELECT r.event_rank, 'run' AS entity_kind, n.run_id AS entity_id,
           n.run_id, NULL AS dataset_version_id, unnest(map_entries(g.g.run.facets)) AS f
    FROM lin_graph AS g
    JOIN lin_new AS n ON n.staged_row = g.staged_row
    JOIN lin_rank AS r ON r.staged_row = g.staged_row
    WHERE n.event_kind = 'RunEvent'
    UNION ALL
    SELECT r.event_rank, 'job', core.lineage_job_id(n.job_namespace, n.job_name),
           NULL, NULL, unnest(map_entries(g.g.job.facets))
    FROM lin_graph AS g
    JOIN lin_new AS n ON n.staged_row = g.staged_row
    JOIN lin_rank AS r ON r.staged_row = g.staged_row
    WHERE n.job_name IS NOT NULL
    UNION ALL
    SELECT r.event_rank, 'dataset', dataset_version_id, NULL, dataset_version_id,
           unnest(map_entries(facets))
    FROM lin_items JOIN lin_rank AS r USING (staged_row)
    WHERE facets IS NOT NULL
    UNION ALL
    SELECT r.event_rank, lower(direction), run_id || '/' || dataset_version_id, run_id,
           dataset_version_id, unnest(map_entries(io_facets))
    FROM lin_items JOIN lin_rank AS r USING (staged_row)
    WHERE direction IN ('INPUT', 'OUTPUT') AND run_id IS NOT NULL AND io_facets IS NOT NULL
),
read_entries AS (  -- (each branch joins the facets it needs: a shared CTE is materialised)
    SELECT r.event_rank, 'run' AS entity_kind, n.run_id AS entity_id, n.run_id,
           NULL AS dataset_version_id, f.facet_name,
           {'start': f.value_start, 'length': f.value_length} AS span
    FROM stage_lineage_facets AS f
    JOIN lin_new AS n ON n.event_index = f.event_index
    JOIN lin_rank AS r ON r.staged_row = n.staged_row
    WHERE f.place = 'run' AND n.event_kind = 'RunEvent' AND n.graph_read
    UNION ALL
    SELECT r.event_rank, 'job', core.lineage_job_id(n.job_namespace, n.job_name), NULL, NULL,
           f.facet_name, {'start': f.value_start, 'length': f.value_length}
    FROM stage_lineage_facets AS f
    JOIN lin_new AS n ON n.event_index = f.event_index
    JOIN lin_rank AS r ON r.staged_row = n.staged_row
    WHERE f.place = 'job' AND n.job_name IS NOT NULL AND n.graph_read
    UNION ALL  -- (the item that carries them: a dataset listed twice keeps its first listing)
    SELECT r.event_rank, f.place,
           CASE f.place WHEN 'dataset' THEN i.dataset_version_id
                ELSE i.run_id || '/' || i.dataset_version_id END,
           CASE WHEN f.place <> 'dataset' THEN i.run_id END, i.dataset_version_id, f.facet_name,
           {'start': f.value_start, 'length': f.value_length}
    FROM stage_lineage_facets AS f
    JOIN lin_new AS n ON n.event_index = f.event_index
    JOIN lin_items AS i ON i.staged_row = n.staged_row AND i.item = f.item
    JOIN lin_rank AS r ON r.staged_row = n.staged_row
    WHERE n.graph_read
      AND (f.place = 'dataset' OR (f.place IN ('input', 'output') AND i.run_id IS NOT NULL))
),
-- (run_id and dataset_version_id follow from the entity: any_value is exact)
read_latest AS (
    SELECT entity_kind, entity_id, facet_name, max(event_rank) AS event_rank,
           arg_max(span, event_rank) AS span, any_value(run_id) AS run_id,
           any_value(dataset_version_id) AS dataset_version_id
    FROM read_entries
    GROUP BY entity_kind, entity_id, facet_name
),
parsed_latest AS (
    SELECT entity_kind, entity_id, f.key AS facet_name, max(event_rank) AS event_rank,
           arg_max(f.value, event_rank) AS facet, any_value(run_id) AS run_id,
           any_value(dataset_version_id) AS dataset_version_id
    FROM parsed
    GROUP BY entity_kind, entity_id, f.key
),
latest AS (  -- the later of the two (an event is read or parsed: the ranks differ)
    SELECT r.entity_kind, r.entity_id, r.facet_name, r.event_rank, r.span, NULL::JSON AS facet,
           r.run_id, r.dataset_version_id
    FROM read_latest AS r
    LEFT JOIN parsed_latest AS p
        ON p.entity_kind = r.entity_kind AND p.entity_id = r.entity_id
        AND p.facet_name = r.facet_name
    WHERE p.event_rank IS NULL OR p.event_rank < r.event_rank
    UNION ALL
    SELECT p.entity_kind, p.entity_id, p.facet_name, p.event_rank, NULL, p.facet, p.run_id,
           p.dataset_version_id
    FROM parsed_latest AS p
    LEFT JOIN read_latest AS r
        ON r.entity_kind = p.entity_kind AND r.entity_id = p.entity_id
        AND r.facet_name = p.facet_name
    WHERE r.event_rank IS NULL OR r.event_rank < p.event_rank
)
SELECT l.*, r.staged_row
FROM latest AS l
JOIN lin_rank AS r ON r.event_rank = l.event_rank;

CREATE OR REPLACE TEMP TABLE lin_facet_latest AS
WITH texts AS (
    SELECT l.entity_kind, l.entity_id, l.facet_name, l.staged_row, l.run_id,
           l.dataset_version_id,
           coalesce(l.facet, json(substring(p.payload, l.span.start + 1, l.span.length))) AS facet
    FROM lin_facet_latest_at AS l
    LEFT JOIN stage_lineage_events AS p ON p.rowid = l.staged_row
)
SELECT t.entity_kind, t.entity_id, t.facet_name, n.event_id, n.event_time,
       core.lineage_facet_deleted(t.facet) AS deleted, t.facet, t.run_id, t.dataset_version_id
FROM texts AS t
JOIN lin_new AS n ON n.staged_row = t.staged_row;

DROP TABLE lin_facet_latest_at;
DROP TABLE lin_graph;
DROP TABLE lin_new;
DROP TABLE lin_rank;

-- Merged into the heads by a join (no index to maintain): a stored head is replaced only by a
-- newer one. The stored heads are matched once by their key; the newer facets replace theirs
-- by rowid and the unmatched are inserted (882,000 new heads: 1.8-1.9 s against MERGE INTO's
-- 3.2 s, 3.5 CPU s against 5.3).
CREATE OR REPLACE TEMP TABLE lin_head_match AS
SELECT n.rowid AS latest_row, h.rowid AS head_row
FROM lin_facet_latest AS n
JOIN core.lineage_facet_heads AS h
    ON h.entity_kind = n.entity_kind AND h.entity_id = n.entity_id
    AND h.facet_name = n.facet_name;

UPDATE core.lineage_facet_heads AS h
SET event_id = n.event_id,
    event_time = n.event_time,
    deleted = n.deleted,
    facet = n.facet,
    run_id = n.run_id,
    dataset_version_id = n.dataset_version_id,
    collection_id = getvariable('collection_id')
FROM lin_head_match AS m
JOIN lin_facet_latest AS n ON n.rowid = m.latest_row
WHERE h.rowid = m.head_row
  AND (n.event_time > h.event_time OR (n.event_time = h.event_time AND n.event_id > h.event_id));

INSERT INTO core.lineage_facet_heads
    (entity_kind, entity_id, facet_name, event_id, event_time, deleted, facet, run_id,
     dataset_version_id, collection_id)
SELECT entity_kind, entity_id, facet_name, event_id, event_time, deleted, facet, run_id,
       dataset_version_id, getvariable('collection_id')
FROM lin_facet_latest
WHERE rowid NOT IN (SELECT latest_row FROM lin_head_match);

-- 6. -------------------------------------------------------------------------------------------
UPDATE core.lineage_datasets AS d
SET kind = k.kind
FROM (
    SELECT
        v.dataset_id,
        CASE WHEN bool_or(h.facet ->> '$.datasetType' = 'MODEL') THEN 'MODEL' ELSE 'DATASET' END
            AS kind
    FROM core.lineage_dataset_versions AS v
    LEFT JOIN core.lineage_facet_heads AS h
        ON h.entity_kind = 'dataset' AND h.entity_id = v.dataset_version_id
        AND h.facet_name = 'datasetType' AND NOT h.deleted
    WHERE v.dataset_id IN (
        SELECT dataset_id FROM lin_items
        WHERE dataset_version_id IN (
            SELECT entity_id FROM lin_facet_latest
            WHERE entity_kind = 'dataset' AND facet_name = 'datasetType'
        )
    )
    GROUP BY v.dataset_id
) AS k
WHERE d.dataset_id = k.dataset_id AND d.kind <> k.kind;

CREATE OR REPLACE TEMP TABLE lin_touched_runs AS
SELECT DISTINCT run_id FROM lin_parsed WHERE event_kind = 'RunEvent';

-- No stored event of a touched run is older than its stored first_event_time (the minimum over
-- its events, kept by this step), and the new ones are the batch's: reading the stored events
-- from the earliest of these skips the row groups of older history (by their eventTime zone
-- maps) instead of reading the run id of every event ever stored.
SET VARIABLE lin_runs_from = (
    SELECT least(
        (SELECT min(event_time) FROM lin_parsed WHERE event_kind = 'RunEvent'),
        (SELECT min(first_event_time) FROM core.lineage_runs
         WHERE run_id IN (SELECT run_id FROM lin_touched_runs))
    )
);

MERGE INTO core.lineage_runs AS r
USING (
WITH ev AS (
    SELECT run_id, event_id, event_time, event_type, job_namespace, job_name
    FROM core.lineage_events
    WHERE event_kind = 'RunEvent' AND run_id IN (SELECT run_id FROM lin_touched_runs)
      AND event_time >= getvariable('lin_runs_from')
),
ranked AS (  -- k: the rank by (eventTime, event_id), one sort of the narrow rows (the
             -- latest, terminal and job events of each run are found by max(k), not by a
             -- window per run each)
    SELECT *, row_number() OVER (ORDER BY event_time, event_id) AS k
    FROM ev
),
agg AS (
    SELECT
        run_id,
        min(event_time) FILTER (WHERE event_type = 'START') AS started_at,
        min(event_time) AS first_event_time,
        max(event_time) AS last_event_time,
        count(*) AS events,
        max(k) AS job_k,
        max(k) FILTER (WHERE event_type IN ('COMPLETE', 'ABORT', 'FAIL')) AS terminal_k,
        -- OTHER carries metadata, not a state: never the state of a run (its facets merge)
        max(k) FILTER (WHERE event_type IN ('START', 'RUNNING')) AS latest_k
    FROM ranked
    GROUP BY run_id
),
facets AS (
    SELECT
        entity_id AS run_id,
        any_value(facet) FILTER (WHERE facet_name = 'annex_trainingRun') AS training,
        any_value(facet) FILTER (WHERE facet_name = 'parent') AS parent
    FROM core.lineage_current_facets
    WHERE entity_kind = 'run' AND facet_name IN ('annex_trainingRun', 'parent')
      AND entity_id IN (SELECT run_id FROM lin_touched_runs)
    GROUP BY entity_id
)
SELECT
    a.run_id,
    core.lineage_job_id(j.job_namespace, j.job_name) AS job_id,
    j.job_namespace,
    j.job_name,
    lower(f.parent ->> '$.run.runId') AS parent_run_id,
    coalesce(t.event_type, l.event_type) AS state,
    a.started_at,
    t.event_time AS ended_at,
    coalesce(t.event_time, l.event_time) AS state_event_time,
    coalesce(t.event_id, l.event_id) AS state_event_id,
    a.first_event_time,
    a.last_event_time,
    a.events,
    f.training ->> '$.kubernetes.cluster' AS cluster,
    f.training ->> '$.kubernetes.namespace' AS namespace,
    f.training ->> '$.kubernetes.jobName' AS kubernetes_job_name,
    f.training ->> '$.modelName' AS model_name,
    f.training ->> '$.stage' AS stage
FROM agg AS a
JOIN ranked AS j ON j.k = a.job_k
LEFT JOIN ranked AS t ON t.k = a.terminal_k
LEFT JOIN ranked AS l ON l.k = a.latest_k
LEFT JOIN facets AS f ON f.run_id = a.run_id
) AS n
ON r.run_id = n.run_id
WHEN MATCHED THEN UPDATE SET
    job_id = n.job_id,
    job_namespace = n.job_namespace,
    job_name = n.job_name,
    parent_run_id = n.parent_run_id,
    state = n.state,
    started_at = n.started_at,
    ended_at = n.ended_at,
    state_event_time = n.state_event_time,
    state_event_id = n.state_event_id,
    first_event_time = n.first_event_time,
    last_event_time = n.last_event_time,
    events = n.events,
    cluster = n.cluster,
    namespace = n.namespace,
    kubernetes_job_name = n.kubernetes_job_name,
    model_name = n.model_name,
    stage = n.stage
WHEN NOT MATCHED THEN INSERT BY NAME;

-- 7. -------------------------------------------------------------------------------------------
-- Inputs sent without a version facet (dbt, Spark, Airflow, Marquez's seed data: real producers
-- send none) are read as the version of the dataset current when the reading run started:
-- the latest version written at or before the reader's start (started_at, else its first
-- event), by a run other than the reader that COMPLETEd (a failed or aborted run's write is
-- never current; a running one's becomes current when its COMPLETE comes). A version is
-- written when its run's first event naming it as an output says (as Marquez creates the
-- version at that event); on a tie in that time the larger dataset_version_id. None: the
-- dataset's unversioned node (a leaf). This is Marquez's "current version" by event time,
-- not arrival order, so it is the same whatever order the events come in. A version facet on the input always wins (step 3 keys
-- the edge by it; it is never re-resolved).
-- A collection can change the answer for the datasets its runs write or read without a
-- version (a write completing, a run's state or start changing): every versionless input of
-- those datasets is resolved again (plus the edges stored before migration 0021, once). An
-- edge that moves records the collection (resolved_collection_id): refresh_lineage then
-- recomputes the closures through its run.
CREATE OR REPLACE TEMP TABLE lin_resolve_datasets AS
SELECT DISTINCT v.dataset_id
FROM core.lineage_run_io AS e
JOIN core.lineage_dataset_versions AS v ON v.dataset_version_id = e.named_version_id
WHERE e.run_id IN (SELECT run_id FROM lin_touched_runs)
  AND (e.direction = 'OUTPUT' OR e.resolution IS DISTINCT FROM 'named');

CREATE OR REPLACE TEMP TABLE lin_reads AS
SELECT e.rowid AS edge_row, e.run_id, e.dataset_version_id, e.named_version_id, e.resolution,
       v.dataset_id, coalesce(r.started_at, r.first_event_time) AS read_at
FROM core.lineage_run_io AS e
JOIN core.lineage_dataset_versions AS v ON v.dataset_version_id = e.named_version_id
LEFT JOIN core.lineage_runs AS r ON r.run_id = e.run_id
WHERE e.direction = 'INPUT'
  AND (e.resolution IS NULL
       OR (e.resolution <> 'named'
           AND v.dataset_id IN (SELECT dataset_id FROM lin_resolve_datasets)));

-- The writes that can be read: the outputs of COMPLETE runs of those datasets, one row per
-- dataset and write time (a tie: the larger version, and every run that wrote then).
CREATE OR REPLACE TEMP TABLE lin_writes AS
SELECT o.dataset_version_id, v.dataset_id, o.run_id, o.first_event_time AS written_at
FROM core.lineage_run_io AS o
JOIN core.lineage_dataset_versions AS v ON v.dataset_version_id = o.dataset_version_id
JOIN core.lineage_runs AS r ON r.run_id = o.run_id
WHERE o.direction = 'OUTPUT' AND r.state = 'COMPLETE'
  AND v.dataset_id IN (SELECT dataset_id FROM lin_reads);

CREATE OR REPLACE TEMP TABLE lin_write_times AS
SELECT dataset_id, written_at, max(dataset_version_id) AS version_id, list(run_id) AS runs
FROM lin_writes
GROUP BY dataset_id, written_at;

-- Each read's latest write at or before it, by an as-of join (a sorted merge per dataset, not
-- every read against every write: a dataset read and written daily for a year is 365 reads
-- and writes, not 133,000 pairs). Where the reader itself wrote at that time (a run that
-- reads the table it rewrites, an incremental model), its own write is skipped: those few
-- reads are matched against the writes one by one.
CREATE OR REPLACE TEMP TABLE lin_resolved AS
WITH latest AS (
    SELECT rd.*, w.version_id AS write_version_id, w.runs AS write_runs
    FROM lin_reads AS rd
    ASOF LEFT JOIN lin_write_times AS w
        ON w.dataset_id = rd.dataset_id AND rd.read_at >= w.written_at
),
own AS (  -- (the reader is among the runs that wrote last: the writes of other runs decide)
    SELECT l.edge_row,
           arg_max(w.dataset_version_id, (w.written_at, w.dataset_version_id)) AS version_id
    FROM latest AS l
    JOIN lin_writes AS w
        ON w.dataset_id = l.dataset_id AND w.written_at <= l.read_at AND w.run_id <> l.run_id
    WHERE list_contains(l.write_runs, l.run_id)
    GROUP BY l.edge_row
),
picked AS (
    SELECT l.edge_row, l.dataset_version_id AS stored_version_id,
           l.resolution AS stored_resolution, l.named_version_id,
           CASE WHEN list_contains(l.write_runs, l.run_id) THEN o.version_id
                ELSE l.write_version_id END AS write_version_id
    FROM latest AS l
    LEFT JOIN own AS o ON o.edge_row = l.edge_row
)
SELECT
    edge_row,
    stored_version_id,
    stored_resolution,
    coalesce(write_version_id, named_version_id) AS version_id,
    CASE WHEN write_version_id IS NOT NULL THEN 'as_of_start' ELSE 'no_prior_write' END
        AS resolution
FROM picked;

UPDATE core.lineage_run_io AS e
SET dataset_version_id = n.version_id,
    resolution = n.resolution,
    resolved_collection_id = CASE
        WHEN n.version_id <> n.stored_version_id THEN getvariable('collection_id')
        ELSE e.resolved_collection_id
    END
FROM lin_resolved AS n
WHERE e.rowid = n.edge_row
  AND (n.version_id <> n.stored_version_id
       OR n.stored_resolution IS DISTINCT FROM n.resolution);

DROP TABLE lin_resolve_datasets;
DROP TABLE lin_reads;
DROP TABLE lin_writes;
DROP TABLE lin_write_times;
DROP TABLE lin_resolved;

RESET preserve_insertion_order;

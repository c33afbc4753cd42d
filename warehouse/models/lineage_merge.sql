-- Merge of one lineage collection (runs in the collection's transaction, after staging).
--
-- 1. Rows the warehouse cannot key (no event_id or event_time, an unknown event_kind, a
--    payload that is not JSON, a RunEvent without run_id or job) go to
--    stage_rejected: a collector bug never aborts the good rows.
-- 2. New events: once per event_id (the content hash): a duplicate in the batch or one stored
--    before changes nothing. Stored events are read only within this batch's eventTime range
--    (a resent event has the same eventTime), so the check stays cheap on a year of events.
-- 3. The new events are normalised in set-based SQL from the graph parts the collector took
--    out of each payload (collectors/lineage/graph.py; the payload is never parsed here but to
--    check it is JSON): one row per dataset item (inputs, outputs, a dataset event's dataset)
--    with its version (the version facet's datasetVersion; else, for a run's output, the
--    runId; else NULL: the dataset's external, unversioned node), and one row per facet (run,
--    job, dataset version, input, output).
--    An event whose run reads and writes the same version is rejected (reads_own_output).
-- 4. Jobs, datasets, versions and run inputs/outputs are upserted by their keys (ON CONFLICT):
--    first-seen times only move earlier, a version's producer is the run of its earliest
--    output event.
-- 5. Facets are appended; core.lineage_facet_heads keeps the latest per entity and facet name
--    by (eventTime, event_id): an older event arriving later never replaces a newer facet.
-- 6. Derived state of what this batch touched only: the kind of its datasets (MODEL from the
--    current datasetType facets) and its runs, recomputed from all of their stored events
--    (state from the terminal event with the latest eventTime, else the latest event with an
--    eventType; started_at the earliest START), with their annex_trainingRun and parent
--    facets from the heads.
-- Memory: the staged payloads are never copied into a temp table (lin_new keeps the narrow
-- columns and the staged row; the payloads go from the staging table to core once); items and
-- facets are smaller. A collection's size bounds it: load a large
-- backlog in collections of some tens of thousands of events. Nothing sorts the JSON columns
-- (duplicates and latest facets are found by grouping narrow keys): that is what would cost.

-- 1. -------------------------------------------------------------------------------------------
-- (payloads are not copied here: only the few rejected rows' are read back; json_valid parses
-- without building values)
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
        WHEN NOT json_valid(payload) THEN 'the payload is not JSON'
        WHEN datasets IS NULL OR facets IS NULL THEN 'its datasets and facets are missing'
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
       s.job_namespace, s.job_name, s.source_locator, s.datasets
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
CREATE OR REPLACE TEMP TABLE lin_parsed AS
SELECT
    event_id,
    event_time,
    event_kind,
    event_type,
    run_id,
    job_namespace,
    job_name,
    CASE WHEN job_name IS NOT NULL THEN md5(job_namespace || chr(31) || job_name) END AS job_id
FROM lin_new;

CREATE OR REPLACE TEMP TABLE lin_items AS
WITH items AS (
    SELECT staged_row, event_id, event_time, event_kind, run_id, unnest(datasets) AS d
    FROM lin_new
),
versioned AS (
    SELECT
        staged_row,
        event_id,
        event_time,
        event_kind,
        run_id,
        d.item AS item,
        d.direction AS direction,
        d.namespace AS namespace,
        d.name AS name,
        CASE
            WHEN d.version IS NOT NULL THEN d.version
            WHEN d.direction = 'OUTPUT' AND event_kind = 'RunEvent' THEN run_id
        END AS version,
        CASE
            WHEN d.version IS NOT NULL THEN 'facet'
            WHEN d.direction = 'OUTPUT' AND event_kind = 'RunEvent' THEN 'run'
            ELSE 'none'
        END AS version_source
    FROM items
    WHERE d.namespace IS NOT NULL AND d.name IS NOT NULL
)
SELECT
    *,
    md5(namespace || chr(31) || name) AS dataset_id,
    md5(namespace || chr(31) || name || chr(31) || coalesce(version, chr(30)))
        AS dataset_version_id
FROM versioned;

-- A dataset listed twice on one side of an event: once (grouping the narrow keys, not sorting
-- the items' JSON).
DELETE FROM lin_items
WHERE rowid NOT IN (
    SELECT min(rowid) FROM lin_items GROUP BY event_id, direction, dataset_version_id
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
    format('run {} reads and writes the same dataset version {}/{}@{} (event {}): a version '
           'cannot be its own ancestor; send the output''s new version in its version facet',
           n.run_id, l.namespace, l.name, l.version, n.event_id),
    encode(s.payload)
FROM lin_new AS n
JOIN stage_lineage_events AS s ON s.rowid = n.staged_row
JOIN (SELECT event_id, any_value(namespace) AS namespace, any_value(name) AS name,
             any_value(version) AS version
      FROM lin_loops GROUP BY event_id) AS l ON l.event_id = n.event_id;

DELETE FROM lin_new WHERE event_id IN (SELECT event_id FROM lin_loops);
DELETE FROM lin_parsed WHERE event_id IN (SELECT event_id FROM lin_loops);
DELETE FROM lin_items WHERE event_id IN (SELECT event_id FROM lin_loops);

-- The facets of what is left: each cut out of its staged payload (collectors/lineage/graph.py),
-- so no JSON is parsed or carried twice, before the join, which then moves no payload.
CREATE OR REPLACE TEMP TABLE lin_facet_rows AS
WITH entries AS (
    SELECT
        staged_row,
        event_id,
        event_time,
        event_kind,
        run_id,
        job_name,
        job_namespace,
        f.place AS place,
        f.item AS item,
        f.name AS facet_name,
        f.deleted AS deleted,
        coalesce(f.facet, substring(payload, f.start + 1, f.length)) AS facet
    FROM (
        SELECT rowid AS staged_row, event_id, event_time, event_kind, run_id, job_name,
               job_namespace, payload, unnest(facets) AS f
        FROM stage_lineage_events
        WHERE rowid IN (SELECT staged_row FROM lin_new)
    )
)
SELECT
    e.place AS entity_kind,
    CASE e.place
        WHEN 'run' THEN e.run_id
        WHEN 'job' THEN md5(e.job_namespace || chr(31) || e.job_name)
        WHEN 'dataset' THEN i.dataset_version_id
        ELSE e.run_id || '/' || i.dataset_version_id
    END AS entity_id,
    e.facet_name,
    e.event_id,
    e.event_time,
    e.deleted,
    CAST(e.facet AS JSON) AS facet,
    CASE WHEN e.place IN ('run', 'input', 'output') THEN e.run_id END AS run_id,
    i.dataset_version_id
FROM entries AS e
-- (joined by the staged row, a number, not by the event_id text)
LEFT JOIN lin_items AS i ON i.staged_row = e.staged_row AND i.item = e.item
WHERE (e.place = 'run' AND e.event_kind = 'RunEvent')
   OR (e.place = 'job' AND e.job_name IS NOT NULL)
   OR (e.place = 'dataset' AND i.dataset_version_id IS NOT NULL)
   OR (e.place IN ('input', 'output') AND i.dataset_version_id IS NOT NULL
       AND e.run_id IS NOT NULL);

-- lin_new holds each event_id once and none stored before (step 2): no ON CONFLICT, whose
-- check of the batch against itself would group the wide rows.
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

DROP TABLE lin_new;

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

INSERT INTO core.lineage_dataset_versions
    (dataset_version_id, dataset_id, namespace, name, version, version_source,
     produced_by_run_id, produced_at, created_at)
WITH producers AS (
    SELECT dataset_version_id, run_id, event_time
    FROM lin_items
    WHERE direction = 'OUTPUT' AND run_id IS NOT NULL
    QUALIFY row_number() OVER (
        PARTITION BY dataset_version_id ORDER BY event_time, run_id
    ) = 1
)
SELECT
    i.dataset_version_id,
    any_value(i.dataset_id),
    any_value(i.namespace),
    any_value(i.name),
    any_value(i.version),
    any_value(i.version_source),
    any_value(p.run_id),
    any_value(p.event_time),
    min(i.event_time)
FROM lin_items AS i
LEFT JOIN producers AS p ON p.dataset_version_id = i.dataset_version_id
GROUP BY i.dataset_version_id
ON CONFLICT (dataset_version_id) DO UPDATE SET
    produced_by_run_id = CASE
        WHEN excluded.produced_at IS NOT NULL
             AND (produced_at IS NULL OR excluded.produced_at < produced_at)
            THEN excluded.produced_by_run_id
        ELSE produced_by_run_id
    END,
    produced_at = CASE
        WHEN excluded.produced_at IS NOT NULL
             AND (produced_at IS NULL OR excluded.produced_at < produced_at)
            THEN excluded.produced_at
        ELSE produced_at
    END,
    created_at = least(created_at, excluded.created_at);

INSERT INTO core.lineage_run_io
    (run_id, dataset_version_id, direction, first_event_time, first_event_id, collection_id)
SELECT run_id, dataset_version_id, direction, event_time, event_id,
       getvariable('collection_id')
FROM lin_items
WHERE event_kind = 'RunEvent' AND direction IN ('INPUT', 'OUTPUT')
QUALIFY row_number() OVER (
    PARTITION BY run_id, dataset_version_id, direction ORDER BY event_time, event_id
) = 1
ON CONFLICT (run_id, dataset_version_id, direction) DO UPDATE SET
    first_event_time = CASE WHEN excluded.first_event_time < first_event_time
        THEN excluded.first_event_time ELSE first_event_time END,
    first_event_id = CASE WHEN excluded.first_event_time < first_event_time
        THEN excluded.first_event_id ELSE first_event_id END;

-- 5. -------------------------------------------------------------------------------------------
INSERT INTO core.lineage_facets
    (entity_kind, entity_id, facet_name, event_id, event_time, deleted, facet, run_id,
     dataset_version_id, day, collection_id)
SELECT entity_kind, entity_id, facet_name, event_id, event_time, deleted, facet, run_id,
       dataset_version_id, CAST(event_time AS DATE), getvariable('collection_id')
FROM lin_facet_rows;

-- The batch's latest facet per entity and facet name, by (eventTime, event_id): one aggregate
-- over the narrow keys (not a window over the wide rows: sorting the facets' JSON is what
-- would cost), then merged into the heads by a join (no index to maintain): a stored head is
-- replaced only by a newer one.
CREATE OR REPLACE TEMP TABLE lin_facet_latest AS
SELECT *
FROM lin_facet_rows
WHERE rowid IN (
    SELECT arg_max(rowid, (event_time, event_id))
    FROM lin_facet_rows
    GROUP BY entity_kind, entity_id, facet_name
);

MERGE INTO core.lineage_facet_heads AS h
USING lin_facet_latest AS n
ON h.entity_kind = n.entity_kind AND h.entity_id = n.entity_id AND h.facet_name = n.facet_name
WHEN MATCHED AND (n.event_time > h.event_time
                  OR (n.event_time = h.event_time AND n.event_id > h.event_id)) THEN UPDATE SET
    event_id = n.event_id,
    event_time = n.event_time,
    deleted = n.deleted,
    facet = n.facet,
    run_id = n.run_id,
    dataset_version_id = n.dataset_version_id
WHEN NOT MATCHED THEN INSERT
    (entity_kind, entity_id, facet_name, event_id, event_time, deleted, facet, run_id,
     dataset_version_id)
    VALUES (n.entity_kind, n.entity_id, n.facet_name, n.event_id, n.event_time, n.deleted,
            n.facet, n.run_id, n.dataset_version_id);

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
            SELECT entity_id FROM lin_facet_rows
            WHERE entity_kind = 'dataset' AND facet_name = 'datasetType'
        )
    )
    GROUP BY v.dataset_id
) AS k
WHERE d.dataset_id = k.dataset_id AND d.kind <> k.kind;

CREATE OR REPLACE TEMP TABLE lin_touched_runs AS
SELECT DISTINCT run_id FROM lin_parsed WHERE event_kind = 'RunEvent';

INSERT INTO core.lineage_runs
    (run_id, job_id, job_namespace, job_name, parent_run_id, state, started_at, ended_at,
     state_event_time, state_event_id, first_event_time, last_event_time, events,
     kubernetes_cluster, kubernetes_namespace, kubernetes_job_name, model_name, stage)
WITH ev AS (
    SELECT run_id, event_id, event_time, event_type, job_namespace, job_name
    FROM core.lineage_events
    WHERE event_kind = 'RunEvent' AND run_id IN (SELECT run_id FROM lin_touched_runs)
),
terminal AS (
    SELECT run_id, event_type, event_time, event_id
    FROM ev
    WHERE event_type IN ('COMPLETE', 'ABORT', 'FAIL')
    QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY event_time DESC, event_id DESC) = 1
),
latest AS (
    SELECT run_id, event_type, event_time, event_id
    FROM ev
    WHERE event_type IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY event_time DESC, event_id DESC) = 1
),
job AS (
    SELECT run_id, job_namespace, job_name
    FROM ev
    QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY event_time DESC, event_id DESC) = 1
),
agg AS (
    SELECT
        run_id,
        min(event_time) FILTER (WHERE event_type = 'START') AS started_at,
        min(event_time) AS first_event_time,
        max(event_time) AS last_event_time,
        count(*) AS events
    FROM ev
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
    md5(j.job_namespace || chr(31) || j.job_name),
    j.job_namespace,
    j.job_name,
    lower(f.parent ->> '$.run.runId'),
    coalesce(t.event_type, l.event_type),
    a.started_at,
    t.event_time,
    coalesce(t.event_time, l.event_time),
    coalesce(t.event_id, l.event_id),
    a.first_event_time,
    a.last_event_time,
    a.events,
    f.training ->> '$.kubernetes.cluster',
    f.training ->> '$.kubernetes.namespace',
    f.training ->> '$.kubernetes.jobName',
    f.training ->> '$.modelName',
    f.training ->> '$.stage'
FROM agg AS a
JOIN job AS j ON j.run_id = a.run_id
LEFT JOIN terminal AS t ON t.run_id = a.run_id
LEFT JOIN latest AS l ON l.run_id = a.run_id
LEFT JOIN facets AS f ON f.run_id = a.run_id
ON CONFLICT (run_id) DO UPDATE SET
    job_id = excluded.job_id,
    job_namespace = excluded.job_namespace,
    job_name = excluded.job_name,
    parent_run_id = excluded.parent_run_id,
    state = excluded.state,
    started_at = excluded.started_at,
    ended_at = excluded.ended_at,
    state_event_time = excluded.state_event_time,
    state_event_id = excluded.state_event_id,
    first_event_time = excluded.first_event_time,
    last_event_time = excluded.last_event_time,
    events = excluded.events,
    kubernetes_cluster = excluded.kubernetes_cluster,
    kubernetes_namespace = excluded.kubernetes_namespace,
    kubernetes_job_name = excluded.kubernetes_job_name,
    model_name = excluded.model_name,
    stage = excluded.stage;

-- Runs once the telemetry sink is closed: every sample appended, every series of the collection
-- mapped to its id (series without samples too) and registered as the Arrow table
-- annex_telemetry_series (the collector's series rows, in the staging types).
--
-- The new extents of the series this collection loaded samples of, from the collector's
-- telemetry_extents (the samples it received): a series without a watermark loaded them all;
-- one with a watermark loaded only those after it, so its first_ts stays and its last_ts moves
-- to the last one received if that is later. No pass over the samples just loaded.
CREATE OR REPLACE TEMP TABLE telemetry_extent AS
WITH received AS (
    SELECT
        m.series_id,
        any_value(m.watermark) AS watermark,
        min(e.first_ts) AS first_ts,
        max(e.last_ts) AS last_ts
    FROM stage_telemetry_extents AS e
    JOIN telemetry_series_map AS m USING (series_index)
    GROUP BY m.series_id
)
SELECT series_id, CASE WHEN watermark IS NULL THEN first_ts END AS first_ts, last_ts
FROM received
WHERE watermark IS NULL OR last_ts > watermark
UNION ALL
-- A collection without telemetry_extents (batches built by hand): one pass over the time range
-- it loaded; other collections' samples in that range can only lower first_ts or equal last_ts.
SELECT s.series_id, min(s.ts), max(s.ts)
FROM core.gpu_telemetry_samples AS s
WHERE NOT getvariable('telemetry_extents_given')
  AND getvariable('telemetry_min_ts') IS NOT NULL
  AND s.ts BETWEEN getvariable('telemetry_min_ts') AND getvariable('telemetry_max_ts')
  AND s.series_id IN (SELECT series_id FROM telemetry_series_map)
GROUP BY s.series_id;

-- Series the warehouse already had (least/greatest ignore a NULL extent).
UPDATE core.gpu_telemetry_series AS c
SET first_ts = least(c.first_ts, e.first_ts),
    last_ts = greatest(c.last_ts, e.last_ts),
    last_collection_id = getvariable('collection_id')
FROM telemetry_extent AS e
WHERE c.series_id = e.series_id;

-- Series first seen by this collection, with the ids their samples were stored under.
INSERT INTO core.gpu_telemetry_series BY NAME
SELECT
    getvariable('cluster') AS cluster,
    f.series_id,
    f.series_key,
    -- DCGM's label names (raw) -> core's (docs/naming.md)
    s.* EXCLUDE (series_index) RENAME (hostname AS node_name, model_name AS nvml_device_name),
    e.first_ts,
    e.last_ts,
    getvariable('collection_id') AS first_collection_id,
    getvariable('collection_id') AS last_collection_id
FROM telemetry_fresh_series AS f
JOIN annex_telemetry_series AS s USING (series_index)
LEFT JOIN telemetry_extent AS e USING (series_id);

-- The labels shown for a series are those of its latest line. Lines whose identity is the same
-- but whose other labels differ share one series: dcgm-exporter labels the XID line with the
-- code it carries (err_code, err_msg: gpu_collector.go), which moves with each new error. For
-- XID series, and for any series several lines of this collection fell into, the line with the
-- latest sample gives the labels, unless the warehouse already holds later samples of the
-- series (an older window read again). Other series' labels never change with their value, so
-- they are not compared (about 1 s per million series when all are).
UPDATE core.gpu_telemetry_series AS c
SET labels = l.labels
FROM (
    SELECT m.series_id, arg_max(s.labels, e.last_ts) AS labels, max(e.last_ts) AS last_ts
    FROM (
        SELECT series_index FROM annex_telemetry_series WHERE metric = 'xid_errors'
        UNION
        SELECT series_index FROM telemetry_series_map
        WHERE series_id IN (
            SELECT series_id FROM telemetry_series_map GROUP BY series_id HAVING count(*) > 1
        )
    ) AS k
    JOIN telemetry_series_map AS m USING (series_index)
    JOIN stage_telemetry_extents AS e USING (series_index)
    JOIN annex_telemetry_series AS s USING (series_index)
    GROUP BY m.series_id
) AS l
WHERE c.series_id = l.series_id
  AND l.last_ts >= c.last_ts
  AND c.labels IS DISTINCT FROM l.labels;

INSERT INTO audit.telemetry_targets BY NAME
SELECT getvariable('collection_id') AS collection_id, getvariable('cluster') AS cluster, *
FROM stage_telemetry_targets;

INSERT INTO audit.telemetry_loads
SELECT
    getvariable('collection_id'),
    getvariable('cluster'),
    getvariable('telemetry_min_ts'),
    getvariable('telemetry_max_ts'),
    getvariable('telemetry_series_received'),
    getvariable('telemetry_samples_received'),
    getvariable('telemetry_samples_loaded'),
    false
WHERE getvariable('telemetry_samples_received') > 0;

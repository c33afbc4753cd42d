-- Runs once after every chunk of the telemetry collection is staged and its samples appended.
-- Series that only appeared in stage_telemetry_series (no samples) are registered too.
-- Extents of the series this collection loaded: one pass over the time range it covered
-- (integer keys: DuckDB aggregates them without hashing strings); other collections' samples in
-- that range can only lower first_ts or equal last_ts, so they do no harm.
CREATE OR REPLACE TEMP TABLE telemetry_extent AS
SELECT s.series_id, min(s.ts) AS first_ts, max(s.ts) AS last_ts
FROM core.gpu_telemetry_samples AS s
WHERE getvariable('telemetry_min_ts') IS NOT NULL
  AND s.ts BETWEEN getvariable('telemetry_min_ts') AND getvariable('telemetry_max_ts')
GROUP BY s.series_id;

UPDATE core.gpu_telemetry_series AS c
SET first_ts = least(coalesce(c.first_ts, e.first_ts), e.first_ts),
    last_ts = greatest(coalesce(c.last_ts, e.last_ts), e.last_ts),
    last_collection_id = getvariable('collection_id')
FROM (
    SELECT DISTINCT e.* FROM telemetry_extent AS e JOIN telemetry_series_map AS m USING (series_id)
) AS e
WHERE c.series_id = e.series_id;

INSERT INTO audit.telemetry_targets BY NAME
SELECT getvariable('collection_id') AS collection_id, getvariable('cluster') AS cluster, *
FROM stage_telemetry_targets;

INSERT INTO audit.telemetry_loads
SELECT
    getvariable('collection_id'),
    getvariable('cluster'),
    getvariable('telemetry_min_ts'),
    getvariable('telemetry_max_ts'),
    (SELECT count(*) FROM stage_telemetry_series),
    getvariable('telemetry_samples_received'),
    getvariable('telemetry_samples_loaded'),
    false
WHERE getvariable('telemetry_samples_received') > 0;

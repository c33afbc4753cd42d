-- Run by warehouse/models/lineage_refresh.py (_CYCLES).
INSERT INTO marts.lineage_cycles
    (cycle_id, dataset_version_id, namespace, name, version, cycle_versions, example_run_id,
     refreshed_at)
WITH on_cycle AS (
    SELECT a AS node FROM lin_reach WHERE a = b
),
components AS (
    SELECT x.a AS node, min(x.b) AS cycle_id
    FROM lin_reach AS x
    JOIN lin_reach AS y ON y.a = x.b AND y.b = x.a
    WHERE x.a IN (SELECT node FROM on_cycle)
    GROUP BY x.a
),
sized AS (
    SELECT node, cycle_id, count(*) OVER (PARTITION BY cycle_id) AS cycle_versions
    FROM components
),
runs AS (
    SELECT s.node, min(e.run_id) AS run_id
    FROM sized AS s
    JOIN lin_edges AS e ON e.dst = s.node
    JOIN sized AS t ON t.node = e.src AND t.cycle_id = s.cycle_id
    GROUP BY s.node
)
SELECT s.cycle_id, s.node, v.namespace, v.name, v.version, s.cycle_versions, r.run_id, $now
FROM sized AS s
JOIN core.lineage_dataset_versions AS v ON v.dataset_version_id = s.node
LEFT JOIN runs AS r ON r.node = s.node

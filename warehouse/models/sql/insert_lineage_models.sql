-- Run by warehouse/models/lineage_refresh.py (_MODELS_INSERT).
INSERT INTO marts.lineage_models
    (model_version_id, model_name, namespace, name, version, produced_by_run_id, stage,
     created_at, upstream_versions, leaf_versions, on_cycle, refreshed_at)
WITH counts AS (
    SELECT model_version_id, count(*) AS upstream_versions,
           count(*) FILTER (WHERE is_leaf) AS leaf_versions
    FROM marts.lineage_model_inputs
    WHERE model_version_id IN (SELECT model_version_id FROM lin_stale)
    GROUP BY model_version_id
),
cyclic AS (
    SELECT DISTINCT i.model_version_id
    FROM marts.lineage_model_inputs AS i
    JOIN marts.lineage_cycles AS c ON c.dataset_version_id = i.dataset_version_id
    WHERE i.model_version_id IN (SELECT model_version_id FROM lin_stale)
    UNION
    SELECT dataset_version_id FROM marts.lineage_cycles
)
SELECT
    m.model_version_id, m.model_name, m.namespace, m.name, m.version, m.produced_by_run_id,
    m.stage, m.created_at, coalesce(c.upstream_versions, 0), coalesce(c.leaf_versions, 0),
    y.model_version_id IS NOT NULL, $now
FROM lin_models AS m
LEFT JOIN counts AS c ON c.model_version_id = m.model_version_id
LEFT JOIN cyclic AS y ON y.model_version_id = m.model_version_id
WHERE m.model_version_id IN (SELECT model_version_id FROM lin_stale)

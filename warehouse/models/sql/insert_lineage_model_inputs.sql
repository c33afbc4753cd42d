-- Run by warehouse/models/lineage_refresh.py (_INPUTS).
INSERT INTO marts.lineage_model_inputs
    (model_version_id, model_name, dataset_version_id, namespace, name, version, kind, depth,
     is_leaf, in_eu_scope)
SELECT
    c.model_version_id,
    m.model_name,
    c.dataset_version_id,
    v.namespace,
    v.name,
    v.version,
    d.kind,
    c.depth,
    NOT EXISTS (
        SELECT 1 FROM core.lineage_run_io AS p
        WHERE p.dataset_version_id = c.dataset_version_id AND p.direction = 'OUTPUT'
    ),
    s.dataset_version_id IS NOT NULL
FROM lin_closure AS c
JOIN lin_seeds AS m ON m.model_version_id = c.model_version_id
JOIN core.lineage_dataset_versions AS v ON v.dataset_version_id = c.dataset_version_id
JOIN core.lineage_datasets AS d ON d.dataset_id = v.dataset_id
LEFT JOIN lin_scope AS s
    ON s.model_version_id = c.model_version_id AND s.dataset_version_id = c.dataset_version_id

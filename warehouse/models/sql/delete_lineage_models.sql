-- Run by warehouse/models/lineage_refresh.py (_DROP_MODELS).
DELETE FROM marts.lineage_models
WHERE model_version_id IN (SELECT model_version_id FROM lin_stale)
   OR model_version_id NOT IN (SELECT model_version_id FROM lin_models)

-- Run by warehouse/models/lineage_refresh.py (_DROP_INPUTS).
DELETE FROM marts.lineage_model_inputs
WHERE model_version_id IN (SELECT model_version_id FROM lin_seeds)
   OR model_version_id NOT IN (SELECT model_version_id FROM lin_models)

-- marts.model_gpu_hours: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.model_gpu_hours AS
SELECT model_name, any_value(gpu_model) AS gpu_model, gfd_product,
       coalesce(sum(gpu_hours) FILTER (WHERE NOT declared), 0) AS gpu_hours,
       coalesce(sum(gpu_hours) FILTER (WHERE declared), 0) AS declared_gpu_hours,
       sum(gpu_hours) / 24 AS hardware_days, count(DISTINCT run_id) AS runs
FROM marts.training_run_gpus
WHERE counted
GROUP BY model_name, gfd_product;

COMMENT ON VIEW marts.model_gpu_hours IS
    'GPU-hours per model and GPU model over its counted runs (MDF 7 hardware), observed and declared apart, from marts.training_run_gpus.';
COMMENT ON COLUMN marts.model_gpu_hours.model_name IS
    'The model.';
COMMENT ON COLUMN marts.model_gpu_hours.gfd_product IS
    'GFD label nvidia.com/gpu.product of the nodes, or the one a producer declared.';
COMMENT ON COLUMN marts.model_gpu_hours.gpu_model IS
    'Canonical GPU model of gfd_product (annex''s SKU key); NULL when annex has no peak for it.';
COMMENT ON COLUMN marts.model_gpu_hours.gpu_hours IS
    'Whole-GPU hours its counted runs held on that GPU model (observed by the inventory).';
COMMENT ON COLUMN marts.model_gpu_hours.declared_gpu_hours IS
    'GPU-hours on that GPU model that producers declared for runs the inventory never saw.';
COMMENT ON COLUMN marts.model_gpu_hours.hardware_days IS
    '(gpu_hours + declared_gpu_hours) / 24.';
COMMENT ON COLUMN marts.model_gpu_hours.runs IS
    'Counted runs that used that GPU model.';

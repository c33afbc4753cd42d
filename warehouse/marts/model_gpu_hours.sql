-- marts.model_gpu_hours: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.model_gpu_hours AS
SELECT model_name, gpu_product, any_value(gpu_sku) AS gpu_sku,
       coalesce(sum(gpu_hours) FILTER (WHERE NOT declared), 0) AS gpu_hours,
       coalesce(sum(gpu_hours) FILTER (WHERE declared), 0) AS declared_gpu_hours,
       sum(gpu_hours) / 24 AS hardware_days, count(DISTINCT run_id) AS runs
FROM marts.training_run_gpus
WHERE counted
GROUP BY model_name, gpu_product;

COMMENT ON VIEW marts.model_gpu_hours IS
    'GPU-hours per model and GPU model over its counted runs (MDF 7 hardware), observed and declared apart, from marts.training_run_gpus.';
COMMENT ON COLUMN marts.model_gpu_hours.model_name IS
    'The model.';
COMMENT ON COLUMN marts.model_gpu_hours.gpu_product IS
    'GPU model of the nodes (GFD nvidia.com/gpu.product), or the one a producer declared.';
COMMENT ON COLUMN marts.model_gpu_hours.gpu_sku IS
    'SKU annex matched; NULL when it has no peak for it.';
COMMENT ON COLUMN marts.model_gpu_hours.gpu_hours IS
    'Whole-GPU hours its counted runs held on that GPU model (observed by the inventory).';
COMMENT ON COLUMN marts.model_gpu_hours.declared_gpu_hours IS
    'GPU-hours on that GPU model that producers declared for runs the inventory never saw.';
COMMENT ON COLUMN marts.model_gpu_hours.hardware_days IS
    '(gpu_hours + declared_gpu_hours) / 24.';
COMMENT ON COLUMN marts.model_gpu_hours.runs IS
    'Counted runs that used that GPU model.';

-- 5. per chunk of hours: names back (integer keys were all the hourly statements carried).
-- Run by warehouse/models/utilisation.py (_INSERT_GPU_HOURS).
INSERT INTO marts.gpu_hourly BY NAME
WITH rows AS (
    SELECT
        u.cluster,
        u.gpu_uuid,
        h.name AS node_name,
        m.name AS nvml_device_name,
        gm.gpu_model,
        l.pod AS workload_pod,
        l.namespace AS workload_namespace,
        g.*
    FROM util_ghour AS g
    JOIN util_gpus AS u USING (gpu_key)
    LEFT JOIN util_labels AS l ON l.label_key = g.label_key
    LEFT JOIN util_names AS h ON h.name_key = g.host_key
    LEFT JOIN util_names AS m ON m.name_key = g.model_key
    LEFT JOIN marts.gpu_models AS gm ON gm.source = 'nvml_device_name' AND gm.spelling = m.name
)
SELECT
    cluster,
    gpu_uuid,
    hour,
    CAST(hour AS DATE) AS day,
    node_name,
    nvml_device_name,
    gpu_model,
    samples,
    CASE busy_code WHEN 1 THEN 'gr_engine_active' WHEN 2 THEN 'gpu_util' END AS busy_signal,
    busy,
    sm_active,
    tensor_active,
    dram_active,
    power_watts,
    power_covered_seconds,
    energy_joules,
    power_watts * power_covered_seconds AS energy_estimated_joules,
    max_gpu_temp_c,
    mean_sm_clock_mhz,
    CAST(xid_last AS INTEGER) AS xid_last,
    xid_samples,
    CAST(uncorrectable_remapped_rows_max AS BIGINT) AS uncorrectable_remapped_rows_max,
    CAST(correctable_remapped_rows_max AS BIGINT) AS correctable_remapped_rows_max,
    CAST(row_remap_failure_max AS BIGINT) AS row_remap_failure_max,
    workload_pod,
    workload_namespace,
    pod_label_fraction,
    {pod_category} AS pod_category,
    CAST($now AS TIMESTAMP) AS refreshed_at
FROM rows

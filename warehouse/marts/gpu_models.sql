-- marts.gpu_models: re-created on every migrate from this file (warehouse/marts/README.md).
-- The ONE GPU model mapping the marts use (docs/naming.md, "GPU model"): every spelling of a GPU
-- model seen in the warehouse -> annex's canonical gpu_model (the SKU key of
-- core.gpu_peak_reference). The known products are probes/gpubench/peaks.py's PEAKS
-- (model_patterns; tests/warehouse/test_gpu_models.py fails when the two differ), and a
-- spelling is normalised as peaks.normalise_model does (separators -> one space, upper case)
-- after GFD's -MIG-<profile> / -SHARED suffix is cut off. An unknown spelling maps to NULL,
-- never to a guess.
CREATE OR REPLACE VIEW marts.gpu_models AS
WITH known(gpu_model, architecture, product_name) AS (
    VALUES
        ('A100-SXM4-40GB', 'Ampere', 'NVIDIA A100 SXM4 40GB'),
        ('A100-SXM4-80GB', 'Ampere', 'NVIDIA A100 SXM4 80GB'),
        ('H100-SXM5-80GB', 'Hopper', 'NVIDIA H100 80GB HBM3'),
        ('H100-SXM5-80GB', 'Hopper', 'NVIDIA H100 SXM5 80GB'),
        ('H200-SXM-141GB', 'Hopper', 'NVIDIA H200'),
        ('H200-SXM-141GB', 'Hopper', 'NVIDIA H200 141GB HBM3E'),
        ('GB200-186GB', 'Blackwell', 'NVIDIA GB200')
),
models AS (
    SELECT gpu_model, any_value(architecture) AS architecture FROM known GROUP BY gpu_model
),
spellings AS (
    SELECT gfd_product AS spelling, 'gfd_product' AS source
    FROM core.nodes WHERE gfd_product IS NOT NULL
    UNION
    -- the GPU product a training run's producer declared (annex_trainingRun.resources), spelt
    -- as the nodes' GFD label
    SELECT facet ->> '$.resources.gpuProduct', 'gfd_product'
    FROM core.lineage_current_facets
    WHERE entity_kind = 'run' AND facet_name = 'annex_trainingRun'
      AND facet ->> '$.resources.gpuProduct' IS NOT NULL
    UNION
    SELECT nvml_device_name, 'nvml_device_name'
    FROM core.gpu_telemetry_series WHERE nvml_device_name IS NOT NULL
    UNION
    SELECT nvml_device_name, 'nvml_device_name'
    FROM core.gpu_benchmarks WHERE nvml_device_name IS NOT NULL
    UNION
    SELECT product_name, 'nvml_device_name' FROM known
    UNION
    SELECT gpu_model, 'gpu_model' FROM models
    UNION
    SELECT gpu_model, 'gpu_model' FROM core.gpu_peak_reference WHERE gpu_model IS NOT NULL
    UNION
    SELECT gpu_model, 'gpu_model' FROM core.gpu_benchmarks WHERE gpu_model IS NOT NULL
),
normalised AS (
    SELECT
        spelling,
        source,
        upper(trim(regexp_replace(
            CASE WHEN source = 'gfd_product'
                 THEN regexp_replace(trim(spelling), '(-MIG-.*|-SHARED)$', '')
                 ELSE trim(spelling) END,
            '[\s_-]+', ' ', 'g'))) AS product_name
    FROM spellings
)
SELECT
    n.spelling,
    n.source,
    coalesce(k.gpu_model, m.gpu_model) AS gpu_model,
    coalesce(k.architecture, m.architecture) AS architecture
FROM normalised AS n
LEFT JOIN (SELECT DISTINCT gpu_model, architecture, product_name FROM known) AS k
    ON n.source <> 'gpu_model' AND k.product_name = n.product_name
LEFT JOIN models AS m ON n.source = 'gpu_model' AND m.gpu_model = n.spelling;

COMMENT ON VIEW marts.gpu_models IS
    'GPU model dimension: every spelling of a GPU model seen in the warehouse (GFD product label of a node or declared for a training run, NVML device name, annex SKU) and the known reference rows, mapped to the one canonical gpu_model. The only GPU model mapping the marts use (docs/naming.md).';
COMMENT ON COLUMN marts.gpu_models.spelling IS
    'The spelling as a source wrote it, e.g. NVIDIA-H100-80GB-HBM3-MIG-1g.10gb (GFD), NVIDIA H100 80GB HBM3 (NVML), H100-SXM5-80GB (annex).';
COMMENT ON COLUMN marts.gpu_models.source IS
    'Which kind of spelling: gfd_product (nvidia.com/gpu.product label), nvml_device_name (NVML name: DCGM modelName, torch) or gpu_model (annex''s canonical SKU key).';
COMMENT ON COLUMN marts.gpu_models.gpu_model IS
    'Canonical GPU model (annex''s SKU key, as in core.gpu_peak_reference); NULL when annex does not know the spelling (never a guess).';
COMMENT ON COLUMN marts.gpu_models.architecture IS
    'GPU architecture (Ampere, Hopper, Blackwell) when the model is known; NULL otherwise.';

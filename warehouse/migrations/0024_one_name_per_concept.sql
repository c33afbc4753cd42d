-- 0024 one name per concept in core and marts (issue 37 item 1; the glossary is docs/naming.md,
-- and tests/warehouse/test_naming.py fails when a core or marts column is one of its synonyms).
-- Columns are renamed in place (ALTER TABLE ... RENAME COLUMN keeps the data, the comment and
-- the column's place); the marts views are re-created from their files right after.
--   cluster / namespace: core.lineage_runs and marts.training_run_compute said kubernetes_*.
--   node_name: core.gpu_telemetry_series.hostname (DCGM's Hostname label, which the GPU
--     operator sets to the node name), core.gpu_benchmarks.node, core.gpu_benchmark_pods.node.
--   node_pool: core.nodes.pool and marts.node_gpu_hours.pool.
--   first_seen_at / last_seen_at: core.gpu_attested_devices said first_seen / last_seen.
--   gpu_model is annex's canonical SKU key (core.gpu_peak_reference); raw spellings keep
--     source-named columns: gfd_product (nvidia.com/gpu.product) and nvml_device_name (DCGM's
--     modelName, torch). core.gpu_telemetry_series.model_name said "model_name", the name of
--     the AI model everywhere else.
--   marts.gpu_hourly / gpu_daily: the DCGM spelling moves to nvml_device_name and a canonical
--     gpu_model is added, filled here from marts.gpu_models (created below as a copy of
--     warehouse/marts/gpu_models.sql for the backfill; every migrate re-creates it from the file).
--   marts.node_gpu_hours.gpu_product held a GFD label or a DCGM name: it becomes the canonical
--     gpu_model; marts.training_run_compute.declared_gpu_product becomes declared_gpu_model.
-- The marts views' own renames (<state>_gpus, failure_domain, web_domain, node_pool, gpu_model
-- with gfd_product / nvml_device_name beside it) are in their files under warehouse/marts.

ALTER TABLE core.lineage_runs RENAME COLUMN kubernetes_cluster TO cluster;
ALTER TABLE core.lineage_runs RENAME COLUMN kubernetes_namespace TO namespace;
COMMENT ON COLUMN core.lineage_runs.cluster IS 'annex_trainingRun.kubernetes.cluster of the current facet: the cluster of the training run''s Kubernetes Job.';
COMMENT ON COLUMN core.lineage_runs.namespace IS 'annex_trainingRun.kubernetes.namespace of the current facet: the namespace of the training run''s Kubernetes Job.';

ALTER TABLE core.gpu_telemetry_series RENAME COLUMN hostname TO node_name;
ALTER TABLE core.gpu_telemetry_series RENAME COLUMN model_name TO nvml_device_name;
COMMENT ON COLUMN core.gpu_telemetry_series.node_name IS 'Node the exporter runs on: DCGM''s Hostname (or hostname) label, which the GPU operator sets to the Kubernetes node name.';
COMMENT ON COLUMN core.gpu_telemetry_series.nvml_device_name IS 'NVML device name as DCGM''s modelName label spells it, e.g. NVIDIA H100 80GB HBM3 (canonical model: marts.gpu_models).';

ALTER TABLE core.gpu_benchmarks RENAME COLUMN node TO node_name;
ALTER TABLE core.gpu_benchmarks RENAME COLUMN gpu_model TO nvml_device_name;
ALTER TABLE core.gpu_benchmarks RENAME COLUMN gpu_sku TO gpu_model;
COMMENT ON COLUMN core.gpu_benchmarks.node_name IS 'Node the probe ran on (checked against the pod''s spec.nodeName).';
COMMENT ON COLUMN core.gpu_benchmarks.nvml_device_name IS 'NVML device name the probe read through torch, e.g. NVIDIA H100 80GB HBM3.';
COMMENT ON COLUMN core.gpu_benchmarks.gpu_model IS 'Canonical GPU model (annex''s SKU key, core.gpu_peak_reference) matched from nvml_device_name at ingest; NULL when annex has no peak for it.';

ALTER TABLE core.gpu_benchmark_pods RENAME COLUMN node TO node_name;
COMMENT ON COLUMN core.gpu_benchmark_pods.node_name IS 'spec.nodeName of the pod.';

ALTER TABLE core.nodes RENAME COLUMN gpu_product TO gfd_product;
ALTER TABLE core.nodes RENAME COLUMN pool TO node_pool;
COMMENT ON COLUMN core.nodes.gfd_product IS 'GPU feature discovery''s nvidia.com/gpu.product label as written, e.g. NVIDIA-H100-80GB-HBM3 or NVIDIA-H100-80GB-HBM3-MIG-1g.10gb (canonical model: marts.gpu_models).';

ALTER TABLE core.gpu_attested_devices RENAME COLUMN first_seen TO first_seen_at;
ALTER TABLE core.gpu_attested_devices RENAME COLUMN last_seen TO last_seen_at;
COMMENT ON COLUMN core.gpu_attested_devices.last_record_id IS 'The record behind last_seen_at.';

ALTER TABLE core.gpu_peak_reference RENAME COLUMN gpu_sku TO gpu_model;
COMMENT ON COLUMN core.gpu_peak_reference.gpu_model IS 'Canonical GPU model (annex''s SKU key), e.g. H100-SXM5-80GB (PCIe and NVL parts are other models).';

ALTER TABLE marts.gpu_hourly RENAME COLUMN gpu_model TO nvml_device_name;
ALTER TABLE marts.gpu_hourly ADD COLUMN gpu_model VARCHAR;
COMMENT ON COLUMN marts.gpu_hourly.nvml_device_name IS 'NVML device name from DCGM''s modelName label.';
COMMENT ON COLUMN marts.gpu_hourly.gpu_model IS 'Canonical GPU model of nvml_device_name (marts.gpu_models); NULL when annex does not know it.';
ALTER TABLE marts.gpu_daily RENAME COLUMN gpu_model TO nvml_device_name;
ALTER TABLE marts.gpu_daily ADD COLUMN gpu_model VARCHAR;
COMMENT ON COLUMN marts.gpu_daily.nvml_device_name IS 'NVML device name from DCGM''s modelName label (of the day''s last hour).';
COMMENT ON COLUMN marts.gpu_daily.gpu_model IS 'Canonical GPU model of nvml_device_name (marts.gpu_models); NULL when annex does not know it.';

ALTER TABLE marts.node_gpu_hours RENAME COLUMN gpu_product TO gpu_model;
ALTER TABLE marts.node_gpu_hours RENAME COLUMN pool TO node_pool;
COMMENT ON COLUMN marts.node_gpu_hours.gpu_model IS 'Canonical GPU model of the node (marts.gpu_models): from its GFD product label, else from DCGM''s device name; NULL when annex does not know it.';

ALTER TABLE marts.training_run_gpus RENAME COLUMN gpu_product TO gfd_product;
ALTER TABLE marts.training_run_gpus RENAME COLUMN gpu_sku TO gpu_model;
COMMENT ON COLUMN marts.training_run_gpus.gfd_product IS 'GPU feature discovery label nvidia.com/gpu.product of the node version when the holding began (unknown when unlabelled).';
COMMENT ON COLUMN marts.training_run_gpus.gpu_model IS 'Canonical GPU model of gfd_product (annex''s SKU key); NULL when annex has no peak for it.';

ALTER TABLE marts.training_run_compute RENAME COLUMN kubernetes_cluster TO cluster;
ALTER TABLE marts.training_run_compute RENAME COLUMN kubernetes_namespace TO namespace;
ALTER TABLE marts.training_run_compute RENAME COLUMN declared_gpu_product TO declared_gpu_model;
COMMENT ON COLUMN marts.training_run_compute.cluster IS 'Kubernetes cluster the producer declared (annex_trainingRun.kubernetes.cluster).';
COMMENT ON COLUMN marts.training_run_compute.namespace IS 'Kubernetes namespace the producer declared (annex_trainingRun.kubernetes.namespace).';
COMMENT ON COLUMN marts.training_run_compute.declared_gpu_model IS 'Canonical GPU model of the one the producer declared (annex_trainingRun.resources.gpuProduct, mapped by marts.gpu_models); NULL when not declared or unknown.';

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

UPDATE marts.gpu_hourly AS h SET gpu_model = m.gpu_model
FROM marts.gpu_models AS m
WHERE m.source = 'nvml_device_name' AND m.spelling = h.nvml_device_name;
UPDATE marts.gpu_daily AS d SET gpu_model = m.gpu_model
FROM marts.gpu_models AS m
WHERE m.source = 'nvml_device_name' AND m.spelling = d.nvml_device_name;
UPDATE marts.node_gpu_hours AS n SET gpu_model = (
    SELECT max(m.gpu_model) FROM marts.gpu_models AS m
    WHERE m.source <> 'gpu_model' AND m.spelling = n.gpu_model
);
UPDATE marts.training_run_compute AS r SET declared_gpu_model = (
    SELECT max(m.gpu_model) FROM marts.gpu_models AS m
    WHERE m.source <> 'gpu_model' AND m.spelling = r.declared_gpu_model
);

-- The EU top-domains table macro names internet domains web_domain / web_domains (a failure
-- domain is failure_domain) and reads marts.lineage_model_sources.web_domain_stats, a column
-- the view gets only when re-created from its file after this migration: the macro now lives
-- in that file (warehouse/marts/lineage_model_sources.sql, after the view), so it is dropped
-- here and re-created there.
DROP MACRO TABLE IF EXISTS marts.lineage_top_domains;

-- marts.gpus: re-created on every migrate from this file (warehouse/marts/README.md).
-- The GPU dimension: one row per physical GPU (cluster, gpu_uuid) that any evidence names.
-- A MIG instance reports its parent GPU's UUID, so its profiles are listed on the parent.
CREATE OR REPLACE VIEW marts.gpus AS
WITH sightings AS (
    SELECT cluster, gpu_uuid, node_name, nvml_device_name, mig_profile,
           first_ts AS first_at, last_ts AS last_at, 'telemetry' AS evidence
    FROM core.gpu_telemetry_series
    WHERE gpu_uuid IS NOT NULL
    UNION ALL
    SELECT cluster, gpu_uuid, node_name, nvml_device_name, NULL, ts, ts, 'benchmark'
    FROM core.gpu_benchmarks
    WHERE gpu_uuid IS NOT NULL
    UNION ALL
    SELECT cluster, gpu_uuid, node_name, NULL, NULL, issued_at, issued_at, 'attestation'
    FROM core.attestation_records
    WHERE gpu_uuid IS NOT NULL AND issued_at IS NOT NULL
),
per_gpu AS (
    SELECT
        cluster,
        gpu_uuid,
        arg_max(node_name, last_at) FILTER (WHERE node_name IS NOT NULL) AS node_name,
        arg_max(nvml_device_name, last_at) FILTER (WHERE nvml_device_name IS NOT NULL)
            AS nvml_device_name,
        string_agg(DISTINCT mig_profile, ',' ORDER BY mig_profile) AS mig_profile,
        min(first_at) AS first_seen_at,
        max(last_at) AS last_seen_at,
        bool_or(evidence = 'telemetry') AS seen_by_telemetry,
        bool_or(evidence = 'benchmark') AS seen_by_benchmark,
        bool_or(evidence = 'attestation') AS seen_by_attestation
    FROM sightings
    GROUP BY cluster, gpu_uuid
)
SELECT
    g.cluster,
    g.gpu_uuid,
    g.node_name,
    m.gpu_model,
    g.nvml_device_name,
    g.mig_profile,
    g.first_seen_at,
    g.last_seen_at,
    g.seen_by_telemetry,
    g.seen_by_benchmark,
    g.seen_by_attestation
FROM per_gpu AS g
LEFT JOIN marts.gpu_models AS m
    ON m.source = 'nvml_device_name' AND m.spelling = g.nvml_device_name;

COMMENT ON VIEW marts.gpus IS
    'GPU dimension: one row per physical GPU (cluster, gpu_uuid) seen in any evidence (DCGM telemetry, the GPU benchmark probe, confidential-computing attestation), with its node, canonical model, MIG profiles and when it was first and last seen.';
COMMENT ON COLUMN marts.gpus.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.gpus.gpu_uuid IS
    'GPU UUID (GPU-...), the key of the GPU in every marts table that has one.';
COMMENT ON COLUMN marts.gpus.node_name IS
    'Node the GPU was last seen on (by any evidence).';
COMMENT ON COLUMN marts.gpus.gpu_model IS
    'Canonical GPU model (marts.gpu_models) of nvml_device_name; NULL when unknown to annex or seen only by attestation.';
COMMENT ON COLUMN marts.gpus.nvml_device_name IS
    'NVML device name last reported by DCGM or the benchmark probe, e.g. NVIDIA H100 80GB HBM3; NULL when seen only by attestation.';
COMMENT ON COLUMN marts.gpus.mig_profile IS
    'MIG GPU instance profiles DCGM reported on this GPU (GPU_I_PROFILE), comma-separated and sorted, e.g. 1g.10gb,3g.40gb; NULL when no MIG instance was seen (whole GPU or unknown).';
COMMENT ON COLUMN marts.gpus.first_seen_at IS
    'Earliest evidence of the GPU (UTC): first telemetry sample, benchmark measurement or attestation token issued_at.';
COMMENT ON COLUMN marts.gpus.last_seen_at IS
    'Latest evidence of the GPU (UTC).';
COMMENT ON COLUMN marts.gpus.seen_by_telemetry IS
    'Whether DCGM telemetry (core.gpu_telemetry_series) names the GPU.';
COMMENT ON COLUMN marts.gpus.seen_by_benchmark IS
    'Whether the GPU benchmark probe (core.gpu_benchmarks) measured it.';
COMMENT ON COLUMN marts.gpus.seen_by_attestation IS
    'Whether an attestation record (core.attestation_records, verified or not) names it.';

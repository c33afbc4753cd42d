-- marts.model_attestation_summary: re-created on every migrate from this file (warehouse/marts/README.md).
-- The model's total over its counted runs (marts.model_attestation), so the GPU-hours are those
-- of marts.model_compute.gpu_hours and of marts.model_gpu_hours summed over GPU models.
CREATE OR REPLACE VIEW marts.model_attestation_summary AS
WITH totals AS (
    SELECT
        model_name,
        count(*) AS runs,
        coalesce(sum(gpu_hours), 0) AS gpu_hours,
        coalesce(sum(verified_gpu_hours), 0) AS verified_gpu_hours,
        coalesce(sum(self_reported_gpu_hours), 0) AS self_reported_gpu_hours,
        coalesce(sum(unattested_gpu_hours), 0) AS unattested_gpu_hours,
        coalesce(sum(unknown_gpu_hours), 0) AS unknown_gpu_hours,
        coalesce(sum(declared_gpu_hours), 0) AS declared_gpu_hours
    FROM marts.model_attestation
    WHERE counted
    GROUP BY model_name
)
SELECT
    model_name,
    runs,
    gpu_hours,
    verified_gpu_hours,
    self_reported_gpu_hours,
    unattested_gpu_hours,
    unknown_gpu_hours,
    verified_gpu_hours / nullif(gpu_hours - unknown_gpu_hours, 0) AS verified_share,
    self_reported_gpu_hours / nullif(gpu_hours - unknown_gpu_hours, 0) AS self_reported_share,
    unattested_gpu_hours / nullif(gpu_hours - unknown_gpu_hours, 0) AS unattested_share,
    unknown_gpu_hours / nullif(gpu_hours, 0) AS unknown_share,
    declared_gpu_hours
FROM totals;

COMMENT ON VIEW marts.model_attestation_summary IS
    'Attestation coverage of each model''s GPU-hours: marts.model_attestation summed over the model''s counted runs (verified + self_reported + unattested + unknown = gpu_hours = marts.model_compute.gpu_hours). Runs listed apart (not counted) are in marts.model_attestation only.';
COMMENT ON COLUMN marts.model_attestation_summary.model_name IS
    'The model.';
COMMENT ON COLUMN marts.model_attestation_summary.runs IS
    'Its counted training runs.';
COMMENT ON COLUMN marts.model_attestation_summary.gpu_hours IS
    'Σ GPU-hours of record of its counted runs (observed by the inventory), as marts.model_compute.gpu_hours.';
COMMENT ON COLUMN marts.model_attestation_summary.verified_gpu_hours IS
    'Of gpu_hours, held on nodes verified at the time (GPUs and CVM attested, same boot).';
COMMENT ON COLUMN marts.model_attestation_summary.self_reported_gpu_hours IS
    'Of gpu_hours, covered by self-reported evidence only.';
COMMENT ON COLUMN marts.model_attestation_summary.unattested_gpu_hours IS
    'Of gpu_hours, on known GPU nodes without covering evidence.';
COMMENT ON COLUMN marts.model_attestation_summary.unknown_gpu_hours IS
    'Of gpu_hours, not judged (see marts.model_attestation.unknown_gpu_hours).';
COMMENT ON COLUMN marts.model_attestation_summary.verified_share IS
    'verified / (gpu_hours − unknown): the model''s verified attestation share of the GPU-hours that can be judged; NULL when none can.';
COMMENT ON COLUMN marts.model_attestation_summary.self_reported_share IS
    'self_reported / (gpu_hours − unknown); NULL when none can be judged.';
COMMENT ON COLUMN marts.model_attestation_summary.unattested_share IS
    'unattested / (gpu_hours − unknown); NULL when none can be judged.';
COMMENT ON COLUMN marts.model_attestation_summary.unknown_share IS
    'unknown / gpu_hours: how much could not be judged.';
COMMENT ON COLUMN marts.model_attestation_summary.declared_gpu_hours IS
    'Σ GPU-hours producers declared for counted runs the inventory never saw (marts.model_compute.declared_gpu_hours): outside the split, no attestation can cover them.';

-- marts.model_attestation: re-created on every migrate from this file (warehouse/marts/README.md).
-- One row per training run: the run's GPU-hours of record (marts.training_run_compute.gpu_hours,
-- the figure the compute reports sign) split by the attestation coverage of its Kubernetes Job's
-- holdings (marts.attestation_gpu_hours, the figures the coverage reports sign). Only the run that
-- holds the Job's claim gets the Job's coverage (the others have gpu_hours NULL), and only for
-- the days the run held GPUs, so no GPU-hour is split into two runs. The buckets are the coverage's
-- own, scaled to the run's GPU-hours where the two count open holdings to different horizons.
CREATE OR REPLACE VIEW marts.model_attestation AS
WITH runs AS (
    SELECT
        model_name,
        run_id,
        lifecycle_stage,
        counted,
        running,
        cluster,
        namespace,
        kubernetes_job_name AS job_name,
        first_allocation_at,
        last_allocation_at,
        gpu_hours,
        declared_gpu_hours
    FROM marts.training_run_compute
),
coverage AS (
    SELECT
        r.run_id,
        sum(a.allocated_gpu_hours) AS allocated,
        sum(a.verified_gpu_hours) AS verified,
        sum(a.self_reported_gpu_hours) AS self_reported,
        sum(a.unattested_gpu_hours) AS unattested,
        sum(a.unknown_gpu_hours) AS unknown
    FROM runs AS r
    JOIN marts.attestation_gpu_hours AS a
        ON a.cluster = r.cluster
        AND a.namespace = r.namespace
        AND a.job_name = r.job_name
        AND a.day BETWEEN CAST(r.first_allocation_at AS DATE) AND CAST(r.last_allocation_at AS DATE)
    WHERE r.gpu_hours IS NOT NULL
    GROUP BY r.run_id
),
split AS (
    SELECT
        r.*,
        c.allocated AS coverage_gpu_hours,
        CASE
            WHEN r.gpu_hours IS NULL THEN NULL
            WHEN coalesce(c.allocated, 0) = 0 THEN 0.0
            ELSE r.gpu_hours * c.verified / c.allocated
        END AS verified_gpu_hours,
        CASE
            WHEN r.gpu_hours IS NULL THEN NULL
            WHEN coalesce(c.allocated, 0) = 0 THEN 0.0
            ELSE r.gpu_hours * c.self_reported / c.allocated
        END AS self_reported_gpu_hours,
        CASE
            WHEN r.gpu_hours IS NULL THEN NULL
            WHEN coalesce(c.allocated, 0) = 0 THEN 0.0
            ELSE r.gpu_hours * c.unattested / c.allocated
        END AS unattested_gpu_hours,
        CASE
            WHEN r.gpu_hours IS NULL THEN NULL
            WHEN coalesce(c.allocated, 0) = 0 THEN r.gpu_hours
            ELSE r.gpu_hours * c.unknown / c.allocated
        END AS unknown_gpu_hours
    FROM runs AS r
    LEFT JOIN coverage AS c ON c.run_id = r.run_id
)
SELECT
    model_name,
    run_id,
    lifecycle_stage,
    counted,
    running,
    cluster,
    namespace,
    job_name,
    gpu_hours,
    verified_gpu_hours,
    self_reported_gpu_hours,
    unattested_gpu_hours,
    unknown_gpu_hours,
    verified_gpu_hours / nullif(gpu_hours - unknown_gpu_hours, 0) AS verified_share,
    self_reported_gpu_hours / nullif(gpu_hours - unknown_gpu_hours, 0) AS self_reported_share,
    unattested_gpu_hours / nullif(gpu_hours - unknown_gpu_hours, 0) AS unattested_share,
    unknown_gpu_hours / nullif(gpu_hours, 0) AS unknown_share,
    coverage_gpu_hours,
    declared_gpu_hours
FROM split;

COMMENT ON VIEW marts.model_attestation IS
    'Attestation coverage of each model''s GPU-hours, by training run: the run''s GPU-hours of record (marts.training_run_compute.gpu_hours) split into verified + self_reported + unattested + unknown = gpu_hours by the coverage of its Kubernetes Job''s holdings (marts.attestation_gpu_hours, the days the run held GPUs). A Job''s GPU-hours go to the one run holding its claim, never to two. Every run is listed, counted or not (counted); marts.model_attestation_summary adds up the counted ones per model.';
COMMENT ON COLUMN marts.model_attestation.model_name IS
    'The model the run''s compute counts toward (marts.training_run_compute.model_name).';
COMMENT ON COLUMN marts.model_attestation.run_id IS
    'The training run (core.lineage_runs.run_id).';
COMMENT ON COLUMN marts.model_attestation.lifecycle_stage IS
    'pretraining, continued_pretraining, fine_tuning, reinforcement_learning or synthetic_data_generation.';
COMMENT ON COLUMN marts.model_attestation.counted IS
    'The run counts toward the model''s compute (marts.training_run_compute.counted); false: listed apart (its exclusion is in marts.training_run_compute).';
COMMENT ON COLUMN marts.model_attestation.running IS
    'No terminal event yet: its GPU-hours grow with each collection.';
COMMENT ON COLUMN marts.model_attestation.cluster IS
    'Cluster of the run''s Kubernetes Job (annex_trainingRun.kubernetes.cluster).';
COMMENT ON COLUMN marts.model_attestation.namespace IS
    'Kubernetes namespace of the Job.';
COMMENT ON COLUMN marts.model_attestation.job_name IS
    'The batch/v1 Job whose holdings the run''s GPU-hours are.';
COMMENT ON COLUMN marts.model_attestation.gpu_hours IS
    'The run''s GPU-hours of record (marts.training_run_compute.gpu_hours, observed by the inventory): verified + self_reported + unattested + unknown. NULL when the inventory has no holdings for the Job or another run holds its claim.';
COMMENT ON COLUMN marts.model_attestation.verified_gpu_hours IS
    'Of gpu_hours, held on nodes verified at the time (GPUs and CVM attested, same boot).';
COMMENT ON COLUMN marts.model_attestation.self_reported_gpu_hours IS
    'Of gpu_hours, covered by self-reported (NVIDIA local verifier) evidence only.';
COMMENT ON COLUMN marts.model_attestation.unattested_gpu_hours IS
    'Of gpu_hours, on nodes the inventory knew with GPU capacity but without covering evidence.';
COMMENT ON COLUMN marts.model_attestation.unknown_gpu_hours IS
    'Of gpu_hours, not judged: on nodes absent from the inventory (or without GPU capacity) at the time, or all of gpu_hours while the coverage has no rows for the Job yet (coverage_gpu_hours NULL).';
COMMENT ON COLUMN marts.model_attestation.verified_share IS
    'verified / (gpu_hours − unknown): the attested share of the GPU-hours that can be judged (as marts.attestation_coverage_daily.verified_share); NULL when none can.';
COMMENT ON COLUMN marts.model_attestation.self_reported_share IS
    'self_reported / (gpu_hours − unknown); NULL when none can be judged.';
COMMENT ON COLUMN marts.model_attestation.unattested_share IS
    'unattested / (gpu_hours − unknown); verified + self_reported + unattested shares = 1 where defined.';
COMMENT ON COLUMN marts.model_attestation.unknown_share IS
    'unknown / gpu_hours: how much could not be judged.';
COMMENT ON COLUMN marts.model_attestation.coverage_gpu_hours IS
    'GPU-hours marts.attestation_gpu_hours split for the Job in the days the run held GPUs: the basis of the buckets. Equal to gpu_hours but where the two count open holdings to different horizons (the coverage up to the last inventory snapshot, the compute up to its refresh or [compute] as_of): then the buckets are scaled to gpu_hours, their shares unchanged. NULL when the coverage has not split any.';
COMMENT ON COLUMN marts.model_attestation.declared_gpu_hours IS
    'GPU-hours the run''s producer declared for a run the inventory never saw: no attestation can cover them, so they are outside the split.';

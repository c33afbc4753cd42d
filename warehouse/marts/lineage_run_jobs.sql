-- marts.lineage_run_jobs: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.lineage_run_jobs AS
WITH jobs AS (
    SELECT cluster, namespace, job_name, any_value(job_uid) AS job_uid,
           min(started_at) AS job_started_at, max(completed_at) AS job_completed_at,
           any_value(finished_condition) AS finished_condition, bool_or(present) AS present
    FROM core.jobs
    GROUP BY cluster, namespace, job_name
),
hours AS (
    SELECT cluster, namespace, job_name,
           sum(gpus * (epoch_us(coalesce(valid_to, coalesce(getvariable('as_of'), CAST(timezone('UTC', now()) AS TIMESTAMP))))
                       - epoch_us(valid_from))) / 3.6e9 AS gpu_hours
    FROM core.gpu_allocations
    WHERE resource_name = 'nvidia.com/gpu' AND job_name IS NOT NULL
    GROUP BY cluster, namespace, job_name
)
SELECT
    r.run_id,
    r.model_name,
    r.stage,
    r.state,
    r.started_at,
    r.ended_at,
    r.cluster,
    r.namespace,
    r.kubernetes_job_name,
    r.cluster IS NOT NULL AND r.namespace IS NOT NULL
        AND r.kubernetes_job_name IS NOT NULL AS has_kubernetes_facet,
    j.job_name IS NOT NULL AS job_known,
    j.job_uid,
    j.job_started_at,
    j.job_completed_at,
    j.finished_condition AS job_finished_condition,
    h.gpu_hours
FROM core.lineage_runs AS r
LEFT JOIN jobs AS j
    ON j.cluster = r.cluster AND j.namespace = r.namespace
    AND j.job_name = r.kubernetes_job_name
LEFT JOIN hours AS h
    ON h.cluster = r.cluster AND h.namespace = r.namespace
    AND h.job_name = r.kubernetes_job_name
WHERE r.stage IN ('PRETRAINING', 'FINE_TUNING');

COMMENT ON VIEW marts.lineage_run_jobs IS
    'Every training run (annex_trainingRun.stage PRETRAINING or FINE_TUNING) with the Kubernetes Job its annex_trainingRun.kubernetes facet names (core.jobs by cluster, namespace and job name) and that Job''s GPU-hours (core.gpu_allocations). A check expects job_known for every row.';
COMMENT ON COLUMN marts.lineage_run_jobs.run_id IS
    'The training run (core.lineage_runs).';
COMMENT ON COLUMN marts.lineage_run_jobs.model_name IS
    'annex_trainingRun.modelName.';
COMMENT ON COLUMN marts.lineage_run_jobs.stage IS
    'PRETRAINING or FINE_TUNING.';
COMMENT ON COLUMN marts.lineage_run_jobs.state IS
    'The run''s state by event time.';
COMMENT ON COLUMN marts.lineage_run_jobs.started_at IS
    'Earliest START (UTC).';
COMMENT ON COLUMN marts.lineage_run_jobs.ended_at IS
    'Its terminal event''s time (UTC).';
COMMENT ON COLUMN marts.lineage_run_jobs.cluster IS
    'Kubernetes cluster the producer declared (annex_trainingRun.kubernetes.cluster).';
COMMENT ON COLUMN marts.lineage_run_jobs.namespace IS
    'Kubernetes namespace the producer declared (annex_trainingRun.kubernetes.namespace).';
COMMENT ON COLUMN marts.lineage_run_jobs.kubernetes_job_name IS
    'annex_trainingRun.kubernetes.jobName.';
COMMENT ON COLUMN marts.lineage_run_jobs.has_kubernetes_facet IS
    'The facet names a cluster, namespace and Job.';
COMMENT ON COLUMN marts.lineage_run_jobs.job_known IS
    'core.jobs has that Job (collected by annex from that cluster).';
COMMENT ON COLUMN marts.lineage_run_jobs.job_uid IS
    'The Job''s metadata.uid.';
COMMENT ON COLUMN marts.lineage_run_jobs.job_started_at IS
    'The Job''s status.startTime (UTC).';
COMMENT ON COLUMN marts.lineage_run_jobs.job_completed_at IS
    'The Job''s status.completionTime (UTC).';
COMMENT ON COLUMN marts.lineage_run_jobs.job_finished_condition IS
    'Complete or Failed; NULL while it runs.';
COMMENT ON COLUMN marts.lineage_run_jobs.gpu_hours IS
    'Whole-GPU hours its pods held (core.gpu_allocations, open holdings counted up to now); NULL without holdings.';

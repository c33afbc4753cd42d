-- Run by warehouse/models/attestation_coverage.py (_LINK_RUNS).
UPDATE marts.attestation_gpu_hours AS h
SET run_id = (
    SELECT arg_max(r.run_id, coalesce(r.started_at, r.first_event_time))
    FROM core.lineage_runs AS r
    WHERE r.cluster = h.cluster
      AND r.namespace = h.namespace
      AND r.kubernetes_job_name = h.job_name
      AND coalesce(r.started_at, r.first_event_time) < h.day + INTERVAL 1 DAY
      AND (r.ended_at IS NULL OR r.ended_at >= h.day)
)
WHERE h.job_name IS NOT NULL
  AND (CAST($cluster AS VARCHAR) IS NULL OR h.cluster = $cluster)
  AND (CAST($lo AS TIMESTAMP) IS NULL OR h.day >= CAST($lo AS DATE))
  AND (CAST($hi AS TIMESTAMP) IS NULL OR h.day < CAST($hi AS DATE))

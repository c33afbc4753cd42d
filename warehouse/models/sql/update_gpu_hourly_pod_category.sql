-- Hours rebuilt for the inventory only: the balloon status of a labelled pod may have changed.
-- Run by warehouse/models/utilisation.py (_UPDATE_POD_CATEGORY).
UPDATE marts.gpu_hourly AS g
SET pod_category = {pod_category}
WHERE g.workload_pod IS NOT NULL
  AND g.hour >= $lo AND g.hour <= $last
  AND EXISTS (
      SELECT 1 FROM util_chunk AS u
      WHERE u.cluster = g.cluster AND u.hour = g.hour AND NOT u.telemetry
  )

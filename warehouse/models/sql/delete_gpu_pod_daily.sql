-- The pod-node-days (migration 0011) of the (cluster, day)s in util_pod_days, $first..$last: each
-- day is summed again whole from marts.gpu_hourly (insert_gpu_pod_daily.sql), so a day rebuilt in
-- several refreshes ends complete. Run by warehouse/models/utilisation.py.
DELETE FROM marts.gpu_pod_daily AS p
WHERE p.day >= $first AND p.day <= $last
  AND EXISTS (SELECT 1 FROM util_pod_days AS u WHERE u.cluster = p.cluster AND u.day = p.day)

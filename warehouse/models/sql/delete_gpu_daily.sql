-- The GPU-days (migration 0013) of the (cluster, day)s in util_gpu_days, $first..$last: the days
-- of every hour rebuilt, telemetry or inventory (an inventory hour may change pod categories,
-- hence the allocated and idle GPU-hours). Run by warehouse/models/utilisation.py.
DELETE FROM marts.gpu_daily AS d
WHERE d.day >= $first AND d.day <= $last
  AND EXISTS (SELECT 1 FROM util_gpu_days AS u WHERE u.cluster = d.cluster AND u.day = d.day)

-- Run by warehouse/models/utilisation.py (_DELETE_GPU_HOURS).
DELETE FROM marts.gpu_hourly AS g
WHERE g.hour >= $lo AND g.hour < $hi
  AND EXISTS (
      SELECT 1 FROM util_hours AS u
      WHERE u.cluster = g.cluster AND u.hour = g.hour AND u.telemetry
  )

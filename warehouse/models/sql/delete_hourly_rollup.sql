-- The hours of util_chunk in marts.{table}, node_gpu_hours or namespace_gpu_hours ({table} is
-- filled in per table when run), before insert_node_gpu_hours.sql / insert_namespace_gpu_hours.sql.
-- Run by warehouse/models/utilisation.py (_DELETE_NODE_HOURS).
DELETE FROM marts.{table} AS t
WHERE t.hour >= $lo AND t.hour < $hi
  AND EXISTS (SELECT 1 FROM util_chunk AS u WHERE u.cluster = t.cluster AND u.hour = t.hour)

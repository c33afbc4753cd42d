-- DRA ResourceSlices from one watch batch or list (after watch_objects.sql, same transaction):
-- core.watched_dra_devices holds the devices the slices publish now, a row per slice and device.
-- Input: watch_slices (collectors.kubernetes.history.WATCH_SLICES: the snapshot collector's
-- slice row, its devices a list, + deleted + observed_at), watch_objects.
-- Then watch_dra_allocations.sql.

-- A list says what exists: the devices of slices it lacks are gone.
DELETE FROM core.watched_dra_devices AS d
WHERE getvariable('kind') = 'snapshot'
  AND d.cluster = getvariable('cluster')
  AND NOT EXISTS (SELECT 1 FROM watch_objects AS w WHERE w.uid = d.resource_slice_uid);

-- A changed slice's devices are replaced; a deleted slice's removed.
DELETE FROM core.watched_dra_devices AS d
WHERE d.cluster = getvariable('cluster')
  AND d.resource_slice_uid IN (SELECT resource_slice_uid FROM watch_slices);

INSERT INTO core.watched_dra_devices BY NAME
SELECT
    getvariable('cluster') AS cluster,
    s.resource_slice_uid,
    s.resource_slice_name,
    s.driver,
    s.dra_pool,
    s.d.device AS device,
    s.node_name,
    s.d.device_type AS device_type,
    s.d.gpu_uuid AS gpu_uuid,
    s.d.mig_profile AS mig_profile,
    s.observed_at AS changed_at
FROM (
    SELECT *, unnest(devices) AS d
    FROM watch_slices
    WHERE NOT deleted
    QUALIFY row_number() OVER (PARTITION BY resource_slice_uid ORDER BY observed_at DESC) = 1
) AS s;

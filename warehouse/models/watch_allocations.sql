-- GPU allocation intervals from one batch of pods (after watch_objects.sql, same transaction).
-- See watch_objects.sql for the inputs and the rules (steps 1, 3 and 4). Device-plugin rows
-- open here; the closing updates close every row of the pod, its dra rows included (those
-- open in watch_dra_allocations.sql). Each key is inserted once (no index: an anti-join).

UPDATE core.watched_gpu_allocations AS a
SET valid_to = greatest(
        a.valid_from,
        least(getvariable('committed_at'), coalesce(o.deletion_timestamp, getvariable('committed_at')))),
    valid_to_source = CASE
        WHEN o.deletion_timestamp IS NOT NULL
             AND o.deletion_timestamp <= getvariable('committed_at') THEN 'deleted'
        ELSE 'relisted' END,
    valid_to_inferred = NOT (o.deletion_timestamp IS NOT NULL
                             AND o.deletion_timestamp <= getvariable('committed_at')),
    closed_resource_version = getvariable('resource_version'),
    closed_at = getvariable('committed_at')
FROM core.watched_objects AS o
WHERE getvariable('kind') = 'snapshot' AND getvariable('resource') = 'pods'
  AND a.cluster = getvariable('cluster') AND a.valid_to IS NULL
  AND o.cluster = a.cluster AND o.resource = 'pods' AND o.uid = a.pod_uid
  AND NOT EXISTS (SELECT 1 FROM watch_objects AS w WHERE w.uid = a.pod_uid);

INSERT INTO core.watched_gpu_allocations BY NAME
SELECT
    getvariable('cluster') AS cluster,
    p.pod_uid,
    p.namespace,
    p.pod_name,
    p.job_name,
    p.node_name,
    p.r.resource_name AS resource_name,
    p.r.gpus AS gpus,
    p.category,
    p.priority_class_name,
    coalesce(p.scheduled_at, p.started_at, p.creation_timestamp, p.observed_at) AS valid_from,
    CASE
        WHEN p.scheduled_at IS NOT NULL THEN 'scheduled'
        WHEN p.started_at IS NOT NULL THEN 'started'
        WHEN p.creation_timestamp IS NOT NULL THEN 'created'
        ELSE 'observed' END AS valid_from_source,
    getvariable('resource_version') AS opened_resource_version,
    getvariable('committed_at') AS opened_at,
    'device_plugin' AS mechanism
FROM (
    SELECT *, unnest(gpu_requests) AS r
    FROM watch_pods
    WHERE node_name IS NOT NULL
) AS p
WHERE NOT EXISTS (
    SELECT 1 FROM core.watched_gpu_allocations AS a
    WHERE a.cluster = getvariable('cluster') AND a.pod_uid = p.pod_uid
      AND a.resource_name = p.r.resource_name AND a.mechanism = 'device_plugin'
);

UPDATE core.watched_gpu_allocations AS a
SET valid_to = greatest(a.valid_from, coalesce(p.finished_at, p.deletion_timestamp, p.observed_at)),
    valid_to_source = CASE
        WHEN p.finished_at IS NOT NULL THEN 'finished'
        WHEN p.deletion_timestamp IS NOT NULL THEN 'deleted'
        ELSE 'observed' END,
    valid_to_inferred = p.finished_at IS NULL AND p.deletion_timestamp IS NULL,
    closed_resource_version = getvariable('resource_version'),
    closed_at = getvariable('committed_at')
FROM watch_pods AS p
WHERE a.cluster = getvariable('cluster') AND a.valid_to IS NULL AND a.pod_uid = p.pod_uid
  AND (p.phase IN ('Succeeded', 'Failed') OR p.deleted);

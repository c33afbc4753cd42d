-- Pods that name ResourceClaims, from one watch batch or list of pods (after
-- watch_allocations.sql, same transaction): core.watched_dra_pods keeps each one's last state,
-- for the dra rows a claim or slice committed later opens (watch_dra_allocations.sql).
-- Input: watch_pods (collectors.kubernetes.history.WATCH_PODS), watch_objects.

-- A list says what exists: pods it lacks are gone.
UPDATE core.watched_dra_pods AS p
SET present = false, gone_at = getvariable('committed_at'), gone_how = 'relisted'
WHERE getvariable('kind') = 'snapshot'
  AND p.cluster = getvariable('cluster') AND p.present
  AND NOT EXISTS (SELECT 1 FROM watch_objects AS w WHERE w.uid = p.pod_uid);

MERGE INTO core.watched_dra_pods AS p
USING (
    SELECT * FROM watch_pods
    WHERE resource_claims > 0
    QUALIFY row_number() OVER (PARTITION BY pod_uid ORDER BY observed_at DESC) = 1
) AS w
ON p.cluster = getvariable('cluster') AND p.pod_uid = w.pod_uid
WHEN MATCHED THEN UPDATE SET
    namespace = w.namespace,
    pod_name = w.pod_name,
    job_name = w.job_name,
    node_name = w.node_name,
    category = w.category,
    priority_class_name = w.priority_class_name,
    phase = w.phase,
    scheduled_at = w.scheduled_at,
    started_at = w.started_at,
    creation_timestamp = w.creation_timestamp,
    finished_at = w.finished_at,
    deletion_timestamp = w.deletion_timestamp,
    present = NOT w.deleted,
    changed_at = w.observed_at,
    gone_at = CASE WHEN w.deleted THEN w.observed_at END,
    gone_how = CASE WHEN w.deleted THEN 'deleted' END
WHEN NOT MATCHED THEN INSERT (
    cluster, pod_uid, namespace, pod_name, job_name, node_name, category, priority_class_name,
    phase, scheduled_at, started_at, creation_timestamp, finished_at, deletion_timestamp,
    present, first_seen_at, changed_at, gone_at, gone_how
) VALUES (
    getvariable('cluster'), w.pod_uid, w.namespace, w.pod_name, w.job_name, w.node_name,
    w.category, w.priority_class_name, w.phase, w.scheduled_at, w.started_at,
    w.creation_timestamp, w.finished_at, w.deletion_timestamp, NOT w.deleted, w.observed_at,
    w.observed_at, CASE WHEN w.deleted THEN w.observed_at END,
    CASE WHEN w.deleted THEN 'deleted' END
);

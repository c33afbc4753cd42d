-- Commit of one watch batch (one resource): its objects. Then, for pods,
-- watch_allocations.sql, inside its transaction (warehouse/models/watch.py).
--
-- Inputs (registered Arrow): watch_objects (every object of the batch, its last state),
-- watch_pods (pods only: the snapshot collector's pod row + deleted + observed_at).
-- Variables: cluster, resource, kind ('snapshot' | 'changes'), resource_version, committed_at.
--
-- 1. A snapshot (a list) says what exists: objects the warehouse holds as present that it
--    lacks are gone ('relisted'); their open GPU intervals close at their deletionTimestamp
--    when they carried one (the best time they offer), else at the list time (inferred).
-- 2. Objects: upsert their last state.
-- 3. Pods bound to a node with GPU requests open an interval (once per pod and resource),
--    starting at their own timestamps: PodScheduled, else start, else creation.
-- 4. Pods that ended (Succeeded/Failed) or were deleted close it: containers' finishedAt,
--    else deletionTimestamp (a deletion before the pod finished), else when annex received
--    the change (inferred). A closed interval never reopens: a pod does not come back.

UPDATE core.watched_objects AS c
SET present = false,
    gone_at = getvariable('committed_at'),
    gone_how = 'relisted'
WHERE getvariable('kind') = 'snapshot'
  AND c.cluster = getvariable('cluster') AND c.resource = getvariable('resource') AND c.present
  AND NOT EXISTS (SELECT 1 FROM watch_objects AS w WHERE w.uid = c.uid);

INSERT INTO core.watched_objects AS c (
    cluster, resource, uid, namespace, name, resource_version, deletion_timestamp, present,
    first_seen_at, changed_at, gone_at, gone_how
)
SELECT
    getvariable('cluster'), getvariable('resource'), uid, namespace, name, resource_version,
    deletion_timestamp, NOT deleted, observed_at, observed_at,
    CASE WHEN deleted THEN observed_at END,
    CASE WHEN deleted THEN 'deleted' END
FROM watch_objects
QUALIFY row_number() OVER (PARTITION BY uid ORDER BY observed_at DESC) = 1
ON CONFLICT (cluster, resource, uid) DO UPDATE SET
    namespace = excluded.namespace,
    name = excluded.name,
    resource_version = excluded.resource_version,
    deletion_timestamp = excluded.deletion_timestamp,
    present = excluded.present,
    changed_at = excluded.changed_at,
    gone_at = excluded.gone_at,
    gone_how = excluded.gone_how;

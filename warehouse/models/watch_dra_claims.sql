-- DRA ResourceClaims from one watch batch or list (after watch_objects.sql, same transaction):
-- core.watched_resource_claims keeps each claim's last state (warehouse/models/watch.py).
-- Input: watch_claims (collectors.kubernetes.history.WATCH_CLAIMS: the snapshot collector's
-- claim row + deleted + observed_at), watch_objects. Then watch_dra_allocations.sql.

-- A list says what exists: claims it lacks are gone.
UPDATE core.watched_resource_claims AS c
SET present = false, gone_at = getvariable('committed_at')
WHERE getvariable('kind') = 'snapshot'
  AND c.cluster = getvariable('cluster') AND c.present
  AND NOT EXISTS (SELECT 1 FROM watch_objects AS w WHERE w.uid = c.claim_uid);

MERGE INTO core.watched_resource_claims AS c
USING (
    SELECT * FROM watch_claims
    QUALIFY row_number() OVER (PARTITION BY claim_uid ORDER BY observed_at DESC) = 1
) AS w
ON c.cluster = getvariable('cluster') AND c.claim_uid = w.claim_uid
WHEN MATCHED THEN UPDATE SET
    namespace = w.namespace,
    claim_name = w.claim_name,
    resource_version = w.resource_version,
    creation_timestamp = w.creation_timestamp,
    deletion_timestamp = w.deletion_timestamp,
    allocated = w.allocated,
    results = w.results,
    reserved_for_pod_uids = w.reserved_for_pod_uids,
    present = NOT w.deleted,
    changed_at = w.observed_at,
    gone_at = CASE WHEN w.deleted THEN w.observed_at END
WHEN NOT MATCHED THEN INSERT (
    cluster, claim_uid, namespace, claim_name, resource_version, creation_timestamp,
    deletion_timestamp, allocated, results, reserved_for_pod_uids, present, first_seen_at,
    changed_at, gone_at
) VALUES (
    getvariable('cluster'), w.claim_uid, w.namespace, w.claim_name, w.resource_version,
    w.creation_timestamp, w.deletion_timestamp, w.allocated, w.results,
    w.reserved_for_pod_uids, NOT w.deleted, w.observed_at, w.observed_at,
    CASE WHEN w.deleted THEN w.observed_at END
);

-- GPUs held through DRA ResourceClaims, from the watch's state (after watch_dra_claims.sql,
-- watch_dra_slices.sql or watch_dra_pods.sql, in the same transaction): a pod, its claims and
-- the slices publishing their devices come in three watch streams, committed in any order, so
-- this runs after each of them over core.watched_resource_claims, core.watched_dra_devices and
-- core.watched_dra_pods, and the commit that completes a holding opens it.
--
-- The snapshot's rule (kubernetes_merge.sql, migration 0027): each allocated claim's GPU and
-- MIG devices (IMEX channels and daemons carry no gpu_uuid and are no GPUs), per pod the claim
-- is reserved for, in the device plugin's buckets (nvidia.com/gpu, nvidia.com/mig-<profile>);
-- a claim reserved for k pods gives each 1/k of each device. The interval is the pod's: it
-- opens at the pod's own timestamps (as watch_allocations.sql) once the pod is bound, and
-- closes when the pod ends (watch_allocations.sql for open rows; step 2 here for rows opened
-- after their pod ended), or when the claim is deleted, deallocated or no longer reserved for
-- the pod (step 3). A closed row never reopens.

CREATE OR REPLACE TEMP TABLE watch_dra_holdings AS
WITH results AS (
    SELECT claim_uid, reserved_for_pod_uids, unnest(results) AS r
    FROM core.watched_resource_claims
    WHERE cluster = getvariable('cluster') AND present AND allocated
      AND len(reserved_for_pod_uids) > 0
),
gpu_results AS (
    SELECT DISTINCT
        x.claim_uid,
        x.reserved_for_pod_uids,
        x.r.driver AS driver,
        x.r.dra_pool AS dra_pool,
        x.r.device AS device,
        CASE WHEN d.mig_profile IS NOT NULL THEN 'nvidia.com/mig-' || d.mig_profile
            ELSE 'nvidia.com/gpu' END AS resource_name
    FROM results AS x
    JOIN core.watched_dra_devices AS d
        ON d.cluster = getvariable('cluster')
       AND d.driver = x.r.driver AND d.dra_pool = x.r.dra_pool AND d.device = x.r.device
    WHERE d.gpu_uuid IS NOT NULL
),
per_claim AS (
    SELECT claim_uid, resource_name, any_value(reserved_for_pod_uids) AS pods,
           count(*) AS devices
    FROM gpu_results
    GROUP BY claim_uid, resource_name
)
SELECT claim_uid, resource_name, unnest(pods) AS pod_uid,
       CAST(devices AS DOUBLE) / len(pods) AS gpus
FROM per_claim;

-- 1. Open: holdings of bound pods the watch knows, not yet recorded.
INSERT INTO core.watched_gpu_allocations BY NAME
SELECT
    getvariable('cluster') AS cluster,
    p.pod_uid,
    p.namespace,
    p.pod_name,
    p.job_name,
    p.node_name,
    h.resource_name,
    h.gpus,
    p.category,
    p.priority_class_name,
    'dra' AS mechanism,
    h.claim_uid,
    coalesce(p.scheduled_at, p.started_at, p.creation_timestamp, p.first_seen_at) AS valid_from,
    CASE
        WHEN p.scheduled_at IS NOT NULL THEN 'scheduled'
        WHEN p.started_at IS NOT NULL THEN 'started'
        WHEN p.creation_timestamp IS NOT NULL THEN 'created'
        ELSE 'observed' END AS valid_from_source,
    getvariable('resource_version') AS opened_resource_version,
    getvariable('committed_at') AS opened_at
FROM watch_dra_holdings AS h
JOIN core.watched_dra_pods AS p
    ON p.cluster = getvariable('cluster') AND p.pod_uid = h.pod_uid
WHERE p.node_name IS NOT NULL
  AND NOT EXISTS (
    SELECT 1 FROM core.watched_gpu_allocations AS a
    WHERE a.cluster = getvariable('cluster') AND a.pod_uid = h.pod_uid
      AND a.resource_name = h.resource_name AND a.mechanism = 'dra'
      AND a.claim_uid = h.claim_uid
);

-- 2. The pod ended (as watch_allocations.sql closes it): dra rows still open (opened after
--    the pod's end was committed), and rows a claim's release closed at an inferred time
--    later than the end the pod itself carries.
UPDATE core.watched_gpu_allocations AS a
SET valid_to = greatest(a.valid_from, coalesce(p.finished_at, p.deletion_timestamp, p.gone_at,
                                               p.changed_at)),
    valid_to_source = CASE
        WHEN p.finished_at IS NOT NULL THEN 'finished'
        WHEN p.deletion_timestamp IS NOT NULL THEN 'deleted'
        WHEN p.gone_how = 'relisted' THEN 'relisted'
        ELSE 'observed' END,
    valid_to_inferred = p.finished_at IS NULL AND p.deletion_timestamp IS NULL,
    closed_resource_version = getvariable('resource_version'),
    closed_at = getvariable('committed_at')
FROM core.watched_dra_pods AS p
WHERE a.cluster = getvariable('cluster') AND a.mechanism = 'dra'
  AND p.cluster = a.cluster AND p.pod_uid = a.pod_uid
  AND (p.phase IN ('Succeeded', 'Failed') OR NOT p.present)
  AND (a.valid_to IS NULL
       OR (a.valid_to_inferred AND a.valid_to_source IN ('claim_released', 'claim_deleted')
           AND coalesce(p.finished_at, p.deletion_timestamp) < a.valid_to));

-- 3. The claim is gone, deallocated, or no longer reserved for the pod: the holding ends at
--    the claim's deletionTimestamp, else when annex received the change (inferred).
UPDATE core.watched_gpu_allocations AS a
SET valid_to = greatest(a.valid_from, CASE
        WHEN NOT c.present THEN least(c.deletion_timestamp, c.gone_at)
        ELSE c.changed_at END),
    valid_to_source = CASE WHEN NOT c.present THEN 'claim_deleted' ELSE 'claim_released' END,
    valid_to_inferred = c.present OR c.deletion_timestamp IS NULL,
    closed_resource_version = getvariable('resource_version'),
    closed_at = getvariable('committed_at')
FROM core.watched_resource_claims AS c
WHERE a.cluster = getvariable('cluster') AND a.mechanism = 'dra' AND a.valid_to IS NULL
  AND c.cluster = a.cluster AND c.claim_uid = a.claim_uid
  AND (NOT c.present OR NOT coalesce(c.allocated, false)
       OR NOT list_contains(c.reserved_for_pod_uids, a.pod_uid));

DROP TABLE watch_dra_holdings;

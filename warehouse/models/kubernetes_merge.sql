-- Merge of one Kubernetes collection (runs in the collection's transaction, after staging).
--
-- 1. Snapshot: for each resource, the rows of the list's last attempt (a list restarted after
--    410 Expired re-sent its first pages; the collector keeps one row per uid per attempt),
--    with a content hash of the kept fields
--    (resource_version excluded: it changes on every write, even of fields annex ignores).
-- 2. raw.*: append versions whose hash differs from core's current one (history grows with
--    change, not with snapshots x objects; loading the same snapshot twice appends nothing).
-- 3. core.nodes, core.dra_devices: slowly changing rows. core.pods/jobs/priority_classes/
--    events/dra_claims: current state.
--    Every staged column is a kept field (the hash covers them all), boot_id included: a
--    reboot makes a new version, which attestation coverage reads as a boot change.
-- 4. core.gpu_allocations: open intervals for bound GPU pods (device-plugin requests and the
--    GPU/MIG devices of their DRA claims, mechanism column), close them at the pod's finish,
--    or at the collection time when the pod is gone from a CONSISTENT snapshot.
-- Objects absent from an inconsistent list are never closed or marked gone.
-- The CURRENT STATE placeholder below is filled by warehouse/models/kubernetes.py.

CREATE OR REPLACE TEMP TABLE k8s_list_consistency AS
SELECT resource, bool_and(consistent) AS consistent
FROM stage_lists
GROUP BY resource;

CREATE OR REPLACE TEMP TABLE k8s_snapshot_nodes AS
SELECT *, hash(*COLUMNS(* EXCLUDE (resource_version))) AS content_hash
FROM (
    SELECT * EXCLUDE (list_attempt)
    FROM stage_nodes
    WHERE list_attempt = (SELECT max(list_attempt) FROM stage_nodes)
);

INSERT INTO raw.kubernetes_nodes BY NAME
SELECT
    getvariable('cluster') AS cluster,
    getvariable('collection_id') AS collection_id,
    getvariable('collected_at') AS collected_at,
    s.*
FROM k8s_snapshot_nodes AS s
WHERE NOT EXISTS (
    SELECT 1 FROM core.nodes AS c
    WHERE c.cluster = getvariable('cluster') AND c.node_uid = s.node_uid
      AND c.valid_to IS NULL AND c.content_hash = s.content_hash
);

UPDATE core.nodes AS c
SET valid_to = getvariable('collected_at'),
    closed_reason = 'changed',
    closed_collection_id = getvariable('collection_id')
FROM k8s_snapshot_nodes AS s
WHERE c.cluster = getvariable('cluster') AND c.valid_to IS NULL
  AND c.node_uid = s.node_uid AND c.content_hash <> s.content_hash;

UPDATE core.nodes AS c
SET valid_to = getvariable('collected_at'),
    closed_reason = 'removed',
    closed_collection_id = getvariable('collection_id')
WHERE c.cluster = getvariable('cluster') AND c.valid_to IS NULL
  AND coalesce((SELECT consistent FROM k8s_list_consistency WHERE resource = 'nodes'), false)
  AND NOT EXISTS (SELECT 1 FROM k8s_snapshot_nodes AS s WHERE s.node_uid = c.node_uid);

INSERT INTO core.nodes BY NAME
SELECT
    getvariable('cluster') AS cluster,
    -- the collector's names (raw.kubernetes_nodes) -> core's (docs/naming.md)
    s.* RENAME (pool AS node_pool, gpu_product AS gfd_product),
    getvariable('collected_at') AS valid_from,
    getvariable('collection_id') AS collection_id
FROM k8s_snapshot_nodes AS s
WHERE NOT EXISTS (
    SELECT 1 FROM core.nodes AS c
    WHERE c.cluster = getvariable('cluster') AND c.node_uid = s.node_uid AND c.valid_to IS NULL
);

{current_state}

-- DRA devices (ResourceSlices exploded, one row per device): slowly changing rows keyed by
-- (driver, dra_pool, device), as core.nodes. The pool generation and resource_version are not
-- hashed: a driver republishing the same devices makes no new version.

CREATE OR REPLACE TEMP TABLE k8s_snapshot_resource_slices AS
SELECT *, hash(*COLUMNS(* EXCLUDE (resource_version, pool_generation))) AS content_hash
FROM (
    SELECT * EXCLUDE (list_attempt)
    FROM stage_resource_slices
    WHERE list_attempt = (SELECT max(list_attempt) FROM stage_resource_slices)
);

INSERT INTO raw.kubernetes_resource_slices BY NAME
SELECT
    getvariable('cluster') AS cluster,
    getvariable('collection_id') AS collection_id,
    getvariable('collected_at') AS collected_at,
    s.*
FROM k8s_snapshot_resource_slices AS s
WHERE NOT EXISTS (
    SELECT 1
    FROM (
        SELECT resource_slice_uid, arg_max(content_hash, collected_at) AS content_hash
        FROM raw.kubernetes_resource_slices
        WHERE cluster = getvariable('cluster')
        GROUP BY resource_slice_uid
    ) AS latest
    WHERE latest.resource_slice_uid = s.resource_slice_uid
      AND latest.content_hash = s.content_hash
);

CREATE OR REPLACE TEMP TABLE k8s_snapshot_dra_devices AS
SELECT *, hash(*COLUMNS(*)) AS content_hash
FROM (
    SELECT
        s.driver,
        s.dra_pool,
        s.d.device AS device,
        s.node_name,
        s.all_nodes,
        s.resource_slice_uid,
        s.resource_slice_name,
        s.d.device_type AS device_type,
        s.d.gpu_uuid AS gpu_uuid,
        s.d.mig_uuid AS mig_uuid,
        s.d.mig_profile AS mig_profile,
        s.d.nvml_device_name AS nvml_device_name,
        s.d.memory_bytes AS memory_bytes
    FROM (SELECT *, unnest(devices) AS d FROM k8s_snapshot_resource_slices) AS s
);

UPDATE core.dra_devices AS c
SET valid_to = getvariable('collected_at'),
    closed_reason = 'changed',
    closed_collection_id = getvariable('collection_id')
FROM k8s_snapshot_dra_devices AS s
WHERE c.cluster = getvariable('cluster') AND c.valid_to IS NULL
  AND c.driver = s.driver AND c.dra_pool = s.dra_pool AND c.device = s.device
  AND c.content_hash <> s.content_hash;

UPDATE core.dra_devices AS c
SET valid_to = getvariable('collected_at'),
    closed_reason = 'removed',
    closed_collection_id = getvariable('collection_id')
WHERE c.cluster = getvariable('cluster') AND c.valid_to IS NULL
  AND coalesce(
      (SELECT consistent FROM k8s_list_consistency WHERE resource = 'resource_slices'), false)
  AND NOT EXISTS (
      SELECT 1 FROM k8s_snapshot_dra_devices AS s
      WHERE s.driver = c.driver AND s.dra_pool = c.dra_pool AND s.device = c.device);

INSERT INTO core.dra_devices BY NAME
SELECT
    getvariable('cluster') AS cluster,
    s.*,
    getvariable('collected_at') AS valid_from,
    getvariable('collection_id') AS collection_id
FROM k8s_snapshot_dra_devices AS s
WHERE NOT EXISTS (
    SELECT 1 FROM core.dra_devices AS c
    WHERE c.cluster = getvariable('cluster') AND c.valid_to IS NULL
      AND c.driver = s.driver AND c.dra_pool = s.dra_pool AND c.device = s.device
);

-- GPU allocation intervals. Close first (terminal pods, vanished pods), then open new ones.

UPDATE core.gpu_allocations AS a
SET valid_to = greatest(a.valid_from, coalesce(p.finished_at, getvariable('collected_at'))),
    valid_to_source = CASE WHEN p.finished_at IS NOT NULL THEN 'finished' ELSE 'collected' END,
    valid_to_inferred = p.finished_at IS NULL,
    closed_collection_id = getvariable('collection_id')
FROM k8s_snapshot_pods AS p
WHERE a.cluster = getvariable('cluster') AND a.valid_to IS NULL
  AND a.pod_uid = p.pod_uid AND p.phase IN ('Succeeded', 'Failed');

UPDATE core.gpu_allocations AS a
SET valid_to = greatest(
        a.valid_from,
        least(getvariable('collected_at'),
              coalesce(p.deletion_timestamp, getvariable('collected_at')))),
    valid_to_source = CASE
        WHEN p.deletion_timestamp IS NOT NULL
             AND p.deletion_timestamp < getvariable('collected_at') THEN 'deleted'
        ELSE 'vanished' END,
    valid_to_inferred = true,
    closed_collection_id = getvariable('collection_id')
FROM core.pods AS p
WHERE a.cluster = getvariable('cluster') AND a.valid_to IS NULL
  AND p.cluster = a.cluster AND p.pod_uid = a.pod_uid
  AND coalesce((SELECT consistent FROM k8s_list_consistency WHERE resource = 'pods'), false)
  AND NOT EXISTS (SELECT 1 FROM k8s_snapshot_pods AS s WHERE s.pod_uid = a.pod_uid);

-- GPUs held through DRA: each allocated claim's GPU and MIG devices (current core.dra_devices;
-- IMEX channels and daemons carry no gpu_uuid and are no GPUs), per pod the claim is reserved
-- for, in the buckets of the device plugin's resources (nvidia.com/gpu, nvidia.com/mig-<profile>).
-- A claim reserved for k pods gives each 1/k of each device: its GPU-hours are counted once.
CREATE OR REPLACE TEMP TABLE k8s_dra_holdings AS
WITH results AS (
    SELECT claim_uid, reserved_for_pod_uids, unnest(results) AS r
    FROM k8s_snapshot_resource_claims
    WHERE allocated AND len(reserved_for_pod_uids) > 0
),
gpu_results AS (
    SELECT
        x.claim_uid,
        x.reserved_for_pod_uids,
        CASE WHEN d.mig_profile IS NOT NULL THEN 'nvidia.com/mig-' || d.mig_profile
            ELSE 'nvidia.com/gpu' END AS resource_name
    FROM results AS x
    JOIN core.dra_devices AS d
        ON d.cluster = getvariable('cluster') AND d.valid_to IS NULL
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

-- Open the intervals of both holdings sources in one projection: a bound pod's device-plugin
-- requests (claim_uid NULL) and its DRA holdings above. The interval is the pod's either way
-- (closed by the updates above); a holding already open is not opened again.
INSERT INTO core.gpu_allocations BY NAME
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
    h.mechanism,
    h.claim_uid,
    coalesce(p.scheduled_at, p.started_at, p.creation_timestamp, getvariable('collected_at'))
        AS valid_from,
    CASE
        WHEN p.scheduled_at IS NOT NULL THEN 'scheduled'
        WHEN p.started_at IS NOT NULL THEN 'started'
        WHEN p.creation_timestamp IS NOT NULL THEN 'created'
        ELSE 'collected' END AS valid_from_source,
    CASE WHEN p.terminal THEN greatest(
        coalesce(p.scheduled_at, p.started_at, p.creation_timestamp, getvariable('collected_at')),
        coalesce(p.finished_at, getvariable('collected_at'))) END AS valid_to,
    CASE WHEN p.terminal THEN
        CASE WHEN p.finished_at IS NOT NULL THEN 'finished' ELSE 'collected' END END
        AS valid_to_source,
    CASE WHEN p.terminal THEN p.finished_at IS NULL END AS valid_to_inferred,
    getvariable('collection_id') AS opened_collection_id,
    CASE WHEN p.terminal THEN getvariable('collection_id') END AS closed_collection_id
FROM (
    SELECT pod_uid, r.resource_name, CAST(r.gpus AS DOUBLE) AS gpus,
           'device_plugin' AS mechanism, NULL::VARCHAR AS claim_uid
    FROM (SELECT pod_uid, unnest(gpu_requests) AS r FROM k8s_snapshot_pods)
    UNION ALL
    SELECT pod_uid, resource_name, gpus, 'dra' AS mechanism, claim_uid
    FROM k8s_dra_holdings
) AS h
JOIN (
    SELECT *, phase IN ('Succeeded', 'Failed') AS terminal
    FROM k8s_snapshot_pods
    WHERE node_name IS NOT NULL
) AS p ON p.pod_uid = h.pod_uid
WHERE NOT EXISTS (
    SELECT 1 FROM core.gpu_allocations AS a
    WHERE a.cluster = getvariable('cluster') AND a.pod_uid = h.pod_uid
      AND a.resource_name = h.resource_name AND a.mechanism = h.mechanism
      AND a.claim_uid IS NOT DISTINCT FROM h.claim_uid
);

INSERT INTO audit.kubernetes_lists BY NAME
SELECT
    getvariable('collection_id') AS collection_id,
    getvariable('cluster') AS cluster,
    *
FROM stage_lists;

DROP TABLE k8s_list_consistency;
DROP TABLE k8s_snapshot_nodes;
DROP TABLE k8s_snapshot_pods;
DROP TABLE k8s_snapshot_jobs;
DROP TABLE k8s_snapshot_priority_classes;
DROP TABLE k8s_snapshot_events;
DROP TABLE k8s_snapshot_kueue_workloads;
DROP TABLE k8s_snapshot_kueue_cluster_queues;
DROP TABLE k8s_snapshot_kueue_local_queues;
DROP TABLE k8s_snapshot_kueue_resource_flavors;
DROP TABLE k8s_snapshot_resource_claims;
DROP TABLE k8s_snapshot_resource_claim_templates;
DROP TABLE k8s_snapshot_resource_slices;
DROP TABLE k8s_snapshot_dra_devices;
DROP TABLE k8s_dra_holdings;

-- Merge of one attestation collection (runs in the collection's transaction, after staging).
--
-- 1. Rows the warehouse cannot key (no record_id, submission_id, token_sha256 or received_at;
--    a verdict, tier, subject kind or token role outside the vocabulary; a pass without a
--    window) go to stage_rejected: a verifier bug never aborts the good rows.
-- 2. Submissions: once per (cluster, submission_id); a body read again within 7 days of its
--    first receipt changes nothing (the stored side is read by received_at, so that the check
--    stays cheap on a year of history).
-- 3. Records: one row per presentation of a token, (token_sha256, submod_key, node_name,
--    boot_id). A presentation stored before changes nothing: reloading is a no-op.
-- 4. What only the warehouse knows, judged against stored history and this collection
--    (earlier = stored, then by received_at, submission_id):
--    * replay: the same token, or the same (issuer, jti) in other bytes (an ECDSA signature
--      can be re-encoded), presented earlier by another node or boot. The replayed row gets a
--      record_id of its own; the first presentation keeps the collector's. Only authenticated
--      presentations count as earlier (signature verified with a pinned key; never the local
--      verifier's HS256): a bad-signature token never claims a jti. Presentations rank by
--      binding: 2 = the token carries the nonce annex issued to the presenting node (MAC), 1 =
--      the token carries the submission's own (attester-chosen) nonce, 0 = it does not (a copy
--      in another node's submission). A higher rank is never the replay of a lower one. At
--      equal rank an earlier collection is earlier; within one collection receipt order decides
--      only between intake presentations (annex's clock): a watched file's time is its mtime,
--      which the writer sets, so equal-rank presentations where either is a file are both
--      replays;
--    * device_mismatch: a passing verified detached GPU token whose ueid is bound to another
--      GPU UUID, or to another node still in the inventory, or whose GPU UUID is bound to another
--      ueid (core.gpu_attested_devices; without a stored binding, the earliest such token of
--      this collection decides);
--    * device_mismatch: one GPU (by ueid, else GPU UUID) under two submodule keys of one NRAS
--      result: the later key fails (coverage counts a result's detached rows as its GPUs);
--    * device_mismatch on an NRAS overall row whose detached device fails its binding here:
--      the result no longer vouches for the node's GPUs (coverage counts the overall row);
--    * device_mismatch: an Azure Attestation vm_id that is not the node's system UUID (core.nodes:
--      the version valid at issued_at, else the latest; case-insensitive, and also with the first
--      three fields byte-swapped, the way a VM's SMBIOS UUID can show Azure's VM id).
--    Any of them: verdict 'fail', assurance_tier 'none', the reason code and a sentence appended
--    (collector_verdict keeps the verifier's). Nodes the inventory does not know keep their
--    verdict (a Dagster check reports them).
-- 5. Bindings: passing verified detached GPU tokens that passed every check here bind, or
--    refresh, their (node, GPU UUID, ueid).
-- Stored rows are never rewritten: evidence is judged once, in the order it arrived.

-- 1. -------------------------------------------------------------------------------------------
CREATE OR REPLACE TEMP TABLE att_staged AS
SELECT
    *,
    CASE
        WHEN record_id IS NULL THEN 'record_id is missing'
        WHEN submission_id IS NULL THEN 'submission_id is missing'
        WHEN token_sha256 IS NULL THEN 'token_sha256 is missing'
        WHEN received_at IS NULL THEN 'received_at is missing'
        WHEN verdict IS NULL OR verdict NOT IN ('pass', 'fail', 'error', 'unverifiable')
            THEN format('verdict {} is not pass, fail, error or unverifiable',
                        coalesce(verdict, 'NULL'))
        WHEN assurance_tier IS NULL OR assurance_tier NOT IN ('verified', 'self_reported', 'none')
            THEN format('assurance_tier {} is not verified, self_reported or none',
                        coalesce(assurance_tier, 'NULL'))
        WHEN subject_kind NOT IN ('gpu', 'cpu_tee', 'nvswitch')
            THEN format('subject_kind {} is not gpu, cpu_tee or nvswitch', subject_kind)
        WHEN token_role NOT IN ('overall', 'detached', 'single')
            THEN format('token_role {} is not overall, detached or single', token_role)
        WHEN verdict = 'pass' AND (valid_from IS NULL OR valid_until IS NULL)
            THEN 'a passing record has no validity window'
    END AS problem
FROM stage_attestation_records;

INSERT INTO stage_rejected (locator, reason_code, message, raw)
SELECT
    coalesce(source_locator, submission_id, 'attestation record'),
    'invalid_attestation_record',
    format('record {} of submission {}: {}; the verifier broke its output contract (the token '
           'is in the archived submission)',
           coalesce(record_id, '?'), coalesce(submission_id, '?'), problem),
    encode(CAST(to_json(s) AS VARCHAR))
FROM att_staged AS s
WHERE problem IS NOT NULL;

INSERT INTO stage_rejected (locator, reason_code, message, raw)
SELECT
    coalesce(source_locator, 'attestation submission'),
    'invalid_attestation_submission',
    CASE WHEN submission_id IS NULL THEN 'submission_id is missing' ELSE 'received_at is missing'
    END || '; the collector broke its output contract',
    encode(CAST(to_json(s) AS VARCHAR))
FROM stage_attestation_submissions AS s
WHERE submission_id IS NULL OR received_at IS NULL;

-- 2. -------------------------------------------------------------------------------------------
SET VARIABLE att_submissions_lo = (
    SELECT min(received_at) - INTERVAL 7 DAY FROM stage_attestation_submissions
);

INSERT INTO core.attestation_submissions BY NAME
SELECT
    getvariable('cluster') AS cluster,
    s.*,
    CAST(s.received_at AS DATE) AS day,
    getvariable('collection_id') AS collection_id,
    getvariable('collected_at') AS loaded_at
FROM stage_attestation_submissions AS s
WHERE s.submission_id IS NOT NULL AND s.received_at IS NOT NULL
  AND NOT EXISTS (
      SELECT 1 FROM core.attestation_submissions AS k
      WHERE k.received_at >= getvariable('att_submissions_lo')
        AND k.cluster = getvariable('cluster') AND k.submission_id = s.submission_id
  )
QUALIFY row_number() OVER (
    PARTITION BY s.submission_id ORDER BY s.received_at, s.source_locator
) = 1;

-- 3. -------------------------------------------------------------------------------------------
CREATE OR REPLACE TEMP TABLE att_presented AS
SELECT * EXCLUDE (problem)
FROM att_staged
WHERE problem IS NULL
QUALIFY row_number() OVER (
    PARTITION BY token_sha256, submod_key, node_name, boot_id
    ORDER BY received_at, submission_id, record_id
) = 1;

SET VARIABLE att_issued_lo = (SELECT min(issued_at) FROM att_presented);
SET VARIABLE att_issued_hi = (SELECT max(issued_at) FROM att_presented);
SET VARIABLE att_received_lo = (SELECT min(received_at) FROM att_presented);
SET VARIABLE att_received_hi = (SELECT max(received_at) FROM att_presented);

-- The stored presentations that can matter: a token has one issued_at wherever it is presented
-- (a token without one: a reloaded submission has its received_at), so only stored rows within
-- this collection's ranges are read (the scans prune row groups by their min/max).
CREATE OR REPLACE TEMP TABLE att_stored AS
SELECT cluster, record_id, submission_id, received_at, node_name, boot_id, token_sha256,
       submod_key, issuer, jti, provider, signature_valid, verdict, nonce_matched, nonce_source,
       reasons
FROM core.attestation_records
WHERE issued_at >= getvariable('att_issued_lo') AND issued_at <= getvariable('att_issued_hi')
UNION
SELECT cluster, record_id, submission_id, received_at, node_name, boot_id, token_sha256,
       submod_key, issuer, jti, provider, signature_valid, verdict, nonce_matched, nonce_source,
       reasons
FROM core.attestation_records
WHERE received_at >= getvariable('att_received_lo')
  AND received_at <= getvariable('att_received_hi');

CREATE OR REPLACE TEMP TABLE att_new AS
SELECT p.*
FROM att_presented AS p
WHERE NOT EXISTS (
    SELECT 1 FROM att_stored AS r
    WHERE r.cluster = getvariable('cluster') AND r.token_sha256 = p.token_sha256
      AND r.submod_key IS NOT DISTINCT FROM p.submod_key
      AND r.node_name IS NOT DISTINCT FROM p.node_name
      AND r.boot_id IS NOT DISTINCT FROM p.boot_id
);

-- 4. Replays ------------------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO att_authenticated(provider, signature_valid, verdict) AS
    provider IS DISTINCT FROM 'nvidia-local' AND coalesce(signature_valid, verdict = 'pass');
CREATE OR REPLACE TEMP MACRO att_binding(nonce_matched, nonce_source, reasons) AS CASE
    WHEN nonce_matched IS FALSE OR list_contains(coalesce(reasons, []::VARCHAR[]), 'nonce_mismatch')
        THEN 0
    WHEN nonce_matched AND nonce_source = 'collector' THEN 2
    ELSE 1
END;

CREATE OR REPLACE TEMP TABLE att_new_ranked AS
SELECT n.submission_id, n.record_id,
       att_binding(n.nonce_matched, n.nonce_source, n.reasons) AS binding,
       s.source_kind IS DISTINCT FROM 'file' AS stamped
FROM att_new AS n
LEFT JOIN (
    SELECT submission_id, any_value(source_kind) AS source_kind
    FROM stage_attestation_submissions
    GROUP BY submission_id
) AS s ON s.submission_id = n.submission_id;

CREATE OR REPLACE TEMP TABLE att_earlier AS
SELECT cluster, record_id, submission_id, received_at, node_name, boot_id, token_sha256, issuer,
       jti, 0 AS rank_group, att_binding(nonce_matched, nonce_source, reasons) AS binding,
       true AS stamped
FROM att_stored
WHERE att_authenticated(provider, signature_valid, verdict)
UNION ALL
SELECT getvariable('cluster'), n.record_id, n.submission_id, n.received_at, n.node_name,
       n.boot_id, n.token_sha256, n.issuer, n.jti, 1, k.binding, k.stamped
FROM att_new AS n
JOIN att_new_ranked AS k ON k.submission_id = n.submission_id AND k.record_id = n.record_id
WHERE att_authenticated(n.provider, n.signature_valid, n.verdict);

CREATE OR REPLACE TEMP TABLE att_replays AS
WITH matches AS (
    SELECT n.submission_id, n.record_id, n.node_name AS new_node, n.boot_id AS new_boot,
           n.received_at AS new_received_at, k.binding AS new_binding,
           k.stamped AS new_stamped, true AS same_token, e.*
        EXCLUDE (submission_id, record_id, token_sha256, issuer, jti),
           e.submission_id AS earlier_submission_id, e.record_id AS earlier_record_id
    FROM att_new AS n
    JOIN att_new_ranked AS k ON k.submission_id = n.submission_id AND k.record_id = n.record_id
    JOIN att_earlier AS e ON e.token_sha256 = n.token_sha256
    UNION ALL
    SELECT n.submission_id, n.record_id, n.node_name, n.boot_id, n.received_at, k.binding,
           k.stamped, false, e.*
        EXCLUDE (submission_id, record_id, token_sha256, issuer, jti),
           e.submission_id, e.record_id
    FROM att_new AS n
    JOIN att_new_ranked AS k ON k.submission_id = n.submission_id AND k.record_id = n.record_id
    JOIN att_earlier AS e
        ON e.issuer = n.issuer AND e.jti = n.jti AND e.token_sha256 <> n.token_sha256
),
replays AS (
    SELECT *
    FROM matches
    WHERE (cluster <> getvariable('cluster') OR node_name IS DISTINCT FROM new_node
           OR boot_id IS DISTINCT FROM new_boot)
      AND binding >= new_binding
      AND (binding > new_binding OR rank_group = 0
           OR NOT (stamped AND new_stamped)
           OR received_at < new_received_at
           OR (received_at = new_received_at AND earlier_submission_id < submission_id))
)
SELECT
    submission_id,
    record_id,
    bool_or(same_token) OVER (PARTITION BY submission_id, record_id) AS same_token,
    same_token AS first_by_token,
    earlier_record_id AS first_record_id,
    earlier_submission_id AS first_submission_id,
    cluster AS first_cluster,
    node_name AS first_node,
    boot_id AS first_boot,
    received_at AS first_received_at
FROM replays
QUALIFY row_number() OVER (
    PARTITION BY submission_id, record_id
    ORDER BY binding DESC, rank_group, received_at, earlier_submission_id, earlier_record_id
) = 1;

-- The rows' ids: a replayed token's row gets an id of its own (the collector's is the first
-- presentation's); detached rows follow their overall row's id within the submission.
CREATE OR REPLACE TEMP TABLE att_ids AS
SELECT
    n.submission_id,
    n.record_id AS collector_record_id,
    CASE
        WHEN r.same_token THEN regexp_replace(
            md5(concat_ws('/', n.record_id, getvariable('cluster'), coalesce(n.node_name, ''),
                          coalesce(n.boot_id, ''))),
            '^(.{8})(.{4})(.{4})(.{4})(.{12})$', '\1-\2-\3-\4-\5')
        ELSE n.record_id
    END AS record_id
FROM att_new AS n
LEFT JOIN att_replays AS r ON r.submission_id = n.submission_id AND r.record_id = n.record_id;

-- 4. Device identity ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP TABLE att_device_candidates AS
SELECT n.submission_id, n.record_id, n.node_name, n.gpu_uuid, n.device_ueid,
       coalesce(n.issued_at, n.received_at) AS seen_at, n.received_at
FROM att_new AS n
WHERE n.subject_kind = 'gpu' AND n.token_role = 'detached' AND n.verdict = 'pass'
  AND n.assurance_tier = 'verified' AND n.device_ueid IS NOT NULL AND n.gpu_uuid IS NOT NULL
  AND n.node_name IS NOT NULL
  AND NOT EXISTS (
      SELECT 1 FROM att_replays AS r
      WHERE r.submission_id = n.submission_id AND r.record_id = n.record_id
  );

CREATE OR REPLACE TEMP TABLE att_device_checks AS
WITH bindings AS (
    SELECT * FROM core.gpu_attested_devices WHERE cluster = getvariable('cluster')
),
by_ueid AS (
    SELECT *
    FROM bindings
    QUALIFY row_number() OVER (
        PARTITION BY device_ueid ORDER BY last_seen_at DESC, first_seen_at DESC, node_name, gpu_uuid
    ) = 1
),
by_gpu AS (
    SELECT *
    FROM bindings
    QUALIFY row_number() OVER (
        PARTITION BY gpu_uuid ORDER BY last_seen_at DESC, first_seen_at DESC, node_name,
        device_ueid
    ) = 1
),
removed_nodes AS (
    SELECT node_name
    FROM core.nodes
    WHERE cluster = getvariable('cluster')
    GROUP BY node_name
    HAVING count(*) FILTER (WHERE valid_to IS NULL) = 0
),
batch AS (
    SELECT
        *,
        first_value(gpu_uuid) OVER first_by_ueid AS batch_gpu_uuid,
        first_value(node_name) OVER first_by_ueid AS batch_node_name,
        first_value(device_ueid) OVER first_by_gpu AS batch_device_ueid
    FROM att_device_candidates
    WINDOW
        first_by_ueid AS (PARTITION BY device_ueid ORDER BY seen_at, received_at, record_id),
        first_by_gpu AS (PARTITION BY gpu_uuid ORDER BY seen_at, received_at, record_id)
)
SELECT
    b.submission_id,
    b.record_id,
    CASE
        WHEN u.device_ueid IS NOT NULL AND u.gpu_uuid <> b.gpu_uuid THEN format(
            'device_mismatch: GPU ueid {} is bound to GPU UUID {} (node {}, since {}), but this '
            'token''s GPU UUID is {}', b.device_ueid, u.gpu_uuid, u.node_name, u.first_seen_at,
            b.gpu_uuid)
        WHEN u.device_ueid IS NOT NULL AND u.node_name <> b.node_name AND m.node_name IS NULL
            THEN format(
            'device_mismatch: GPU ueid {} is bound to node {} (since {}), which is still in the '
            'inventory, but this token came from node {}', b.device_ueid, u.node_name,
            u.first_seen_at, b.node_name)
        WHEN g.gpu_uuid IS NOT NULL AND g.device_ueid <> b.device_ueid THEN format(
            'device_mismatch: GPU UUID {} is bound to ueid {} (node {}, since {}), but this '
            'token''s ueid is {}', b.gpu_uuid, g.device_ueid, g.node_name, g.first_seen_at,
            b.device_ueid)
        WHEN u.device_ueid IS NULL AND b.batch_gpu_uuid <> b.gpu_uuid THEN format(
            'device_mismatch: GPU ueid {} came as GPU UUID {} in an earlier token of this '
            'collection, but this token''s GPU UUID is {}', b.device_ueid, b.batch_gpu_uuid,
            b.gpu_uuid)
        WHEN u.device_ueid IS NULL AND b.batch_node_name <> b.node_name THEN format(
            'device_mismatch: GPU ueid {} came from node {} in an earlier token of this '
            'collection, but this token came from node {}', b.device_ueid, b.batch_node_name,
            b.node_name)
        WHEN g.gpu_uuid IS NULL AND b.batch_device_ueid <> b.device_ueid THEN format(
            'device_mismatch: GPU UUID {} came with ueid {} in an earlier token of this '
            'collection, but this token''s ueid is {}', b.gpu_uuid, b.batch_device_ueid,
            b.device_ueid)
    END AS message
FROM batch AS b
LEFT JOIN by_ueid AS u ON u.device_ueid = b.device_ueid
LEFT JOIN by_gpu AS g ON g.gpu_uuid = b.gpu_uuid
LEFT JOIN removed_nodes AS m ON m.node_name = u.node_name;

-- One GPU under two submodule keys of one NRAS result would count twice towards coverage.
CREATE OR REPLACE TEMP TABLE att_duplicate_devices AS
SELECT
    submission_id,
    record_id,
    format('device_mismatch: GPU {} appears twice in one NRAS result (submodules {} and {})',
           device, first_key, submod_key) AS message
FROM (
    SELECT
        submission_id,
        record_id,
        submod_key,
        coalesce(device_ueid, gpu_uuid, submod_key) AS device,
        first_value(submod_key) OVER same_device AS first_key,
        row_number() OVER same_device AS nth
    FROM att_new
    WHERE token_role = 'detached'
    WINDOW same_device AS (
        PARTITION BY submission_id, parent_record_id, coalesce(device_ueid, gpu_uuid, submod_key)
        ORDER BY submod_key, record_id
    )
)
WHERE nth > 1;

CREATE OR REPLACE TEMP TABLE att_vm_checks AS
WITH versions AS (
    SELECT n.submission_id, n.record_id, n.node_name, n.vm_id, v.system_uuid,
           lower(trim(n.vm_id)) AS vm, lower(trim(v.system_uuid)) AS su
    FROM att_new AS n
    JOIN core.nodes AS v
        ON v.cluster = getvariable('cluster') AND v.node_name = n.node_name
        AND v.system_uuid IS NOT NULL
    WHERE n.vm_id IS NOT NULL
    QUALIFY row_number() OVER (
        PARTITION BY n.submission_id, n.record_id
        ORDER BY (v.valid_from <= coalesce(n.issued_at, n.received_at)
                  AND coalesce(v.valid_to, TIMESTAMP 'infinity')
                      > coalesce(n.issued_at, n.received_at)) DESC,
                 v.valid_from DESC
    ) = 1
)
SELECT
    submission_id,
    record_id,
    format('device_mismatch: the Azure VM id {} (x-ms-azurevm-vmid, else the runtime claims'' '
           'vm-configuration.vmUniqueId) is not the system UUID of node {} in the '
           'inventory ({})', vm_id, node_name, system_uuid) AS message
FROM versions
WHERE vm <> su
  AND vm <> substr(su, 7, 2) || substr(su, 5, 2) || substr(su, 3, 2) || substr(su, 1, 2) || '-'
            || substr(su, 12, 2) || substr(su, 10, 2) || '-' || substr(su, 17, 2)
            || substr(su, 15, 2) || substr(su, 19);

-- A GPU failing its binding here fails its NRAS result too: coverage counts a result by its
-- overall row and at least the node's GPU capacity of detached rows.
CREATE OR REPLACE TEMP TABLE att_result_devices AS
SELECT
    n.submission_id,
    n.parent_record_id AS record_id,
    format('device_mismatch: {} of this result fail their device binding',
           string_agg(n.submod_key, ', ' ORDER BY n.submod_key)) AS message
FROM att_new AS n
WHERE n.token_role = 'detached' AND n.parent_record_id IS NOT NULL
  AND (EXISTS (SELECT 1 FROM att_duplicate_devices AS u
               WHERE u.submission_id = n.submission_id AND u.record_id = n.record_id)
       OR EXISTS (SELECT 1 FROM att_device_checks AS d
                  WHERE d.submission_id = n.submission_id AND d.record_id = n.record_id
                    AND d.message IS NOT NULL))
GROUP BY n.submission_id, n.parent_record_id;

-- 4. Verdicts ------------------------------------------------------------------------------------
CREATE OR REPLACE TEMP TABLE att_findings AS
SELECT
    n.submission_id,
    n.record_id,
    r.first_record_id AS replay_of_record_id,
    CASE WHEN r.record_id IS NOT NULL THEN format(
        'replay: the same {} was presented earlier by node {} (boot {}, cluster {}) in '
        'submission {} received at {}',
        CASE WHEN r.first_by_token THEN 'token' ELSE 'jti' END, coalesce(r.first_node, '?'),
        coalesce(r.first_boot, '?'), r.first_cluster, r.first_submission_id,
        r.first_received_at)
    END AS replay_message,
    coalesce(u.message, d.message, v.message, c.message) AS device_message
FROM att_new AS n
LEFT JOIN att_replays AS r ON r.submission_id = n.submission_id AND r.record_id = n.record_id
LEFT JOIN att_duplicate_devices AS u
    ON u.submission_id = n.submission_id AND u.record_id = n.record_id
LEFT JOIN att_device_checks AS d
    ON d.submission_id = n.submission_id AND d.record_id = n.record_id AND d.message IS NOT NULL
LEFT JOIN att_vm_checks AS v ON v.submission_id = n.submission_id AND v.record_id = n.record_id
LEFT JOIN att_result_devices AS c
    ON c.submission_id = n.submission_id AND c.record_id = n.record_id;

INSERT INTO core.attestation_records BY NAME
WITH judged AS (
    SELECT
        n.*,
        list_filter(
            [CASE WHEN f.replay_message IS NOT NULL THEN 'replay' END,
             CASE WHEN f.device_message IS NOT NULL THEN 'device_mismatch' END],
            lambda x: x IS NOT NULL
        ) AS found,
        concat_ws('; ', f.replay_message, f.device_message) AS found_detail,
        f.replay_of_record_id
    FROM att_new AS n
    JOIN att_findings AS f ON f.submission_id = n.submission_id AND f.record_id = n.record_id
)
SELECT
    getvariable('cluster') AS cluster,
    j.* EXCLUDE (record_id, parent_record_id, verdict, assurance_tier, reasons, detail, claims,
                 found, found_detail),
    i.record_id,
    coalesce(p.record_id, j.parent_record_id) AS parent_record_id,
    CASE WHEN len(j.found) > 0 THEN 'fail' ELSE j.verdict END AS verdict,
    CASE WHEN len(j.found) > 0 THEN 'none' ELSE j.assurance_tier END AS assurance_tier,
    list_concat(
        coalesce(j.reasons, []::VARCHAR[]),
        list_filter(j.found, lambda x: NOT list_contains(coalesce(j.reasons, []::VARCHAR[]), x))
    ) AS reasons,
    CASE WHEN len(j.found) = 0 THEN j.detail
        ELSE concat_ws('; ', nullif(j.detail, ''), j.found_detail) END AS detail,
    CASE WHEN json_valid(j.claims) THEN CAST(j.claims AS JSON) END AS claims,
    j.verdict AS collector_verdict,
    CAST(j.received_at AS DATE) AS day,
    getvariable('collection_id') AS collection_id,
    getvariable('collected_at') AS loaded_at
FROM judged AS j
JOIN att_ids AS i ON i.submission_id = j.submission_id AND i.collector_record_id = j.record_id
LEFT JOIN att_ids AS p
    ON p.submission_id = j.submission_id AND p.collector_record_id = j.parent_record_id;

-- 5. ----------------------------------------------------------------------------------------------
CREATE OR REPLACE TEMP TABLE att_bindable AS
SELECT c.node_name, c.gpu_uuid, c.device_ueid, c.seen_at, c.record_id
FROM att_device_candidates AS c
JOIN att_findings AS f ON f.submission_id = c.submission_id AND f.record_id = c.record_id
WHERE f.replay_message IS NULL AND f.device_message IS NULL;

UPDATE core.gpu_attested_devices AS b
SET last_seen_at = u.last_seen_at, last_record_id = u.last_record_id
FROM (
    SELECT node_name, gpu_uuid, device_ueid, max(seen_at) AS last_seen_at,
           arg_max(record_id, seen_at) AS last_record_id
    FROM att_bindable
    GROUP BY node_name, gpu_uuid, device_ueid
) AS u
WHERE b.cluster = getvariable('cluster') AND b.node_name = u.node_name
  AND b.gpu_uuid = u.gpu_uuid AND b.device_ueid = u.device_ueid
  AND u.last_seen_at > b.last_seen_at;

INSERT INTO core.gpu_attested_devices
    (cluster, node_name, gpu_uuid, device_ueid, first_seen_at, last_seen_at, first_record_id,
     last_record_id)
SELECT
    getvariable('cluster'),
    node_name,
    gpu_uuid,
    device_ueid,
    min(seen_at),
    max(seen_at),
    arg_min(record_id, seen_at),
    arg_max(record_id, seen_at)
FROM att_bindable AS b
WHERE NOT EXISTS (
    SELECT 1 FROM core.gpu_attested_devices AS d
    WHERE d.cluster = getvariable('cluster') AND d.node_name = b.node_name
      AND d.gpu_uuid = b.gpu_uuid AND d.device_ueid = b.device_ueid
)
GROUP BY node_name, gpu_uuid, device_ueid;

-- 0006 attestation: confidential-computing evidence (reference attestation.md §6). Every token
-- annex verified, passing or not (core.attestation_records), the submissions they came in, the
-- GPU identities learnt from verified tokens, the coverage marts rebuilt by
-- warehouse/models/attestation_coverage.py (refresh_attestation_coverage), and the node's boot
-- and VM identity in the Kubernetes inventory (coverage never spans a reboot; Azure
-- Attestation's VM id must be the node's).
-- Never edit this file once applied anywhere: add a new migration instead.

ALTER TABLE raw.kubernetes_nodes ADD COLUMN boot_id VARCHAR;
ALTER TABLE raw.kubernetes_nodes ADD COLUMN system_uuid VARCHAR;
ALTER TABLE core.nodes ADD COLUMN boot_id VARCHAR;
ALTER TABLE core.nodes ADD COLUMN system_uuid VARCHAR;

COMMENT ON COLUMN core.nodes.boot_id IS
    'status.nodeInfo.bootID: a new value at every reboot, so a reboot makes a new version. NULL for versions collected before annex read it (a version collected afterwards differs by it once). Attestation evidence never covers a boot it was not obtained in.';
COMMENT ON COLUMN core.nodes.system_uuid IS
    'status.nodeInfo.systemUUID: the machine''s SMBIOS UUID (on Azure the VM id, its first three fields possibly byte-swapped). Compared with x-ms-azurevm-vmid of Azure Attestation tokens.';

CREATE TABLE core.attestation_submissions (
    cluster VARCHAR NOT NULL,
    submission_id VARCHAR NOT NULL,
    source_locator VARCHAR,
    source_kind VARCHAR,
    node_name VARCHAR,
    boot_id VARCHAR,
    received_at TIMESTAMP NOT NULL,
    collected_at TIMESTAMP,
    nonce VARCHAR,
    nonce_source VARCHAR,
    gpu_index_map MAP(VARCHAR, VARCHAR),
    evidence_count INTEGER,
    token_count INTEGER,
    body_bytes BIGINT,
    archive_uri VARCHAR,
    agent VARCHAR,
    day DATE NOT NULL,
    collection_id VARCHAR NOT NULL,
    loaded_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE core.attestation_submissions IS
    'One row per attestation submission (what a node''s agent posted to annex serve or wrote as a file): the agent''s own, unsigned, account of who sent which evidence when. Unique by (cluster, submission_id): reading the same body again changes nothing. Its tokens are in core.attestation_records.';
COMMENT ON COLUMN core.attestation_submissions.cluster IS 'Cluster name as configured in annex (the collection''s cluster).';
COMMENT ON COLUMN core.attestation_submissions.submission_id IS 'Hex SHA-256 of the body exactly as received: the same body always has the same id.';
COMMENT ON COLUMN core.attestation_submissions.source_locator IS 'Where the body was read: the spool or watched file path, or intake:<id>.';
COMMENT ON COLUMN core.attestation_submissions.source_kind IS 'intake (posted to annex serve) or file (a bare submission file from a watched folder).';
COMMENT ON COLUMN core.attestation_submissions.node_name IS 'Node the agent says it runs on (unsigned; joins core.nodes.node_name).';
COMMENT ON COLUMN core.attestation_submissions.boot_id IS 'The node''s /proc/sys/kernel/random/boot_id as the agent reported it (unsigned): evidence covers this boot only.';
COMMENT ON COLUMN core.attestation_submissions.received_at IS 'When annex received the body (UTC; for a bare file its modification time, at most the time it was read): the clock every time check of its tokens uses.';
COMMENT ON COLUMN core.attestation_submissions.collected_at IS 'When the agent says it gathered the evidence (its own clock, unsigned, informational; UTC).';
COMMENT ON COLUMN core.attestation_submissions.nonce IS 'The nonce the agent says it used.';
COMMENT ON COLUMN core.attestation_submissions.nonce_source IS 'collector (a nonce annex issued and authenticated), attester (chosen by the node: freshness not proven) or NULL (none).';
COMMENT ON COLUMN core.attestation_submissions.gpu_index_map IS 'The agent''s map from NRAS submodule key (GPU-0, GPU-1, ...: positions, not identities) to GPU UUID (unsigned).';
COMMENT ON COLUMN core.attestation_submissions.evidence_count IS 'Evidence entries in the submission (one per provider result).';
COMMENT ON COLUMN core.attestation_submissions.token_count IS 'Tokens found in the evidence (an NRAS result counts its overall token and each detached one).';
COMMENT ON COLUMN core.attestation_submissions.body_bytes IS 'Size of the body in bytes.';
COMMENT ON COLUMN core.attestation_submissions.archive_uri IS 'Where the body is kept after the collection committed.';
COMMENT ON COLUMN core.attestation_submissions.agent IS 'The agent''s self-description (name/version), unsigned.';
COMMENT ON COLUMN core.attestation_submissions.day IS 'UTC date of received_at (the export partition).';
COMMENT ON COLUMN core.attestation_submissions.collection_id IS 'The collection that loaded the submission (audit.collections).';
COMMENT ON COLUMN core.attestation_submissions.loaded_at IS 'When that collection started (UTC).';

CREATE TABLE core.attestation_records (
    cluster VARCHAR NOT NULL,
    record_id VARCHAR NOT NULL,
    submission_id VARCHAR NOT NULL,
    received_at TIMESTAMP NOT NULL,
    verified_at TIMESTAMP,
    node_name VARCHAR,
    boot_id VARCHAR,
    subject_kind VARCHAR CHECK (subject_kind IN ('gpu', 'cpu_tee', 'nvswitch')),
    provider VARCHAR,
    token_role VARCHAR CHECK (token_role IN ('overall', 'detached', 'single')),
    parent_record_id VARCHAR,
    submod_key VARCHAR,
    gpu_uuid VARCHAR,
    device_ueid VARCHAR,
    vm_id VARCHAR,
    tee_type VARCHAR,
    issuer VARCHAR,
    alg VARCHAR,
    kid VARCHAR,
    jti VARCHAR,
    token_sha256 VARCHAR NOT NULL,
    nonce VARCHAR,
    nonce_source VARCHAR,
    nonce_matched BOOLEAN,
    freshness_proven BOOLEAN,
    issued_at TIMESTAMP,
    not_before TIMESTAMP,
    expires_at TIMESTAMP,
    valid_from TIMESTAMP,
    valid_until TIMESTAMP,
    signature_valid BOOLEAN,
    chain_valid BOOLEAN,
    assurance_tier VARCHAR NOT NULL CHECK (assurance_tier IN ('verified', 'self_reported', 'none')),
    verdict VARCHAR NOT NULL CHECK (verdict IN ('pass', 'fail', 'error', 'unverifiable')),
    reasons VARCHAR[] NOT NULL,
    detail VARCHAR,
    policy_id VARCHAR,
    policy_sha256 VARCHAR,
    hw_model VARCHAR,
    driver_version VARCHAR,
    vbios_version VARCHAR,
    debug_enabled BOOLEAN,
    secure_boot BOOLEAN,
    measurement VARCHAR,
    tcb_status VARCHAR,
    claims JSON,
    raw_token_uri VARCHAR,
    verifier_name VARCHAR,
    verifier_version VARCHAR,
    jwks_sha256 VARCHAR,
    source_locator VARCHAR,
    collector_verdict VARCHAR NOT NULL,
    replay_of_record_id VARCHAR,
    day DATE NOT NULL,
    collection_id VARCHAR NOT NULL,
    loaded_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE core.attestation_records IS
    'One row per attestation token annex verified, whatever its verdict (nothing is dropped): an NVIDIA NRAS result gives one overall row and one detached row per GPU, an Azure Attestation or Intel Trust Authority token one single row, an NVIDIA local-verifier result self-reported rows. One row per presentation of a token: the same token (token_sha256, submod_key) from the same node and boot is stored once however often it is read; presented again by another node or boot it is stored again as a replay (verdict fail). The collector''s verdict is kept in collector_verdict; the warehouse adds what only it knows (replay across stored history, device identity bindings, the Azure VM id against the inventory) by overriding verdict to fail, assurance_tier to none and appending the reason (replay; device_mismatch for a GPU identity contradicting core.gpu_attested_devices, one GPU under two submodule keys of a result, or a VM id that is not the node''s system_uuid). Coverage: marts.attestation_node_windows and marts.attestation_gpu_hours.';
COMMENT ON COLUMN core.attestation_records.cluster IS 'Cluster name as configured in annex (the collection''s cluster).';
COMMENT ON COLUMN core.attestation_records.record_id IS 'Identity of the row: uuid5 of (token_sha256, submod_key) for a token''s first presentation; for a replayed presentation an id derived from that, the cluster, node and boot (see replay_of_record_id).';
COMMENT ON COLUMN core.attestation_records.submission_id IS 'The submission the token arrived in (core.attestation_submissions).';
COMMENT ON COLUMN core.attestation_records.received_at IS 'When annex received the submission (UTC): the clock the time checks (expired, not_yet_valid) use.';
COMMENT ON COLUMN core.attestation_records.verified_at IS 'Collector clock when the token was verified (UTC).';
COMMENT ON COLUMN core.attestation_records.node_name IS 'Node the submission names (unsigned; joins core.nodes.node_name).';
COMMENT ON COLUMN core.attestation_records.boot_id IS 'Boot the submission names (unsigned): the evidence covers that boot only. Records without one cover nothing.';
COMMENT ON COLUMN core.attestation_records.subject_kind IS 'What is attested: gpu, cpu_tee (the confidential VM) or nvswitch.';
COMMENT ON COLUMN core.attestation_records.provider IS 'Who produced the token: nvidia-nras, nvidia-local (self-reported), azure-maa or intel-ita.';
COMMENT ON COLUMN core.attestation_records.token_role IS 'overall (NRAS platform token), detached (NRAS per-GPU token) or single (a CVM token).';
COMMENT ON COLUMN core.attestation_records.parent_record_id IS 'For a detached row: record_id of its overall row (same submission).';
COMMENT ON COLUMN core.attestation_records.submod_key IS 'NRAS submodule key, e.g. GPU-0: a position in the result, not an identity.';
COMMENT ON COLUMN core.attestation_records.gpu_uuid IS 'GPU UUID the agent''s index map gives for submod_key (unsigned).';
COMMENT ON COLUMN core.attestation_records.device_ueid IS 'ueid claim of the detached token: the GPU''s signed identity (its attestation certificate serial).';
COMMENT ON COLUMN core.attestation_records.vm_id IS 'x-ms-azurevm-vmid of an Azure Attestation token (signed); must be the node''s system_uuid (core.nodes).';
COMMENT ON COLUMN core.attestation_records.tee_type IS 'sevsnpvm or tdxvm for CVM tokens; NULL otherwise.';
COMMENT ON COLUMN core.attestation_records.issuer IS 'iss claim of the token.';
COMMENT ON COLUMN core.attestation_records.alg IS 'alg of the JWS header.';
COMMENT ON COLUMN core.attestation_records.kid IS 'kid of the JWS header (the pinned key it names).';
COMMENT ON COLUMN core.attestation_records.jti IS 'jti claim: a token id; the same jti from another node or boot is a replay even when the token bytes differ (a re-encoded signature).';
COMMENT ON COLUMN core.attestation_records.token_sha256 IS 'Hex SHA-256 of the exact compact JWS.';
COMMENT ON COLUMN core.attestation_records.nonce IS 'The token''s nonce claim.';
COMMENT ON COLUMN core.attestation_records.nonce_source IS 'collector (annex issued it), attester (chosen by the node) or NULL.';
COMMENT ON COLUMN core.attestation_records.nonce_matched IS 'Whether the token''s nonce equals the submission''s.';
COMMENT ON COLUMN core.attestation_records.freshness_proven IS 'True when the nonce was issued by annex, unexpired and matched: the token was made after annex asked.';
COMMENT ON COLUMN core.attestation_records.issued_at IS 'iat claim (UTC).';
COMMENT ON COLUMN core.attestation_records.not_before IS 'nbf claim (UTC).';
COMMENT ON COLUMN core.attestation_records.expires_at IS 'exp claim (UTC).';
COMMENT ON COLUMN core.attestation_records.valid_from IS 'Start of the effective validity window: max(nbf, iat) (UTC).';
COMMENT ON COLUMN core.attestation_records.valid_until IS 'End of the effective validity window before truncation: min(exp, iat + the issuer''s max_age_seconds) (UTC). Coverage also ends it at the node''s next boot change and at a later fail of the same subject.';
COMMENT ON COLUMN core.attestation_records.signature_valid IS 'Whether the JWS signature verified with the pinned key.';
COMMENT ON COLUMN core.attestation_records.chain_valid IS 'Whether the key''s x5c chain reached a configured root (NULL when the key carries no chain).';
COMMENT ON COLUMN core.attestation_records.assurance_tier IS 'verified (verdict pass), self_reported (NVIDIA local verifier: unauthenticated) or none.';
COMMENT ON COLUMN core.attestation_records.verdict IS 'pass (verified, every check and the appraisal policy passed), fail (a check or the policy failed; reasons say which), error (annex could not decide, e.g. keys unavailable) or unverifiable (self-reported).';
COMMENT ON COLUMN core.attestation_records.reasons IS 'Reason codes (reference attestation.md §4 vocabulary, e.g. expired, replay, device_mismatch); empty only for pass.';
COMMENT ON COLUMN core.attestation_records.detail IS 'One human sentence per reason, joined by ''; '' (attacker-influenced text: escape before display).';
COMMENT ON COLUMN core.attestation_records.policy_id IS 'The appraisal policy applied (attestation.policy.policy_id).';
COMMENT ON COLUMN core.attestation_records.policy_sha256 IS 'SHA-256 of that policy''s canonical JSON: which exact rules were applied.';
COMMENT ON COLUMN core.attestation_records.hw_model IS 'hwmodel claim of a GPU token, e.g. GH100 A01 GSP BROM.';
COMMENT ON COLUMN core.attestation_records.driver_version IS 'x-nvidia-gpu-driver-version claim.';
COMMENT ON COLUMN core.attestation_records.vbios_version IS 'x-nvidia-gpu-vbios-version claim.';
COMMENT ON COLUMN core.attestation_records.debug_enabled IS 'Whether the token says debugging is enabled (dbgstat, x-ms-sevsnpvm-is-debuggable, tdx_is_debuggable).';
COMMENT ON COLUMN core.attestation_records.secure_boot IS 'secboot / secureboot claim.';
COMMENT ON COLUMN core.attestation_records.measurement IS 'Launch measurement (SEV-SNP) or MRTD (TDX); NULL for GPU tokens.';
COMMENT ON COLUMN core.attestation_records.tcb_status IS 'TCB status claim (Intel Trust Authority attester_tcb_status).';
COMMENT ON COLUMN core.attestation_records.claims IS 'The token''s payload as JSON (sorted keys); NULL when it could not be parsed.';
COMMENT ON COLUMN core.attestation_records.raw_token_uri IS 'Where the exact token is archived (<archived submission>#<submodule key or evidence index>).';
COMMENT ON COLUMN core.attestation_records.verifier_name IS 'Verifier that judged the token (annex).';
COMMENT ON COLUMN core.attestation_records.verifier_version IS 'Its version (the annex version).';
COMMENT ON COLUMN core.attestation_records.jwks_sha256 IS 'SHA-256 of the pinned key set used.';
COMMENT ON COLUMN core.attestation_records.source_locator IS 'Where the submission was read (file path or intake id).';
COMMENT ON COLUMN core.attestation_records.collector_verdict IS 'The verdict the collector''s verifier gave, before the warehouse''s checks (verdict differs only when one of them failed).';
COMMENT ON COLUMN core.attestation_records.replay_of_record_id IS 'For a replay: record_id of the earliest stored presentation of the same token or jti by another node or boot; NULL otherwise.';
COMMENT ON COLUMN core.attestation_records.day IS 'UTC date of received_at (the export partition).';
COMMENT ON COLUMN core.attestation_records.collection_id IS 'The collection that loaded the row (audit.collections).';
COMMENT ON COLUMN core.attestation_records.loaded_at IS 'When that collection started (UTC).';

CREATE TABLE core.gpu_attested_devices (
    cluster VARCHAR NOT NULL,
    node_name VARCHAR NOT NULL,
    gpu_uuid VARCHAR NOT NULL,
    device_ueid VARCHAR NOT NULL,
    first_seen TIMESTAMP NOT NULL,
    last_seen TIMESTAMP NOT NULL,
    first_record_id VARCHAR NOT NULL,
    last_record_id VARCHAR NOT NULL
);

COMMENT ON TABLE core.gpu_attested_devices IS
    'Which GPU is which, learnt from verified evidence: one row per (cluster, node_name, gpu_uuid, device_ueid) seen in a passing, verified NRAS detached token. The ueid is signed, the GPU UUID and node are the agent''s word: once bound, a verified token whose ueid is bound to another GPU UUID, or to another node still in the inventory, or whose GPU UUID is bound to another ueid, fails with device_mismatch. A GPU moved to a replacement node (the old node removed from the inventory) gets a new row.';
COMMENT ON COLUMN core.gpu_attested_devices.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN core.gpu_attested_devices.node_name IS 'Node the GPU was attested on.';
COMMENT ON COLUMN core.gpu_attested_devices.gpu_uuid IS 'GPU UUID the agent reported for it.';
COMMENT ON COLUMN core.gpu_attested_devices.device_ueid IS 'The GPU''s signed identity (ueid claim).';
COMMENT ON COLUMN core.gpu_attested_devices.first_seen IS 'issued_at of the first verified token binding them (UTC).';
COMMENT ON COLUMN core.gpu_attested_devices.last_seen IS 'issued_at of the latest verified token that agreed with the binding (UTC).';
COMMENT ON COLUMN core.gpu_attested_devices.first_record_id IS 'The record that established the binding (core.attestation_records).';
COMMENT ON COLUMN core.gpu_attested_devices.last_record_id IS 'The record behind last_seen.';

CREATE TABLE marts.attestation_node_windows (
    cluster VARCHAR NOT NULL,
    node_name VARCHAR NOT NULL,
    boot_id VARCHAR NOT NULL,
    evidence VARCHAR NOT NULL CHECK (evidence IN ('gpu_verified', 'gpu_self_reported', 'cpu_verified', 'verified')),
    day DATE NOT NULL,
    window_start TIMESTAMP NOT NULL,
    window_end TIMESTAMP NOT NULL,
    window_seconds DOUBLE NOT NULL,
    refreshed_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE marts.attestation_node_windows IS
    'When each node was covered by attestation evidence, as exact intervals (no sampling), cut at UTC midnight: one row per (cluster, node_name, boot_id, evidence) interval and day. A record''s window is [valid_from, valid_until), ended earlier at the node''s next boot change (the first later submission or core.nodes version naming another boot) and at the issued_at of a later fail record of the same subject (the node''s NRAS platform token, one GPU, or its CVM; a fail only for arriving too late or too early, expired, not_yet_valid or nonce_expired, ends nothing). gpu_verified: one NRAS result whose passing verified overall token and passing verified detached tokens of at least core.nodes.gpu_capacity of its GPUs (the node version valid then) cover the instant, each detached window within its overall''s; GPUs are not pooled across results. gpu_self_reported: the same from NVIDIA local-verifier (self-reported) tokens. cpu_verified: a passing verified Azure Attestation or Intel Trust Authority token. verified: gpu_verified and cpu_verified of the same boot at once. A table rebuilt per day by refresh_attestation_coverage (warehouse/models/attestation_coverage.py).';
COMMENT ON COLUMN marts.attestation_node_windows.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.attestation_node_windows.node_name IS 'Node the evidence names (core.nodes.node_name).';
COMMENT ON COLUMN marts.attestation_node_windows.boot_id IS 'Boot the evidence covers.';
COMMENT ON COLUMN marts.attestation_node_windows.evidence IS 'gpu_verified, gpu_self_reported, cpu_verified or verified (GPU and CPU verified at once), as the table comment defines.';
COMMENT ON COLUMN marts.attestation_node_windows.day IS 'UTC date of the interval.';
COMMENT ON COLUMN marts.attestation_node_windows.window_start IS 'Start of the interval (UTC, inclusive).';
COMMENT ON COLUMN marts.attestation_node_windows.window_end IS 'End of the interval (UTC, exclusive); at most the next midnight. GPU intervals also end at the inventory horizon (the latest successful kubernetes collection), past which GPU capacity is not known yet.';
COMMENT ON COLUMN marts.attestation_node_windows.window_seconds IS 'window_end − window_start in seconds.';
COMMENT ON COLUMN marts.attestation_node_windows.refreshed_at IS 'When refresh_attestation_coverage rebuilt the row (UTC).';

CREATE TABLE marts.attestation_gpu_hours (
    cluster VARCHAR NOT NULL,
    day DATE NOT NULL,
    node_name VARCHAR NOT NULL,
    namespace VARCHAR,
    job_name VARCHAR,
    run_id VARCHAR,
    allocated_gpu_hours DOUBLE NOT NULL,
    verified_gpu_hours DOUBLE NOT NULL,
    self_reported_gpu_hours DOUBLE NOT NULL,
    unattested_gpu_hours DOUBLE NOT NULL,
    unknown_gpu_hours DOUBLE NOT NULL,
    refreshed_at TIMESTAMP NOT NULL
);

COMMENT ON TABLE marts.attestation_gpu_hours IS
    'Attestation coverage of allocated GPU-hours: the workload holdings of whole GPUs (core.gpu_allocations, nvidia.com/gpu, category workload; open ones up to the inventory horizon) cut at UTC midnight, split exactly (interval arithmetic, no sampling) into verified + self_reported + unattested + unknown = allocated. An instant of a holding is verified when its node is verified at that instant (marts.attestation_node_windows evidence verified: GPUs and CVM both attested in the same boot), else self_reported when the node''s GPUs are covered by self-reported evidence only (CPU evidence is not required: there is no self-reported CVM tier), else unattested when the inventory knew the node with GPU capacity then, else unknown (the node absent from core.nodes then, or without GPU capacity): unknown is a gap in the evidence, never counted as unattested. One row per (cluster, day, node_name, namespace, job_name). A table rebuilt per day by refresh_attestation_coverage.';
COMMENT ON COLUMN marts.attestation_gpu_hours.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.attestation_gpu_hours.day IS 'UTC date.';
COMMENT ON COLUMN marts.attestation_gpu_hours.node_name IS 'Node the GPUs were held on.';
COMMENT ON COLUMN marts.attestation_gpu_hours.namespace IS 'Namespace of the holding pods.';
COMMENT ON COLUMN marts.attestation_gpu_hours.job_name IS 'batch/v1 Job of the holding pods; NULL for pods of no Job.';
COMMENT ON COLUMN marts.attestation_gpu_hours.run_id IS 'Training run (OpenLineage run id) of the job; NULL until lineage is collected.';
COMMENT ON COLUMN marts.attestation_gpu_hours.allocated_gpu_hours IS 'Σ gpus × hours of the holdings in the day (exact to the microsecond).';
COMMENT ON COLUMN marts.attestation_gpu_hours.verified_gpu_hours IS 'Of those, GPU-hours on the node while it was verified (GPU and CVM attested, same boot).';
COMMENT ON COLUMN marts.attestation_gpu_hours.self_reported_gpu_hours IS 'GPU-hours not verified while the node''s GPUs were covered by self-reported (NVIDIA local verifier) evidence.';
COMMENT ON COLUMN marts.attestation_gpu_hours.unattested_gpu_hours IS 'GPU-hours on a node the inventory knew with GPU capacity, without covering evidence (none, failed, expired, fewer attested GPUs than the node has, no CVM token, another boot).';
COMMENT ON COLUMN marts.attestation_gpu_hours.unknown_gpu_hours IS 'GPU-hours on a node absent from core.nodes at the time or without GPU capacity there: coverage cannot be judged (a gap, not zero).';
COMMENT ON COLUMN marts.attestation_gpu_hours.refreshed_at IS 'When refresh_attestation_coverage rebuilt the row (UTC).';

CREATE VIEW marts.attestation_coverage_daily AS
SELECT
    cluster,
    day,
    count(DISTINCT node_name) AS nodes,
    sum(allocated_gpu_hours) AS allocated_gpu_hours,
    sum(verified_gpu_hours) AS verified_gpu_hours,
    sum(self_reported_gpu_hours) AS self_reported_gpu_hours,
    sum(unattested_gpu_hours) AS unattested_gpu_hours,
    sum(unknown_gpu_hours) AS unknown_gpu_hours,
    sum(verified_gpu_hours) / nullif(sum(allocated_gpu_hours) - sum(unknown_gpu_hours), 0)
        AS verified_share,
    sum(unknown_gpu_hours) / nullif(sum(allocated_gpu_hours), 0) AS unknown_share
FROM marts.attestation_gpu_hours
GROUP BY cluster, day;

COMMENT ON VIEW marts.attestation_coverage_daily IS
    'Attestation coverage per cluster and UTC day: marts.attestation_gpu_hours summed (verified + self_reported + unattested + unknown = allocated GPU-hours).';
COMMENT ON COLUMN marts.attestation_coverage_daily.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.attestation_coverage_daily.day IS 'UTC date.';
COMMENT ON COLUMN marts.attestation_coverage_daily.nodes IS 'Nodes with workload GPU holdings in the day.';
COMMENT ON COLUMN marts.attestation_coverage_daily.allocated_gpu_hours IS 'Workload GPU-hours held.';
COMMENT ON COLUMN marts.attestation_coverage_daily.verified_gpu_hours IS 'Of those, on verified nodes (GPU and CVM attested, same boot).';
COMMENT ON COLUMN marts.attestation_coverage_daily.self_reported_gpu_hours IS 'Covered by self-reported evidence only.';
COMMENT ON COLUMN marts.attestation_coverage_daily.unattested_gpu_hours IS 'On known GPU nodes without covering evidence.';
COMMENT ON COLUMN marts.attestation_coverage_daily.unknown_gpu_hours IS 'On nodes the inventory did not know (with GPU capacity) at the time.';
COMMENT ON COLUMN marts.attestation_coverage_daily.verified_share IS 'verified / (allocated − unknown): the attestation coverage of the GPU-hours that can be judged; NULL when none can.';
COMMENT ON COLUMN marts.attestation_coverage_daily.unknown_share IS 'unknown / allocated: how much could not be judged.';

CREATE VIEW marts.attestation_status AS
WITH subjects AS (
    SELECT
        *,
        CASE
            WHEN subject_kind = 'gpu' AND token_role = 'detached'
                THEN 'gpu:' || coalesce(gpu_uuid, device_ueid, submod_key, '?')
            WHEN subject_kind = 'gpu' THEN 'gpu:platform'
            ELSE coalesce(subject_kind, 'unknown')
        END AS subject
    FROM core.attestation_records
),
latest AS (
    SELECT *
    FROM subjects
    QUALIFY row_number() OVER (
        PARTITION BY cluster, node_name, subject
        ORDER BY coalesce(issued_at, received_at) DESC, received_at DESC, record_id
    ) = 1
),
inventory AS (
    SELECT DISTINCT cluster, node_name FROM core.nodes WHERE valid_to IS NULL
)
SELECT
    l.cluster,
    l.node_name,
    l.subject,
    l.subject_kind,
    l.provider,
    l.boot_id,
    l.gpu_uuid,
    l.device_ueid,
    l.verdict,
    l.assurance_tier,
    l.reasons,
    l.detail,
    l.issued_at,
    l.valid_until,
    l.received_at,
    l.record_id,
    i.node_name IS NOT NULL AS node_in_inventory
FROM latest AS l
LEFT JOIN inventory AS i ON i.cluster = l.cluster AND i.node_name = l.node_name;

COMMENT ON VIEW marts.attestation_status IS
    'The latest attestation record per node and subject (the node''s NRAS platform token gpu:platform, each GPU gpu:<uuid>, its CVM cpu_tee), by issued_at: what each node last proved, and whether the node is in the current inventory.';
COMMENT ON COLUMN marts.attestation_status.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.attestation_status.node_name IS 'Node the evidence names.';
COMMENT ON COLUMN marts.attestation_status.subject IS 'gpu:platform (NRAS overall token), gpu:<GPU UUID> (a detached token; ueid or submodule key when the UUID is unknown), cpu_tee or nvswitch.';
COMMENT ON COLUMN marts.attestation_status.subject_kind IS 'gpu, cpu_tee or nvswitch.';
COMMENT ON COLUMN marts.attestation_status.provider IS 'nvidia-nras, nvidia-local, azure-maa or intel-ita.';
COMMENT ON COLUMN marts.attestation_status.boot_id IS 'Boot the latest record names.';
COMMENT ON COLUMN marts.attestation_status.gpu_uuid IS 'GPU UUID (detached tokens).';
COMMENT ON COLUMN marts.attestation_status.device_ueid IS 'Signed GPU identity (detached tokens).';
COMMENT ON COLUMN marts.attestation_status.verdict IS 'pass, fail, error or unverifiable.';
COMMENT ON COLUMN marts.attestation_status.assurance_tier IS 'verified, self_reported or none.';
COMMENT ON COLUMN marts.attestation_status.reasons IS 'Reason codes of the latest record.';
COMMENT ON COLUMN marts.attestation_status.detail IS 'Human explanation of the reasons (escape before display).';
COMMENT ON COLUMN marts.attestation_status.issued_at IS 'iat of the latest record (UTC).';
COMMENT ON COLUMN marts.attestation_status.valid_until IS 'End of its validity window before truncation (UTC): compare with the time of interest.';
COMMENT ON COLUMN marts.attestation_status.received_at IS 'When annex received it (UTC).';
COMMENT ON COLUMN marts.attestation_status.record_id IS 'The record (core.attestation_records).';
COMMENT ON COLUMN marts.attestation_status.node_in_inventory IS 'Whether the node is in the current Kubernetes inventory (core.nodes); false: evidence for a node annex does not know.';

CREATE VIEW marts.attestation_failures AS
SELECT
    cluster,
    day,
    verdict,
    provider,
    subject_kind,
    reason,
    count(*) AS records,
    count(DISTINCT node_name) AS nodes,
    min(received_at) AS first_received_at,
    max(received_at) AS last_received_at
FROM (
    SELECT
        *,
        unnest(CASE WHEN len(reasons) = 0 THEN ['unspecified'] ELSE reasons END) AS reason
    FROM core.attestation_records
    WHERE verdict <> 'pass'
)
GROUP BY cluster, day, verdict, provider, subject_kind, reason;

COMMENT ON VIEW marts.attestation_failures IS
    'Records that did not pass, counted per cluster, UTC day of receipt, verdict, provider, subject kind and reason code (a record with several reasons counts under each).';
COMMENT ON COLUMN marts.attestation_failures.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.attestation_failures.day IS 'UTC date annex received the records.';
COMMENT ON COLUMN marts.attestation_failures.verdict IS 'fail, error or unverifiable.';
COMMENT ON COLUMN marts.attestation_failures.provider IS 'nvidia-nras, nvidia-local, azure-maa or intel-ita.';
COMMENT ON COLUMN marts.attestation_failures.subject_kind IS 'gpu, cpu_tee or nvswitch.';
COMMENT ON COLUMN marts.attestation_failures.reason IS 'Reason code (e.g. expired, nonce_mismatch, replay, device_mismatch, self_reported); unspecified when a record carried none.';
COMMENT ON COLUMN marts.attestation_failures.records IS 'Records with that reason.';
COMMENT ON COLUMN marts.attestation_failures.nodes IS 'Distinct nodes among them.';
COMMENT ON COLUMN marts.attestation_failures.first_received_at IS 'Earliest receipt among them (UTC).';
COMMENT ON COLUMN marts.attestation_failures.last_received_at IS 'Latest receipt among them (UTC).';

CREATE TABLE audit.attestation_refreshes (
    refreshed_at TIMESTAMP NOT NULL,
    cluster VARCHAR NOT NULL,
    since DATE,
    first_day DATE,
    last_day DATE,
    days BIGINT NOT NULL,
    attestation_collections BIGINT NOT NULL,
    kubernetes_collections BIGINT NOT NULL,
    attestation_horizon TIMESTAMP,
    inventory_horizon TIMESTAMP,
    node_window_rows BIGINT NOT NULL,
    gpu_hours_rows BIGINT NOT NULL,
    milliseconds BIGINT NOT NULL
);

COMMENT ON TABLE audit.attestation_refreshes IS
    'One row per cluster per run of refresh_attestation_coverage that rebuilt anything: which days of marts.attestation_node_windows and marts.attestation_gpu_hours it rebuilt and up to which collections; the next run starts from these horizons.';
COMMENT ON COLUMN audit.attestation_refreshes.refreshed_at IS 'When the refresh ran (UTC).';
COMMENT ON COLUMN audit.attestation_refreshes.cluster IS 'Cluster name as configured in annex.';
COMMENT ON COLUMN audit.attestation_refreshes.since IS 'The since day the caller asked to rebuild from; NULL for an incremental refresh.';
COMMENT ON COLUMN audit.attestation_refreshes.first_day IS 'First UTC day rebuilt.';
COMMENT ON COLUMN audit.attestation_refreshes.last_day IS 'Last UTC day rebuilt.';
COMMENT ON COLUMN audit.attestation_refreshes.days IS 'Days rebuilt (not necessarily contiguous).';
COMMENT ON COLUMN audit.attestation_refreshes.attestation_collections IS 'Attestation collections newer than the previous attestation_horizon.';
COMMENT ON COLUMN audit.attestation_refreshes.kubernetes_collections IS 'Kubernetes collections newer than the previous inventory_horizon.';
COMMENT ON COLUMN audit.attestation_refreshes.attestation_horizon IS 'started_at of the cluster''s latest successful attestation collection taken into account (UTC).';
COMMENT ON COLUMN audit.attestation_refreshes.inventory_horizon IS 'started_at of the cluster''s latest successful kubernetes collection taken into account (UTC): open allocations and node versions end there.';
COMMENT ON COLUMN audit.attestation_refreshes.node_window_rows IS 'Rows written to marts.attestation_node_windows.';
COMMENT ON COLUMN audit.attestation_refreshes.gpu_hours_rows IS 'Rows written to marts.attestation_gpu_hours.';
COMMENT ON COLUMN audit.attestation_refreshes.milliseconds IS 'Time the cluster''s refresh took.';

-- marts.attestation_status: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.attestation_status AS
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
COMMENT ON COLUMN marts.attestation_status.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.attestation_status.node_name IS
    'Node the evidence names.';
COMMENT ON COLUMN marts.attestation_status.subject IS
    'gpu:platform (NRAS overall token), gpu:<GPU UUID> (a detached token; ueid or submodule key when the UUID is unknown), cpu_tee or nvswitch.';
COMMENT ON COLUMN marts.attestation_status.subject_kind IS
    'gpu, cpu_tee or nvswitch.';
COMMENT ON COLUMN marts.attestation_status.provider IS
    'nvidia-nras, nvidia-local, azure-maa or intel-ita.';
COMMENT ON COLUMN marts.attestation_status.boot_id IS
    'Boot the latest record names.';
COMMENT ON COLUMN marts.attestation_status.gpu_uuid IS
    'GPU UUID (detached tokens).';
COMMENT ON COLUMN marts.attestation_status.device_ueid IS
    'Signed GPU identity (detached tokens).';
COMMENT ON COLUMN marts.attestation_status.verdict IS
    'pass, fail, error or unverifiable.';
COMMENT ON COLUMN marts.attestation_status.assurance_tier IS
    'verified, self_reported or none.';
COMMENT ON COLUMN marts.attestation_status.reasons IS
    'Reason codes of the latest record.';
COMMENT ON COLUMN marts.attestation_status.detail IS
    'Human explanation of the reasons (escape before display).';
COMMENT ON COLUMN marts.attestation_status.issued_at IS
    'iat of the latest record (UTC).';
COMMENT ON COLUMN marts.attestation_status.valid_until IS
    'End of its validity window before truncation (UTC): compare with the time of interest.';
COMMENT ON COLUMN marts.attestation_status.received_at IS
    'When annex received it (UTC).';
COMMENT ON COLUMN marts.attestation_status.record_id IS
    'The record (core.attestation_records).';
COMMENT ON COLUMN marts.attestation_status.node_in_inventory IS
    'Whether the node is in the current Kubernetes inventory (core.nodes); false: evidence for a node annex does not know.';

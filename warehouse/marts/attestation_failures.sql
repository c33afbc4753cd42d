-- marts.attestation_failures: re-created on every migrate from this file (warehouse/marts/README.md).
CREATE OR REPLACE VIEW marts.attestation_failures AS
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
COMMENT ON COLUMN marts.attestation_failures.cluster IS
    'Cluster name as configured in annex.';
COMMENT ON COLUMN marts.attestation_failures.day IS
    'UTC date annex received the records.';
COMMENT ON COLUMN marts.attestation_failures.verdict IS
    'fail, error or unverifiable.';
COMMENT ON COLUMN marts.attestation_failures.provider IS
    'nvidia-nras, nvidia-local, azure-maa or intel-ita.';
COMMENT ON COLUMN marts.attestation_failures.subject_kind IS
    'gpu, cpu_tee or nvswitch.';
COMMENT ON COLUMN marts.attestation_failures.reason IS
    'Reason code (e.g. expired, nonce_mismatch, replay, device_mismatch, self_reported); unspecified when a record carried none.';
COMMENT ON COLUMN marts.attestation_failures.records IS
    'Records with that reason.';
COMMENT ON COLUMN marts.attestation_failures.nodes IS
    'Distinct nodes among them.';
COMMENT ON COLUMN marts.attestation_failures.first_received_at IS
    'Earliest receipt among them (UTC).';
COMMENT ON COLUMN marts.attestation_failures.last_received_at IS
    'Latest receipt among them (UTC).';

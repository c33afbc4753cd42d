"""The Arrow schemas of the tables the attestation collector yields (its contract with the
warehouse, ``warehouse/models/attestation.py``).

One row of ``ATTESTATION_RECORDS`` per token: an NRAS result gives one ``overall`` row plus one
``detached`` row per GPU (``parent_record_id`` points at the overall row); an Azure Attestation
or Intel Trust Authority token gives one ``single`` row. Rows follow
``reference/attestation.md`` §6, except that times are naive UTC ``timestamp[us]`` (DESIGN §2)
and a few columns say where the token came from. Every token gets a row, whatever its verdict:
nothing is dropped. ``record_id`` is a UUID5 of (``token_sha256``, ``submod_key``), so reading
the same token twice gives the same row.
"""

from __future__ import annotations

import pyarrow as pa

TIMESTAMP = pa.timestamp("us")
"""Naive UTC."""

ATTESTATION_RECORDS = pa.schema(
    [
        ("record_id", pa.string()),  # uuid5(NAMESPACE, f"{token_sha256}/{submod_key or ''}")
        ("submission_id", pa.string()),  # the submission it arrived in (sha256 of its body)
        ("received_at", TIMESTAMP),  # when annex received it: the clock its time checks use
        ("verified_at", TIMESTAMP),  # collector clock at verification
        ("node_name", pa.string()),  # node-reported, unsigned
        ("boot_id", pa.string()),  # node-reported, unsigned
        ("subject_kind", pa.string()),  # 'gpu' | 'cpu_tee' | 'nvswitch'
        ("provider", pa.string()),  # 'nvidia-nras' | 'nvidia-local' | 'azure-maa' | 'intel-ita'
        ("token_role", pa.string()),  # 'overall' | 'detached' | 'single'
        ("parent_record_id", pa.string()),  # detached -> its overall row
        ("submod_key", pa.string()),  # 'GPU-0' (positional, not an identity)
        ("gpu_uuid", pa.string()),  # node-reported (the submission's index map), unsigned
        ("device_ueid", pa.string()),  # signed
        ("vm_id", pa.string()),  # x-ms-azurevm-vmid, else vm-configuration.vmUniqueId (signed)
        ("tee_type", pa.string()),  # 'sevsnpvm' | 'tdxvm' | 'sgx' (ITA) | NULL
        ("issuer", pa.string()),
        ("alg", pa.string()),
        ("kid", pa.string()),
        ("jti", pa.string()),
        ("token_sha256", pa.string()),  # hex SHA-256 of the exact compact JWS
        ("nonce", pa.string()),  # the token's nonce claim
        ("nonce_source", pa.string()),  # 'collector' (issued by annex) | 'attester' | NULL
        ("nonce_matched", pa.bool_()),
        ("freshness_proven", pa.bool_()),  # a collector nonce, unexpired, matched
        ("issued_at", TIMESTAMP),
        ("not_before", TIMESTAMP),
        ("expires_at", TIMESTAMP),
        ("valid_from", TIMESTAMP),  # max(nbf, iat)
        ("valid_until", TIMESTAMP),  # min(exp, iat + max_age[provider])
        ("signature_valid", pa.bool_()),
        ("chain_valid", pa.bool_()),
        ("assurance_tier", pa.string()),  # 'verified' | 'self_reported' | 'none'
        ("verdict", pa.string()),  # 'pass' | 'fail' | 'error' | 'unverifiable'
        ("reasons", pa.list_(pa.string())),  # reason codes; empty only for 'pass'
        ("detail", pa.string()),  # one human sentence per reason, '; '-joined
        ("rules_not_applicable", pa.list_(pa.string())),  # rules this platform cannot carry
        ("policy_id", pa.string()),
        ("policy_sha256", pa.string()),
        ("hw_model", pa.string()),
        ("driver_version", pa.string()),
        ("vbios_version", pa.string()),
        ("debug_enabled", pa.bool_()),
        ("secure_boot", pa.bool_()),
        ("measurement", pa.string()),  # launch measurement / MRTD / NULL
        ("tcb_status", pa.string()),
        ("claims", pa.string()),  # the payload as JSON text (sorted keys); NULL if unparsable
        ("raw_token_uri", pa.string()),  # where the exact token is archived
        ("verifier_name", pa.string()),
        ("verifier_version", pa.string()),
        ("jwks_sha256", pa.string()),  # the pinned key set used
        ("source_locator", pa.string()),  # file path / intake id of the submission
    ]
)

ATTESTATION_SUBMISSIONS = pa.schema(
    [
        ("submission_id", pa.string()),  # hex SHA-256 of the body as received
        ("source_locator", pa.string()),
        ("source_kind", pa.string()),  # 'intake' | 'file'
        ("node_name", pa.string()),
        ("boot_id", pa.string()),
        ("received_at", TIMESTAMP),
        ("collected_at", TIMESTAMP),  # the agent's own claim, unsigned
        ("nonce", pa.string()),  # the nonce the agent says it used
        ("nonce_source", pa.string()),  # 'collector' | 'attester' | NULL
        ("gpu_index_map", pa.map_(pa.string(), pa.string())),  # 'GPU-0' -> GPU UUID (unsigned)
        ("evidence_count", pa.int32()),
        ("token_count", pa.int32()),
        ("body_bytes", pa.int64()),
        ("archive_uri", pa.string()),  # where the body is kept after the collection commits
        ("agent", pa.string()),  # the agent's self-description (name/version), unsigned
    ]
)

REJECTED = pa.schema(
    [
        ("locator", pa.string()),
        ("reason_code", pa.string()),
        ("message", pa.string()),
        ("raw", pa.binary()),
    ]
)
"""A submission that is not a submission at all (not JSON, not the agent contract's shape,
too large): its tokens cannot be found, so it cannot get records; it is kept here."""

TABLES: dict[str, pa.Schema] = {
    "attestation_records": ATTESTATION_RECORDS,
    "attestation_submissions": ATTESTATION_SUBMISSIONS,
    "rejected": REJECTED,
}
"""Every table name ``collect_attestations`` yields, with its schema."""

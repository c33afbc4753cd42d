"""The verifier on the simulator's tokens: what passes (NRAS v3.0/v2.0, MAA SEV-SNP/TDX, ITA),
what is only self-reported (the local verifier), and every negative case N1..N16 of
reference/attestation.md §4 with the reason code it must produce."""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import orjson
import pytest
from cryptography.hazmat.primitives import serialization

from annex.settings import AttestationPolicy
from collectors.attestation import schema
from collectors.attestation.nonce import issue_nonce
from collectors.attestation.verify import (
    ATTESTATION_NAMESPACE,
    REASON_CODES,
    Submission,
    Verification,
)
from simulator.attestation import tokens
from simulator.attestation.issuers import LOCAL_ISSUER, MAA_ISSUER, NRAS_ISSUER
from tests.helpers.attestation_trust import (
    ISSUED,
    NONCE,
    NONCE_KEY,
    RECEIVED,
    Trust,
    b64url,
    body,
    epoch,
    gpus,
    ita_evidence,
    maa_evidence,
    make_trust,
    nras_evidence,
    segments,
    submit,
    unsigned,
)


@pytest.fixture(scope="module")
def trust(tmp_path_factory: pytest.TempPathFactory) -> Trust:
    return make_trust(tmp_path_factory.mktemp("trust"))


def verify(trust: Trust, evidence: list[dict], **options) -> Verification:
    received_at = options.pop("received_at", RECEIVED)
    verifier = options.pop("verifier", None) or trust.verifier()
    result = verifier.verify(submit(body(evidence, **options), received_at=received_at))
    assert result.rejection is None, result.rejection
    return result


def only(result: Verification) -> dict:
    (record,) = result.records
    return record


def by_key(result: Verification) -> dict[str | None, dict]:
    return {record["submod_key"]: record for record in result.records}


def assert_rows_fit_schema(result: Verification) -> None:
    """Rows convert to the declared Arrow schemas (the collector's contract)."""
    import pyarrow as pa

    for row in result.records:
        assert set(row) == set(schema.ATTESTATION_RECORDS.names)
        assert set(row["reasons"]) <= REASON_CODES
    pa.RecordBatch.from_pylist(result.records, schema=schema.ATTESTATION_RECORDS)
    if result.submission is not None:
        assert set(result.submission) == set(schema.ATTESTATION_SUBMISSIONS.names)
        pa.RecordBatch.from_pylist([result.submission], schema=schema.ATTESTATION_SUBMISSIONS)
    if result.rejection is not None:
        pa.RecordBatch.from_pylist([result.rejection], schema=schema.REJECTED)


# ---------------------------------------------------------------------------------------------
# What passes


@pytest.mark.parametrize("version", ["3.0", "2.0"])
def test_nras_envelope_of_eight_gpus_passes(trust: Trust, version: str) -> None:
    evidence = nras_evidence(trust, count=8, version=version)
    result = verify(trust, [evidence])
    assert_rows_fit_schema(result)
    records = by_key(result)
    assert list(records) == [None, *(f"GPU-{i}" for i in range(8))]
    overall = records[None]
    jwks = (trust.folder / "nras.jwks.json").read_bytes()
    for key, record in records.items():
        assert record["verdict"] == "pass", record["detail"]
        assert record["assurance_tier"] == "verified"
        assert record["reasons"] == []
        assert record["detail"] is None
        assert record["signature_valid"] is True and record["chain_valid"] is True
        assert record["issuer"] == NRAS_ISSUER and record["alg"] == "ES384"
        assert record["jwks_sha256"] == hashlib.sha256(jwks).hexdigest()
        assert record["nonce"] == NONCE and record["nonce_matched"] is True
        assert record["nonce_source"] == "attester" and record["freshness_proven"] is False
        assert record["subject_kind"] == "gpu" and record["provider"] == "nvidia-nras"
        assert record["token_role"] == ("overall" if key is None else "detached")
        assert record["record_id"] == str(
            uuid.uuid5(ATTESTATION_NAMESPACE, f"{record['token_sha256']}/{key or ''}")
        )
        assert record["issued_at"] == ISSUED
        assert record["not_before"] == ISSUED - timedelta(seconds=120)
        assert record["expires_at"] == ISSUED + timedelta(seconds=3600)
        assert record["valid_from"] == ISSUED
        assert record["valid_until"] == ISSUED + timedelta(seconds=3600)
        assert json.loads(record["claims"])["iss"] == NRAS_ISSUER
        assert (
            record["claims"]
            == orjson.dumps(json.loads(record["claims"]), option=orjson.OPT_SORT_KEYS).decode()
        )
        assert record["policy_sha256"] == trust.settings.policy.sha256()
    devices = gpus(8)
    for index, (gpu_uuid, ueid) in enumerate(devices):
        record = records[f"GPU-{index}"]
        assert record["parent_record_id"] == overall["record_id"]
        assert record["gpu_uuid"] == gpu_uuid
        assert record["device_ueid"] == ueid
        assert record["hw_model"] == tokens.HW_MODEL
        assert record["driver_version"] == tokens.DRIVER_VERSION
        assert record["vbios_version"] == tokens.VBIOS_VERSION
        assert record["debug_enabled"] is False and record["secure_boot"] is True
        expected_digest = hashlib.sha256(evidence["result"][1][f"GPU-{index}"].encode()).hexdigest()
        assert record["token_sha256"] == expected_digest
    submission = result.submission
    assert submission["node_name"] == "gpu-node-1" and submission["boot_id"] == "boot-1"
    assert submission["token_count"] == 9 and submission["evidence_count"] == 1
    assert submission["gpu_index_map"] == [(f"GPU-{i}", u) for i, (u, _) in enumerate(devices)]
    assert submission["collected_at"] == ISSUED and submission["received_at"] == RECEIVED
    assert submission["nonce_source"] == "attester"


@pytest.mark.parametrize("tee", ["sevsnpvm", "tdxvm"])
def test_maa_token_passes(trust: Trust, tee: str) -> None:
    vm_id = "5F2E6A1B-0C3D-4E5F-8A9B-0C1D2E3F4A5B"
    record = only(verify(trust, [maa_evidence(trust, tee=tee, vm_id=vm_id)]))
    assert record["verdict"] == "pass", record["detail"]
    assert record["assurance_tier"] == "verified"
    assert (record["subject_kind"], record["token_role"]) == ("cpu_tee", "single")
    assert record["alg"] == "RS256" and record["chain_valid"] is True
    assert record["vm_id"] == vm_id and record["tee_type"] == tee
    assert record["secure_boot"] is True and record["debug_enabled"] is False
    expected = (
        tokens.GOLDEN_SEVSNP_LAUNCH_MEASUREMENT if tee == "sevsnpvm" else tokens.GOLDEN_TDX_MRTD
    )
    assert record["measurement"] == expected
    # an 8 h token counts for max_age_seconds (3600) only
    assert record["expires_at"] == ISSUED + timedelta(hours=8)
    assert record["valid_until"] == ISSUED + timedelta(hours=1)


def test_ita_token_passes(trust: Trust) -> None:
    record = only(verify(trust, [ita_evidence(trust)]))
    assert record["verdict"] == "pass", record["detail"]
    assert record["alg"] == "PS384" and record["provider"] == "intel-ita"
    assert record["tee_type"] == "tdxvm" and record["tcb_status"] == "UpToDate"
    assert record["measurement"] == tokens.GOLDEN_TDX_MRTD
    assert record["nonce"] == NONCE and record["nonce_matched"] is True


def test_gpu_and_cvm_evidence_in_one_submission(trust: Trust) -> None:
    evidence = [nras_evidence(trust, count=2, prefix="m"), maa_evidence(trust, vm_id="VM-MIX")]
    result = verify(trust, evidence, node="gpu-node-mix")
    assert [r["verdict"] for r in result.records] == ["pass"] * 4
    assert result.submission["evidence_count"] == 2 and result.submission["token_count"] == 4


def test_raw_token_uri_points_into_the_archive(trust: Trust) -> None:
    evidence = [nras_evidence(trust, count=1, prefix="u"), ita_evidence(trust)]
    raw = body(evidence, node="gpu-node-uri")
    result = trust.verifier().verify(submit(raw, archive="archive/2026-11-02/x.json"))
    uris = [r["raw_token_uri"] for r in result.records]
    assert uris == [
        "archive/2026-11-02/x.json#0",
        "archive/2026-11-02/x.json#0/GPU-0",
        "archive/2026-11-02/x.json#1",
    ]
    assert result.submission["archive_uri"] == "archive/2026-11-02/x.json"


def test_collector_nonce_proves_freshness(trust: Trust) -> None:
    nonce, _ = issue_nonce(NONCE_KEY, "gpu-node-9", now=ISSUED, ttl_seconds=600)
    verifier = trust.verifier(nonce_key=NONCE_KEY)
    evidence = [nras_evidence(trust, count=1, nonce=nonce), maa_evidence(trust, nonce=nonce)]
    result = verify(trust, evidence, node="gpu-node-9", nonce=nonce, verifier=verifier)
    for record in result.records:
        assert record["verdict"] == "pass", record["detail"]
        assert record["nonce_source"] == "collector"
        assert record["freshness_proven"] is True
    assert result.submission["nonce_source"] == "collector"


def test_same_submission_twice_gives_same_rows_and_no_replay(trust: Trust) -> None:
    raw = body([nras_evidence(trust, count=2, prefix="t")], node="gpu-node-twice")
    verifier = trust.verifier()
    first = verifier.verify(submit(raw))
    second = verifier.verify(submit(raw))
    assert [r["record_id"] for r in first.records] == [r["record_id"] for r in second.records]
    assert {r["verdict"] for r in second.records} == {"pass"}


# ---------------------------------------------------------------------------------------------
# N14: the local verifier is self-reported, never passes


def test_n14_local_verifier_tokens_are_self_reported(trust: Trust) -> None:
    evidence = nras_evidence(trust, count=2, provider="nvidia-local")
    result = verify(trust, [evidence])
    assert_rows_fit_schema(result)
    for record in result.records:
        assert record["verdict"] == "unverifiable"
        assert record["assurance_tier"] == "self_reported"
        assert record["reasons"] == ["self_reported"]
        assert record["signature_valid"] is True  # decoded with the configured secret
        assert record["issuer"] == LOCAL_ISSUER and record["alg"] == "HS256"
    assert by_key(result)["GPU-1"]["device_ueid"] == gpus(2)[1][1]


def test_n14_local_tokens_without_a_secret_are_decoded_unverified(trust: Trust) -> None:
    trust_without = replace(trust, env={})
    result = verify(trust_without, [nras_evidence(trust, count=1, provider="nvidia-local")])
    for record in result.records:
        assert record["verdict"] == "unverifiable" and record["signature_valid"] is None
        assert record["claims"] is not None


def test_n14_local_token_with_a_wrong_secret_fails(trust: Trust) -> None:
    wrong = replace(trust, env={"ANNEX_NVIDIA_LOCAL_SECRET": "not the secret"})
    result = verify(wrong, [nras_evidence(trust, count=1, provider="nvidia-local")])
    overall = by_key(result)[None]
    assert overall["verdict"] == "fail" and overall["assurance_tier"] == "none"
    assert overall["reasons"] == ["self_reported", "bad_signature"]


def test_n14_hs256_token_offered_as_nras_is_refused(trust: Trust) -> None:
    evidence = nras_evidence(trust, count=1, provider="nvidia-local")
    evidence["provider"] = "nvidia-nras"
    overall = by_key(verify(trust, [evidence]))[None]
    assert overall["verdict"] == "fail"
    assert "alg_not_allowed" in overall["reasons"] or "bad_issuer" in overall["reasons"]
    assert overall["assurance_tier"] == "none"


# ---------------------------------------------------------------------------------------------
# N1, N2: algorithms


def _maa_token(trust: Trust, **options) -> str:
    return maa_evidence(trust, **options)["token"]


def test_n1_alg_none_is_refused(trust: Trust) -> None:
    header, payload, _ = segments(_maa_token(trust))
    forged = unsigned({**header, "alg": "none"}, payload)
    record = only(verify(trust, [tokens.cvm_evidence("azure-maa", forged)]))
    assert record["verdict"] == "fail" and record["reasons"] == ["alg_not_allowed"]


def test_n1_signature_removed_is_refused(trust: Trust) -> None:
    token = _maa_token(trust)
    stripped = token.rsplit(".", 1)[0] + "."
    record = only(verify(trust, [tokens.cvm_evidence("azure-maa", stripped)]))
    assert record["reasons"] == ["alg_not_allowed"]


@pytest.mark.parametrize("as_jwk", [False, True])
def test_n2_hs256_keyed_with_the_public_key_is_refused(trust: Trust, as_jwk: bool) -> None:
    import hmac

    header, payload, _ = segments(_maa_token(trust))
    public = trust.issuers.maa.public_key()
    if as_jwk:
        secret = orjson.dumps(trust.issuers.maa.jwks()["keys"][0])
    else:
        secret = public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    head = b64url(orjson.dumps({**header, "alg": "HS256"}))
    body_segment = b64url(orjson.dumps(payload))
    signature = hmac.new(secret, f"{head}.{body_segment}".encode(), hashlib.sha256).digest()
    forged = f"{head}.{body_segment}.{b64url(signature)}"
    record = only(verify(trust, [tokens.cvm_evidence("azure-maa", forged)]))
    assert record["verdict"] == "fail" and record["reasons"] == ["alg_not_allowed"]


def test_n2_another_asymmetric_alg_is_refused(trust: Trust) -> None:
    header, payload, signature = segments(_maa_token(trust))
    token = ".".join(
        [b64url(orjson.dumps({**header, "alg": "PS256"})), b64url(orjson.dumps(payload)), signature]
    )
    assert only(verify(trust, [tokens.cvm_evidence("azure-maa", token)]))["reasons"] == [
        "alg_not_allowed"
    ]


# ---------------------------------------------------------------------------------------------
# N3: keys come only from configuration


def test_n3_kid_not_pinned_with_attacker_jku_is_unknown_kid(trust: Trust) -> None:
    claims = segments(_maa_token(trust))[1]
    token = trust.issuers.attacker.sign(
        claims,
        header={
            "alg": "ES384",
            "kid": "attacker-key",
            "jku": "https://attacker.example/jwks.json",
            "x5u": "https://attacker.example/cert.pem",
        },
    )
    evidence = nras_evidence(trust, count=1, prefix="k")
    evidence["result"][0][1] = token
    overall = by_key(verify(trust, [evidence], node="gpu-node-k"))[None]
    assert overall["reasons"] == ["unknown_kid"]
    assert overall["verdict"] == "fail" and overall["signature_valid"] is None


def test_n3_token_without_kid_is_unknown_kid(trust: Trust) -> None:
    token = trust.issuers.ita.sign(segments(ita_evidence(trust)["token"])[1], header={"kid": None})
    record = only(verify(trust, [tokens.cvm_evidence("intel-ita", token)], node="n3-nokid"))
    assert record["reasons"] == ["unknown_kid"]


# ---------------------------------------------------------------------------------------------
# N4, N15: time


def test_n4_expired_token(trust: Trust) -> None:
    record = only(verify(trust, [ita_evidence(trust, fault="expired")], node="n4-expired"))
    assert record["verdict"] == "fail" and record["reasons"] == ["expired"]


def test_n4_expired_nras_fails_every_row(trust: Trust) -> None:
    result = verify(trust, [nras_evidence(trust, count=2, fault="expired")], node="n4-nras")
    records = by_key(result)
    assert records[None]["reasons"] == ["expired"]
    assert records["GPU-1"]["reasons"] == ["expired", "parent_failed"]


def test_n4_token_from_the_future_is_not_yet_valid(trust: Trust) -> None:
    evidence = ita_evidence(trust, issued_at=RECEIVED + timedelta(minutes=10))
    record = only(verify(trust, [evidence], node="n4-future"))
    assert record["reasons"] == ["not_yet_valid"]


def test_n4_expiry_within_leeway_still_passes(trust: Trust) -> None:
    evidence = ita_evidence(trust, issued_at=RECEIVED - timedelta(seconds=3600 + 30))
    record = only(verify(trust, [evidence], node="n4-leeway"))
    assert record["verdict"] == "pass", record["detail"]


@pytest.mark.parametrize(("ahead", "reasons"), [(30, []), (300, ["not_yet_valid"])])
def test_n15_clock_skew(trust: Trust, ahead: int, reasons: list[str]) -> None:
    """iat 30 s ahead of annex's clock with 60 s leeway passes; 5 min ahead does not."""
    assert trust.settings.leeway_seconds == 60
    evidence = nras_evidence(trust, count=1, issued_at=RECEIVED + timedelta(seconds=ahead))
    result = verify(trust, [evidence], node=f"n15-{ahead}")
    for record in result.records:
        expected = (
            reasons
            if record["token_role"] == "overall"
            else reasons + (["parent_failed"] if reasons else [])
        )
        assert record["reasons"] == expected
        assert record["verdict"] == ("pass" if not reasons else "fail")


def test_n15_cvm_token_skew_both_directions(trust: Trust) -> None:
    ahead = only(verify(trust, [ita_evidence(trust, issued_at=RECEIVED + timedelta(seconds=30))]))
    assert ahead["verdict"] == "pass"
    far = only(
        verify(trust, [ita_evidence(trust, issued_at=RECEIVED + timedelta(minutes=5))], node="x")
    )
    assert far["reasons"] == ["not_yet_valid"]


# ---------------------------------------------------------------------------------------------
# N5: issuer


def test_n5_nras_staging_token_in_prod_is_bad_issuer(trust: Trust) -> None:
    result = verify(trust, [nras_evidence(trust, count=1, fault="staging_issuer")], node="n5")
    assert by_key(result)[None]["reasons"] == ["bad_issuer"]
    assert by_key(result)["GPU-0"]["reasons"] == ["bad_issuer", "parent_failed"]


@pytest.mark.parametrize(
    "wrong",
    [
        MAA_ISSUER + "/",
        MAA_ISSUER[:-3],
        MAA_ISSUER.upper(),
        MAA_ISSUER.removeprefix("https://"),
        MAA_ISSUER + ".attacker.example",
    ],
)
def test_n5_prefix_or_substring_of_the_issuer_is_bad_issuer(trust: Trust, wrong: str) -> None:
    claims = segments(_maa_token(trust))[1]
    token = trust.issuers.maa.sign({**claims, "iss": wrong})  # valid signature, wrong iss
    record = only(verify(trust, [tokens.cvm_evidence("azure-maa", token)], node="n5-" + wrong))
    assert record["reasons"] == ["bad_issuer"]
    assert record["signature_valid"] is True


def test_unconfigured_provider_is_unknown_issuer(trust: Trust) -> None:
    without_ita = replace(
        trust,
        settings=replace(
            trust.settings, issuers=tuple(i for i in trust.settings.issuers if i.name != "ita")
        ),
    )
    record = only(verify(without_ita, [ita_evidence(trust)]))
    assert record["verdict"] == "fail" and record["reasons"] == ["unknown_issuer"]


# ---------------------------------------------------------------------------------------------
# N6: nonces and replay


def test_n6_token_nonce_differs_from_the_submission(trust: Trust) -> None:
    result = verify(trust, [maa_evidence(trust, fault="nonce_mismatch")], node="n6")
    record = only(result)
    assert record["reasons"] == ["nonce_mismatch"] and record["nonce_matched"] is False


def test_n6_nras_nonce_mismatch(trust: Trust) -> None:
    result = verify(trust, [nras_evidence(trust, count=1, fault="nonce_mismatch")], node="n6n")
    assert by_key(result)[None]["reasons"] == ["nonce_mismatch"]


def test_n6_nonce_issued_to_another_node_is_a_mismatch(trust: Trust) -> None:
    nonce, _ = issue_nonce(NONCE_KEY, "gpu-node-A", now=ISSUED, ttl_seconds=600)
    verifier = trust.verifier(nonce_key=NONCE_KEY)
    evidence = [ita_evidence(trust, nonce=nonce)]
    result = verify(trust, evidence, node="gpu-node-B", nonce=nonce, verifier=verifier)
    record = only(result)
    assert record["reasons"] == ["nonce_mismatch"]
    assert record["nonce_matched"] is True  # the token echoes it; annex did not issue it to B
    assert result.submission["nonce_source"] is None


def test_n6_nonce_expired_before_the_token_was_issued(trust: Trust) -> None:
    nonce, _ = issue_nonce(
        NONCE_KEY, "gpu-node-E", now=ISSUED - timedelta(hours=1), ttl_seconds=600
    )
    verifier = trust.verifier(nonce_key=NONCE_KEY)
    record = only(
        verify(trust, [ita_evidence(trust, nonce=nonce)], node="gpu-node-E", nonce=nonce,
               verifier=verifier)
    )  # fmt: skip
    assert record["reasons"] == ["nonce_expired"] and record["freshness_proven"] is False


def test_n6_same_token_for_another_node_is_a_replay(trust: Trust) -> None:
    verifier = trust.verifier()
    evidence = [maa_evidence(trust, vm_id="VM-REPLAY")]
    first = verify(trust, evidence, node="gpu-node-1", verifier=verifier)
    assert only(first)["verdict"] == "pass"
    second = verify(trust, evidence, node="gpu-node-2", verifier=verifier)
    assert only(second)["reasons"] == ["replay"]


def test_n6_duplicate_jti_in_another_token_is_a_replay(trust: Trust) -> None:
    verifier = trust.verifier()
    token = _maa_token(trust, vm_id="VM-JTI")
    # RS256 is deterministic: another token with the same jti needs another claim
    again = trust.issuers.maa.sign({**segments(token)[1], "x-annex-test": 1})
    assert again != token
    verify(trust, [tokens.cvm_evidence("azure-maa", token)], node="a", verifier=verifier)
    second = verify(trust, [tokens.cvm_evidence("azure-maa", again)], node="b", verifier=verifier)
    assert only(second)["reasons"] == ["replay"]


# ---------------------------------------------------------------------------------------------
# N7, N8, N16: appraisal


def test_n7_n16_gpu_debug_enabled_fails_the_gpu_and_the_overall(trust: Trust) -> None:
    result = verify(trust, [nras_evidence(trust, count=2, fault="debug_enabled")], node="n7")
    records = by_key(result)
    assert records["GPU-0"]["reasons"] == ["debug_enabled"]
    assert records["GPU-0"]["debug_enabled"] is True
    overall = records[None]
    assert overall["reasons"] == ["policy_fail"]  # NRAS said true; annex's appraisal says no
    assert "GPU-0" in overall["detail"]
    assert records["GPU-1"]["verdict"] == "pass"  # the overall's appraisal does not cascade


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda t: maa_evidence(t, fault="debug_enabled"), "maa-sevsnp"),
        (lambda t: maa_evidence(t, fault="debug_enabled", tee="tdxvm"), "maa-tdx"),
        (lambda t: ita_evidence(t, fault="debug_enabled"), "ita"),
    ],
)
def test_n7_cvm_debug_enabled(trust: Trust, make, name: str) -> None:
    record = only(verify(trust, [make(trust)], node=f"n7-{name}"))
    assert record["reasons"] == ["debug_enabled"] and record["debug_enabled"] is True


def test_n7_debug_allowed_by_policy(trust: Trust) -> None:
    verifier = trust.verifier(policy=replace(trust.settings.policy, allow_debug=True))
    evidence = [ita_evidence(trust, fault="debug_enabled")]
    assert only(verify(trust, evidence, node="n7-ok", verifier=verifier))["verdict"] == "pass"


def test_n8_gpu_measurement_failure(trust: Trust) -> None:
    result = verify(trust, [nras_evidence(trust, count=1, fault="measurement_mismatch")])
    records = by_key(result)
    assert records["GPU-0"]["reasons"] == ["measurement_mismatch", "parent_failed"]
    assert records[None]["reasons"] == ["policy_fail"]  # x-nvidia-overall-att-result false


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda t: maa_evidence(t, fault="measurement_mismatch"), "maa-launch"),
        (lambda t: maa_evidence(t, fault="measurement_mismatch", tee="tdxvm"), "maa-mrtd"),
        (lambda t: ita_evidence(t, fault="measurement_mismatch"), "ita-mrtd"),
    ],
)
def test_n8_cvm_measurement_not_allowlisted(trust: Trust, make, name: str) -> None:
    record = only(verify(trust, [make(trust)], node=f"n8-{name}"))
    assert record["reasons"] == ["measurement_mismatch"]


@pytest.mark.parametrize("field", ["gpu_driver_versions", "gpu_vbios_versions"])
def test_n8_driver_or_vbios_not_allowlisted(trust: Trust, field: str) -> None:
    verifier = trust.verifier(policy=replace(trust.settings.policy, **{field: ("1.2.3",)}))
    result = verify(trust, [nras_evidence(trust, count=1)], node=f"n8-{field}", verifier=verifier)
    assert by_key(result)["GPU-0"]["reasons"] == ["measurement_mismatch"]
    assert by_key(result)[None]["reasons"] == ["policy_fail"]


def test_default_policy_accepts_any_driver_but_not_an_unknown_claims_version(trust: Trust) -> None:
    verifier = trust.verifier(policy=AttestationPolicy(nvidia_claims_versions=("3.0",)))
    ok = verify(trust, [nras_evidence(trust, count=1)], node="v3", verifier=verifier)
    assert {r["verdict"] for r in ok.records} == {"pass"}
    old = verify(
        trust, [nras_evidence(trust, count=1, version="2.0")], node="v2", verifier=verifier
    )
    assert by_key(old)[None]["reasons"] == ["policy_fail"]


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda t: maa_evidence(t, fault="not_compliant"), "maa"),
        (lambda t: ita_evidence(t, fault="tcb_out_of_date"), "ita"),
    ],
)
def test_cvm_compliance_and_tcb_status_are_policy(trust: Trust, make, name: str) -> None:
    assert only(verify(trust, [make(trust)], node=f"p-{name}"))["reasons"] == ["policy_fail"]


def test_n16_revoked_gpu_report_certificate_is_policy_fail(trust: Trust) -> None:
    result = verify(trust, [nras_evidence(trust, count=2, fault="ocsp_revoked")], node="n16")
    records = by_key(result)
    assert records["GPU-0"]["reasons"] == ["policy_fail"]
    assert "revoked" in records["GPU-0"]["detail"]
    assert records[None]["reasons"] == ["policy_fail"]
    assert records["GPU-1"]["verdict"] == "pass"


def test_n16_v2_revoked_report_chain_is_policy_fail(trust: Trust) -> None:
    evidence = nras_evidence(trust, count=1, fault="ocsp_revoked", version="2.0")
    records = by_key(verify(trust, [evidence], node="n16-v2"))
    assert records["GPU-0"]["reasons"] == ["policy_fail"]
    assert records[None]["reasons"] == ["policy_fail"]


# ---------------------------------------------------------------------------------------------
# N9: devices and submodule digests


def test_n9_one_device_in_two_submods_is_a_device_mismatch(trust: Trust) -> None:
    result = verify(trust, [nras_evidence(trust, count=3, fault="wrong_gpu")], node="n9")
    records = by_key(result)
    assert "device_mismatch" in records["GPU-0"]["reasons"]
    assert "device_mismatch" in records["GPU-2"]["reasons"]  # the device it duplicates
    assert records["GPU-1"]["verdict"] == "pass"
    assert records[None]["reasons"] == ["policy_fail"]


def test_n9_submod_digest_differs(trust: Trust) -> None:
    evidence = nras_evidence(trust, count=2, fault="submod_digest_mismatch")
    records = by_key(verify(trust, [evidence], node="n9-digest"))
    assert records["GPU-0"]["reasons"] == ["submod_digest_mismatch"]
    assert records["GPU-1"]["verdict"] == "pass"
    assert records[None]["reasons"] == ["policy_fail"]


def test_n9_submod_swapped_between_envelopes(trust: Trust) -> None:
    mine = nras_evidence(trust, count=2, prefix="s")
    other = nras_evidence(trust, count=2, prefix="o")
    mine["result"][1]["GPU-1"] = other["result"][1]["GPU-1"]
    records = by_key(verify(trust, [mine], node="n9-swap"))
    assert "submod_digest_mismatch" in records["GPU-1"]["reasons"]
    assert records["GPU-0"]["verdict"] == "pass"


def test_n9_gpu_map_and_result_disagree(trust: Trust) -> None:
    evidence = nras_evidence(trust, count=2, prefix="g")
    del evidence["gpus"]["GPU-1"]
    records = by_key(verify(trust, [evidence], node="n9-map"))
    assert records["GPU-1"]["reasons"][0] == "device_mismatch"
    assert records["GPU-1"]["gpu_uuid"] is None
    assert "device_mismatch" in records[None]["reasons"]
    assert "parent_failed" in records["GPU-0"]["reasons"]


def test_n9_detached_token_missing_from_result(trust: Trust) -> None:
    evidence = nras_evidence(trust, count=2, prefix="d")
    del evidence["result"][1]["GPU-1"]
    del evidence["gpus"]["GPU-1"]
    records = by_key(verify(trust, [evidence], node="n9-missing"))
    assert records[None]["reasons"] == ["submod_digest_mismatch"]
    assert records["GPU-0"]["reasons"] == ["parent_failed"]


# ---------------------------------------------------------------------------------------------
# N10, N11: shape and size


def _token_record(trust: Trust, token: str, node: str = "n10") -> dict:
    return only(verify(trust, [tokens.cvm_evidence("intel-ita", token)], node=node))


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[: len(t) // 2],  # truncated
        lambda t: t.rsplit(".", 1)[0],  # two segments
        lambda t: t + ".abc",  # four segments
        lambda t: t.replace(".", "=.", 1),  # padding
        lambda t: t.replace(".", "+.", 1),  # standard base64 alphabet
        lambda t: "." + t.split(".", 1)[1],  # empty header
        lambda t: t[:10] + "é" + t[11:],  # not ASCII
        lambda t: t[:10] + " " + t[11:],
    ],
    ids=["truncated", "2-segments", "4-segments", "padding", "plus", "empty-header", "utf8", "sp"],
)
def test_n10_malformed_compact_serialisation(trust: Trust, mangle) -> None:
    record = _token_record(trust, mangle(ita_evidence(trust)["token"]))
    assert record["reasons"] == ["malformed"] and record["verdict"] == "fail"
    assert record["claims"] is None or record["reasons"] == ["malformed"]


def test_n10_non_canonical_base64url_is_malformed(trust: Trust) -> None:
    token = ita_evidence(trust)["token"]  # PS384: a 256-byte signature, 342 chars, 4 spare bits
    head, payload, signature = token.split(".")
    assert len(signature) % 4 == 2
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(signature[-1])
    alias = signature[:-1] + alphabet[last | 1]  # decodes to the same bytes
    assert alias != signature
    record = _token_record(trust, f"{head}.{payload}.{alias}")
    assert record["reasons"] == ["malformed"]
    assert "canonical" in record["detail"]


@pytest.mark.parametrize(
    "payload_bytes",
    [
        b'{"iss": "a", "iss": "b"}',  # duplicate member
        b'{"a": {"x": 1, "x": 2}}',  # duplicate member, nested
        b"[1, 2]",  # not an object
        b'{"exp": NaN}',
        b'{"a": 1',  # truncated JSON
        b'{"a": "\\ud800"}',  # lone surrogate
        b"\xff\xfe{}",  # not UTF-8
    ],
)
def test_n10_bad_json_in_a_segment_is_malformed(trust: Trust, payload_bytes: bytes) -> None:
    head, _, signature = ita_evidence(trust)["token"].split(".")
    record = _token_record(trust, f"{head}.{b64url(payload_bytes)}.{signature}")
    assert record["reasons"] == ["malformed"] and record["verdict"] == "fail"


def test_n10_duplicate_alg_in_the_header_is_malformed(trust: Trust) -> None:
    _, payload, signature = ita_evidence(trust)["token"].split(".")
    head = b64url(b'{"alg":"PS384","alg":"none","kid":"x"}')
    assert _token_record(trust, f"{head}.{payload}.{signature}")["reasons"] == ["malformed"]


def test_n10_missing_exp_is_malformed(trust: Trust) -> None:
    claims = segments(ita_evidence(trust)["token"])[1]
    del claims["exp"]
    record = _token_record(trust, trust.issuers.ita.sign(claims), node="n10-exp")
    assert record["reasons"] == ["malformed"]


def test_n11_oversized_token_is_too_large(trust: Trust) -> None:
    claims = segments(ita_evidence(trust)["token"])[1]
    token = trust.issuers.ita.sign({**claims, "padding": "x" * (70 * 1024)})
    record = _token_record(trust, token, node="n11")
    assert record["reasons"] == ["too_large"] and record["claims"] is None


def test_n11_jwe_is_refused(trust: Trust) -> None:
    jwe = ".".join(b64url(part) for part in (b'{"alg":"RSA-OAEP","enc":"A256GCM"}', b"k", b"iv"))
    jwe += "." + b64url(b"ciphertext") + "." + b64url(b"tag")
    assert _token_record(trust, jwe)["reasons"] == ["jwe_rejected"]


def test_n11_three_segment_token_naming_enc_is_refused(trust: Trust) -> None:
    header, payload, _ = segments(ita_evidence(trust)["token"])
    token = unsigned({**header, "enc": "A256GCM", "zip": "DEF"}, payload, b"x" * 256)
    assert _token_record(trust, token)["reasons"] == ["jwe_rejected"]


def test_n11_oversized_submission_is_rejected(trust: Trust) -> None:
    raw = body([ita_evidence(trust)])
    padded = raw[:-1] + b',"padding":"' + b"x" * (1 << 20) + b'"}'
    result = trust.verifier().verify(submit(padded))
    assert result.submission is None and result.records == []
    assert result.rejection["reason_code"] == "too_large"
    assert len(result.rejection["raw"]) == 64 * 1024


def test_n11_more_than_sixteen_submods_is_rejected(trust: Trust) -> None:
    evidence = nras_evidence(trust, count=17, prefix="x")
    result = trust.verifier().verify(submit(body([evidence])))
    assert result.rejection["reason_code"] == "too_large"
    assert "17 detached tokens" in result.rejection["message"]


def test_n11_more_than_four_x5c_certificates_is_too_large(trust: Trust) -> None:
    import base64

    claims = segments(ita_evidence(trust)["token"])[1]
    pem = trust.issuers.ita.chain_pem()
    from cryptography import x509

    certs = [
        base64.b64encode(c.public_bytes(serialization.Encoding.DER)).decode()
        for c in x509.load_pem_x509_certificates(pem)
    ]
    token = trust.issuers.ita.sign(claims, header={"x5c": (certs * 3)[:5]})
    record = _token_record(trust, token, node="n11-x5c")
    assert record["reasons"] == ["too_large"]


# ---------------------------------------------------------------------------------------------
# N12, N13: chains and crit


def test_n12_revoked_intermediate_is_untrusted(trust: Trust) -> None:
    record = only(verify(trust, [ita_evidence(trust, fault="revoked_certificate")], node="n12"))
    assert record["reasons"] == ["untrusted_chain"]
    assert record["signature_valid"] is True and record["chain_valid"] is False
    assert record["assurance_tier"] == "none"


def test_n12_revoked_nras_key_fails_the_envelope(trust: Trust) -> None:
    evidence = nras_evidence(trust, count=1, fault="revoked_certificate")
    records = by_key(verify(trust, [evidence], node="n12-nras"))
    assert records[None]["reasons"] == ["untrusted_chain"]
    assert records["GPU-0"]["reasons"] == ["untrusted_chain", "parent_failed"]


def test_n12_chain_not_rooted_in_the_configured_anchor(tmp_path: Path, trust: Trust) -> None:
    (tmp_path / "other-root.pem").write_bytes(trust.issuers.attacker.root_pem())
    swapped = tuple(
        replace(i, roots_file=tmp_path / "other-root.pem") if i.name == "ita" else i
        for i in trust.settings.issuers
    )
    verifier = trust.verifier(issuers=swapped)
    record = only(verify(trust, [ita_evidence(trust)], node="n12-root", verifier=verifier))
    assert record["reasons"] == ["untrusted_chain"]
    assert "configured root" in record["detail"]


def test_n12_x5c_without_configured_roots_is_untrusted(trust: Trust) -> None:
    no_roots = tuple(
        replace(i, roots_file=None) if i.name == "maa" else i for i in trust.settings.issuers
    )
    verifier = trust.verifier(issuers=no_roots)
    record = only(verify(trust, [maa_evidence(trust)], node="n12-none", verifier=verifier))
    assert record["reasons"] == ["untrusted_chain"]


def test_n12_header_chain_of_another_key_is_untrusted(trust: Trust) -> None:
    import base64

    from cryptography import x509

    claims = segments(ita_evidence(trust)["token"])[1]
    foreign = [
        base64.b64encode(c.public_bytes(serialization.Encoding.DER)).decode()
        for c in x509.load_pem_x509_certificates(trust.issuers.maa.chain_pem())
    ]
    token = trust.issuers.ita.sign(claims, header={"x5c": foreign})
    record = _token_record(trust, token, node="n12-foreign")
    assert record["reasons"] == ["untrusted_chain"]


def test_n13_crit_header_is_unsupported(trust: Trust) -> None:
    claims = segments(ita_evidence(trust)["token"])[1]
    token = trust.issuers.ita.sign(claims, header={"crit": ["x-annex"], "x-annex": True})
    assert _token_record(trust, token, node="n13")["reasons"] == ["crit_unsupported"]


# ---------------------------------------------------------------------------------------------
# Signatures, keys, submissions


def test_forged_signature_under_the_genuine_kid(trust: Trust) -> None:
    result = verify(trust, [nras_evidence(trust, count=1, fault="forged_signature")], node="fs")
    assert by_key(result)[None]["reasons"] == ["bad_signature"]
    assert by_key(result)[None]["signature_valid"] is False
    record = only(verify(trust, [maa_evidence(trust, fault="forged_signature")], node="fs2"))
    assert record["reasons"] == ["bad_signature"]


def test_unreadable_key_set_gives_error_keys_unavailable(tmp_path: Path, trust: Trust) -> None:
    broken = tuple(
        replace(i, jwks_file=tmp_path / "missing.json") if i.name == "maa" else i
        for i in trust.settings.issuers
    )
    verifier = trust.verifier(issuers=broken)
    record = only(verify(trust, [maa_evidence(trust)], node="k", verifier=verifier))
    assert record["verdict"] == "error" and record["reasons"] == ["keys_unavailable"]
    assert "missing.json" in record["detail"]
    # other issuers are unaffected
    assert only(verify(trust, [ita_evidence(trust)], node="k", verifier=verifier))["verdict"] == (
        "pass"
    )


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"not json", "malformed"),
        (b'{"schema": "annex.attestation/v1", "schema": "x"}', "malformed"),
        (b"[]", "malformed"),
        (b'{"schema": "other/v1"}', "malformed"),
        (b'{"schema": "annex.attestation/v1", "node_name": "n", "nonce": "x", "evidence": []}',
         "malformed"),
        (b'{"schema": "annex.attestation/v1", "node_name": "n", "nonce": "x", '
         b'"evidence": [{"provider": "aws-nitro", "token": "x"}]}', "malformed"),
        (b'{"schema": "annex.attestation/v1", "node_name": "n\\u0000", "nonce": "x", '
         b'"evidence": [{"provider": "intel-ita", "token": "x"}]}', "malformed"),
        (b'{"schema": "annex.attestation/v1", "node_name": "n", "nonce": "x", '
         b'"evidence": [{"provider": "nvidia-nras", "result": ["JWT", "x"]}]}', "malformed"),
        (b"\xef\xbb\xbf{}", "malformed"),
    ],
)  # fmt: skip
def test_bodies_that_are_not_submissions_are_rejected(
    trust: Trust, raw: bytes, reason: str
) -> None:
    result = trust.verifier().verify(submit(raw))
    assert result.submission is None and result.records == []
    assert result.rejection["reason_code"] == reason
    assert result.rejection["raw"] == raw
    assert result.rejection["locator"] == "spool/incoming/test.json"
    assert_rows_fit_schema(result)


def test_a_bad_token_does_not_spoil_its_neighbours(trust: Trust) -> None:
    evidence = [tokens.cvm_evidence("intel-ita", "garbage"), maa_evidence(trust, vm_id="VM-NB")]
    result = verify(trust, evidence, node="nb")
    assert [r["verdict"] for r in result.records] == ["fail", "pass"]
    assert result.records[0]["token_sha256"] == hashlib.sha256(b"garbage").hexdigest()


def test_received_at_with_a_timezone_is_read_as_utc(trust: Trust) -> None:
    from datetime import UTC, timezone

    tz = timezone(timedelta(hours=2))
    received = (RECEIVED.replace(tzinfo=UTC)).astimezone(tz)
    result = trust.verifier().verify(submit(body([ita_evidence(trust)], node="tz"),
                                            received_at=received))  # fmt: skip
    assert only(result)["received_at"] == RECEIVED and only(result)["verdict"] == "pass"


def test_reason_vocabulary_is_the_contracts() -> None:
    assert len(REASON_CODES) == 23
    assert {"parent_failed", "self_reported", "keys_unavailable", "unknown_issuer"} <= REASON_CODES


def test_submission_type_is_frozen() -> None:
    sub = Submission("id", "loc", "file", datetime(2026, 1, 1), b"{}")
    with pytest.raises(AttributeError):
        sub.body = b"x"  # type: ignore[misc]
    assert sub.archive_uri is None


def test_epoch_helper_agrees_with_token_times(trust: Trust) -> None:
    claims = segments(ita_evidence(trust)["token"])[1]
    assert claims["iat"] == epoch(ISSUED)


def test_from_settings_reads_the_nonce_key_from_the_environment(trust: Trust) -> None:
    from annex.errors import ConfigError
    from collectors.attestation.verify import Verifier

    env = {**trust.env, "ANNEX_ATTESTATION_NONCE_KEY": NONCE_KEY.hex()}
    verifier = Verifier.from_settings(trust.settings, env=env)
    assert verifier.nonce_key == NONCE_KEY
    nonce, _ = issue_nonce(NONCE_KEY, "gpu-node-env", now=ISSUED, ttl_seconds=600)
    raw = body([ita_evidence(trust, nonce=nonce)], node="gpu-node-env", nonce=nonce)
    assert only(verifier.verify(submit(raw)))["freshness_proven"] is True
    with pytest.raises(ConfigError, match="ANNEX_ATTESTATION_NONCE_KEY"):
        Verifier.from_settings(trust.settings, env={"ANNEX_ATTESTATION_NONCE_KEY": "short"})

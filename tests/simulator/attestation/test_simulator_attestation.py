"""The simulated attestation issuers, tokens, world plan and history files.

Tokens are checked with independent code: PyJWT decodes them with the published key sets,
`cryptography` walks the x5c chains to the roots, and the expected claim shapes come from
NVIDIA's, Microsoft's and Intel's published samples (reference/attestation.md), not from the
simulator's own builders.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import os
import subprocess
import sys
import tomllib
from datetime import UTC, datetime, timedelta

import jwt
import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from simulator.attestation import tokens
from simulator.attestation.agent import attestation_times, node_evidence, write_history
from simulator.attestation.issuers import LOCAL_SECRET, IssuerSet
from simulator.world import build_world
from simulator.world.attestation import PLAN_FAULTS, attestation_plan
from simulator.world.catalog import CC_CAPABLE_LABEL, CPU_TEE_LABELS, POOL_LABEL

pytestmark = pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")

NOW = datetime(2026, 11, 2, 8, 0, 0, tzinfo=UTC)
NONCE = "ab" * 32
GPUS = [(f"GPU-{i:08d}-0000-4000-8000-000000000000", tokens.gpu_ueid(0, f"g{i}")) for i in range(4)]


@pytest.fixture(scope="module")
def issuers() -> IssuerSet:
    return IssuerSet.create(0)


@pytest.fixture(scope="module")
def world():
    return build_world(60, seed=7)


def segments(token: str) -> tuple[dict, dict]:
    head, payload, _ = token.split(".")
    return (
        json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))),
        json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))),
    )


def claims(token: str) -> dict:
    return segments(token)[1]


def decode(issuer, token: str, *, kid: str | None = None) -> dict:
    """Verify with PyJWT and the issuer's published JWKS (time checks off: fixed dates)."""
    key = jwt.PyJWKSet.from_dict(issuer.jwks())[kid or issuer.kid].key
    return jwt.decode(token, key, algorithms=[issuer.alg], options={"verify_exp": False})


def changed(a: dict, b: dict, ignore: frozenset[str] = frozenset({"jti"})) -> set[str]:
    return {k for k in a.keys() | b.keys() if k not in ignore and a.get(k) != b.get(k)}


# -- issuers -----------------------------------------------------------------------------


def test_every_signed_token_verifies_with_pyjwt_and_the_published_key_set(issuers):
    for issuer in (issuers.nras, issuers.maa, issuers.ita, issuers.attacker):
        token = issuer.sign({"iss": issuer.iss, "n": 1})
        header, _ = segments(token)
        assert header["alg"] == issuer.alg and header["kid"] == issuer.kid
        assert decode(issuer, token) == {"iss": issuer.iss, "n": 1}
        keys = issuer.jwks()["keys"]
        assert {k["kid"] for k in keys} == {issuer.kid, issuer.revoked_kid}
        assert all(k["alg"] == issuer.alg and k["use"] == "sig" for k in keys)
    # the ES384 signature is raw R || S (RFC 7518 §3.4), 96 bytes, not DER
    signature = issuers.nras.sign({"a": 1}).split(".")[2]
    assert len(base64.urlsafe_b64decode(signature + "==")) == 96
    local = issuers.local.sign({"iss": issuers.local.iss})
    assert segments(local)[0] == {"alg": "HS256", "typ": "JWT"}
    assert jwt.decode(local, LOCAL_SECRET, algorithms=["HS256"])["iss"] == issuers.local.iss
    assert issuers.local.jwks() == {"keys": []} and issuers.local.root_pem() == b""


def test_issuer_urls_are_marked_simulated_and_cvm_headers_carry_an_advisory_jku(issuers):
    for issuer in issuers.all():
        assert "simulated" in issuer.iss
    assert segments(issuers.maa.sign({}))[0]["jku"] == issuers.maa.iss + "/certs"
    assert segments(issuers.ita.sign({}))[0]["jku"] == issuers.ita.iss + "/certs"
    assert issuers.attacker.iss == issuers.nras.iss  # a forger claims to be NRAS
    assert issuers.attacker.root_pem() != issuers.nras.root_pem()


def test_header_override_changes_the_header_but_never_the_signing_key(issuers):
    token = issuers.nras.sign({"a": 1}, header={"kid": None, "jku": "https://evil.example/k"})
    header, _ = segments(token)
    assert "kid" not in header and header["jku"] == "https://evil.example/k"
    assert decode(issuers.nras, token) == {"a": 1}


@pytest.mark.parametrize("name", ["nras", "maa", "ita", "attacker"])
def test_x5c_chains_reach_their_own_root_and_the_leaf_is_the_jwk_key(issuers, name):
    issuer = issuers.by_name(name)
    root = x509.load_pem_x509_certificate(issuer.root_pem())
    root.verify_directly_issued_by(root)
    assert root.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for jwk in issuer.jwks()["keys"]:
        leaf, intermediate = (
            x509.load_der_x509_certificate(base64.b64decode(c)) for c in jwk["x5c"]
        )
        leaf.verify_directly_issued_by(intermediate)
        intermediate.verify_directly_issued_by(root)
        assert intermediate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        assert not leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        spki = serialization.PublicFormat.SubjectPublicKeyInfo
        der = serialization.Encoding.DER
        jwk_key = jwt.PyJWK.from_dict(jwk).key
        assert leaf.public_key().public_bytes(der, spki) == jwk_key.public_bytes(der, spki)
        in_force = intermediate.not_valid_before_utc <= NOW <= intermediate.not_valid_after_utc
        assert in_force == (jwk["kid"] == issuer.kid)  # the revoked one expired long ago
        assert "simulated" in leaf.subject.rfc4514_string()
    other = issuers.attacker if name != "attacker" else issuers.nras
    foreign_root = x509.load_pem_x509_certificate(other.root_pem())
    with pytest.raises(InvalidSignature):  # another root's key did not sign it
        foreign_root.public_key().verify(
            intermediate.signature,
            intermediate.tbs_certificate_bytes,
            ec.ECDSA(intermediate.signature_hash_algorithm),
        )


def test_revoked_signing_puts_the_revoked_chain_in_the_header(issuers):
    token = issuers.nras.sign({"a": 1}, revoked=True)
    header, _ = segments(token)
    assert header["kid"] == issuers.nras.revoked_kid
    revoked_jwk = next(k for k in issuers.nras.jwks()["keys"] if k["kid"] == header["kid"])
    assert header["x5c"] == revoked_jwk["x5c"]
    assert decode(issuers.nras, token, kid=issuers.nras.revoked_kid) == {"a": 1}
    with pytest.raises(jwt.InvalidSignatureError):
        decode(issuers.nras, token)  # the good key did not sign it


def test_trust_material_is_identical_in_another_process_with_the_same_seed(issuers, tmp_path):
    code = (
        "import sys; from pathlib import Path; from simulator.attestation.issuers import IssuerSet;"
        "IssuerSet.create(0).write_trust(Path(sys.argv[1]))"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "other")], check=True)
    written = issuers.write_trust(tmp_path / "here")
    assert set(written) == {
        f"{n}.{k}" for n in ("nras", "maa", "ita", "attacker") for k in ("jwks", "root")
    }
    for path in written.values():
        assert path.read_bytes() == (tmp_path / "other" / path.name).read_bytes(), path.name
    assert IssuerSet.create(1).nras.jwks() != issuers.nras.jwks()


def test_settings_toml_lists_the_trusted_issuers_with_their_files(issuers, tmp_path):
    paths = issuers.write_trust(tmp_path)
    parsed = tomllib.loads(issuers.settings_toml(tmp_path) + tokens.policy_toml())
    entries = {e["name"]: e for e in parsed["attestation"]["issuers"]}
    assert set(entries) == {"nras", "maa", "ita", "local"}  # never the attacker
    assert entries["nras"]["jwks_file"] == str(paths["nras.jwks"].resolve())
    assert entries["ita"]["roots_file"] == str(paths["ita.root"].resolve())
    assert {e["algorithm"] for e in entries.values()} == {"ES384", "RS256", "PS384", "HS256"}
    assert entries["local"]["secret_env"] and "jwks_file" not in entries["local"]
    by_url = tomllib.loads(issuers.settings_toml(tmp_path, jwks_base_url="http://k:1/"))
    urls = {e["name"]: e.get("jwks_url") for e in by_url["attestation"]["issuers"]}
    assert urls["nras"] == "http://k:1/nras/.well-known/jwks.json"
    assert urls["maa"] == "http://k:1/maa/certs"
    policy = parsed["attestation"]["policy"]
    assert policy["tdx_mrtd"] == [tokens.GOLDEN_TDX_MRTD]


# -- NRAS ----------------------------------------------------------------------------------


def test_nras_v3_result_has_the_detached_eat_shape_and_digests(issuers):
    result = tokens.nras_result(issuers, gpus=GPUS, nonce=NONCE, issued_at=NOW)
    assert result[0][0] == "JWT" and list(result[1]) == ["GPU-0", "GPU-1", "GPU-2", "GPU-3"]
    overall = decode(issuers.nras, result[0][1])
    assert overall["sub"] == "NVIDIA-PLATFORM-ATTESTATION" and overall["x-nvidia-ver"] == "3.0"
    assert overall["x-nvidia-overall-att-result"] is True and overall["eat_nonce"] == NONCE
    assert overall["exp"] - overall["iat"] == 3600 and overall["nbf"] == overall["iat"] - 120
    assert overall["iat"] == int(NOW.timestamp())
    for index, (key, jws) in enumerate(result[1].items()):
        expected = hashlib.sha256(jws.encode("ascii")).hexdigest()
        assert overall["submods"][key] == ["DIGEST", ["SHA-256", expected]]
        detached = decode(issuers.nras, jws)
        assert detached["ueid"] == GPUS[index][1] and detached["eat_nonce"] == NONCE
        assert detached["measres"] == "success" and detached["dbgstat"] == "disabled"
        assert detached["secboot"] is True and detached["hwmodel"] == "GH100 A01 GSP BROM"
        chain = detached["x-nvidia-gpu-attestation-report-cert-chain"]
        assert chain["x-nvidia-cert-status"] == "valid"
        assert chain["x-nvidia-cert-ocsp-status"] == "good"
        assert "x-nvidia-gpu-attestation-report-cert-chain-validated" not in detached
        assert detached["x-nvidia-gpu-driver-version"] == tokens.DRIVER_VERSION
    jtis = {claims(t)["jti"] for t in [result[0][1], *result[1].values()]}
    assert len(jtis) == 5


def test_nras_v2_result_uses_flat_booleans(issuers):
    result = tokens.nras_result(
        issuers, gpus=GPUS[:1], nonce=NONCE, issued_at=NOW, claims_version="2.0"
    )
    assert claims(result[0][1])["x-nvidia-ver"] == "2.0"
    detached = decode(issuers.nras, result[1]["GPU-0"])
    assert detached["x-nvidia-gpu-attestation-report-cert-chain-validated"] is True
    assert detached["x-nvidia-gpu-driver-rim-cert-validated"] is True
    assert not any(isinstance(v, dict) for v in detached.values())
    with pytest.raises(ValueError):
        tokens.nras_result(issuers, gpus=GPUS, nonce=NONCE, issued_at=NOW, claims_version="4.0")


def test_claims_are_deterministic_apart_from_jti(issuers):
    a = tokens.nras_result(issuers, gpus=GPUS, nonce=NONCE, issued_at=NOW)
    b = tokens.nras_result(issuers, gpus=GPUS, nonce=NONCE, issued_at=NOW)
    for x, y in zip([a[0][1], *a[1].values()], [b[0][1], *b[1].values()], strict=True):
        assert changed(claims(x), claims(y), frozenset({"jti", "submods"})) == set()
    m1 = tokens.maa_token(issuers, vm_id="VM", nonce=NONCE, issued_at=NOW)
    m2 = tokens.maa_token(issuers, vm_id="VM", nonce=NONCE, issued_at=NOW)
    assert changed(claims(m1), claims(m2)) == set()
    assert tokens.gpu_ueid(0, "GPU-a") == tokens.gpu_ueid(0, "GPU-a")
    assert tokens.gpu_ueid(0, "GPU-a") != tokens.gpu_ueid(1, "GPU-a")
    assert tokens.gpu_ueid(0, "GPU-a").isdigit() and len(tokens.gpu_ueid(0, "GPU-a")) > 40


NRAS_EXPECTED = {
    # fault -> (claims changed in GPU-0, in GPU-1.., in the overall token)
    "debug_enabled": ({"dbgstat"}, set(), {"submods"}),
    "measurement_mismatch": ({"measres"}, set(), {"submods", "x-nvidia-overall-att-result"}),
    "ocsp_revoked": ({"x-nvidia-gpu-attestation-report-cert-chain"}, set(), {"submods"}),
    "wrong_gpu": ({"ueid"}, set(), {"submods"}),
    "nonce_mismatch": ({"eat_nonce"}, {"eat_nonce"}, {"eat_nonce", "submods"}),
    "staging_issuer": ({"iss"}, {"iss"}, {"iss", "submods"}),
    "expired": ({"iat", "nbf", "exp"}, {"iat", "nbf", "exp"}, {"iat", "nbf", "exp", "submods"}),
    "submod_digest_mismatch": (set(), set(), {"submods"}),
    "revoked_certificate": (set(), set(), {"submods"}),
    "forged_signature": (set(), set(), {"submods"}),
}


@pytest.mark.parametrize("fault", sorted(NRAS_EXPECTED))
def test_each_nras_fault_changes_exactly_its_claims(issuers, fault):
    assert set(NRAS_EXPECTED) == tokens.NRAS_FAULTS
    clean = tokens.nras_result(issuers, gpus=GPUS, nonce=NONCE, issued_at=NOW)
    bad = tokens.nras_result(issuers, gpus=GPUS, nonce=NONCE, issued_at=NOW, fault=fault)
    gpu0, others, overall = NRAS_EXPECTED[fault]
    assert changed(claims(clean[1]["GPU-0"]), claims(bad[1]["GPU-0"])) == gpu0
    for key in ("GPU-1", "GPU-2", "GPU-3"):
        assert changed(claims(clean[1][key]), claims(bad[1][key])) == others
    assert changed(claims(clean[0][1]), claims(bad[0][1])) == overall
    digests = {k: v[1][1] for k, v in claims(bad[0][1])["submods"].items()}
    honest = {k: hashlib.sha256(v.encode()).hexdigest() for k, v in bad[1].items()}
    assert (digests["GPU-0"] != honest["GPU-0"]) == (fault == "submod_digest_mismatch")
    assert {k: digests[k] == honest[k] for k in ("GPU-1", "GPU-2", "GPU-3")} == dict.fromkeys(
        ("GPU-1", "GPU-2", "GPU-3"), True
    )


def test_nras_fault_values(issuers):
    def gpu0(fault, **kw):
        result = tokens.nras_result(
            issuers, gpus=GPUS, nonce=NONCE, issued_at=NOW, fault=fault, **kw
        )
        return result, claims(result[1]["GPU-0"])

    assert gpu0("debug_enabled")[1]["dbgstat"] == "enabled"
    assert claims(gpu0("debug_enabled")[0][0][1])["x-nvidia-overall-att-result"] is True  # N16
    assert gpu0("measurement_mismatch")[1]["measres"] == "failure"
    chain = gpu0("ocsp_revoked")[1]["x-nvidia-gpu-attestation-report-cert-chain"]
    assert chain["x-nvidia-cert-ocsp-status"] == "revoked"
    assert gpu0("wrong_gpu")[1]["ueid"] == GPUS[-1][1]  # default: a device named twice
    assert gpu0("wrong_gpu", foreign_ueid="42")[1]["ueid"] == "42"
    expired = gpu0("expired")[1]
    assert expired["exp"] < int(NOW.timestamp()) and expired["exp"] - expired["iat"] == 3600
    assert (
        gpu0("staging_issuer")[1]["iss"] == "https://nras.attestation-stg.simulated.annex.invalid"
    )
    assert gpu0("nonce_mismatch")[1]["eat_nonce"] != NONCE
    revoked = gpu0("revoked_certificate")[0]
    assert segments(revoked[1]["GPU-0"])[0]["kid"] == issuers.nras.revoked_kid
    decode(issuers.nras, revoked[0][1], kid=issuers.nras.revoked_kid)
    forged = gpu0("forged_signature")[0]
    assert segments(forged[0][1])[0]["kid"] == issuers.nras.kid
    with pytest.raises(jwt.InvalidSignatureError):
        decode(issuers.nras, forged[0][1])
    decode(issuers.attacker, forged[0][1])
    with pytest.raises(ValueError, match="unknown fault"):
        tokens.nras_result(issuers, gpus=GPUS, nonce=NONCE, issued_at=NOW, fault="not_compliant")


def test_local_result_is_hs256_with_the_constant_secret(issuers):
    result = tokens.local_result(issuers, gpus=GPUS[:2], nonce=NONCE, issued_at=NOW)
    assert segments(result[0][1])[0]["alg"] == "HS256"
    overall = jwt.decode(
        result[0][1], LOCAL_SECRET, algorithms=["HS256"], options={"verify_exp": False}
    )
    assert overall["iss"] == issuers.local.iss and set(overall["submods"]) == {"GPU-0", "GPU-1"}


# -- MAA and ITA ---------------------------------------------------------------------------


def test_maa_sevsnp_token_has_the_azure_guest_attestation_claims(issuers):
    token = tokens.maa_token(issuers, vm_id="VM-1", nonce=NONCE, issued_at=NOW)
    header, _ = segments(token)
    assert header["alg"] == "RS256" and header["typ"] == "JWT"
    body = decode(issuers.maa, token)
    assert body["exp"] - body["iat"] == 8 * 3600
    assert body["x-ms-attestation-type"] == "azurevm" and body["secureboot"] is True
    assert body["x-ms-azurevm-vmid"] == "VM-1"
    assert body["x-ms-runtime"]["client-payload"]["nonce"] == NONCE
    tee = body["x-ms-isolation-tee"]
    assert tee["x-ms-attestation-type"] == "sevsnpvm"
    assert tee["x-ms-compliance-status"] == "azure-compliant-cvm"
    assert tee["x-ms-sevsnpvm-is-debuggable"] is False
    assert tee["x-ms-sevsnpvm-launchmeasurement"] == tokens.GOLDEN_SEVSNP_LAUNCH_MEASUREMENT
    assert len(tee["x-ms-sevsnpvm-launchmeasurement"]) == 96
    assert tee["x-ms-runtime"]["vm-configuration"]["vmUniqueId"] == "VM-1"


def test_maa_tdx_and_ita_tokens_carry_tdx_quote_claims(issuers):
    maa = decode(
        issuers.maa, tokens.maa_token(issuers, vm_id="V", nonce=NONCE, issued_at=NOW, tee="tdxvm")
    )
    tee = maa["x-ms-isolation-tee"]
    assert tee["x-ms-attestation-type"] == "tdxvm" and tee["tdx_mrtd"] == tokens.GOLDEN_TDX_MRTD
    assert tee["tdx_is_debuggable"] is False and "x-ms-sevsnpvm-launchmeasurement" not in tee
    ita_jws = tokens.ita_token(issuers, nonce=NONCE, issued_at=NOW, vm_id="V")
    assert segments(ita_jws)[0]["alg"] == "PS384"
    ita = decode(issuers.ita, ita_jws)
    assert ita["ver"] == "2.0.0" and ita["eat_nonce"] == NONCE
    assert ita["tdx"]["attester_runtime_data"]["nonce"] == NONCE
    assert ita["tdx"]["attester_tcb_status"] == "UpToDate"
    assert ita["tdx"]["tdx_mrtd"] == tokens.GOLDEN_TDX_MRTD and len(ita["tdx"]["tdx_mrtd"]) == 96
    assert ita["exp"] - ita["iat"] == tokens.ITA_LIFETIME_SECONDS


CVM_EXPECTED = {
    # (builder, fault) -> {claim path: changed keys below it}
    ("sevsnpvm", "debug_enabled"): {"x-ms-isolation-tee": {"x-ms-sevsnpvm-is-debuggable"}},
    ("sevsnpvm", "measurement_mismatch"): {
        "x-ms-isolation-tee": {"x-ms-sevsnpvm-launchmeasurement"}
    },
    ("sevsnpvm", "not_compliant"): {"x-ms-isolation-tee": {"x-ms-compliance-status"}},
    ("tdxvm", "debug_enabled"): {
        "x-ms-isolation-tee": {
            "dbgstat",
            "tdx_is_debuggable",
            "tdx_td_attributes",
            "tdx_td_attributes_debug",
        }
    },
    ("tdxvm", "measurement_mismatch"): {"x-ms-isolation-tee": {"tdx_mrtd"}},
    ("ita", "debug_enabled"): {
        "tdx": {"dbgstat", "tdx_is_debuggable", "tdx_td_attributes", "tdx_td_attributes_debug"}
    },
    ("ita", "measurement_mismatch"): {"tdx": {"tdx_mrtd"}},
    ("ita", "tcb_out_of_date"): {"tdx": {"attester_tcb_status", "attester_advisory_ids"}},
}


@pytest.mark.parametrize("kind,fault", sorted(CVM_EXPECTED))
def test_each_cvm_fault_changes_exactly_its_claims(issuers, kind, fault):
    def mint(fault):
        if kind == "ita":
            return claims(tokens.ita_token(issuers, nonce=NONCE, issued_at=NOW, fault=fault))
        return claims(
            tokens.maa_token(issuers, vm_id="V", nonce=NONCE, issued_at=NOW, tee=kind, fault=fault)
        )

    clean, bad = mint(None), mint(fault)
    expected = CVM_EXPECTED[(kind, fault)]
    assert changed(clean, bad) == set(expected)
    for path, keys in expected.items():
        assert changed(clean[path], bad[path]) == keys


def test_cvm_time_signing_and_unknown_faults(issuers):
    expired = claims(
        tokens.maa_token(issuers, vm_id="V", nonce=NONCE, issued_at=NOW, fault="expired")
    )
    assert expired["iat"] == int(NOW.timestamp()) - tokens.EXPIRED_AGE_SECONDS
    revoked = tokens.ita_token(issuers, nonce=NONCE, issued_at=NOW, fault="revoked_certificate")
    assert segments(revoked)[0]["kid"] == issuers.ita.revoked_kid
    decode(issuers.ita, revoked, kid=issuers.ita.revoked_kid)
    with pytest.raises(ValueError):
        tokens.ita_token(issuers, nonce=NONCE, issued_at=NOW, fault="not_compliant")
    with pytest.raises(ValueError):
        tokens.maa_token(issuers, vm_id="V", nonce=NONCE, issued_at=NOW, fault="wrong_gpu")
    with pytest.raises(ValueError):
        tokens.maa_token(issuers, vm_id="V", nonce=NONCE, issued_at=NOW, tee="sgx")


# -- identities and submissions -------------------------------------------------------------


def test_azure_vm_id_is_the_byte_swapped_system_uuid():
    assert (
        tokens.azure_vm_id("12345678-9abc-def0-1234-56789abcdef0")
        == "78563412-BC9A-F0DE-1234-56789ABCDEF0"
    )


def test_attester_nonces_never_look_like_collector_nonces():
    nonce = tokens.attester_nonce(0, "node-a", "t")
    assert len(nonce) == 48 and int(nonce, 16) >= 0
    assert (
        nonce == tokens.attester_nonce(0, "node-a", "t") != tokens.attester_nonce(0, "node-b", "t")
    )


def test_submission_bytes_follow_the_agent_contract(issuers):
    result = tokens.nras_result(issuers, gpus=GPUS[:2], nonce=NONCE, issued_at=NOW)
    body = tokens.submission(
        node_name="n1",
        boot_id="b-1",
        nonce=NONCE,
        collected_at=NOW,
        evidence=[
            tokens.gpu_evidence("nvidia-nras", result, [g for g, _ in GPUS[:2]]),
            tokens.cvm_evidence("intel-ita", "x.y.z"),
        ],
    )
    data = json.loads(body.decode("utf-8"))
    assert list(data) == [
        "schema",
        "node_name",
        "boot_id",
        "nonce",
        "collected_at",
        "agent",
        "evidence",
    ]
    assert (
        data["schema"] == "annex.attestation/v1" and data["collected_at"] == "2026-11-02T08:00:00Z"
    )
    nras = data["evidence"][0]
    assert nras["result"] == result and nras["gpus"] == {"GPU-0": GPUS[0][0], "GPU-1": GPUS[1][0]}
    assert data["evidence"][1] == {"provider": "intel-ita", "token": "x.y.z"}


# -- the world -----------------------------------------------------------------------------


def test_cc_labels_sit_on_the_h100_cvm_pools_only(world):
    for node in world.nodes:
        labels = node["metadata"]["labels"]
        pool = labels[POOL_LABEL]
        capable = labels.get(CC_CAPABLE_LABEL) == "true"
        assert capable == (pool in ("h100-gke", "h100-eks")), node["metadata"]["name"]
        tee_labels = {t for t, label in CPU_TEE_LABELS.items() if labels.get(label) == "true"}
        assert tee_labels == ({"tdx"} if pool == "h100-gke" else {"sevsnp"} if capable else set())
        if capable:
            assert labels["nvidia.com/cc.mode"] == "on"
            features = node["metadata"]["annotations"]["nfd.node.kubernetes.io/feature-labels"]
            assert "cpu-security." in features


def test_plan_covers_every_fault_and_is_deterministic(world):
    plan = attestation_plan(world)
    nodes = {n["metadata"]["name"]: n for n in world.nodes}
    capable = {n for n, o in nodes.items() if o["metadata"]["labels"].get(CC_CAPABLE_LABEL)}
    assert set(plan) == capable
    assert {p.fault for p in plan.values()} - {None} == set(PLAN_FAULTS)
    assert sum(p.fault is None for p in plan.values()) >= len(plan) / 2
    assert plan == attestation_plan(build_world(60, seed=7))
    assert {n: p.fault for n, p in plan.items()} != {
        n: p.fault for n, p in attestation_plan(build_world(60, seed=8)).items()
    }
    gpus = {g.uuid: g for g in world.gpus}
    for name, p in plan.items():
        info = nodes[name]["status"]["nodeInfo"]
        assert p.boot_id == info["bootID"] and p.system_uuid == info["systemUUID"]
        assert [b for b, _ in p.boots] == sorted(b for b, _ in p.boots)
        assert len({i for _, i in p.boots}) == len(p.boots)
        assert p.boots[-1][0] < world.now
        assert [gpus[u].node for u, _ in p.gpus] == [name] * len(p.gpus)
        assert [gpus[u].index for u, _ in p.gpus] == list(range(len(p.gpus)))
        assert p.cvm_provider == ("azure-maa" if p.tee == "sevsnp" or p.maa_tee else "intel-ita")
        if p.fault == "wrong_gpu":
            owner = next(q for q in plan.values() if q.gpus and q.gpus[0][1] == p.foreign_ueid)
            assert owner.node_name != name and owner.fault is None
        if p.fault_since is not None:
            assert p.fault_at(p.fault_since - timedelta(seconds=1)) is None
            assert p.fault_at(p.fault_since) == p.fault
    assert {p.cvm_provider for p in plan.values()} == {"azure-maa", "intel-ita"}
    assert {p.claims_version for p in plan.values()} == {"2.0", "3.0"}


def test_plan_evidence_follows_the_fault(world, issuers):
    plan = attestation_plan(world)
    by_fault = {p.fault: p for p in plan.values()}
    at = world.now
    self_reported = node_evidence(by_fault["self_reported"], issuers, nonce=NONCE, at=at)
    assert next(e["provider"] for e in self_reported) == "nvidia-local"
    debug = by_fault["debug_enabled"]
    before = node_evidence(debug, issuers, nonce=NONCE, at=debug.fault_since - timedelta(hours=1))
    after = node_evidence(debug, issuers, nonce=NONCE, at=at)
    assert claims(before[0]["result"][1]["GPU-0"])["dbgstat"] == "disabled"
    assert claims(after[0]["result"][1]["GPU-0"])["dbgstat"] == "enabled"
    wrong = node_evidence(by_fault["wrong_gpu"], issuers, nonce=NONCE, at=at)
    assert claims(wrong[0]["result"][1]["GPU-0"])["ueid"] == by_fault["wrong_gpu"].foreign_ueid
    cvm = node_evidence(by_fault["cvm_debug_enabled"], issuers, nonce=NONCE, at=at)[1]
    tee = claims(cvm["token"]).get("x-ms-isolation-tee") or claims(cvm["token"])["tdx"]
    assert True in (tee.get("x-ms-sevsnpvm-is-debuggable"), tee.get("tdx_is_debuggable"))
    maa_node = next(p for p in plan.values() if p.cvm_provider == "azure-maa" and p.fault is None)
    maa = node_evidence(maa_node, issuers, nonce=NONCE, at=at)[1]
    assert claims(maa["token"])["x-ms-azurevm-vmid"] == tokens.azure_vm_id(maa_node.system_uuid)


def test_attestation_times_restart_at_each_boot(world):
    plan = next(p for p in attestation_plan(world).values() if len(p.boots) >= 3)
    start, end = plan.boots[-3][0] - timedelta(days=1), plan.boots[-1][0] + timedelta(hours=5)
    times = list(attestation_times(plan, start, end, 3000))
    assert times == sorted(times) and all(start <= t < end for t, _ in times)
    for booted, boot_id in plan.boots[-2:]:
        first = next(t for t, b in times if b == boot_id)
        assert first == booted + timedelta(seconds=60)  # attests a minute after boot
        assert plan.boot_at(first) == (booted, boot_id)
    ids = [b for _, b in times]
    assert ids.index(plan.boots[-1][1]) > 0 and plan.boots[-2][1] in ids
    for (t1, b1), (t2, b2) in itertools.pairwise(times):
        assert (t2 - t1 == timedelta(seconds=3000)) or b1 != b2


def test_history_files_are_bare_submissions_stamped_with_their_collection_time(
    world, issuers, tmp_path
):
    count = write_history(world, issuers, tmp_path, days=0.2, max_nodes=9)
    files = sorted(tmp_path.iterdir())
    assert count == len(files) > 0 and all(f.suffix == ".json" for f in files)
    plan = attestation_plan(world)
    seen = set()
    for path in files:
        data = json.loads(path.read_bytes())
        collected = datetime.strptime(data["collected_at"], "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=UTC
        )
        assert abs(os.stat(path).st_mtime - collected.timestamp()) < 1
        assert world.now - timedelta(days=0.2) <= collected < world.now
        assert path.name.startswith(collected.strftime("%Y%m%dT%H%M%SZ"))
        node = plan[data["node_name"]]
        assert data["boot_id"] == node.boot_at(collected)[1]
        assert len(data["nonce"]) == 48  # the attester's own: no collector nonce in the past
        overall = claims(data["evidence"][0]["result"][0][1])
        assert overall["eat_nonce"] == data["nonce"]
        seen.add(node.fault)
    assert "missing" not in seen and len(seen) >= 5
    missing = next(n for n, p in plan.items() if p.fault == "missing")
    assert not any(missing in f.name for f in files)


def test_the_attestation_simulator_never_imports_annex():
    import ast
    from pathlib import Path

    import simulator.attestation

    folder = Path(simulator.attestation.__file__).parent
    files = [*folder.glob("*.py"), folder.parent / "world" / "attestation.py"]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] not in ("annex", "collectors", "warehouse", "jwt"), (
                    f"{path.name} imports {name}"
                )

"""Tokens and results shaped as NVIDIA, Azure and Intel services emit them (issue 35).

Each fixture in ``fixtures/`` is a claim set in the service's own layout (its README
names the service, version and document each follows). Real private keys are unavailable, so
the tests sign the claim sets with the simulator's deterministic test keys and pin those keys
in the settings, under the services' real ``iss`` values: what is exercised is where each
service puts each claim, and how annex classifies the result.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from annex.settings import load_settings
from collectors.attestation.keys import KeySets
from collectors.attestation.nonce import issue_nonce
from collectors.attestation.verify import Submission, Verification, Verifier, submod_digest
from simulator.attestation import tokens
from simulator.attestation.issuers import LOCAL_SECRET_ENV, IssuerSet

FIXTURES = Path(__file__).parent / "fixtures"
ISSUED = datetime(2025, 11, 28, 8, 30, 0)
"""The fixtures' ``iat`` (1764318600)."""
RECEIVED = ISSUED + timedelta(seconds=5)
NONCE = "4f3e2d1c0b0a99887766554433221100ffeeddccbbaa99887766554433221100"
"""An attester-chosen nonce (64 hex, implausible as annex's: its expiry field is far off)."""
NONCE_KEY = bytes(range(32))
NRAS = "https://nras.attestation.nvidia.com"
MAA = "https://sharedeus2.eus2.attest.azure.net"
ITA = "Intel Trust Authority"
MRTD = (
    "fe27b2aa3a05ec56864c308aff03dd13c189a6112d21e417"
    "ec1afe626a8cb9d91482d1379ec02fe6308972950a930d0a"
)
LAUNCH = (
    "ad6de16ac59ee52351c6038df58d1be5aeaf41cd0f7c81b2"
    "279ecca0df6ef43a2b69d663ad6973d6dbb9db0ffd7a9023"
)


class Services:
    """The simulator's keys pinned under the real services' issuers."""

    def __init__(self, folder: Path) -> None:
        self.issuers = IssuerSet.create(0)
        self.issuers.write_trust(folder)
        blocks = []
        for name, provider, iss, alg, keys in (
            ("nras-prod", "nvidia-nras", NRAS, "ES384", "nras"),
            ("maa-eus2", "azure-maa", MAA, "RS256", "maa"),
            ("ita", "intel-ita", ITA, "PS384", "ita"),
        ):
            blocks.append(
                f'[[attestation.issuers]]\nname = "{name}"\nprovider = "{provider}"\n'
                f'issuer = "{iss}"\nalgorithm = "{alg}"\n'
                f'jwks_file = "{(folder / f"{keys}.jwks.json").resolve()}"\n'
                f'roots_file = "{(folder / f"{keys}.root.pem").resolve()}"\n'
                "max_age_seconds = 3600\n"
            )
        blocks.append(
            '[[attestation.issuers]]\nname = "local"\nprovider = "nvidia-local"\n'
            'issuer = "LOCAL_GPU_VERIFIER"\nalgorithm = "HS256"\n'
            f'secret_env = "{LOCAL_SECRET_ENV}"\n'
        )
        blocks.append(
            "[attestation.policy]\n"
            'gpu_driver_versions = ["550.90.07"]\n'
            f'sevsnp_launch_measurements = ["{LAUNCH}"]\n'
            f'tdx_mrtd = ["{MRTD}"]\n'
        )
        config = folder / "annex.toml"
        config.write_text("\n".join(blocks), encoding="utf-8")
        self.settings = load_settings(config, env={}).attestation
        self.env = {LOCAL_SECRET_ENV: "secret"}

    def verifier(self, *, nonce_key: bytes | None = None, **policy: Any) -> Verifier:
        settings = self.settings
        if policy:
            settings = replace(settings, policy=replace(settings.policy, **policy))
        key_sets = KeySets.load(settings, env=self.env, fetch=_no_network)
        return Verifier(settings, key_sets=key_sets, nonce_key=nonce_key)

    def sign(self, issuer: str, header: dict, claims: dict) -> str:
        return self.issuers.by_name(issuer).sign(claims, header=header)


def _no_network(url: str, timeout: float) -> bytes:
    raise AssertionError(f"the verifier tried to fetch {url}")


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Services:
    return Services(tmp_path_factory.mktemp("services"))


def fixture(name: str, **values: str) -> dict:
    """A fixture with its ``{{placeholders}}`` filled (nonce, nonce_b64, ...)."""
    document = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return _fill(document, values)


def _fill(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    if isinstance(value, str) and value.startswith("{{") and value.endswith("}}"):
        return values.get(value[2:-2], value)
    return value


def nras_result(services: Services, name: str, nonce: str = NONCE) -> tuple[list, dict]:
    """An NRAS detached EAT: each detached token signed, its digest in the overall submods."""
    document = fixture(name, nonce=nonce)
    header = document["header"]
    detached = {
        key: services.sign("nras", header, claims) for key, claims in document["detached"].items()
    }
    overall = copy.deepcopy(document["overall"])
    for key, token in detached.items():
        overall["submods"][key][1][1] = submod_digest(token)
    return [["JWT", services.sign("nras", header, overall)], detached], document["devices"]


def local_result(services: Services, nonce: str = NONCE) -> tuple[list, dict]:
    """The local verifier's detached EAT, built the way nvtrust's ``local_gpu_verifier`` does:
    each GPU's digest is SHA-256 of ``json.dumps(claims)`` before nbf/exp/iat/jti are added."""
    document = fixture("local_verifier_v2.json", nonce=nonce)
    overall = dict(document["overall"])
    detached, submods = {}, {}
    for index, claims in enumerate(document["gpu_claims"]):
        key = f"GPU-{index}"
        claims = dict(claims)
        submods[key] = [
            "DIGEST",
            ["SHA256", hashlib.sha256(json.dumps(claims).encode()).hexdigest()],
        ]
        claims.update(document["added_after_digest"])
        detached[key] = services.sign("local", document["header"], claims)
    overall["submods"] = submods
    return [["JWT", services.sign("local", document["header"], overall)], detached], document[
        "devices"
    ]


def single(services: Services, issuer: str, name: str, **values: str) -> str:
    document = fixture(name, **values)
    return services.sign(issuer, document["header"], document["claims"])


def submission(
    evidence: list[dict],
    *,
    node: str = "cvm-node-1",
    nonce: str = NONCE,
    boot: str = "boot-1",
    received_at: datetime = RECEIVED,
    kind: str = "intake",
) -> Submission:
    raw = tokens.submission(
        node_name=node, boot_id=boot, nonce=nonce, collected_at=ISSUED, evidence=evidence
    )
    return Submission(
        submission_id=hashlib.sha256(raw).hexdigest(),
        source_locator=f"spool/{node}.json",
        source_kind=kind,
        received_at=received_at,
        body=raw,
    )


def by_key(result: Verification) -> dict[str | None, dict]:
    assert result.rejection is None, result.rejection
    return {record["submod_key"]: record for record in result.records}


def only(result: Verification) -> dict:
    assert result.rejection is None, result.rejection
    (record,) = result.records
    return record


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# ---------------------------------------------------------------------------------------------
# NVIDIA: NRAS remote (verified), local verifier (self-reported), NVSwitch (switch rules)


def test_nras_remote_result_verifies(services: Services) -> None:
    result, devices = nras_result(services, "nras_remote_gpu_v3.json")
    evidence = {"provider": "nvidia-nras", "result": result, "gpus": devices}
    records = by_key(services.verifier().verify(submission([evidence])))
    assert {k: (r["verdict"], r["assurance_tier"]) for k, r in records.items()} == {
        None: ("pass", "verified"),
        "GPU-0": ("pass", "verified"),
    }
    gpu = records["GPU-0"]
    assert gpu["subject_kind"] == "gpu" and gpu["issuer"] == NRAS
    assert gpu["device_ueid"] == "478176379286082186618948445787393647364802107249"


def test_nras_result_whose_digest_does_not_match_fails(services: Services) -> None:
    result, devices = nras_result(services, "nras_remote_gpu_v3.json")
    document = fixture("nras_remote_gpu_v3.json", nonce=NONCE)
    claims = dict(document["detached"]["GPU-0"], jti="another")
    result[1]["GPU-0"] = services.sign("nras", document["header"], claims)  # not the listed one
    evidence = {"provider": "nvidia-nras", "result": result, "gpus": devices}
    records = by_key(services.verifier().verify(submission([evidence])))
    assert "submod_digest_mismatch" in records["GPU-0"]["reasons"]
    assert records["GPU-0"]["verdict"] == "fail"


def test_local_verifier_result_is_self_reported_never_failed(services: Services) -> None:
    result, devices = local_result(services)
    # the digests are of the claims before nbf/exp/iat/jti: never the tokens' text
    assert result[0][1].count(".") == 2
    evidence = {"provider": "nvidia-local", "result": result, "gpus": devices}
    records = by_key(services.verifier().verify(submission([evidence])))
    for record in records.values():
        assert record["verdict"] == "unverifiable", record["detail"]
        assert record["assurance_tier"] == "self_reported"
        assert record["reasons"] == ["self_reported"]
        assert record["issuer"] == "LOCAL_GPU_VERIFIER"


def test_local_verifier_digest_of_other_claims_is_noted_not_failed(services: Services) -> None:
    result, devices = local_result(services)
    document = fixture("local_verifier_v2.json", nonce=NONCE)
    claims = {**document["gpu_claims"][0], "x-nvidia-gpu-vbios-version": "96.00.00.00.00"}
    claims.update(document["added_after_digest"])
    result[1]["GPU-0"] = services.sign("local", document["header"], claims)
    evidence = {"provider": "nvidia-local", "result": result, "gpus": devices}
    gpu = by_key(services.verifier().verify(submission([evidence])))["GPU-0"]
    assert (gpu["verdict"], gpu["reasons"]) == ("unverifiable", ["self_reported"])
    assert "does not match" in gpu["detail"]


def test_nvswitch_result_is_appraised_by_switch_rules(services: Services) -> None:
    result, devices = nras_result(services, "nras_remote_switch_v3.json")
    evidence = {"provider": "nvidia-nras", "result": result, "switches": devices}
    # a GPU driver allowlist is configured: it must not fail a switch (no driver claim)
    records = by_key(services.verifier().verify(submission([evidence])))
    assert {k: (r["subject_kind"], r["verdict"]) for k, r in records.items()} == {
        None: ("nvswitch", "pass"),
        "SWITCH-0": ("nvswitch", "pass"),
    }
    assert records["SWITCH-0"]["vbios_version"] == "96.10.6D.00.01"  # the switch BIOS
    assert records["SWITCH-0"]["gpu_uuid"] == "0xa1b2c3d4e5f60718"


def test_nvswitch_failing_a_switch_check_fails(services: Services) -> None:
    document = fixture("nras_remote_switch_v3.json", nonce=NONCE)
    claims = dict(document["detached"]["SWITCH-0"])
    claims["x-nvidia-switch-attestation-report-signature-verified"] = False
    claims["dbgstat"] = "enabled"
    token = services.sign("nras", document["header"], claims)
    overall = copy.deepcopy(document["overall"])
    overall["submods"]["SWITCH-0"][1][1] = submod_digest(token)
    result = [["JWT", services.sign("nras", document["header"], overall)], {"SWITCH-0": token}]
    evidence = {"provider": "nvidia-nras", "result": result, "switches": document["devices"]}
    records = by_key(services.verifier().verify(submission([evidence])))
    switch = records["SWITCH-0"]
    assert switch["verdict"] == "fail"
    assert {"policy_fail", "debug_enabled"} <= set(switch["reasons"])
    assert "switch-attestation-report-signature-verified" in switch["detail"]
    assert records[None]["verdict"] == "fail"


# ---------------------------------------------------------------------------------------------
# Azure Attestation: SEV-SNP guest and direct tokens, TDX tokens


@pytest.mark.parametrize("name", ["azure_sevsnp_guest.json", "azure_sevsnp_direct.json"])
def test_azure_sevsnp_tokens_verify_in_both_layouts(services: Services, name: str) -> None:
    token = single(services, "maa", name, nonce=NONCE)
    record = only(services.verifier().verify(submission([tokens.cvm_evidence("azure-maa", token)])))
    assert (record["verdict"], record["reasons"]) == ("pass", []), record["detail"]
    assert record["tee_type"] == "sevsnpvm"
    assert record["secure_boot"] is True
    assert record["vm_id"] == "6C9A0E2B-5F41-4D7C-9E8B-3A2D1C0F9E8D"
    assert record["nonce_matched"] is True
    # the TDX allowlist is configured but a SEV-SNP token cannot carry an MRTD
    assert "not applicable: tdx_mrtd" in record["detail"]


def test_azure_tdx_token_has_no_secure_boot_rule_not_applicable(services: Services) -> None:
    token = single(services, "maa", "azure_tdx_cvm.json", nonce=NONCE)
    record = only(services.verifier().verify(submission([tokens.cvm_evidence("azure-maa", token)])))
    assert (record["verdict"], record["reasons"]) == ("pass", []), record["detail"]
    assert record["tee_type"] == "tdxvm"
    assert record["secure_boot"] is None  # not passed: not applicable
    assert record["vm_id"] == "7D0B1F3C-6052-4E8D-AF9C-4B3E2D1A0F9E"
    assert record["measurement"] == MRTD
    assert "not applicable: secure_boot, sevsnp_launch_measurements" in record["detail"]
    assert record["rules_not_applicable"] == ["secure_boot", "sevsnp_launch_measurements"]


def test_azure_sevsnp_token_without_secure_boot_fails_closed(services: Services) -> None:
    document = fixture("azure_sevsnp_direct.json", nonce=NONCE)
    del document["claims"]["x-ms-runtime"]["vm-configuration"]["secure-boot"]
    token = services.sign("maa", document["header"], document["claims"])
    record = only(services.verifier().verify(submission([tokens.cvm_evidence("azure-maa", token)])))
    assert record["verdict"] == "fail" and "policy_fail" in record["reasons"]
    assert "secure boot" in record["detail"]


def test_azure_tdx_token_reporting_secure_boot_off_fails(services: Services) -> None:
    document = fixture("azure_tdx_cvm.json", nonce=NONCE)
    document["claims"]["x-ms-runtime"]["vm-configuration"]["secure-boot"] = False
    token = services.sign("maa", document["header"], document["claims"])
    record = only(services.verifier().verify(submission([tokens.cvm_evidence("azure-maa", token)])))
    assert record["verdict"] == "fail" and "policy_fail" in record["reasons"]


def test_azure_tdx_token_with_debug_enabled_fails(services: Services) -> None:
    document = fixture("azure_tdx_cvm.json", nonce=NONCE)
    document["claims"]["dbgstat"] = "enabled"
    token = services.sign("maa", document["header"], document["claims"])
    record = only(services.verifier().verify(submission([tokens.cvm_evidence("azure-maa", token)])))
    assert "debug_enabled" in record["reasons"]


# ---------------------------------------------------------------------------------------------
# Intel Trust Authority: v1 (top level) and v2 (nested tdx/sgx), attester_held_data


@pytest.mark.parametrize("name", ["ita_v1_tdx.json", "ita_v2_tdx.json"])
def test_ita_tdx_tokens_carry_annex_nonce_in_attester_held_data(
    services: Services, name: str
) -> None:
    nonce, _ = issue_nonce(NONCE_KEY, "cvm-node-1", now=ISSUED, ttl_seconds=600)
    token = single(services, "ita", name, nonce_b64=b64(bytes.fromhex(nonce)))
    verifier = services.verifier(nonce_key=NONCE_KEY)
    evidence = [tokens.cvm_evidence("intel-ita", token)]
    record = only(verifier.verify(submission(evidence, nonce=nonce)))
    assert (record["verdict"], record["reasons"]) == ("pass", []), record["detail"]
    assert record["nonce"] == nonce and record["nonce_matched"] is True
    assert record["freshness_proven"] is True and record["nonce_source"] == "collector"
    assert record["tee_type"] == "tdxvm" and record["measurement"] == MRTD


def test_ita_attester_held_data_may_hold_the_nonce_text(services: Services) -> None:
    token = single(services, "ita", "ita_v2_tdx.json", nonce_b64=b64(NONCE.encode()))
    record = only(services.verifier().verify(submission([tokens.cvm_evidence("intel-ita", token)])))
    assert record["nonce_matched"] is True and record["verdict"] == "pass"


def test_ita_held_data_of_another_nonce_is_a_mismatch(services: Services) -> None:
    token = single(services, "ita", "ita_v1_tdx.json", nonce_b64=b64(b"\x00" * 32))
    record = only(services.verifier().verify(submission([tokens.cvm_evidence("intel-ita", token)])))
    assert record["verdict"] == "fail" and "nonce_mismatch" in record["reasons"]


def test_ita_verifier_nonce_is_intels_not_annexs(services: Services) -> None:
    # a submission naming ITA's own verifier_nonce value as its nonce does not match
    document = fixture("ita_v1_tdx.json", nonce_b64=b64(b"\x01" * 32))
    token = services.sign("ita", document["header"], document["claims"])
    val = document["claims"]["verifier_nonce"]["val"]
    record = only(
        services.verifier().verify(submission([tokens.cvm_evidence("intel-ita", token)], nonce=val))
    )
    assert "nonce_mismatch" in record["reasons"]


def test_ita_malformed_verifier_nonce_fails(services: Services) -> None:
    document = fixture("ita_v1_tdx.json", nonce_b64=b64(NONCE.encode()))
    document["claims"]["verifier_nonce"] = {"val": "x"}
    token = services.sign("ita", document["header"], document["claims"])
    record = only(services.verifier().verify(submission([tokens.cvm_evidence("intel-ita", token)])))
    assert record["verdict"] == "fail" and "verifier_nonce" in record["detail"]


def test_ita_sgx_token_has_sgx_rules_and_no_mrtd_rule(services: Services) -> None:
    token = single(services, "ita", "ita_v2_sgx.json", nonce_b64=b64(NONCE.encode()))
    record = only(services.verifier().verify(submission([tokens.cvm_evidence("intel-ita", token)])))
    assert (record["verdict"], record["reasons"]) == ("pass", []), record["detail"]
    assert record["tee_type"] == "sgx"
    assert "not applicable: tdx_mrtd" in record["detail"]
    assert record["rules_not_applicable"] == ["tdx_mrtd"]
    document = fixture("ita_v2_sgx.json", nonce_b64=b64(NONCE.encode()))
    document["claims"]["sgx"]["sgx_is_debuggable"] = True
    token = services.sign("ita", document["header"], document["claims"])
    record = only(services.verifier().verify(submission([tokens.cvm_evidence("intel-ita", token)])))
    assert "debug_enabled" in record["reasons"]


def test_fixture_times_are_the_documented_lifetimes() -> None:
    """The fixtures keep each service's observed lifetime (reference attestation.md)."""
    nras = fixture("nras_remote_gpu_v3.json")["overall"]
    assert (nras["exp"] - nras["iat"], nras["iat"] - nras["nbf"]) == (3600, 120)
    maa = fixture("azure_sevsnp_guest.json")["claims"]
    assert maa["exp"] - maa["iat"] == 28800
    assert datetime.fromtimestamp(maa["iat"], UTC).replace(tzinfo=None) == ISSUED


def test_the_simulators_ita_token_carries_the_nonce_as_ita_does(tmp_path: Path) -> None:
    """The simulated ITA token puts the agent's user data (annex's nonce) in
    ``tdx.attester_held_data``, where Intel Trust Authority does and annex reads it first."""
    issuers = IssuerSet.create(0)
    nonce, _ = issue_nonce(NONCE_KEY, "cvm-node-1", now=ISSUED, ttl_seconds=600)
    token = tokens.ita_token(issuers, nonce=nonce, issued_at=ISSUED)
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert base64.b64decode(claims["tdx"]["attester_held_data"]) == bytes.fromhex(nonce)

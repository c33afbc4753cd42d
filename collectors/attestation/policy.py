"""Appraisal: whether verified claims describe a platform the configured policy accepts.

Runs only on claims whose signature verified. Each function returns ``(reason, detail)``
pairs, empty when the claims pass. Reason codes: ``debug_enabled`` (a debug interface is open),
``measurement_mismatch`` (a measurement, driver or firmware version outside the allowlists, or
NVIDIA's own measurement comparison failed), ``policy_fail`` (anything else the policy requires:
a failed verifier check, a revoked certificate, a missing claim, an unsupported version).

NVIDIA's example appraisal policy checks neither ``secboot`` nor ``dbgstat`` (reference
attestation.md §1.4); annex's does. Missing security claims fail closed. Enum-valued claims are
compared case-insensitively (``"success"`` in the Python SDK, ``"Success"`` in the C SDK).

Rules are per platform. A rule whose claim the token's platform cannot carry (secure boot on an
Azure TDX token, a SEV-SNP launch measurement on a TDX token, an MRTD allowlist on an SGX
enclave) is neither passed nor failed: it is listed in ``Appraisal.not_applicable`` and the
record's ``detail`` says so (``not applicable: secure_boot ...``); ``secure_boot`` stays NULL.
A rule the platform can carry but the token lacks still fails closed. NVSwitch results are
appraised by switch rules (``nvswitch_detached``), never by the GPU driver/VBIOS rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from annex.settings import AttestationPolicy
from collectors.attestation.claims import (
    flag,
    ita_claim,
    ita_platform,
    ita_verifier_nonce,
    maa_claim,
    maa_secure_boot,
    maa_tee_type,
    table,
    text,
)

Finding = tuple[str, str]


@dataclass(slots=True)
class Appraisal:
    """What the policy found: failing findings, and the configured rules this platform's
    tokens cannot carry (reported as not applicable, never as passed)."""

    findings: list[Finding] = field(default_factory=list)
    not_applicable: list[str] = field(default_factory=list)

    def add(self, reason: str, detail: str) -> None:
        self.findings.append((reason, detail))

    def skip(self, rule: str) -> None:
        if rule not in self.not_applicable:
            self.not_applicable.append(rule)


# Per-GPU checks NRAS must report as passed, by claims version (reference §1.1).
NVIDIA_REQUIRED_CHECKS: dict[str, tuple[str, ...]] = {
    "3.0": (
        "x-nvidia-gpu-attestation-report-parsed",
        "x-nvidia-gpu-attestation-report-signature-verified",
        "x-nvidia-gpu-attestation-report-nonce-match",
    ),
    "2.0": (
        "x-nvidia-gpu-attestation-report-parsed",
        "x-nvidia-gpu-attestation-report-signature-verified",
        "x-nvidia-gpu-attestation-report-nonce-match",
        "x-nvidia-gpu-attestation-report-cert-chain-validated",
    ),
}
NVSWITCH_REQUIRED_CHECKS: tuple[str, ...] = (
    "x-nvidia-switch-attestation-report-parsed",
    "x-nvidia-switch-attestation-report-signature-verified",
    "x-nvidia-switch-attestation-report-nonce-match",
)
"""Per-switch checks NRAS (``/v3/attest/switch``) and nvattest report (claims v3.0; the
local switch verifier's v2.0 adds ``-cert-chain-validated``, which the false-check rule
covers)."""
_CERT_STATUS_GOOD = {"x-nvidia-cert-status": "valid", "x-nvidia-cert-ocsp-status": "good"}


def _lower(value: Any) -> str | None:
    return value.lower() if isinstance(value, str) else None


def _allowed(value: str | None, allowlist: tuple[str, ...]) -> bool:
    """Empty allowlist = any value; otherwise case-insensitive membership (hex digests)."""
    if not allowlist:
        return True
    return value is not None and value.lower() in {item.lower() for item in allowlist}


def nvidia_overall(claims: dict[str, Any], policy: AttestationPolicy) -> list[Finding]:
    """The overall token of an NRAS (or local) result."""
    findings: list[Finding] = []
    version = text(claims.get("x-nvidia-ver"))
    if version not in policy.nvidia_claims_versions:
        findings.append(
            (
                "policy_fail",
                f"claims version x-nvidia-ver={version!r} is not one of "
                f"{list(policy.nvidia_claims_versions)}",
            )
        )
    if claims.get("x-nvidia-overall-att-result") is not True:
        findings.append(("policy_fail", "x-nvidia-overall-att-result is not true"))
    return findings


def _device_security(
    claims: dict[str, Any], policy: AttestationPolicy, version: str | None, device: str
) -> list[Finding]:
    """What every NVIDIA device's claims must show, GPU or NVSwitch: an allowed claims
    version, measurements matching the golden values, debug off, secure boot (when the policy
    asks), a device identity (``ueid``)."""
    findings: list[Finding] = []
    if version not in policy.nvidia_claims_versions:
        findings.append(("policy_fail", f"{device} claims version {version!r} is not allowed"))
    measres = _lower(claims.get("measres"))
    if measres != "success":
        findings.append(
            ("measurement_mismatch", f"measres is {claims.get('measres')!r}, not 'success'")
        )
    dbgstat = _lower(claims.get("dbgstat"))
    if dbgstat is None:
        findings.append(("policy_fail", f"the {device} claims carry no dbgstat"))
    elif dbgstat != "disabled" and not policy.allow_debug:
        findings.append(("debug_enabled", f"{device} dbgstat is {claims.get('dbgstat')!r}"))
    if policy.require_secure_boot and flag(claims.get("secboot")) is not True:
        findings.append(("policy_fail", f"{device} secboot is {claims.get('secboot')!r}, not true"))
    if claims.get("ueid") is None:
        findings.append(("policy_fail", f"the {device} claims carry no ueid (no device identity)"))
    return findings


def nvidia_detached(
    claims: dict[str, Any], policy: AttestationPolicy, version: str | None
) -> list[Finding]:
    """One GPU's claims (v3.0 granular or v2.0 flat booleans)."""
    version = text(claims.get("x-nvidia-ver")) or version
    findings = _device_security(claims, policy, version, "GPU")
    driver = text(claims.get("x-nvidia-gpu-driver-version"))
    if not _allowed(driver, policy.gpu_driver_versions):
        findings.append(("measurement_mismatch", f"GPU driver {driver!r} is not allowlisted"))
    vbios = text(claims.get("x-nvidia-gpu-vbios-version"))
    if not _allowed(vbios, policy.gpu_vbios_versions):
        findings.append(("measurement_mismatch", f"VBIOS {vbios!r} is not allowlisted"))
    findings.extend(_checks_not_passed(claims, NVIDIA_REQUIRED_CHECKS.get(version or "", ())))
    findings.extend(_cert_chains(claims))
    if version == "3.0" and not isinstance(
        claims.get("x-nvidia-gpu-attestation-report-cert-chain"), dict
    ):
        findings.append(("policy_fail", "the GPU claims carry no report certificate chain status"))
    return findings


def _checks_not_passed(claims: dict[str, Any], required: Iterable[str]) -> list[Finding]:
    """One finding naming every NVIDIA check a device's claims do not pass: each required check
    that is not true, and any other ``x-nvidia-*`` claim that is false."""
    failed = [name for name in required if claims.get(name) is not True]
    failed += [
        name
        for name, value in claims.items()
        if name.startswith("x-nvidia-") and value is False and name not in failed
    ]
    if not failed:
        return []
    return [("policy_fail", "NVIDIA checks not passed: " + ", ".join(sorted(failed)))]


def _cert_chains(claims: dict[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for name, value in claims.items():
        if not (name.startswith("x-nvidia-") and name.endswith("-cert-chain")):
            continue
        chain = table(value)
        for status, good in _CERT_STATUS_GOOD.items():
            reported = _lower(chain.get(status))
            if status in chain and reported != good:
                findings.append(("policy_fail", f"{name} {status} is {chain.get(status)!r}"))
    return findings


def nvswitch_detached(
    claims: dict[str, Any], policy: AttestationPolicy, version: str | None
) -> list[Finding]:
    """One NVSwitch's claims: switch checks, security state and certificate status. The GPU
    driver/VBIOS allowlists and GPU checks do not apply to a switch."""
    version = text(claims.get("x-nvidia-ver")) or version
    findings = _device_security(claims, policy, version, "switch")
    findings.extend(_checks_not_passed(claims, NVSWITCH_REQUIRED_CHECKS))
    findings.extend(_cert_chains(claims))
    return findings


MAA_PLATFORMS = ("sevsnpvm", "tdxvm")


def maa(claims: dict[str, Any], policy: AttestationPolicy) -> Appraisal:
    """An Azure Attestation token of a SEV-SNP or TDX confidential VM (guest ``azurevm`` token
    or direct ``sevsnpvm``/``tdxvm`` token). Per platform:

    * secure boot: SEV-SNP tokens carry it (``secureboot`` or ``vm-configuration``'s
      ``secure-boot``) and must report it on; a TDX token that carries it must report it on,
      one that does not (Azure's TDX tokens) has the rule not applicable;
    * debug: SEV-SNP ``x-ms-sevsnpvm-is-debuggable`` must be false (fail closed); TDX
      ``tdx_is_debuggable``/``dbgstat`` (one of them required);
    * measurements: SEV-SNP launch measurement and host data, TDX MRTD, each on its platform.
    """
    result = Appraisal()
    tee = maa_tee_type(claims)
    if tee not in MAA_PLATFORMS:
        result.add("policy_fail", f"x-ms-attestation-type {tee!r} is not sevsnpvm or tdxvm")
    compliance = text(maa_claim(claims, "x-ms-compliance-status"))
    if compliance not in policy.cvm_compliance_status:
        result.add("policy_fail", f"x-ms-compliance-status is {compliance!r}")
    if policy.require_secure_boot:
        secure = maa_secure_boot(claims)
        if tee == "tdxvm" and secure is None:
            result.skip("secure_boot")
        elif secure is not True:
            result.add("policy_fail", "secure boot is not reported as enabled")
    if not policy.allow_debug:
        opened = [
            name
            for name in (
                "x-ms-azurevm-bootdebug-enabled",
                "x-ms-azurevm-kerneldebug-enabled",
                "x-ms-azurevm-hypervisordebug-enabled",
            )
            if claims.get(name) is True
        ]
        if tee == "sevsnpvm":
            debuggable = maa_claim(claims, "x-ms-sevsnpvm-is-debuggable")
            if debuggable is not False:
                opened.append(f"x-ms-sevsnpvm-is-debuggable={debuggable!r}")
        elif tee == "tdxvm":
            if maa_claim(claims, "tdx_is_debuggable") is True:
                opened.append("tdx_is_debuggable")
            dbgstat = _lower(maa_claim(claims, "dbgstat"))
            if dbgstat is not None and dbgstat != "disabled":
                opened.append(f"dbgstat={maa_claim(claims, 'dbgstat')!r}")
            if maa_claim(claims, "tdx_is_debuggable") is None and dbgstat is None:
                result.add("policy_fail", "the TDX token reports no debug state")
        if opened:
            result.add("debug_enabled", "debugging is open: " + ", ".join(opened))
    if claims.get("x-ms-azurevm-testsigning-enabled") is True:
        result.add("policy_fail", "x-ms-azurevm-testsigning-enabled is true")
    if tee == "sevsnpvm":
        launch = text(maa_claim(claims, "x-ms-sevsnpvm-launchmeasurement"))
        if not _allowed(launch, policy.sevsnp_launch_measurements):
            result.add("measurement_mismatch", "the SEV-SNP launch measurement is unknown")
        host_data = text(maa_claim(claims, "x-ms-sevsnpvm-hostdata"))
        if not _allowed(host_data, policy.sevsnp_host_data):
            result.add("measurement_mismatch", "the SEV-SNP host data is not allowlisted")
        if policy.tdx_mrtd:
            result.skip("tdx_mrtd")
    elif tee == "tdxvm":
        mrtd = text(maa_claim(claims, "tdx_mrtd"))
        if not _allowed(mrtd, policy.tdx_mrtd):
            result.add("measurement_mismatch", "the TDX MRTD is not allowlisted")
        if policy.sevsnp_launch_measurements:
            result.skip("sevsnp_launch_measurements")
        if policy.sevsnp_host_data:
            result.skip("sevsnp_host_data")
    return result


def ita(claims: dict[str, Any], policy: AttestationPolicy) -> Appraisal:
    """An Intel Trust Authority token (v1: TDX claims at the top level; v2: nested under
    ``tdx`` or ``sgx``). TDX: debug state required, MRTD allowlist. SGX: ``sgx_is_debuggable``
    required; the MRTD allowlist is not applicable. ``verifier_nonce``, when present, must be
    ITA's ``{val, iat, signature}``."""
    result = Appraisal()
    platform = ita_platform(claims)
    if platform is None:
        result.add("policy_fail", "the token carries neither TDX nor SGX claims")
    tcb = text(ita_claim(claims, "attester_tcb_status"))
    if tcb not in policy.ita_tcb_status:
        result.add("policy_fail", f"attester_tcb_status is {tcb!r}")
    unmatched = ita_claim(claims, "policy_ids_unmatched")
    if isinstance(unmatched, list) and unmatched:
        result.add("policy_fail", f"{len(unmatched)} Trust Authority policies unmatched")
    verifier_nonce = ita_claim(claims, "verifier_nonce")
    if verifier_nonce is not None:
        shaped = ita_verifier_nonce(claims)
        if shaped is None or not all(
            isinstance(shaped.get(name), str) for name in ("val", "iat", "signature")
        ):
            result.add("policy_fail", "verifier_nonce is not ITA's {val, iat, signature}")
    if not policy.allow_debug:
        dbgstat = _lower(ita_claim(claims, "dbgstat"))
        opened = []
        if dbgstat is not None and dbgstat != "disabled":
            opened.append(f"dbgstat={ita_claim(claims, 'dbgstat')!r}")
        if platform == "sgx":
            debuggable = ita_claim(claims, "sgx_is_debuggable")
            if debuggable is True:
                opened.append("sgx_is_debuggable")
            elif debuggable is None and dbgstat is None:
                result.add("policy_fail", "the token reports no SGX debug state")
        else:
            opened += [
                name
                for name in ("tdx_is_debuggable", "tdx_td_attributes_debug")
                if ita_claim(claims, name) is True
            ]
            if ita_claim(claims, "tdx_is_debuggable") is None and dbgstat is None:
                result.add("policy_fail", "the token reports no TDX debug state")
        if opened:
            result.add("debug_enabled", "debugging is open: " + ", ".join(opened))
    if platform == "sgx":
        if policy.tdx_mrtd:
            result.skip("tdx_mrtd")
    else:
        mrtd = text(ita_claim(claims, "tdx_mrtd"))
        if not _allowed(mrtd, policy.tdx_mrtd):
            result.add("measurement_mismatch", "the TDX MRTD is not allowlisted")
    return result

"""Appraisal: whether verified claims describe a platform the configured policy accepts.

Runs only on claims whose signature verified. Each function returns ``(reason, detail)``
pairs, empty when the claims pass. Reason codes: ``debug_enabled`` (a debug interface is open),
``measurement_mismatch`` (a measurement, driver or firmware version outside the allowlists, or
NVIDIA's own measurement comparison failed), ``policy_fail`` (anything else the policy requires:
a failed verifier check, a revoked certificate, a missing claim, an unsupported version).

NVIDIA's example appraisal policy checks neither ``secboot`` nor ``dbgstat`` (reference
attestation.md §1.4); annex's does. Missing security claims fail closed. Enum-valued claims are
compared case-insensitively (``"success"`` in the Python SDK, ``"Success"`` in the C SDK).
"""

from __future__ import annotations

from typing import Any

from annex.settings import AttestationPolicy
from collectors.attestation.claims import (
    flag,
    ita_claim,
    maa_claim,
    maa_tee_type,
    table,
    text,
)

Finding = tuple[str, str]

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


def nvidia_detached(
    claims: dict[str, Any], policy: AttestationPolicy, version: str | None
) -> list[Finding]:
    """One GPU's claims (v3.0 granular or v2.0 flat booleans)."""
    findings: list[Finding] = []
    version = text(claims.get("x-nvidia-ver")) or version
    if version not in policy.nvidia_claims_versions:
        findings.append(("policy_fail", f"GPU claims version {version!r} is not allowed"))
    measres = _lower(claims.get("measres"))
    if measres != "success":
        findings.append(
            ("measurement_mismatch", f"measres is {claims.get('measres')!r}, not 'success'")
        )
    dbgstat = _lower(claims.get("dbgstat"))
    if dbgstat is None:
        findings.append(("policy_fail", "the GPU claims carry no dbgstat"))
    elif dbgstat != "disabled" and not policy.allow_debug:
        findings.append(("debug_enabled", f"GPU dbgstat is {claims.get('dbgstat')!r}"))
    secboot = flag(claims.get("secboot"))
    if policy.require_secure_boot and secboot is not True:
        findings.append(("policy_fail", f"GPU secboot is {claims.get('secboot')!r}, not true"))
    if claims.get("ueid") is None:
        findings.append(("policy_fail", "the GPU claims carry no ueid (no device identity)"))
    driver = text(claims.get("x-nvidia-gpu-driver-version"))
    if not _allowed(driver, policy.gpu_driver_versions):
        findings.append(("measurement_mismatch", f"GPU driver {driver!r} is not allowlisted"))
    vbios = text(claims.get("x-nvidia-gpu-vbios-version"))
    if not _allowed(vbios, policy.gpu_vbios_versions):
        findings.append(("measurement_mismatch", f"VBIOS {vbios!r} is not allowlisted"))
    failed = [
        name
        for name in NVIDIA_REQUIRED_CHECKS.get(version or "", ())
        if claims.get(name) is not True
    ]
    failed += [
        name
        for name, value in claims.items()
        if name.startswith("x-nvidia-") and value is False and name not in failed
    ]
    if failed:
        findings.append(("policy_fail", "NVIDIA checks not passed: " + ", ".join(sorted(failed))))
    for name, value in claims.items():
        if not (name.startswith("x-nvidia-") and name.endswith("-cert-chain")):
            continue
        chain = table(value)
        for status, good in _CERT_STATUS_GOOD.items():
            reported = _lower(chain.get(status))
            if status in chain and reported != good:
                findings.append(("policy_fail", f"{name} {status} is {chain.get(status)!r}"))
    if version == "3.0" and not isinstance(
        claims.get("x-nvidia-gpu-attestation-report-cert-chain"), dict
    ):
        findings.append(("policy_fail", "the GPU claims carry no report certificate chain status"))
    return findings


def maa(claims: dict[str, Any], policy: AttestationPolicy) -> list[Finding]:
    """An Azure Attestation guest token of a SEV-SNP or TDX confidential VM."""
    findings: list[Finding] = []
    tee = maa_tee_type(claims)
    if tee not in ("sevsnpvm", "tdxvm"):
        findings.append(("policy_fail", f"x-ms-attestation-type {tee!r} is not sevsnpvm or tdxvm"))
    compliance = text(maa_claim(claims, "x-ms-compliance-status"))
    if compliance not in policy.cvm_compliance_status:
        findings.append(("policy_fail", f"x-ms-compliance-status is {compliance!r}"))
    if policy.require_secure_boot:
        secure = flag(claims.get("secureboot"))
        if secure is None:
            runtime = table(table(claims.get("x-ms-isolation-tee")).get("x-ms-runtime"))
            secure = flag(table(runtime.get("vm-configuration")).get("secure-boot"))
        if secure is not True:
            findings.append(("policy_fail", "secure boot is not reported as enabled"))
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
        if opened:
            findings.append(("debug_enabled", "debugging is open: " + ", ".join(opened)))
    if claims.get("x-ms-azurevm-testsigning-enabled") is True:
        findings.append(("policy_fail", "x-ms-azurevm-testsigning-enabled is true"))
    if tee == "sevsnpvm":
        launch = text(maa_claim(claims, "x-ms-sevsnpvm-launchmeasurement"))
        if not _allowed(launch, policy.sevsnp_launch_measurements):
            findings.append(("measurement_mismatch", "the SEV-SNP launch measurement is unknown"))
        host_data = text(maa_claim(claims, "x-ms-sevsnpvm-hostdata"))
        if not _allowed(host_data, policy.sevsnp_host_data):
            findings.append(("measurement_mismatch", "the SEV-SNP host data is not allowlisted"))
    elif tee == "tdxvm":
        mrtd = text(maa_claim(claims, "tdx_mrtd"))
        if not _allowed(mrtd, policy.tdx_mrtd):
            findings.append(("measurement_mismatch", "the TDX MRTD is not allowlisted"))
    return findings


def ita(claims: dict[str, Any], policy: AttestationPolicy) -> list[Finding]:
    """An Intel Trust Authority token of a TDX trust domain."""
    findings: list[Finding] = []
    tcb = text(ita_claim(claims, "attester_tcb_status"))
    if tcb not in policy.ita_tcb_status:
        findings.append(("policy_fail", f"attester_tcb_status is {tcb!r}"))
    unmatched = ita_claim(claims, "policy_ids_unmatched")
    if isinstance(unmatched, list) and unmatched:
        findings.append(("policy_fail", f"{len(unmatched)} Trust Authority policies unmatched"))
    if not policy.allow_debug:
        opened = [
            name
            for name in ("tdx_is_debuggable", "tdx_td_attributes_debug")
            if ita_claim(claims, name) is True
        ]
        dbgstat = _lower(ita_claim(claims, "dbgstat"))
        if dbgstat is not None and dbgstat != "disabled":
            opened.append(f"dbgstat={ita_claim(claims, 'dbgstat')!r}")
        if ita_claim(claims, "tdx_is_debuggable") is None and dbgstat is None:
            findings.append(("policy_fail", "the token reports no TDX debug state"))
        if opened:
            findings.append(("debug_enabled", "debugging is open: " + ", ".join(opened)))
    mrtd = text(ita_claim(claims, "tdx_mrtd"))
    if not _allowed(mrtd, policy.tdx_mrtd):
        findings.append(("measurement_mismatch", "the TDX MRTD is not allowlisted"))
    return findings

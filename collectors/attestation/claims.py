"""Where each provider puts the facts annex keeps, read from a (verified) claim set.

The record columns are the same for every provider (reference attestation.md §6); the claim
names are not: NRAS v3.0 and v2.0 (§1.1), Azure Attestation's SEV-SNP and TDX guest tokens
(§2), Intel Trust Authority's v2 token with TDX claims nested under ``tdx`` (§3). Values are
read defensively: a claim of the wrong JSON type is treated as absent, never trusted by type
coercion (a string ``"false"`` is not ``False``). Appraisal against the policy is in
``policy.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NVIDIA_PROVIDERS = frozenset({"nvidia-nras", "nvidia-local"})
CVM_PROVIDERS = frozenset({"azure-maa", "intel-ita"})


@dataclass(slots=True)
class Facts:
    """The columns of a record that come from its claims (all optional)."""

    nonce: str | None = None
    device_ueid: str | None = None
    vm_id: str | None = None
    tee_type: str | None = None
    hw_model: str | None = None
    driver_version: str | None = None
    vbios_version: str | None = None
    debug_enabled: bool | None = None
    secure_boot: bool | None = None
    measurement: str | None = None
    tcb_status: str | None = None


def text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _identifier(value: Any) -> str | None:
    """A device identity: NRAS ``ueid`` is a decimal string (a certificate serial); accept an
    integer too, written in decimal, since JSON producers differ."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _debug_from_dbgstat(value: Any) -> bool | None:
    status = text(value)
    if status is None:
        return None
    return status.lower() != "disabled"


def nvidia_overall_facts(claims: dict[str, Any]) -> Facts:
    return Facts(nonce=text(claims.get("eat_nonce")))


def nvidia_detached_facts(claims: dict[str, Any]) -> Facts:
    """A per-GPU claim set (v3.0 or v2.0: the identity and state claims are shared)."""
    return Facts(
        nonce=text(claims.get("eat_nonce")),
        device_ueid=_identifier(claims.get("ueid")),
        hw_model=text(claims.get("hwmodel")),
        driver_version=text(claims.get("x-nvidia-gpu-driver-version")),
        vbios_version=text(claims.get("x-nvidia-gpu-vbios-version")),
        debug_enabled=_debug_from_dbgstat(claims.get("dbgstat")),
        secure_boot=flag(claims.get("secboot")),
    )


def maa_isolation(claims: dict[str, Any]) -> dict[str, Any]:
    return table(claims.get("x-ms-isolation-tee"))


def maa_claim(claims: dict[str, Any], name: str) -> Any:
    """A TEE claim of an Azure Attestation token: inside ``x-ms-isolation-tee`` for guest
    (``azurevm``) tokens, at the top level for direct SEV-SNP/TDX tokens."""
    isolation = maa_isolation(claims)
    if name in isolation:
        return isolation[name]
    return claims.get(name)


def maa_tee_type(claims: dict[str, Any]) -> str | None:
    value = text(maa_isolation(claims).get("x-ms-attestation-type"))
    if value is None:
        value = text(claims.get("x-ms-attestation-type"))
    return value.lower() if value else None


def maa_facts(claims: dict[str, Any]) -> Facts:
    tee = maa_tee_type(claims)
    runtime = table(claims.get("x-ms-runtime"))
    nonce = text(table(runtime.get("client-payload")).get("nonce"))
    if nonce is None:
        nonce = text(claims.get("nonce"))
    debug_flags = [
        flag(claims.get(name))
        for name in (
            "x-ms-azurevm-bootdebug-enabled",
            "x-ms-azurevm-kerneldebug-enabled",
            "x-ms-azurevm-hypervisordebug-enabled",
        )
    ]
    if tee == "sevsnpvm":
        debug_flags.append(flag(maa_claim(claims, "x-ms-sevsnpvm-is-debuggable")))
        measurement = text(maa_claim(claims, "x-ms-sevsnpvm-launchmeasurement"))
    elif tee == "tdxvm":
        debug_flags.append(_debug_from_dbgstat(maa_claim(claims, "dbgstat")))
        debug_flags.append(flag(maa_claim(claims, "tdx_is_debuggable")))
        measurement = text(maa_claim(claims, "tdx_mrtd"))
    else:
        measurement = None
    known = [value for value in debug_flags if value is not None]
    secure_boot = flag(claims.get("secureboot"))
    if secure_boot is None:
        secure_boot = flag(
            table(table(maa_isolation(claims).get("x-ms-runtime")).get("vm-configuration")).get(
                "secure-boot"
            )
        )
    return Facts(
        nonce=nonce,
        vm_id=text(claims.get("x-ms-azurevm-vmid")),
        tee_type=tee,
        debug_enabled=any(known) if known else None,
        secure_boot=secure_boot,
        measurement=measurement,
    )


def ita_tdx(claims: dict[str, Any]) -> dict[str, Any]:
    """ITA v2 nests the TDX claims under ``tdx``; v1 has them at the top level."""
    nested = claims.get("tdx")
    return nested if isinstance(nested, dict) else claims


def ita_claim(claims: dict[str, Any], name: str) -> Any:
    tdx = ita_tdx(claims)
    return tdx[name] if name in tdx else claims.get(name)


def ita_facts(claims: dict[str, Any]) -> Facts:
    nonce = text(claims.get("eat_nonce"))
    if nonce is None:
        nonce = text(table(ita_claim(claims, "attester_runtime_data")).get("nonce"))
    debug = [
        flag(ita_claim(claims, "tdx_is_debuggable")),
        flag(ita_claim(claims, "tdx_td_attributes_debug")),
        _debug_from_dbgstat(ita_claim(claims, "dbgstat")),
    ]
    known = [value for value in debug if value is not None]
    return Facts(
        nonce=nonce,
        tee_type="tdxvm",
        debug_enabled=any(known) if known else None,
        measurement=text(ita_claim(claims, "tdx_mrtd")),
        tcb_status=text(ita_claim(claims, "attester_tcb_status")),
    )

"""Where each provider puts the facts annex keeps, read from a (verified) claim set.

The record columns are the same for every provider (reference attestation.md §6); the claim
names are not: NRAS v3.0 and v2.0 (§1.1) for GPUs and NVSwitches, Azure Attestation's
SEV-SNP and TDX tokens (§2: the guest ``azurevm`` token nests the TEE claims under
``x-ms-isolation-tee``, the direct SEV-SNP/TDX tokens carry them at the top level), Intel Trust
Authority's v1 token (TDX claims at the top level) and v2 token (nested under ``tdx`` or
``sgx``) (§3). Every documented placement of a fact is read here, in one place. Values are
read defensively: a claim of the wrong JSON type is treated as absent, never trusted by type
coercion (a string ``"false"`` is not ``False``). Appraisal against the policy is in
``policy.py``.
"""

from __future__ import annotations

import base64
import binascii
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
    nonce_forms: tuple[str, ...] = ()
    """Every text the token's nonce claim can stand for (ITA's base64 ``attester_held_data``
    is the nonce's 32 bytes or its text): a submission nonce equal to one of them matches."""


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


def is_nvswitch(submod_key: str | None, claims: dict[str, Any] | None) -> bool:
    """An NVSwitch's detached claims (NRAS ``/v3/attest/switch``): keyed ``SWITCH-<n>``, or
    typed ``x-nvidia-device-type: nvswitch``, or carrying ``x-nvidia-switch-*`` claims."""
    if submod_key is not None and submod_key.upper().startswith("SWITCH-"):
        return True
    claims = claims or {}
    if text(claims.get("x-nvidia-device-type")) == "nvswitch":
        return True
    return any(name.startswith("x-nvidia-switch-") for name in claims)


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


def nvswitch_detached_facts(claims: dict[str, Any]) -> Facts:
    """A per-NVSwitch claim set: the switch BIOS is its firmware (kept as ``vbios_version``)."""
    return Facts(
        nonce=text(claims.get("eat_nonce")),
        device_ueid=_identifier(claims.get("ueid")),
        hw_model=text(claims.get("hwmodel")),
        vbios_version=text(claims.get("x-nvidia-switch-bios-version")),
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


def maa_runtime_blocks(claims: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``x-ms-runtime`` object of a token, most specific first: the TEE's (guest token,
    ``x-ms-isolation-tee.x-ms-runtime``), then the top level's (guest token's client payload;
    a direct SEV-SNP/TDX token's runtime data)."""
    blocks = [table(maa_isolation(claims).get("x-ms-runtime")), table(claims.get("x-ms-runtime"))]
    return [block for block in blocks if block]


def maa_vm_configuration(claims: dict[str, Any], name: str) -> Any:
    """A ``vm-configuration`` claim (``secure-boot``, ``vmUniqueId``, ...) wherever the token
    version puts it: under the TEE's runtime claims, else under the top-level runtime claims."""
    for block in maa_runtime_blocks(claims):
        configuration = table(block.get("vm-configuration"))
        if name in configuration:
            return configuration[name]
    return None


def maa_secure_boot(claims: dict[str, Any]) -> bool | None:
    """Secure boot: the guest token's top-level ``secureboot``, else ``vm-configuration``'s
    ``secure-boot``; None when the token carries neither (Azure's TDX tokens carry none)."""
    value = flag(claims.get("secureboot"))
    if value is None:
        value = flag(maa_vm_configuration(claims, "secure-boot"))
    return value


def maa_vm_id(claims: dict[str, Any]) -> str | None:
    """The VM id: ``x-ms-azurevm-vmid`` (guest token), else ``vmUniqueId`` of the runtime
    ``vm-configuration`` (direct SEV-SNP/TDX tokens and the TEE's runtime claims)."""
    value = text(claims.get("x-ms-azurevm-vmid"))
    if value is None:
        value = text(maa_vm_configuration(claims, "vmUniqueId"))
    return value


def maa_nonce(claims: dict[str, Any]) -> str | None:
    """The relying party's nonce: ``client-payload.nonce`` of a runtime block, else the
    top-level ``nonce`` Azure Attestation echoes from the attest request."""
    for block in maa_runtime_blocks(claims):
        value = text(table(block.get("client-payload")).get("nonce"))
        if value is not None:
            return value
    return text(claims.get("nonce"))


def maa_facts(claims: dict[str, Any]) -> Facts:
    tee = maa_tee_type(claims)
    nonce = maa_nonce(claims)
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
    return Facts(
        nonce=nonce,
        vm_id=maa_vm_id(claims),
        tee_type=tee,
        debug_enabled=any(known) if known else None,
        secure_boot=maa_secure_boot(claims),
        measurement=measurement,
        nonce_forms=(nonce,) if nonce is not None else (),
    )


ITA_PLATFORMS = ("tdx", "sgx")
"""The TEE claim groups an Intel Trust Authority v2 token nests (``tdx`` or ``sgx``)."""


def ita_platform(claims: dict[str, Any]) -> str | None:
    """'tdx' or 'sgx': the nested group of a v2 token, else a v1 token's ``attester_type``,
    else the prefix of its quote claims."""
    for name in ITA_PLATFORMS:
        if isinstance(claims.get(name), dict):
            return name
    attester = text(claims.get("attester_type"))
    if attester is not None and attester.lower() in ITA_PLATFORMS:
        return attester.lower()
    if any(name.startswith("tdx_") for name in claims):
        return "tdx"
    if any(name.startswith("sgx_") for name in claims):
        return "sgx"
    return None


def ita_tdx(claims: dict[str, Any]) -> dict[str, Any]:
    """The TEE claims: v2 nests them under ``tdx`` (or ``sgx``); v1 has them at the top level."""
    for name in ITA_PLATFORMS:
        nested = claims.get(name)
        if isinstance(nested, dict):
            return nested
    return claims


def ita_claim(claims: dict[str, Any], name: str) -> Any:
    tdx = ita_tdx(claims)
    return tdx[name] if name in tdx else claims.get(name)


def ita_held_data_forms(value: Any) -> tuple[str, ...]:
    """What an ``attester_held_data`` (standard base64 of the user data the attester gave ITA)
    can stand for as a nonce: its bytes in lowercase hex (the agent sent annex's 64-hex nonce
    as its 32 bytes) and its UTF-8 text (the agent sent the nonce's text)."""
    data = text(value)
    if not data:
        return ()
    try:
        raw = base64.b64decode(data + "=" * (-len(data) % 4), validate=True)
    except (ValueError, binascii.Error):
        try:
            raw = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
        except (ValueError, binascii.Error):
            return ()
    forms = [raw.hex()]
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        decoded = None
    if decoded and decoded not in forms:
        forms.append(decoded)
    return tuple(forms)


def ita_verifier_nonce(claims: dict[str, Any]) -> dict[str, Any] | None:
    """ITA's own ``verifier_nonce`` (``{val, iat, signature}``), top level or nested."""
    value = ita_claim(claims, "verifier_nonce")
    return value if isinstance(value, dict) else None


def ita_facts(claims: dict[str, Any]) -> Facts:
    """The relying party's nonce where each token version puts it: ``attester_held_data``
    (base64 user data, v1 top level, v2 under ``tdx``/``sgx``), else ``eat_nonce``, else
    ``attester_runtime_data.nonce``. ITA's ``verifier_nonce`` is Intel's, never annex's."""
    forms = list(ita_held_data_forms(ita_claim(claims, "attester_held_data")))
    for value in (
        text(claims.get("eat_nonce")),
        text(table(ita_claim(claims, "attester_runtime_data")).get("nonce")),
    ):
        if value is not None and value not in forms:
            forms.append(value)
    platform = ita_platform(claims)
    if platform == "sgx":
        debug = [flag(ita_claim(claims, "sgx_is_debuggable"))]
        measurement = text(ita_claim(claims, "sgx_mrenclave"))
    else:
        debug = [
            flag(ita_claim(claims, "tdx_is_debuggable")),
            flag(ita_claim(claims, "tdx_td_attributes_debug")),
        ]
        measurement = text(ita_claim(claims, "tdx_mrtd"))
    debug.append(_debug_from_dbgstat(ita_claim(claims, "dbgstat")))
    known = [value for value in debug if value is not None]
    return Facts(
        nonce=forms[0] if forms else None,
        tee_type="sgx" if platform == "sgx" else "tdxvm",
        debug_enabled=any(known) if known else None,
        measurement=measurement,
        tcb_status=text(ita_claim(claims, "attester_tcb_status")),
        nonce_forms=tuple(forms),
    )

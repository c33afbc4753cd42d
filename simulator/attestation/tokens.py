"""Claim sets of the simulated attestation tokens, and the submissions agents send.

Shapes follow the real services (reference/attestation.md §1-3):

- NRAS (`nras_result`): the detached EAT `[["JWT", overall], {"GPU-0": jws, ...}]`. Claims
  v3.0 nest each certificate chain's status in an object
  (`x-nvidia-gpu-attestation-report-cert-chain: {x-nvidia-cert-status, ...-ocsp-status,
  ...}`); v2.0 has flat booleans (`...-cert-chain-validated`, `...-rim-cert-validated`).
  The overall token's `submods[key]` is `["DIGEST", ["SHA-256", hex]]`, hex being SHA-256
  of the exact compact JWS text (ASCII) of the detached token (`submod_digest`).
  Lifetime 3600 s, `nbf = iat - 120`, `eat_nonce` a 64-hex string.
- MAA (`maa_token`): an Azure guest-attestation token, `x-ms-attestation-type: azurevm`,
  the TEE under `x-ms-isolation-tee` (`sevsnpvm` or `tdxvm`), the nonce at
  `x-ms-runtime.client-payload.nonce`, the VM id at `x-ms-azurevm-vmid`. 8 h lifetime.
- ITA (`ita_token`): a v2 token with the TDX claims nested under `tdx`; the relying party's
  user data (the nonce's bytes: hex-decoded when it is hex, else its UTF-8) base64 at
  `tdx.attester_held_data`, as Intel Trust Authority carries it; the attester's runtime data
  (with the nonce) at `tdx.attester_runtime_data.nonce`, the nonce also as top-level
  `eat_nonce`. Lifetime `ITA_LIFETIME_SECONDS`.
- Local verifier (`local_result`): the NRAS shape, HS256 with the public constant secret.

Nonce locations, for verifiers: NRAS `eat_nonce` (overall and every detached token), MAA
`x-ms-runtime.client-payload.nonce`, ITA `tdx.attester_held_data` (base64), `eat_nonce` and
`tdx.attester_runtime_data.nonce`.

Faults (`FAULTS`) change exactly the claims (or signing key) they name, so a test can
diff a faulty token against a clean one; `NRAS_FAULTS` and `CVM_FAULTS` say which token
builders accept which. Claims are deterministic functions of the arguments except `jti`, a
random UUID as the services issue (so tokens minted alike for many nodes never look like
replays); the signatures are not deterministic either (ECDSA and PSS are randomised).
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

import orjson

from simulator.attestation.issuers import (
    NRAS_STAGING_ISSUER,
    IssuerSet,
    SimulatedIssuer,
    b64url,
)
from simulator.world.catalog import DRIVER

SCHEMA = "annex.attestation/v1"
DEFAULT_AGENT = "simulated-agent/1"
DRIVER_VERSION = f"{DRIVER[0]}.{DRIVER[1]}.{DRIVER[2]}"
VBIOS_VERSION = "96.00.9F.00.01"
HW_MODEL = "GH100 A01 GSP BROM"
OEM_ID = "5703"

NRAS_LIFETIME_SECONDS = 3600
NRAS_NBF_SKEW_SECONDS = 120
MAA_LIFETIME_SECONDS = 8 * 3600
# ITA's token lifetime is a tenant setting; an hour keeps 50-minute attestations continuous
ITA_LIFETIME_SECONDS = 3600
# an "expired" token was minted this long before it is submitted (an agent replaying a cache)
EXPIRED_AGE_SECONDS = 2 * 3600

NRAS_FAULTS = frozenset(
    {
        "debug_enabled",  # GPU-0 dbgstat "enabled" (overall result stays true: N16)
        "measurement_mismatch",  # GPU-0 measres "failure", overall result false
        "expired",  # every token minted EXPIRED_AGE_SECONDS earlier (iat, nbf, exp)
        "revoked_certificate",  # signed with the key whose intermediate is revoked
        "wrong_gpu",  # GPU-0 ueid belongs to another GPU (`foreign_ueid`)
        "ocsp_revoked",  # GPU-0 attestation-report cert chain revoked (overall stays true)
        "nonce_mismatch",  # every eat_nonce differs from the submission's nonce
        "submod_digest_mismatch",  # overall submods["GPU-0"] digest is not GPU-0's token's
        "staging_issuer",  # iss is NRAS staging's, not production's
        "forged_signature",  # signed by the attacker's key under the real kid
    }
)
CVM_FAULTS = frozenset(
    {
        "debug_enabled",  # SEV-SNP is-debuggable / TDX debug attribute, dbgstat
        "measurement_mismatch",  # launch measurement / MRTD not the golden value
        "expired",
        "revoked_certificate",
        "nonce_mismatch",
        "forged_signature",
        "not_compliant",  # MAA x-ms-compliance-status not azure-compliant-cvm
        "tcb_out_of_date",  # ITA attester_tcb_status OutOfDate
    }
)
FAULTS: frozenset[str] = NRAS_FAULTS | CVM_FAULTS

# reference values an appraisal policy can allowlist (see `policy_toml`)
GOLDEN_SEVSNP_LAUNCH_MEASUREMENT = hashlib.sha384(b"annex-sim/sevsnp/launch").hexdigest()
GOLDEN_TDX_MRTD = hashlib.sha384(b"annex-sim/tdx/mrtd").hexdigest()
SEVSNP_HOST_DATA = "0" * 64
_BAD_MEASUREMENT = hashlib.sha384(b"annex-sim/tampered-image").hexdigest()


# -- identities ----------------------------------------------------------------------------


def gpu_ueid(seed: int, gpu_uuid: str) -> str:
    """The GPU's signed identity: a 159-bit decimal string, like its device cert serial."""
    digest = hashlib.sha256(f"annex-sim/ueid/{seed}/{gpu_uuid}".encode()).digest()
    return str(int.from_bytes(digest[:20], "big") >> 1)


def azure_vm_id(system_uuid: str) -> str:
    """The VM id MAA reports for a node: its SMBIOS system UUID with the first three fields
    byte-swapped (Azure's vmId and the SMBIOS UUID differ in endianness), upper case."""
    hex_ = system_uuid.replace("-", "").lower()
    raw = bytes.fromhex(hex_)
    swapped = raw[3::-1] + raw[5:3:-1] + raw[7:5:-1] + raw[8:]
    return str(uuid.UUID(bytes=swapped)).upper()


def attester_nonce(*parts: object) -> str:
    """A nonce an attester chose itself (no collector nonce), stable per `parts`.

    48 hex characters (24 bytes): never the 64-hex shape of a collector-issued nonce
    (contract §3), so the verifier classes it as the attester's own, not as a forgery.
    """
    digest = hashlib.sha256("/".join(map(str, ("annex-sim/nonce", *parts))).encode())
    return digest.hexdigest()[:48]


def submod_digest(detached_jws: str) -> str:
    """SHA-256 hex of the exact compact JWS text of a detached token (what `submods` holds)."""
    return hashlib.sha256(detached_jws.encode("ascii")).hexdigest()


# -- NRAS ----------------------------------------------------------------------------------


def nras_result(
    issuers: IssuerSet,
    *,
    gpus: Sequence[tuple[str, str]],
    nonce: str,
    issued_at: datetime,
    claims_version: str = "3.0",
    fault: str | None = None,
    driver_version: str = DRIVER_VERSION,
    vbios_version: str = VBIOS_VERSION,
    foreign_ueid: str | None = None,
) -> list:
    """An NRAS detached EAT for `gpus` ((gpu_uuid, ueid) each; submod key "GPU-<index>").

    `wrong_gpu` puts `foreign_ueid` in GPU-0's token (default: the last GPU's ueid, so the
    envelope names one device twice; a single-GPU envelope gets an unrelated ueid).
    """
    return _gpu_result(
        issuers,
        issuers.nras,
        gpus=gpus,
        nonce=nonce,
        issued_at=issued_at,
        claims_version=claims_version,
        fault=fault,
        driver_version=driver_version,
        vbios_version=vbios_version,
        foreign_ueid=foreign_ueid,
    )


def local_result(
    issuers: IssuerSet,
    *,
    gpus: Sequence[tuple[str, str]],
    nonce: str,
    issued_at: datetime,
    claims_version: str = "3.0",
    driver_version: str = DRIVER_VERSION,
    vbios_version: str = VBIOS_VERSION,
) -> list:
    """The local GPU verifier's result: NRAS-shaped, HS256 with a public constant secret."""
    return _gpu_result(
        issuers,
        issuers.local,
        gpus=gpus,
        nonce=nonce,
        issued_at=issued_at,
        claims_version=claims_version,
        fault=None,
        driver_version=driver_version,
        vbios_version=vbios_version,
        foreign_ueid=None,
    )


def _gpu_result(
    issuers: IssuerSet,
    issuer: SimulatedIssuer,
    *,
    gpus: Sequence[tuple[str, str]],
    nonce: str,
    issued_at: datetime,
    claims_version: str,
    fault: str | None,
    driver_version: str,
    vbios_version: str,
    foreign_ueid: str | None,
) -> list:
    _check_fault(fault, NRAS_FAULTS, "nras_result")
    if claims_version not in ("2.0", "3.0"):
        raise ValueError(f"claims_version must be '2.0' or '3.0', got {claims_version!r}")
    if not gpus:
        raise ValueError("an NRAS result needs at least one GPU")
    iat = _epoch(issued_at) - (EXPIRED_AGE_SECONDS if fault == "expired" else 0)
    times = {"nbf": iat - NRAS_NBF_SKEW_SECONDS, "iat": iat, "exp": iat + NRAS_LIFETIME_SECONDS}
    iss = NRAS_STAGING_ISSUER if fault == "staging_issuer" else issuer.iss
    token_nonce = _other_nonce(nonce) if fault == "nonce_mismatch" else nonce
    signer, sign_options = _signer(issuers, issuer, fault)
    detached: dict[str, str] = {}
    for index, (_gpu_uuid, ueid) in enumerate(gpus):
        key = f"GPU-{index}"
        gpu_fault = fault if index == 0 else None
        if gpu_fault == "wrong_gpu":
            ueid = foreign_ueid or (
                gpus[-1][1] if len(gpus) > 1 else gpu_ueid(-1, f"foreign-{ueid}")
            )
        claims = _gpu_claims(
            claims_version, iss, token_nonce, ueid, driver_version, vbios_version, gpu_fault
        )
        claims.update(times)
        claims["jti"] = _jti()
        detached[key] = signer.sign(claims, **sign_options)
    submods = {key: ["DIGEST", ["SHA-256", submod_digest(jws)]] for key, jws in detached.items()}
    if fault == "submod_digest_mismatch":
        submods["GPU-0"] = ["DIGEST", ["SHA-256", hashlib.sha256(b"not GPU-0").hexdigest()]]
    overall = {
        "sub": "NVIDIA-PLATFORM-ATTESTATION",
        "x-nvidia-ver": claims_version,
        "nbf": times["nbf"],
        "iss": iss,
        "x-nvidia-overall-att-result": fault != "measurement_mismatch",
        "submods": submods,
        "eat_nonce": token_nonce,
        "iat": iat,
        "jti": _jti(),
        "exp": times["exp"],
    }
    return [["JWT", signer.sign(overall, **sign_options)], detached]


def _gpu_claims(
    version: str,
    iss: str,
    nonce: str,
    ueid: str,
    driver: str,
    vbios: str,
    fault: str | None,
) -> dict:
    measres = "failure" if fault == "measurement_mismatch" else "success"
    dbgstat = "enabled" if fault == "debug_enabled" else "disabled"
    report_revoked = fault == "ocsp_revoked"
    if version == "2.0":
        return {
            "x-nvidia-gpu-driver-rim-schema-validated": True,
            "iss": iss,
            "x-nvidia-gpu-attestation-report-cert-chain-validated": not report_revoked,
            "eat_nonce": nonce,
            "x-nvidia-gpu-vbios-rim-signature-verified": True,
            "x-nvidia-gpu-vbios-rim-fetched": True,
            "ueid": ueid,
            "x-nvidia-gpu-attestation-report-nonce-match": True,
            "x-nvidia-gpu-vbios-index-no-conflict": True,
            "x-nvidia-gpu-vbios-rim-cert-validated": True,
            "x-nvidia-gpu-attestation-report-parsed": True,
            "x-nvidia-gpu-driver-rim-signature-verified": True,
            "x-nvidia-gpu-arch-check": True,
            "x-nvidia-gpu-driver-version": driver,
            "x-nvidia-gpu-driver-rim-measurements-available": True,
            "x-nvidia-gpu-attestation-report-signature-verified": True,
            "hwmodel": HW_MODEL,
            "x-nvidia-gpu-driver-rim-fetched": True,
            "oemid": OEM_ID,
            "x-nvidia-gpu-vbios-rim-schema-validated": True,
            "measres": measres,
            "x-nvidia-gpu-driver-rim-cert-validated": True,
            "x-nvidia-gpu-vbios-version": vbios,
            "x-nvidia-gpu-vbios-rim-measurements-available": True,
            "secboot": True,
            "dbgstat": dbgstat,
        }
    report_chain = _cert_chain("9999-12-31T23:59:59")
    if report_revoked:
        report_chain = {
            "x-nvidia-cert-expiration-date": "9999-12-31T23:59:59",
            "x-nvidia-cert-status": "revoked",
            "x-nvidia-cert-ocsp-status": "revoked",
            "x-nvidia-cert-revocation-reason": "keyCompromise",
        }
    return {
        "measres": measres,
        "x-nvidia-gpu-arch-check": True,
        "x-nvidia-gpu-driver-version": driver,
        "x-nvidia-gpu-vbios-version": vbios,
        "x-nvidia-gpu-attestation-report-cert-chain": report_chain,
        "x-nvidia-gpu-attestation-report-cert-chain-fwid-match": True,
        "x-nvidia-gpu-attestation-report-parsed": True,
        "x-nvidia-gpu-attestation-report-nonce-match": True,
        "x-nvidia-gpu-attestation-report-signature-verified": True,
        "x-nvidia-gpu-driver-rim-fetched": True,
        "x-nvidia-gpu-driver-rim-schema-validated": True,
        "x-nvidia-gpu-driver-rim-cert-chain": _cert_chain("2027-11-20T03:10:39"),
        "x-nvidia-gpu-driver-rim-signature-verified": True,
        "x-nvidia-gpu-driver-rim-version-match": True,
        "x-nvidia-gpu-driver-rim-measurements-available": True,
        "x-nvidia-gpu-vbios-rim-fetched": True,
        "x-nvidia-gpu-vbios-rim-schema-validated": True,
        "x-nvidia-gpu-vbios-rim-cert-chain": _cert_chain("2027-02-22T23:17:58"),
        "x-nvidia-gpu-vbios-rim-version-match": True,
        "x-nvidia-gpu-vbios-rim-signature-verified": True,
        "x-nvidia-gpu-vbios-rim-measurements-available": True,
        "x-nvidia-gpu-vbios-index-no-conflict": True,
        "eat_nonce": nonce,
        "hwmodel": HW_MODEL,
        "ueid": ueid,
        "oemid": OEM_ID,
        "iss": iss,
        "secboot": True,
        "dbgstat": dbgstat,
    }


def _cert_chain(expires: str) -> dict:
    return {
        "x-nvidia-cert-expiration-date": expires,
        "x-nvidia-cert-status": "valid",
        "x-nvidia-cert-ocsp-status": "good",
        "x-nvidia-cert-revocation-reason": None,
    }


# -- CVM tokens ----------------------------------------------------------------------------


def maa_token(
    issuers: IssuerSet,
    *,
    vm_id: str,
    nonce: str,
    issued_at: datetime,
    tee: str = "sevsnpvm",
    fault: str | None = None,
) -> str:
    """An Azure Attestation guest token for a confidential VM (`tee` sevsnpvm or tdxvm)."""
    _check_fault(fault, CVM_FAULTS - {"tcb_out_of_date"}, "maa_token")
    if tee not in ("sevsnpvm", "tdxvm"):
        raise ValueError(f"tee must be 'sevsnpvm' or 'tdxvm', got {tee!r}")
    issuer = issuers.maa
    iat = _epoch(issued_at) - (EXPIRED_AGE_SECONDS if fault == "expired" else 0)
    token_nonce = _other_nonce(nonce) if fault == "nonce_mismatch" else nonce
    debug = fault == "debug_enabled"
    measured = fault == "measurement_mismatch"
    seed = f"{vm_id}/{iat}"
    isolation: dict = {
        "x-ms-attestation-type": tee,
        "x-ms-compliance-status": (
            "azure-noncompliant-cvm" if fault == "not_compliant" else "azure-compliant-cvm"
        ),
        "x-ms-runtime": {
            "keys": [_rsa_jwk("HCLAkPub", ["sign"], vm_id)],
            "vm-configuration": {
                "console-enabled": True,
                "secure-boot": True,
                "tpm-enabled": True,
                "vmUniqueId": vm_id,
            },
        },
    }
    if tee == "sevsnpvm":
        isolation.update(
            {
                "x-ms-sevsnpvm-authorkeydigest": "0" * 96,
                "x-ms-sevsnpvm-bootloader-svn": 3,
                "x-ms-sevsnpvm-familyId": "01000000000000000000000000000000",
                "x-ms-sevsnpvm-guestsvn": 2,
                "x-ms-sevsnpvm-hostdata": SEVSNP_HOST_DATA,
                "x-ms-sevsnpvm-idkeydigest": _hex("idkey", 96),
                "x-ms-sevsnpvm-imageId": "02000000000000000000000000000000",
                "x-ms-sevsnpvm-is-debuggable": debug,
                "x-ms-sevsnpvm-launchmeasurement": (
                    _BAD_MEASUREMENT if measured else GOLDEN_SEVSNP_LAUNCH_MEASUREMENT
                ),
                "x-ms-sevsnpvm-microcode-svn": 115,
                "x-ms-sevsnpvm-migration-allowed": False,
                "x-ms-sevsnpvm-reportdata": _hex(f"reportdata/{seed}/{token_nonce}", 64) + "0" * 64,
                "x-ms-sevsnpvm-reportid": _hex(f"reportid/{vm_id}", 64),
                "x-ms-sevsnpvm-smt-allowed": True,
                "x-ms-sevsnpvm-snpfw-svn": 8,
                "x-ms-sevsnpvm-tee-svn": 0,
                "x-ms-sevsnpvm-vmpl": 0,
            }
        )
    else:
        isolation.update(
            _tdx_quote_claims(f"maa/{seed}/{token_nonce}", debug=debug, measured=measured)
        )
    claims = {
        "exp": iat + MAA_LIFETIME_SECONDS,
        "iat": iat,
        "iss": issuer.iss,
        "jti": _jti(),
        "nbf": iat,
        "secureboot": True,
        "x-ms-attestation-type": "azurevm",
        "x-ms-azurevm-attestation-protocol-ver": "2.0",
        "x-ms-azurevm-attested-pcrs": [0, 1, 2, 3, 4, 5, 6, 7],
        "x-ms-azurevm-bootdebug-enabled": False,
        "x-ms-azurevm-dbvalidated": True,
        "x-ms-azurevm-dbxvalidated": True,
        "x-ms-azurevm-debuggersdisabled": True,
        "x-ms-azurevm-default-securebootkeysvalidated": True,
        "x-ms-azurevm-elam-enabled": False,
        "x-ms-azurevm-flightsigning-enabled": False,
        "x-ms-azurevm-hvci-policy": 0,
        "x-ms-azurevm-hypervisordebug-enabled": False,
        "x-ms-azurevm-is-windows": False,
        "x-ms-azurevm-kerneldebug-enabled": False,
        "x-ms-azurevm-osbuild": "NotApplication",
        "x-ms-azurevm-osdistro": "Ubuntu",
        "x-ms-azurevm-ostype": "Linux",
        "x-ms-azurevm-osversion-major": 22,
        "x-ms-azurevm-osversion-minor": 4,
        "x-ms-azurevm-signingdisabled": True,
        "x-ms-azurevm-testsigning-enabled": False,
        "x-ms-azurevm-vmid": vm_id,
        "x-ms-isolation-tee": isolation,
        "x-ms-policy-hash": "wm9mHlvTU82e8UqoOy1Yj1FBRSNkfe99-69IYDq9eWs",
        "x-ms-runtime": {
            "client-payload": {"nonce": token_nonce},
            "keys": [_rsa_jwk("TpmEphemeralEncryptionKey", ["encrypt"], f"{vm_id}/{iat}")],
        },
        "x-ms-ver": "1.0",
    }
    signer, sign_options = _signer(issuers, issuer, fault)
    return signer.sign(claims, **sign_options)


def ita_token(
    issuers: IssuerSet,
    *,
    nonce: str,
    issued_at: datetime,
    fault: str | None = None,
    vm_id: str = "",
) -> str:
    """An Intel Trust Authority v2 token for a TDX trust domain (claims under `tdx`)."""
    _check_fault(fault, CVM_FAULTS - {"not_compliant"}, "ita_token")
    issuer = issuers.ita
    iat = _epoch(issued_at) - (EXPIRED_AGE_SECONDS if fault == "expired" else 0)
    token_nonce = _other_nonce(nonce) if fault == "nonce_mismatch" else nonce
    seed = f"ita/{vm_id}/{iat}/{token_nonce}"
    tdx = {
        "attester_advisory_ids": [] if fault != "tcb_out_of_date" else ["INTEL-SA-00837"],
        "attester_held_data": _user_data(token_nonce),
        "attester_runtime_data": {"nonce": token_nonce, "vm-id": vm_id},
        "attester_tcb_date": "2024-03-13T00:00:00Z",
        "attester_tcb_status": "OutOfDate" if fault == "tcb_out_of_date" else "UpToDate",
        "attester_type": "TDX",
        "eat_profile": "https://portal.trustauthority.intel.com/eat_profile.html",
        "intuse": "generic",
        "tdx_collateral": {
            "qeidcerthash": _hex("qeidcerthash", 64),
            "qeidcrlhash": _hex("qeidcrlhash", 64),
            "qeidhash": _hex("qeidhash", 64),
            "quotehash": _hex(f"quote/{seed}", 64),
            "tcbinfocerthash": _hex("tcbinfocerthash", 64),
            "tcbinfocrlhash": _hex("tcbinfocrlhash", 64),
            "tcbinfohash": _hex("tcbinfohash", 64),
        },
        **_tdx_quote_claims(
            seed, debug=fault == "debug_enabled", measured=fault == "measurement_mismatch"
        ),
    }
    claims = {
        "tdx": tdx,
        "eat_nonce": token_nonce,
        "policy_ids_matched": [
            {"id": "6b4a2f3e-0c1d-4e5f-8a9b-5e1a7ed00000", "version": "v1"},
        ],
        "policy_ids_unmatched": [],
        "verifier_instance_ids": [
            str(uuid.UUID(bytes=hashlib.sha256(f"ita-instance/{i}".encode()).digest()[:16]))
            for i in range(3)
        ],
        "ver": "2.0.0",
        "exp": iat + ITA_LIFETIME_SECONDS,
        "jti": _jti(),
        "iat": iat,
        "iss": issuer.iss,
        "nbf": iat,
    }
    signer, sign_options = _signer(issuers, issuer, fault)
    return signer.sign(claims, **sign_options)


def _tdx_quote_claims(seed: str, *, debug: bool, measured: bool) -> dict:
    return {
        "dbgstat": "enabled" if debug else "disabled",
        "tdx_is_debuggable": debug,
        "tdx_mrconfigid": "0" * 96,
        "tdx_mrowner": "0" * 96,
        "tdx_mrownerconfig": "0" * 96,
        "tdx_mrseam": _hex("mrseam", 96),
        "tdx_mrsignerseam": "0" * 96,
        "tdx_mrtd": _BAD_MEASUREMENT if measured else GOLDEN_TDX_MRTD,
        "tdx_report_data": _hex(f"report_data/{seed}", 128),
        "tdx_rtmr0": _hex("rtmr0", 96),
        "tdx_rtmr1": _hex("rtmr1", 96),
        "tdx_rtmr2": _hex("rtmr2", 96),
        "tdx_rtmr3": "0" * 96,
        "tdx_seam_attributes": "0000000000000000",
        "tdx_seamsvn": 1283,
        "tdx_td_attributes": "0100001000000000" if debug else "0000001000000000",
        "tdx_td_attributes_debug": debug,
        "tdx_td_attributes_key_locker": False,
        "tdx_td_attributes_perfmon": False,
        "tdx_td_attributes_protection_keys": False,
        "tdx_td_attributes_septve_disable": True,
        "tdx_xfam": "e702060000000000",
    }


# -- submissions ---------------------------------------------------------------------------


def gpu_evidence(provider: str, result: list, gpu_uuids: Sequence[str]) -> dict:
    """An evidence entry for an NRAS or local result: the result plus its GPU UUID map."""
    return {
        "provider": provider,
        "result": result,
        "gpus": {f"GPU-{i}": gpu_uuid for i, gpu_uuid in enumerate(gpu_uuids)},
    }


def cvm_evidence(provider: str, token: str) -> dict:
    """An evidence entry for a single CVM token ('azure-maa' or 'intel-ita')."""
    return {"provider": provider, "token": token}


def submission(
    *,
    node_name: str,
    boot_id: str,
    nonce: str,
    collected_at: datetime,
    evidence: list[dict],
    agent: str = DEFAULT_AGENT,
) -> bytes:
    """The agent contract's submission body (contract §2), as UTF-8 JSON bytes."""
    return orjson.dumps(
        {
            "schema": SCHEMA,
            "node_name": node_name,
            "boot_id": boot_id,
            "nonce": nonce,
            "collected_at": rfc3339(collected_at),
            "agent": agent,
            "evidence": evidence,
        }
    )


def rfc3339(moment: datetime) -> str:
    """UTC with second precision and a Z."""
    return _utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def policy_toml() -> str:
    """An `[attestation.policy]` section that allowlists the simulated golden values."""
    return (
        "[attestation.policy]\n"
        f'gpu_driver_versions = ["{DRIVER_VERSION}"]\n'
        f'gpu_vbios_versions = ["{VBIOS_VERSION}"]\n'
        f'sevsnp_launch_measurements = ["{GOLDEN_SEVSNP_LAUNCH_MEASUREMENT}"]\n'
        f'sevsnp_host_data = ["{SEVSNP_HOST_DATA}"]\n'
        f'tdx_mrtd = ["{GOLDEN_TDX_MRTD}"]\n'
    )


# -- internals -----------------------------------------------------------------------------


def _check_fault(fault: str | None, allowed: frozenset[str], where: str) -> None:
    if fault is not None and fault not in allowed:
        raise ValueError(f"{where}: unknown fault {fault!r}; expected one of {sorted(allowed)}")


def _signer(
    issuers: IssuerSet, issuer: SimulatedIssuer, fault: str | None
) -> tuple[SimulatedIssuer, dict]:
    if fault == "revoked_certificate":
        return issuer, {"revoked": True}
    if fault == "forged_signature":  # the attacker's key, presenting the genuine kid
        return issuers.attacker, {"header": {**issuer.header(), "kid": issuer.kid}}
    return issuer, {}


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _epoch(moment: datetime) -> int:
    return int(_utc(moment).timestamp())


def _jti() -> str:
    return str(uuid.uuid4())


def _user_data(nonce: str) -> str:
    """ITA's ``attester_held_data``: standard base64 of the user data the agent passed (a
    hex nonce as its bytes, any other nonce as its UTF-8 text)."""
    try:
        data = bytes.fromhex(nonce) if len(nonce) % 2 == 0 else nonce.encode("utf-8")
    except ValueError:
        data = nonce.encode("utf-8")
    return base64.b64encode(data).decode("ascii")


def _other_nonce(nonce: str) -> str:
    return hashlib.sha256(f"not-{nonce}".encode()).hexdigest()


def _hex(label: str, length: int) -> str:
    out = b""
    counter = 0
    while len(out) * 2 < length:
        out += hashlib.sha512(f"annex-sim/{label}/{counter}".encode()).digest()
        counter += 1
    return out.hex()[:length]


def _rsa_jwk(kid: str, key_ops: list[str], label: str) -> dict:
    modulus = bytes.fromhex(_hex(f"rsa-n/{label}", 512))
    return {"e": "AQAB", "key_ops": key_ops, "kid": kid, "kty": "RSA", "n": b64url(modulus)}


__all__ = [
    "CVM_FAULTS",
    "FAULTS",
    "NRAS_FAULTS",
    "attester_nonce",
    "azure_vm_id",
    "cvm_evidence",
    "gpu_evidence",
    "gpu_ueid",
    "ita_token",
    "local_result",
    "maa_token",
    "nras_result",
    "policy_toml",
    "submission",
    "submod_digest",
]

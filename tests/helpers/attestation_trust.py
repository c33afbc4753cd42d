"""Shared set-up of the verifier tests: the simulator's issuers trusted through real settings.

Trust material (key sets, roots) is written by the simulator and read back through
``load_settings``, so the tests exercise the same path a deployment does. Tokens come from the
simulator's minting API; only deliberately malformed or attacker tokens are built in tests.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from annex.settings import AttestationSettings, load_settings
from collectors.attestation.keys import KeySets
from collectors.attestation.verify import Submission, Verifier
from simulator.attestation import tokens
from simulator.attestation.issuers import LOCAL_SECRET_ENV, IssuerSet

ISSUED = datetime(2026, 11, 2, 8, 10, 0)
"""When the simulated tokens are minted (naive UTC)."""
RECEIVED = ISSUED + timedelta(seconds=5)
"""When annex received them: the clock of every time check."""
NONCE = tokens.attester_nonce("test")
NONCE_KEY = bytes(range(32))


def gpus(count: int = 8, seed: int = 0, prefix: str = "a") -> list[tuple[str, str]]:
    uuids = [f"GPU-{prefix}{i:07d}-0000-4000-8000-{seed:012d}" for i in range(count)]
    return [(uuid, tokens.gpu_ueid(seed, uuid)) for uuid in uuids]


@dataclass
class Trust:
    issuers: IssuerSet
    folder: Path
    settings: AttestationSettings
    env: dict[str, str]

    def verifier(self, *, nonce_key: bytes | None = None, **changes: Any) -> Verifier:
        settings = self.settings
        if changes:
            from dataclasses import replace

            settings = replace(settings, **changes)
        key_sets = KeySets.load(settings, env=self.env, fetch=_no_network)
        return Verifier(settings, key_sets=key_sets, nonce_key=nonce_key)


def _no_network(url: str, timeout: float) -> bytes:
    raise AssertionError(f"the verifier tried to fetch {url}")


def make_trust(folder: Path, *, extra_toml: str = "", policy: str | None = None) -> Trust:
    """Trust the simulator's nras, maa, ita and local issuers with its golden-value policy."""
    issuers = IssuerSet.create(0)
    issuers.write_trust(folder)
    text = issuers.settings_toml(folder)
    text += tokens.policy_toml() if policy is None else policy
    text += extra_toml
    config = folder / "annex.toml"
    config.write_text(text, encoding="utf-8")
    env = {LOCAL_SECRET_ENV: "secret"}
    settings = load_settings(config, env={}).attestation
    return Trust(issuers, folder, settings, env)


def body(
    evidence: list[dict], *, node: str = "gpu-node-1", nonce: str = NONCE, boot: str = "boot-1"
) -> bytes:
    return tokens.submission(
        node_name=node, boot_id=boot, nonce=nonce, collected_at=ISSUED, evidence=evidence
    )


def submit(raw: bytes, *, received_at: datetime = RECEIVED, archive: str | None = None):
    return Submission(
        submission_id=hashlib.sha256(raw).hexdigest(),
        source_locator="spool/incoming/test.json",
        source_kind="intake",
        received_at=received_at,
        body=raw,
        archive_uri=archive,
    )


def nras_evidence(
    trust: Trust,
    *,
    count: int = 2,
    nonce: str = NONCE,
    fault: str | None = None,
    version: str = "3.0",
    issued_at: datetime = ISSUED,
    provider: str = "nvidia-nras",
    prefix: str = "a",
) -> dict:
    devices = gpus(count, prefix=prefix)
    if provider == "nvidia-local":
        result = tokens.local_result(
            trust.issuers, gpus=devices, nonce=nonce, issued_at=issued_at, claims_version=version
        )
    else:
        result = tokens.nras_result(
            trust.issuers,
            gpus=devices,
            nonce=nonce,
            issued_at=issued_at,
            fault=fault,
            claims_version=version,
        )
    return tokens.gpu_evidence(provider, result, [uuid for uuid, _ in devices])


def maa_evidence(trust: Trust, **options: Any) -> dict:
    options.setdefault("vm_id", "5F2E6A1B-0C3D-4E5F-8A9B-0C1D2E3F4A5B")
    options.setdefault("nonce", NONCE)
    options.setdefault("issued_at", ISSUED)
    return tokens.cvm_evidence("azure-maa", tokens.maa_token(trust.issuers, **options))


def ita_evidence(trust: Trust, **options: Any) -> dict:
    options.setdefault("nonce", NONCE)
    options.setdefault("issued_at", ISSUED)
    return tokens.cvm_evidence("intel-ita", tokens.ita_token(trust.issuers, **options))


# -- reading and re-shaping tokens (for attacker tokens the simulator does not make) --------


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def segments(token: str) -> tuple[dict, dict, str]:
    head, payload, signature = token.split(".")
    return _decode(head), _decode(payload), signature


def _decode(segment: str) -> dict:
    return orjson.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


def unsigned(header: dict, payload: dict, signature: bytes = b"") -> str:
    """A compact JWS of exactly these members with any signature bytes (attacker tokens)."""
    return ".".join(
        (b64url(orjson.dumps(header)), b64url(orjson.dumps(payload)), b64url(signature))
    )


def epoch(moment: datetime) -> int:
    return int(moment.replace(tzinfo=UTC).timestamp())

"""Verify one attestation submission: every token gets a record with a verdict and reasons.

A ``Submission`` is the exact body an agent sent (contract §2). ``Verifier.verify`` applies the
limits before parsing, then checks each token in the order of reference attestation.md §1.3 and
§4: shape and size, header (fixed algorithm per issuer, no ``crit``, ``kid`` in the pinned key
set; ``jku``/``x5u`` are ignored, never fetched), signature, ``x5c`` chain to a configured root,
exact issuer, time window with leeway against the time annex *received* the token (so
re-verifying an archived submission later gives the same verdict), nonce, NRAS submodule
digests, the appraisal policy, replays within this verifier's life, and device binding within
an envelope.

Replays are decided only on authenticated presentations (a token whose signature verified
with a pinned key): a bad-signature token never registers its ``jti``. A presentation is
*bound* when its token carries the nonce annex issued to the presenting node (checked by MAC,
not by the node's say-so). A bound presentation is never the replay of an unbound one,
whatever arrived first, so a copy another node put in the shared folder cannot displace the
genuine presentation; between presentations equally bound the first one this verifier saw
stands. The warehouse merge (``warehouse/models/attestation_merge.sql``) applies the same rank
across collections and, seeing a collection's presentations together, lets receipt order decide
a tie only when annex's own clock stamped both (the intake): a watched file's modification time
is set by whoever wrote it and proves nothing.

It never raises: a body that is not a submission at all becomes a rejection row, a token annex
cannot judge gets verdict ``error``.

Verdicts: ``pass`` (verified: every check and the policy passed, no reasons), ``fail``,
``error`` (keys unavailable, internal error), ``unverifiable`` (NVIDIA local-verifier tokens:
HS256 with a public constant key, stored as ``self_reported`` and never ``pass``). The local
verifier (nvtrust ``local_gpu_verifier``, ``ClaimsUtils.create_detached_eat_claims``) hashes
each GPU's claims as ``json.dumps`` text *before* it adds ``nbf``/``exp``/``iat``/``jti``, so its
``submods`` digests never equal the tokens' text: they are checked in that construction, and a
mismatch there is noted, never a failure (nothing about a self-reported result is verified).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from annex import __version__
from annex.settings import AttestationIssuer, AttestationSettings
from collectors.attestation import claims as claim_facts
from collectors.attestation import policy as appraisal
from collectors.attestation.jws import JWSError, ParsedJWS, loads_strict, parse_compact
from collectors.attestation.keys import (
    Fetch,
    IssuerKeys,
    KeySets,
    fetch_url,
    verify_signature,
    x5c_header_chain,
)
from collectors.attestation.nonce import (
    NonceCheck,
    check_nonce,
    nonce_expiry,
    nonce_key_from_env,
)

SUBMISSION_SCHEMA = "annex.attestation/v1"
ATTESTATION_NAMESPACE = uuid.UUID("6f1d2a4e-93b7-5c0e-8a51-3d7c2b9e4f60")
"""UUID5 namespace of ``record_id`` (fixed forever: changing it changes every record id)."""

VERIFIER_NAME = "annex"
VERIFIER_VERSION = __version__
RAW_CAP_BYTES = 64 * 1024
"""How much of a rejected body is kept in its rejection row."""
MAX_EVIDENCE_ITEMS = 16
PROVIDERS = ("nvidia-nras", "nvidia-local", "azure-maa", "intel-ita")

REASON_CODES: frozenset[str] = frozenset(
    {
        "alg_not_allowed",
        "unknown_kid",
        "expired",
        "not_yet_valid",
        "bad_issuer",
        "nonce_mismatch",
        "nonce_expired",
        "replay",
        "debug_enabled",
        "measurement_mismatch",
        "device_mismatch",
        "submod_digest_mismatch",
        "malformed",
        "too_large",
        "jwe_rejected",
        "untrusted_chain",
        "crit_unsupported",
        "policy_fail",
        "self_reported",
        "unknown_issuer",
        "keys_unavailable",
        "bad_signature",
        "parent_failed",
    }
)
"""Every reason code a record (or rejection) can carry (reference attestation.md §4)."""

_EPOCH = datetime(1970, 1, 1)
_MAX_TEXT = 512
_CONTROL = re.compile("[\x00-\x1f\x7f]")


def utc_now() -> datetime:
    """The current time as a naive UTC datetime (annex's stored convention)."""
    return datetime.now(UTC).replace(tzinfo=None)


def _naive_utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is None else moment.astimezone(UTC).replace(tzinfo=None)


@dataclass(frozen=True)
class Submission:
    submission_id: str
    """Hex SHA-256 of ``body``."""
    source_locator: str
    """The spool file's path, or ``intake:<id>``."""
    source_kind: str
    """'intake' | 'file'."""
    received_at: datetime
    """When annex received the body (naive UTC): the clock every time check uses."""
    body: bytes
    """Exactly as received: limits are applied before it is parsed."""
    archive_uri: str | None = None


@dataclass(frozen=True)
class Verification:
    submission: dict | None
    """One ATTESTATION_SUBMISSIONS row; None when the body was rejected."""
    records: list[dict]
    """ATTESTATION_RECORDS rows, one per token."""
    rejection: dict | None
    """One REJECTED row when the body is not a submission at all."""


class _Rejected(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def submod_digest(detached_jws: str) -> str:
    """The digest NRAS's overall token lists for a detached token in ``submods``.

    Hashed: the exact compact JWS text of the detached token (``header.payload.signature``,
    ASCII) with SHA-256, written as lowercase hex (reference attestation.md R2/R11; the simulator
    and NVIDIA's relying-party check hash the same string). It equals the record's
    ``token_sha256``, which is why the verifier computes it once.
    """
    return hashlib.sha256(detached_jws.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(slots=True)
class _Context:
    """What every token of one submission is checked against."""

    submission: Submission
    received_at: datetime
    verified_at: datetime
    node_name: str
    boot_id: str | None
    nonce: str
    nonce_status: NonceCheck
    nonce_expires: datetime | None

    @property
    def nonce_source(self) -> str | None:
        if self.nonce_status in (NonceCheck.VALID, NonceCheck.EXPIRED):
            return "collector"
        if self.nonce_status is NonceCheck.NOT_OURS:
            return "attester"
        return None


@dataclass(slots=True)
class _Token:
    """One token's record in progress: reasons accumulate, the verdict is decided last."""

    row: dict[str, Any]
    payload: dict[str, Any] | None = None
    reasons: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    undecidable: bool = False
    self_reported: bool = False
    authentic: bool = False
    """The signature verified with a pinned key (claims may be appraised)."""

    def note(self, detail: str) -> None:
        """A fact worth keeping that is no reason to fail (stored in ``detail``)."""
        self.details.append(detail)

    def add(self, reason: str, detail: str) -> None:
        if reason not in self.reasons:
            self.reasons.append(reason)
            self.details.append(detail)

    def failed(self) -> bool:
        return any(reason != "self_reported" for reason in self.reasons)


def _row_template() -> dict[str, Any]:
    return {
        "record_id": None,
        "submission_id": None,
        "received_at": None,
        "verified_at": None,
        "node_name": None,
        "boot_id": None,
        "subject_kind": None,
        "provider": None,
        "token_role": None,
        "parent_record_id": None,
        "submod_key": None,
        "gpu_uuid": None,
        "device_ueid": None,
        "vm_id": None,
        "tee_type": None,
        "issuer": None,
        "alg": None,
        "kid": None,
        "jti": None,
        "token_sha256": None,
        "nonce": None,
        "nonce_source": None,
        "nonce_matched": None,
        "freshness_proven": None,
        "issued_at": None,
        "not_before": None,
        "expires_at": None,
        "valid_from": None,
        "valid_until": None,
        "signature_valid": None,
        "chain_valid": None,
        "assurance_tier": "none",
        "verdict": "fail",
        "reasons": [],
        "detail": None,
        "rules_not_applicable": [],
        "policy_id": None,
        "policy_sha256": None,
        "hw_model": None,
        "driver_version": None,
        "vbios_version": None,
        "debug_enabled": None,
        "secure_boot": None,
        "measurement": None,
        "tcb_status": None,
        "claims": None,
        "raw_token_uri": None,
        "verifier_name": VERIFIER_NAME,
        "verifier_version": VERIFIER_VERSION,
        "jwks_sha256": None,
        "source_locator": None,
    }


_ROW_KEYS = tuple(_row_template())


def _gpu_key_order(key: str) -> tuple[str, int, str]:
    """'GPU-2' before 'GPU-10': the positional index, numerically."""
    prefix, _, number = key.rpartition("-")
    return (prefix, int(number), key) if number.isdigit() else (key, -1, key)


class Verifier:
    """Verifies submissions against pinned keys and the appraisal policy.

    One per collection: key sets and chain verdicts are loaded and cached once, and replays are
    detected among everything this verifier has seen.
    """

    def __init__(
        self,
        settings: AttestationSettings,
        *,
        key_sets: KeySets,
        nonce_key: bytes | None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.settings = settings
        self.key_sets = key_sets
        self.nonce_key = nonce_key
        self.clock = clock
        self.policy = settings.policy
        self.policy_sha256 = settings.policy.sha256()
        self.leeway = timedelta(seconds=settings.leeway_seconds)
        self._by_provider: dict[str, list[IssuerKeys]] = {}
        for keys in key_sets:
            self._by_provider.setdefault(keys.issuer.provider, []).append(keys)
        self._seen: dict[tuple[str, str], list[_Presentation]] = {}
        """Authenticated presentations by ('token', sha256) and ('jti', issuer/jti)."""

    @classmethod
    def from_settings(
        cls,
        settings: AttestationSettings,
        *,
        env: Mapping[str, str] | None = None,
        fetch: Fetch = fetch_url,
        clock: Callable[[], datetime] = utc_now,
    ) -> Verifier:
        """Load pinned keys (files or configured URLs) and the nonce key from ``env``.

        Raises ``ConfigError`` only for a nonce key that is set but too short; an unloadable key
        set is not an error here, its tokens get ``keys_unavailable``.
        """
        env = os.environ if env is None else env
        key_sets = KeySets.load(settings, fetch=fetch, env=env)
        nonce_key = nonce_key_from_env(settings.nonce_key_env, env)
        return cls(settings, key_sets=key_sets, nonce_key=nonce_key, clock=clock)

    # -- submissions -------------------------------------------------------------------------

    def verify(self, submission: Submission) -> Verification:
        """Records for every token of ``submission``, or its rejection. Never raises."""
        try:
            return self._verify(submission)
        except _Rejected as rejected:
            return self._rejection(submission, rejected.reason, rejected.message)
        except Exception as exc:  # a bug must not stop a collection: keep the input instead
            return self._rejection(
                submission, "malformed", f"internal error while verifying: {type(exc).__name__}"
            )

    def _rejection(self, submission: Any, reason: str, message: str) -> Verification:
        body = getattr(submission, "body", b"")
        raw = bytes(body[:RAW_CAP_BYTES]) if isinstance(body, bytes | bytearray) else b""
        locator = getattr(submission, "source_locator", None)
        return Verification(
            submission=None,
            records=[],
            rejection={
                "locator": str(locator),
                "reason_code": reason,
                "message": message,
                "raw": raw,
            },
        )

    def _verify(self, submission: Submission) -> Verification:
        body = submission.body
        limit = self.settings.max_submission_bytes
        if len(body) > limit:
            raise _Rejected("too_large", f"the submission is {len(body)} bytes (limit {limit})")
        try:
            document = loads_strict(body)
        except (ValueError, RecursionError) as exc:
            raise _Rejected("malformed", f"the submission is not UTF-8 JSON: {exc}") from None
        shape = _submission_shape(document, self.settings.max_submods)
        received_at = _naive_utc(submission.received_at)
        nonce = shape["nonce"]
        status = check_nonce(self.nonce_key, shape["node_name"], nonce, at=received_at)
        context = _Context(
            submission=submission,
            received_at=received_at,
            verified_at=_naive_utc(self.clock()),
            node_name=shape["node_name"],
            boot_id=shape["boot_id"],
            nonce=nonce,
            nonce_status=status,
            nonce_expires=nonce_expiry(nonce)
            if status in (NonceCheck.VALID, NonceCheck.EXPIRED)
            else None,
        )
        records: list[dict] = []
        gpu_map: dict[str, str] = {}
        for index, evidence in enumerate(shape["evidence"]):
            provider = evidence["provider"]
            if provider in ("nvidia-nras", "nvidia-local"):
                gpus = evidence["gpus"]
                for key, gpu_uuid in gpus.items():
                    gpu_map.setdefault(key, gpu_uuid)
                tokens = self._gpu_envelope(context, index, provider, evidence)
            else:
                tokens = [self._single(context, index, provider, evidence["token"])]
            records.extend(self._finish(context, token) for token in tokens)
        row = {
            "submission_id": submission.submission_id,
            "source_locator": submission.source_locator,
            "source_kind": submission.source_kind,
            "node_name": context.node_name,
            "boot_id": context.boot_id,
            "received_at": received_at,
            "collected_at": shape["collected_at"],
            "nonce": nonce,
            "nonce_source": context.nonce_source,
            "gpu_index_map": sorted(gpu_map.items(), key=lambda item: _gpu_key_order(item[0])),
            "evidence_count": len(shape["evidence"]),
            "token_count": len(records),
            "body_bytes": len(body),
            "archive_uri": submission.archive_uri,
            "agent": shape["agent"],
        }
        return Verification(submission=row, records=records, rejection=None)

    # -- envelopes ---------------------------------------------------------------------------

    def _gpu_envelope(
        self, context: _Context, index: int, provider: str, evidence: dict[str, Any]
    ) -> list[_Token]:
        """An NRAS (or local) result: the overall token, then each detached token by key."""
        overall_jws, detached = evidence["result"]
        gpus: dict[str, str] = evidence["gpus"]
        keys = sorted(detached, key=_gpu_key_order)
        switches = bool(keys) and all(claim_facts.is_nvswitch(key, None) for key in keys)
        overall = self._token(
            context, provider, "overall", overall_jws, index, None, switch_result=switches
        )
        submods = claim_facts.table((overall.payload or {}).get("submods"))
        version = claim_facts.text((overall.payload or {}).get("x-nvidia-ver"))
        parts = []
        for key in keys:
            token = self._token(
                context, provider, "detached", detached[key], index, key, version=version
            )
            token.row["gpu_uuid"] = gpus.get(key)
            token.row["parent_record_id"] = overall.row["record_id"]
            if overall.payload is not None and provider == "nvidia-local":
                expected = _listed_digest(submods.get(key))
                if expected is None or expected not in (
                    token.row["token_sha256"],
                    _local_claims_digest(token.payload),
                ):
                    token.note(
                        f"{key}'s digest in the local verifier's submods does not match its "
                        "claims (self-reported: not verified either way)"
                    )
            elif overall.payload is not None:
                expected = _listed_digest(submods.get(key))
                if expected is None:
                    token.add(
                        "submod_digest_mismatch",
                        f"the overall token lists no SHA-256 digest for {key}",
                    )
                elif expected != token.row["token_sha256"]:
                    token.add(
                        "submod_digest_mismatch",
                        f"{key}'s SHA-256 differs from the digest the overall token lists",
                    )
            if key not in gpus:
                where = "switches" if token.row["subject_kind"] == "nvswitch" else "gpus"
                token.add("device_mismatch", f"the submission's {where} map has no {key}")
            parts.append(token)
        missing = sorted(set(submods) - set(detached), key=_gpu_key_order)
        if overall.payload is not None and missing and provider != "nvidia-local":
            overall.add(
                "submod_digest_mismatch",
                "the overall token lists submods without a detached token: " + ", ".join(missing),
            )
        if set(gpus) != set(detached):
            overall.add(
                "device_mismatch",
                "the submission's gpus/switches map and the result's detached tokens name "
                "different keys",
            )
        by_ueid: dict[str, list[_Token]] = {}
        for token in parts:
            ueid = token.row["device_ueid"]
            if ueid is not None:
                by_ueid.setdefault(ueid, []).append(token)
        for ueid_tokens in by_ueid.values():
            if len(ueid_tokens) > 1:
                names = ", ".join(t.row["submod_key"] for t in ueid_tokens)
                for token in ueid_tokens:
                    token.add("device_mismatch", f"one device ueid appears in {names}")
        if overall.failed() or overall.undecidable:
            for token in parts:
                token.add("parent_failed", "the overall token of this result failed")
                token.undecidable = token.undecidable or overall.undecidable
        else:
            failing = [t.row["submod_key"] for t in parts if t.failed() or t.undecidable]
            if failing:
                # N16: NRAS's own overall result does not outvote annex's appraisal of a GPU
                # (a device failing its binding here fails the whole result's coverage too).
                overall.add(
                    "policy_fail",
                    "the overall result is true but these GPUs fail: " + ", ".join(failing),
                )
        return [overall, *parts]

    def _single(self, context: _Context, index: int, provider: str, token: str) -> _Token:
        return self._token(context, provider, "single", token, index, None)

    # -- one token ---------------------------------------------------------------------------

    def _token(
        self,
        context: _Context,
        provider: str,
        role: str,
        token: str,
        index: int,
        submod_key: str | None,
        *,
        version: str | None = None,
        switch_result: bool = False,
    ) -> _Token:
        token_sha256 = submod_digest(token)
        row = _row_template()
        row.update(
            record_id=str(uuid.uuid5(ATTESTATION_NAMESPACE, f"{token_sha256}/{submod_key or ''}")),
            submission_id=context.submission.submission_id,
            received_at=context.received_at,
            verified_at=context.verified_at,
            node_name=context.node_name,
            boot_id=context.boot_id,
            subject_kind=_subject_kind(provider, switch_result),
            provider=provider,
            token_role=role,
            submod_key=submod_key,
            token_sha256=token_sha256,
            nonce_source=context.nonce_source,
            policy_id=self.policy.policy_id,
            policy_sha256=self.policy_sha256,
            source_locator=context.submission.source_locator,
        )
        archive = context.submission.archive_uri
        if archive:
            anchor = f"{index}/{submod_key}" if submod_key else str(index)
            row["raw_token_uri"] = f"{archive}#{anchor}"
        state = _Token(row=row, self_reported=provider == "nvidia-local")
        if state.self_reported:
            state.add("self_reported", "a local-verifier token: HS256 with a public key")
        try:
            self._check_token(context, state, provider, role, token, version)
        except Exception as exc:  # never let one token stop the others
            state.undecidable = True
            state.add("malformed", f"internal error while verifying: {type(exc).__name__}")
        return state

    def _check_token(
        self,
        context: _Context,
        state: _Token,
        provider: str,
        role: str,
        token: str,
        version: str | None,
    ) -> None:
        row = state.row
        try:
            parsed = parse_compact(token, max_bytes=self.settings.max_token_bytes)
        except JWSError as exc:
            state.add(exc.reason, exc.detail)
            return
        header, payload = parsed.header, parsed.payload
        state.payload = payload
        row["claims"] = _claims_json(payload)
        alg = header.get("alg")
        row["alg"] = alg if isinstance(alg, str) else None
        kid = header.get("kid")
        row["kid"] = kid if isinstance(kid, str) else None
        iss = payload.get("iss")
        row["issuer"] = iss if isinstance(iss, str) else None
        jti = payload.get("jti")
        row["jti"] = jti if isinstance(jti, str) else None
        if role == "detached" and claim_facts.is_nvswitch(row["submod_key"], payload):
            row["subject_kind"] = "nvswitch"
        facts = _facts(provider, role, payload, row["subject_kind"])
        for name in (
            "device_ueid",
            "vm_id",
            "tee_type",
            "hw_model",
            "driver_version",
            "vbios_version",
            "debug_enabled",
            "secure_boot",
            "measurement",
            "tcb_status",
        ):
            row[name] = getattr(facts, name)
        row["nonce"] = facts.nonce

        if "enc" in header:
            state.add("jwe_rejected", "the header names a content encryption (a JWE)")
            return
        keys = self._issuer_for(provider, row["issuer"], row["kid"], state)
        issuer = keys.issuer if keys is not None else None
        if state.reasons and not state.self_reported:
            return
        if not self._header_and_signature(state, provider, parsed, keys):
            return

        if issuer is not None and row["issuer"] != issuer.issuer:
            state.add(
                "bad_issuer",
                f"iss {row['issuer']!r} is not the configured issuer {issuer.issuer!r}",
            )
        self._check_times(state, payload, issuer)
        self._check_nonce(context, state, facts.nonce_forms or (facts.nonce,))
        if state.authentic or state.self_reported:
            findings, not_applicable = _appraise(
                provider, role, payload, self.policy, version, row["subject_kind"]
            )
            for reason, detail in findings:
                state.add(reason, detail)
            row["rules_not_applicable"] = sorted(not_applicable)
            if not_applicable:
                state.note(
                    f"not applicable: {', '.join(not_applicable)} (a {row['tee_type'] or provider}"
                    " token cannot carry the claim; neither passed nor failed)"
                )
        self._check_replay(context, state, issuer)

    def _issuer_for(
        self, provider: str, iss: str | None, kid: str | None, state: _Token
    ) -> IssuerKeys | None:
        """The configured issuer a token is checked against: the one of its provider whose
        ``iss`` it names exactly; else the one whose pinned keys hold its ``kid`` (then the
        issuer check reports ``bad_issuer``); else the provider's only issuer."""
        candidates = self._by_provider.get(provider, [])
        for keys in candidates:
            if keys.issuer.issuer == iss:
                return keys
        for keys in candidates:
            if kid is not None and kid in keys.keys:
                return keys
        if len(candidates) == 1:
            return candidates[0]
        if not state.self_reported:
            state.add(
                "unknown_issuer",
                f"no configured {provider} issuer is {iss!r}"
                if candidates
                else f"no {provider} issuer is configured",
            )
        return None

    def _header_and_signature(
        self, state: _Token, provider: str, parsed: ParsedJWS, keys: IssuerKeys | None
    ) -> bool:
        """Header rules and the signature; False when nothing further can be trusted."""
        row, header = state.row, parsed.header
        issuer: AttestationIssuer | None = keys.issuer if keys is not None else None
        alg = row["alg"]
        expected = issuer.algorithm if issuer is not None else "HS256"
        if provider == "nvidia-local":
            if alg != "HS256":
                state.add("alg_not_allowed", f"alg {alg!r}: the local verifier signs with HS256")
                return False
            secret = keys.secret if keys is not None else None
            if secret is None:
                return True  # decoded unverified: self-reported either way
            if not verify_signature("HS256", secret, parsed.signing_input, parsed.signature):
                state.row["signature_valid"] = False
                state.add("bad_signature", "the HS256 signature does not match the local secret")
                return False
            state.row["signature_valid"] = True
            return True
        assert keys is not None and issuer is not None
        if alg != expected:
            state.add("alg_not_allowed", f"alg {alg!r} is not {expected}, the issuer's algorithm")
            return False
        if not parsed.signature:
            state.add("alg_not_allowed", "the token carries no signature")
            return False
        if "crit" in header:
            state.add("crit_unsupported", "the header has a crit parameter annex does not support")
            return False
        if keys.error is not None:
            state.undecidable = True
            state.add("keys_unavailable", keys.error)
            return False
        row["jwks_sha256"] = keys.jwks_sha256
        pinned = keys.keys.get(row["kid"]) if row["kid"] is not None else None
        if pinned is None:
            state.add(
                "unknown_kid",
                f"kid {row['kid']!r} is not in the pinned key set of {issuer.name!r} "
                "(keys are never fetched from a token's jku/x5u)",
            )
            return False
        chains = []
        if pinned.x5c:
            chains.append(pinned.x5c)
        if "x5c" in header:
            try:
                chains.append(x5c_header_chain(header["x5c"]))
            except ValueError:
                state.add("malformed", "the header's x5c is not a list of base64 certificates")
                return False
        limit = self.settings.max_x5c_certs
        if any(len(chain) > limit for chain in chains):
            state.add("too_large", f"an x5c chain has more than {limit} certificates")
            return False
        if not verify_signature(
            issuer.algorithm, pinned.public_key, parsed.signing_input, parsed.signature
        ):
            row["signature_valid"] = False
            state.add("bad_signature", f"the signature does not verify with kid {pinned.kid!r}")
            return False
        row["signature_valid"] = True
        state.authentic = True
        if chains:
            if keys.roots_error is not None:
                state.undecidable = True
                state.add("keys_unavailable", keys.roots_error)
                return True
            problems = [
                self.key_sets.chain_verdict(keys, chain).problem_at(
                    state.row["received_at"], pinned.spki
                )
                for chain in chains
            ]
            problem = next((p for p in problems if p is not None), None)
            row["chain_valid"] = problem is None
            if problem is not None:
                state.add("untrusted_chain", problem)
        return True

    def _check_times(
        self, state: _Token, payload: dict[str, Any], issuer: AttestationIssuer | None
    ) -> None:
        row = state.row
        times: dict[str, datetime | None] = {}
        for name in ("iat", "nbf", "exp"):
            value = payload.get(name)
            if value is None:
                times[name] = None
                continue
            moment = _unix_time(value)
            if moment is None:
                state.add("malformed", f"the {name} claim is not a NumericDate")
                return
            times[name] = moment
        iat, nbf, exp = times["iat"], times["nbf"], times["exp"]
        row["issued_at"], row["not_before"], row["expires_at"] = iat, nbf, exp
        if exp is None or iat is None:
            state.add("malformed", "the token has no exp or no iat claim")
            return
        starts = [moment for moment in (nbf, iat) if moment is not None]
        row["valid_from"] = max(starts)
        max_age = timedelta(seconds=issuer.max_age_seconds if issuer is not None else 3600)
        row["valid_until"] = min(exp, iat + max_age)
        now = row["received_at"]
        if exp + self.leeway < now:
            state.add(
                "expired",
                f"expired at {exp:%Y-%m-%dT%H:%M:%SZ}, received at {now:%Y-%m-%dT%H:%M:%SZ}",
            )
        for name, moment in (("nbf", nbf), ("iat", iat)):
            if moment is not None and moment - self.leeway > now:
                state.add(
                    "not_yet_valid",
                    f"{name} {moment:%Y-%m-%dT%H:%M:%SZ} is after the receipt time plus leeway",
                )

    def _check_nonce(
        self, context: _Context, state: _Token, token_nonces: tuple[str | None, ...]
    ) -> None:
        row = state.row
        matched = context.nonce in token_nonces
        if matched:
            row["nonce"] = context.nonce
        row["nonce_matched"] = matched
        fresh = False
        if not matched:
            state.add("nonce_mismatch", "the token's nonce is not the submission's nonce")
        if context.nonce_status is NonceCheck.FORGED:
            state.add(
                "nonce_mismatch",
                f"the nonce has annex's shape but was not issued to {context.node_name!r}",
            )
        elif context.nonce_expires is not None:
            issued = row["issued_at"] or context.received_at
            if context.nonce_expires < issued - self.leeway:
                state.add("nonce_expired", "annex's nonce had expired before the token was issued")
            else:
                fresh = matched
        row["freshness_proven"] = fresh

    def _check_replay(
        self, context: _Context, state: _Token, issuer: AttestationIssuer | None
    ) -> None:
        """Whether an authenticated presentation of this token (or of its ``jti``) by another
        node displaces this one (see the module's docstring). Only authenticated presentations
        register and only they can be replays: a token that fails its signature is failed
        already and proves nothing about who holds the genuine one."""
        if not state.authentic:
            return
        row = state.row
        this = _Presentation(
            node=context.node_name,
            bound=bool(row["nonce_matched"]) and context.nonce_source == "collector",
        )
        keys = [("token", row["token_sha256"])]
        if row["jti"] is not None:
            keys.append(("jti", f"{issuer.name if issuer is not None else ''}/{row['jti']}"))
        for kind, key in keys:
            earlier = self._seen.setdefault((kind, key), [])
            first = next((p for p in earlier if p.node != this.node and p.displaces(this)), None)
            if first is not None:
                what = "token" if kind == "token" else f"jti {row['jti']!r}"
                state.add("replay", f"the same {what} was presented for node {first.node!r}")
            if this not in earlier:
                earlier.append(this)

    # -- verdicts ----------------------------------------------------------------------------

    def _finish(self, context: _Context, state: _Token) -> dict[str, Any]:
        row = state.row
        if state.undecidable:
            verdict, tier = "error", "none"
        elif state.self_reported:
            failed = state.failed()
            verdict, tier = ("fail", "none") if failed else ("unverifiable", "self_reported")
        elif state.reasons or not state.authentic:
            verdict, tier = "fail", "none"
            if not state.reasons:  # defensive: a non-authentic token always has a reason
                state.add("bad_signature", "the token was not authenticated")
        else:
            verdict, tier = "pass", "verified"
        row["verdict"] = verdict
        row["assurance_tier"] = tier
        row["reasons"] = list(state.reasons)
        row["detail"] = "; ".join(state.details) if state.details else None
        return row


# ---------------------------------------------------------------------------------------------
# Pieces


@dataclass(frozen=True, slots=True)
class _Presentation:
    """One authenticated presentation of a token: by whom, and whether annex's nonce binds it
    to that node."""

    node: str
    bound: bool

    def displaces(self, later: _Presentation) -> bool:
        """Whether this earlier-seen presentation makes ``later`` (another node's) a replay: a
        bound one never yields to an unbound one; otherwise the one seen first stands (two
        unbound presentations where either came from a watched folder are both flagged by the
        warehouse merge, which sees them together; rows already yielded are not rewritten)."""
        return self.bound or not later.bound


def _subject_kind(provider: str, switch_result: bool) -> str:
    if provider not in claim_facts.NVIDIA_PROVIDERS:
        return "cpu_tee"
    return "nvswitch" if switch_result else "gpu"


def _local_claims_digest(payload: dict[str, Any] | None) -> str | None:
    """The digest nvtrust's local verifier lists for a GPU: SHA-256 of ``json.dumps`` of the
    claims in their order, without the ``nbf``/``exp``/``iat``/``jti`` it adds afterwards."""
    if payload is None:
        return None
    claims = {k: v for k, v in payload.items() if k not in ("nbf", "exp", "iat", "jti")}
    try:
        text = json.dumps(claims)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _listed_digest(entry: Any) -> str | None:
    """``["DIGEST", ["SHA-256", "<hex>"]]`` -> the lowercase hex, else None."""
    if (
        isinstance(entry, list)
        and len(entry) == 2
        and entry[0] == "DIGEST"
        and isinstance(entry[1], list)
        and len(entry[1]) == 2
        and isinstance(entry[1][0], str)
        and entry[1][0].upper() in ("SHA-256", "SHA256")
        and isinstance(entry[1][1], str)
    ):
        return entry[1][1].lower()
    return None


def _unix_time(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return _EPOCH + timedelta(seconds=value)
    except (OverflowError, ValueError):
        return None


def _claims_json(payload: dict[str, Any]) -> str:
    try:
        return orjson.dumps(payload, option=orjson.OPT_SORT_KEYS).decode("utf-8")
    except TypeError:  # integers beyond 64 bits: the standard library writes them
        return json.dumps(payload, sort_keys=True, separators=(",", ":"))


def _facts(
    provider: str, role: str, payload: dict[str, Any], subject_kind: str
) -> claim_facts.Facts:
    if provider in claim_facts.NVIDIA_PROVIDERS:
        if role == "overall":
            return claim_facts.nvidia_overall_facts(payload)
        if subject_kind == "nvswitch":
            return claim_facts.nvswitch_detached_facts(payload)
        return claim_facts.nvidia_detached_facts(payload)
    if provider == "azure-maa":
        return claim_facts.maa_facts(payload)
    return claim_facts.ita_facts(payload)


def _appraise(
    provider: str,
    role: str,
    payload: dict[str, Any],
    policy: Any,
    version: str | None,
    subject_kind: str,
) -> tuple[list[tuple[str, str]], list[str]]:
    """(findings, rules not applicable to this token's platform)."""
    if provider in claim_facts.NVIDIA_PROVIDERS:
        if role == "overall":
            return appraisal.nvidia_overall(payload, policy), []
        if subject_kind == "nvswitch":
            return appraisal.nvswitch_detached(payload, policy, version), []
        return appraisal.nvidia_detached(payload, policy, version), []
    result = (
        appraisal.maa(payload, policy)
        if provider == "azure-maa"
        else appraisal.ita(payload, policy)
    )
    return result.findings, result.not_applicable


def _short_text(document: dict[str, Any], name: str, *, required: bool) -> str | None:
    value = document.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value) or len(value) > _MAX_TEXT:
        raise _Rejected("malformed", f"{name} must be a non-empty string of <= {_MAX_TEXT} chars")
    if _CONTROL.search(value):
        raise _Rejected("malformed", f"{name} contains control characters")
    return value


def _collected_at(value: Any) -> datetime | None:
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return _naive_utc(moment)


def _submission_shape(document: Any, max_submods: int) -> dict[str, Any]:
    """The agent contract's fields, or ``_Rejected`` naming what is wrong (contract §2)."""
    if not isinstance(document, dict):
        raise _Rejected("malformed", "the submission is not a JSON object")
    if document.get("schema") != SUBMISSION_SCHEMA:
        raise _Rejected(
            "malformed", f"schema is {document.get('schema')!r}, expected {SUBMISSION_SCHEMA!r}"
        )
    node_name = _short_text(document, "node_name", required=True)
    boot_id = _short_text(document, "boot_id", required=False)
    nonce = _short_text(document, "nonce", required=True)
    agent = _short_text(document, "agent", required=False)
    evidence = document.get("evidence")
    if not isinstance(evidence, list) or not evidence:
        raise _Rejected("malformed", "evidence must be a non-empty list")
    if len(evidence) > MAX_EVIDENCE_ITEMS:
        raise _Rejected("too_large", f"{len(evidence)} evidence items (limit {MAX_EVIDENCE_ITEMS})")
    items = []
    for index, item in enumerate(evidence):
        where = f"evidence[{index}]"
        if not isinstance(item, dict) or item.get("provider") not in PROVIDERS:
            raise _Rejected(
                "malformed", f"{where} must be an object whose provider is one of {PROVIDERS}"
            )
        provider = item["provider"]
        if provider in ("azure-maa", "intel-ita"):
            if not isinstance(item.get("token"), str):
                raise _Rejected("malformed", f"{where}.token must be a string (a compact JWS)")
            items.append({"provider": provider, "token": item["token"]})
            continue
        result = item.get("result")
        if not (
            isinstance(result, list)
            and len(result) == 2
            and isinstance(result[0], list)
            and len(result[0]) == 2
            and result[0][0] == "JWT"
            and isinstance(result[0][1], str)
            and isinstance(result[1], dict)
        ):
            raise _Rejected(
                "malformed", f'{where}.result must be [["JWT", overall], {{"GPU-0": jws, ...}}]'
            )
        detached = result[1]
        if len(detached) > max_submods:
            raise _Rejected(
                "too_large", f"{where} has {len(detached)} detached tokens (limit {max_submods})"
            )
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in detached.items()):
            raise _Rejected("malformed", f"{where}.result's detached tokens must be strings")
        gpus = item.get("gpus", {})
        switches = item.get("switches", {})
        if not isinstance(gpus, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and len(v) <= _MAX_TEXT
            for k, v in gpus.items()
        ):
            raise _Rejected("malformed", f"{where}.gpus must map submod keys to GPU UUIDs")
        if not isinstance(switches, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and len(v) <= _MAX_TEXT
            for k, v in switches.items()
        ):
            raise _Rejected("malformed", f"{where}.switches must map submod keys to switch ids")
        gpus = {**switches, **gpus}
        if len(gpus) > max_submods:
            raise _Rejected("too_large", f"{where}.gpus has {len(gpus)} entries")
        items.append({"provider": provider, "result": (result[0][1], detached), "gpus": dict(gpus)})
    return {
        "node_name": node_name,
        "boot_id": boot_id,
        "nonce": nonce,
        "agent": agent,
        "collected_at": _collected_at(document.get("collected_at")),
        "evidence": items,
    }


__all__ = [
    "ATTESTATION_NAMESPACE",
    "REASON_CODES",
    "Submission",
    "Verification",
    "Verifier",
    "submod_digest",
    "utc_now",
]

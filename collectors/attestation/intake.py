"""The attestation intake's two endpoints: hand out nonces, accept submissions into the spool.

Agents (deploy/ATTESTATION_AGENT.md) first ``POST /api/v1/attestations/nonce`` with
``{"node_name": ...}`` and get a stateless HMAC nonce (``nonce.issue_nonce``) bound to that node
and to an expiry, then obtain their tokens with it and ``POST /api/v1/attestations`` the
submission. Nothing is verified in the request path: the intake only checks that the body is
the agent contract's JSON (so an agent with a bug hears it at once), then writes it to
``<spool_dir>/incoming/`` and answers 202. Verification happens in the collection, with the
warehouse at hand (replays across submissions, device bindings) and the same code for files
that arrive without the intake.

Spool files are the body wrapped with its arrival facts::

    {"received_at": "2026-11-02T08:10:01.123456Z", "source": "intake", "remote": "10.0.0.7",
     "submission": "<the body, exactly as received, as a JSON string>"}

The wrapper keeps the exact bytes (``submission_id`` = SHA-256 of them stays reproducible). A
file is written to a hidden temporary name, fsynced and renamed, so readers never see half a
file. Its name is ``<received_at compact>-<sha256[:16]>.json``, so a listing sorts by arrival;
the same body posted again (an agent retrying after a lost response) is not written twice while
the first copy waits in ``incoming/``.

This module knows nothing of HTTP servers (collectors do not import ``services.intake``): the
methods take bytes and return an ``IntakeReply``; ``services.attestation.attestation_routes`` wires
them to routes.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from annex.settings import AttestationSettings
from collectors.attestation.nonce import issue_nonce
from collectors.spool import compact_time, remove_abandoned_writes, utc, write_atomically

log = logging.getLogger(__name__)

NONCE_PATH = "/api/v1/attestations/nonce"
SUBMISSIONS_PATH = "/api/v1/attestations"
SUBMISSION_SCHEMA = "annex.attestation/v1"
NONCE_REQUEST_MAX_BYTES = 4096
"""``{"node_name": ...}`` needs no more."""
MAX_NODE_NAME_CHARS = 253
"""A Kubernetes node name is a DNS subdomain: at most 253 characters."""
RESCAN_MINIMUM = 10_000
"""The intake's index of waiting files is rebuilt from the folder past this size (or 4x the
folder's count at the last rebuild)."""
INCOMING = "incoming"
ARCHIVE = "archive"
SPOOL_SUFFIX = ".json"


@dataclass(frozen=True)
class IntakeReply:
    """An endpoint's answer: HTTP status and JSON payload (errors: ``error`` and ``hint``)."""

    status: int
    payload: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def _error(status: int, error: str, hint: str | None = None, **headers: str) -> IntakeReply:
    payload: dict[str, Any] = {"error": error}
    if hint:
        payload["hint"] = hint
    return IntakeReply(status, payload, {k.replace("_", "-"): v for k, v in headers.items()})


def iso_time(moment: datetime) -> str:
    """``2026-11-02T08:10:01.123456Z``."""
    return utc(moment).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def spool_name(received_at: datetime, submission_id: str) -> str:
    return f"{compact_time(received_at)}-{submission_id[:16]}{SPOOL_SUFFIX}"


def spool_wrapper(body: bytes, *, received_at: datetime, remote: str) -> bytes:
    """The spool file's bytes for ``body`` (which must be UTF-8: the intake checked it)."""
    return orjson.dumps(
        {
            "received_at": iso_time(received_at),
            "source": "intake",
            "remote": remote,
            "submission": body.decode("utf-8"),
        }
    )


class AttestationIntake:
    """The two endpoints over one spool folder; safe to call from many threads.

    ``nonce_key`` None: the intake hands out no nonces (503), agents use their own and their
    tokens are stored with freshness unproven.
    """

    def __init__(self, settings: AttestationSettings, *, nonce_key: bytes | None) -> None:
        self.settings = settings
        self.nonce_key = nonce_key
        self.incoming = settings.spool_dir / INCOMING
        remove_abandoned_writes(self.incoming)
        self._lock = threading.Lock()
        self._waiting: dict[str, str] | None = None
        """submission_id[:16] -> spool file name, of the files (probably) in ``incoming/``."""
        self._rescan_at = RESCAN_MINIMUM

    # --- POST /api/v1/attestations/nonce -----------------------------------------------------

    def nonce(self, body: bytes, *, now: datetime) -> IntakeReply:
        """``{"node_name": str}`` -> 200 ``{"nonce", "expires_at"}``."""
        if self.nonce_key is None:
            return _error(
                503,
                "this intake issues no nonces: no nonce key is configured",
                f"the operator sets {self.settings.nonce_key_env} (attestation.nonce_key_env, "
                "at least 32 bytes) for annex serve and the collection; until then agents may "
                "use a nonce of their own (its tokens are stored with freshness unproven)",
            )
        document = _json_object(body)
        if isinstance(document, IntakeReply):
            return document
        node_name = document.get("node_name")
        problem = _node_name_problem(node_name)
        if problem:
            return _error(422, problem, 'send {"node_name": "<this node\'s Kubernetes name>"}')
        nonce, expires_at = issue_nonce(
            self.nonce_key,
            node_name,
            now=utc(now),
            ttl_seconds=self.settings.nonce_ttl_seconds,
        )
        return IntakeReply(200, {"nonce": nonce, "expires_at": iso_time(expires_at)})

    # --- POST /api/v1/attestations -----------------------------------------------------------

    def submit(self, body: bytes, *, remote: str, received_at: datetime) -> IntakeReply:
        """A submission (agent contract §2) -> spool file, 202 ``{"submission_id"}``."""
        if len(body) > self.settings.max_submission_bytes:
            return _error(
                413,
                f"the submission of {len(body):,} bytes is larger than "
                f"attestation.max_submission_bytes ({self.settings.max_submission_bytes:,})",
                "send fewer tokens per submission",
            )
        document = _json_object(body)
        if isinstance(document, IntakeReply):
            return document
        if document.get("schema") != SUBMISSION_SCHEMA:
            return _error(
                422,
                f"schema is {document.get('schema')!r}, expected {SUBMISSION_SCHEMA!r}",
                "build the body as deploy/ATTESTATION_AGENT.md describes",
            )
        problem = _node_name_problem(document.get("node_name"))
        if problem:
            return _error(422, problem, "node_name is the node's Kubernetes name (spec.nodeName)")
        if not isinstance(document.get("evidence"), list):
            return _error(
                422,
                "evidence must be a list of {provider, token | result} objects",
                "build the body as deploy/ATTESTATION_AGENT.md describes",
            )
        submission_id = hashlib.sha256(body).hexdigest()
        try:
            self._spool(body, submission_id, remote=remote, received_at=received_at)
        except OSError as exc:
            log.error("cannot write to the spool folder %s: %s", self.incoming, exc.strerror)
            return _error(
                503,
                "annex cannot store the submission right now",
                "retry in a minute; the annex operator should check the spool volume",
                Retry_After="60",
            )
        return IntakeReply(202, {"submission_id": submission_id})

    def _spool(
        self, body: bytes, submission_id: str, *, remote: str, received_at: datetime
    ) -> None:
        key = submission_id[:16]
        with self._lock:
            waiting = self._waiting_files()
            name = waiting.get(key)
            if name is not None and (self.incoming / name).exists():
                log.debug("submission %s is already waiting in %s", key, name)
                return
            name = spool_name(received_at, submission_id)
            write_atomically(
                self.incoming / name, spool_wrapper(body, received_at=received_at, remote=remote)
            )
            waiting[key] = name

    def _waiting_files(self) -> dict[str, str]:
        """The index of ``incoming/``, read from disk at start (the intake may have restarted)
        and again whenever it has grown well past what the folder held then: collections move
        files away behind the intake's back, so the index is a superset to be pruned."""
        if self._waiting is not None and len(self._waiting) >= self._rescan_at:
            self._waiting = None
        if self._waiting is None:
            self.incoming.mkdir(parents=True, exist_ok=True)
            waiting: dict[str, str] = {}
            for entry in os.scandir(self.incoming):
                stem = entry.name.removesuffix(SPOOL_SUFFIX)
                if entry.name.endswith(SPOOL_SUFFIX) and not entry.name.startswith("."):
                    waiting[stem.rpartition("-")[2]] = entry.name
            self._waiting = waiting
            self._rescan_at = max(RESCAN_MINIMUM, 4 * len(waiting))
        return self._waiting


def _json_object(body: bytes) -> Mapping[str, Any] | IntakeReply:
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return _error(
            400,
            f"the body is not UTF-8 JSON ({str(exc).split(':', 1)[0]})",
            "send a JSON object with Content-Type: application/json",
        )
    if not isinstance(document, dict):
        return _error(400, f"the body is a JSON {type(document).__name__}, not an object")
    return document


def _node_name_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return "node_name is missing or not a non-empty string"
    if len(value) > MAX_NODE_NAME_CHARS or any(ch.isspace() or ord(ch) < 32 for ch in value):
        return f"node_name is not a Kubernetes node name (at most {MAX_NODE_NAME_CHARS} chars)"
    return None

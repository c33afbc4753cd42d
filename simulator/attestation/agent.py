"""The node-side attester: gathers (simulated) evidence and delivers it to annex's intake.

Live, per confidential node of the world's `attestation_plan` (contract §2/§3):

1. ``POST {intake}/api/v1/attestations/nonce`` with ``{"node_name": ...}`` and
   ``Authorization: Bearer <token>``, answered ``{"nonce": ..., "expires_at": ...}``;
2. tokens minted with that nonce: an NRAS detached EAT for the node's GPUs (or the local
   verifier's, for a self-reported node) and an MAA or ITA token for the CPU TEE;
3. ``POST {intake}/api/v1/attestations`` with the submission JSON and the same bearer token.

When the intake cannot hand out a nonce (no nonce key: 503, or any answer but 200 other
than 401/403) the agent uses a nonce of its own, as the contract allows; a 401/403 stops that
node's round. `write_history` writes past submissions as bare files, the fallback delivery
(a DaemonSet writing to a shared folder), each file's mtime set to its collection time;
past submissions carry attester-chosen nonces (no collector nonce existed then).
Uses urllib only. Never imports annex.
"""

from __future__ import annotations

import os
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from simulator.attestation import tokens
from simulator.attestation.issuers import IssuerSet
from simulator.world.attestation import NodeAttestation, attestation_plan
from simulator.world.model import World

NONCE_PATH = "/api/v1/attestations/nonce"
SUBMIT_PATH = "/api/v1/attestations"
AGENT = "simulated-agent/1"
BOOT_ATTEST_DELAY_SECONDS = 60  # the agent attests this long after boot
SHUTDOWN_GAP_SECONDS = 180  # a rebooting node is down this long before its next boot

# plan fault -> (fault for the GPU tokens, fault for the CVM token)
_TOKEN_FAULTS: dict[str, tuple[str | None, str | None]] = {
    "debug_enabled": ("debug_enabled", None),
    "measurement_mismatch": ("measurement_mismatch", None),
    "expired": ("expired", "expired"),
    "revoked_certificate": ("revoked_certificate", None),
    "wrong_gpu": ("wrong_gpu", None),
    "cvm_debug_enabled": (None, "debug_enabled"),
    "self_reported": (None, None),
}


def node_evidence(
    plan: NodeAttestation, issuers: IssuerSet, *, nonce: str, at: datetime
) -> list[dict]:
    """The evidence entries the node's attester produces at `at` under its plan."""
    fault = plan.fault_at(at)
    gpu_fault, cvm_fault = _TOKEN_FAULTS.get(fault or "", (None, None))
    gpu_uuids = [gpu_uuid for gpu_uuid, _ in plan.gpus]
    evidence: list[dict] = []
    if plan.gpus:
        if fault == "self_reported":
            result = tokens.local_result(
                issuers,
                gpus=plan.gpus,
                nonce=nonce,
                issued_at=at,
                claims_version=plan.claims_version,
            )
            evidence.append(tokens.gpu_evidence("nvidia-local", result, gpu_uuids))
        else:
            result = tokens.nras_result(
                issuers,
                gpus=plan.gpus,
                nonce=nonce,
                issued_at=at,
                claims_version=plan.claims_version,
                fault=gpu_fault,
                foreign_ueid=plan.foreign_ueid,
            )
            evidence.append(tokens.gpu_evidence("nvidia-nras", result, gpu_uuids))
    if plan.cvm_provider == "azure-maa":
        token = tokens.maa_token(
            issuers,
            vm_id=plan.vm_id,
            nonce=nonce,
            issued_at=at,
            tee=plan.maa_tee or "sevsnpvm",
            fault=cvm_fault,
        )
    else:
        token = tokens.ita_token(
            issuers, nonce=nonce, issued_at=at, fault=cvm_fault, vm_id=plan.vm_id
        )
    evidence.append(tokens.cvm_evidence(plan.cvm_provider, token))
    return evidence


def node_submission(
    plan: NodeAttestation,
    issuers: IssuerSet,
    *,
    nonce: str,
    at: datetime,
    boot_id: str | None = None,
    agent: str = AGENT,
) -> bytes:
    """The submission body the node sends at `at` (boot id: the one running then)."""
    if boot_id is None:
        boot = plan.boot_at(at)
        boot_id = boot[1] if boot else plan.boot_id
    return tokens.submission(
        node_name=plan.node_name,
        boot_id=boot_id,
        nonce=nonce,
        collected_at=at,
        evidence=node_evidence(plan, issuers, nonce=nonce, at=at),
        agent=agent,
    )


class AttestingAgent:
    """Attests every planned node of `world` to the intake at `intake_url`, on a schedule."""

    def __init__(
        self,
        world: World,
        issuers: IssuerSet,
        intake_url: str,
        token: str,
        *,
        interval_seconds: float = 3000,
        verify_tls: ssl.SSLContext | None = None,
        clock: Callable[[], datetime] | None = None,
        nodes: Sequence[str] | None = None,
        timeout_seconds: float = 10.0,
    ) -> None:
        self.world = world
        self.issuers = issuers
        self.intake_url = intake_url.rstrip("/")
        self.token = token
        self.interval_seconds = interval_seconds
        self.verify_tls = verify_tls
        self.clock = clock or (lambda: datetime.now(UTC))
        self.timeout_seconds = timeout_seconds
        plans = attestation_plan(world)
        chosen = plans if nodes is None else {n: plans[n] for n in nodes if n in plans}
        self.plans = [p for p in chosen.values() if p.fault != "missing"]
        self.rounds = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> list[int]:
        """One round over the nodes; per node the submission's HTTP status.

        A node whose nonce request was refused with 401/403 reports that status and sends
        nothing; a connection that fails reports 0.
        """
        statuses = []
        for plan in self.plans:
            if self._stop.is_set() and self._thread is not None:
                break
            statuses.append(self._attest(plan))
        self.rounds += 1
        return statuses

    def start(self) -> AttestingAgent:
        """Run a round now and then every `interval_seconds`, on a daemon thread."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="attesting-agent", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def __enter__(self) -> AttestingAgent:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.run_once()
            self._stop.wait(self.interval_seconds)

    def _attest(self, plan: NodeAttestation) -> int:
        now = self.clock()
        status, body = self._post(NONCE_PATH, orjson.dumps({"node_name": plan.node_name}))
        if status in (401, 403):
            return status
        nonce = None
        if status == 200:
            try:
                nonce = orjson.loads(body).get("nonce")
            except (orjson.JSONDecodeError, AttributeError):
                nonce = None
        if not isinstance(nonce, str) or not nonce:
            nonce = tokens.attester_nonce(self.world.seed, plan.node_name, now.isoformat())
        body = node_submission(plan, self.issuers, nonce=nonce, at=now, boot_id=plan.boot_id)
        status, _ = self._post(SUBMIT_PATH, body)
        return status

    def _post(self, path: str, body: bytes) -> tuple[int, bytes]:
        request = urllib.request.Request(
            self.intake_url + path,
            data=body,
            method="POST",
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/json",
                "Accept": "application/json",
                "User-Agent": AGENT,
            },
        )
        try:
            with urllib.request.urlopen(
                request, timeout=self.timeout_seconds, context=self.verify_tls
            ) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            with error:
                return error.code, error.read()
        except (urllib.error.URLError, OSError):
            return 0, b""


def attestation_times(
    plan: NodeAttestation, start: datetime, end: datetime, every_seconds: float
) -> Iterator[tuple[datetime, str]]:
    """When the node attested in [start, end), with the boot id then: a minute after each
    boot, then every `every_seconds` until the node goes down for its next reboot."""
    step = timedelta(seconds=every_seconds)
    for i, (booted, boot_id) in enumerate(plan.boots):
        until = end
        if i + 1 < len(plan.boots):
            until = min(end, plan.boots[i + 1][0] - timedelta(seconds=SHUTDOWN_GAP_SECONDS))
        moment = booted + timedelta(seconds=BOOT_ATTEST_DELAY_SECONDS)
        if moment < start:  # skip whole steps up to the window
            moment += step * int((start - moment) / step)
            if moment < start:
                moment += step
        while moment < until:
            yield moment, boot_id
            moment += step


def write_history(
    world: World,
    issuers: IssuerSet,
    folder: Path,
    *,
    days: float,
    every_seconds: float = 3000,
    end: datetime | None = None,
    max_nodes: int | None = None,
) -> int:
    """Write the nodes' past submissions in [end - days, end) as bare files; return the count.

    `end` defaults to `world.now`. Files are `<UTC time>-<node>.json` (name order is time
    order), written one at a time (memory stays flat however big the world), each with its
    mtime set to its collection time. `max_nodes` bounds the work on big worlds: the nodes
    with a planned fault come first, then the others by name.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    end = _utc(end or world.now)
    start = end - timedelta(days=days)
    plans = sorted(attestation_plan(world).values(), key=lambda p: (p.fault is None, p.node_name))
    if max_nodes is not None:
        plans = plans[:max_nodes]
    written = 0
    for plan in plans:
        if plan.fault == "missing":
            continue
        for moment, boot_id in attestation_times(plan, start, end, every_seconds):
            nonce = tokens.attester_nonce(world.seed, plan.node_name, moment.isoformat())
            body = node_submission(plan, issuers, nonce=nonce, at=moment, boot_id=boot_id)
            stamp = moment.strftime("%Y%m%dT%H%M%SZ")
            path = folder / f"{stamp}-{plan.node_name}.json"
            temporary = path.with_name(path.name + ".tmp")
            temporary.write_bytes(body)
            epoch = moment.timestamp()
            os.utime(temporary, (epoch, epoch))
            temporary.replace(path)
            written += 1
    return written


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


__all__ = [
    "AttestingAgent",
    "attestation_times",
    "node_evidence",
    "node_submission",
    "write_history",
]

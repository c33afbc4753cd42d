"""Attestation evidence: the intake's routes, the collection, the coverage marts.

The one place that wires ``collectors.attestation`` to the HTTP server (``services.intake``) and to
the warehouse; the CLI (``annex serve``, ``annex collect attestations``) and the Dagster assets
call these functions, so a collection behaves the same whoever starts it.

A collection verifies every waiting submission, loads records, submissions and rejections in
one warehouse transaction (``ATTESTATION_MODEL``), and only after that commit moves the files it
used to ``<spool_dir>/archive/<day>/``: a failed or killed collection leaves the spool as it
was, and the next one reads the same files (loading them twice changes nothing). Then the
coverage marts are refreshed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING

from annex.settings import Settings
from services.intake import Request, Response, Route
from warehouse import CollectionResult, Warehouse, load_collection

if TYPE_CHECKING:
    from collectors.attestation.collect import CollectStats
    from collectors.attestation.verify import Verifier
    from collectors.spool import ArchiveOutcome
    from warehouse.connection import OnWait


def attestation_routes(settings: Settings, *, env: Mapping[str, str] | None = None) -> list[Route]:
    """``POST /api/v1/attestations/nonce`` and ``POST /api/v1/attestations`` for ``IntakeServer``.

    The nonce key comes from the variable ``attestation.nonce_key_env`` names (a key that is
    too short is a ``ConfigError`` now, not at the first request); without one the nonce route
    answers 503 and agents fall back to their own nonces.
    """
    from collectors.attestation.intake import (
        NONCE_PATH,
        NONCE_REQUEST_MAX_BYTES,
        SUBMISSIONS_PATH,
        AttestationIntake,
        IntakeReply,
    )
    from collectors.attestation.nonce import nonce_key_from_env

    config = settings.attestation
    intake = AttestationIntake(config, nonce_key=nonce_key_from_env(config.nonce_key_env, env))

    def reply(answer: IntakeReply) -> Response:
        return Response(answer.status, answer.payload, answer.headers)

    def nonce(request: Request) -> Response:
        return reply(intake.nonce(request.body, now=request.received_at))

    def submit(request: Request) -> Response:
        return reply(
            intake.submit(request.body, remote=request.remote, received_at=request.received_at)
        )

    return [
        Route("POST", NONCE_PATH, nonce, max_body_bytes=NONCE_REQUEST_MAX_BYTES),
        Route("POST", SUBMISSIONS_PATH, submit, max_body_bytes=config.max_submission_bytes),
    ]


@dataclass(frozen=True)
class AttestationCollection:
    """One attestation collection: the warehouse's record of it, what the collector read and
    decided, what was archived, and the coverage refresh's own report."""

    result: CollectionResult
    stats: CollectStats
    archive: ArchiveOutcome
    coverage: dict[str, int] | None
    """``refresh_attestation_coverage``'s counts; None when the refresh was skipped."""


def collect_attestation_evidence(
    settings: Settings,
    cluster: str,
    *,
    wh: Warehouse | None = None,
    verifier: Verifier | None = None,
    publish: bool = True,
    refresh_coverage: bool = True,
    on_progress: Callable[[CollectStats], None] | None = None,
    on_wait: OnWait | None = None,
    now: datetime | None = None,
    max_files: int | None = None,
) -> AttestationCollection:
    """Verify and load the waiting submissions as one collection for ``cluster``; archive the
    files it used once it has committed; refresh the coverage marts; publish.

    ``cluster`` names the cluster whose nodes sent the submissions (rows are joined with its
    inventory). Raises what ``load_collection`` raises; the spool is then untouched.
    """
    from collectors.attestation.collect import CollectStats, collect_attestations
    from collectors.attestation.verify import Verifier
    from collectors.spool import archive_files
    from warehouse.models.attestation import ATTESTATION_MODEL

    wh = wh or Warehouse(settings.warehouse)
    stats = CollectStats()
    # Key sets from configured URLs are fetched here, before the writer lock is taken (the
    # verification itself reads only local files).
    verifier = verifier or Verifier.from_settings(settings.attestation)
    batches = collect_attestations(
        settings,
        verifier=verifier,
        stats=stats,
        on_progress=on_progress,
        now=now,
        max_files=max_files,
    )
    result = load_collection(
        wh, ATTESTATION_MODEL, cluster=cluster, batches=batches, on_wait=on_wait, publish=False
    )
    archive = archive_files(stats.consumed)
    coverage: dict[str, int] | None = None
    try:
        if refresh_coverage:
            coverage = refresh_attestation_coverage(wh, on_wait=on_wait)
    finally:
        if publish:
            wh.publish(on_wait)
    return AttestationCollection(result=result, stats=stats, archive=archive, coverage=coverage)


def refresh_attestation_coverage(
    wh: Warehouse, *, on_wait: OnWait | None = None, since: date | None = None
) -> dict[str, int]:
    """Rebuild the attestation coverage marts for the days new evidence touched (and every
    day from ``since``): ``warehouse.models.attestation_coverage``; returns its counts."""
    from warehouse.models.attestation_coverage import refresh_attestation_coverage as refresh

    with wh.writer(on_wait) as con:
        return refresh(con, since=since)


def pending_submissions(settings: Settings) -> int:
    """How many files wait in the spool and the watched folders (a listing, nothing opened):
    the sensor's check before it starts a collection."""
    from collectors.attestation.submissions import count_waiting

    return count_waiting(settings.attestation)

"""Training-data lineage: the OpenLineage intake's routes, the collection, the lineage models.

The one place that wires ``collectors.lineage`` to the HTTP server (``services.intake``) and to
the warehouse; the CLI (``annex serve``, ``annex collect lineage``) and the Dagster assets call
these functions, so a collection behaves the same whoever starts it.

A collection reads every waiting spool file (events the intake validated), watched file and
named file (validated here), loads events and rejections in one warehouse transaction
(``warehouse.models.lineage.LINEAGE_MODEL``; lineage is not per cluster, so the collection is
recorded for cluster ``"*"``), and only after that commit moves the spool and watched files it
used to ``<spool_dir>/archive/<day>/``: a failed or killed collection leaves them where they
were and the next one reads them again (one row per ``event_id``, so loading twice changes
nothing). Then ``refresh_lineage`` brings the model closures and the cycle findings up to date
(only the closures the new collections can change), and the analysts' copy is published.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from annex.errors import ConfigError
from annex.settings import Settings
from services.intake import Request, Response, Route
from warehouse import CollectionResult, Warehouse, load_collection

if TYPE_CHECKING:
    from collectors.lineage.collect import CollectStats
    from collectors.lineage.intake import LineageIntake
    from collectors.spool import ArchiveOutcome
    from warehouse.connection import OnWait

LINEAGE_CLUSTER = "*"
"""The ``cluster`` lineage collections are recorded under (events name their own clusters)."""


def lineage_routes(settings: Settings, *, intake: LineageIntake | None = None) -> list[Route]:
    """``POST /api/v1/lineage`` and ``POST /api/v1/lineage/batch`` for ``IntakeServer``.

    Both take bodies up to ``lineage.max_body_bytes`` on the wire (and, once inflated, in
    total), validate them in ``lineage.intake_workers`` processes and write what they receive
    to ``lineage.spool_dir/incoming``. ``intake`` (default: a new ``LineageIntake`` over
    ``settings.lineage``) lets a caller keep the handle, e.g. to ``close()`` its workers.
    """
    from collectors.lineage.intake import BATCH_PATH, LINEAGE_PATH, IntakeReply, LineageIntake

    intake = intake if intake is not None else LineageIntake(settings.lineage)

    def reply(answer: IntakeReply) -> Response:
        return Response(answer.status, answer.payload, answer.headers)

    def single(request: Request) -> Response:
        return reply(
            intake.single(
                request.body,
                content_encoding=request.content_encoding,
                received_at=request.received_at,
            )
        )

    def batch(request: Request) -> Response:
        return reply(
            intake.batch(
                request.body,
                content_encoding=request.content_encoding,
                received_at=request.received_at,
            )
        )

    limit = settings.lineage.max_body_bytes
    return [
        Route("POST", LINEAGE_PATH, single, max_body_bytes=limit),
        Route("POST", BATCH_PATH, batch, max_body_bytes=limit),
    ]


@dataclass(frozen=True)
class LineageCollection:
    """One lineage collection: the warehouse's record of it, what the collector read, what was
    archived, and ``refresh_lineage``'s counts (None when the refresh was skipped)."""

    result: CollectionResult
    stats: CollectStats
    archive: ArchiveOutcome
    refresh: dict[str, int] | None


def collect_lineage_evidence(
    settings: Settings,
    *,
    wh: Warehouse | None = None,
    files: Sequence[Path | str] = (),
    publish: bool = True,
    refresh: bool = True,
    full_refresh: bool = False,
    on_progress: Callable[[CollectStats], None] | None = None,
    on_wait: OnWait | None = None,
    now: datetime | None = None,
    max_files: int | None = None,
) -> LineageCollection:
    """Load the waiting events (and those of ``files``) as one collection; archive the spool
    and watched files it used once it has committed; refresh the lineage models (only the
    closures the new events can change, or all of them with ``full_refresh``); publish.

    A named file that does not exist is a ``ConfigError`` before anything is read. Raises
    what ``load_collection`` raises; the spool is then untouched.
    """
    from collectors.lineage.collect import CollectStats, collect_lineage, named_files_missing
    from collectors.spool import archive_files
    from warehouse.models.lineage import LINEAGE_MODEL

    missing = named_files_missing(files)
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise ConfigError(
            f"no such file: {missing[0]}{more}",
            hint="--file takes JSON-lines files of OpenLineage events, one event per line",
        )
    wh = wh or Warehouse(settings.warehouse)
    stats = CollectStats()
    batches = collect_lineage(
        settings, files=files, stats=stats, now=now, on_progress=on_progress, max_files=max_files
    )
    result = load_collection(
        wh,
        LINEAGE_MODEL,
        cluster=LINEAGE_CLUSTER,
        batches=batches,
        on_wait=on_wait,
        publish=False,
    )
    archive = archive_files(stats.consumed)
    counts: dict[str, int] | None = None
    try:
        if refresh:
            counts = refresh_lineage_models(wh, on_wait=on_wait, full=full_refresh)
    finally:
        if publish:
            wh.publish(on_wait)
    return LineageCollection(result=result, stats=stats, archive=archive, refresh=counts)


def refresh_lineage_models(
    wh: Warehouse, *, on_wait: OnWait | None = None, full: bool = False
) -> dict[str, int]:
    """Bring the lineage models up to date with the collections loaded since the previous
    refresh, or rebuild them whole with ``full``
    (``warehouse.models.lineage.refresh_lineage``); returns its counts."""
    from warehouse.models.lineage import refresh_lineage

    with wh.writer(on_wait) as con:
        return refresh_lineage(con, full=full)


def pending_lineage(settings: Settings) -> int:
    """How many files wait in the spool and the watched folders (a listing, nothing opened):
    the sensor's check before it starts a collection."""
    from collectors.lineage.collect import count_waiting

    return count_waiting(settings.lineage)

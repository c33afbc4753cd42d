"""The reports service: the one place that wires ``reports.generate`` to the warehouse and
the settings, for ``annex report`` (``annex.cli.report``) and ``annex demo``.

``reports.generate`` renders (``generate_report``) and loops over a report's models and
editions (``generate_reports``) for the CLI, ``annex demo`` and the Dagster report assets alike.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from annex.settings import Settings

if TYPE_CHECKING:
    from reports.definition import ReportRequest
    from reports.generate import GeneratedReport


def render_report(
    settings: Settings,
    name: str,
    request: ReportRequest,
    output: Path,
    *,
    evidence_dir: Path | None = None,
    recipient: str | None = None,
    command: str = "annex report",
) -> GeneratedReport:
    """Render report ``name`` for ``request`` from the published warehouse copy into
    ``output``; the model metadata comes from the registry ([models] dir). Signed when
    ``[reports]`` configures a key; handed to ``recipient`` (recorded with ``command``)."""
    from reports.documents import record_handover
    from reports.generate import generate_report
    from reports.signing import configured_signer
    from warehouse import Warehouse

    wh = Warehouse(settings.warehouse)
    result = generate_report(
        wh,
        name,
        request,
        output,
        models_dir=settings.models.dir,
        evidence_dir=evidence_dir,
        signer=configured_signer(settings.reports, os.environ),
        retention_years=settings.reports.retention_years,
    )
    if recipient is not None and result.document is not None:
        record_handover(
            wh,
            result.document.file_sha256,
            recipient,
            handed_at=datetime.now(UTC).replace(tzinfo=None, microsecond=0),
            command=command,
        )
    return result


def render_demo_reports(
    settings: Settings, out: Path, *, models: Sequence[str] | None = None
) -> list[Path]:
    """Every report for the running month (the demo's evidence is of the last days), written
    to ``out/reports``; prints each path. Per-model reports are rendered for ``models``, by
    default every model of the registry ([models] dir). ``annex demo`` calls this after its
    collections."""
    from reports.catalog import report_definitions
    from reports.generate import generate_reports
    from reports.period import month_period
    from reports.signing import configured_signer
    from warehouse import Warehouse

    today = datetime.now(UTC).date()
    period = month_period(f"{today.year:04d}-{today.month:02d}")
    wh = Warehouse(settings.warehouse)
    signer = configured_signer(settings.reports, os.environ)
    paths = []
    for name in report_definitions():
        for result in generate_reports(
            wh,
            name,
            period,
            out / "reports",
            models_dir=settings.models.dir,
            models=models,
            evidence_dir=out / "evidence",
            signer=signer,
            retention_years=settings.reports.retention_years,
        ):
            print(f"report: {result.path}")
            paths.append(result.path)
    return paths

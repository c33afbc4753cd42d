"""``annex report NAME``: render one report from the published warehouse copy.

The CLI's thin layer over ``services.reports.render_report``: parse the period, render, print
the PDF's path and what it rests on.
"""

from __future__ import annotations

import argparse
import shutil
import textwrap
from collections.abc import Iterable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from annex.cli.counts import plural
from annex.settings import Settings

DEFAULT_OUTPUT = Path("annex-reports")


def register(commands: Any) -> None:
    """Register ``annex report``."""
    from reports.catalog import report_definitions

    definitions = report_definitions()
    report = commands.add_parser(
        "report",
        help="render a report (PDF/A-3b with its evidence attached)",
        description=(
            "Render a report from the published (read-only) warehouse copy as a PDF/A-3b\n"
            "file with its evidence tables and manifest attached. Without --period or\n"
            "--from/--to: the last whole month."
        ),
        epilog=_report_list(definitions.values()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    report.add_argument(
        "name",
        choices=sorted(definitions),
        metavar="NAME",
        help="the report (listed below): " + ", ".join(sorted(definitions)),
    )
    report.add_argument(
        "--model",
        metavar="NAME",
        help="the model a per-model report describes (training_summary, training_compute): "
        "its model_name in "
        "the lineage and its metadata file in [models] dir",
    )
    report.add_argument(
        "--edition",
        choices=sorted({e for d in definitions.values() for e in d.editions}),
        help="the audience of a report with editions (model_documentation: ai_office, the "
        "default; national_authority; downstream, without compute and energy)",
    )
    report.add_argument("--period", metavar="YYYY-MM", help="a calendar month (UTC)")
    report.add_argument("--from", dest="first", type=_day, metavar="DAY", help="first day")
    report.add_argument("--to", dest="last", type=_day, metavar="DAY", help="last day (inclusive)")
    report.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        metavar="DIR",
        help=f"folder for the PDF (default: ./{DEFAULT_OUTPUT})",
    )
    report.add_argument(
        "--evidence",
        type=Path,
        metavar="DIR",
        help="folder for the non-public evidence bundle (manifest, every query's CSV with its "
        "SQL and hash, the model metadata file) as one zip the report names by its SHA-256; a "
        "public report (training_summary) always writes one (default: DIR/evidence of --output)",
    )
    report.set_defaults(run=cmd_report)


def cmd_report(args: argparse.Namespace, settings: Settings) -> int:
    """Without a period: the last whole month before today (what the monthly schedule does).
    A per-model report takes --model instead and covers all the evidence there is."""
    from reports.catalog import report_definition
    from reports.definition import ReportRequest
    from reports.errors import ReportError
    from reports.period import resolve_period
    from services.reports import render_report

    definition = report_definition(args.name)
    if definition.needs_model:
        if not args.model:
            raise ReportError(
                f"report {args.name!r} describes one model",
                hint="give --model NAME (a model_name of marts.lineage_models)",
            )
        edition = args.edition or (definition.editions[0] if definition.editions else None)
        request = ReportRequest(model=args.model, edition=edition)
        scope = f"model {args.model}" + (f", {edition} edition" if edition else "")
    else:
        period = resolve_period(args.period, args.first, args.last, today=datetime.now(UTC).date())
        request = ReportRequest(period=period)
        scope = f"period {period.describe()}"
    result = render_report(settings, args.name, request, args.output, evidence_dir=args.evidence)
    manifest = result.manifest
    print(f"wrote {result.path}")
    if result.evidence_bundle is not None:
        print(
            f"wrote {result.evidence_bundle} (evidence for auditors, not for publication: "
            f"sha256:{result.evidence_bundle_sha256})"
        )
    print(
        f"  {scope}, data cut-off {manifest['data_cutoff'] or 'none'}, "
        f"{plural(len(manifest['collections']), 'collection')}, "
        f"{plural(len(manifest['tables']), 'evidence table')}"
    )
    print(f"  evidence digest sha256:{manifest['evidence_digest']}")
    if result.refused:
        print(f"  the renderer refused {plural(len(result.refused), 'request')} (logged above)")
    return 0


def _report_list(definitions: Iterable[Any]) -> str:
    """The reports, one a line: its name, then its summary wrapped beneath at the terminal's
    width (``RawDescriptionHelpFormatter`` keeps these lines as they are)."""
    width = max(40, min(shutil.get_terminal_size().columns, 100) - 2)
    lines = ["reports:"]
    for definition in definitions:
        lines.append(f"  {definition.name}:")
        lines += textwrap.wrap(
            definition.summary, width, initial_indent="      ", subsequent_indent="      "
        )
    return "\n".join(lines)


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a day like 2026-11-30") from None

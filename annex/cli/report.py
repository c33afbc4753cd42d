"""``annex report NAME``: render one report from the published warehouse copy;
``annex report verify FILE``: say whether a PDF is one annex rendered, and unchanged.

The CLI's thin layer over ``services.reports.render_report``: parse the period, render (signed
when ``[reports]`` configures a key), print the PDF's path and what it rests on, and record to
whom it was handed (``--for NAME``). ``verify`` is ``reports.documents.verify``.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import textwrap
from collections.abc import Iterable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from annex.cli.counts import plural
from annex.settings import Settings

DEFAULT_OUTPUT = Path("annex-reports")
VERIFY = "verify"
"""``annex report verify FILE``: not a report, the check of a rendered one."""


def register(commands: Any) -> None:
    """Register ``annex report``."""
    from reports.catalog import report_definitions

    definitions = report_definitions()
    report = commands.add_parser(
        "report",
        help="render a report (PDF/A-3b with its evidence attached)",
        description=(
            "Render a report from the published (read-only) warehouse copy as a PDF/A-3b\n"
            "file with its evidence tables and manifest attached, signed (PAdES) when\n"
            "[reports] signing_key is configured, and recorded in audit.documents. Without\n"
            "--period or --from/--to: the last whole month.\n\n"
            "annex report verify FILE: whether FILE is a PDF annex rendered, which report and\n"
            "version, rendered when, handed to whom, whether every byte is unchanged, and\n"
            "whether its signature is valid against [reports] signing_certificate."
        ),
        epilog=_report_list(definitions.values()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    report.add_argument(
        "name",
        choices=[*sorted(definitions), VERIFY],
        metavar="NAME",
        help="the report (listed below): " + ", ".join(sorted(definitions)) + "; or verify",
    )
    report.add_argument(
        "file",
        nargs="?",
        type=Path,
        metavar="FILE",
        help="with verify: the PDF to check (exit 0 only when annex rendered it, it is "
        "unchanged and any signature is valid)",
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
    report.add_argument(
        "--for",
        dest="recipient",
        metavar="NAME",
        help="whom the report is handed to (an auditor, an authority, a customer): recorded "
        "with the file's SHA-256 in audit.document_handovers",
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

    if args.name == VERIFY:
        return cmd_verify(args, settings)
    if args.file is not None:
        raise ReportError(
            f"unexpected argument {str(args.file)!r}",
            hint="only `annex report verify FILE` takes a file; give options as --period etc.",
        )
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
    result = render_report(
        settings,
        args.name,
        request,
        args.output,
        evidence_dir=args.evidence,
        recipient=args.recipient,
        command=_command(args),
    )
    manifest = result.manifest
    print(f"wrote {result.path}")
    document = result.document
    if document is not None:
        signed = (
            f", signed {document.signer.level} by {document.signer.subject}"
            if document.signer
            else ""
        )
        print(
            f"  version {document.version} of {document.document}, "
            f"sha256:{document.file_sha256}{signed}"
        )
    if args.recipient:
        print(f"  handed to {args.recipient.strip()} (recorded in audit.document_handovers)")
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


def cmd_verify(args: argparse.Namespace, settings: Settings) -> int:
    """Print what annex knows of the file; exit non-zero unless it is unchanged (and any
    signature valid against the configured certificate)."""
    from reports.documents import raise_for, verify
    from reports.errors import ReportError
    from warehouse import Warehouse

    if args.file is None:
        raise ReportError("verify needs the PDF to check", hint="annex report verify FILE")
    found = verify(Warehouse(settings.warehouse), args.file, settings.reports.signing_certificate)
    print("\n".join(found.lines()))
    raise_for(found)
    return 0


def _command(args: argparse.Namespace) -> str:
    """The command as typed options (what audit.document_handovers records)."""
    words = ["annex", "report", args.name]
    for option, value in (
        ("--model", args.model),
        ("--edition", args.edition),
        ("--period", args.period),
        ("--from", args.first),
        ("--to", args.last),
        ("--for", args.recipient),
    ):
        if value is not None:
            words += [option, str(value)]
    return shlex.join(words)


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

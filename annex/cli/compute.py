"""``annex compute --model NAME``: the command over ``services.compute`` (refresh, then the
model's report) and the report's text form for the terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date, datetime
from typing import Any

from annex.settings import Settings

# -- the CLI -------------------------------------------------------------------------------


def register(commands: Any) -> None:
    """``annex compute``: registered by annex.cli."""
    compute = commands.add_parser(
        "compute",
        help="training compute, time, energy and Article 51 thresholds of a model",
        description="Recompute the compute marts from the warehouse and the model registry, "
        "then print one model's figures with their methods, bands, thresholds and gaps.",
    )
    compute.add_argument("--model", required=True, metavar="NAME", help="the model's name")
    compute.add_argument("--json", action="store_true", help="print the marts' rows as JSON")
    compute.add_argument(
        "--no-refresh",
        action="store_true",
        help="print the published marts as they are (no write, no registry check)",
    )
    compute.add_argument(
        "--full-refresh",
        action="store_true",
        help="recompute every training run, not only those whose evidence changed since the "
        "last refresh (the figures are the same: use it to check so, or after restoring the "
        "marts from elsewhere)",
    )
    compute.set_defaults(run=cmd_compute)


def cmd_compute(args: argparse.Namespace, settings: Settings) -> int:
    from services.compute import model_report, refresh_compute_marts
    from warehouse import Warehouse

    wh = Warehouse(settings.warehouse)
    if not args.no_refresh:
        refresh_compute_marts(
            settings,
            wh=wh,
            on_wait=lambda message: print(message, file=sys.stderr),
            full=args.full_refresh,
        )
    with wh.reader() as con:
        report = model_report(con, args.model)
    if args.json:
        print(json.dumps(report, default=_jsonable, indent=2, sort_keys=True))
    else:
        print(render_text(report))
    return 0


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else "-"


def render_text(report: dict[str, Any]) -> str:
    """The human-readable report: every figure with its method, band and gaps (in the
    terminal's short form of ``reports.numbers``)."""
    from reports.numbers import terse
    from reports.numbers import terse_with_band as banded

    m = report["model"]
    lines = [
        f"model {m['model_name']}"
        + (f" (provider {m['provider']}, {m['parameters']:,} parameters)" if m["in_registry"] else
           " (no registry file)"),
        f"runs: {m['runs']} ({m['running_runs']} running); stages: "
        + (", ".join(m["stages"]) or "none"),
        f"GPU-hours: {m['gpu_hours']:,.1f}; hardware-days: {m['hardware_days']:,.2f}",
    ]  # fmt: skip
    for g in report["gpu_hours_by_model"]:
        model = g["gpu_model"] or g["gfd_product"]
        lines.append(f"  {model}: {g['gpu_hours']:,.1f} GPU-hours ({g['runs']} runs)")
    if m["wall_clock_days"] is not None:
        lines.append(
            f"training time: {m['wall_clock_days']:,.2f} days wall-clock (band {m['time_band']};"
            " union of its runs' spans)"
        )
    lines += [
        "compute (FLOP):",
        f"  hardware-based (GPUs x dense peak x utilisation x time): {banded(m, 'hardware_flop')}",
        f"  architecture-based (6 x N x tokens; 2 x N for generation): "
        f"{banded(m, 'architecture_flop')}",
    ]
    if m["methods_ratio"] is not None:
        verdict = "FLAGGED: beyond the margin" if m["disagreement_flagged"] else "within the margin"
        lines.append(f"  hardware / architecture: {terse(m['methods_ratio'])} ({verdict})")
    if m["active_parameters"]:
        lines.append(
            f"  N = {m['active_parameters']:,} active parameters (mixture of experts; "
            f"{m['parameters']:,} in total)"
        )
    if m["excluded_runs"]:
        lines.append(
            f"  not counted: {m['excluded_runs']} runs (exploratory, new pre-training or a Job "
            "claimed by another run; marts.training_run_compute.exclusion)"
        )
    lines += [
        f"  own compute of record ({', '.join(m['compute_methods']) or 'none'}; the larger "
        f"estimate per run, never above its physical maximum): {banded(m, 'own_compute_flop')}",
        f"  base models ({', '.join(m['base_models']) or 'none'}): {terse(m['base_compute_flop'])}",
        f"  cumulative: {banded(m, 'cumulative_compute_flop')}",
        "energy:",
        f"  of record: {banded(m, 'energy_mwh', ' MWh')}; rounded {terse(m['energy_mwh_rounded'])}"
        f" MWh; {m['energy_method'] or 'n/a'}",
        f"  measured part: {banded(m, 'energy_measured_mwh', ' MWh')}; rounded "
        f"{terse(m['energy_measured_mwh_rounded'])} MWh; {m['energy_measured_method'] or 'n/a'}",
        f"  estimated: {banded(m, 'energy_estimated_mwh', ' MWh')}; rounded "
        f"{terse(m['energy_estimated_mwh_rounded'])} MWh; {m['energy_estimated_method'] or 'n/a'}",
        "thresholds:",
    ]
    for t in report["thresholds"]:
        lines.append(
            f"  {t['threshold']} ({terse(t['threshold_flop'])} FLOP, {t['threshold_basis']}): "
            f"{t['status']}; compared {terse(t['compared_flop'])}; crossed {_when(t['crossed_at'])}"
            f"; projected {_when(t['projected_crossing_at'])}; notify by "
            f"{_when(t['notification_due']) if t['notification_due'] else 'no notification'}"
            + (f" (projected by {t['projection_basis']})" if t["projection_basis"] else "")
            + ("; ALERT" if t["alert"] else "")
        )
    if m["plan_end"] is not None:
        lines.append(
            f"projection: {terse(m['rate_flop_per_s'])} FLOP/s from running jobs to the planned "
            f"end {_when(m['plan_end'])}: {terse(m['projected_compute_flop'])} FLOP"
        )
    if m["planned_compute_flop"] is not None:
        lines.append(
            f"planned: the running runs' token plans take cumulative compute to "
            f"{terse(m['planned_compute_flop'])} FLOP"
        )
    lines.append("gaps:" if m["gaps"] else "gaps: none")
    lines += [f"  - {gap}" for gap in m["gaps"]]
    return "\n".join(lines)

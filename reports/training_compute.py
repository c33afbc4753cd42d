"""Training compute, energy and the Article 51 threshold assessment, per model.

For a compliance officer: where the model stands against each threshold first (10^23 FLOP
indicative GPAI criterion, 10^25 FLOP systemic-risk presumption, one third of the original's
compute for a modification), with the crossing or projected crossing date and the two-week
notification deadline; then the evidence behind it: both estimation methods with their bands
and whether they agree, the compute of record and why, training time, energy, hardware, the
training runs, and every gap in the evidence. All figures are the compute marts' (built by
``warehouse.models.compute.refresh_compute`` with the formulas of
``warehouse.models.compute_formulas``), so the report, ``annex compute`` and analysts' SQL say
the same; this module only selects, formats and draws them.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from reports.charts import PALETTE, Level, TimeSeries, log_lines, power_of_ten
from reports.definition import Evidence, EvidenceQuery, ReportDefinition, Section
from reports.errors import ReportError
from reports.training_summary import simulated_notice
from warehouse.models import compute_formulas as formulas

Row = dict[str, Any]

SOURCES = ("kubernetes", "telemetry", "gpubench", "lineage")
TOP = 15
RUN_ID_CHARS = 14
"""Run ids are cut to this many characters in the inline table (OpenLineage ids are UUIDs)."""
CURVE_POINTS = 240
"""Most points of the cumulative-compute line (a sweep over the runs' spans, sampled)."""


def _band_columns(name: str) -> str:
    return f"{name}, {name}_low, {name}_high"


QUERIES = (
    EvidenceQuery(
        "model",
        "The model's cumulative training compute, time and energy with their bands, methods "
        "and projection (marts.model_compute).",
        f"""
        SELECT model_name, in_registry, provider, parameters,
               array_to_string(base_models, ', ') AS base_models, runs, running_runs,
               array_to_string(stages, ', ') AS stages, gpu_hours, wall_clock_seconds,
               wall_clock_days, hardware_days, time_band, {_band_columns("hardware_flop")},
               {_band_columns("architecture_flop")}, disagreement, disagreement_flagged,
               {_band_columns("own_compute_flop")}, base_compute_flop,
               {_band_columns("cumulative_compute_flop")},
               array_to_string(compute_methods, ', ') AS compute_methods, measured_gpu_joules,
               energy_coverage, {_band_columns("energy_measured_mwh")},
               energy_measured_mwh_rounded, energy_measured_method,
               {_band_columns("energy_estimated_mwh")}, energy_estimated_mwh_rounded,
               energy_estimated_method, rate_flop_per_s, plan_end, projected_compute_flop,
               planned_compute_flop, len(gaps) AS gaps, refreshed_at
        FROM marts.model_compute
        WHERE model_name = $model
        """,
    ),
    EvidenceQuery(
        "thresholds",
        "Article 51 thresholds: status, crossing or projected crossing date and notification "
        "deadline (marts.model_compute_thresholds).",
        """
        SELECT threshold, threshold_flop, threshold_basis, compared_flop, compared_flop_high,
               applies, status, crossed_at, projected_crossing_at, projection_basis, learned_at,
               notification_due, alert_enabled, alert, refreshed_at
        FROM marts.model_compute_thresholds
        WHERE model_name = $model
        ORDER BY CASE threshold WHEN 'gpai' THEN 1 WHEN 'systemic_risk' THEN 2 ELSE 3 END
        """,
    ),
    EvidenceQuery(
        "runs",
        "Every training run counted toward the model, with both compute estimates, time, "
        "energy, coverage and evidence ids (marts.training_run_compute); span_start/span_end "
        "are the span its compute accrues over (allocations, else the lineage run).",
        f"""
        SELECT run_id, stage, state, running, attributed_by, lineage_model_name, started_at,
               ended_at, kubernetes_cluster, kubernetes_namespace, kubernetes_job_name,
               namespace_in_registry, gpus, open_gpus, gpu_hours, first_allocation_at,
               last_allocation_at, wall_clock_seconds, wall_clock_source, hardware_days,
               utilisation, utilisation_source, telemetry_coverage,
               {_band_columns("hardware_flop")}, parameters, tokens, flop_per_parameter_token,
               {_band_columns("architecture_flop")}, disagreement, disagreement_margin,
               disagreement_flagged, {_band_columns("compute_flop")}, compute_method,
               measured_gpu_joules, energy_coverage, {_band_columns("energy_measured_mwh")},
               {_band_columns("energy_estimated_mwh")}, rate_flop_per_s,
               planned_remaining_flop,
               coalesce(first_allocation_at, started_at) AS span_start,
               CASE WHEN first_allocation_at IS NOT NULL THEN last_allocation_at
                    WHEN started_at IS NOT NULL THEN coalesce(ended_at, refreshed_at)
               END AS span_end,
               len(gaps) AS gaps,
               array_to_string(evidence_pod_uids, ' ') AS evidence_pod_uids,
               array_to_string(evidence_gpu_uuids, ' ') AS evidence_gpu_uuids,
               array_to_string(evidence_event_ids, ' ') AS evidence_event_ids,
               array_to_string(evidence_benchmark_ids, ' ') AS evidence_benchmark_ids,
               refreshed_at
        FROM marts.training_run_compute
        WHERE model_name = $model
        ORDER BY coalesce(first_allocation_at, started_at) NULLS LAST, run_id
        """,
    ),
    EvidenceQuery(
        "hardware",
        "GPU models the model's runs used: SKU, dense peak, TDP, GPU-hours, telemetry "
        "GPU-hours and utilisation sources (marts.training_run_gpus, summed).",
        """
        SELECT gpu_product, any_value(gpu_sku) AS gpu_sku,
               any_value(peak_tflops_dense) AS peak_tflops_dense,
               any_value(tdp_watts) AS tdp_watts, sum(gpu_hours) AS gpu_hours,
               sum(gpu_hours) / 24 AS hardware_days,
               sum(telemetry_gpu_hours) AS telemetry_gpu_hours,
               sum(energy_gpu_hours) AS energy_gpu_hours,
               array_to_string(list_sort(list(DISTINCT utilisation_source)), ', ')
                   AS utilisation_sources,
               count(DISTINCT run_id) AS runs
        FROM marts.training_run_gpus
        WHERE model_name = $model
        GROUP BY gpu_product
        ORDER BY gpu_hours DESC, gpu_product
        """,
    ),
    EvidenceQuery(
        "run_gpus",
        "Per run and GPU model: peak, utilisation and its source, hardware-based compute, "
        "telemetry and energy GPU-hours (marts.training_run_gpus).",
        f"""
        SELECT run_id, gpu_product, gpu_sku, gpu_hours, open_gpus, peak_tflops_dense,
               tdp_watts, telemetry_gpu_hours, tensor_active, busy, benchmark_frac_peak,
               utilisation, utilisation_source, {_band_columns("hardware_flop")},
               measured_gpu_joules, energy_gpu_hours
        FROM marts.training_run_gpus
        WHERE model_name = $model
        ORDER BY run_id, gpu_product
        """,
    ),
    EvidenceQuery(
        "base_models",
        "The models this one modifies and their cumulative compute (marts.model_compute): the "
        "basis of the modification threshold; empty figures are base models annex has no "
        "compute for.",
        f"""
        WITH bases AS (
            SELECT unnest(base_models) AS model_name
            FROM marts.model_compute WHERE model_name = $model
        )
        SELECT bases.model_name, b.in_registry, b.runs,
               {_band_columns("b.cumulative_compute_flop")}
        FROM bases LEFT JOIN marts.model_compute AS b USING (model_name)
        ORDER BY bases.model_name
        """,
    ),
    EvidenceQuery(
        "gaps",
        "What is missing behind the figures, in words: the model's (registry, base models) "
        "and each run's (holdings, telemetry, tokens, peaks) (marts.model_compute.gaps, "
        "marts.training_run_compute.gaps).",
        """
        SELECT scope, run_id, gap FROM (
            SELECT 'model' AS scope, NULL AS run_id, unnest(gaps) AS gap
            FROM marts.model_compute WHERE model_name = $model
            UNION ALL
            SELECT 'run' AS scope, run_id, unnest(gaps) AS gap
            FROM marts.training_run_compute WHERE model_name = $model
        )
        ORDER BY scope, run_id NULLS FIRST, gap
        """,
    ),
    EvidenceQuery(
        "producers",
        "Who described the model's training runs and checkpoints: lineage producer URIs, "
        "simulated or not (marts.lineage_model_producers).",
        """
        SELECT producer, CAST(sum(dataset_versions) AS BIGINT) AS dataset_versions,
               CAST(sum(runs) AS BIGINT) AS runs, bool_or(simulated) AS simulated
        FROM marts.lineage_model_producers
        WHERE model_name = $model
        GROUP BY producer
        ORDER BY producer
        """,
    ),
)

SECTIONS = (
    Section("assessment", "Article 51 assessment"),
    Section("methods", "Training compute: both estimation methods"),
    Section("time", "Training time and hardware"),
    Section("energy", "Energy"),
    Section("runs", "Training runs"),
    Section("gaps", "Gaps in the evidence"),
)

THRESHOLDS = {
    "gpai": (
        f"{power_of_ten(23)} FLOP: indicative GPAI criterion",
        "Guidelines point 17: a model trained with more than 10^23 FLOP that generates "
        "language, images or video is indicatively a general-purpose AI model (Art 53 "
        "obligations).",
    ),
    "systemic_risk": (
        f"{power_of_ten(25)} FLOP: systemic-risk presumption",
        "Art 51(2): more than 10^25 FLOP presumes high-impact capabilities; Art 52(1): notify "
        "the Commission without delay and within two weeks of meeting it or learning it will "
        "be met.",
    ),
    "modification": (
        "One third of the original model's compute: modification",
        "Guidelines points 60-61: a modifier whose modification compute exceeds one third of "
        "the original model's becomes the provider of a new model (10^23/3 when the "
        "original's compute is unknown).",
    ),
}

STATUS = {
    "crossed": ("CROSSED", "fail"),
    "projected": ("PROJECTED", "fail"),
    "within_band": ("WITHIN BAND", "fail"),
    "below": ("below", "pass"),
    "not_applicable": ("does not apply", "no"),
}

_SOURCE_WORDS = {
    "telemetry_tensor_active": "DCGM tensor-pipe activity",
    "benchmark_calibrated": "busy time × benchmarked fraction of peak",
    "assumed_default": "assumed default MFU",
    "mixed": "mixed (per GPU model)",
}


def flop(value: float | None) -> str | None:
    """``1.21 × 10²³`` (3 significant figures); None stays None (a gap on the page)."""
    if value is None:
        return None
    if value == 0:
        return "0"
    exponent = math.floor(math.log10(abs(value)))
    mantissa = round(value / 10**exponent, 2)
    if abs(mantissa) >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{mantissa:.2f} × {power_of_ten(exponent)}"


def flop_band(low: float | None, high: float | None) -> str | None:
    if low is None or high is None:
        return None
    return f"{flop(low)} to {flop(high)}"


def mwh(value: float | None) -> str | None:
    """Megawatt-hours to at least three significant figures (MDF 8 asks for two)."""
    if value is None:
        return None
    if value == 0:
        return "0"
    decimals = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:,.{decimals}f}"


def build(evidence: Evidence) -> dict[str, Any]:
    """The template's context: the assessment, both methods, time, energy, runs, gaps."""
    model_name = evidence.request.model or ""
    found = evidence.records("model")
    model = found[0] if found else None
    if model is None and evidence.model is None:
        raise ReportError(
            f"no model named {model_name!r}: marts.model_compute has no row for it and the "
            "model registry no metadata file",
            hint="check the name (`annex compute --model NAME` lists the models), or run "
            "`annex compute` after new collections",
        )
    runs = evidence.records("runs")
    thresholds = [_threshold(t, model) for t in evidence.records("thresholds")]
    hardware = evidence.records("hardware")
    bases = evidence.records("base_models")
    gaps = evidence.records("gaps")
    producers = evidence.records("producers")
    for row in runs:
        _format_run(row)
    for row in bases:
        row["compute"] = flop(row["cumulative_compute_flop"])
        row["band"] = flop_band(
            row["cumulative_compute_flop_low"], row["cumulative_compute_flop_high"]
        )
    for row in producers:
        row["simulated_mark"] = "yes" if row["simulated"] else "no"
    hours = sum(r["gpu_hours"] or 0.0 for r in runs)
    telemetry_hours = sum((r["telemetry_coverage"] or 0.0) * (r["gpu_hours"] or 0.0) for r in runs)
    margins = sorted({r["disagreement_margin"] for r in runs if r["disagreement_margin"]})
    finished = [r for r in runs if not r["running"]]
    sources = Counter(r["utilisation_source"] for r in runs if r["utilisation_source"])
    context: dict[str, Any] = {
        "model_name": model_name,
        "m": _format_model(model) if model else None,
        "entry": evidence.model,
        "thresholds": thresholds,
        "met": [t for t in thresholds if t["status"] in ("crossed", "projected")],
        "charts": _charts(model, runs, evidence.records("thresholds")),
        "runs": sorted(runs, key=lambda r: (-(r["compute_flop"] or 0.0), r["run_id"]))[:TOP],
        "runs_total": len(runs),
        "run_id_chars": RUN_ID_CHARS,
        "finished_total": len(finished),
        "both_total": sum(1 for r in runs if r["disagreement"] is not None),
        "hardware_total": sum(1 for r in runs if r["hardware_flop"] is not None),
        "architecture_total": sum(1 for r in finished if r["architecture_flop"] is not None),
        "flagged_runs": [r for r in runs if r["disagreement_flagged"]],
        "margin": margins[-1] if margins else None,
        "utilisation_sources": [
            f"{_SOURCE_WORDS.get(s, s)}: {n} {'run' if n == 1 else 'runs'}"
            for s, n in sorted(sources.items())
        ],
        "telemetry_coverage": telemetry_hours / hours if hours else None,
        "without_tokens": [r for r in runs if r["architecture_flop"] is None and not r["running"]],
        "without_holdings": [r for r in runs if r["gpu_hours"] is None],
        "partial_telemetry": [
            r for r in runs if r["gpu_hours"] and (r["telemetry_coverage"] or 0.0) < 1.0
        ],
        "hardware": hardware,
        "bases": bases,
        "no_runs": model is not None and not runs,
        "model_gaps": [g["gap"] for g in gaps if g["scope"] == "model"],
        "run_gaps": [g for g in gaps if g["scope"] == "run"][:TOP],
        "run_gaps_total": sum(1 for g in gaps if g["scope"] == "run"),
        "producers": producers,
        "dtype": evidence.model.dtype if evidence.model else None,
        "reference": _reference(),
    }
    notice = simulated_notice(
        producers,
        "training runs",
        "the runs, GPU-hours, compute and energy below are made up.",
    )
    if notice:
        context["report"] = {"simulated": notice}
    return context


def _format_model(model: Row) -> Row:
    out = dict(model)
    for name in (
        "hardware_flop",
        "architecture_flop",
        "own_compute_flop",
        "cumulative_compute_flop",
    ):
        out[f"{name}_fmt"] = flop(model[name])
        out[f"{name}_band"] = flop_band(model[f"{name}_low"], model[f"{name}_high"])
    for name in ("base_compute_flop", "projected_compute_flop", "planned_compute_flop"):
        out[f"{name}_fmt"] = flop(model[name])
    out["rate_fmt"] = flop(model["rate_flop_per_s"]) if model["rate_flop_per_s"] else None
    for name in ("energy_measured_mwh", "energy_estimated_mwh"):
        out[f"{name}_fmt"] = mwh(model[f"{name}_rounded"])
        out[f"{name}_band"] = (
            f"{mwh(model[f'{name}_low'])} to {mwh(model[f'{name}_high'])}"
            if model[name] is not None
            else None
        )
    seconds = model["wall_clock_seconds"]
    out["wall_clock_hours"] = f"{seconds / 3600:,.1f}" if seconds is not None else None
    joules = model["measured_gpu_joules"]
    out["gpu_mwh_fmt"] = mwh(joules / formulas.JOULES_PER_MWH) if joules else None
    return out


def _format_run(row: Row) -> None:
    run_id = row["run_id"]
    row["run_short"] = run_id if len(run_id) <= RUN_ID_CHARS else run_id[: RUN_ID_CHARS - 1] + "…"
    row["stage_words"] = (row["stage"] or "stage unknown").lower().replace("_", " ") + (
        ", running" if row["running"] else ""
    )
    row["from_day"] = row["span_start"].date() if row["span_start"] else None
    row["hardware_fmt"] = flop(row["hardware_flop"])
    row["architecture_fmt"] = flop(row["architecture_flop"])
    if row["running"] and row["architecture_fmt"]:  # the START facets' token plan
        row["architecture_fmt"] += " (plan)"
    row["apart"] = (
        f"{row['disagreement'] * 100:.0f} %{' FLAGGED' if row['disagreement_flagged'] else ''}"
        if row["disagreement"] is not None
        else ("running" if row["running"] else "n/a")
    )
    row["energy_fmt"] = mwh(row["energy_measured_mwh"])


def _threshold(row: Row, model: Row | None) -> Row:
    """One threshold's row with its words: what it is, where the model stands, what to do."""
    name, law = THRESHOLDS.get(row["threshold"], (row["threshold"], ""))
    status, css = STATUS.get(row["status"], (row["status"], "no"))
    out = dict(row)
    out |= {
        "name": name,
        "law": law,
        "status_text": status,
        "status_class": css,
        "threshold_fmt": flop(row["threshold_flop"]),
        "compared_fmt": flop(row["compared_flop"]),
        "compared_high_fmt": flop(row["compared_flop_high"]),
        "share": row["compared_flop"] / row["threshold_flop"] if row["threshold_flop"] else None,
        "verdict": _verdict(row, model),
    }
    return out


def _verdict(t: Row, model: Row | None) -> str:
    """The threshold's finding in one sentence, with its dates."""
    compared = (
        "own (modification) compute" if t["threshold"] == "modification" else "cumulative compute"
    )
    value = f"{compared} {flop(t['compared_flop'])} FLOP"
    due = _when(t["notification_due"])
    status = t["status"]
    if status == "not_applicable":
        return (
            "Not applicable: the model is not generative (metadata file)."
            if t["threshold"] == "gpai"
            else "Not applicable: the model modifies no base model (metadata file)."
        )
    if status == "crossed":
        return f"Crossed on {_when(t['crossed_at'])} ({value}); notify by {due}."
    if status == "projected" and t["projection_basis"] == "planned_tokens":
        planned = flop(model["planned_compute_flop"]) if model else None
        return (
            f"Projected: the running runs' token plans take it to {planned} FLOP ({value} so "
            f"far); annex learned it will be met on {_when(t['learned_at'])}; notify by {due}."
        )
    if status == "projected":
        end = _when(model["plan_end"]) if model else "the planned end"
        return (
            f"Projected to be crossed on {_when(t['projected_crossing_at'])} by the running "
            f"jobs at their current rate, before the planned end {end} ({value} now); notify "
            f"by {due}."
        )
    if status == "within_band":
        return (
            f"Below ({value}), but the band's high end {flop(t['compared_flop_high'])} reaches "
            "it: not excluded within the estimates' uncertainty; narrow the band (telemetry, "
            "token counts) or treat it as met."
        )
    share = t["compared_flop"] / t["threshold_flop"] if t["threshold_flop"] else 0.0
    return (
        f"Below: {value}, {_share(share)} of the threshold; the band's high end "
        f"{flop(t['compared_flop_high'])} is below it too."
    )


def _share(ratio: float) -> str:
    percent = ratio * 100
    if percent >= 10:
        return f"{percent:.0f} %"
    if percent >= 0.01:
        return f"{percent:.2g} %"
    return "under 0.01 %"


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else "no date"


def _charts(model: Row | None, runs: list[Row], thresholds: list[Row]) -> list[dict[str, str]]:
    """The cumulative-compute curve to date and, for running training with a planned end,
    its projection, each with the thresholds that apply drawn across it."""
    if model is None:
        return []
    base = model["base_compute_flop"] or 0.0
    contributions = [
        (r["span_start"], r["span_end"], r["compute_flop"])
        for r in runs
        if r["span_start"] is not None and r["compute_flop"]
    ]
    applying = {t["threshold"]: t for t in thresholds if t["applies"]}
    colours = {"gpai": PALETTE[4], "systemic_risk": PALETTE[3], "modification": PALETTE[5]}
    cumulative_levels = [
        Level(f"{flop(t['threshold_flop'])} {t['threshold'].replace('_', ' ')}",
              t["threshold_flop"], colours[t["threshold"]])
        for name, t in applying.items() if name != "modification"
    ]  # fmt: skip
    marks = [
        (t["crossed_at"], f"{t['threshold'].replace('_', ' ')} crossed")
        for t in applying.values()
        if t["crossed_at"] is not None and t["threshold"] != "modification"
    ]
    if not contributions:
        return []
    now = model["refreshed_at"]
    series = [TimeSeries("cumulative compute", _curve(contributions, base, now), PALETTE[0])]
    levels = list(cumulative_levels)
    if "modification" in applying:
        t = applying["modification"]
        series.append(TimeSeries("own (modification) compute", _curve(contributions, 0.0, now),
                                 PALETTE[5]))  # fmt: skip
        levels.append(Level(f"{flop(t['threshold_flop'])} modification", t["threshold_flop"],
                            colours["modification"]))  # fmt: skip
    charts = [
        {
            "svg": log_lines(
                series,
                title="Cumulative training compute to date (thresholds dashed)",
                unit="FLOP",
                levels=levels,
                marks=marks,
            ),
            "alt": "Cumulative training compute over time with the Article 51 thresholds",
        }
    ]
    plan_end, rate = model["plan_end"], model["rate_flop_per_s"]
    if plan_end is not None and rate and plan_end > now:
        cumulative = model["cumulative_compute_flop"] or 0.0
        steps = [now + (plan_end - now) * k / 60 for k in range(61)]
        projection = [(t, cumulative + rate * (t - now).total_seconds()) for t in steps]
        projected_marks = [
            (t["projected_crossing_at"], f"{t['threshold'].replace('_', ' ')} projected")
            for t in applying.values()
            if t["projected_crossing_at"] is not None and t["threshold"] != "modification"
        ]
        charts.append(
            {
                "svg": log_lines(
                    [
                        TimeSeries("cumulative compute", series[0].points, PALETTE[0]),
                        TimeSeries(
                            "projection at the current rate", projection, PALETTE[3], dashed=True
                        ),
                    ],
                    title="Projection to the planned end of training",
                    unit="FLOP",
                    levels=cumulative_levels,
                    marks=projected_marks,
                ),
                "alt": "Projected cumulative training compute to the planned end",
            }
        )
    return charts


def _curve(
    contributions: list[tuple[datetime, datetime, float]], offset: float, now: datetime
) -> list[tuple[datetime, float]]:
    """Cumulative compute over time, each run's compute accrued linearly over its span (as
    the marts' crossing dates are computed), sampled at most ``CURVE_POINTS`` times."""
    start = min(s for s, _, _ in contributions)
    end = max(max(e for _, e, _ in contributions), start + timedelta(seconds=1))
    moments = sorted(
        {start, end, *(s for s, _, _ in contributions), *(e for _, e, _ in contributions)}
    )
    if len(moments) > CURVE_POINTS // 2:
        moments = [start + (end - start) * k / (CURVE_POINTS - 1) for k in range(CURVE_POINTS)]
    else:  # between breakpoints a linear sum is curved on a log axis: add points
        moments = sorted(
            {a + (b - a) * k / 6 for a, b in itertools.pairwise(moments) for k in range(6)}
            | {moments[-1]}
        )
    events: list[tuple[datetime, float, float]] = []  # (moment, change of rate, step)
    for s, e, value in contributions:
        seconds = (e - s).total_seconds()
        if seconds <= 0:
            events.append((s, 0.0, value))
        else:
            events += [(s, value / seconds, 0.0), (e, -value / seconds, 0.0)]
    events.sort(key=lambda ev: ev[0])
    total, rate, clock, index, points = offset, 0.0, start, 0, []
    for moment in moments:
        while index < len(events) and events[index][0] <= moment:
            at, delta, step = events[index]
            total += rate * (at - clock).total_seconds() + step
            clock, rate, index = at, rate + delta, index + 1
        points.append((moment, total + rate * (moment - clock).total_seconds()))
    if now > end:
        points.append((now, points[-1][1]))
    return points


def _reference() -> dict[str, Any]:
    """The constants the appendix cites, from the formulas module (one source of truth)."""
    return {
        "gpai": flop(formulas.GPAI_FLOP),
        "systemic": flop(formulas.SYSTEMIC_RISK_FLOP),
        "share": "one third",
        "days": formulas.NOTIFICATION_DAYS,
        "training": formulas.TRAINING_MULTIPLIER,
        "generation": formulas.GENERATION_MULTIPLIER,
        "utilisation": [
            (_SOURCE_WORDS[s], f"±{w * 100:.0f} %") for s, w in formulas.UTILISATION_SOURCES.items()
        ],
        "architecture": f"±{formulas.ARCHITECTURE_BAND * 100:.0f} %",
        "measured": f"±{formulas.MEASURED_POWER_BAND * 100:.0f} %",
        "tdp_fill": f"±{formulas.TDP_FILL_BAND * 100:.0f} %",
        "estimated": f"±{formulas.ESTIMATED_ENERGY_BAND * 100:.0f} %",
        "month_days": formulas.SECONDS_PER_MONTH / 86_400,
    }


TRAINING_COMPUTE = ReportDefinition(
    name="training_compute",
    title="Training compute, energy and Article 51 threshold assessment",
    template="training_compute.html.j2",
    summary="A model's training compute by both estimation methods with their uncertainty, "
    "training time, energy and hardware, and where it stands against the Article 51 "
    "thresholds (10^23, 10^25, one third for a modification) with crossing dates and "
    "notification deadlines; gaps marked.",
    queries=QUERIES,
    sections=SECTIONS,
    build=build,
    needs_period=False,
    needs_model=True,
    collection_sources=SOURCES,
)

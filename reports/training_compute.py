"""Training compute, energy and the Article 51 threshold assessment, per model.

For a compliance officer: where the model stands against each threshold first (10^23 FLOP
indicative GPAI criterion, 10^25 FLOP systemic-risk presumption, one third of the original's
compute for a modification), each status with its consequence and its source, and a "notify
by" date only where the law asks for a notification (Art 52(1): the systemic-risk threshold);
then the compute of record per lifecycle stage with both estimation methods side by side,
their ratio and why the method of record was chosen; which runs count and which are listed
apart (and why, with the Guidelines point); the findings behind the figures (a Kubernetes Job
claimed twice, a figure above a run's physical maximum); training time and hardware; the
energy of record with its measured share; and every gap in the evidence.

All figures are the compute marts' (built by ``warehouse.models.compute.refresh_compute``), so
the report, ``annex compute`` and analysts' SQL say the same; this module only selects, words
and formats them, in the one number format of ``reports.numbers``.
"""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from reports.charts import PALETTE, Level, TimeSeries, log_lines
from reports.definition import Evidence, EvidenceQuery, ReportDefinition, Section
from reports.errors import ReportError
from reports.numbers import flop, flop_band, mwh, parameters, prose, ratio, share
from reports.training_summary import simulated_notice
from warehouse.models import compute_formulas as formulas

Row = dict[str, Any]

SOURCES = ("kubernetes", "telemetry", "gpubench", "lineage")
TOP = 15
RUN_ID_CHARS = 14
"""Run ids are cut to this many characters in the inline runs table (OpenLineage ids are
UUIDs); findings and runs listed apart name them whole."""
CURVE_POINTS = 240
"""Most points of the cumulative-compute line (a sweep over the runs' spans, sampled)."""
PHYSICS_FLOP_PER_JOULE = 2e13
"""No GPU delivers more than about 2 × 10¹³ FLOP per joule: the energy of record must be at
least compute / 2 × 10¹³ J (reference eu-ai-act.md §7)."""


def _band_columns(name: str) -> str:
    return f"{name}, {name}_low, {name}_high"


QUERIES = (
    EvidenceQuery(
        "model",
        "The model's cumulative training compute of record, time and energy with their bands, "
        "methods, runs counted and listed apart, and projection (marts.model_compute).",
        f"""
        SELECT model_name, in_registry, provider, parameters, active_parameters,
               array_to_string(base_models, ', ') AS base_models, runs, running_runs,
               excluded_runs, array_to_string(stages, ', ') AS stages, gpu_hours,
               declared_gpu_hours, wall_clock_seconds, wall_clock_days, hardware_days, time_band,
               {_band_columns("hardware_flop")}, {_band_columns("architecture_flop")},
               methods_ratio, {_band_columns("own_compute_flop")}, base_compute_flop,
               {_band_columns("cumulative_compute_flop")}, physical_max_flop,
               array_to_string(compute_methods, ', ') AS compute_methods, measured_gpu_joules,
               energy_coverage, {_band_columns("energy_mwh")}, energy_mwh_rounded,
               energy_measured_share, energy_method, energy_measured_mwh,
               energy_estimated_mwh, energy_estimated_method, rate_flop_per_s, plan_end,
               projected_compute_flop, planned_compute_flop, len(gaps) AS gaps, refreshed_at
        FROM marts.model_compute
        WHERE model_name = $model
        """,
    ),
    EvidenceQuery(
        "thresholds",
        "Article 51 thresholds: status and its consequence, crossing or projected crossing "
        "date, when the provider learned (the plan's recorded time) and the Art 52 "
        "notification deadline where one is due (marts.model_compute_thresholds).",
        """
        SELECT threshold, threshold_flop, threshold_basis, compared_flop, compared_flop_high,
               applies, status, consequence, crossed_at, projected_crossing_at,
               projection_basis, learned_at, notification_due, alert_enabled, alert,
               refreshed_at
        FROM marts.model_compute_thresholds
        WHERE model_name = $model
        ORDER BY CASE threshold WHEN 'gpai' THEN 1 WHEN 'systemic_risk' THEN 2 ELSE 3 END
        """,
    ),
    EvidenceQuery(
        "stages",
        "Per lifecycle stage over the counted runs: both methods, their ratio, the compute of "
        "record and why, the physical maximum and the energy of record "
        "(marts.model_compute_stages).",
        """
        SELECT lifecycle_stage, runs, running_runs, gpu_hours, hardware_flop,
               architecture_flop, methods_ratio, compute_flop, compute_flop_low,
               compute_flop_high, compute_method, compute_method_basis, physical_max_flop,
               energy_mwh, energy_measured_share, refreshed_at
        FROM marts.model_compute_stages
        WHERE model_name = $model
        ORDER BY CASE lifecycle_stage WHEN 'pretraining' THEN 1
                 WHEN 'continued_pretraining' THEN 2 WHEN 'fine_tuning' THEN 3
                 WHEN 'reinforcement_learning' THEN 4 ELSE 5 END
        """,
    ),
    EvidenceQuery(
        "findings",
        "What stands behind the figures: a Kubernetes Job claimed by two runs, a run's "
        "architecture figure above its physical maximum, runs listed apart "
        "(marts.compute_findings).",
        """
        SELECT f.run_id, f.kind, f.severity, f.other_run_id, f.kubernetes_job, f.message,
               r.running
        FROM marts.compute_findings AS f
        LEFT JOIN marts.training_run_compute AS r USING (model_name, run_id)
        WHERE f.model_name = $model
        ORDER BY CASE f.severity WHEN 'high' THEN 1 ELSE 2 END, f.kind, f.run_id
        """,
    ),
    EvidenceQuery(
        "runs",
        "Every training run attributed to the model, counted or listed apart (and why), with "
        "both compute estimates, their ratio, the physical maximum, time, energy, coverage and "
        "evidence ids (marts.training_run_compute); span_start/span_end are the span its "
        "compute accrues over (allocations, else the lineage run).",
        f"""
        SELECT run_id, stage, lifecycle_stage, purpose, counted, exclusion, exclusion_basis,
               state, running, attributed_by, lineage_model_name, started_at, ended_at,
               cluster, namespace, kubernetes_job_name,
               namespace_in_registry, gpus, open_gpus, declared_gpus, declared_gpu_model,
               gpu_hours, first_allocation_at, last_allocation_at, wall_clock_seconds,
               wall_clock_source, hardware_days, utilisation, utilisation_source,
               telemetry_coverage, {_band_columns("hardware_flop")}, parameters,
               total_parameters, tokens, flop_per_parameter_token,
               {_band_columns("architecture_flop")}, methods_ratio, disagreement_flagged,
               physical_max_flop, physical_max_source, above_physical_max,
               {_band_columns("compute_flop")}, compute_method, compute_method_basis,
               measured_gpu_joules, energy_coverage, {_band_columns("energy_mwh")},
               energy_measured_share, energy_method, energy_measured_mwh,
               energy_estimated_mwh, rate_flop_per_s, planned_remaining_flop,
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
        "GPU models the model's counted runs used: SKU, dense peak, TDP, GPU-hours observed "
        "and declared by producers, telemetry GPU-hours and utilisation sources "
        "(marts.training_run_gpus, summed).",
        """
        SELECT gfd_product, any_value(gpu_model) AS gpu_model,
               any_value(peak_tflops_dense) AS peak_tflops_dense,
               any_value(tdp_watts) AS tdp_watts,
               coalesce(sum(gpu_hours) FILTER (WHERE NOT declared), 0) AS gpu_hours,
               coalesce(sum(gpu_hours) FILTER (WHERE declared), 0) AS declared_gpu_hours,
               sum(gpu_hours) / 24 AS hardware_days,
               sum(telemetry_gpu_hours) AS telemetry_gpu_hours,
               sum(energy_gpu_hours) AS energy_gpu_hours,
               array_to_string(list_sort(list(DISTINCT utilisation_source)), ', ')
                   AS utilisation_sources,
               count(DISTINCT run_id) AS runs
        FROM marts.training_run_gpus
        WHERE model_name = $model AND counted
        GROUP BY gfd_product
        ORDER BY hardware_days DESC, gfd_product
        """,
    ),
    EvidenceQuery(
        "run_gpus",
        "Per run and GPU model: peak, utilisation and its source, hardware-based compute, "
        "telemetry and energy GPU-hours (marts.training_run_gpus).",
        f"""
        SELECT run_id, gfd_product, gpu_model, gpu_hours, open_gpus, peak_tflops_dense,
               tdp_watts, telemetry_gpu_hours, tensor_active, busy, benchmark_frac_peak,
               utilisation, utilisation_source, {_band_columns("hardware_flop")},
               measured_gpu_joules, energy_gpu_hours
        FROM marts.training_run_gpus
        WHERE model_name = $model
        ORDER BY run_id, gfd_product
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
    Section("stages", "Compute of record by lifecycle stage"),
    Section("runs", "Which runs count"),
    Section("findings", "Findings behind the figures"),
    Section("time", "Training time and hardware"),
    Section("energy", "Energy"),
    Section("gaps", "Gaps in the evidence"),
)

THRESHOLD_NAMES = {
    "gpai": "10²³ FLOP (GPAI)",
    "systemic_risk": "10²⁵ FLOP (systemic risk)",
    "modification": "⅓ of the original (modification)",
}

STATUS = {
    "crossed": ("CROSSED", "fail"),
    "projected": ("PROJECTED", "fail"),
    "within_band": ("WITHIN BAND", "fail"),
    "below": ("below", "pass"),
    "not_applicable": ("does not apply", "no"),
}

STAGE_SHORT = {
    "pretraining": "pre-training",
    "continued_pretraining": "continued pre-training",
    "fine_tuning": "fine-tuning",
    "reinforcement_learning": "reinforcement learning",
    "synthetic_data_generation": "synthetic-data generation",
}

METHOD_WORDS = {
    "hardware": "hardware-based",
    "architecture": "architecture-based (6·N·D)",
    "mixed": "per run, mixed",
}

EXCLUSIONS = {
    "exploratory": "Exploratory run",
    "new_pretraining": "New pre-training run",
    "job_claimed": "Job claimed by another run",
}

PURPOSES = {
    "PRODUCTION": "production",
    "ABLATION": "ablation",
    "EXPLORATORY": "exploratory",
    "HYPERPARAMETER_SEARCH": "hyperparameter search",
}

FINDING_KINDS = {
    "job_claimed_twice": "A Kubernetes Job claimed by two runs",
    "above_physical_max": "Architecture-based figure above the run's physical maximum",
    "exploratory_run": "Exploratory run listed apart",
    "new_pretraining_run": "New pre-training run listed apart",
}

SOURCE_WORDS = {
    "telemetry_tensor_active": "DCGM tensor-pipe activity",
    "benchmark_calibrated": "busy time × benchmarked fraction of peak",
    "assumed_default": "assumed default MFU",
    "mixed": "mixed (per GPU model)",
}

PHYSICAL_MAX_SOURCES = {
    "allocations": "its GPU allocations",
    "declared": "the GPUs its producer declared",
}


def build(evidence: Evidence) -> dict[str, Any]:
    """The template's context: assessment, stages, runs counted and apart, findings, time,
    energy, gaps, each figure pre-formatted in the one number format."""
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
    all_runs = evidence.records("runs")
    for row in all_runs:
        _format_run(row)
    runs = [r for r in all_runs if r["counted"] is not False]
    apart = [r for r in all_runs if r["counted"] is False]
    thresholds = [_threshold(t, model) for t in evidence.records("thresholds")]
    stages = [_format_stage(s, runs) for s in evidence.records("stages")]
    findings = [_format_finding(f) for f in evidence.records("findings")]
    hardware = evidence.records("hardware")
    for row in hardware:
        row["utilisation_words"] = ", ".join(
            SOURCE_WORDS.get(s, s) for s in (row["utilisation_sources"] or "").split(", ") if s
        )
    bases = evidence.records("base_models")
    gaps = evidence.records("gaps")
    producers = evidence.records("producers")
    for row in bases:
        row["compute"] = flop(row["cumulative_compute_flop"])
        row["band"] = flop_band(
            row["cumulative_compute_flop_low"], row["cumulative_compute_flop_high"]
        )
        row["registry_words"] = {True: "yes", False: "no"}.get(row["in_registry"], "unknown")
    for row in producers:
        row["simulated_mark"] = "yes" if row["simulated"] else "no"
    hours = sum(r["gpu_hours"] or 0.0 for r in runs)
    telemetry_hours = sum((r["telemetry_coverage"] or 0.0) * (r["gpu_hours"] or 0.0) for r in runs)
    sources = Counter(r["utilisation_source"] for r in runs if r["utilisation_source"])
    running = {r["run_id"] for r in all_runs if r["running"]}
    run_gaps = [  # a running run's plan-only or missing token count is "running", not a gap
        {"run_id": g["run_id"], "gap": prose(g["gap"])}
        for g in gaps
        if g["scope"] == "run"
        and not g["gap"].startswith("running:")
        and not (g["run_id"] in running and g["gap"].startswith("no token counts"))
    ]
    run_gap_texts = {g["gap"] for g in gaps if g["scope"] == "run"}
    context: dict[str, Any] = {
        "model_name": model_name,
        "m": _format_model(model) if model else None,
        "entry": evidence.model,
        "thresholds": thresholds,
        "notify": [t for t in thresholds if t["notification_due"] is not None],
        "obligations": [
            t
            for t in thresholds
            if t["status"] in ("crossed", "projected") and t["notification_due"] is None
        ],
        "charts": _charts(model, runs, evidence.records("thresholds")),
        "stages": stages,
        "runs": sorted(runs, key=lambda r: (-(r["compute_flop"] or 0.0), r["run_id"]))[:TOP],
        "runs_total": len(runs),
        "apart": apart,
        "run_id_chars": RUN_ID_CHARS,
        "findings": [f for f in findings if f["shown"]],
        "plans_ahead": [f for f in findings if f["plan_ahead"]],
        "utilisation_sources": [
            f"{SOURCE_WORDS.get(s, s)}: {n} {'run' if n == 1 else 'runs'}"
            for s, n in sorted(sources.items())
        ],
        "telemetry_coverage": share(telemetry_hours / hours) if hours else None,
        "without_tokens": [r for r in runs if r["architecture_flop"] is None and not r["running"]],
        "without_holdings": [r for r in runs if r["gpu_hours"] is None],
        "partial_telemetry": [
            r for r in runs if r["gpu_hours"] and (r["telemetry_coverage"] or 0.0) < 1.0
        ],
        "hardware": hardware,
        "bases": bases,
        "no_runs": model is not None and not runs,
        "model_gaps": [
            prose(g["gap"])
            for g in gaps
            if g["scope"] == "model"
            and g["gap"] not in run_gap_texts
            and not g["gap"].startswith("running:")
        ],
        "run_gaps": run_gaps[:TOP],
        "run_gaps_total": len(run_gaps),
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
    for name in ("hardware_flop", "architecture_flop", "own_compute_flop",
                 "cumulative_compute_flop"):  # fmt: skip
        out[f"{name}_fmt"] = flop(model[name])
        out[f"{name}_band"] = flop_band(model[f"{name}_low"], model[f"{name}_high"])
    for name in ("base_compute_flop", "projected_compute_flop", "planned_compute_flop",
                 "physical_max_flop"):  # fmt: skip
        out[f"{name}_fmt"] = flop(model[name])
    out["rate_fmt"] = flop(model["rate_flop_per_s"]) if model["rate_flop_per_s"] else None
    out["ratio_fmt"] = ratio(model["methods_ratio"])
    out["parameters_fmt"] = parameters(model["parameters"])
    out["active_fmt"] = parameters(model["active_parameters"])
    out["n_statement"] = _n_statement(model)
    out["methods_words"] = ", ".join(
        METHOD_WORDS.get(m, m) for m in (model["compute_methods"] or "").split(", ") if m
    )
    # energy: the total of record, its measured and estimated parts, never a part as the total
    energy, measured = model["energy_mwh"], model["energy_measured_mwh"]
    out["energy_fmt"] = mwh(model["energy_mwh_rounded"] or energy)
    out["energy_band"] = (
        f"{mwh(model['energy_mwh_low'])} to {mwh(model['energy_mwh_high'])}"
        if energy is not None
        else None
    )
    out["energy_share_fmt"] = share(model["energy_measured_share"])
    out["energy_measured_fmt"] = mwh(measured) if energy is not None else None
    out["energy_rest_fmt"] = (
        mwh(max(energy - (measured or 0.0), 0.0)) if energy is not None else None
    )
    own = model["own_compute_flop"]
    out["energy_floor_fmt"] = (
        mwh(own / PHYSICS_FLOP_PER_JOULE / formulas.JOULES_PER_MWH) if own else None
    )
    out["energy_physical"] = (
        energy is None
        or not own
        or energy * formulas.JOULES_PER_MWH >= own / PHYSICS_FLOP_PER_JOULE
    )
    out["energy_coverage_fmt"] = share(model["energy_coverage"])
    seconds = model["wall_clock_seconds"]
    out["wall_clock_hours"] = f"{seconds / 3600:,.1f}" if seconds is not None else None
    joules = model["measured_gpu_joules"]
    out["gpu_mwh_fmt"] = mwh(joules / formulas.JOULES_PER_MWH) if joules else None
    return out


def _n_statement(model: Row) -> str | None:
    """The N of 6·N·D in words: the active parameters of a mixture of experts beside the
    total (reference eu-ai-act.md §2), or the parameters of a dense model."""
    if model["parameters"] is None:
        return None
    if model["active_parameters"]:
        return (
            f"N = {parameters(model['active_parameters'])} active parameters per token (a "
            f"mixture of experts of {parameters(model['parameters'])} parameters in total): "
            "the architecture-based method counts the active parameters"
        )
    return f"N = {parameters(model['parameters'])} parameters (a dense model: all are active)"


def _format_stage(row: Row, runs: list[Row]) -> Row:
    out = dict(row)
    stage = row["lifecycle_stage"]
    out["stage_words"] = STAGE_SHORT.get(stage, stage).capitalize()
    out["hardware_fmt"] = flop(row["hardware_flop"])
    out["architecture_fmt"] = flop(row["architecture_flop"])
    if row["architecture_flop"] is None and row["running_runs"] == row["runs"]:
        out["architecture_fmt"] = "running"  # every run runs on: their tokens are a plan
    out["ratio_fmt"] = ratio(row["methods_ratio"]) or (
        "running" if row["running_runs"] == row["runs"] else None
    )
    out["compute_fmt"] = flop(row["compute_flop"])
    out["band"] = flop_band(row["compute_flop_low"], row["compute_flop_high"])
    out["method_words"] = METHOD_WORDS.get(row["compute_method"], row["compute_method"])
    out["why"] = _stage_why([r for r in runs if r["lifecycle_stage"] == stage])
    out["physical_max_fmt"] = flop(row["physical_max_flop"])
    out["energy_fmt"] = mwh(row["energy_mwh"])
    out["energy_share_fmt"] = share(row["energy_measured_share"])
    return out


def _stage_why(members: list[Row]) -> str | None:
    """Why the stage's figure is what it is, per run: the rule each run's method of record
    followed, counted (a running run is "running", not an error in its inputs)."""
    reasons: Counter[str] = Counter()
    for r in members:
        if r["compute_method"] is None:
            continue
        method = METHOD_WORDS.get(r["compute_method"], r["compute_method"])
        if r["running"]:
            reason = "running, the compute done so far"
        elif r["above_physical_max"]:
            reason = "the architecture-based figure is above the physical maximum"
        elif r["methods_ratio"] is None:
            reason = "the only estimate the evidence allows"
        else:
            reason = "the larger of the two"
        reasons[f"{method}: {reason}"] += 1
    if not reasons:
        return None
    return "; ".join(
        f"{n} {'run' if n == 1 else 'runs'} {text}" for text, n in sorted(reasons.items())
    )


def _format_finding(row: Row) -> Row:
    out = dict(row)
    out["kind_words"] = FINDING_KINDS.get(row["kind"], row["kind"])
    message = row["message"].removeprefix(f"run {row['run_id']}: ")
    out["message_words"] = prose(message[:1].upper() + message[1:])
    out["runs_named"] = (
        f"{row['run_id']} and {row['other_run_id']}" if row["other_run_id"] else row["run_id"]
    )
    # a running run's token count is the plan of its START facets: above what its GPUs have
    # done so far is expected until it ends, so it is listed apart from the findings
    out["plan_ahead"] = row["kind"] == "above_physical_max" and bool(row["running"])
    # runs listed apart are shown once, in section 3, not again as findings
    out["shown"] = (
        row["kind"] in ("job_claimed_twice", "above_physical_max") and not out["plan_ahead"]
    )
    return out


def _format_run(row: Row) -> None:
    run_id = row["run_id"]
    row["run_short"] = run_id if len(run_id) <= RUN_ID_CHARS else run_id[: RUN_ID_CHARS - 1] + "…"
    stage = row["lifecycle_stage"]
    row["stage_words"] = STAGE_SHORT.get(stage, (stage or "stage unknown").replace("_", " "))
    row["from_day"] = row["span_start"].date() if row["span_start"] else None
    row["to_day"] = (
        "running" if row["running"] else (row["ended_at"].date() if row["ended_at"] else None)
    )
    row["gpu_hours_fmt"] = f"{row['gpu_hours']:,.1f}" if row["gpu_hours"] is not None else None
    if row["gpu_hours"] is None and row["declared_gpus"]:
        row["gpu_hours_fmt"] = "declared"
    row["hardware_fmt"] = flop(row["hardware_flop"])
    row["architecture_fmt"] = flop(row["architecture_flop"])
    if row["running"]:  # the START facets' token plan, not work done
        row["architecture_fmt"] = (
            f"{row['architecture_fmt']} (plan)" if row["architecture_fmt"] else "running"
        )
        row["ratio_fmt"] = "running"
    else:
        row["ratio_fmt"] = ratio(row["methods_ratio"])
    row["record_fmt"] = flop(row["compute_flop"])
    row["method_words"] = METHOD_WORDS.get(row["compute_method"], row["compute_method"])
    row["physical_max_fmt"] = flop(row["physical_max_flop"])
    row["energy_fmt"] = mwh(row["energy_mwh"])
    row["energy_share_fmt"] = share(row["energy_measured_share"])
    row["purpose_words"] = PURPOSES.get(row["purpose"], row["purpose"])
    row["exclusion_words"] = EXCLUSIONS.get(row["exclusion"], row["exclusion"])
    basis = (row["exclusion_basis"] or "").removesuffix("; listed here")
    row["exclusion_basis_words"] = prose(basis[:1].upper() + basis[1:]) if basis else None


def _threshold(row: Row, model: Row | None) -> Row:
    """One threshold's row with its words: what it is, where the model stands, what follows."""
    status, css = STATUS.get(row["status"], (row["status"], "no"))
    out = dict(row)
    out |= {
        "name": THRESHOLD_NAMES.get(row["threshold"], row["threshold"]),
        "basis_words": prose(row["threshold_basis"]),
        "consequence_words": prose(row["consequence"]),
        "status_text": status,
        "status_class": css,
        "threshold_fmt": flop(row["threshold_flop"]),
        "compared_fmt": flop(row["compared_flop"]),
        "compared_high_fmt": flop(row["compared_flop_high"]),
        "verdict": _verdict(row, model),
    }
    return out


def _verdict(t: Row, model: Row | None) -> str:
    """The threshold's finding in one sentence, with its dates; a "notify by" date only where
    the marts set one (Art 52(1): never for the 10^23 criterion)."""
    compared = (
        "own (modification) compute" if t["threshold"] == "modification" else "cumulative compute"
    )
    value = f"{compared} {flop(t['compared_flop'])} FLOP"
    status = t["status"]
    learned = (
        f"; learned (plan recorded) {_when(t['learned_at'])}" if t["learned_at"] is not None else ""
    )
    notify = (
        f"; notify by {_when(t['notification_due'])}" if t["notification_due"] is not None else ""
    )
    if status == "not_applicable":
        return "Does not apply."
    if status == "crossed":
        return f"Crossed on {_when(t['crossed_at'])} ({value}){learned}{notify}."
    if status == "projected" and t["projection_basis"] == "planned_tokens":
        planned = flop(model["planned_compute_flop"]) if model else None
        return (
            f"Projected: the counted runs' token plans take it to {planned} FLOP ({value} so "
            f"far){learned}{notify}."
        )
    if status == "projected":
        end = _when(model["plan_end"]) if model else "the planned end"
        return (
            f"Projected to be crossed on {_when(t['projected_crossing_at'])} by the running "
            f"jobs at their current rate, before the planned end {end} ({value} now)"
            f"{learned}{notify}."
        )
    if status == "within_band":
        return (
            f"Below ({value}), but the band's high end {flop(t['compared_flop_high'])} reaches "
            "it: not excluded within the estimates' uncertainty; narrow the band (telemetry, "
            "token counts) or treat it as met."
        )
    ratio_to = t["compared_flop"] / t["threshold_flop"] if t["threshold_flop"] else 0.0
    return (
        f"Below: {value}, {share(ratio_to)} of the threshold; the band's high end "
        f"{flop(t['compared_flop_high'])} is below it too."
    )


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else "no date"


CHART_LABELS = {
    "gpai": "10²³ GPAI criterion",
    "systemic_risk": "10²⁵ systemic risk",
    "modification": "modification",
}


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
        Level(CHART_LABELS[name], t["threshold_flop"], colours[name])
        for name, t in applying.items() if name != "modification"
    ]  # fmt: skip
    marks = [
        (t["crossed_at"], f"{CHART_LABELS[t['threshold']]} crossed")
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
        levels.append(Level(f"{flop(t['threshold_flop'])} (modification)", t["threshold_flop"],
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
            (t["projected_crossing_at"], f"{CHART_LABELS[t['threshold']]} projected")
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
            (SOURCE_WORDS[s], f"±{w * 100:.0f} %") for s, w in formulas.UTILISATION_SOURCES.items()
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
    summary="A model's training compute of record per lifecycle stage by both estimation "
    "methods with their ratio and uncertainty, which runs count and which are listed apart, "
    "the findings behind the figures, training time, energy (measured and estimated) and "
    "hardware, and where the model stands against the Article 51 thresholds (10²³, 10²⁵, one "
    "third for a modification) with the consequence of each and the Art 52 notification "
    "deadline where one is due; gaps marked.",
    queries=QUERIES,
    sections=SECTIONS,
    build=build,
    needs_period=False,
    needs_model=True,
    collection_sources=SOURCES,
)

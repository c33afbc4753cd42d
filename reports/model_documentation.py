"""The EU AI Act technical documentation of a model (Annex XI, Art 53(1)(a)), the information
for downstream providers (Annex XII, Art 53(1)(b)) and the Code of Practice's model
documentation form (MDF), as three editions of one fact base (reference eu-ai-act.md §1, §4):

* ``ai_office``: Annex XI section 1, section 2 when the model has systemic risk (10^25 FLOP
  crossed or projected, marts.model_compute_thresholds), and the MDF fields for the AI Office:
  precise training time (wall-clock and hardware days), compute and energy with their methods;
* ``national_authority``: the same, with the MDF's national-authority answer for training time
  (its range bin);
* ``downstream``: Annex XII only. Compute, energy, hardware and thresholds are never read, so
  neither the pages nor the attachments can carry them (their queries name the other editions,
  and the metadata file, which holds compute and alert settings, is not attached).

Every field is filled from the warehouse (compute, time, energy, hardware and node pools,
attestation of the training GPU-hours from marts; data provenance, size and curation from the
lineage marts) or from the model's metadata file (``documentation`` answers, annex/
model_registry.py), or is a visible gap naming the article or annex point that requires it.
The completeness score is the edition's filled fields over its required ones.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from annex.compute import flop
from annex.model_registry import DOCUMENTATION_FIELDS, ModelEntry
from reports.definition import Evidence, EvidenceQuery, ReportDefinition, Section
from reports.errors import ReportError
from reports.findings import RequiredField
from reports.training_summary import QUERIES as SUMMARY_QUERIES
from reports.training_summary import simulated_notice

Row = dict[str, Any]

AI_OFFICE = "ai_office"
NATIONAL_AUTHORITY = "national_authority"
DOWNSTREAM = "downstream"
EDITIONS = (AI_OFFICE, NATIONAL_AUTHORITY, DOWNSTREAM)
AUTHORITIES = (AI_OFFICE, NATIONAL_AUTHORITY)
AUDIENCES = {
    AI_OFFICE: "AI Office edition",
    NATIONAL_AUTHORITY: "national competent authority edition",
    DOWNSTREAM: "downstream provider edition",
}
SYSTEMIC = ("crossed", "projected")
"""Statuses of the 10^25 FLOP threshold under which Annex XI section 2 is required: crossed
(the Art 51(2) presumption) or projected (the running jobs reach it: documented ahead)."""
TOP = 12
IN_METADATA = "the model metadata file"
LINEAGE = "OpenLineage (marts.lineage_eu_*)"
COMPUTE = "marts.model_compute"

_SUMMARY = {q.name: q for q in SUMMARY_QUERIES}

QUERIES = (
    _SUMMARY["checkpoints"],
    _SUMMARY["size"],
    _SUMMARY["sources"],
    _SUMMARY["measures"],
    _SUMMARY["producers"],
    EvidenceQuery(
        "model_compute",
        "Annex XI 2(d)-(e), MDF 7-8: the model's cumulative training compute (both methods, "
        "bands), training time and energy (measured and estimated) with methods and gaps "
        "(marts.model_compute).",
        """
        SELECT model_name, in_registry, runs, running_runs,
               array_to_string(stages, '; ') AS stages, gpu_hours, wall_clock_seconds,
               wall_clock_days, hardware_days, time_band,
               hardware_flop, hardware_flop_low, hardware_flop_high,
               architecture_flop, architecture_flop_low, architecture_flop_high,
               disagreement, disagreement_flagged,
               own_compute_flop, base_compute_flop,
               cumulative_compute_flop, cumulative_compute_flop_low,
               cumulative_compute_flop_high, array_to_string(compute_methods, '; ')
                   AS compute_methods,
               energy_coverage, energy_measured_mwh, energy_measured_mwh_low,
               energy_measured_mwh_high, energy_measured_mwh_rounded, energy_measured_method,
               energy_estimated_mwh, energy_estimated_mwh_low, energy_estimated_mwh_high,
               energy_estimated_mwh_rounded, energy_estimated_method,
               array_to_string(gaps, '; ') AS gaps, refreshed_at
        FROM marts.model_compute
        WHERE model_name = $model
        """,
        editions=AUTHORITIES,
    ),
    EvidenceQuery(
        "thresholds",
        "Art 51-52: the model's compute against 10^23 and 10^25 FLOP and, for a modification, "
        "one third of its base's (marts.model_compute_thresholds).",
        """
        SELECT threshold, threshold_flop, threshold_basis, compared_flop, compared_flop_high,
               applies, status, crossed_at, projected_crossing_at, notification_due
        FROM marts.model_compute_thresholds
        WHERE model_name = $model
        ORDER BY threshold_flop, threshold
        """,
        editions=AUTHORITIES,
    ),
    EvidenceQuery(
        "training_runs",
        "Annex XI 2(b), 2(d), MDF 5 and 7: the model's training runs by stage, with GPU-hours, "
        "compute of record, method and energy (marts.training_run_compute).",
        """
        SELECT run_id, stage, state, running, started_at, ended_at, kubernetes_cluster,
               kubernetes_namespace, kubernetes_job_name, gpu_hours, wall_clock_seconds,
               utilisation_source, compute_flop, compute_flop_low, compute_flop_high,
               compute_method, energy_measured_mwh, energy_estimated_mwh,
               array_to_string(gaps, '; ') AS gaps
        FROM marts.training_run_compute
        WHERE model_name = $model
        ORDER BY started_at NULLS LAST, run_id
        """,
        editions=AUTHORITIES,
    ),
    EvidenceQuery(
        "hardware",
        "MDF 7: the GPU models the training runs held, with GPU-hours and hardware-days "
        "(marts.model_gpu_hours).",
        """
        SELECT gpu_product, gpu_sku, gpu_hours, hardware_days, runs
        FROM marts.model_gpu_hours
        WHERE model_name = $model
        ORDER BY gpu_hours DESC, gpu_product
        """,
        editions=AUTHORITIES,
    ),
    EvidenceQuery(
        "node_pools",
        "MDF 7 hardware and Code Measure 1.3 integrity: the node pools and GPU models the "
        "training Jobs held GPUs on (marts.attestation_gpu_hours by Job, pools from "
        "marts.node_gpu_capacity), with the attestation coverage of those GPU-hours.",
        """
        WITH jobs AS (
            SELECT DISTINCT kubernetes_cluster, kubernetes_namespace, kubernetes_job_name
            FROM marts.training_run_compute
            WHERE model_name = $model AND kubernetes_job_name IS NOT NULL
        ),
        held AS (
            SELECT a.cluster, a.node_name,
                   sum(a.allocated_gpu_hours) AS allocated_gpu_hours,
                   sum(a.verified_gpu_hours) AS verified_gpu_hours,
                   sum(a.self_reported_gpu_hours) AS self_reported_gpu_hours,
                   sum(a.unattested_gpu_hours) AS unattested_gpu_hours,
                   sum(a.unknown_gpu_hours) AS unknown_gpu_hours
            FROM marts.attestation_gpu_hours AS a
            JOIN jobs AS j
              ON a.cluster = j.kubernetes_cluster AND a.namespace = j.kubernetes_namespace
             AND a.job_name = j.kubernetes_job_name
            GROUP BY a.cluster, a.node_name
        ),
        nodes AS (
            SELECT cluster, node_name, any_value(pool) AS pool,
                   any_value(gpu_product) AS gpu_product,
                   sum(capacity) FILTER (WHERE resource_name = 'nvidia.com/gpu') AS gpus
            FROM marts.node_gpu_capacity
            GROUP BY cluster, node_name
        )
        SELECT h.cluster, n.pool, n.gpu_product,
               count(*) AS nodes,
               count(*) FILTER (WHERE n.node_name IS NULL) AS nodes_not_in_inventory,
               CAST(sum(n.gpus) AS BIGINT) AS gpus,
               sum(h.allocated_gpu_hours) AS allocated_gpu_hours,
               sum(h.verified_gpu_hours) AS verified_gpu_hours,
               sum(h.self_reported_gpu_hours) AS self_reported_gpu_hours,
               sum(h.unattested_gpu_hours) AS unattested_gpu_hours,
               sum(h.unknown_gpu_hours) AS unknown_gpu_hours
        FROM held AS h
        LEFT JOIN nodes AS n ON n.cluster = h.cluster AND n.node_name = h.node_name
        GROUP BY h.cluster, n.pool, n.gpu_product
        ORDER BY allocated_gpu_hours DESC, h.cluster, n.pool NULLS LAST, n.gpu_product
        """,
        editions=AUTHORITIES,
    ),
)

SECTIONS = {
    "gaps": "Completeness and gaps",
    "general": "General information",
    "use": "Model properties, use and integration",
    "design": "Design and training process",
    "data": "Training, testing and validation data",
    "compute": "Training compute, time and hardware",
    "energy": "Energy consumption",
    "systemic": "Systemic-risk models: Annex XI section 2",
    "integrity": "Integrity of the evidence",
}
PARTS = {
    AI_OFFICE: ("general", "use", "design", "data", "compute", "energy"),
    NATIONAL_AUTHORITY: ("general", "use", "design", "data", "compute", "energy"),
    DOWNSTREAM: ("general", "use", "data"),
}


@dataclass(frozen=True)
class Fact:
    """One fact of the fact base and the point requiring it in each edition that shows it."""

    part: str
    label: str
    value: str | None
    source: str
    remedy: str
    refs: Mapping[str, str] = field(default_factory=dict)

    def in_edition(self, edition: str) -> RequiredField | None:
        if edition not in self.refs:
            return None
        return RequiredField(
            self.part, self.refs[edition], self.label, self.value, self.source, self.remedy
        )


def _refs(authority: str | None = None, downstream: str | None = None) -> dict[str, str]:
    refs = dict.fromkeys(AUTHORITIES, authority) if authority else {}
    if downstream:
        refs[DOWNSTREAM] = downstream
    return refs


def build(evidence: Evidence) -> dict[str, Any]:
    """The edition's context: its fields by part, gaps up front, the score, the evidence."""
    edition = evidence.request.edition or AI_OFFICE
    model = evidence.model
    model_name = evidence.request.model or ""
    checkpoints = evidence.records("checkpoints")
    if not checkpoints and model is None:
        raise ReportError(
            f"no model named {model_name!r}: the lineage has no checkpoint of it and the model "
            "registry no metadata file",
            hint="check the name against marts.lineage_models.model_name (`annex sql`) or the "
            "files of [models] dir",
        )
    authority = edition in AUTHORITIES
    compute = _one(evidence, "model_compute") if authority else None
    if compute is not None and not compute["runs"]:
        compute = None  # a registry model without training runs: zero is not evidence
    thresholds = evidence.records("thresholds") if authority else []
    runs = evidence.records("training_runs") if authority else []
    hardware = evidence.records("hardware") if authority else []
    pools = evidence.records("node_pools") if authority else []
    systemic_row = next(
        (t for t in thresholds if compute and t["threshold"] == "systemic_risk"), None
    )
    systemic = systemic_row is not None and systemic_row["status"] in SYSTEMIC
    sources = evidence.records("sources")
    size = evidence.records("size")
    measures = evidence.records("measures")
    producers = evidence.records("producers")

    facts = (
        _general(model, model_name)
        + _use(model)
        + _design(model, checkpoints, runs)
        + _data(model, sources, size, measures)
    )
    if authority:
        facts += _compute(model, compute, systemic_row, hardware, pools)
        facts += _energy(model, compute)
        if systemic:
            facts += _systemic(model, runs)
    fields = [f for f in (fact.in_edition(edition) for fact in facts) if f is not None]
    parts = [p for p in PARTS[edition] if any(f.part == p for f in fields)]
    if systemic:
        parts.append("systemic")
    gaps = [f for f in fields if f.gap]
    required = len(fields)
    section_names = ["gaps", *parts, *(["integrity"] if authority else [])]
    context: dict[str, Any] = {
        "edition": edition,
        "audience": AUDIENCES[edition],
        "authority": authority,
        "model": model,
        "model_name": model_name,
        "parts": [{"anchor": p, "title": SECTIONS[p]} for p in parts],
        "fields": fields,
        "gaps": gaps,
        "required": required,
        "filled": required - len(gaps),
        "completeness": (required - len(gaps)) / required if required else None,
        "systemic": systemic,
        "systemic_row": systemic_row,
        "compute": compute,
        "thresholds": thresholds,
        "runs": runs[:TOP],
        "runs_total": len(runs),
        "hardware": hardware,
        "pools": pools[:TOP],
        "pools_total": len(pools),
        "coverage": _coverage(pools),
        "categories": _categories(sources),
        "size": size,
        "measures": measures[:TOP],
        "measures_total": len(measures),
        "checkpoints": checkpoints[:TOP],
        "checkpoints_total": len(checkpoints),
        "producers": producers,
        "report": {
            "title": "Technical documentation and model documentation form",
            "scope": f"{model_name}: {AUDIENCES[edition]}",
            "summary": _summary(edition),
            "sections": tuple(Section(a, SECTIONS[a]) for a in section_names),
        },
    }
    for row in producers:
        row["simulated_mark"] = "yes" if row["simulated"] else "no"
    for row in thresholds:  # a threshold not crossed has no date: not a gap in the evidence
        for key in ("crossed_at", "notification_due"):
            row[f"{key}_text"] = f"{row[key]:%Y-%m-%d %H:%M UTC}" if row[key] else "-"
    notice = simulated_notice(
        producers,
        "training content",
        "the data sources and the training runs they describe are made up.",
    )
    if notice:
        context["report"]["simulated"] = notice
    return context


def _summary(edition: str) -> str:
    if edition == DOWNSTREAM:
        return (
            "The information and documentation for downstream providers (Art 53(1)(b), "
            "Annex XII) and the model documentation form's fields for them, filled from the "
            "warehouse and the model's metadata file, gaps marked."
        )
    return (
        "The technical documentation (Art 53(1)(a), Annex XI) and the Code of Practice's "
        f"model documentation form ({AUDIENCES[edition]}), filled from the warehouse and the "
        "model's metadata file, gaps marked."
    )


def _one(evidence: Evidence, name: str) -> Row | None:
    rows = evidence.records(name)
    return rows[0] if rows else None


def _file_remedy(model: ModelEntry | None, model_name: str, what: str) -> str:
    where = f"{model.file_name} in [models] dir" if model else f"{model_name}.yaml in [models] dir"
    return f"Set {what} in the model's metadata file ({where})"


def _answer(model: ModelEntry | None, name: str) -> str | None:
    """A ``documentation`` answer of the metadata file, as text (None: not written)."""
    if model is None:
        return None
    value = getattr(model.documentation, name)
    if isinstance(value, tuple):
        return ", ".join(value) or None
    if isinstance(value, int):
        return f"{value:,} tokens"
    return value


def _documented(
    model: ModelEntry | None, part: str, label: str, name: str, refs: dict[str, str]
) -> Fact:
    """A fact the provider writes under ``documentation.<name>``."""
    return Fact(
        part,
        label,
        _answer(model, name),
        IN_METADATA,
        _file_remedy(model, model.name if model else "", f"documentation.{name}")
        + f" ({DOCUMENTATION_FIELDS[name].split(': ', 1)[1]})",
        refs,
    )


def _general(model: ModelEntry | None, model_name: str) -> list[Fact]:
    def remedy(what: str) -> str:
        return _file_remedy(model, model_name, what)

    versions = ", ".join(f"{model_name} {v}" for v in model.versions) if model else None
    return [
        Fact(
            "general", "Provider (legal name)", model.provider if model else None, IN_METADATA,
            remedy("provider"), _refs("MDF 1", "Annex XII 1; MDF 1"),
        ),
        Fact(
            "general", "Provider contact", model.contact if model else None, IN_METADATA,
            remedy("contact"), _refs("Code Measure 1.2", "Code Measure 1.2"),
        ),
        Fact(
            "general", "Model name and versions", versions or None, IN_METADATA,
            remedy("versions"), _refs("MDF 1", "Annex XII 1; MDF 1"),
        ),
        Fact(
            "general", "Release date",
            model.release_date.isoformat() if model and model.release_date else None,
            IN_METADATA, remedy("release_date"),
            _refs("Annex XI 1(c); MDF 1", "Annex XII 1(c); MDF 1"),
        ),
        Fact(
            "general", "Date placed on the EU market",
            model.eu_market_date.isoformat() if model and model.eu_market_date else None,
            IN_METADATA, remedy("eu_market_date"), _refs("MDF 1", "MDF 1"),
        ),
        Fact(
            "general", "Model dependencies (base models)",
            (", ".join(model.base_models) or "none: not a modification of another model")
            if model else None,
            IN_METADATA, remedy("base_models"), _refs("MDF 1", "MDF 1"),
        ),
        _documented(
            model, "general", "Distribution methods and channels", "distribution_channels",
            _refs("Annex XI 1(c); MDF 3", "Annex XII 1(c); MDF 3"),
        ),
        Fact(
            "general", "Licence", model.licence if model else None, IN_METADATA,
            remedy("licence"), _refs("Annex XI 1(f); MDF 3", "Annex XII 1(h); MDF 3"),
        ),
        _documented(
            model, "general", "Authenticity evidence (e.g. hash of the weights)",
            "authenticity", _refs("MDF 1"),
        ),
    ]  # fmt: skip


def _use(model: ModelEntry | None) -> list[Fact]:
    name = model.name if model else ""
    parameters = None
    if model is not None:
        parameters = f"{model.parameters:,} total" + (
            f", {model.active_parameters:,} active per token" if model.active_parameters else ""
        )
    modalities = None
    if model is not None:
        modalities = (
            f"input: {', '.join(model.input_modalities)}; "
            f"output: {', '.join(model.output_modalities)}"
        )
    return [
        _documented(
            model, "use", "Intended tasks", "intended_tasks",
            _refs("Annex XI 1(a); MDF 4", "Annex XII 1(a); MDF 4"),
        ),
        _documented(
            model, "use", "Type and nature of AI systems it can be integrated into",
            "integrable_systems", _refs("Annex XI 1(a); MDF 4", "Annex XII 1(a); MDF 4"),
        ),
        _documented(
            model, "use", "Acceptable use policy", "acceptable_use_policy",
            _refs("Annex XI 1(b); MDF 4", "Annex XII 1(b); MDF 4"),
        ),
        Fact(
            "use", "Architecture", model.architecture if model else None, IN_METADATA,
            _file_remedy(model, name, "architecture"),
            _refs("Annex XI 1(d); MDF 2", "Annex XII 1(f); MDF 2"),
        ),
        Fact(
            "use", "Number of parameters", parameters, IN_METADATA,
            _file_remedy(model, name, "parameters"),
            _refs("Annex XI 1(d); MDF 2", "Annex XII 1(f); MDF 2"),
        ),
        Fact(
            "use", "Input and output modalities", modalities, IN_METADATA,
            _file_remedy(model, name, "modalities"),
            _refs("Annex XI 1(e); MDF 2", "Annex XII 1(g); MDF 2"),
        ),
        _documented(
            model, "use", "Input formats", "input_formats",
            _refs("Annex XI 1(e)", "Annex XII 1(g)"),
        ),
        _documented(
            model, "use", "Output formats", "output_formats",
            _refs("Annex XI 1(e)", "Annex XII 1(g)"),
        ),
        _documented(
            model, "use", "Maximum input size (context window)", "context_length",
            _refs("MDF 2", "Annex XII 2(b); MDF 2"),
        ),
        _documented(
            model, "use", "Maximum output size", "max_output_tokens", _refs("MDF 2", "MDF 2"),
        ),
        _documented(
            model, "use", "Interaction with hardware or software outside the model",
            "external_interaction", _refs(downstream="Annex XII 1(d)"),
        ),
        _documented(
            model, "use", "Versions of relevant software", "software_versions",
            _refs(downstream="Annex XII 1(e)"),
        ),
        _documented(
            model, "use", "Technical means for integration (instructions, infrastructure, "
            "tools)", "integration", _refs("Annex XI 2(a); MDF 4", "Annex XII 2(a); MDF 4"),
        ),
        _documented(
            model, "use", "Hardware and software required to run it", "inference_hardware",
            _refs("MDF 4", "MDF 4"),
        ),
    ]  # fmt: skip


def _design(model: ModelEntry | None, checkpoints: list[Row], runs: list[Row]) -> list[Fact]:
    stages = Counter(r["stage"] for r in runs)
    staged = ", ".join(f"{stage} ({_count(n, 'run')})" for stage, n in sorted(stages.items()))
    return [
        _documented(
            model, "design", "Design specifications of the model", "design_specification",
            _refs("Annex XI 2(b); MDF 2"),
        ),
        _documented(
            model, "design", "Training methods, key design choices and their rationale",
            "training_methods", _refs("Annex XI 2(b); MDF 5"),
        ),
        _documented(
            model, "design", "Optimisation objective", "optimisation_objective",
            _refs("Annex XI 2(b)"),
        ),
        Fact(
            "design", "Training stages recorded", staged or None,
            "marts.training_run_compute",
            "Send OpenLineage events for the model's training runs with the annex_trainingRun "
            "facet (stage, modelName, kubernetes job) and run `annex compute`",
            _refs("Annex XI 2(b); MDF 5"),
        ),
        Fact(
            "design", "Checkpoints in the lineage",
            f"{len(checkpoints)}: " + ", ".join(c["name"] for c in checkpoints[:5])
            + (" ..." if len(checkpoints) > 5 else "") if checkpoints else None,
            "marts.lineage_models",
            "Send OpenLineage events whose outputs are the model's checkpoints "
            "(datasetType MODEL)",
            _refs("MDF 1"),
        ),
    ]  # fmt: skip


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _categories(sources: list[Row]) -> list[Row]:
    """Sources per provenance category (the training-content template's sections)."""
    by: dict[str, Row] = {}
    for row in sources:
        key = row["source_category"] if row["section"] is not None else "UNKNOWN"
        entry = by.setdefault(
            key,
            {"category": key, "section": row["section"], "datasets": 0, "tokens": 0,
             "modalities": set()},
        )  # fmt: skip
        entry["datasets"] += 1
        entry["tokens"] += row["size_tokens"] or 0
        if row["modality"]:
            entry["modalities"].add(row["modality"])
    out = sorted(by.values(), key=lambda r: (r["category"] == "UNKNOWN", -r["tokens"]))
    for entry in out:
        entry["modalities"] = ", ".join(sorted(entry["modalities"]))
    return out


def _data(
    model: ModelEntry | None, sources: list[Row], size: list[Row], measures: list[Row]
) -> list[Fact]:
    categories = _categories(sources)
    unknown = [r["name"] for r in sources if r["section"] is None]
    provenance = "; ".join(
        f"{c['category'].lower().replace('_', ' ')} ({_count(c['datasets'], 'dataset')})"
        for c in categories
    )
    modalities = sorted({r["modality"] for r in size if r["modality"] not in (None, "UNKNOWN")})
    points = "; ".join(
        ", ".join(
            f"{r[k]:,} {k}" for k in ("tokens", "items") if r.get(k)
        ) + f" ({r['modality'].lower()})"
        for r in size
        if r["modality"] not in (None, "UNKNOWN") and (r.get("tokens") or r.get("items"))
    )  # fmt: skip
    languages = sorted({lang for r in sources if r["languages"] for lang in r["languages"].split()})
    collected = [r["latest_collection_date"] for r in sources if r["latest_collection_date"]]
    scope = []
    if languages:
        scope.append("languages " + ", ".join(languages))
    if collected:
        scope.append(f"latest collection {max(collected).isoformat()}")
    curation = "; ".join(
        f"{m['kind'].replace('_', ' ')}: {m['measure']} ({_count(m['datasets'], 'dataset')})"
        for m in measures
    )
    lineage_remedy = "Send OpenLineage events for the model's training data with annex_ facets"
    return [
        Fact(
            "data", "Type of data (modalities)", ", ".join(m.lower() for m in modalities) or None,
            LINEAGE, "Give the training inputs an annex_content modality and size",
            _refs("Annex XI 2(c); MDF 6", "Annex XII 2(c); MDF 6"),
        ),
        Fact(
            "data", "Provenance of the data sources",
            provenance if sources and not unknown else None, LINEAGE,
            f"State the sourceCategory (annex_source) of {len(unknown)} of {len(sources)} "
            f"sources: {', '.join(unknown[:3])}" if unknown else lineage_remedy,
            _refs("Annex XI 2(c); MDF 6", "Annex XII 2(c); MDF 6"),
        ),
        Fact(
            "data", "Number of data points", points or None, LINEAGE,
            "Record annex_trainingUsage.tokensConsumed on the training runs' inputs (or "
            "annex_content sizes)",
            _refs("Annex XI 2(c); MDF 6"),
        ),
        Fact(
            "data", "Scope and main characteristics", "; ".join(scope) or None, LINEAGE,
            "Set annex_content.languages and latestCollectionDate on the sources",
            _refs("Annex XI 2(c); MDF 6"),
        ),
        Fact(
            "data", "Curation measures recorded in the lineage", curation or None, LINEAGE,
            "State annex_illegalContent, annex_personalData or annex_crawl.optOut measures on "
            "the sources they were applied to",
            _refs("Annex XI 2(c); MDF 6", "Annex XII 2(c); MDF 6"),
        ),
        _documented(
            model, "data", "How the data was obtained, selected and curated", "data_curation",
            _refs("Annex XI 2(c); MDF 6", "Annex XII 2(c); MDF 6"),
        ),
        _documented(
            model, "data", "Detection of unsuitable data sources", "unsuitable_data_checks",
            _refs("Annex XI 2(c); MDF 6"),
        ),
        _documented(
            model, "data", "Detection of identifiable biases", "bias_detection",
            _refs("Annex XI 2(c); MDF 6"),
        ),
    ]  # fmt: skip


def _band(row: Row, name: str) -> str:
    return (
        f"{flop(row[name])} FLOP (band {flop(row[name + '_low'])} to {flop(row[name + '_high'])})"
    )


def _compute(
    model: ModelEntry | None,
    compute: Row | None,
    systemic: Row | None,
    hardware: list[Row],
    pools: list[Row],
) -> list[Fact]:
    remedy = (
        "Run `annex compute` after collecting the training runs' lineage (annex_trainingRun "
        "with the Kubernetes job) and the cluster inventory"
    )
    c = compute or {}
    amount = None
    if c.get("cumulative_compute_flop"):
        amount = _band(c, "cumulative_compute_flop")
        if c.get("base_compute_flop"):
            amount += f", of which {flop(c['base_compute_flop'])} FLOP by its base models"
    methods = None
    if c.get("compute_methods"):
        both = []
        if c.get("hardware_flop") is not None:
            both.append(f"hardware-based {_band(c, 'hardware_flop')}")
        if c.get("architecture_flop") is not None:
            both.append(f"architecture-based (6·N·D) {_band(c, 'architecture_flop')}")
        methods = f"compute of record: {c['compute_methods']} (the larger estimate); " + "; ".join(
            both
        )
        if c.get("disagreement") is not None:
            methods += f"; the methods differ by {c['disagreement'] * 100:.0f} %" + (
                " (beyond the accepted margin)" if c.get("disagreement_flagged") else ""
            )
    precise = None
    if c.get("wall_clock_days") is not None:
        precise = (
            f"{c['wall_clock_days']:,.2f} wall-clock days; {c['hardware_days']:,.2f} "
            f"hardware-days ({c['gpu_hours']:,.1f} GPU-hours)"
        )
    gpus = "; ".join(
        f"{h['gpu_product']}: {h['gpu_hours']:,.1f} GPU-hours in {_count(h['runs'], 'run')}"
        for h in hardware
    )
    pooled = "; ".join(
        f"pool {p['pool'] or 'unknown (node not in the inventory or unlabelled)'}"
        f" ({p['gpu_product'] or 'GPU model unknown'}): {_count(p['nodes'], 'node')}"
        + (f", {p['gpus']:,} GPUs" if p["gpus"] else "")
        for p in pools
    )
    classification = None
    if systemic is not None:
        classification = {
            "crossed": "systemic risk presumed (Art 51(2)): cumulative compute crossed 10^25 FLOP",
            "projected": "systemic risk projected: the running jobs reach 10^25 FLOP",
            "within_band": "below 10^25 FLOP, but within the uncertainty band",
            "below": "below 10^25 FLOP: no systemic-risk presumption",
        }.get(systemic["status"], systemic["status"])
        if systemic["notification_due"] is not None and systemic["status"] in SYSTEMIC:
            classification += (
                f"; Art 52(1) notification due {systemic['notification_due']:%Y-%m-%d}"
            )
    return [
        Fact(
            "compute", "Amount of training compute", amount, COMPUTE, remedy,
            _refs("Annex XI 2(d); MDF 7"),
        ),
        Fact(
            "compute", "Measurement methodology", methods, COMPUTE, remedy,
            _refs("Annex XI 2(d); MDF 7"),
        ),
        Fact(
            "compute", "Training time (precise)", precise, COMPUTE, remedy,
            {AI_OFFICE: "Annex XI 2(d); MDF 7 (AI Office)"},
        ),
        Fact(
            "compute", "Training time (range)", c.get("time_band"), COMPUTE, remedy,
            {NATIONAL_AUTHORITY: "Annex XI 2(d); MDF 7 (national authority)"},
        ),
        Fact(
            "compute", "Hardware used (GPU models)", gpus or None, "marts.model_gpu_hours",
            remedy, _refs("MDF 7"),
        ),
        Fact(
            "compute", "Hardware used (node pools)", pooled or None,
            "marts.attestation_gpu_hours, marts.node_gpu_capacity",
            "Collect the cluster inventory and run the attestation coverage refresh "
            "(`annex attestation`), which attributes GPU-hours to nodes by Job",
            _refs("MDF 7"),
        ),
        Fact(
            "compute", "Systemic-risk classification (Art 51)", classification,
            "marts.model_compute_thresholds", remedy, _refs("Art 51(2); Art 52(1)"),
        ),
    ]  # fmt: skip


def _energy(model: ModelEntry | None, compute: Row | None) -> list[Fact]:
    c = compute or {}
    energy = None
    method = None
    if c.get("energy_measured_mwh") is not None and c.get("energy_coverage"):
        energy = (
            f"{c['energy_measured_mwh_rounded']:g} MWh measured (band "
            f"{c['energy_measured_mwh_low']:.3g} to {c['energy_measured_mwh_high']:.3g} MWh)"
        )
        method = c["energy_measured_method"]
    elif c.get("energy_estimated_mwh") is not None:
        energy = (
            f"{c['energy_estimated_mwh_rounded']:g} MWh estimated (band "
            f"{c['energy_estimated_mwh_low']:.3g} to {c['energy_estimated_mwh_high']:.3g} MWh)"
        )
        method = c["energy_estimated_method"]
    remedy = (
        "Collect DCGM telemetry (energy counters or power) for the training GPUs and run "
        "`annex compute`; without it the estimate needs GPU-hours of a GPU model with a TDP"
    )
    return [
        Fact(
            "energy", "Training energy consumption", energy, COMPUTE, remedy,
            _refs("Annex XI 2(e); MDF 8"),
        ),
        Fact(
            "energy", "Energy methodology", method, COMPUTE, remedy,
            _refs("Annex XI 2(e); MDF 8"),
        ),
        _documented(
            model, "energy", "Benchmarked inference compute and methodology",
            "inference_compute", _refs("MDF 8"),
        ),
    ]  # fmt: skip


def _systemic(model: ModelEntry | None, runs: list[Row]) -> list[Fact]:
    tuned = [r for r in runs if r["stage"] == "FINE_TUNING"]
    adaptations = _documented(
        model, "systemic", "Model adaptations (alignment, fine-tuning)", "model_adaptations",
        _refs("Annex XI section 2(2)"),
    )  # fmt: skip
    if adaptations.value and tuned:
        value = f"{adaptations.value} (fine-tuning runs recorded: {len(tuned)}, training_runs.csv)"
        adaptations = replace(adaptations, value=value)
    return [
        _documented(
            model, "systemic", "Evaluation strategies, criteria, metrics and results",
            "evaluation", _refs("Annex XI section 2(1)"),
        ),
        _documented(
            model, "systemic", "Adversarial testing (red teaming)", "adversarial_testing",
            _refs("Annex XI section 2(2)"),
        ),
        adaptations,
        _documented(
            model, "systemic", "System architecture", "system_architecture",
            _refs("Annex XI section 2(3)"),
        ),
    ]  # fmt: skip


def _coverage(pools: list[Row]) -> dict[str, float] | None:
    """The attestation coverage of the training GPU-hours (verified over judged hours)."""
    if not pools:
        return None
    totals = {
        key: sum(p[key] or 0.0 for p in pools)
        for key in ("allocated_gpu_hours", "verified_gpu_hours", "self_reported_gpu_hours",
                    "unattested_gpu_hours", "unknown_gpu_hours")
    }  # fmt: skip
    judged = totals["allocated_gpu_hours"] - totals["unknown_gpu_hours"]
    totals["verified_share"] = totals["verified_gpu_hours"] / judged if judged else None
    return totals


MODEL_DOCUMENTATION = ReportDefinition(
    name="model_documentation",
    title="Technical documentation and model documentation form",
    template="model_documentation.html.j2",
    summary="The EU AI Act technical documentation (Annex XI; Annex XII for downstream "
    "providers) and the Code of Practice model documentation form of one model, in three "
    "editions (--edition ai_office, national_authority, downstream), gaps marked.",
    queries=QUERIES,
    sections=tuple(Section(a, t) for a, t in SECTIONS.items()),
    build=build,
    needs_period=False,
    needs_model=True,
    collection_sources=("lineage", "kubernetes", "telemetry", "attestation"),
    editions=EDITIONS,
    metadata_file_editions=AUTHORITIES,
)

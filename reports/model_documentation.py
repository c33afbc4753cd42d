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

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from annex.model_registry import DOCUMENTATION_FIELDS, ModelEntry
from reports import numbers
from reports.charts import power_of_ten
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
IN_METADATA = "model metadata file"
LINEAGE = "training-data lineage"
COMPUTE = "training compute evidence"
RUNS = "training-run lineage"
HARDWARE = "cluster inventory"
ATTESTATION = "cluster inventory and attestations"
THRESHOLDS = "Article 51 assessment"
EVIDENCE_SOURCES = (
    (IN_METADATA, "the model's YAML file in the model registry ([models] dir)"),
    (
        LINEAGE,
        "marts.lineage_eu_sources, marts.lineage_eu_summary_size, "
        "marts.lineage_eu_measures, marts.lineage_models, marts.lineage_model_producers",
    ),
    (RUNS, "marts.model_compute_stages, marts.training_run_compute"),
    (COMPUTE, "marts.model_compute (from OpenLineage runs, GPU allocations, DCGM telemetry)"),
    (HARDWARE, "marts.model_gpu_hours, marts.node_gpu_capacity"),
    (ATTESTATION, "marts.attestation_gpu_hours, marts.node_gpu_capacity"),
    (THRESHOLDS, "marts.model_compute_thresholds"),
)
"""The human label each field's Source names, and the tables behind it (appendix only)."""

_SUMMARY = {q.name: q for q in SUMMARY_QUERIES}

# Enum codes of the marts and lineage facets as an officer reads them (issue 40 item 7).
STAGES = {
    "pretraining": "pre-training",
    "continued_pretraining": "continued pre-training",
    "fine_tuning": "fine-tuning",
    "reinforcement_learning": "reinforcement learning",
    "synthetic_data_generation": "synthetic-data generation",
}
METHODS = {"hardware": "hardware-based", "architecture": "architecture-based"}
EXCLUSIONS = {
    "exploratory": "exploratory run (Guidelines para ~122)",
    "new_pretraining": "a new pre-training run starts a new model (Guidelines para ~23)",
    "job_claimed": "its Kubernetes Job is claimed by another run",
}
THRESHOLD_NAMES = {
    "gpai": "10²³ FLOP: indicative GPAI criterion (Guidelines point 17)",
    "systemic_risk": "10²⁵ FLOP: systemic-risk presumption (Art 51(2))",
    "modification": "one third of the original's compute: modification (Guidelines points 60-61)",
}
STATUS_WORDS = {
    "crossed": "crossed",
    "projected": "projected to be crossed",
    "within_band": "below, within the uncertainty band",
    "below": "below",
    "not_applicable": "does not apply",
}
CATEGORIES = {
    "PUBLIC_DATASET": "publicly available datasets",
    "PRIVATE_LICENSED": "private datasets licensed from rightsholders",
    "PRIVATE_THIRD_PARTY": "other private datasets from third parties",
    "CRAWLED": "data crawled from online sources",
    "USER_DATA": "user data",
    "SYNTHETIC": "synthetic data",
    "OTHER": "other sources",
    "UNKNOWN": "category not stated",
}
MEASURE_KINDS = {
    "tdm_opt_out": "Text-and-data-mining opt-outs",
    "paywall": "Paywalls",
    "illegal_content": "Illegal content",
    "personal_data": "Personal data",
}
_SIGNALS = {
    "robotsTxt": "robots.txt",
    "tdmrep": "the TDM Reservation Protocol",
    "ietfAipref": "the IETF AI preferences vocabulary",
    "aiTxt": "ai.txt",
    "paywallPolicy": "paywalls",
}
_BEHAVIOURS = {
    "RESPECTED": "honoured",
    "NOT_RESPECTED": "not honoured",
    "NOT_CHECKED": "not checked",
    "NOT_STATED": "not stated",
    "NO_CIRCUMVENTION": "not circumvented",
}
_ACRONYMS = {"csam", "pii", "url", "tdm", "ner", "ai", "rl"}


def _words(code: str | None) -> str:
    """An UPPER_SNAKE code as words: ``CSAM_HASH_MATCHING`` -> ``CSAM hash matching``."""
    if not code:
        return "not stated"
    words = [w.upper() if w in _ACRONYMS else w for w in code.lower().split("_")]
    text = " ".join(words)
    return text[:1].upper() + text[1:] if words[0] in _ACRONYMS else text


def _measure(measure: str) -> str:
    """A lineage measure as a sentence: ``robotsTxt: RESPECTED`` -> ``robots.txt honoured``."""
    signal, _, behaviour = measure.partition(": ")
    if behaviour:
        return f"{_SIGNALS.get(signal, signal)} {_BEHAVIOURS.get(behaviour, _words(behaviour))}"
    return _words(measure)


QUERIES = (
    _SUMMARY["checkpoints"],
    _SUMMARY["size"],
    _SUMMARY["sources"],
    _SUMMARY["measures"],
    _SUMMARY["producers"],
    EvidenceQuery(
        "model_compute",
        "Annex XI 2(d)-(e), MDF 7-8 (AI Office): the model's cumulative training compute "
        "(both methods, their ratio, bands), precise training time and the energy of record "
        "with its measured share and methods (marts.model_compute).",
        """
        SELECT model_name, in_registry, runs, running_runs, excluded_runs,
               array_to_string(stages, '; ') AS stages, gpu_hours, declared_gpu_hours,
               wall_clock_seconds, wall_clock_days, hardware_days, time_band, active_parameters,
               hardware_flop, hardware_flop_low, hardware_flop_high,
               architecture_flop, architecture_flop_low, architecture_flop_high,
               methods_ratio, own_compute_flop, base_compute_flop,
               cumulative_compute_flop, cumulative_compute_flop_low,
               cumulative_compute_flop_high, array_to_string(compute_methods, '; ')
                   AS compute_methods,
               energy_mwh, energy_mwh_low, energy_mwh_high, energy_mwh_rounded,
               energy_measured_share, energy_measured_mwh, energy_estimated_method,
               array_to_string(gaps, '; ') AS gaps, refreshed_at
        FROM marts.model_compute
        WHERE model_name = $model
        """,
        editions=(AI_OFFICE,),
    ),
    EvidenceQuery(
        "model_compute_range",
        "Annex XI 2(d)-(e), MDF 7-8 (national authority): the model's training compute as an "
        "order of magnitude (10ⁿ FLOP), training time as the form's range bin, the methods' "
        "ratio and the energy of record with its measured share (marts.model_compute).",
        """
        SELECT model_name, runs, running_runs, excluded_runs,
               CASE WHEN cumulative_compute_flop > 0
                    THEN CAST(floor(log10(cumulative_compute_flop)) AS INTEGER)
               END AS compute_order_of_magnitude,
               time_band, active_parameters, methods_ratio,
               array_to_string(compute_methods, '; ') AS compute_methods,
               energy_mwh_rounded, energy_mwh_low, energy_mwh_high, energy_measured_share,
               energy_estimated_method, refreshed_at
        FROM marts.model_compute
        WHERE model_name = $model
        """,
        editions=(NATIONAL_AUTHORITY,),
    ),
    EvidenceQuery(
        "thresholds",
        "Art 51-52: the model's status against 10²³ and 10²⁵ FLOP and, for a modification, "
        "one third of its base's, with the consequence, the crossing and learned dates and the "
        "Art 52 notification deadline where one is due (marts.model_compute_thresholds).",
        """
        SELECT threshold, threshold_basis, applies, status, consequence, crossed_at,
               projected_crossing_at, learned_at, notification_due
        FROM marts.model_compute_thresholds
        WHERE model_name = $model
        ORDER BY CASE threshold WHEN 'gpai' THEN 1 WHEN 'systemic_risk' THEN 2 ELSE 3 END
        """,
        editions=AUTHORITIES,
    ),
    EvidenceQuery(
        "stages",
        "Annex XI 2(b), MDF 5: the model's counted training runs per lifecycle stage "
        "(marts.model_compute_stages).",
        """
        SELECT lifecycle_stage, runs, running_runs
        FROM marts.model_compute_stages
        WHERE model_name = $model
        ORDER BY CASE lifecycle_stage WHEN 'pretraining' THEN 1
                 WHEN 'continued_pretraining' THEN 2 WHEN 'fine_tuning' THEN 3
                 WHEN 'reinforcement_learning' THEN 4 ELSE 5 END
        """,
        editions=AUTHORITIES,
    ),
    EvidenceQuery(
        "training_runs",
        "Annex XI 2(b), 2(d), MDF 5 and 7 (AI Office): the model's training runs by lifecycle "
        "stage, counted or listed apart, with GPU-hours, compute of record, method and energy "
        "(marts.training_run_compute).",
        """
        SELECT run_id, lifecycle_stage, counted, exclusion, state, running, started_at,
               ended_at, declared_gpus, declared_gpu_model, cluster, namespace,
               kubernetes_job_name,
               gpu_hours, wall_clock_seconds, utilisation_source, compute_flop,
               compute_flop_low, compute_flop_high, compute_method, energy_mwh,
               energy_measured_share, array_to_string(gaps, '; ') AS gaps
        FROM marts.training_run_compute
        WHERE model_name = $model
        ORDER BY started_at NULLS LAST, run_id
        """,
        editions=(AI_OFFICE,),
    ),
    EvidenceQuery(
        "hardware",
        "MDF 7: the GPU models the counted training runs held, with GPU-hours observed and "
        "declared by producers, and hardware-days (marts.model_gpu_hours).",
        """
        SELECT gpu_model, gfd_product, gpu_hours, declared_gpu_hours, hardware_days, runs
        FROM marts.model_gpu_hours
        WHERE model_name = $model
        ORDER BY hardware_days DESC, gfd_product
        """,
        editions=(AI_OFFICE,),
    ),
    EvidenceQuery(
        "node_pools",
        "MDF 7 hardware and Code Measure 1.3 integrity: the node pools and GPU models the "
        "counted training runs' Jobs held GPUs on (marts.attestation_gpu_hours by Job, pools from "
        "marts.node_gpu_capacity), with the attestation coverage of those GPU-hours.",
        """
        WITH jobs AS (
            SELECT DISTINCT cluster, namespace, kubernetes_job_name
            FROM marts.training_run_compute
            WHERE model_name = $model AND counted AND kubernetes_job_name IS NOT NULL
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
              ON a.cluster = j.cluster AND a.namespace = j.namespace
             AND a.job_name = j.kubernetes_job_name
            GROUP BY a.cluster, a.node_name
        ),
        nodes AS (
            SELECT cluster, node_name, any_value(node_pool) AS node_pool,
                   any_value(gpu_model) AS gpu_model,
                   sum(capacity_gpus) FILTER (WHERE resource_name = 'nvidia.com/gpu') AS gpus
            FROM marts.node_gpu_capacity
            GROUP BY cluster, node_name
        )
        SELECT h.cluster, n.node_pool, n.gpu_model,
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
        GROUP BY h.cluster, n.node_pool, n.gpu_model
        ORDER BY allocated_gpu_hours DESC, h.cluster, n.node_pool NULLS LAST, n.gpu_model
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
    compute = None
    if edition == AI_OFFICE:
        compute = _one(evidence, "model_compute")
    elif edition == NATIONAL_AUTHORITY:
        compute = _one(evidence, "model_compute_range")
    if compute is not None and not compute["runs"]:
        compute = None  # a registry model without training runs: zero is not evidence
    thresholds = evidence.records("thresholds") if authority else []
    stages = evidence.records("stages") if authority else []
    runs = evidence.records("training_runs") if edition == AI_OFFICE else []
    hardware = evidence.records("hardware") if edition == AI_OFFICE else []
    pools = evidence.records("node_pools") if authority else []
    systemic_row = next(
        (t for t in thresholds if compute and t["threshold"] == "systemic_risk"), None
    )
    # systemic risk: presumed by compute (Art 51(2)) or designated (Art 52(4)), which the
    # provider states in the model's file (systemic_risk: true)
    systemic = (systemic_row is not None and systemic_row["status"] in SYSTEMIC) or bool(
        authority and model is not None and model.systemic_risk
    )
    sources = evidence.records("sources")
    size = evidence.records("size")
    measures = evidence.records("measures")
    producers = evidence.records("producers")

    facts = (
        _general(model, model_name)
        + _use(model)
        + _design(model, checkpoints, stages)
        + _data(model, sources, size, measures)
    )
    if authority:
        facts += _compute(edition, compute, systemic_row, hardware, pools)
        facts += _energy(model, compute)
        if systemic:
            facts += _systemic(model, stages)
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
        "runs": [_format_run(r) for r in runs[:TOP]],
        "runs_total": len(runs),
        "stage_rows": _stage_rows(compute, evidence) if edition == AI_OFFICE else [],
        "threshold_rows": [_format_threshold(t) for t in thresholds],
        "date_findings": _date_findings(model, checkpoints),
        "evidence_sources": EVIDENCE_SOURCES,
        "hardware": hardware,
        "pools": pools[:TOP],
        "pools_total": len(pools),
        "coverage": _coverage(pools),
        "categories": [
            c
            | {
                "category_words": CATEGORIES.get(c["category"], c["category"]),
                "tokens_words": numbers.scientific(c["tokens"]),
                "modality_words": ", ".join(_words(m) for m in c["modalities"].split(", ") if m),
            }
            for c in _categories(sources)
        ],
        "size": [
            r
            | {
                "modality_words": _words(r["modality"]),
                "tokens_words": numbers.scientific(r["tokens"]),
                "items_words": numbers.scientific(r["items"]),
            }
            for r in size
        ],
        "measures": [
            m
            | {
                "kind_words": MEASURE_KINDS.get(m["kind"], m["kind"]),
                "measure_words": _measure(m["measure"]),
            }
            for m in measures[:TOP]
        ],
        "measures_total": len(measures),
        "checkpoints": [c | {"stage_words": _words(c["stage"])} for c in checkpoints[:TOP]],
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
    """What to write where: the file named relative to the model registry, never a path of
    the machine that rendered the document."""
    where = model.file_name if model else f"{model_name}.yaml"
    return f"Set {what} in the model's metadata file ({where} in the model registry)"


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
    if model is not None:  # MDF 2: at least two significant figures
        parameters = f"{numbers.parameters(model.parameters)} in total" + (
            f"; {numbers.parameters(model.active_parameters)} active per token (mixture of "
            "experts: the N of the architecture-based compute estimate)"
            if model.active_parameters
            else ""
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


def _design(model: ModelEntry | None, checkpoints: list[Row], stages: list[Row]) -> list[Fact]:
    staged = ", ".join(
        f"{STAGES.get(r['lifecycle_stage'], r['lifecycle_stage'])} ({_count(r['runs'], 'run')}"
        + (f", {r['running_runs']} running" if r["running_runs"] else "")
        + ")"
        for r in stages
    )
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
            "design", "Training stages recorded (counted runs)", staged or None, RUNS,
            "Send OpenLineage events for the model's training runs with the annex_trainingRun "
            "facet (stage, modelName, kubernetes job) and run `annex compute`",
            _refs("Annex XI 2(b); MDF 5"),
        ),
        Fact(
            "design", "Checkpoints in the lineage",
            f"{len(checkpoints)}: " + ", ".join(c["name"] for c in checkpoints[:5])
            + (" ..." if len(checkpoints) > 5 else "") if checkpoints else None,
            LINEAGE,
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
        f"{CATEGORIES.get(c['category'], c['category'])} ({_count(c['datasets'], 'dataset')})"
        for c in categories
    )
    modalities = sorted({r["modality"] for r in size if r["modality"] not in (None, "UNKNOWN")})
    points = "; ".join(
        ", ".join(
            f"{numbers.scientific(r[k])} {k}" for k in ("tokens", "items") if r.get(k)
        ) + f" ({_words(r['modality'])})"
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
        f"{MEASURE_KINDS.get(m['kind'], m['kind'])}: {_measure(m['measure'])} "
        f"({_count(m['datasets'], 'dataset')})"
        for m in measures
    )
    lineage_remedy = "Send OpenLineage events for the model's training data with annex_ facets"
    return [
        Fact(
            "data", "Type of data (modalities)", ", ".join(_words(m) for m in modalities) or None,
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


def _compute(
    edition: str,
    compute: Row | None,
    systemic: Row | None,
    hardware: list[Row],
    pools: list[Row],
) -> list[Fact]:
    """MDF 7 and Annex XI 2(d): the AI Office's answers are exact (compute with its band,
    precise wall-clock and hardware-days); the national authority's are the order of
    magnitude of the compute and the form's range bin for training time."""
    remedy = (
        "Run `annex compute` after collecting the training runs' lineage (annex_trainingRun "
        "with the Kubernetes job) and the cluster inventory"
    )
    c = compute or {}
    amount = None
    precise = None
    if edition == AI_OFFICE and c.get("cumulative_compute_flop"):
        amount = numbers.flop_with_band(c, "cumulative_compute_flop")
        if c.get("base_compute_flop"):
            amount += f", of which {numbers.flop(c['base_compute_flop'])} FLOP by its base models"
        if c.get("wall_clock_days") is not None:
            precise = (
                f"{c['wall_clock_days']:,.2f} wall-clock days; {c['hardware_days']:,.2f} "
                f"hardware-days ({c['gpu_hours']:,.1f} GPU-hours observed"
                + (
                    f", {c['declared_gpu_hours']:,.1f} declared by producers for runs the "
                    "inventory never saw)"
                    if c.get("declared_gpu_hours")
                    else ")"
                )
            )
    if edition == NATIONAL_AUTHORITY and c.get("compute_order_of_magnitude") is not None:
        order = c["compute_order_of_magnitude"]
        amount = (
            f"~{power_of_ten(order)} FLOP (order of magnitude: between {power_of_ten(order)} "
            f"and {power_of_ten(order + 1)} FLOP)"
        )
    methods = None
    if c.get("compute_methods"):
        used = ", ".join(METHODS.get(m, m) for m in c["compute_methods"].split("; "))
        methods = (
            "per lifecycle stage (pre-training, continued pre-training, fine-tuning, "
            "reinforcement learning, synthetic-data generation), both estimation methods: "
            "hardware-based (GPU-seconds × dense peak × utilisation) and architecture-based "
            "(6 × N × D; 2 × N × D for generated samples"
            + (
                ", N the active parameters of the mixture of experts"
                if c.get("active_parameters")
                else ""
            )
            + f"); of record per run the larger of the two, never above the run's physical "
            f"maximum (methods of record: {used})"
        )
        if c.get("methods_ratio") is not None:
            methods += f"; hardware / architecture = {numbers.ratio(c['methods_ratio'])}"
        if c.get("excluded_runs"):
            methods += (
                f"; {_count(c['excluded_runs'], 'run')} listed apart and not counted, each for "
                "one of the reasons the rules allow (an exploratory run, Guidelines para ~122; a "
                "new pre-training run, para ~23; a Job another run claims), named per run in "
                "the training compute report"
            )
    if edition == AI_OFFICE:
        gpus = "; ".join(
            f"{h['gpu_model'] or h['gfd_product']}: {h['gpu_hours']:,.1f} GPU-hours"
            + (
                f" (+ {h['declared_gpu_hours']:,.1f} declared by producers)"
                if h.get("declared_gpu_hours")
                else ""
            )
            + f" in {_count(h['runs'], 'run')}"
            for h in hardware
        )
    else:  # GPU models only: their GPU-hours would give the precise hardware-days
        gpus = ", ".join(sorted({p["gpu_model"] for p in pools if p["gpu_model"]}))
    pooled = "; ".join(
        f"pool {p['node_pool'] or 'unknown (node not in the inventory or unlabelled)'}"
        f" ({p['gpu_model'] or 'GPU model unknown'}): {_count(p['nodes'], 'node')}"
        + (f", {p['gpus']:,} GPUs" if p["gpus"] else "")
        for p in pools
    )
    classification = None
    if systemic is not None:
        classification = {
            "crossed": "systemic risk presumed (Art 51(2)): cumulative compute crossed 10²⁵ FLOP",
            "projected": "systemic risk projected: the counted runs' plans or rate reach 10²⁵ FLOP",
            "within_band": "below 10²⁵ FLOP, but within the uncertainty band",
            "below": "below 10²⁵ FLOP: no systemic-risk presumption",
        }.get(systemic["status"], systemic["status"])
        if systemic["notification_due"] is not None:
            classification += (
                f"; Art 52(1) notification due {systemic['notification_due']:%Y-%m-%d}"
            )
    return [
        Fact(
            "compute", "Amount of training compute", amount, COMPUTE, remedy,
            {AI_OFFICE: "Annex XI 2(d); MDF 7 (AI Office)",
             NATIONAL_AUTHORITY: "Annex XI 2(d); MDF 7 (national authority)"},
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
            "compute", "Hardware used (GPU models)", gpus or None, HARDWARE,
            remedy, _refs("MDF 7"),
        ),
        Fact(
            "compute", "Hardware used (node pools)", pooled or None, ATTESTATION,
            "Collect the cluster inventory and run the attestation coverage refresh "
            "(`annex attestation`), which attributes GPU-hours to nodes by Job",
            _refs("MDF 7"),
        ),
        Fact(
            "compute", "Systemic-risk classification (Art 51)", classification,
            THRESHOLDS, remedy, _refs("Art 51(2); Art 52(1)"),
        ),
    ]  # fmt: skip


def _energy(model: ModelEntry | None, compute: Row | None) -> list[Fact]:
    """MDF 8, Annex XI 2(e): the energy of record (measured where telemetry saw the GPU-hours,
    estimated for the rest), its measured share and both methods; never a part as the total."""
    c = compute or {}
    energy = None
    method = None
    if c.get("energy_mwh_rounded") is not None:
        energy = (
            f"{numbers.mwh(c['energy_mwh_rounded'])} MWh (band {numbers.mwh(c['energy_mwh_low'])} "
            f"to {numbers.mwh(c['energy_mwh_high'])} MWh), of which "
            f"{numbers.share(c['energy_measured_share'])} measured"
        )
        method = (
            "measured: integrated DCGM energy × server overhead × PUE on the GPU-hours "
            f"telemetry saw ({numbers.share(c['energy_measured_share'])} of the total); "
            f"estimated for the rest: {c['energy_estimated_method']}, or from compute at the "
            "assumed utilisation where no GPU-hours are known (Annex XI 2(e))"
        )
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


def _systemic(model: ModelEntry | None, stages: list[Row]) -> list[Fact]:
    tuned = sum(
        r["runs"] for r in stages
        if r["lifecycle_stage"] in ("fine_tuning", "reinforcement_learning")
    )  # fmt: skip
    adaptations = _documented(
        model, "systemic", "Model adaptations (alignment, fine-tuning)", "model_adaptations",
        _refs("Annex XI section 2(2)"),
    )  # fmt: skip
    if adaptations.value and tuned:
        value = f"{adaptations.value} (fine-tuning and RL runs recorded: {tuned})"
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


def _stage_rows(compute: Row | None, evidence: Evidence) -> list[Row]:
    """The AI Office edition's table: the model's compute by both methods, exact."""
    if compute is None:
        return []
    rows = []
    for label, key in (
        ("Hardware-based: GPU-seconds × dense peak × utilisation", "hardware_flop"),
        ("Architecture-based: 6 × N × D (2 × N × D for generated samples)", "architecture_flop"),
        ("Cumulative compute of record (counted runs and base models)", "cumulative_compute_flop"),
    ):
        rows.append(
            {
                "label": label,
                "value": numbers.flop(compute[key]),
                "band": numbers.flop_band(compute[f"{key}_low"], compute[f"{key}_high"]),
            }
        )
    return rows


def _format_run(row: Row) -> Row:
    """A training run as the AI Office edition lists it: stage in words, "running" for a run
    that has not ended (not a gap), whether it counts."""
    hours = f"{row['gpu_hours']:,.1f}" if row["gpu_hours"] is not None else None
    if hours is None and row["declared_gpus"]:
        hours = f"not observed: {row['declared_gpus']:,} GPUs declared"
    return row | {
        "stage_words": STAGES.get(row["lifecycle_stage"], row["lifecycle_stage"]),
        "started_day": row["started_at"].date().isoformat() if row["started_at"] else None,
        "ended_day": row["ended_at"].date().isoformat() if row["ended_at"] else None,
        "hours_words": hours,
        "ended_words": "running" if row["running"] else row["ended_at"],
        "counted_words": "counted"
        if row["counted"]
        else f"not counted: {EXCLUSIONS.get(row['exclusion'], row['exclusion'])}",
        "compute_words": numbers.flop(row["compute_flop"]),
    }


def _format_threshold(row: Row) -> Row:
    return row | {
        "name": THRESHOLD_NAMES.get(row["threshold"], row["threshold"]),
        "status_words": STATUS_WORDS.get(row["status"], row["status"]),
        "consequence_words": numbers.prose(row["consequence"]),
        "crossed_text": f"{row['crossed_at']:%Y-%m-%d}" if row["crossed_at"] else "-",
        "learned_text": f"{row['learned_at']:%Y-%m-%d}" if row["learned_at"] else "-",
        "due_text": f"{row['notification_due']:%Y-%m-%d}"
        if row["notification_due"]
        else (
            "nothing to notify" if row["threshold"] == "gpai" and row["status"] in SYSTEMIC else "-"
        ),
    }


def _date_findings(model: ModelEntry | None, checkpoints: list[Row]) -> list[str]:
    """Dates that contradict each other: a release before the checkpoint it names was made,
    an EU market date before the release."""
    if model is None:
        return []
    out = []
    release, market = model.release_date, model.eu_market_date
    if release is not None and model.versions:
        version = model.versions[-1]
        named = [c for c in checkpoints if c["name"].rsplit("/", 1)[-1] == version]
        made = max((c["created_at"] for c in named if c["created_at"]), default=None)
        if made is not None and release < made.date():
            out.append(
                f"The release date {release.isoformat()} precedes the checkpoint it names, "
                f"{named[0]['name']}, made on {made.date().isoformat()} (lineage): correct the "
                "release date or the version in the model's metadata file."
            )
    if market is not None and release is not None and market < release:
        out.append(
            f"The date placed on the EU market, {market.isoformat()}, precedes the release "
            f"date {release.isoformat()}: a model is placed on the market when it is released "
            "or later; correct one of them in the model's metadata file."
        )
    return out


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
    edition_titles={
        AI_OFFICE: "AI Office (Art 53(1)(a), Annex XI; MDF items for the AI Office)",
        NATIONAL_AUTHORITY: "national competent authority (Annex XI; MDF items for national "
        "authorities)",
        DOWNSTREAM: "downstream providers (Art 53(1)(b), Annex XII)",
    },
    metadata_file_editions=AUTHORITIES,
)

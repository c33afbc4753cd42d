"""The public summary of training content (Art 53(1)(d)), per model, in the AI Office template.

Mirrors the template's sections and numbering (Commission template C(2025) 8311; reference
eu-ai-act.md §3): 1 general information, 2 list of data sources (2.1 public datasets, 2.2
private: 2.2.1 licensed, 2.2.2 other; 2.3 crawled; 2.4 user data; 2.5 synthetic; 2.6 other),
3 data-processing aspects (3.1 TDM opt-outs, 3.2 illegal content, 3.3 other). Figures come from
the marts.lineage_eu_* views; what no lineage can know (provider, versions, market date,
modalities) from the model's metadata file. Every required field without evidence is a visible
gap naming its section, and the share of required fields filled is the completeness score.

A model has several checkpoints (base, fine-tunes, release, ablations). The summary describes
one: the checkpoint whose training-content scope is largest (a fine-tuned release's scope holds
its base's), the earliest to reach it on a tie, so later experiments on the same data do not
displace the release. Every checkpoint is listed in 1.2 and attached.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from reports.definition import Evidence, EvidenceQuery, ReportDefinition, Section
from reports.errors import ReportError
from reports.findings import RequiredField

Row = dict[str, Any]

SOURCES = ("lineage",)
TOP = 15
LARGE_SHARE = 0.03
"""A public dataset is "large" above 3 % of its modality's tokens (template 2.1; VERIFY)."""

CHOSEN = """
    WITH chosen AS (
        SELECT model_version_id FROM marts.lineage_models
        WHERE model_name = $model
        ORDER BY upstream_versions DESC, created_at, model_version_id
        LIMIT 1
    )"""

QUERIES = (
    EvidenceQuery(
        "checkpoints",
        "Every checkpoint of the model (marts.lineage_models); summarised marks the one the "
        "summary describes (largest training-content scope, earliest on a tie).",
        CHOSEN
        + """
        SELECT m.model_version_id, m.namespace, m.name, m.version, m.stage, m.produced_by_run_id,
               m.created_at, m.upstream_versions, m.leaf_versions, m.on_cycle,
               m.model_version_id IN (SELECT model_version_id FROM chosen) AS summarised
        FROM marts.lineage_models AS m
        WHERE m.model_name = $model
        ORDER BY m.created_at, m.model_version_id
        """,
    ),
    EvidenceQuery(
        "size",
        "Template 1.3: training data size per modality after pre-processing, in the "
        "template's bands (marts.lineage_eu_summary_size).",
        CHOSEN
        + """
        SELECT modality, tokens, bytes, items, training_inputs, all_from_usage, band
        FROM marts.lineage_eu_summary_size
        WHERE model_version_id IN (SELECT model_version_id FROM chosen)
        ORDER BY modality
        """,
    ),
    EvidenceQuery(
        "sources",
        "Template section 2: every source of the training content by section, with licence, "
        "modality and size (marts.lineage_eu_sources); section empty: no annex_source facet.",
        CHOSEN
        + """
        SELECT section, source_category, dataset_version_id, namespace, name, version,
               publicly_available, description, spdx_expression, copyright_status,
               tdm_exception, licensor, modality, size_tokens,
               array_to_string(languages, ' ') AS languages, latest_collection_date,
               personal_data_present
        FROM marts.lineage_eu_sources
        WHERE model_version_id IN (SELECT model_version_id FROM chosen)
        ORDER BY section NULLS FIRST, size_tokens DESC NULLS LAST, namespace, name,
                 dataset_version_id
        """,
    ),
    EvidenceQuery(
        "crawlers",
        "Template 2.3: the crawlers, their purposes, collection periods and behaviour towards "
        "opt-outs and paywalls (marts.lineage_eu_crawlers).",
        CHOSEN
        + """
        SELECT crawler_name, purposes, collection_start, collection_end, robots_txt, tdmrep,
               ietf_aipref, ai_txt, opt_out_checked_at, documents_excluded, paywall_policy,
               modalities, datasets
        FROM marts.lineage_eu_crawlers
        WHERE model_version_id IN (SELECT model_version_id FROM chosen)
        ORDER BY crawler_name NULLS FIRST
        """,
    ),
    EvidenceQuery(
        "top_domains",
        "Template 2.3: the top 10 % of the crawled domains by tokens, with their share "
        "(marts.lineage_eu_top_domains).",
        CHOSEN
        + """
        SELECT rank, domain, tokens, share, domains
        FROM marts.lineage_eu_top_domains
        WHERE model_version_id IN (SELECT model_version_id FROM chosen)
        ORDER BY rank
        """,
    ),
    EvidenceQuery(
        "synthetic",
        "Template 2.5: the synthetic datasets and the models that generated them "
        "(marts.lineage_eu_synthetic).",
        CHOSEN
        + """
        SELECT namespace, name, version,
               array_to_string(generator_models, ', ') AS generator_models,
               array_to_string(generator_checkpoints, ', ') AS generator_checkpoints,
               modality, size_tokens, description
        FROM marts.lineage_eu_synthetic
        WHERE model_version_id IN (SELECT model_version_id FROM chosen)
        ORDER BY size_tokens DESC NULLS LAST, namespace, name
        """,
    ),
    EvidenceQuery(
        "measures",
        "Template 3.1 and 3.2: opt-out, paywall, illegal-content and personal-data measures "
        "the training content's facets state (marts.lineage_eu_measures).",
        CHOSEN
        + """
        SELECT kind, measure, datasets, items
        FROM marts.lineage_eu_measures
        WHERE model_version_id IN (SELECT model_version_id FROM chosen)
        ORDER BY kind, measure
        """,
    ),
    EvidenceQuery(
        "runs",
        "Template 1.3 (ongoing training): the model's training runs and their state "
        "(marts.lineage_run_jobs).",
        """
        SELECT run_id, stage, state, started_at, ended_at, kubernetes_namespace,
               kubernetes_job_name
        FROM marts.lineage_run_jobs
        WHERE model_name = $model
        ORDER BY started_at NULLS LAST, run_id
        """,
    ),
    EvidenceQuery(
        "producers",
        "Who described the summarised checkpoint's training content: producer URIs, "
        "simulated or not (marts.lineage_model_producers).",
        CHOSEN
        + """
        SELECT producer, dataset_versions, runs, simulated
        FROM marts.lineage_model_producers
        WHERE model_version_id IN (SELECT model_version_id FROM chosen)
        ORDER BY producer
        """,
    ),
)

SECTIONS = (
    Section("general", "General information"),
    Section("sources", "List of data sources"),
    Section("processing", "Data processing aspects"),
    Section("completeness", "Completeness: the gaps to close"),
)

SUBSECTIONS = (
    ("2.1", "Publicly available datasets", ("PUBLIC_DATASET",)),
    ("2.2.1", "Private datasets licensed from rightsholders", ("PRIVATE_LICENSED",)),
    ("2.2.2", "Other private datasets obtained from third parties", ("PRIVATE_THIRD_PARTY",)),
    ("2.3", "Data crawled and scraped from online sources", ("CRAWLED",)),
    ("2.4", "User data", ("USER_DATA",)),
    ("2.5", "Synthetic data", ("SYNTHETIC",)),
    ("2.6", "Other sources of data", ("OTHER",)),
)

IN_METADATA = "the model metadata file"


def template_field(
    section: str, label: str, value: str | None, source: str, remedy: str = ""
) -> RequiredField:
    """A field of the template: its section is both where it belongs and what requires it."""
    return RequiredField(section, section, label, value, source, remedy)


def build(evidence: Evidence) -> dict[str, Any]:
    """The template's context: each section's rows and flags, the fields, gaps and score."""
    model = evidence.model
    model_name = evidence.request.model or ""
    checkpoints = evidence.records("checkpoints")
    chosen = next((c for c in checkpoints if c["summarised"]), None)
    if not checkpoints and model is None:
        raise ReportError(
            f"no model named {model_name!r}: the lineage has no checkpoint of it and the model "
            "registry no metadata file",
            hint="check the name against marts.lineage_models.model_name (`annex sql`) or the "
            "files of [models] dir",
        )
    size = evidence.records("size")
    sources = evidence.records("sources")
    crawlers = evidence.records("crawlers")
    domains = evidence.records("top_domains")
    synthetic = evidence.records("synthetic")
    measures = evidence.records("measures")
    runs = evidence.records("runs")
    producers = evidence.records("producers")

    _mark_large(sources)
    for row in checkpoints:
        row["summarised_mark"] = _yes_no(row["summarised"])
    for row in size:
        row["usage_mark"] = _yes_no(row["all_from_usage"])
    for row in producers:
        row["simulated_mark"] = _yes_no(row["simulated"])
    by_section: dict[str, list[Row]] = defaultdict(list)
    for row in sources:
        by_section[row["section"] or "unknown"].append(row)
    unknown = by_section.get("unknown", [])
    subsections = [
        {
            "number": number,
            "title": title,
            "rows": by_section.get(number, [])[:TOP],
            "total": len(by_section.get(number, [])),
            "used": bool(by_section.get(number)),
            "modalities": _modalities(by_section.get(number, [])),
        }
        for number, title, _ in SUBSECTIONS
    ]
    measures_by_kind: dict[str, list[Row]] = defaultdict(list)
    for row in measures:
        measures_by_kind[row["kind"]].append(row)
    running = [r for r in runs if r["ended_at"] is None]
    languages = sorted({lang for r in sources if r["languages"] for lang in r["languages"].split()})
    collected = [r["latest_collection_date"] for r in sources if r["latest_collection_date"]]

    fields = _fields(
        model,
        model_name,
        chosen,
        checkpoints,
        size,
        sources,
        subsections,
        crawlers,
        domains,
        synthetic,
        measures_by_kind,
        languages,
        collected,
    )
    required = len(fields)
    gaps = [f for f in fields if f.gap]
    context: dict[str, Any] = {
        "model": model,
        "model_name": model_name,
        "metadata_path": str(model.path) if model else None,
        "checkpoints": checkpoints[:TOP],
        "checkpoints_total": len(checkpoints),
        "chosen": chosen,
        "size": size,
        "sources_total": len(sources),
        "unknown": unknown[:TOP],
        "unknown_total": len(unknown),
        "subsections": subsections,
        "crawlers": crawlers,
        "domains": domains[:TOP],
        "domains_total": len(domains),
        "domains_listed": domains[0]["domains"] if domains else 0,
        "synthetic": synthetic[:TOP],
        "synthetic_total": len(synthetic),
        "opt_outs": measures_by_kind.get("tdm_opt_out", []),
        "paywall": measures_by_kind.get("paywall", []),
        "illegal": measures_by_kind.get("illegal_content", []),
        "personal": measures_by_kind.get("personal_data", []),
        "runs_total": len(runs),
        "running": running,
        "languages": languages,
        "latest_collection": max(collected) if collected else None,
        "fields": fields,
        "gaps": gaps,
        "required": required,
        "filled": required - len(gaps),
        "completeness": (required - len(gaps)) / required if required else None,
        "producers": producers,
        "large_share": LARGE_SHARE,
    }
    notice = simulated_notice(
        producers, "training content", "the sources, sizes and measures below are made up."
    )
    if notice:
        context["report"] = {"simulated": notice}
    return context


def simulated_notice(producers: list[Row], described: str, made_up: str) -> str | None:
    """The cover's warning when lineage producers (a ``producers`` query's rows) name annex's
    simulator: how many, which, and what of the report is therefore made up; None otherwise."""
    simulated = [p for p in producers if p["simulated"]]
    if not simulated:
        return None
    uris = ", ".join(p["producer"] for p in simulated)
    return (
        f"{len(simulated)} of {len(producers)} lineage producers of this model's {described} "
        f"name annex's simulator ({uris}): {made_up}"
    )


def _mark_large(sources: list[Row]) -> None:
    """Each source's share of its modality's tokens, and whether it is "large" (2.1)."""
    totals: dict[str, int] = defaultdict(int)
    for row in sources:
        if row["size_tokens"]:
            totals[row["modality"]] += row["size_tokens"]
    for row in sources:
        total = totals.get(row["modality"])
        row["share"] = row["size_tokens"] / total if total and row["size_tokens"] else None
        row["large"] = row["share"] is not None and row["share"] > LARGE_SHARE
        row["large_mark"] = _yes_no(row["large"])


def _yes_no(value: bool | None) -> str:
    return "yes" if value else "no"


def _modalities(rows: list[Row]) -> str:
    return ", ".join(sorted({r["modality"] for r in rows if r["modality"]})) or ""


def _fields(
    model: Any,
    model_name: str,
    chosen: Row | None,
    checkpoints: list[Row],
    size: list[Row],
    sources: list[Row],
    subsections: list[dict[str, Any]],
    crawlers: list[Row],
    domains: list[Row],
    synthetic: list[Row],
    measures: dict[str, list[Row]],
    languages: list[str],
    collected: list[Any],
) -> list[RequiredField]:
    """The template's required fields, filled from the evidence or the metadata file."""
    add_file = f"add it to the model's metadata file ({model.path if model else model_name})"
    lineage = "OpenLineage (marts.lineage_eu_*)"
    fields = [
        template_field(
            "1.1",
            "Provider name",
            model.provider if model else None,
            IN_METADATA,
            "Write the model's metadata file (annex/model_registry.py lists its fields)",
        ),
        template_field(
            "1.1",
            "Provider contact details",
            model.contact if model else None,
            IN_METADATA,
            f"Set contact: {add_file}",
        ),
        template_field(
            "1.2",
            "Versioned model name(s)",
            ", ".join(f"{model_name} {v}" for v in model.versions)
            if model and model.versions
            else None,
            IN_METADATA,
            f"List the versions placed on the market under versions: {add_file}",
        ),
        template_field(
            "1.2",
            "Model dependencies (base models)",
            (", ".join(model.base_models) or "none: not a modification of another model")
            if model
            else None,
            IN_METADATA,
            "List base models under base_models",
        ),
        template_field(
            "1.2",
            "Date placed on the EU market",
            model.eu_market_date.isoformat() if model and model.eu_market_date else None,
            IN_METADATA,
            f"Set eu_market_date: {add_file}",
        ),
        template_field(
            "1.3",
            "Modalities",
            ", ".join(model.input_modalities) if model else None,
            IN_METADATA,
            "List the input modalities under modalities",
        ),
        template_field(
            "1.3",
            "Training data checkpoint described",
            f"{chosen['name']} (version {chosen['version'] or 'none'})" if chosen else None,
            lineage,
            "Send OpenLineage events for the model's training runs with the "
            "annex_trainingRun facet naming the model",
        ),
    ]
    for row in size or [{"modality": None}]:
        if row["modality"] in (None, "UNKNOWN"):
            value = None  # a size whose modality is unknown cannot be put in a band
        elif row.get("band"):
            value = row["band"]
        elif row.get("tokens") or row.get("items") or row.get("bytes"):
            value = _measured(row)
        else:
            value = None
        fields.append(
            template_field(
                "1.3",
                f"Training data size ({(row['modality'] or 'any modality').lower()})",
                value,
                lineage,
                "Give the training inputs an annex_content modality and size (and "
                "annex_trainingUsage tokensConsumed on the training runs' inputs)",
            )
        )
    fields += [
        template_field(
            "1.3",
            "Latest data-collection date",
            max(collected).strftime("%m/%Y") if collected else None,
            lineage,
            "Set annex_content.latestCollectionDate on the sources",
        ),
        template_field(
            "1.3",
            "Linguistic characteristics",
            ", ".join(languages) if languages else None,
            lineage,
            "Set annex_content.languages on the text sources",
        ),
    ]
    unknown = [r for r in sources if r["section"] is None]
    fields.append(
        template_field(
            "2",
            "Category of every source",
            "every source has one" if sources and not unknown else None,
            lineage,
            f"State the sourceCategory (annex_source) of the {len(unknown)} sources without one"
            if sources
            else "No sources: send lineage for the model's training data",
        )
    )
    for sub in subsections:
        if not sub["used"]:
            continue
        missing = [r["name"] for r in sub["rows"] if not r["modality"]]
        fields.append(
            template_field(
                sub["number"],
                f"Modalities of {sub['title'].lower()}",
                None if missing else sub["modalities"],
                lineage,
                f"Set annex_content.modality on {', '.join(missing[:3])}",
            )
        )
    licensed = [r for r in sources if r["section"] == "2.2.1"]
    if licensed:
        unlicensed = [r["name"] for r in licensed if not r["licensor"] and not r["spdx_expression"]]
        fields.append(
            template_field(
                "2.2.1",
                "Licences of the licensed datasets",
                None if unlicensed else "stated for every licensed dataset",
                lineage,
                f"Set annex_licensing on {', '.join(unlicensed[:3])}",
            )
        )
    crawled = [r for r in sources if r["section"] == "2.3"]
    if crawled:
        fields.append(
            template_field(
                "2.3",
                "Crawler names",
                ", ".join(sorted(c["crawler_name"] for c in crawlers if c["crawler_name"])) or None,
                lineage,
                "Give the crawled sources an annex_crawl facet naming the crawler",
            )
        )
        periods = [c for c in crawlers if c["collection_start"] and c["collection_end"]]
        fields.append(
            template_field(
                "2.3",
                "Collection period",
                f"{min(c['collection_start'] for c in periods)} to "
                f"{max(c['collection_end'] for c in periods)}"
                if periods and len(periods) == len(crawlers)
                else None,
                lineage,
                "Set annex_crawl.collectionPeriod on every crawled source",
            )
        )
        fields.append(
            template_field(
                "2.3",
                "Top domain names by share of content",
                f"top {len(domains)} of {domains[0]['domains']} domains" if domains else None,
                lineage,
                "Set annex_content.domainStats.topN on the crawled sources",
            )
        )
        fields.append(
            template_field(
                "3.1",
                "Opt-out (TDM reservation) protocols honoured",
                "stated by the crawlers" if measures.get("tdm_opt_out") else None,
                lineage,
                "State annex_crawl.optOut (robots.txt, TDMRep, ...) on the crawled sources",
            )
        )
    if synthetic:
        anonymous = [
            s["name"]
            for s in synthetic
            if not (s["generator_models"] or "").strip()
            and not (s["generator_checkpoints"] or "").strip()
        ]
        fields.append(
            template_field(
                "2.5",
                "Models that generated the synthetic data",
                None if anonymous else "named for every synthetic dataset",
                lineage,
                f"Set annex_source.generatorModels on {', '.join(anonymous[:3])}",
            )
        )
    fields += [
        template_field(
            "3.1",
            "Signatory of the Code of Practice (copyright chapter)",
            None
            if model is None or model.code_of_practice_signatory is None
            else ("yes" if model.code_of_practice_signatory else "no"),
            IN_METADATA,
            "Set code_of_practice_signatory (true or false) in the model's metadata file",
        ),
        template_field(
            "3.2",
            "Measures to remove illegal content",
            ", ".join(sorted({m["measure"] for m in measures.get("illegal_content", [])})) or None,
            lineage,
            "State annex_illegalContent.measures on the sources they were applied to",
        ),
    ]
    return fields


def _measured(row: Row) -> str:
    parts = []
    if row.get("tokens"):
        parts.append(f"{row['tokens']:,} tokens")
    if row.get("items"):
        parts.append(f"{row['items']:,} items")
    if row.get("bytes"):
        parts.append(f"{row['bytes']:,} bytes")
    return "as measured: " + ", ".join(parts)


TRAINING_SUMMARY = ReportDefinition(
    name="training_summary",
    title="Public summary of training content",
    template="training_summary.html.j2",
    summary="The AI Office template for the public summary of a model's training content "
    "(Art 53(1)(d)), filled from lineage and the model's metadata file, gaps marked.",
    queries=QUERIES,
    sections=SECTIONS,
    build=build,
    needs_period=False,
    needs_model=True,
    collection_sources=SOURCES,
)

"""The public summary of training content (Art 53(1)(d)), per model, in the AI Office template.

Mirrors the template's header, sections, numbering and fields (Commission template C(2025)
8311; reference eu-ai-act.md §3): the header (summary version, date of last update, earlier
versions), 1 general information (1.1 provider and authorised representative, 1.2 model, 1.3
modalities, size bins, types of content, ...), 2 list of data sources (2.1 public datasets,
2.2 private: 2.2.1 licensed, 2.2.2 other; 2.3 crawled; 2.4 user data; 2.5 synthetic; 2.6
other), 3 data-processing aspects (3.1 TDM opt-outs, 3.2 illegal content, 3.3 other).

A public document carries what the template asks for and nothing more (Explanatory Notice
para 22: not "the exact mix and composition"; para 19: limited disclosure for licensed data):
size bins, not token counts; shares of the crawl, not tokens per domain; no licensor or
agreement ids, runs, namespaces, job names, storage URIs, SQL or metadata file. It attaches
only the full top-domain list (``public_attachment``); every query with its SQL and hash, and
the metadata file, go into the non-public evidence bundle the summary names by its SHA-256
(``ReportDefinition.public``, reports/generate.py).

Figures come from the marts.lineage_* views; what no lineage can know (provider, authorised
representative, SME status, versions, market date) from the model's metadata file. Every
required field without evidence, and every field whose rule could not be applied (e.g. the
top 10 % of the crawled domains when the number of domains is not known), is a visible gap
naming its section; the completeness score counts only the fields that are right.

A model has several checkpoints (base, fine-tunes, release, ablations). The summary describes
one: the checkpoint whose training-content scope is largest (a fine-tuned release's scope holds
its base's), the earliest to reach it on a tie, so later experiments on the same data do not
displace the release.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from reports.definition import Evidence, EvidenceQuery, ReportDefinition, Section
from reports.errors import ReportError
from reports.findings import RequiredField

Row = dict[str, Any]

SOURCES = ("lineage",)
TOP = 15
LARGE_SHARE = 0.03
"""Template 2.1: a publicly available dataset is "large" when it is more than 3 % of all the
publicly available datasets used for its modality, by size."""
TOP_DOMAINS_SHARE = 0.10
SME_TOP_DOMAINS_SHARE = 0.05
SME_TOP_DOMAINS_MAX = 1000
"""Template 2.3: the top 10 % of all crawled domain names by volume of content scraped; for an
SME the top 5 % or 1,000 domains, whichever is lower."""

CHOSEN = """
    WITH chosen AS (
        SELECT model_version_id FROM marts.lineage_models
        WHERE model_name = $model
        ORDER BY upstream_versions DESC, created_at, model_version_id
        LIMIT 1
    )"""

RANKED_DOMAINS = (
    CHOSEN
    + """,
    crawled AS (
        SELECT dataset_version_id, size_tokens, web_domain_stats
        FROM marts.lineage_model_sources
        WHERE model_version_id IN (SELECT model_version_id FROM chosen)
          AND source_category = 'CRAWLED'
    ),
    listed AS (
        SELECT c.dataset_version_id, t.e.domain AS host, t.e.tokens AS tokens
        FROM crawled AS c,
             unnest(CAST(c.web_domain_stats -> '$.topN' AS STRUCT(domain VARCHAR, tokens DOUBLE)[]))
                 AS t(e)
    ),
    hosts AS (
        SELECT tokens,
               rtrim(split_part(split_part(regexp_replace(lower(trim(host)),
                   '^[a-z][a-z0-9+.-]*://', ''), '/', 1), ':', 1), '.') AS host
        FROM listed
    ),
    domains AS (
        -- footnote 16 of the template: top-level plus second-level domain (reddit.com, not
        -- www.reddit.com); where a country registers names under a second level of its own
        -- (bbc.co.uk, abc.net.au) that level belongs to the suffix, so one more label is kept;
        -- an IP address or a one-label name stays as it is
        SELECT CASE WHEN regexp_full_match(host, '[0-9.]+') OR host NOT LIKE '%.%' THEN host
                    WHEN regexp_matches(host, '\\.(co|com|net|org|ac|gov|edu|ne|or|go)\\.[a-z]{2}$')
                    THEN regexp_extract(host, '[^.]+\\.[^.]+\\.[^.]+$')
                    ELSE regexp_extract(host, '[^.]+\\.[^.]+$') END AS domain,
               sum(tokens) AS tokens
        FROM hosts
        GROUP BY 1
    ),
    crawl AS (
        SELECT CAST(sum(size_tokens) AS DOUBLE) AS crawl_tokens,
               count(*) FILTER (WHERE size_tokens IS NULL) AS unsized
        FROM crawled
    ),
    coverage AS (
        -- every crawled dataset's list covers its whole size: the list is of all its domains
        SELECT coalesce(bool_and(coalesce(l.listed, 0) >= c.size_tokens), false) AS complete
        FROM crawled AS c
        LEFT JOIN (SELECT dataset_version_id, sum(tokens) AS listed FROM listed GROUP BY 1) AS l
          USING (dataset_version_id)
    ),
    ranked AS (
        SELECT row_number() OVER (ORDER BY d.tokens DESC, d.domain) AS rank,
               d.domain,
               d.tokens,
               CASE WHEN crawl.unsized = 0 AND crawl.crawl_tokens > 0
                    THEN d.tokens / crawl.crawl_tokens END AS share_of_crawl,
               count(*) OVER () AS domains,
               crawl.crawl_tokens,
               coverage.complete AND crawl.unsized = 0 AS all_domains_listed
        FROM domains AS d, crawl, coverage
    )"""
)

TOP_CUT = f"""
    CASE WHEN NOT all_domains_listed THEN domains
         WHEN $provider_sme THEN least(ceil({SME_TOP_DOMAINS_SHARE} * domains),
                                       {SME_TOP_DOMAINS_MAX})
         ELSE ceil({TOP_DOMAINS_SHARE} * domains) END"""
"""How many of the ranked domains template 2.3 lists: 10 % of all of them, for an SME 5 % or
1,000 (the registry's ``sme``); when the producers did not list every domain (the rule's
denominator is unknown) every domain they listed, and the summary shows the rule as a gap."""

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
        "modality, content types and size (marts.lineage_eu_sources, "
        "marts.lineage_model_sources); section empty: no annex_source facet.",
        CHOSEN
        + """
        SELECT e.section, e.source_category, e.dataset_version_id, e.namespace, e.name,
               e.version, e.publicly_available, e.description, e.spdx_expression,
               e.copyright_status, e.tdm_exception, e.licensor, e.modality, e.size_tokens,
               m.size_items, m.size_bytes,
               array_to_string(e.languages, ' ') AS languages,
               array_to_string(m.content_types, ' ') AS content_types,
               e.latest_collection_date, e.personal_data_present
        FROM marts.lineage_eu_sources AS e
        JOIN marts.lineage_model_sources AS m USING (model_version_id, dataset_version_id)
        WHERE e.model_version_id IN (SELECT model_version_id FROM chosen)
        ORDER BY e.section NULLS FIRST, e.size_tokens DESC NULLS LAST, e.namespace, e.name,
                 e.dataset_version_id
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
        "crawled_domains",
        "Template 2.3: every domain the crawled sources list (annex_content.domainStats.topN "
        "of marts.lineage_model_sources), keyed by top- plus second-level domain, ranked by "
        "tokens, with its share of the whole crawl (all crawled sources' tokens) and whether "
        "the lists cover every crawled token (all_domains_listed: the rule's denominator is "
        "known).",
        RANKED_DOMAINS
        + """
        SELECT rank, domain, tokens, share_of_crawl, domains, crawl_tokens, all_domains_listed
        FROM ranked
        ORDER BY rank
        """,
    ),
    EvidenceQuery(
        "top_domains",
        "Template 2.3: the most relevant domain names by volume of content scraped (top- plus "
        "second-level domain), ranked, with each one's share of all content crawled for the "
        "model.",
        RANKED_DOMAINS
        + f"""
        SELECT rank, domain, round(share_of_crawl, 6) AS share_of_crawl
        FROM ranked
        WHERE rank <= {TOP_CUT}
        ORDER BY rank
        """,
        public_attachment=True,
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
        SELECT run_id, stage, state, started_at, ended_at, namespace,
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
    Section("completeness", "Completeness: the gaps to close before publishing"),
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

IN_METADATA = "the provider's model metadata"
IN_LINEAGE = "training-data lineage"

# Enum codes of the lineage facets (collectors/lineage/facets/Annex*.json) as an officer reads
# them: the public summary shows sentences, never codes (issue 40 item 7).
MODALITY_NAMES = {
    "TEXT": "text",
    "IMAGE": "images",
    "AUDIO": "audio",
    "VIDEO": "video",
    "OTHER": "other",
}
OPT_OUT_SIGNALS = {
    "robotsTxt": "robots.txt",
    "tdmrep": "the TDM Reservation Protocol (TDMRep)",
    "ietfAipref": "the IETF AI preferences vocabulary (aipref)",
    "aiTxt": "ai.txt",
}
OPT_OUT_BEHAVIOUR = {
    "RESPECTED": "The crawler honours rights reservations expressed through {signal}",
    "NOT_RESPECTED": "The crawler does not honour rights reservations expressed through {signal}",
    "NOT_CHECKED": "The crawler does not check {signal}",
    "NOT_STATED": "Whether the crawler honours {signal} is not stated",
}
CHECKED_AT = {
    "FETCH_TIME": "when each page is fetched",
    "INGEST_TIME": "when the crawled content is ingested",
}
PAYWALL_POLICIES = {
    "NO_CIRCUMVENTION": "Paywalls and other access restrictions are not circumvented: only "
    "content accessible without them is crawled",
    "OTHER": "The crawler follows a paywall policy other than not circumventing paywalls",
    "NOT_STATED": "The crawler's behaviour towards paywalls is not stated",
}
PURPOSES = {"AI_TRAINING": "collecting training data for AI models"}
MEASURES = {
    "CSAM_HASH_MATCH": "matching against hashes of known child sexual abuse material",
    "CSAM_HASH_MATCHING": "matching against hashes of known child sexual abuse material",
    "URL_BLOCKLIST": "a block-list of web addresses known to carry illegal content",
    "TOXICITY_CLASSIFIER": "a classifier that detects toxic content",
    "KEYWORD_FILTER": "keyword filters",
    "EMAIL_PHONE_REGEX_REDACTION": "e-mail addresses and phone numbers removed by pattern",
    "PII_NER_REDACTION": "personal data found by named-entity recognition removed",
    "PII_REGEX_REDACTION": "personal data removed by pattern",
    "CONTRACTUAL_PII_REMOVAL_BY_LICENSOR": "personal data removed by the licensor under contract",
    "USERNAME_PSEUDONYMISATION": "user names pseudonymised",
    "USER_OPT_OUT_HONOURED": "users' objections to training honoured",
}
CONTENT_TYPES = {
    "WEB_PAGES": "web pages",
    "FORUMS": "forum posts",
    "IMAGE_TEXT_PAIRS": "image-text pairs",
    "ENCYCLOPEDIA": "encyclopaedia articles",
    "EDUCATIONAL": "educational material",
    "SOURCE_CODE": "source code",
    "DIALOGUE": "dialogues",
    "SPEECH": "speech recordings",
}


def sentence(code: str | None, names: dict[str, str]) -> str:
    """An enum code as words: its sentence when known, else the code's words in lower case."""
    if code is None:
        return "not stated"
    return names.get(code) or code.replace("_", " ").lower()


def template_field(
    section: str, label: str, value: str | None, source: str, remedy: str = ""
) -> RequiredField:
    """A field of the template: its section is both where it belongs and what requires it."""
    return RequiredField(section, section, label, value, source, remedy)


def build(evidence: Evidence) -> dict[str, Any]:
    """The template's context: each section's answers and flags, the fields, gaps and score."""
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
    ranked = evidence.records("crawled_domains")
    domains = evidence.records("top_domains")
    synthetic = evidence.records("synthetic")
    measures = evidence.records("measures")
    runs = evidence.records("runs")
    producers = evidence.records("producers")

    by_section: dict[str, list[Row]] = defaultdict(list)
    for row in sources:
        by_section[row["section"] or "unknown"].append(row)
    subsections = [
        {
            "number": number,
            "title": title,
            "used": bool(by_section.get(number)),
            "modalities": _modalities(by_section.get(number, [])),
            "count": len(by_section.get(number, [])),
            "descriptions": _descriptions(by_section.get(number, [])),
        }
        for number, title, _ in SUBSECTIONS
    ]
    large = large_public_datasets(by_section.get("2.1", []))
    measures_by_kind: dict[str, list[Row]] = defaultdict(list)
    for row in measures:
        measures_by_kind[row["kind"]].append(row)
    crawled_count = len(by_section.get("2.3", []))
    top = top_domain_rule(ranked, domains, sme=bool(model and model.sme))

    fields = _fields(
        model,
        model_name,
        chosen,
        size,
        sources,
        subsections,
        large,
        crawlers,
        top,
        synthetic,
        measures_by_kind,
        runs,
    )
    required = len(fields)
    gaps = [f for f in fields if f.gap]
    context: dict[str, Any] = {
        "model": model,
        "model_name": model_name,
        "metadata_file": model.file_name if model else f"{model_name}.yaml",
        "chosen": chosen,
        "subsections": subsections,
        "large": large,
        "crawlers": [_crawler_sentences(c) for c in crawlers],
        "top": top,
        "domains": [d | {"share_text": share_text(d["share_of_crawl"])} for d in domains[:TOP]],
        "domains_total": len(domains),
        "opt_outs": [_opt_out_sentence(m, crawled_count) for m in measures_by_kind["tdm_opt_out"]],
        "paywall": [
            sentence(m["measure"].split(": ", 1)[-1], PAYWALL_POLICIES)
            for m in measures_by_kind["paywall"]
        ],
        "illegal": [sentence(m["measure"], MEASURES) for m in measures_by_kind["illegal_content"]],
        "personal": [sentence(m["measure"], MEASURES) for m in measures_by_kind["personal_data"]],
        "unknown_total": len(by_section.get("unknown", [])),
        "fields": fields,
        "gaps": gaps,
        "required": required,
        "filled": required - len(gaps),
        "completeness": (required - len(gaps)) / required if required else None,
        "large_share": LARGE_SHARE,
        "generators": sorted(
            {g.strip() for s in synthetic for g in (s["generator_models"] or "").split(",")} - {""}
        ),
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


def size_unit(modality: str | None) -> tuple[str, str]:
    """The size column and unit template 2.1's rule measures a modality in: tokens for text,
    items (images, clips, records) for the others (template 1.3 counts images, not tokens)."""
    return ("size_tokens", "tokens") if modality == "TEXT" else ("size_items", "items")


def large_public_datasets(public: list[Row]) -> list[dict[str, Any]]:
    """Template 2.1, per modality: the rule, its denominator (the size of all publicly
    available datasets of the modality, in the modality's unit), the large datasets (over 3 %
    of it) and the others. The rule cannot be applied to a modality one of whose datasets has no
    size or no modality: that modality's answer is then a gap, never a guess."""
    by_modality: dict[str | None, list[Row]] = defaultdict(list)
    for row in public:
        by_modality[row["modality"]].append(row)
    out = []
    for modality in sorted(by_modality, key=lambda m: (m is None, m or "")):
        rows = by_modality[modality]
        column, unit = size_unit(modality)
        unsized = [r["name"] for r in rows if not r[column]]
        applicable = modality is not None and not unsized
        total = sum(r[column] for r in rows) if applicable else None
        large, others = [], []
        for row in rows:
            share = row[column] / total if total else None
            entry = {"name": row["name"], "link": dataset_link(row), "share": share}
            (large if share is not None and share > LARGE_SHARE else others).append(entry)
        out.append(
            {
                "modality": modality,
                "modality_name": MODALITY_NAMES.get(modality or "", "modality not stated"),
                "unit": unit,
                "applicable": applicable,
                "unsized": unsized,
                "denominator": total,
                "large": large if applicable else [],
                "others": others if applicable else [{"name": r["name"]} for r in rows],
                "descriptions": _descriptions(rows),
            }
        )
    return out


def dataset_link(row: Row) -> str | None:
    """A public dataset's public address, where its lineage namespace gives one (the Hugging
    Face hub, a web address); never a storage URI."""
    namespace = row["namespace"] or ""
    if namespace == "hf://datasets":
        return f"https://huggingface.co/datasets/{row['name']}"
    if namespace.startswith(("https://", "http://")):
        return f"{namespace.rstrip('/')}/{row['name']}"
    return None


def top_domain_rule(ranked: list[Row], top: list[Row], *, sme: bool) -> dict[str, Any]:
    """Template 2.3's top-domain rule as applied: the cut-off (10 %, or for an SME 5 % or
    1,000, whichever is lower), the domains it counts and whether it could be applied (every
    crawled domain listed, so the denominator is known, and the crawl's size known, so the
    shares are of the whole crawl)."""
    domains = ranked[0]["domains"] if ranked else 0
    if sme:
        rule = (
            f"the top {SME_TOP_DOMAINS_SHARE:.0%} or {SME_TOP_DOMAINS_MAX:,} domains, whichever "
            "is lower (the provider is an SME)"
        )
        cut = min(math.ceil(SME_TOP_DOMAINS_SHARE * domains), SME_TOP_DOMAINS_MAX)
    else:
        rule = f"the top {TOP_DOMAINS_SHARE:.0%} of all domains"
        cut = math.ceil(TOP_DOMAINS_SHARE * domains)
    applicable = bool(ranked) and ranked[0]["all_domains_listed"]
    return {
        "rule": rule,
        "domains": domains,
        "listed": len(top),
        "cut": cut,
        "applicable": applicable,
        "shares_known": bool(ranked) and ranked[0]["share_of_crawl"] is not None,
        "listed_share": (
            sum(r["tokens"] for r in ranked) / ranked[0]["crawl_tokens"]
            if ranked and ranked[0]["crawl_tokens"]
            else None
        ),
    }


def _modalities(rows: list[Row]) -> str:
    return ", ".join(sorted({MODALITY_NAMES.get(r["modality"], "other") for r in rows})) or ""


def _descriptions(rows: list[Row]) -> list[str]:
    return sorted({r["description"] for r in rows if r["description"]})


def _content_types(rows: list[Row]) -> list[str]:
    codes = {c for r in rows if r.get("content_types") for c in r["content_types"].split()}
    return sorted(sentence(c, CONTENT_TYPES) for c in codes)


def _codes(value: str | None) -> list[str]:
    """The codes of a marts.lineage_eu_crawlers column (distinct values joined by ", ")."""
    return [c.strip() for c in (value or "").split(",") if c.strip()]


def _crawler_sentences(row: Row) -> dict[str, Any]:
    """Template 2.3's crawler answers as words: name, purposes, period, when opt-outs are
    checked and the paywall policy (the opt-out protocols themselves are answered in 3.1)."""
    checked = [CHECKED_AT.get(c, sentence(c, {})) for c in _codes(row["opt_out_checked_at"])]
    paywall = [sentence(p, PAYWALL_POLICIES) for p in _codes(row["paywall_policy"])]
    return {
        "name": row["crawler_name"],
        "purposes": ", ".join(sentence(p, PURPOSES) for p in _codes(row["purposes"])) or None,
        "start": row["collection_start"],
        "end": row["collection_end"],
        "checked": " and ".join(checked) or None,
        "paywall": "; ".join(paywall) or PAYWALL_POLICIES["NOT_STATED"],
    }


def _opt_out_sentence(row: Row, crawled: int) -> str:
    signal_code, _, behaviour = row["measure"].partition(": ")
    signal = OPT_OUT_SIGNALS.get(signal_code, signal_code)
    text = OPT_OUT_BEHAVIOUR.get(behaviour, "For {signal}: " + sentence(behaviour, {}))
    text = text.format(signal=signal)
    if row["datasets"] < crawled:
        text += f" (for {row['datasets']} of the {crawled} crawled datasets)"
    return text + "."


def _fields(
    model: Any,
    model_name: str,
    chosen: Row | None,
    size: list[Row],
    sources: list[Row],
    subsections: list[dict[str, Any]],
    large: list[dict[str, Any]],
    crawlers: list[Row],
    top: dict[str, Any],
    synthetic: list[Row],
    measures: dict[str, list[Row]],
    runs: list[Row],
) -> list[RequiredField]:
    """The template's required fields, filled from the evidence or the metadata file; a field
    is filled only when its value is right (its rule applied, its dates in order)."""
    file = model.file_name if model else f"{model_name}.yaml"
    add_file = f"in the model's metadata file ({file} in [models] dir)"
    fields = [
        template_field(
            "1.1",
            "Provider name",
            model.provider if model else None,
            IN_METADATA,
            f"Write the model's metadata file {file} (annex/model_registry.py lists its fields)",
        ),
        template_field(
            "1.1",
            "Provider contact details",
            model.contact if model else None,
            IN_METADATA,
            f"Set contact {add_file}",
        ),
        template_field(
            "1.1",
            "Authorised representative (providers established outside the EU, Art 54)",
            _authorised_representative(model),
            IN_METADATA,
            f"Set established_in_eu, and for a provider outside the EU "
            f"authorised_representative (name and contact), {add_file}",
        ),
        template_field(
            "1.2",
            "Versioned model name(s)",
            ", ".join(f"{model_name} {v}" for v in model.versions)
            if model and model.versions
            else None,
            IN_METADATA,
            f"List the versions placed on the market under versions {add_file}",
        ),
        template_field(
            "1.2",
            "Model dependencies (base models)",
            (", ".join(model.base_models) or "none: not a modification of another model")
            if model
            else None,
            IN_METADATA,
            f"List base models under base_models {add_file}",
        ),
        template_field(
            "1.2",
            "Date placed on the EU market",
            model.eu_market_date.isoformat() if model and model.eu_market_date else None,
            IN_METADATA,
            f"Set eu_market_date {add_file}",
        ),
    ]
    for row in size or [{"modality": None}]:
        fields.append(
            template_field(
                "1.3",
                f"Training data size ({MODALITY_NAMES.get(row['modality'], 'modality unknown')})",
                size_answer(row),
                IN_LINEAGE,
                "Give the training inputs an annex_content modality and size (and "
                "annex_trainingUsage tokensConsumed on the training runs' inputs)",
            )
        )
    types = _content_types(sources)
    collected = [r["latest_collection_date"] for r in sources if r["latest_collection_date"]]
    languages = sorted({x for r in sources if r["languages"] for x in r["languages"].split()})
    running = [r for r in runs if r["ended_at"] is None]
    fields += [
        template_field(
            "1.3",
            "Types of content",
            ", ".join(types) if types else None,
            IN_LINEAGE,
            "Set annex_content.contentTypes on the sources",
        ),
        template_field(
            "1.3",
            "Latest date of data collection",
            max(collected).strftime("%m/%Y") if collected else None,
            IN_LINEAGE,
            "Set annex_content.latestCollectionDate on the sources",
        ),
        template_field(
            "1.3",
            "Training continues on new data",
            ("yes: training runs of the model have not ended" if running else "no")
            if runs
            else None,
            IN_LINEAGE,
            "Send OpenLineage events for the model's training runs",
        ),
        template_field(
            "1.3",
            "Linguistic characteristics (languages)",
            ", ".join(languages) if languages else None,
            IN_LINEAGE,
            "Set annex_content.languages on the text sources",
        ),
    ]
    unknown = [r for r in sources if r["section"] is None]
    fields.append(
        template_field(
            "2",
            "Category of every source",
            "every source has one" if sources and not unknown else None,
            IN_LINEAGE,
            f"State the sourceCategory (annex_source) of the {len(unknown)} sources without one"
            if sources
            else "No sources: send lineage for the model's training data",
        )
    )
    for sub in subsections:
        if not sub["used"]:
            continue
        rows = [r for r in sources if r["section"] == sub["number"]]
        missing = [r["name"] for r in rows if not r["modality"]]
        fields.append(
            template_field(
                sub["number"],
                f"Modalities of {sub['title'].lower()}",
                None if missing else sub["modalities"],
                IN_LINEAGE,
                f"Set annex_content.modality on {', '.join(missing[:3])}",
            )
        )
    for entry in large:
        fields.append(
            template_field(
                "2.1",
                f"Large publicly available datasets ({entry['modality_name']})",
                _large_answer(entry),
                IN_LINEAGE,
                "Set annex_content.modality and annex_content.size."
                + ("tokens" if entry["unit"] == "tokens" else "items")
                + f" on {', '.join(entry['unsized'][:3]) or 'every public dataset'}: the 3 % "
                "rule needs the size of every public dataset of the modality",
            )
        )
    crawled = [r for r in sources if r["section"] == "2.3"]
    if crawled:
        named = sorted({c["crawler_name"] for c in crawlers if c["crawler_name"]})
        fields.append(
            template_field(
                "2.3",
                "Crawler names",
                ", ".join(named) if named and all(c["crawler_name"] for c in crawlers) else None,
                IN_LINEAGE,
                "Give every crawled source an annex_crawl facet naming the crawler",
            )
        )
        periods = [c for c in crawlers if c["collection_start"] and c["collection_end"]]
        in_order = all(c["collection_start"] <= c["collection_end"] for c in periods)
        fields.append(
            template_field(
                "2.3",
                "Collection period",
                f"{min(c['collection_start'] for c in periods)} to "
                f"{max(c['collection_end'] for c in periods)}"
                if periods and len(periods) == len(crawlers) and in_order
                else None,
                IN_LINEAGE,
                "Set annex_crawl.collectionPeriod (start before end) on every crawled source",
            )
        )
        fields.append(
            template_field(
                "2.3",
                "Top domain names by volume of content scraped",
                f"{top['listed']} of {top['domains']:,} domains: {top['rule']}"
                if top["applicable"] and top["shares_known"] and top["listed"]
                else None,
                IN_LINEAGE,
                "Have the crawlers' records list every domain crawled with the volume taken "
                "from it, and the size of every crawled source: the rule needs the number of "
                "all domains crawled",
            )
        )
        fields.append(
            template_field(
                "3.1",
                "Opt-out (rights reservation) protocols honoured",
                "stated by the crawlers" if measures.get("tdm_opt_out") else None,
                IN_LINEAGE,
                "State annex_crawl.optOut (robots.txt, TDMRep, ...) on the crawled sources",
            )
        )
    if synthetic:
        anonymous = [s["name"] for s in synthetic if not (s["generator_models"] or "").strip()]
        fields.append(
            template_field(
                "2.5",
                "Models that generated the synthetic data",
                None
                if anonymous
                else ", ".join(sorted({s["generator_models"] for s in synthetic})),
                IN_LINEAGE,
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
            f"Set code_of_practice_signatory (true or false) {add_file}",
        ),
        template_field(
            "3.2",
            "Measures to remove illegal content",
            "; ".join(
                sorted({sentence(m["measure"], MEASURES) for m in measures["illegal_content"]})
            )
            or None,
            IN_LINEAGE,
            "State annex_illegalContent.measures on the sources they were applied to",
        ),
    ]
    return fields


def share_text(share: float | None) -> str | None:
    """A domain's share of the crawl as a percentage with one decimal; a share too small for
    that is "under 0.1 %", never a misleading "0.0 %"."""
    if share is None:
        return None
    if 0 < share < 0.0005:
        return "under 0.1 %"
    return f"{share * 100:.1f} %"


def size_answer(row: Row) -> str | None:
    """Template 1.3's size of one modality: its bin; for a modality without bins, the measured
    size to two significant figures (the template's "custom value and unit"); a gap when the
    modality or the size is unknown (no bin can be chosen)."""
    if row["modality"] in (None, "UNKNOWN"):
        return None
    if row.get("band"):
        return row["band"]
    for column, unit in (("tokens", "tokens"), ("items", "items"), ("bytes", "bytes")):
        if row.get(column):
            return f"{approximately(row[column])} {unit}"
    return None


def approximately(value: float) -> str:
    """A size in words to two significant figures ("about 5.1 trillion"): the public summary
    gives sizes as bins or rounded, never the exact count (Explanatory Notice para 22)."""
    value = float(value)  # HUGEINT sizes arrive as Decimal
    for scale, word in ((1e12, " trillion"), (1e9, " billion"), (1e6, " million"), (1, "")):
        if value >= scale:
            scaled = value / scale
            rounded = round(scaled, 1 - math.floor(math.log10(scaled)))
            return f"about {rounded:,g}{word}"
    return f"about {value:g}"


def _authorised_representative(model: Any) -> str | None:
    """Template 1.1: a provider established outside the EU names its authorised representative
    (Art 54(1)); for one established in the EU the field does not apply. Not stated: a gap."""
    if model is None or model.established_in_eu is None:
        return None
    if model.established_in_eu:
        return "not applicable: the provider is established in the EU"
    return model.authorised_representative


def _large_answer(entry: dict[str, Any]) -> str | None:
    if not entry["applicable"]:
        return None
    names = ", ".join(d["name"] for d in entry["large"]) or "none"
    return (
        f"{names}: over 3 % of all publicly available {entry['modality_name']} datasets used, "
        f"{approximately(entry['denominator'])} {entry['unit']}"
    )


TRAINING_SUMMARY = ReportDefinition(
    name="training_summary",
    title="Public summary of training content",
    template="training_summary.html.j2",
    summary="The AI Office template for the public summary of a model's training content "
    "(Art 53(1)(d)), filled from lineage and the model's metadata, gaps marked.",
    queries=QUERIES,
    sections=SECTIONS,
    build=build,
    needs_period=False,
    needs_model=True,
    collection_sources=SOURCES,
    public=True,
)

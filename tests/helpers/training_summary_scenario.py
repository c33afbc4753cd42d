"""The lineage of a model "student" whose training-content summary is worked out by hand (the
report tests' known scenario): five sources, one of each kind the template lists plus one
without a category, mixed and consumed by one pre-training run, and the model's metadata file.

* crawl (2.3, 4T tokens): crawler AnnexBot/1.0, 2024-01-01 to 2024-03-31, robots.txt
  respected, 4,242 documents excluded, paywalls not circumvented; its domain list covers the
  whole crawl: www.reddit.com and old.reddit.com (one domain, reddit.com: 1.2T, 30.0 % of the
  crawl), en.wikipedia.org (0.8T, 20.0 %), www.news.example (0.6T, 15.0 %) and 27 more, so 30
  domains of which the top 10 % are those three (an SME would list the top 5 %: two);
  77 items removed by CSAM_HASH_MATCH;
* public datasets (2.1, text): wiki (1T, on the Hugging Face hub), and with
  small_public_dataset tiny (20B): the rule's denominator is then their 1.02T tokens, wiki
  98.0 % is large, tiny 2.0 % is not;
* newswire (2.2.1, 50B, licensed from Northwind News under agreement LicenseRef-news),
  synthetic (2.5, 1B, by teacher-70b), mystery (no facets);
* the pre-training run (Kubernetes job student-pretrain in namespace team-secret) consumed 3T
  tokens (band 1 billion to 10 trillion);
* the metadata file has no eu_market_date (a gap in 1.2); the provider is established in the
  EU (1.1: no authorised representative needed).
"""

from __future__ import annotations

from tests.helpers.lineage_warehouse import (
    T0,
    dataset,
    facet,
    minutes,
    model_facet,
    run_event,
    run_id,
    training_facet,
)

CONSUMED = 3_000_000_000_000  # tokens the pre-training run read: band 1B-10T
CRAWL = 4_000_000_000_000
B = 1_000_000_000
# hosts as the crawler saw them; 30 domains (top- plus second-level) covering all 4T tokens:
# reddit.com 1,200B + wikipedia.org 800B + news.example 600B + site03 100B + 25 × 50B +
# bbc.co.uk 50B
DOMAINS = [
    {"domain": "www.reddit.com", "tokens": 1000 * B},
    {"domain": "en.wikipedia.org", "tokens": 800 * B},
    {"domain": "www.news.example", "tokens": 600 * B},
    {"domain": "old.reddit.com", "tokens": 200 * B},
    {"domain": "site03.example", "tokens": 100 * B},
] + [{"domain": f"www.site{i:02d}.example", "tokens": 50 * B} for i in range(4, 29)]
# bbc.co.uk: one domain whose registry takes names under co.uk (not the domain "co.uk")
DOMAINS += [
    {"domain": "www.bbc.co.uk", "tokens": 25 * B},
    {"domain": "https://news.bbc.co.uk:443/world", "tokens": 25 * B},
]
NAMESPACE, JOB = "team-secret", "student-pretrain"
MODEL_FILE = """\
name: student
provider: Example Labs
established_in_eu: true
versions: [v1]
parameters: 7000000000
architecture: dense decoder-only transformer
licence: Apache-2.0
modalities: {input: [text], output: [text]}
release_date: 2026-10-01
"""


def _source(
    name: str, category: str | None, tokens: int | None, namespace: str = "s3://src", **extra: dict
) -> dict:
    facets: dict = {}
    if category is not None:
        facets["annex_source"] = facet(
            "AnnexSourceDatasetFacet",
            sourceCategory=category,
            publiclyAvailable=category == "PUBLIC_DATASET",
            description=f"{name} data",
            **extra.pop("source", {}),
        )
        facets["annex_content"] = facet(
            "AnnexContentDatasetFacet",
            modality="TEXT",
            size={"tokens": tokens},
            **extra.pop("content", {}),
        )
    if "licensing" in extra:
        facets["annex_licensing"] = facet("AnnexLicensingDatasetFacet", **extra.pop("licensing"))
    facets.update(extra)
    return dataset(namespace, name, "v1", **facets)


def student_events(*, small_public_dataset: bool = False) -> list[dict]:
    """crawl (CRAWLED), wiki (PUBLIC_DATASET), newswire (PRIVATE_LICENSED), synthetic
    (SYNTHETIC, by teacher-70b) and mystery (no annex_source: a gap) -> mix -> mixture ->
    pretrain (3T tokens consumed) -> student/base."""
    crawl = _source(
        "crawl",
        "CRAWLED",
        CRAWL,
        content={
            "domainStats": {"topN": DOMAINS},
            "contentTypes": ["WEB_PAGES", "FORUMS"],
            "languages": ["en", "de"],
            "latestCollectionDate": "2024-03-31",
        },
        annex_crawl=facet(
            "AnnexCrawlDatasetFacet",
            crawlerName="AnnexBot/1.0",
            purpose="AI_TRAINING",
            collectionPeriod={"start": "2024-01-01", "end": "2024-03-31"},
            optOut={
                "robotsTxt": "RESPECTED",
                "tdmrep": "RESPECTED",
                "ietfAipref": "NOT_CHECKED",
                "aiTxt": "NOT_CHECKED",
                "checkedAt": "FETCH_TIME",
                "documentsExcluded": 4242,
            },
            paywallPolicy="NO_CIRCUMVENTION",
        ),
        annex_illegalContent=facet(
            "AnnexIllegalContentDatasetFacet", measures=["CSAM_HASH_MATCH"], removedItems=77
        ),
    )
    wiki = _source(
        "example/wiki",
        "PUBLIC_DATASET",
        1_000_000_000_000,
        namespace="hf://datasets",
        licensing={"spdxExpression": "CC-BY-SA-4.0", "copyrightStatus": "UNKNOWN"},
        content={"languages": ["en", "fr"], "contentTypes": ["ENCYCLOPEDIA"]},
    )
    tiny = _source("tiny", "PUBLIC_DATASET", 20 * B)
    newswire = _source(
        "newswire",
        "PRIVATE_LICENSED",
        50_000_000_000,
        licensing={
            "spdxExpression": "LicenseRef-news",
            "licensor": "Northwind News",
            "copyrightStatus": "UNKNOWN",
        },
    )
    synthetic = _source(
        "synthetic", "SYNTHETIC", 1_000_000_000, source={"generatorModels": ["teacher-70b"]}
    )
    mystery = _source("mystery", None, None)
    mixture = dataset(
        "s3://work",
        "mixture",
        "m1",
        annex_content=facet("AnnexContentDatasetFacet", modality="TEXT", size={"tokens": 1}),
    )
    ckpt = dataset("s3://ck", "student/base", None, datasetType=model_facet())
    usage = dict(
        mixture,
        inputFacets={
            "annex_trainingUsage": facet(
                "AnnexTrainingUsageInputDatasetFacet", tokensConsumed=CONSUMED, epochs=1.0
            )
        },
    )
    return [
        run_event(
            run_id("mix"),
            "COMPLETE",
            T0,
            job="mix",
            inputs=[crawl, wiki, newswire, synthetic, mystery]
            + ([tiny] if small_public_dataset else []),
            outputs=[mixture],
        ),
        run_event(
            run_id("pretrain"),
            "COMPLETE",
            T0 + minutes(60),
            job="pretrain",
            inputs=[usage],
            outputs=[ckpt],
            run_facets={
                "annex_trainingRun": training_facet(
                    "student", "PRETRAINING", k8s=("cluster-a", NAMESPACE, JOB)
                )
            },
        ),
    ]

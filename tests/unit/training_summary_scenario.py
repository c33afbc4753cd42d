"""The lineage of a model "student" whose training-content summary is worked out by hand (the
report tests' known scenario): five sources, one of each kind the template lists plus one
without a category, mixed and consumed by one pre-training run, and the model's metadata file.

* crawl (2.3, 4T tokens): crawler AnnexBot/1.0, 2024-01-01 to 2024-03-31, robots.txt
  respected, 4,242 documents excluded, 20 domains of which the top 10 % are site00 (500 of 880
  tokens, 56.8 %) and site01 (200, 22.7 %); 77 items removed by CSAM_HASH_MATCH;
* wiki (2.1, 1T, CC-BY-SA-4.0: 19.8 % of the 5.051T text tokens), newswire (2.2.1, 50B,
  licensed from Northwind News), synthetic (2.5, 1B, by teacher-70b), mystery (no facets);
* the pre-training run consumed 3T tokens (band 1 billion to 10 trillion);
* the metadata file has no eu_market_date (a gap in 1.2).
"""

from __future__ import annotations

from tests.unit.lineage_warehouse_helpers import (
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
# 20 crawled domains: 500 + 200 + 18 × 10 = 880 tokens; the top 10 % are the first two
DOMAINS = [
    {"domain": "site00.example", "tokens": 500},
    {"domain": "site01.example", "tokens": 200},
] + [{"domain": f"site{i:02d}.example", "tokens": 10} for i in range(2, 20)]
MODEL_FILE = """\
name: student
provider: Example Labs
versions: [v1]
parameters: 7000000000
architecture: dense decoder-only transformer
licence: Apache-2.0
modalities: {input: [text], output: [text]}
release_date: 2026-10-01
"""


def _source(name: str, category: str | None, tokens: int | None, **extra: dict) -> dict:
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
    return dataset("s3://src", name, "v1", **facets)


def student_events() -> list[dict]:
    """crawl (CRAWLED), wiki (PUBLIC_DATASET), newswire (PRIVATE_LICENSED), synthetic
    (SYNTHETIC, by teacher-70b) and mystery (no annex_source: a gap) -> mix -> mixture ->
    pretrain (3T tokens consumed) -> student/base."""
    crawl = _source(
        "crawl",
        "CRAWLED",
        4_000_000_000_000,
        content={
            "domainStats": {"topN": DOMAINS},
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
        "wiki",
        "PUBLIC_DATASET",
        1_000_000_000_000,
        licensing={"spdxExpression": "CC-BY-SA-4.0", "copyrightStatus": "UNKNOWN"},
        content={"languages": ["en", "fr"]},
    )
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
            inputs=[crawl, wiki, newswire, synthetic, mystery],
            outputs=[mixture],
        ),
        run_event(
            run_id("pretrain"),
            "COMPLETE",
            T0 + minutes(60),
            job="pretrain",
            inputs=[usage],
            outputs=[ckpt],
            run_facets={"annex_trainingRun": training_facet("student", "PRETRAINING")},
        ),
    ]

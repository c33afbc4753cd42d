"""The training-data sources of a simulated world: one deterministic catalogue per seed.

Every source is a leaf of the lineage graph (nothing in the world produced it) and falls in
one section of the EU AI Act training-content template (C(2025) 8311): public datasets
(2.1, on `hf://datasets`), data licensed from rightsholders (2.2.1), other private
third-party data (2.2.2), web crawls (2.3, on `crawl://<crawler>`), user data (2.4),
synthetic data (2.5) and other sources (2.6). The names imitate real corpora (a FineWeb-,
Wikipedia- or Stack-like corpus) but every figure here is made up: descriptions say
"simulated", licensors carry "(simulated)", and the producer URI of every event names the
simulator.

Sizes are drawn from one RNG seeded by the world's seed alone, so the same seed gives the same
catalogue whatever the cluster size. Dates count back from the world's clock (`now`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

# sourceCategory values (annex_source), in EU template order; DERIVED marks internal
# intermediates (filtered corpora, tokenised mixtures), never a leaf
EU_CATEGORIES = (
    "PUBLIC_DATASET",  # 2.1
    "PRIVATE_LICENSED",  # 2.2.1
    "PRIVATE_THIRD_PARTY",  # 2.2.2
    "CRAWLED",  # 2.3
    "USER_DATA",  # 2.4
    "SYNTHETIC",  # 2.5
    "OTHER",  # 2.6
)
DERIVED = "DERIVED"

# model family of every model the world trains (simulator.world.workloads.MODELS)
FAMILIES: dict[str, str] = {
    "annex-lm-400b": "text",
    "llama-70b": "text",
    "mixtral-8x22b": "text",
    "codegen-34b": "code",
    "vit-h14": "image",
    "dit-xl": "image",
    "clip-l14": "image",
    "whisper-large": "audio",
    "protein-fold": "protein",
}
# the checkpoint that writes each family's synthetic data (its `base` checkpoint)
TEACHERS: dict[str, str] = {
    "text": "annex-lm-400b",
    "code": "annex-lm-400b",
    "image": "clip-l14",
    "audio": "whisper-large",
    "protein": "protein-fold",
}


@dataclass(frozen=True)
class Crawl:
    """How a crawl collected its pages (annex_crawl)."""

    crawler: str  # crawlerName, the user agent
    purpose: str
    start: date
    end: date
    robots_txt: str
    tdmrep: str
    ietf_aipref: str
    ai_txt: str
    checked_at: str  # FETCH_TIME | INGEST_TIME
    documents_excluded: int
    paywall_policy: str = "NO_CIRCUMVENTION"


@dataclass(frozen=True)
class Source:
    """One leaf dataset: where it lives, what it is, under which terms it was obtained."""

    key: str  # short handle used by the producer's mixtures
    namespace: str
    name: str
    category: str  # one of EU_CATEGORIES
    description: str
    publicly_available: bool
    spdx: str  # SPDX id, expression, LicenseRef-... or NOASSERTION
    copyright_status: str
    modality: str  # TEXT | IMAGE | AUDIO | VIDEO | OTHER
    content_types: tuple[str, ...]
    languages: tuple[str, ...]
    tokens: int
    bytes: int
    items: int
    latest_collection: date
    version: str
    hf_license_id: str | None = None
    tdm_exception: str | None = None  # EU_DSM_ART3 | EU_DSM_ART4 | NONE
    licensor: str | None = None
    personal_data: tuple[str, str, tuple[str, ...]] = ("no", "no", ())  # present, sensitive
    generator_models: tuple[str, ...] = ()
    crawl: Crawl | None = None
    top_domains: tuple[tuple[str, int], ...] = ()
    stats_uri: str | None = None


@dataclass
class Catalog:
    seed: int
    sources: dict[str, Source] = field(default_factory=dict)
    # family -> ordered (source key, sampling weight) of its pretraining mixture
    pretraining: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    # family -> ordered (source key, sampling weight) of its fine-tuning mixture
    fine_tuning: dict[str, list[tuple[str, float]]] = field(default_factory=dict)

    def by_category(self) -> dict[str, list[Source]]:
        out: dict[str, list[Source]] = {}
        for source in self.sources.values():
            out.setdefault(source.category, []).append(source)
        return out

    @property
    def crawls(self) -> list[Source]:
        return [s for s in self.sources.values() if s.crawl is not None]


TEXT_DOMAINS = (
    "en.wikipedia.org",
    "github.com",
    "stackoverflow.com",
    "arxiv.org",
    "www.bbc.co.uk",
    "www.theguardian.com",
    "medium.com",
    "www.reddit.com",
    "www.nature.com",
    "de.wikipedia.org",
    "www.lemonde.fr",
    "docs.python.org",
)
IMAGE_DOMAINS = (
    "upload.wikimedia.org",
    "i.pinimg.com",
    "images.unsplash.com",
    "live.staticflickr.com",
    "cdn.shopify.com",
    "i.imgur.com",
)


def build_catalog(seed: int, now: datetime) -> Catalog:
    """The catalogue of world `seed`; identical for the same (seed, now)."""
    rng = random.Random(f"annex-simulator-lineage-catalog:{seed}")
    today = now.date()

    def sha() -> str:
        return f"{rng.getrandbits(160):040x}"

    def tokens(low: float, high: float) -> int:
        return int(rng.uniform(low, high))

    def text_size(toks: int, bytes_per_token: float, tokens_per_item: int) -> tuple[int, int]:
        return int(toks * bytes_per_token), max(1, toks // tokens_per_item)

    def domains(pool: tuple[str, ...], total: int, n: int) -> tuple[tuple[str, int], ...]:
        share = sorted((rng.uniform(0.2, 1.0) ** 3 for _ in range(n)), reverse=True)
        scale = total * rng.uniform(0.08, 0.2) / sum(share)
        return tuple((d, int(s * scale)) for d, s in zip(rng.sample(pool, n), share, strict=True))

    cat = Catalog(seed=seed)

    def add(source: Source) -> None:
        cat.sources[source.key] = source

    # ---- 2.3 crawls --------------------------------------------------------------
    crawl_specs = (
        ("web-a", "TEXT", 240, 150, TEXT_DOMAINS, ("en", "de", "fr", "es")),
        ("web-b", "TEXT", 150, 75, TEXT_DOMAINS, ("en", "de", "fr", "es", "it", "pl")),
        ("img-a", "IMAGE", 200, 100, IMAGE_DOMAINS, ("en",)),
    )
    for key, modality, begin, end, pool, languages in crawl_specs:
        start, stop = today - timedelta(days=begin), today - timedelta(days=end)
        crawl_id = f"{key}-{stop:%Y%m%d}-{rng.getrandbits(24):06x}"
        image = modality == "IMAGE"
        crawler = "AnnexSimBot-Image/1.2" if image else "AnnexSimBot/2.4"
        toks = tokens(8e12, 2.2e13) if not image else tokens(2e11, 6e11)
        size, items = (int(toks * 90), toks // 300) if image else text_size(toks, 4.1, 1_400)
        add(
            Source(
                key=f"crawl-{key}",
                namespace=f"crawl://{crawler.split('/')[0].lower()}",
                name=crawl_id,
                category="CRAWLED",
                description=(
                    f"Simulated {'image-text' if image else 'web text'} crawl {crawl_id} by "
                    f"{crawler}, {start} to {stop}"
                ),
                publicly_available=False,
                spdx="NOASSERTION",
                copyright_status="MIXED_THIRD_PARTY",
                tdm_exception="EU_DSM_ART4",
                modality=modality,
                content_types=("IMAGE_TEXT_PAIRS",) if image else ("WEB_PAGES", "NEWS", "FORUMS"),
                languages=languages,
                tokens=toks,
                bytes=size,
                items=items,
                latest_collection=stop,
                version=crawl_id,
                personal_data=("yes", "noAssertion", ()),
                crawl=Crawl(
                    crawler=crawler,
                    purpose="AI_TRAINING",
                    start=start,
                    end=stop,
                    robots_txt="RESPECTED",
                    tdmrep="RESPECTED",
                    ietf_aipref="RESPECTED" if key == "web-b" else "NOT_CHECKED",
                    ai_txt="NOT_CHECKED",
                    checked_at="FETCH_TIME" if key != "web-a" else "INGEST_TIME",
                    documents_excluded=int(items * rng.uniform(0.02, 0.07)),
                ),
                top_domains=domains(pool, toks, min(10, len(pool))),
                stats_uri=f"s3://annex-sim-corpora/stats/{crawl_id}-domains.parquet",
            )
        )

    # ---- 2.1 public datasets -------------------------------------------------------
    public = (
        # key, repo, spdx, hf id, status, modality, content, languages, token range, description
        (
            "fineweb",
            "webcorpus-foundation/fineweb-sim-edu",
            "ODC-By-1.0",
            "odc-by",
            "MIXED_THIRD_PARTY",
            "TEXT",
            ("WEB_PAGES", "EDUCATIONAL"),
            ("en",),
            (1.0e12, 1.6e12),
            "FineWeb-style filtered web corpus, educational subset",
        ),
        (
            "wikipedia",
            "wikimedia-sim/wikipedia-20260901",
            "CC-BY-SA-4.0",
            "cc-by-sa-4.0",
            "OPEN_LICENSED",
            "TEXT",
            ("ENCYCLOPEDIA",),
            ("en", "de", "fr", "es", "it", "ja"),
            (2.0e10, 3.0e10),
            "Wikipedia-style encyclopedia dump, 6 languages",
        ),
        (
            "code",
            "codestack/the-code-stack-sim-v2",
            "LicenseRef-codestack-terms-of-use",
            "other",
            "MIXED_THIRD_PARTY",
            "TEXT",
            ("SOURCE_CODE",),
            ("en",),
            (6.0e11, 9.0e11),
            "The Stack-style permissively licensed source code, 600 languages",
        ),
        (
            "books",
            "pd-library/public-domain-books-sim",
            "CC0-1.0",
            "cc0-1.0",
            "PUBLIC_DOMAIN",
            "TEXT",
            ("BOOKS",),
            ("en", "fr", "de"),
            (2.5e10, 4.0e10),
            "Public-domain books digitised by libraries",
        ),
        (
            "instructions",
            "open-assist-sim/oasst-style-conversations",
            "Apache-2.0",
            "apache-2.0",
            "OPEN_LICENSED",
            "TEXT",
            ("DIALOGUE", "INSTRUCTIONS"),
            ("en", "es", "de"),
            (1.0e8, 4.0e8),
            "Crowd-sourced assistant conversations",
        ),
        (
            "image-text",
            "open-pairs/image-text-sim-2b",
            "CC-BY-4.0",
            "cc-by-4.0",
            "MIXED_THIRD_PARTY",
            "IMAGE",
            ("IMAGE_TEXT_PAIRS",),
            ("en",),
            (1.5e11, 3.0e11),
            "LAION-style image-text pairs (URLs and alt text)",
        ),
        (
            "speech",
            "common-speech-sim/voices-v17",
            "CC0-1.0",
            "cc0-1.0",
            "OPEN_LICENSED",
            "AUDIO",
            ("SPEECH",),
            ("en", "de", "fr", "es", "sw"),
            (4.0e9, 8.0e9),
            "Common Voice-style read speech",
        ),
        (
            "structures",
            "pdb-sim/protein-structures-2026",
            "CC0-1.0",
            "cc0-1.0",
            "PUBLIC_DOMAIN",
            "OTHER",
            ("PROTEIN_STRUCTURES",),
            (),
            (1.0e9, 2.0e9),
            "PDB-style experimentally determined protein structures",
        ),
        (
            "synthetic-textbooks",
            "synth-commons/textbooks-sim",
            "Apache-2.0",
            "apache-2.0",
            "OPEN_LICENSED",
            "TEXT",
            ("SYNTHETIC_TEXTBOOKS",),
            ("en",),
            (2.0e10, 3.0e10),
            "Cosmopedia-style synthetic textbooks written by an open model",
        ),
    )
    for key, repo, spdx, hf_id, status, modality, content, languages, span, text in public:
        toks = tokens(*span)
        size, items = text_size(toks, 4.0 if modality == "TEXT" else 40.0, 900)
        synthetic = key == "synthetic-textbooks"
        add(
            Source(
                key=key,
                namespace="hf://datasets",
                name=repo,
                category="SYNTHETIC" if synthetic else "PUBLIC_DATASET",
                description=f"Simulated: {text}",
                publicly_available=True,
                spdx=spdx,
                hf_license_id=hf_id,
                copyright_status=status,
                tdm_exception="NONE",
                modality=modality,
                content_types=content,
                languages=languages,
                tokens=toks,
                bytes=size,
                items=items,
                latest_collection=today - timedelta(days=rng.randint(90, 400)),
                version=sha(),
                personal_data=(
                    ("noAssertion", "noAssertion", ())
                    if key in ("fineweb", "image-text")
                    else ("no", "no", ())
                ),
                generator_models=("mixtral-8x7b-instruct",) if synthetic else (),
            )
        )

    # ---- 2.2.1 licensed, 2.2.2 private third party -------------------------------------
    licensed = (
        ("newswire", "TEXT", "Northwind News Agency (simulated)", ("NEWS",), (6e10, 1.2e11)),
        ("stock-photos", "IMAGE", "Lumen Stock Images (simulated)", ("PHOTOS",), (3e10, 6e10)),
        ("podcasts", "AUDIO", "Harbor Audio Network (simulated)", ("PODCASTS",), (2e9, 5e9)),
    )
    for key, modality, licensor, content, span in licensed:
        toks = tokens(*span)
        slug = licensor.split(" (")[0].lower().replace(" ", "-")
        add(
            Source(
                key=key,
                namespace="s3://annex-sim-licensed",
                name=f"{slug}/{key}-archive",
                category="PRIVATE_LICENSED",
                description=f"Simulated: {key} archive licensed from {licensor}",
                publicly_available=False,
                spdx=f"LicenseRef-annex-sim-{slug}-agreement",
                copyright_status="LICENSED_BY_AGREEMENT",
                tdm_exception="NONE",
                licensor=licensor,
                modality=modality,
                content_types=content,
                languages=("en", "de") if modality != "IMAGE" else (),
                tokens=toks,
                bytes=int(toks * (4.2 if modality == "TEXT" else 60)),
                items=toks // 800,
                latest_collection=today - timedelta(days=rng.randint(60, 200)),
                version=f"delivery-{rng.randint(3, 12)}",
                personal_data=("yes", "no", ("CONTRACTUAL_PII_REMOVAL_BY_LICENSOR",)),
            )
        )
    toks = tokens(3e10, 6e10)
    add(
        Source(
            key="forum-archive",
            namespace="s3://annex-sim-vendor-data",
            name="datavend/forum-archive-2026",
            category="PRIVATE_THIRD_PARTY",
            description="Simulated: Q&A forum archive bought from a data vendor",
            publicly_available=False,
            spdx="NOASSERTION",
            copyright_status="MIXED_THIRD_PARTY",
            tdm_exception="EU_DSM_ART4",
            licensor="DataVend Ltd (simulated)",
            modality="TEXT",
            content_types=("FORUMS",),
            languages=("en",),
            tokens=toks,
            bytes=int(toks * 4.3),
            items=toks // 350,
            latest_collection=today - timedelta(days=rng.randint(100, 160)),
            version=f"snapshot-{today - timedelta(days=95):%Y%m%d}",
            personal_data=("yes", "noAssertion", ("USERNAME_PSEUDONYMISATION",)),
        )
    )

    # ---- 2.4 user data ---------------------------------------------------------------
    for key, name, modality, content, span in (
        ("user-chats", "assistant/chat-transcripts-2026h1", "TEXT", ("DIALOGUE",), (2e9, 6e9)),
        ("user-voice", "dictation/voice-notes-2026h1", "AUDIO", ("SPEECH",), (3e8, 9e8)),
    ):
        toks = tokens(*span)
        add(
            Source(
                key=key,
                namespace="s3://annex-sim-userdata",
                name=name,
                category="USER_DATA",
                description=(
                    "Simulated: interactions of users of the provider's own services who did "
                    "not opt out of training"
                ),
                publicly_available=False,
                spdx="NOASSERTION",
                copyright_status="OWN_CONTENT",
                tdm_exception="NONE",
                modality=modality,
                content_types=content,
                languages=("en", "de", "fr"),
                tokens=toks,
                bytes=int(toks * (4.0 if modality == "TEXT" else 120)),
                items=toks // 600,
                latest_collection=today - timedelta(days=rng.randint(70, 110)),
                version=f"export-{rng.getrandbits(32):08x}",
                personal_data=(
                    "yes",
                    "yes" if modality == "AUDIO" else "noAssertion",
                    ("USER_OPT_OUT_HONOURED", "PII_NER_REDACTION", "EMAIL_PHONE_REGEX_REDACTION"),
                ),
            )
        )

    # ---- 2.6 other ---------------------------------------------------------------------
    toks = tokens(2e8, 5e8)
    add(
        Source(
            key="consortium",
            namespace="s3://annex-sim-partners",
            name="structural-bio-consortium/unpublished-structures-2026",
            category="OTHER",
            description=(
                "Simulated: unpublished structures shared by a research consortium under a "
                "collaboration agreement"
            ),
            publicly_available=False,
            spdx="NOASSERTION",
            copyright_status="UNKNOWN",
            tdm_exception="NONE",
            licensor="Structural Biology Consortium (simulated)",
            modality="OTHER",
            content_types=("PROTEIN_STRUCTURES",),
            languages=(),
            tokens=toks,
            bytes=toks * 6,
            items=toks // 2_000,
            latest_collection=today - timedelta(days=rng.randint(80, 140)),
            version=f"release-{rng.randint(2, 5)}",
        )
    )

    # ---- mixtures per family: (source key, sampling weight) -------------------------
    # "filtered:<crawl key>" is the crawl after filtering (a derived corpus, same version
    # for every reader: the diamond the lineage graph must show)
    cat.pretraining = {
        "text": [
            ("filtered:crawl-web-a", 0.30),
            ("filtered:crawl-web-b", 0.28),
            ("fineweb", 0.12),
            ("wikipedia", 0.05),
            ("books", 0.04),
            ("code", 0.08),
            ("newswire", 0.06),
            ("forum-archive", 0.04),
            ("synthetic-textbooks", 0.03),
        ],
        "code": [
            ("code", 0.62),
            ("filtered:crawl-web-b", 0.20),
            ("forum-archive", 0.10),
            ("synthetic-textbooks", 0.08),
        ],
        "image": [
            ("filtered:crawl-img-a", 0.55),
            ("image-text", 0.35),
            ("stock-photos", 0.10),
        ],
        "audio": [("speech", 0.6), ("podcasts", 0.4)],
        "protein": [("structures", 0.8), ("consortium", 0.2)],
    }
    cat.fine_tuning = {
        "text": [("instructions", 0.45), ("user-chats", 0.25)],
        "code": [("instructions", 0.5), ("user-chats", 0.2)],
        "image": [("stock-photos", 0.5)],
        "audio": [("user-voice", 0.5)],
        "protein": [("consortium", 0.6)],
    }
    return cat


def seed_corpus(catalog: Catalog, family: str) -> str:
    """The corpus the family's synthetic-data generation reads (the first of its mixture)."""
    return catalog.pretraining[family][0][0]


__all__ = [
    "DERIVED",
    "EU_CATEGORIES",
    "FAMILIES",
    "TEACHERS",
    "Catalog",
    "Crawl",
    "Source",
    "build_catalog",
    "seed_corpus",
]

"""Croissant 1.0/1.1 + RAI JSON-LD -> OpenLineage DatasetEvents (collectors/lineage/croissant.py).

The events must pass annex's ingest validator unchanged (``parse_events``, no rejections).
Their standard facets are also checked with jsonschema against the official OpenLineage
facet schemas. Facts that Croissant does not carry are never filled in.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime

import pytest

from collectors.lineage.croissant import (
    CroissantError,
    croissant_event,
    import_croissant,
    licence_from_text,
)
from collectors.lineage.events import event_id
from tests.helpers.lineage_import_checks import FIXTURES, T, accepted, schema_valid

PRODUCER = "https://annex.dev/import/croissant"
CRAWL = {
    "crawlerName": "ExampleBot/1.0",
    "purpose": "AI_TRAINING",
    "optOut": {
        "robotsTxt": "RESPECTED",
        "tdmrep": "RESPECTED",
        "ietfAipref": "NOT_CHECKED",
        "aiTxt": "NOT_CHECKED",
        "checkedAt": "FETCH_TIME",
        "documentsExcluded": 1200,
    },
    "paywallPolicy": "NO_CIRCUMVENTION",
}


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text("utf-8"))


def run(document, **kw):
    args = {
        "namespace": "s3://corpora",
        "name": "external/webtext-de-en",
        "producer": PRODUCER,
        "event_time": T,
    }
    args.update(kw)
    return import_croissant(document, **args)


def codes(result) -> list[str]:
    return [f.code for f in result.findings]


def facets(result) -> dict:
    return result.event["dataset"]["facets"]


def strip(facet: dict) -> dict:
    return {k: v for k, v in facet.items() if not k.startswith("_")}


# ---- fixtures end to end ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "crawl"),
    [
        ("croissant_web_text.json", CRAWL),
        ("croissant_web_text.json", None),
        ("croissant_images_1_0.json", None),
    ],
)
def test_fixtures_are_accepted_by_the_ingest_validator_and_the_official_schemas(name, crawl):
    raw = (FIXTURES / name).read_bytes()
    result = run(raw, crawl=crawl)
    assert accepted(result.event) == result.event
    schema_valid(result.event)
    assert run(json.loads(raw), crawl=crawl) == result  # bytes or a decoded dict
    for facet in facets(result).values():
        assert facet["_producer"] == PRODUCER


def test_web_text_with_rai_maps_to_all_annex_facets():
    result = run(fixture("croissant_web_text.json"), crawl=CRAWL)
    f = facets(result)
    assert set(f) == {
        "annex_licensing",
        "annex_source",
        "annex_content",
        "annex_personalData",
        "annex_crawl",
        "documentation",
        "symlinks",
        "version",
    }
    assert strip(f["annex_licensing"]) == {
        "spdxExpression": "CC-BY-4.0",
        "copyrightStatus": "OPEN_LICENSED",
    }
    assert strip(f["annex_source"]) == {
        "sourceCategory": "PUBLIC_DATASET",
        "publiclyAvailable": True,
        "description": "Publicly reachable web pages from the .de and .com top-level domains.",
    }
    # no size: the HF-style "repo" FileObject has no contentSize (never guessed)
    assert strip(f["annex_content"]) == {
        "modality": "TEXT",
        "languages": ["en", "de"],
        "latestCollectionDate": "2024-09-30",
    }
    assert strip(f["annex_personalData"]) == {"present": "yes", "sensitive": "noAssertion"}
    assert strip(f["annex_crawl"]) == {
        "crawlerName": "ExampleBot/1.0",
        "purpose": "AI_TRAINING",
        "collectionPeriod": {"start": "2024-01-01", "end": "2024-09-30"},
        "optOut": CRAWL["optOut"],
        "paywallPolicy": "NO_CIRCUMVENTION",
    }
    assert f["documentation"]["description"].startswith("German and English web text")
    assert f["symlinks"]["identifiers"] == [
        {
            "namespace": "https://data.example.org",
            "name": "croissant/webtext-de-en",
            "type": "CROISSANT_ID",
        },
        {
            "namespace": "https://huggingface.co",
            "name": "datasets/example-org/webtext-de-en",
            "type": "URL",
        },
        {"namespace": "https://zenodo.org", "name": "records/1234567", "type": "URL"},
    ]
    assert f["version"]["datasetVersion"] == "2.1.0"
    assert set(codes(result)) == {"derived_from", "size_unknown", "personal_data_review"}
    derived = next(x for x in result.findings if x.code == "derived_from")
    assert "https://commoncrawl.org/2024-51" in derived.message


def test_web_scraping_without_crawler_facts_leaves_annex_crawl_out_and_says_why():
    result = run(fixture("croissant_web_text.json"))
    assert "annex_crawl" not in facets(result)
    missing = next(x for x in result.findings if x.code == "crawl_facts_missing")
    assert "2024-01-01" in missing.message and "2024-09-30" in missing.message
    # the period still dates the content
    assert facets(result)["annex_content"]["latestCollectionDate"] == "2024-09-30"


def test_images_1_0_document():
    result = run(fixture("croissant_images_1_0.json"), name="external/street-signs")
    f = facets(result)
    assert strip(f["annex_licensing"]) == {
        "spdxExpression": "CC0-1.0",
        "copyrightStatus": "PUBLIC_DOMAIN",
    }
    assert strip(f["annex_content"]) == {
        "modality": "IMAGE",
        "languages": ["de"],
        "size": {"bytes": 1536 * 1024 * 1024},  # "1.5 GiB", the only top-level FileObject
        "latestCollectionDate": "2020-06-30",  # dataCollectionTimeframe, list form
    }
    assert strip(f["annex_personalData"]) == {"present": "no", "sensitive": "no"}
    assert "annex_crawl" not in f  # Manual Human Curator, not web scraping
    assert "version" not in f
    assert strip(f["annex_source"]) == {"sourceCategory": "PUBLIC_DATASET"}
    assert result.findings == ()


# ---- timeframe spellings ------------------------------------------------------------------


def _web(**rai) -> dict:
    doc = fixture("croissant_web_text.json")
    for key in list(doc):
        if key.startswith("rai:dataCollectionTime"):
            del doc[key]
    doc.update(rai)
    return doc


@pytest.mark.parametrize(
    "rai",
    [
        {"rai:dataCollectionTimeframe": ["2023-02-01T00:00:00", "2023-11-30T23:59:59"]},
        {"rai:dataCollectionTimeframe": [{"@value": "2023-02-01"}, {"@value": "2023-11-30"}]},
        {"rai:dataCollectionTimeframe": "2023-02-01/2023-11-30"},
        {
            "rai:dataCollectionTimeFrameStart": "2023-02-01",
            "rai:dataCollectionTimeFrameEnd": "2023-11-30T00:00:00Z",
        },
        {
            "rai:dataCollectionTimeFrameStart": {
                "@value": "2023-02-01T00:00:00",
                "dataType": "sc:Date",
            },
            "rai:dataCollectionTimeFrameEnd": {
                "@value": "2023-11-30T00:00:00",
                "dataType": "sc:Date",
            },
        },
        {
            "http://mlcommons.org/croissant/RAI/dataCollectionTimeframe": [
                "2023-02-01",
                "2023-11-30",
            ]
        },
    ],
)
def test_both_timeframe_spellings_give_the_collection_period(rai):
    result = run(_web(**rai), crawl=CRAWL)
    assert facets(result)["annex_crawl"]["collectionPeriod"] == {
        "start": "2023-02-01",
        "end": "2023-11-30",
    }
    accepted(result.event)


@pytest.mark.parametrize(
    "rai",
    [
        {"rai:dataCollectionTimeframe": ["2023-02-01"]},
        {"rai:dataCollectionTimeframe": ["2023-11-30", "2023-02-01"]},  # end before start
        {
            "rai:dataCollectionTimeFrameStart": "early 2023",
            "rai:dataCollectionTimeFrameEnd": "2023",
        },
    ],
)
def test_unreadable_timeframes_are_reported_not_guessed(rai):
    result = run(_web(**rai), crawl=CRAWL)
    assert "annex_crawl" not in facets(result)
    assert "latestCollectionDate" not in facets(result)["annex_content"]
    assert "timeframe_unreadable" in codes(result)
    assert "crawl_period_unknown" in codes(result)
    accepted(result.event)


def test_crawl_facts_without_web_scraping_are_ignored_with_a_finding():
    result = run(fixture("croissant_images_1_0.json"), crawl=CRAWL)
    assert "annex_crawl" not in facets(result)
    assert codes(result) == ["crawl_ignored"]


@pytest.mark.parametrize(
    "crawl",
    [
        {"optOut": CRAWL["optOut"]},
        {"crawlerName": "Bot", "optOut": {"robotsTxt": "RESPECTED"}},
        {"crawlerName": "", "optOut": CRAWL["optOut"]},
    ],
)
def test_incomplete_crawl_facts_are_refused(crawl):
    with pytest.raises(ValueError, match="crawl"):
        run(fixture("croissant_web_text.json"), crawl=crawl)


# ---- licences -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "spdx", "finding_codes"),
    [
        ("https://creativecommons.org/licenses/by/4.0/", "CC-BY-4.0", []),
        ("http://creativecommons.org/licenses/by-nc-sa/3.0/legalcode", "CC-BY-NC-SA-3.0", []),
        ("https://creativecommons.org/licenses/by-sa/4.0/deed.de", "CC-BY-SA-4.0", []),
        ("https://creativecommons.org/publicdomain/zero/1.0/", "CC0-1.0", []),
        ("https://spdx.org/licenses/MIT.html", "MIT", []),
        ("https://spdx.org/licenses/cdla-permissive-2.0", "CDLA-Permissive-2.0", []),
        ("https://opensource.org/licenses/Apache-2.0", "Apache-2.0", []),
        ("https://www.apache.org/licenses/LICENSE-2.0", "Apache-2.0", []),
        ("https://opendatacommons.org/licenses/odbl/1-0/", "ODbL-1.0", []),
        ("https://opendatacommons.org/licenses/by/1-0/", "ODC-By-1.0", []),
        ("https://choosealicense.com/licenses/mit/", "MIT", []),
        ("https://choosealicense.com/licenses/odc-by/", "NOASSERTION", ["licence_family"]),
        ("Apache-2.0", "Apache-2.0", []),
        ("cc-by-4.0", "CC-BY-4.0", []),
        ("GPL-2.0", "GPL-2.0", ["licence_deprecated"]),
        ("llama2", "LicenseRef-hf-llama2", ["licence_not_spdx"]),
        ("https://example.org/terms-of-use", "NOASSERTION", ["licence_not_spdx"]),
        ("https://creativecommons.org/licenses/by/2.0/uk/", "NOASSERTION", ["licence_not_spdx"]),
        ("Research use only", "NOASSERTION", ["licence_not_spdx"]),
    ],
)
def test_licence_values(text, spdx, finding_codes):
    mapping = licence_from_text(text)
    assert mapping.spdx == spdx
    assert [f.code for f in mapping.findings] == finding_codes
    doc = fixture("croissant_images_1_0.json")
    doc["license"] = text
    result = run(doc)
    assert facets(result)["annex_licensing"]["spdxExpression"] == spdx
    accepted(result.event)


def test_several_licences_are_joined_and_flagged():
    doc = fixture("croissant_images_1_0.json")
    doc["license"] = [
        "https://creativecommons.org/licenses/by/4.0/",
        {
            "@type": "CreativeWork",
            "name": "ODbL",
            "url": "https://opendatacommons.org/licenses/odbl/1-0/",
        },
    ]
    result = run(doc)
    assert facets(result)["annex_licensing"]["spdxExpression"] == "CC-BY-4.0 AND ODbL-1.0"
    assert "licence_multiple" in codes(result)
    doc["license"].append("https://example.org/custom")
    assert facets(run(doc))["annex_licensing"]["spdxExpression"] == "NOASSERTION"


# ---- JSON-LD forms and required fields ----------------------------------------------------


def test_prefixed_and_full_iri_keys_read_the_same():
    doc = fixture("croissant_images_1_0.json")
    plain = run(doc).event
    prefixed = {"@context": doc["@context"]}
    for key, value in doc.items():
        if key == "@context":
            continue
        if key in {"name", "description", "license", "url", "inLanguage", "distribution"}:
            prefixed[f"sc:{key}"] = value
        elif key == "conformsTo":
            prefixed["dct:conformsTo"] = value
        elif key == "recordSet":
            prefixed["cr:recordSet"] = value
        else:
            prefixed[key] = value
    assert run(prefixed).event == plain
    full = dict(prefixed)
    full["http://purl.org/dc/terms/conformsTo"] = full.pop("dct:conformsTo")
    full["https://schema.org/name"] = full.pop("sc:name")
    full["@type"] = "https://schema.org/Dataset"
    assert run(full).event == plain
    spec_style = dict(full)
    spec_style["@type"] = "schema.org/Dataset"  # as in the RAI specification's examples
    assert run(spec_style).event == plain


def test_remote_context_string_uses_the_standard_prefixes():
    doc = fixture("croissant_images_1_0.json")
    doc["@context"] = "https://mlcommons.org/croissant/context.jsonld"
    doc["dct:conformsTo"] = doc.pop("conformsTo")
    doc["cr:recordSet"] = doc.pop("recordSet")
    result = run(doc)
    assert facets(result)["annex_content"]["modality"] == "IMAGE"


REQUIRED_1_1 = [
    "@context",
    "@type",
    "conformsTo",
    "name",
    "description",
    "license",
    "url",
    "creator",
    "datePublished",
]


@pytest.mark.parametrize("field", REQUIRED_1_1)
def test_missing_required_field_is_an_error_naming_it(field):
    doc = fixture("croissant_web_text.json")
    del doc[field]
    with pytest.raises(CroissantError) as info:
        run(doc)
    assert info.value.field == field
    assert field in str(info.value)


def test_croissant_1_0_does_not_require_creator_or_date_published():
    doc = fixture("croissant_images_1_0.json")
    assert "creator" not in doc and "datePublished" not in doc
    run(doc)
    doc["conformsTo"] = "http://mlcommons.org/croissant/1.1"
    with pytest.raises(CroissantError, match="creator"):
        run(doc)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"@type": "sc:CreativeWork"}, "@type"),
        ({"conformsTo": "http://mlcommons.org/croissant/0.8"}, "conformsTo"),
        ({"conformsTo": "http://mlcommons.org/croissant/RAI/1.0"}, "conformsTo"),
        ({"name": "  "}, "name"),
        ({"license": []}, "license"),
    ],
)
def test_wrong_required_fields(change, field):
    doc = fixture("croissant_web_text.json")
    doc.update(change)
    with pytest.raises(CroissantError) as info:
        run(doc)
    assert info.value.field == field


@pytest.mark.parametrize("raw", [b"{not json", b"[]", b'"a string"', b"{}" + b"\xff", b"null"])
def test_not_a_json_object(raw):
    with pytest.raises(CroissantError) as info:
        run(raw)
    assert info.value.field == "(document)"


# ---- content details ----------------------------------------------------------------------


def test_modality_from_file_sets_when_no_record_set_and_two_media_are_other():
    doc = fixture("croissant_images_1_0.json")
    del doc["recordSet"]
    assert facets(run(doc))["annex_content"]["modality"] == "IMAGE"  # image/jpeg FileSet
    doc = fixture("croissant_images_1_0.json")
    doc["recordSet"][0]["field"].append(
        {"@type": "cr:Field", "@id": "signs/audio", "dataType": "sc:AudioObject"}
    )
    assert facets(run(doc))["annex_content"]["modality"] == "OTHER"


def test_unknown_modality_leaves_annex_content_out():
    doc = fixture("croissant_images_1_0.json")
    del doc["recordSet"]
    doc["distribution"] = doc["distribution"][:1]
    result = run(doc)
    assert "annex_content" not in facets(result)
    assert "modality_unknown" in codes(result)
    accepted(result.event)


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ("25585843 B", 25585843),
        ("2 kB", 2000),
        ("3 MB", 3_000_000),
        ("1 KiB", 1024),
        ("12", 12),
        ("5 KB", None),
        ("large", None),
    ],
)
def test_content_size_units(size, expected):
    doc = fixture("croissant_images_1_0.json")
    doc["distribution"][0]["contentSize"] = size
    result = run(doc)
    got = facets(result)["annex_content"].get("size")
    assert got == ({"bytes": expected} if expected is not None else None)
    if expected is None:
        assert "size_unknown" in codes(result)


def test_languages_that_are_not_tags_are_dropped():
    doc = fixture("croissant_images_1_0.json")
    doc["inLanguage"] = ["en", "English", "pt-BR", {"@type": "Language", "name": "fr"}]
    result = run(doc)
    assert facets(result)["annex_content"]["languages"] == ["en", "pt-BR", "fr"]
    assert codes(result) == ["language_dropped"]


def test_is_accessible_for_free_false_and_source_category():
    doc = fixture("croissant_images_1_0.json")
    doc["isAccessibleForFree"] = False
    src = facets(run(doc, source_category="PRIVATE_LICENSED"))["annex_source"]
    assert strip(src) == {"sourceCategory": "PRIVATE_LICENSED", "publiclyAvailable": False}


def test_own_identity_is_not_a_symlink():
    result = run(
        fixture("croissant_images_1_0.json"),
        namespace="https://example.org",
        name="datasets/street-signs",
    )
    assert "symlinks" not in facets(result)


def test_same_document_same_event_and_event_id():
    a = croissant_event(
        fixture("croissant_web_text.json"),
        namespace="s3://c",
        name="x",
        producer=PRODUCER,
        event_time=T,
        crawl=CRAWL,
    )
    b = croissant_event(
        copy.deepcopy(fixture("croissant_web_text.json")),
        namespace="s3://c",
        name="x",
        producer=PRODUCER,
        event_time=T,
        crawl=CRAWL,
    )
    assert a == b and event_id(a) == event_id(b)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"event_time": datetime(2026, 1, 1)}, "timezone-aware"),
        ({"producer": "annex"}, "producer"),
        ({"namespace": ""}, "namespace"),
        ({"name": ""}, "name"),
        ({"source_category": "WEB"}, "source_category"),
    ],
)
def test_bad_arguments_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        run(fixture("croissant_images_1_0.json"), **kw)

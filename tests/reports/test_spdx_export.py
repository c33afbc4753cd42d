"""SPDX 3.0.1 export (reports/spdx.py): the AI and Dataset profiles, validated.

The oracle is the official SPDX 3.0.1 JSON Schema (``spdx-json-schema.json``). It is vendored
in ``reports/schemas/spdx-3.0.1/`` from the PyPI wheel lib4sbom 0.10.4 (see the README there)
and applied with jsonschema's Draft202012Validator. The schema does not check two things, so
this file checks them itself:

* every reference in the graph resolves;
* the Dataset profile's SHACL cardinalities hold when the facts are known.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from datetime import UTC, datetime, timedelta, timezone

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from collectors.lineage.croissant import croissant_event
from collectors.lineage.hf_card import hf_card_event
from reports.spdx import (
    NO_ASSERTION_LICENSE,
    SPDX_CONTEXT,
    element_references,
    export_spdx,
    spdx_document,
    spdx_json,
    unresolved_references,
)
from tests.helpers.paths import FIXTURES as SHARED_FIXTURES
from tests.helpers.paths import REPO_ROOT

ROOT = REPO_ROOT
SCHEMA_PATH = ROOT / "reports" / "schemas" / "spdx-3.0.1" / "spdx-json-schema.json"
SCHEMA_SHA256 = "582c64e809d5b3ef9bd0c4de13a32391b47b0284a3e8d199569fb96f649234b1"
FIXTURES = SHARED_FIXTURES / "lineage"
NS = "https://annex.dev/spdx/test-doc"
T = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
PRODUCER = "https://annex.dev/tests/spdx"
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


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    raw = SCHEMA_PATH.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == SCHEMA_SHA256  # the vendored file, unchanged
    return Draft202012Validator(json.loads(raw), format_checker=FormatChecker())


def errors(validator: Draft202012Validator, doc: dict) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(doc)]


def _dataset(event: dict, version: str | None = None, **extra) -> dict:
    ds = event["dataset"]
    return {
        "namespace": ds["namespace"],
        "name": ds["name"],
        "version": version,
        "facets": ds["facets"],
        **extra,
    }


def datasets() -> list[dict]:
    """Four sources: Croissant (web scraping, crawler facts), HF card (family licence),
    HF card (apache, known dates and originator), and one with no facets at all."""
    web = croissant_event(
        (FIXTURES / "croissant_web_text.json").read_bytes(),
        namespace="crawl://examplebot",
        name="2024-q3",
        producer=PRODUCER,
        event_time=T,
        source_category="CRAWLED",
        crawl=CRAWL,
    )
    web["dataset"]["facets"]["annex_personalData"]["measures"] = ["PII_REGEX_REDACTION"]
    odc = hf_card_event(
        (FIXTURES / "hf_odc_by.md").read_text(),
        repo_id="example-org/web",
        revision="0123abc",
        producer=PRODUCER,
        event_time=T,
    )
    news = hf_card_event(
        (FIXTURES / "hf_apache_text.md").read_text(),
        repo_id="example-org/parallel-news",
        revision="9f8e7d",
        producer=PRODUCER,
        event_time=T,
    )
    return [
        _dataset(web),
        _dataset(odc, "0123abc"),
        _dataset(
            news,
            "9f8e7d",
            builtTime=datetime(2024, 5, 1, tzinfo=UTC),
            releaseTime="2024-05-02T10:00:00+02:00",
            originatedBy="Example Org",
        ),
        {"namespace": "s3://corpora", "name": "misc/unlabelled", "version": None, "facets": {}},
    ]


MODEL = {
    "name": "acme-7b",
    "version": "step-100000",
    "downloadLocation": "s3://ckpt/acme-7b/step-100000",
    "builtTime": datetime(2025, 6, 30, 18, 0, tzinfo=UTC),
    "releaseTime": datetime(2025, 7, 15, tzinfo=UTC),
    "originatedBy": "Acme AI",
    "license": "Apache-2.0",
    "typeOfModel": ["decoder-only transformer"],
}


@pytest.fixture(scope="module")
def doc() -> dict:
    return spdx_document(MODEL, datasets(), created=T, namespace=NS)


def by_type(doc: dict, kind: str) -> list[dict]:
    return [n for n in doc["@graph"] if n.get("type") == kind]


def by_id(doc: dict) -> dict[str, dict]:
    return {n.get("spdxId") or n.get("@id"): n for n in doc["@graph"]}


# ---- validity -----------------------------------------------------------------------------


def test_document_is_valid_against_the_official_spdx_3_0_1_json_schema(validator, doc):
    assert errors(validator, doc) == []
    assert json.loads(spdx_json(doc)) == doc  # the bytes say the same


def test_every_reference_resolves(doc):
    refs = element_references(doc)
    assert len(refs) > 20
    assert unresolved_references(doc) == []
    defined = set(by_id(doc))
    assert all(r in defined or r == NO_ASSERTION_LICENSE for r in refs)
    spdx_doc = by_type(doc, "SpdxDocument")[0]
    # the document lists every element it carries, itself and the CreationInfo excepted
    assert set(spdx_doc["element"]) == defined - {spdx_doc["spdxId"], "_:creationinfo"}


def test_a_dangling_reference_is_found(doc):
    broken = copy.deepcopy(doc)
    broken["@graph"] = [n for n in broken["@graph"] if n.get("type") != "dataset_DatasetPackage"]
    missing = unresolved_references(broken)
    assert len(missing) == 4 and all("/dataset/" in m for m in missing)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: by_type(d, "dataset_DatasetPackage")[0].__setitem__(
            "dataset_datasetType", ["texts"]
        ),
        lambda d: by_type(d, "dataset_DatasetPackage")[0].__setitem__("dataset_datasetType", []),
        lambda d: by_type(d, "ai_AIPackage")[0].__setitem__("ai_bogusProperty", "x"),
        lambda d: by_type(d, "Relationship")[0].__setitem__("relationshipType", "trainedWith"),
        lambda d: by_type(d, "Relationship")[0].pop("to"),
        lambda d: by_type(d, "ai_AIPackage")[0].pop("creationInfo"),
        lambda d: by_type(d, "ai_AIPackage")[0].__setitem__("spdxId", "_:blank"),
        lambda d: d["@graph"][0].__setitem__("created", "2026-01-02T03:04:05.678Z"),
        lambda d: d["@graph"][0].__setitem__("created", "2026-01-02T03:04:05+02:00"),
        lambda d: d.__setitem__("@context", "https://spdx.org/rdf/3.0.0/spdx-context.jsonld"),
        lambda d: by_type(d, "dataset_DatasetPackage")[0].__setitem__(
            "dataset_hasSensitivePersonalInformation", "maybe"
        ),
    ],
)
def test_the_schema_is_not_vacuous(validator, doc, mutate):
    bad = copy.deepcopy(doc)
    mutate(bad)
    assert not validator.is_valid(bad)


# ---- content ------------------------------------------------------------------------------


def test_graph_shape(doc):
    assert doc["@context"] == SPDX_CONTEXT
    creation = doc["@graph"][0]
    assert creation["type"] == "CreationInfo" and creation["@id"] == "_:creationinfo"
    assert creation["specVersion"] == "3.0.1"
    assert creation["created"] == "2026-01-02T03:04:05Z"  # UTC, no fraction
    ids = by_id(doc)
    assert ids[creation["createdBy"][0]]["type"] == "SoftwareAgent"
    assert ids[creation["createdUsing"][0]]["type"] == "Tool"
    (spdx_doc,) = by_type(doc, "SpdxDocument")
    assert {"core", "software", "ai", "dataset", "simpleLicensing"} <= set(
        spdx_doc["profileConformance"]
    )
    assert ids[spdx_doc["dataLicense"]]["simplelicensing_licenseExpression"] == "CC0-1.0"
    (model,) = by_type(doc, "ai_AIPackage")
    assert spdx_doc["rootElement"] == [model["spdxId"]]
    assert len(by_type(doc, "dataset_DatasetPackage")) == 4


def test_model_package(doc):
    (model,) = by_type(doc, "ai_AIPackage")
    ids = by_id(doc)
    assert model["name"] == "acme-7b" and model["software_packageVersion"] == "step-100000"
    assert model["software_primaryPurpose"] == "model"
    assert model["builtTime"] == "2025-06-30T18:00:00Z"
    assert model["releaseTime"] == "2025-07-15T00:00:00Z"
    assert ids[model["originatedBy"][0]] == {
        "type": "Organization",
        "spdxId": model["originatedBy"][0],
        "creationInfo": "_:creationinfo",
        "name": "Acme AI",
    }
    assert model["ai_typeOfModel"] == ["decoder-only transformer"]
    assert model["ai_useSensitivePersonalInformation"] == "noAssertion"  # no dataset says yes
    assert "comment" not in model  # all SHACL-required facts known
    (trained,) = [r for r in by_type(doc, "Relationship") if r["relationshipType"] == "trainedOn"]
    assert trained["from"] == model["spdxId"]
    assert sorted(trained["to"]) == sorted(
        d["spdxId"] for d in by_type(doc, "dataset_DatasetPackage")
    )


def _declared(doc: dict, element_id: str) -> list[str]:
    ids = by_id(doc)
    out = []
    for rel in by_type(doc, "Relationship"):
        if rel["relationshipType"] == "hasDeclaredLicense" and rel["from"] == element_id:
            for target in rel["to"]:
                node = ids.get(target)
                out.append(node["simplelicensing_licenseExpression"] if node else target)
    return out


def test_dataset_packages_carry_the_facets(doc):
    packages = {p["name"]: p for p in by_type(doc, "dataset_DatasetPackage")}
    assert set(packages) == {
        "crawl://examplebot/2024-q3",
        "hf://datasets/example-org/web",
        "hf://datasets/example-org/parallel-news",
        "s3://corpora/misc/unlabelled",
    }

    web = packages["crawl://examplebot/2024-q3"]
    assert web["dataset_datasetType"] == ["text"]
    assert web["software_primaryPurpose"] == "data"
    assert web["software_downloadLocation"] == "crawl://examplebot/2024-q3"
    assert web["dataset_hasSensitivePersonalInformation"] == "noAssertion"
    assert web["dataset_anonymizationMethodUsed"] == ["PII_REGEX_REDACTION"]
    process = web["dataset_dataCollectionProcess"]
    for text in (
        "CRAWLED",
        "2.3",
        "ExampleBot/1.0",
        "2024-01-01 to 2024-09-30",
        "robots.txt RESPECTED",
        "TDMRep RESPECTED",
        "ai.txt NOT_CHECKED",
        "1200 documents excluded",
        "NO_CIRCUMVENTION",
    ):
        assert text in process, text
    assert _declared(doc, web["spdxId"]) == ["CC-BY-4.0"]
    assert web["comment"] == "annex: unknown: builtTime, releaseTime, originatedBy"

    odc = packages["hf://datasets/example-org/web"]
    assert odc["software_packageVersion"] == "0123abc"
    assert odc["software_downloadLocation"] == "https://huggingface.co/datasets/example-org/web"
    assert odc["dataset_datasetType"] == ["noAssertion"]  # the card gives no modality
    assert _declared(doc, odc["spdxId"]) == [NO_ASSERTION_LICENSE]

    news = packages["hf://datasets/example-org/parallel-news"]
    assert news["dataset_datasetType"] == ["text"]
    assert news["dataset_datasetSize"] == 105906176
    assert news["builtTime"] == "2024-05-01T00:00:00Z"
    assert news["releaseTime"] == "2024-05-02T08:00:00Z"
    assert by_id(doc)[news["originatedBy"][0]]["name"] == "Example Org"
    assert "comment" not in news  # the four SHACL-required facts are there
    for key in (
        "builtTime",
        "releaseTime",
        "originatedBy",
        "software_downloadLocation",
        "software_primaryPurpose",
        "dataset_datasetType",
    ):
        assert key in news
    assert _declared(doc, news["spdxId"]) == ["Apache-2.0"]

    bare = packages["s3://corpora/misc/unlabelled"]
    assert bare["dataset_datasetType"] == ["noAssertion"]
    assert _declared(doc, bare["spdxId"]) == [NO_ASSERTION_LICENSE]
    assert "expandedLicensing" in by_type(doc, "SpdxDocument")[0]["profileConformance"]


def test_licence_expressions_are_shared_and_the_model_has_its_own(doc):
    expressions = [
        e["simplelicensing_licenseExpression"]
        for e in by_type(doc, "simplelicensing_LicenseExpression")
    ]
    assert sorted(expressions) == ["Apache-2.0", "CC-BY-4.0", "CC0-1.0"]  # Apache-2.0 once
    (model,) = by_type(doc, "ai_AIPackage")
    assert _declared(doc, model["spdxId"]) == ["Apache-2.0"]


def test_sensitive_personal_information_rolls_up_to_the_model():
    items = datasets()
    items[0]["facets"] = dict(items[0]["facets"])
    items[0]["facets"]["annex_personalData"] = {
        "_producer": PRODUCER,
        "_schemaURL": "x",
        "present": "yes",
        "sensitive": "yes",
    }
    d = spdx_document({"name": "m"}, items, created=T, namespace=NS)
    assert by_type(d, "ai_AIPackage")[0]["ai_useSensitivePersonalInformation"] == "yes"
    d = spdx_document(
        {"name": "m", "useSensitivePersonalInformation": "no"}, items, created=T, namespace=NS
    )
    assert by_type(d, "ai_AIPackage")[0]["ai_useSensitivePersonalInformation"] == "no"


def test_minimal_model_without_datasets_is_valid_and_says_what_is_unknown(validator):
    d = spdx_document({"name": "tiny"}, [], created=T, namespace=NS)
    assert errors(validator, d) == []
    assert unresolved_references(d) == []
    (model,) = by_type(d, "ai_AIPackage")
    assert model["comment"] == (
        "annex: unknown: builtTime, releaseTime, originatedBy, software_downloadLocation"
    )
    assert not [r for r in by_type(d, "Relationship") if r["relationshipType"] == "trainedOn"]


# ---- determinism --------------------------------------------------------------------------


def test_same_input_same_bytes_in_any_dataset_order():
    first = spdx_json(spdx_document(MODEL, datasets(), created=T, namespace=NS))
    assert spdx_json(spdx_document(MODEL, datasets(), created=T, namespace=NS)) == first
    shuffled = datasets()
    random.Random(5).shuffle(shuffled)
    assert spdx_json(spdx_document(MODEL, shuffled, created=T, namespace=NS)) == first
    later = spdx_json(spdx_document(MODEL, datasets(), created=T + timedelta(days=1), namespace=NS))
    assert later != first
    assert later.replace(b"2026-01-03T03:04:05Z", b"2026-01-02T03:04:05Z") == first
    assert first.endswith(b"\n")


def test_ids_derive_from_names(doc):
    (model,) = by_type(doc, "ai_AIPackage")
    assert model["spdxId"].startswith(f"{NS}/model/acme-7b-step-100000-")
    other = spdx_document(MODEL, datasets(), created=T, namespace=NS + "/")  # trailing slash
    assert by_type(other, "ai_AIPackage")[0]["spdxId"] == model["spdxId"]
    ids = [n.get("spdxId") for n in doc["@graph"][1:]]
    assert len(ids) == len(set(ids))


# ---- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "items", "kw", "message"),
    [
        ({"name": "m"}, [], {"created": datetime(2026, 1, 1)}, "timezone-aware"),
        ({"name": "m"}, [], {"namespace": "not an iri"}, "namespace"),
        ({"name": "m"}, [], {"namespace": "_:blank"}, "namespace"),
        ({"name": ""}, [], {}, "name"),
        ({"name": "m", "useSensitivePersonalInformation": "maybe"}, [], {}, "useSensitive"),
        ({"name": "m"}, [{"namespace": "s3://a", "name": "b"}] * 2, {}, "given twice"),
        ({"name": "m"}, [{"namespace": "s3://a"}], {}, "namespace and name"),
        ({"name": "m", "builtTime": "yesterday"}, [], {}, "builtTime"),
    ],
)
def test_bad_input_is_refused(model, items, kw, message):
    args = {"created": T, "namespace": NS, **kw}
    with pytest.raises(ValueError, match=message):
        spdx_document(model, items, **args)


def test_offsets_are_converted_to_utc():
    d = spdx_document(
        {"name": "m", "builtTime": "2025-01-01T01:30:00+01:30"},
        [],
        created=datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=-5))),
        namespace=NS,
    )
    assert d["@graph"][0]["created"] == "2026-01-01T17:00:00Z"
    assert by_type(d, "ai_AIPackage")[0]["builtTime"] == "2025-01-01T00:00:00Z"


# ---- from the warehouse -------------------------------------------------------------------


def test_export_from_the_lineage_marts(tmp_path, validator):
    helpers = pytest.importorskip("tests.helpers.lineage_warehouse")
    from annex.settings import WarehouseSettings
    from warehouse import Warehouse

    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5))
    t0 = helpers.T0
    web = croissant_event(
        (FIXTURES / "croissant_web_text.json").read_bytes(),
        namespace="crawl://examplebot",
        name="2024-q3",
        producer=PRODUCER,
        event_time=t0,
        source_category="CRAWLED",
        crawl=CRAWL,
    )
    odc = hf_card_event(
        (FIXTURES / "hf_odc_by.md").read_text(),
        repo_id="example-org/web",
        revision="0123abc",
        producer=PRODUCER,
        event_time=t0,
    )
    run = helpers.run_id("pretrain")
    checkpoint = helpers.dataset(
        "s3://ckpt", "acme-7b/step-100", "step-100", datasetType=helpers.model_facet()
    )
    inputs = [
        helpers.dataset("crawl://examplebot", "2024-q3", "2.1.0"),
        helpers.dataset("hf://datasets", "example-org/web", "0123abc"),
    ]
    events = [
        web,
        odc,
        helpers.run_event(
            run,
            "START",
            t0 + timedelta(hours=1),
            inputs=inputs,
            run_facets={"annex_trainingRun": helpers.training_facet("acme-7b")},
        ),
        helpers.run_event(
            run,
            "COMPLETE",
            t0 + timedelta(hours=5),
            inputs=inputs,
            outputs=[checkpoint],
            run_facets={"annex_trainingRun": helpers.training_facet("acme-7b")},
        ),
    ]
    helpers.load(wh, events)
    import duckdb

    with duckdb.connect(str(wh.path), read_only=True) as con:
        doc = export_spdx(con, "acme-7b", created=T)
        with pytest.raises(LookupError):
            export_spdx(con, "no-such-model", created=T)
    assert errors(validator, doc) == []
    assert unresolved_references(doc) == []
    (model,) = by_type(doc, "ai_AIPackage")
    assert model["name"] == "acme-7b" and model["software_packageVersion"] == "step-100"
    assert model["software_downloadLocation"] == "s3://ckpt/acme-7b/step-100"
    assert model["builtTime"] == (t0 + timedelta(hours=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    packages = {p["name"]: p for p in by_type(doc, "dataset_DatasetPackage")}
    assert set(packages) == {"crawl://examplebot/2024-q3", "hf://datasets/example-org/web"}
    web_pkg = packages["crawl://examplebot/2024-q3"]
    assert web_pkg["software_packageVersion"] == "2.1.0"
    assert "ExampleBot/1.0" in web_pkg["dataset_dataCollectionProcess"]
    assert _declared(doc, web_pkg["spdxId"]) == ["CC-BY-4.0"]
    assert _declared(doc, packages["hf://datasets/example-org/web"]["spdxId"]) == [
        NO_ASSERTION_LICENSE
    ]
    (trained,) = [r for r in by_type(doc, "Relationship") if r["relationshipType"] == "trainedOn"]
    assert sorted(trained["to"]) == sorted(p["spdxId"] for p in packages.values())

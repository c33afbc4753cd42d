"""Hugging Face dataset cards -> OpenLineage DatasetEvents (collectors/lineage/hf_card.py).

The events must pass annex's ingest validator unchanged (``parse_events``, no rejections).
Their standard facets are also checked with jsonschema against the official OpenLineage facet
schemas. The licence mapping follows reference §2.4.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from collectors.lineage.events import event_id
from collectors.lineage.hf_card import (
    HF_NAMESPACE,
    CardError,
    copyright_status,
    hf_card_event,
    import_hf_card,
    map_hf_license,
    parse_front_matter,
    spdx_license_id,
)
from tests.helpers.lineage_import_checks import FIXTURES, T, accepted, schema_valid

PRODUCER = "https://annex.dev/import/hf-card"
REV = "4f1c7a3e9b2d5f608e1a7c3b9d2e4f6a8b0c1d2e"


def card(name: str) -> str:
    return (FIXTURES / name).read_text("utf-8")


def run(readme: str | bytes, **kw):
    args = {"repo_id": "example-org/data", "revision": REV, "producer": PRODUCER, "event_time": T}
    args.update(kw)
    return import_hf_card(readme, **args)


def codes(result) -> list[str]:
    return [f.code for f in result.findings]


def with_license(line: str) -> str:
    return f"---\n{line}\nlanguage: [en]\n---\nA card.\n"


# ---- fixtures end to end ----------------------------------------------------------------


@pytest.mark.parametrize(
    "fixture", ["hf_apache_text.md", "hf_cc_by_images.md", "hf_odc_by.md", "hf_other.md"]
)
def test_every_fixture_is_accepted_by_the_ingest_validator_and_the_official_schemas(fixture):
    result = run(card(fixture))
    stored = accepted(result.event)
    assert stored == result.event
    schema_valid(result.event)
    ds = result.event["dataset"]
    assert (ds["namespace"], ds["name"]) == (HF_NAMESPACE, "example-org/data")
    assert ds["facets"]["version"]["datasetVersion"] == REV
    for facet in ds["facets"].values():
        assert facet["_producer"] == PRODUCER


def test_apache_text_card_maps_to_facets():
    result = run(card("hf_apache_text.md"), repo_id="example-org/parallel-news")
    f = result.event["dataset"]["facets"]
    assert f["annex_licensing"]["spdxExpression"] == "Apache-2.0"
    assert f["annex_licensing"]["hfLicenseId"] == "apache-2.0"
    assert f["annex_licensing"]["copyrightStatus"] == "OPEN_LICENSED"
    assert f["annex_source"]["sourceCategory"] == "PUBLIC_DATASET"
    assert f["annex_source"]["description"] == "source_datasets: original"
    content = f["annex_content"]
    assert content["modality"] == "TEXT"
    assert content["languages"] == ["en", "fr"]
    assert content["size"] == {"bytes": 105906176, "items": 252500}
    assert f["documentation"]["contentType"] == "text/markdown"
    assert f["documentation"]["description"].startswith("# Dataset Card for Example Parallel")
    assert "annex_crawl" not in f and "annex_personalData" not in f  # the card does not say
    assert codes(result) == ["size_category"]
    assert "100K<n<1M" in result.findings[0].message


def test_image_card_with_two_configs_sums_them_and_reports_its_upstream():
    result = run(card("hf_cc_by_images.md"))
    f = result.event["dataset"]["facets"]
    assert f["annex_licensing"]["spdxExpression"] == "CC-BY-4.0"
    assert f["annex_content"]["modality"] == "IMAGE"  # image + class labels
    assert f["annex_content"]["size"] == {"bytes": 73400320 + 7340032, "items": 6600}
    assert "extended|example-org/birds-base" in f["annex_source"]["description"]
    derived = [x for x in result.findings if x.code == "derived_from"]
    assert derived and "example-org/birds-base" in derived[0].message


def test_family_licence_card_is_noassertion_flagged_and_keeps_the_hub_id():
    result = run(card("hf_odc_by.md"))
    f = result.event["dataset"]["facets"]
    assert f["annex_licensing"] == {
        "_producer": PRODUCER,
        "_schemaURL": "https://annex.dev/spec/facets/1-0-0/AnnexLicensingDatasetFacet.json"
        "#/$defs/AnnexLicensingDatasetFacet",
        "spdxExpression": "NOASSERTION",
        "hfLicenseId": "odc-by",
        "copyrightStatus": "UNKNOWN",
    }
    family = [x for x in result.findings if x.code == "licence_family"]
    assert family and "ODC-By-1.0" in family[0].message  # named, not applied
    # no dataset_info: modality unknown, so annex_content (which requires it) is left out
    assert "annex_content" not in f
    assert "modality_unknown" in codes(result)
    assert f["documentation"]["description"].startswith("# Example Web Corpus")


def test_other_licence_with_license_name_is_a_licenseref_and_synthetic_hint_is_raised():
    result = run(card("hf_other.md"))
    f = result.event["dataset"]["facets"]
    assert f["annex_licensing"]["spdxExpression"] == "LicenseRef-hf-example-research-licence"
    assert f["annex_licensing"]["copyrightStatus"] == "UNKNOWN"
    assert f["annex_content"] == {
        "_producer": PRODUCER,
        "_schemaURL": "https://annex.dev/spec/facets/1-0-0/AnnexContentDatasetFacet.json"
        "#/$defs/AnnexContentDatasetFacet",
        "modality": "TEXT",
        "size": {"items": 12000},  # no dataset_size: bytes unknown, left out
    }
    assert {"licence_not_spdx", "machine_generated"} <= set(codes(result))


# ---- licence mapping (reference §2.4) -----------------------------------------------------

LICENCES = [
    # hub id, license_name, SPDX result, finding codes
    ("apache-2.0", None, "Apache-2.0", []),
    ("mit", None, "MIT", []),
    ("cc-by-4.0", None, "CC-BY-4.0", []),
    ("cc-by-nc-sa-4.0", None, "CC-BY-NC-SA-4.0", []),
    ("cc0-1.0", None, "CC0-1.0", []),
    ("bsd-3-clause-clear", None, "BSD-3-Clause-Clear", []),
    ("cdla-permissive-2.0", None, "CDLA-Permissive-2.0", []),
    ("etalab-2.0", None, "etalab-2.0", []),
    ("APACHE-2.0", None, "Apache-2.0", []),  # case-insensitive
    ("gpl-3.0", None, "GPL-3.0", ["licence_deprecated"]),
    ("agpl-3.0", None, "AGPL-3.0", ["licence_deprecated"]),
    ("odc-by", None, "NOASSERTION", ["licence_family"]),
    ("odbl", None, "NOASSERTION", ["licence_family"]),
    ("bsd", None, "NOASSERTION", ["licence_family"]),
    ("cc", None, "NOASSERTION", ["licence_family"]),
    ("gpl", None, "NOASSERTION", ["licence_family"]),
    ("openrail", None, "NOASSERTION", ["licence_family"]),
    ("llama2", None, "LicenseRef-hf-llama2", ["licence_not_spdx"]),
    ("gemma", None, "LicenseRef-hf-gemma", ["licence_not_spdx"]),
    ("bigscience-openrail-m", None, "LicenseRef-hf-bigscience-openrail-m", ["licence_not_spdx"]),
    ("openrail++", None, "LicenseRef-hf-openrail", ["licence_not_spdx"]),
    ("pddl", None, "LicenseRef-hf-pddl", ["licence_not_spdx"]),
    ("other", "Acme Data Licence v2", "LicenseRef-hf-Acme-Data-Licence-v2", ["licence_not_spdx"]),
    ("other", None, "NOASSERTION", ["licence_unknown"]),
    ("unknown", None, "NOASSERTION", ["licence_unknown"]),
]


@pytest.mark.parametrize(("hub_id", "name", "spdx", "finding_codes"), LICENCES)
def test_licence_mapping(hub_id, name, spdx, finding_codes):
    mapping = map_hf_license(hub_id, name)
    assert mapping.spdx == spdx
    assert [f.code for f in mapping.findings] == finding_codes


@pytest.mark.parametrize(("hub_id", "name", "spdx", "finding_codes"), LICENCES)
def test_licence_mapping_in_a_card_is_accepted_by_ingest(hub_id, name, spdx, finding_codes):
    line = f"license: {json.dumps(hub_id)}"
    if name:
        line += f"\nlicense_name: {json.dumps(name)}"
    result = run(with_license(line))
    licensing = accepted(result.event)["dataset"]["facets"]["annex_licensing"]
    assert licensing["spdxExpression"] == spdx
    assert licensing["hfLicenseId"] == hub_id
    assert set(finding_codes) <= set(codes(result))


def test_licence_list_is_joined_with_and_and_noassertion_wins():
    both = run(with_license("license: [mit, apache-2.0]"))
    assert both.event["dataset"]["facets"]["annex_licensing"]["spdxExpression"] == (
        "MIT AND Apache-2.0"
    )
    assert both.event["dataset"]["facets"]["annex_licensing"]["hfLicenseId"] == "mit, apache-2.0"
    assert "licence_multiple" in codes(both)
    mixed = run(with_license("license: [mit, unknown]"))
    assert mixed.event["dataset"]["facets"]["annex_licensing"]["spdxExpression"] == "NOASSERTION"
    accepted(both.event)
    accepted(mixed.event)


def test_missing_licence_is_noassertion_with_a_finding():
    result = run("---\nlanguage: [en]\n---\n")
    licensing = result.event["dataset"]["facets"]["annex_licensing"]
    assert licensing["spdxExpression"] == "NOASSERTION" and licensing["hfLicenseId"] is None
    assert "licence_missing" in codes(result)
    accepted(result.event)


def test_copyright_status_and_spdx_lookup():
    assert copyright_status("CC0-1.0") == "PUBLIC_DOMAIN"
    assert copyright_status("Apache-2.0") == "OPEN_LICENSED"
    assert copyright_status("MIT AND Apache-2.0") == "OPEN_LICENSED"
    assert copyright_status("LicenseRef-hf-llama2") == "UNKNOWN"
    assert copyright_status("NOASSERTION") == "UNKNOWN"
    assert spdx_license_id("cc-by-sa-4.0") == ("CC-BY-SA-4.0", False)
    assert spdx_license_id("not-a-licence") is None


# ---- the card format and YAML safety ------------------------------------------------------


def test_bytes_bom_and_crlf_cards_parse_the_same():
    text = card("hf_apache_text.md")
    plain = run(text).event
    assert run(text.encode("utf-8")).event == plain
    assert run(("\ufeff" + text).encode("utf-8")).event == plain
    crlf = run(text.replace("\n", "\r\n")).event
    assert (
        crlf["dataset"]["facets"]["annex_licensing"]
        == plain["dataset"]["facets"]["annex_licensing"]
    )
    assert crlf["dataset"]["facets"]["annex_content"] == plain["dataset"]["facets"]["annex_content"]


@pytest.mark.parametrize(
    ("readme", "message"),
    [
        ("# no front matter\n", "no YAML front matter"),
        ("---\nlicense: mit\n", "not closed"),
        ("---\n- a\n- b\n---\n", "must be a mapping"),
        ("---\nlicense: [mit\n---\n", "not safe YAML"),
        ("---\nlicense: !!python/object/apply:os.system ['echo pwned']\n---\n", "not safe YAML"),
        ("---\nx: !!python/name:os.system\n---\n", "not safe YAML"),
        ("---\na: &x [1, 2]\nb: *x\n---\n", "not safe YAML"),
        ("---\nlicense: &lic mit\n---\n", "not safe YAML"),
        (b"---\nlicense: \xff\n---\n", "not UTF-8"),
    ],
)
def test_bad_cards_are_refused(readme, message):
    with pytest.raises(CardError, match=message):
        run(readme)


def test_huge_front_matter_is_refused():
    big = "---\nx: '" + "a" * (2 * 1024 * 1024 + 1) + "'\n---\n"
    with pytest.raises(CardError, match="over"):
        parse_front_matter(big)


def test_yaml_dates_and_numbers_do_not_break_the_mapping():
    result = run("---\nlicense: mit\nlanguage: [en]\ndate: 2024-01-01\nversion: 1.0\n---\n")
    assert result.event["dataset"]["facets"]["annex_licensing"]["spdxExpression"] == "MIT"
    accepted(result.event)


@pytest.mark.parametrize("repo_id", ["data", "a/b/c", "../x", "org/", "/repo", "org/re po", ""])
def test_repo_id_must_be_org_slash_repo(repo_id):
    with pytest.raises(CardError, match="repo_id"):
        run(card("hf_odc_by.md"), repo_id=repo_id)


def test_without_revision_there_is_no_version_facet():
    event = run(card("hf_odc_by.md"), revision=None).event
    assert "version" not in event["dataset"]["facets"]
    accepted(event)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"event_time": datetime(2026, 1, 1)}, "timezone-aware"),
        ({"producer": "not a uri"}, "producer"),
        ({"source_category": "PUBLIC"}, "source_category"),
        ({"revision": ""}, "revision"),
    ],
)
def test_bad_arguments_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        run(card("hf_odc_by.md"), **kw)


def test_source_category_and_offsets_are_the_callers():
    event = run(
        card("hf_odc_by.md"),
        source_category="PRIVATE_LICENSED",
        event_time=datetime(2026, 1, 1, 13, 0, tzinfo=timezone(timedelta(hours=1))),
    ).event
    assert event["dataset"]["facets"]["annex_source"]["sourceCategory"] == "PRIVATE_LICENSED"
    assert event["eventTime"] == "2026-01-01T13:00:00+01:00"
    accepted(event)


def test_same_card_same_event_and_event_id():
    a = hf_card_event(
        card("hf_apache_text.md"), repo_id="o/r", revision=REV, producer=PRODUCER, event_time=T
    )
    b = hf_card_event(
        card("hf_apache_text.md"), repo_id="o/r", revision=REV, producer=PRODUCER, event_time=T
    )
    assert a == b and event_id(a) == event_id(b)

"""The fleet and attestation reports rendered from a warehouse with known rows (see
report_scenario.py): the figures worked out by hand appear in the PDF text, gaps are flagged,
the attachments equal the warehouse's data (rerunning the manifest's queries gives the same
bytes), the manifest's hashes match, the file is PDF/A-3b and qpdf finds no error."""

from __future__ import annotations

import hashlib
import json
from datetime import date, datetime
from pathlib import Path

import pytest
from pypdf import PdfReader

from reports.definition import EvidenceQuery, ReportRequest
from reports.evidence import encode_csv, prepare_connection, run_query
from reports.generate import GeneratedReport, generate_report
from reports.period import month_period
from tests.helpers.report_pdf import (
    pdf_attachments,
    pdf_file_relationships,
    pdf_text,
    pdf_xmp,
    qpdf_check,
)
from tests.helpers.report_scenario import build_scenario
from warehouse import Warehouse

pytestmark = pytest.mark.slow

OCTOBER = ReportRequest(period=month_period("2026-10"))
GENERATED = datetime(2026, 11, 2, 8, 0)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    return build_scenario(tmp_path_factory.mktemp("scenario"))


@pytest.fixture(scope="module")
def fleet(scenario: Warehouse, tmp_path_factory: pytest.TempPathFactory) -> GeneratedReport:
    out = tmp_path_factory.mktemp("fleet")
    return generate_report(scenario, "fleet", OCTOBER, out, generated_at=GENERATED)


@pytest.fixture(scope="module")
def attestation(scenario: Warehouse, tmp_path_factory: pytest.TempPathFactory) -> GeneratedReport:
    out = tmp_path_factory.mktemp("attestation")
    return generate_report(scenario, "attestation", OCTOBER, out, generated_at=GENERATED)


def test_fleet_shows_the_scenarios_figures(fleet: GeneratedReport) -> None:
    text = pdf_text(fleet.path)
    assert fleet.path.name == "fleet-2026-10.pdf"
    for figure in (
        "16,704.0",  # capacity GPU-hours
        "11,136.0",  # allocated to workloads
        "1,392.0",  # balloon-reserved (and unavailable)
        "2,784.0",  # free (and team-c's allocation)
        "14,400",  # GPU-hours with telemetry
        "86.2 %",  # telemetry coverage of capacity
        "2,088.0",  # team-b's allocated-but-idle GPU-hours
        "20.9 %",  # idle share of DCGM-allocated: 2,088 / 9,984
        # capacity against September 30's 576 GPU-hours: 24 GPUs an hour in both periods,
        # compared per hour of inventory (not +2,800 % for 29 days against one)
        "Capacity GPU-hours 16,704.0 vs previous: +0.0 % an hour (inventory for 29.0 of 30.0 "
        "days this period, 1.0 of 30.0 days before)",
    ):
        assert figure in text, figure
    assert "team-a" in text and "team-b" in text and "team-c" in text
    assert "Page 3 of" in text
    assert "Period 2026-10" in text


def test_fleet_flags_what_was_not_collected(fleet: GeneratedReport) -> None:
    text = pdf_text(fleet.path)
    assert "GAP: no successful gpubench collection in the period" in text
    assert "GAP: 2 of 31 days have no inventory evidence" in text
    assert text.count("no inventory evidence for this day") == 2
    assert "Telemetry covered under 90 % of capacity GPU-hours on 12 days" in text
    assert "GAP: no benchmark measurement in the period" in text
    assert "the latest inventory holds no GPU nodes: the blast radius is unknown" in text
    # findings, high first, with remediation
    assert text.index("No successful gpubench collection") < text.index(
        "Team team-b left 50% of its allocated GPU-hours idle"
    )
    assert "telemetry collections failed: 1" in text
    assert "prometheus answered 503" in text
    assert "telemetry records rejected: 3" in text
    assert "Check gpu_telemetry_fresh on gpu_telemetry is failing" in text


def test_attestation_report_figures_and_gaps(attestation: GeneratedReport) -> None:
    text = pdf_text(attestation.path)
    for figure in ("11,136.0", "6,264.0", "4,176.0", "696.0", "60.0 %"):
        assert figure in text, figure
    assert "GAP: 696.0 GPU-hours (6.2 %) ran on nodes the inventory did not know" in text
    assert "GAP: 1 jobs hold GPU-hours without a recorded training run" in text
    assert "debug_enabled" in text
    assert "3 nvidia-nras gpu attestations: fail (debug_enabled)" in text
    assert "1 nodes ran workloads without sending any attestation" in text  # n3
    assert "run-1" in text and "run-3" in text
    assert "GPU-a1" in text


@pytest.mark.parametrize("report", ["fleet", "attestation"])
def test_attachments_are_the_warehouse_data_and_match_the_manifest(
    report: str, request: pytest.FixtureRequest, scenario: Warehouse
) -> None:
    generated: GeneratedReport = request.getfixturevalue(report)
    attached = pdf_attachments(generated.path)
    manifest = json.loads(attached.pop("manifest.json"))
    assert manifest == json.loads(json.dumps(generated.manifest))
    assert manifest["generated_at"] == GENERATED.isoformat()
    assert manifest["parameters"] == {"period": "2026-10", "from": "2026-10-01", "to": "2026-10-31"}
    assert manifest["annex_version"]
    assert {t["file"] for t in manifest["tables"]} == set(attached)
    assert "collections.csv" in attached
    assert len(manifest["collections"]) == manifest_rows(manifest, "collections.csv")
    with scenario.reader() as con:
        prepare_connection(con)
        for table in manifest["tables"]:
            data = attached[table["file"]]
            assert hashlib.sha256(data).hexdigest() == table["sha256"]
            # the manifest's query and parameters, rerun on the warehouse, give the same bytes
            query = EvidenceQuery(table["file"][:-4], "", table["query"])
            rerun = run_query(con, query, typed(table["query_parameters"]))
            assert rerun.csv == data, table["file"]
            assert table["rows"] == rerun.rows
    assert encode_csv(generated.evidence.result("collections").table) == attached["collections.csv"]


def test_fleet_collections_attachment_lists_failed_collections(fleet: GeneratedReport) -> None:
    rows = pdf_attachments(fleet.path)["collections.csv"].decode().splitlines()
    assert rows[0].startswith('"collection_id","source","cluster","status"')
    assert any('"telemetry-fail"' in row and '"failed"' in row for row in rows)
    assert len(rows) == 1 + 29 * 2 + 2  # daily kubernetes + telemetry, failed, with rejections


@pytest.mark.parametrize("report", ["fleet", "attestation"])
def test_pdf_a_3b_metadata_and_qpdf_check(report: str, request: pytest.FixtureRequest) -> None:
    generated: GeneratedReport = request.getfixturevalue(report)
    xmp = pdf_xmp(generated.path).decode()
    assert 'pdfaid:part="3"' in xmp
    assert 'pdfaid:conformance="B"' in xmp
    relationships = pdf_file_relationships(generated.path)
    assert set(relationships) == {t["file"] for t in generated.manifest["tables"]} | {
        "manifest.json"
    }
    assert set(relationships.values()) == {"/Data"}
    assert "/OutputIntents" in PdfReader(generated.path).trailer["/Root"]
    check = qpdf_check(generated.path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "No syntax or stream encoding errors found" in check.stdout


def test_same_warehouse_same_pages_and_evidence(
    fleet: GeneratedReport, scenario: Warehouse, tmp_path: Path
) -> None:
    again = generate_report(scenario, "fleet", OCTOBER, tmp_path, generated_at=datetime(2027, 1, 1))
    assert pdf_text(again.path) == pdf_text(fleet.path)
    first, second = pdf_attachments(fleet.path), pdf_attachments(again.path)
    manifest_1, manifest_2 = (
        json.loads(first.pop("manifest.json")),
        json.loads(second.pop("manifest.json")),
    )
    assert first == second
    assert manifest_1.pop("generated_at") != manifest_2.pop("generated_at")
    assert manifest_1 == manifest_2


def test_nothing_outside_the_assets_was_read(fleet: GeneratedReport) -> None:
    assert fleet.refused == ()
    assert all(f.url.startswith("data:") or "/reports/assets/" in f.url for f in fleet.fetches)
    assert any(f.url.endswith("DejaVuSans.ttf") for f in fleet.fetches)


def manifest_rows(manifest: dict, file: str) -> int:
    return next(t["rows"] for t in manifest["tables"] if t["file"] == file)


def typed(parameters: dict) -> dict:
    """The manifest's JSON parameters back to the types the queries were run with."""
    out = {}
    for name, value in parameters.items():
        if name.endswith("_ts"):
            out[name] = datetime.fromisoformat(value)
        elif isinstance(value, str):
            out[name] = date.fromisoformat(value)
        else:
            out[name] = value
    return out

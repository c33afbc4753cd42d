"""The public summary of training content, rendered from hand-made lineage whose figures are
worked out in training_summary_scenario.py: the template's sections and numbering, the
figures of each section, the gaps named by section and the completeness score, attachments
equal to the warehouse data (the manifest's queries rerun give the same bytes) plus the
model's metadata file, PDF/A-3b and qpdf clean; the simulated world's summary carries the
simulated mark."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path

import pytest
from lineage_warehouse_helpers import load
from pypdf import PdfReader
from report_pdf import pdf_attachments, pdf_text, pdf_xmp, qpdf_check
from training_summary_scenario import CONSUMED, MODEL_FILE, student_events

from annex.cli import main
from annex.settings import WarehouseSettings
from reports.definition import EvidenceQuery, ReportRequest
from reports.errors import ReportError
from reports.evidence import prepare_connection, run_query
from reports.generate import GeneratedReport, generate_report
from warehouse import Warehouse

pytestmark = pytest.mark.slow

GENERATED = datetime(2026, 11, 20, 8, 0)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> tuple[Warehouse, Path]:
    directory = tmp_path_factory.mktemp("summary")
    wh = Warehouse(WarehouseSettings(path=directory / "w.duckdb", lock_timeout_seconds=5))
    load(wh, student_events())
    wh.publish()
    models = directory / "models"
    models.mkdir()
    (models / "student.yaml").write_text(MODEL_FILE, encoding="utf-8")
    return wh, models


@pytest.fixture(scope="module")
def summary(
    scenario: tuple[Warehouse, Path], tmp_path_factory: pytest.TempPathFactory
) -> GeneratedReport:
    wh, models = scenario
    out = tmp_path_factory.mktemp("out")
    return generate_report(
        wh,
        "training_summary",
        ReportRequest(model="student"),
        out,
        generated_at=GENERATED,
        models_dir=models,
    )


def test_sections_follow_the_template_numbering(summary: GeneratedReport) -> None:
    text = pdf_text(summary.path)
    assert summary.path.name == "training_summary-student.pdf"
    headings = [
        "1. General information",
        "1.1 Provider identification",
        "1.2 Model identification",
        "1.3 Modalities, overall training data size",
        "2. List of data sources",
        "2.1 Publicly available datasets: Yes",
        "2.2.1 Private datasets licensed from rightsholders: Yes",
        "2.2.2 Other private datasets obtained from third parties: No",
        "2.3 Data crawled and scraped from online sources: Yes",
        "2.4 User data: No",
        "2.5 Synthetic data: Yes",
        "2.6 Other sources of data: No",
        "3. Data processing aspects",
        "3.1 Respect of reservation of rights",
        "3.2 Removal of illegal content",
        "3.3 Other information",
    ]
    positions = [text.index(h, text.index("1. General information Summary")) for h in headings]
    assert positions == sorted(positions)


def test_figures_of_the_scenario(summary: GeneratedReport) -> None:
    text = pdf_text(summary.path)
    # 1.1-1.3 from the metadata file and the lineage
    assert "Example Labs" in text
    assert "student v1" in text
    assert "student/base" in text
    assert "1 billion to 10 trillion tokens" in text
    assert f"{CONSUMED:,}" in text
    assert "03/2024" in text  # latest data-collection date
    assert "de, en, fr" in text  # languages of the sources
    # section 2: each source in its subsection, with licences and licensor
    assert "4,000,000,000,000" in text and "1,000,000,000,000" in text
    assert "CC-BY-SA-4.0" in text and "Northwind News" in text
    # 2.3: the crawler, its period and behaviour, and the top 10 % of 20 domains
    assert "AnnexBot/1.0" in text
    assert "2024-01-01 to 2024-03-31" in text
    assert "site00.example" in text and "site01.example" in text
    assert "site02.example" not in text
    assert "56.8 %" in text and "22.7 %" in text  # 500 / 880, 200 / 880
    assert "top 2 of 20 domains" in text
    # 2.5 generators; 3.1 opt-outs with documents excluded; 3.2 illegal content removed
    assert "teacher-70b" in text
    assert "robotsTxt: RESPECTED" in text and "4,242" in text
    assert "CSAM_HASH_MATCH" in text and "77" in text
    # 2.1: wiki is 1T of 5.051T text tokens (19.8 %), large; synthetic 1B (0.02 %) is not
    assert "19.8 %" in text


def test_gaps_are_named_by_section_and_scored(summary: GeneratedReport) -> None:
    text = pdf_text(summary.path)
    # contact (1.1), EU-market date (1.2: not in the file), a source without a category
    # (2: mystery), Code signatory (3.1): 4 of 23 required fields
    assert "GAP (1.1): no evidence" in text
    assert "GAP (1.2): no evidence. Set eu_market_date" in text
    assert "GAP (2): 1 sources have no annex_source facet" in text
    assert "GAP (3.1): no evidence" in text
    assert text.count("GAP (") == 5  # the four fields and the unknown-sources callout
    assert "19 of 23 required fields" in text
    assert "83 %" in text
    assert "mystery" in text
    # not simulated: the test producer is not the simulator
    assert "Simulated evidence" not in text
    assert "https://annex.dev/tests/lineage" in text


def test_attachments_equal_the_warehouse_data(
    summary: GeneratedReport, scenario: tuple[Warehouse, Path]
) -> None:
    wh, models = scenario
    attached = pdf_attachments(summary.path)
    manifest = json.loads(attached.pop("manifest.json"))
    metadata = attached.pop("model-metadata.yaml")
    assert metadata == (models / "student.yaml").read_bytes()
    assert manifest["model_metadata"]["sha256"] == hashlib.sha256(metadata).hexdigest()
    assert manifest["parameters"] == {"model": "student"}
    assert {t["file"] for t in manifest["tables"]} == set(attached)
    assert {"sources.csv", "crawlers.csv", "top_domains.csv", "measures.csv"} <= set(attached)
    with wh.reader() as con:
        prepare_connection(con)
        for table in manifest["tables"]:
            data = attached[table["file"]]
            assert hashlib.sha256(data).hexdigest() == table["sha256"]
            query = EvidenceQuery(table["file"][:-4], "", table["query"])
            rerun = run_query(con, query, _typed(table["query_parameters"]))
            assert rerun.csv == data, table["file"]
    sources = attached["sources.csv"].decode().splitlines()
    assert len(sources) == 1 + 5  # header and the five leaves, mystery included
    assert sum('"mystery"' in row for row in sources) == 1


def test_pdf_a_3b_and_qpdf_check(summary: GeneratedReport) -> None:
    xmp = pdf_xmp(summary.path).decode()
    assert 'pdfaid:part="3"' in xmp and 'pdfaid:conformance="B"' in xmp
    assert "/OutputIntents" in PdfReader(summary.path).trailer["/Root"]
    check = qpdf_check(summary.path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert summary.refused == ()


def test_simulated_world_shows_the_mark_and_the_missing_metadata(tmp_path: Path) -> None:
    from simulator.lineage import build_events, to_json
    from simulator.world import build_world

    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5))
    load(wh, [json.loads(to_json(e)) for e in build_events(build_world(40, seed=7))])
    wh.publish()
    result = generate_report(
        wh, "training_summary", ReportRequest(model="llama-70b"), tmp_path, models_dir=None
    )
    text = pdf_text(result.path)
    assert "Simulated evidence:" in text
    assert "https://annex.dev/simulator/lineage" in text
    assert "GAP (1.1, 1.2): the model registry has no metadata file for llama-70b" in text
    assert "llama-70b/release-v1" in text  # the checkpoint with the largest scope
    assert "model-metadata.yaml" not in pdf_attachments(result.path)


def test_unknown_model_is_an_error(scenario: tuple[Warehouse, Path], tmp_path: Path) -> None:
    wh, models = scenario
    with pytest.raises(ReportError, match="no model named 'nosuch'"):
        generate_report(
            wh, "training_summary", ReportRequest(model="nosuch"), tmp_path, models_dir=models
        )
    assert not list(tmp_path.iterdir())


def test_report_command_takes_a_model(
    scenario: tuple[Warehouse, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    wh, models = scenario
    config = tmp_path / "annex.toml"
    config.write_text(
        f'[warehouse]\npath = "{wh.path}"\n[models]\ndir = "{models}"\n', encoding="utf-8"
    )
    assert main(["--config", str(config), "report", "training_summary"]) == 7
    assert "give --model NAME" in capsys.readouterr().err
    out = tmp_path / "out"
    argv = ["--config", str(config), "report", "training_summary", "--model", "student"]
    assert main([*argv, "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out / 'training_summary-student.pdf'}" in printed
    assert "model student" in printed


def _typed(parameters: dict) -> dict:
    """The manifest's JSON parameters back to the types the queries ran with."""
    return {
        name: datetime.fromisoformat(value) if name.endswith("_ts") else value
        for name, value in parameters.items()
    }


def test_hostile_lineage_strings_render_as_text(tmp_path: Path) -> None:
    """Dataset names, descriptions and crawler names come from producers: they are text."""
    hostile = '<img src="file:///etc/passwd"><script>alert(1)</script>'
    events = student_events()
    mix = events[0]["inputs"]
    mix[0]["facets"]["annex_crawl"]["crawlerName"] = hostile
    mix[1]["name"] = "wiki<style>@import url(file:///etc/passwd)</style>"
    mix[1]["facets"]["annex_source"]["description"] = hostile
    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5))
    load(wh, events)
    wh.publish()
    result = generate_report(
        wh, "training_summary", ReportRequest(model="student"), tmp_path, models_dir=None
    )
    text = pdf_text(result.path)
    unwrapped = text.replace(" ", "")  # long cells wrap
    assert '<imgsrc="file:///etc/passwd"><script>alert(1)</script>' in unwrapped
    assert "wiki<style>@importurl(file:///etc/passwd)</style>" in unwrapped
    assert result.refused == ()
    assert not any("passwd" in f.url for f in result.fetches)
    assert "root:" not in text

"""The public summary of training content, rendered from hand-made lineage whose figures are
worked out in training_summary_scenario.py: the template's sections and numbering, the
figures of each section, the gaps named by section and the completeness score, attachments
equal to the warehouse data (the manifest's queries rerun give the same bytes) plus the
model's metadata file, PDF/A-3b and qpdf clean; the simulated world's summary carries the
simulated mark."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import zipfile
from datetime import datetime
from pathlib import Path

import pytest
from pypdf import PdfReader

from annex.cli import main
from annex.settings import WarehouseSettings
from reports.definition import EvidenceQuery, ReportRequest
from reports.errors import ReportError
from reports.evidence import prepare_connection, run_query
from reports.generate import GeneratedReport, generate_report
from tests.helpers.lineage_warehouse import load
from tests.helpers.report_pdf import pdf_attachments, pdf_text, pdf_xmp, qpdf_check
from tests.helpers.training_summary_scenario import (
    CONSUMED,
    CRAWL,
    JOB,
    MODEL_FILE,
    NAMESPACE,
    run_id,
    student_events,
)
from warehouse import Warehouse

pytestmark = pytest.mark.slow

SQL = re.compile(r"\b(SELECT|FROM marts|WHERE|GROUP BY|ORDER BY|JOIN)\b")
ABSOLUTE_PATH = re.compile(r"(?<![\w:/.])/(?:[\w.-]+/)+[\w.-]*")
"""A POSIX path from the root (/tmp/x/models/a.yaml), not a URL's path (https://h/p)."""
YAML_LINE = re.compile(r"(?m)^\s*[a-z_]+: \S")
"""A line of a YAML mapping (name: student), as the model metadata file holds."""

GENERATED = datetime(2026, 11, 20, 8, 0)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> tuple[Warehouse, Path]:
    directory = tmp_path_factory.mktemp("summary")
    wh = Warehouse(WarehouseSettings(path=directory / "w.duckdb", lock_timeout_seconds=5))
    load(wh, student_events(small_public_dataset=True))
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
        "Summary version",  # the template's header: version, last update, earlier versions
        "Date of last update",
        "Earlier versions",
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
    body = text.index("are gaps, each marked")  # after the contents page
    positions = [text.index(h, body) for h in headings]
    assert positions == sorted(positions)


def test_figures_of_the_scenario(summary: GeneratedReport) -> None:
    text = pdf_text(summary.path)
    # 1.1-1.3 from the metadata file and the lineage; sizes as the template's bins only
    assert "Example Labs" in text
    assert "not applicable: the provider is established in the EU" in text  # 1.1, Art 54
    assert "student v1" in text
    assert "student/base" in text
    assert "1.3 Training data size (text) 1 billion to 10 trillion tokens" in text
    assert "encyclopaedia articles, forum posts, web pages" in text  # 1.3 types of content
    assert "03/2024" in text  # latest data-collection date
    assert "de, en, fr" in text  # languages of the sources
    # 2.1 by the template's rule: wiki is 1T of the 1.02T tokens of public text datasets
    assert "The rule (template 2.1)" in text
    assert "the denominator is 2 publicly available text datasets" in text
    assert "example/wiki: over 3 % of all publicly available text datasets used" in text
    assert "https://huggingface.co/datasets/example/wiki" in text.replace("/ ", "/")
    assert "(1, each at most 3 %): tiny" in text  # the others, described
    # 2.2.1: licensed, without licensor or agreement
    assert "Licences have been concluded with rightsholders" in text
    # 2.3: the crawler in words, and the top 10 % of 30 domains (reddit.com counted once, for
    # www.reddit.com and old.reddit.com) with shares of the whole 4T-token crawl
    assert "Crawler AnnexBot/1.0: used for collecting training data for AI models" in text
    assert "2024-01-01 to 2024-03-31" in text
    assert "3 of 30 domains: the top 10% of all domains" in text
    assert "1 reddit.com 30.0 % 2 wikipedia.org 20.0 % 3 news.example 15.0 %" in text
    assert "www.reddit.com" not in text.replace("not www.reddit.com", "")
    assert "site03.example" not in text
    # 2.5 generators; 3.1 and 3.2 as sentences, never the codes
    assert "Generated by: teacher-70b" in text
    assert "The crawler honours rights reservations expressed through robots.txt." in text
    assert "The crawler does not check ai.txt." in text
    assert "Paywalls and other access restrictions are not circumvented" in text
    assert "matching against hashes of known child sexual abuse material" in text
    for code in ("RESPECTED", "NO_CIRCUMVENTION", "CSAM_HASH_MATCH", "AI_TRAINING", "robotsTxt"):
        assert code not in text, code


def test_gaps_are_named_by_section_and_scored(summary: GeneratedReport) -> None:
    text = pdf_text(summary.path)
    # contact (1.1), EU-market date (1.2: not in the file), a source without a category
    # (2: mystery), Code signatory (3.1): 4 of 24 required fields
    assert (
        "GAP (1.1): no answer yet. Set contact in the model's metadata file (student.yaml in"
        in (text)
    )
    assert "GAP (1.2): no answer yet. Set eu_market_date" in text
    assert "GAP (2): 1 source has no category" in text
    assert "GAP (3.1): no answer yet" in text
    assert text.count("GAP (") == 5  # the four fields and the unknown-sources callout
    assert "20 of 24 required fields" in text
    assert "83 %" in text
    # not simulated: the test producer is not the simulator
    assert "Simulated evidence" not in text


def test_public_summary_carries_nothing_the_template_does_not_ask_for(
    summary: GeneratedReport, scenario: tuple[Warehouse, Path]
) -> None:
    """Reference eu-ai-act.md §3 and Explanatory Notice paras 19 and 22: the text and every
    attachment of the public PDF hold no namespace, job name, run id, storage URI, SQL, machine
    path, YAML, licensor or agreement id, or exact token count."""
    _, models = scenario
    attached = pdf_attachments(summary.path)
    assert set(attached) == {"top_domains.csv"}  # only what the public may read
    assert attached["top_domains.csv"].decode().splitlines() == [
        '"rank","domain","share_of_crawl"',
        '1,"reddit.com",0.3',
        '2,"wikipedia.org",0.2',
        '3,"news.example",0.15',
    ]
    run_ids = [r["run_id"] for r in summary.evidence.records("runs")]
    assert len(run_ids) == 1  # the evidence has them: the public document must not
    documents = {"text": pdf_text(summary.path)} | {
        name: data.decode() for name, data in attached.items()
    }
    forbidden = [
        NAMESPACE,
        JOB,
        *run_ids,
        run_id("mix"),
        "s3://",
        "hf://",
        "Northwind News",
        "LicenseRef-news",
        f"{CRAWL:,}",
        f"{CONSUMED:,}",
        str(CONSUMED),
        "model-metadata.yaml",
        "manifest.json",
        str(models),
    ]
    for name, body in documents.items():
        for word in forbidden:
            assert word not in body, (name, word)
        assert not SQL.search(body), (name, SQL.search(body))
        assert not ABSOLUTE_PATH.search(body), (name, ABSOLUTE_PATH.search(body))
        assert not YAML_LINE.search(body), (name, YAML_LINE.search(body))


def test_the_evidence_bundle_holds_what_auditors_need(
    summary: GeneratedReport, scenario: tuple[Warehouse, Path], tmp_path: Path
) -> None:
    """The non-public bundle: manifest, every query's CSV (rerunning its query gives the same
    bytes) and the metadata file; the same evidence gives the same bundle, whose SHA-256 the
    public PDF names."""
    wh, models = scenario
    assert summary.evidence_bundle is not None
    data = summary.evidence_bundle.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    assert sha == summary.evidence_bundle_sha256
    assert sha in pdf_text(summary.path).replace(" ", "")
    with zipfile.ZipFile(io.BytesIO(data)) as bundle:
        files = {name: bundle.read(name) for name in bundle.namelist()}
    manifest = json.loads(files.pop("manifest.json"))
    metadata = files.pop("model-metadata.yaml")
    assert metadata == (models / "student.yaml").read_bytes()
    assert manifest["model_metadata"] == {
        "file": "model-metadata.yaml",
        "source": "student.yaml",  # relative to [models] dir, never a machine path
        "sha256": hashlib.sha256(metadata).hexdigest(),
    }
    assert "generated_at" not in manifest  # the bundle is the same for the same evidence
    assert manifest["parameters"] == {"model": "student"}
    assert {t["file"] for t in manifest["tables"]} == set(files)
    assert {"runs.csv", "sources.csv", "crawled_domains.csv", "top_domains.csv"} <= set(files)
    with wh.reader() as con:
        prepare_connection(con)
        for table in manifest["tables"]:
            assert hashlib.sha256(files[table["file"]]).hexdigest() == table["sha256"]
            query = EvidenceQuery(table["file"][:-4], "", table["query"])
            rerun = run_query(con, query, _typed(table["query_parameters"]))
            assert rerun.csv == files[table["file"]], table["file"]
    assert sum('"mystery"' in row for row in files["sources.csv"].decode().splitlines()) == 1
    # every crawled host counted under its top- plus second-level domain (footnote 16)
    crawled = {
        row["domain"]: row
        for row in csv.DictReader(io.StringIO(files["crawled_domains.csv"].decode()))
    }
    assert len(crawled) == 30
    assert float(crawled["reddit.com"]["tokens"]) == 1_200 * 10**9  # www. and old. together
    assert float(crawled["bbc.co.uk"]["tokens"]) == 50 * 10**9  # www. and https://news.
    assert float(crawled["reddit.com"]["share_of_crawl"]) == 0.3  # of the whole 4T crawl
    assert not any(d == "co.uk" or d.startswith("www.") for d in crawled)
    # another run on the same evidence, later, into --evidence DIR: the same bundle
    again = generate_report(
        wh,
        "training_summary",
        ReportRequest(model="student"),
        tmp_path / "out",
        generated_at=datetime(2026, 12, 1),
        models_dir=models,
        evidence_dir=tmp_path / "evidence",
    )
    assert again.evidence_bundle == tmp_path / "evidence" / "training_summary-student.evidence.zip"
    assert again.evidence_bundle.read_bytes() == data


def test_top_domains_for_an_sme_and_when_the_rule_cannot_be_applied(
    scenario: tuple[Warehouse, Path], tmp_path: Path
) -> None:
    """Template 2.3: an SME lists the top 5 % or 1,000 domains, whichever is lower (2 of 30);
    when the crawlers list only part of their domains the number of all domains is unknown, so
    the rule cannot be applied: a gap, not a filled field."""
    wh, _ = scenario
    models = tmp_path / "models"
    models.mkdir()
    (models / "student.yaml").write_text(MODEL_FILE + "sme: true\n", encoding="utf-8")
    sme = generate_report(
        wh, "training_summary", ReportRequest(model="student"), tmp_path, models_dir=models
    )
    # the document's own pages (a later version begins with what changed since the earlier)
    text = pdf_text(sme.path).split("Contents", 1)[1]
    assert "2 of 30 domains: the top 5% or 1,000 domains, whichever is lower" in text
    assert "2 wikipedia.org 20.0 %" in text and "news.example" not in text
    assert pdf_attachments(sme.path)["top_domains.csv"].decode().count("\n") == 1 + 2

    events = student_events(small_public_dataset=True)
    crawl = events[0]["inputs"][0]["facets"]["annex_content"]
    crawl["domainStats"]["topN"] = crawl["domainStats"]["topN"][:3]  # 2.4T of the 4T
    partial = Warehouse(WarehouseSettings(path=tmp_path / "p.duckdb", lock_timeout_seconds=5))
    load(partial, events)
    partial.publish()
    result = generate_report(
        partial, "training_summary", ReportRequest(model="student"), tmp_path, models_dir=models
    )
    text = pdf_text(result.path)
    assert "GAP (2.3): the rule cannot be applied: the crawlers' domain lists cover 60 %" in text
    assert "GAP (2.3): no answer yet. Have the crawlers' records list every domain crawled" in text
    assert "19 of 24 required fields" in text  # the top-domain field no longer counts


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

"""The technical documentation report (Annex XI / XII and the model documentation form) in its
three editions, rendered from the hand-worked scenario of model_documentation_scenario.py: the
figures of each edition, the gaps named by the article or annex point requiring them, the
completeness score, the downstream edition without compute or energy (pages and attachments),
attachments equal to the warehouse data and the manifest's hashes, PDF/A-3b and qpdf clean; the
metadata file's new ``documentation`` answers validated strictly."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from pathlib import Path

import pytest
from pypdf import PdfReader

from annex.cli import main
from annex.errors import ConfigError
from annex.model_registry import parse_model
from reports.definition import EvidenceQuery, ReportRequest
from reports.errors import ReportError
from reports.evidence import prepare_connection, run_query
from reports.generate import GeneratedReport, generate_report
from reports.numbers import flop, mwh, ratio
from tests.helpers.model_documentation_scenario import (
    ARCHITECTURE_FLOP,
    ENERGY_MWH,
    HARDWARE_FLOP,
    build_documentation_scenario,
)
from tests.helpers.report_pdf import pdf_attachments, pdf_text, pdf_xmp, qpdf_check
from warehouse import Warehouse

pytestmark = pytest.mark.slow

GENERATED = datetime(2026, 11, 20, 8, 0)
EDITIONS = ("ai_office", "national_authority", "downstream")
PHYSICAL_MAX_FLOP = 80 * 3600 * 989.4e12  # 80 GPU-hours at the H100's dense bf16 peak


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> tuple[Warehouse, Path]:
    return build_documentation_scenario(tmp_path_factory.mktemp("documentation"))


@pytest.fixture(scope="module")
def editions(
    scenario: tuple[Warehouse, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, GeneratedReport]:
    wh, models = scenario
    out = tmp_path_factory.mktemp("out")
    return {
        edition: generate_report(
            wh,
            "model_documentation",
            ReportRequest(model="student", edition=edition),
            out,
            generated_at=GENERATED,
            models_dir=models,
        )
        for edition in EDITIONS
    }


def test_scenario_figures_are_the_hand_computed_ones() -> None:
    assert flop(ARCHITECTURE_FLOP) == "1.26 × 10²⁵"
    assert flop(HARDWARE_FLOP) == "9.97 × 10¹⁹"
    assert ARCHITECTURE_FLOP > PHYSICAL_MAX_FLOP  # the finding: hardware is of record
    assert mwh(ENERGY_MWH) == "0.101"


def test_ai_office_edition_fills_annex_xi_from_the_warehouse_and_the_file(
    editions: dict[str, GeneratedReport],
) -> None:
    report = editions["ai_office"]
    assert report.path.name == "model_documentation-student-ai_office.pdf"
    text = pdf_text(report.path)
    assert "student: AI Office edition" in text
    # section 1 and the MDF general fields from the metadata file
    assert "Example Labs" in text and "ai-act@example.com" in text
    assert "API, weights download" in text and "131,072 tokens" in text
    # 2(c) from the lineage: modality, data points, languages, curation measures
    assert "3.00 × 10¹² tokens (text)" in text
    assert "languages de, en, fr; latest collection 2024-03-31" in text
    assert "Illegal content: CSAM hash match (1 dataset)" in text
    # MDF 2: parameters to at least two significant figures, one number format
    assert "7.00 × 10¹¹ in total" in text
    # 2(d) for the AI Office: the exact compute of record with its band (the hardware figure:
    # 6·N·D is above the run's physical maximum), both methods, their ratio, precise time
    band = f"{flop(HARDWARE_FLOP * 0.5)} to {flop(HARDWARE_FLOP * 1.5)}"
    assert f"Amount of training compute {flop(HARDWARE_FLOP)} FLOP (band {band})" in text
    assert f"hardware / architecture = {ratio(HARDWARE_FLOP / ARCHITECTURE_FLOP)}" in text
    assert "differ by" not in text
    assert "0.42 wall-clock days; 3.33 hardware-days (80.0 GPU-hours observed)" in text
    # one GPU model spelling everywhere (docs/naming.md): the canonical model, not the GFD label
    assert "H100-SXM5-80GB: 80.0 GPU-hours in 1 run" in text
    assert "pool h100-pool (H100-SXM5-80GB): 1 node, 8 GPUs" in text
    # 2(e): the energy of record with its measured share and both methods
    assert "0.101 MWh (band 0.0605 to 0.141 MWh), of which 0 % measured" in text
    assert "GPU-hours × TDP × 1 × server overhead 1.5 × PUE 1.2" in text
    # below 10^25: no systemic-risk section, no notification; 10^23 not crossed either
    assert "below 10²⁵ FLOP: no systemic-risk presumption" in text
    assert "Systemic-risk models: Annex XI section 2 Required" not in text
    assert "notification due" not in text
    # attestation coverage of the training GPU-hours: none attested
    assert "80.0 0.0 0.0 80.0 0.0 0.0 %" in text
    # sources in words; tables named only in the appendix
    body = text[: text.index("Appendix: method and attachments Method")]
    assert "marts." not in body and "model metadata file" in body
    assert "e+" not in text.replace("Simulated", "")
    assert "Simulated evidence" not in text


def test_gaps_are_listed_up_front_with_their_article_and_scored(
    editions: dict[str, GeneratedReport],
) -> None:
    text = pdf_text(editions["ai_office"].path)
    # 13 gaps of 43 required fields: the EU-market date, 11 documentation answers the file
    # leaves out and provenance (the source "mystery" has no category); no systemic section
    assert "30 of 43 required fields are filled" in text and "70 %" in text
    up_front = text[
        text.index("1. Completeness and gaps 70 %") : text.index("2. General information Required")
    ]
    for ref, field in [
        ("MDF 1", "Date placed on the EU market"),
        ("MDF 1", "Authenticity evidence"),
        ("Annex XI 2(b); MDF 5", "Training methods, key design choices"),
        ("Annex XI 2(c); MDF 6", "Provenance of the data sources"),
        ("MDF 8", "Benchmarked inference compute"),
    ]:
        assert f"{ref} {field}" in up_front
    assert "State the sourceCategory (annex_source) of 1 of 5 sources: mystery" in up_front
    # in their sections the same gaps are marked with what requires them
    assert "GAP (Annex XI 2(b); MDF 5): no evidence. Set documentation.training_methods" in text
    assert "(student.yaml in the model registry)" in text
    body = text[text.index("1. Completeness and gaps 70 %") :]  # the cover is generate.py's
    assert "/" + "models/student.yaml" not in body  # no machine path
    assert text.count("GAP (") == 13


def test_national_authority_edition_answers_training_time_with_the_range_bin(
    editions: dict[str, GeneratedReport],
) -> None:
    text = pdf_text(editions["national_authority"].path)
    assert "national competent authority edition" in text
    assert "Training time (range) <1 month" in text
    assert (
        "Amount of training compute ~10¹⁹ FLOP (order of magnitude: between 10¹⁹ and 10²⁰" in text
    )
    assert "wall-clock days" not in text.replace("precise wall-clock", "")
    assert flop(HARDWARE_FLOP) not in text and "hardware-days (" not in text
    assert "0.101 MWh" in text  # MDF 8 asks the same energy of both authorities
    assert "No training run of this model" not in text  # it reads no run list: not a gap
    assert "Checkpoint Version Stage Created student/base" in text
    assert "30 of 43 required fields" in text
    attached = pdf_attachments(editions["national_authority"].path)
    assert "model_compute_range.csv" in attached
    assert not {"model_compute.csv", "training_runs.csv", "hardware.csv"} & set(attached)
    tables = b"".join(data for name, data in attached.items() if name.endswith(".csv"))
    assert b"cumulative_compute_flop" not in tables and b"wall_clock" not in tables


def _fields(report: GeneratedReport) -> dict[tuple[str, str], str | None]:
    from reports.model_documentation import build

    return {(f.part, f.label): f.value for f in build(report.evidence)["fields"]}


def test_the_authority_editions_differ_exactly_where_the_form_says(
    editions: dict[str, GeneratedReport],
) -> None:
    """MDF 7 asks the AI Office and national authorities different answers for the amount of
    compute and for training time; every other field is the same in both editions."""
    office, national = _fields(editions["ai_office"]), _fields(editions["national_authority"])
    differ = {
        key for key in office.keys() | national.keys() if office.get(key) != national.get(key)
    }
    assert differ == {
        ("compute", "Amount of training compute"),
        ("compute", "Training time (precise)"),
        ("compute", "Training time (range)"),
        ("compute", "Hardware used (GPU models)"),
    }
    assert ("compute", "Training time (range)") not in office
    assert ("compute", "Training time (precise)") not in national
    # hardware: the AI Office gets the GPU-hours per GPU model, which would give the national
    # authority the precise hardware-days the form asks only of the AI Office
    assert national[("compute", "Hardware used (GPU models)")] == "H100-SXM5-80GB"
    assert office[("compute", "Amount of training compute")].startswith(flop(HARDWARE_FLOP))
    assert national[("compute", "Amount of training compute")].startswith("~10¹⁹ FLOP")


def test_dates_that_contradict_each_other_are_findings(tmp_path: Path) -> None:
    from tests.helpers.model_documentation_scenario import MODEL_FILE

    model_file = MODEL_FILE.replace("versions: [v1]", "versions: [base]").replace(
        "release_date: 2026-10-01", "release_date: 2025-05-20\neu_market_date: 2025-05-01"
    )
    wh, models = build_documentation_scenario(tmp_path, model_file=model_file)
    report = generate_report(
        wh,
        "model_documentation",
        ReportRequest(model="student", edition="ai_office"),
        tmp_path / "out",
        models_dir=models,
    )
    text = pdf_text(report.path)
    with wh.reader() as con:
        (made,) = con.execute(
            "SELECT created_at FROM marts.lineage_models WHERE name = 'student/base'"
        ).fetchone()
    assert made.date().isoformat() > "2025-05-20"
    assert (
        "Finding (dates): The release date 2025-05-20 precedes the checkpoint it names, "
        f"student/base, made on {made.date().isoformat()}" in text
    )
    assert (
        "The date placed on the EU market, 2025-05-01, precedes the release date 2025-05-20" in text
    )


def test_downstream_edition_holds_annex_xii_without_compute_or_energy(
    editions: dict[str, GeneratedReport],
) -> None:
    report = editions["downstream"]
    text = pdf_text(report.path)
    assert "downstream provider edition" in text
    assert "Annex XII 1(a); MDF 4 Intended tasks multilingual chat" in text
    assert "Annex XII 2(b); MDF 2 Maximum input size (context window) 131,072 tokens" in text
    assert "GAP (Annex XII 1(e)): no evidence" in text  # software versions
    assert "Annex XII 2(c); MDF 6 Provenance of the data sources GAP" in text
    # 26 required fields: 8 general, 14 use and integration, 4 data; 8 gaps
    assert "18 of 26 required fields are filled" in text
    for figure in ("FLOP", "MWh", "GPU-hours", "energy", "10²⁵", "10¹⁹", "0.101", "h100-pool"):
        assert figure not in text, figure
    attached = pdf_attachments(report.path)
    assert "model-metadata.yaml" not in attached  # it holds compute and alert settings
    assert set(attached) == {
        "collections.csv", "checkpoints.csv", "size.csv", "sources.csv", "measures.csv",
        "producers.csv", "manifest.json",
    }  # fmt: skip
    for name, data in attached.items():
        lowered = data.decode().lower()
        for word in ("flop", "mwh", "joules", "energy", "gpu_hours"):
            assert word not in lowered, (name, word)
    manifest = json.loads(attached["manifest.json"])
    assert manifest["model_metadata"]["file"] is None
    assert manifest["parameters"] == {"model": "student", "edition": "downstream"}


def test_attachments_equal_the_warehouse_data_and_the_manifest_hashes(
    editions: dict[str, GeneratedReport], scenario: tuple[Warehouse, Path]
) -> None:
    wh, models = scenario
    attached = pdf_attachments(editions["ai_office"].path)
    manifest = json.loads(attached.pop("manifest.json"))
    metadata = attached.pop("model-metadata.yaml")
    assert metadata == (models / "student.yaml").read_bytes()
    assert manifest["model_metadata"]["sha256"] == hashlib.sha256(metadata).hexdigest()
    assert manifest["parameters"] == {"model": "student", "edition": "ai_office"}
    assert {t["file"] for t in manifest["tables"]} == set(attached)
    assert {
        "model_compute.csv",
        "thresholds.csv",
        "stages.csv",
        "hardware.csv",
        "node_pools.csv",
    } < set(attached)
    with wh.reader() as con:
        prepare_connection(con)
        for table in manifest["tables"]:
            data = attached[table["file"]]
            assert hashlib.sha256(data).hexdigest() == table["sha256"]
            query = EvidenceQuery(table["file"][:-4], "", table["query"])
            rerun = run_query(con, query, _typed(table["query_parameters"]))
            assert rerun.csv == data, table["file"]
        (compute,) = con.execute(
            "SELECT cumulative_compute_flop, gpu_hours FROM marts.model_compute "
            "WHERE model_name = 'student'"
        ).fetchall()
    assert compute == (pytest.approx(HARDWARE_FLOP), 80.0)
    pools = attached["node_pools.csv"].decode().splitlines()
    assert pools[1].startswith('"c","h100-pool","H100-SXM5-80GB",1,0,8,80,0,0,80,0')


def test_pdf_a_3b_and_qpdf_check(editions: dict[str, GeneratedReport]) -> None:
    for report in editions.values():
        xmp = pdf_xmp(report.path).decode()
        assert 'pdfaid:part="3"' in xmp and 'pdfaid:conformance="B"' in xmp
        assert "/OutputIntents" in PdfReader(report.path).trailer["/Root"]
        check = qpdf_check(report.path)
        assert check.returncode == 0, check.stdout + check.stderr
        assert report.refused == ()


def test_a_model_without_training_evidence_is_gaps_not_zeros(
    scenario: tuple[Warehouse, Path], tmp_path: Path
) -> None:
    """planned-lm has a metadata file but no run: marts.model_compute holds a zero row for
    it, which is no evidence; its compute fields and its classification are gaps."""
    wh, models = scenario
    report = generate_report(
        wh,
        "model_documentation",
        ReportRequest(model="planned-lm", edition="ai_office"),
        tmp_path,
        models_dir=models,
    )
    text = pdf_text(report.path)
    assert "6 of 43 required fields are filled" in text
    assert "GAP (Art 51): no compute figure for this model" in text
    assert "GAP (Annex XI 2(d); MDF 7): no evidence. Run `annex compute`" in text
    assert "GAP (Annex XI 2(e); MDF 8): no evidence" in text
    assert "Systemic-risk models" not in text
    assert "0 FLOP" not in text


def test_editions_are_checked(scenario: tuple[Warehouse, Path], tmp_path: Path) -> None:
    wh, models = scenario
    with pytest.raises(ReportError, match="has no edition 'press'"):
        generate_report(
            wh,
            "model_documentation",
            ReportRequest(model="student", edition="press"),
            tmp_path,
            models_dir=models,
        )
    with pytest.raises(ReportError, match="has one edition"):
        generate_report(
            wh,
            "training_summary",
            ReportRequest(model="student", edition="downstream"),
            tmp_path,
            models_dir=models,
        )
    assert not list(tmp_path.iterdir())


def test_report_command_takes_an_edition(
    scenario: tuple[Warehouse, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    wh, models = scenario
    config = tmp_path / "annex.toml"
    config.write_text(
        f'[warehouse]\npath = "{wh.path}"\n[models]\ndir = "{models}"\n', encoding="utf-8"
    )
    out = tmp_path / "out"
    argv = ["--config", str(config), "report", "model_documentation", "--model", "student"]
    assert main([*argv, "--edition", "downstream", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out / 'model_documentation-student-downstream.pdf'}" in printed
    assert "model student, downstream edition" in printed
    assert main([*argv, "--output", str(out)]) == 0  # the AI Office edition by default
    assert (out / "model_documentation-student-ai_office.pdf").exists()
    with pytest.raises(SystemExit):
        main([*argv, "--edition", "press"])


def _model(documentation: object) -> dict:
    return {
        "name": "m",
        "provider": "Example Labs",
        "parameters": 1000,
        "architecture": "dense",
        "licence": "MIT",
        "modalities": {"input": ["text"], "output": ["text"]},
        "documentation": documentation,
    }


def test_documentation_answers_are_validated_strictly() -> None:
    path = Path("m.yaml")
    entry = parse_model(
        _model({"intended_tasks": " chat ", "distribution_channels": ["API"], "context_length": 8}),
        path,
    )
    assert entry.documentation.intended_tasks == "chat"
    assert entry.documentation.distribution_channels == ("API",)
    assert entry.documentation.context_length == 8
    assert entry.documentation.evaluation is None
    assert parse_model(_model(None), path).documentation.intended_tasks is None
    with pytest.raises(
        ConfigError, match=re.escape("unknown field documentation.intended_task")
    ) as err:
        parse_model(_model({"intended_task": "chat"}), path)
    assert "did you mean intended_tasks" in str(err.value.hint)
    with pytest.raises(
        ConfigError, match=re.escape("documentation.context_length = -1 must be a positive")
    ):
        parse_model(_model({"context_length": -1}), path)
    with pytest.raises(
        ConfigError, match=re.escape("documentation.evaluation = 42 must be a string")
    ):
        parse_model(_model({"evaluation": 42}), path)
    with pytest.raises(
        ConfigError, match=re.escape("documentation.software_versions = 'x' must be a list")
    ):
        parse_model(_model({"software_versions": "x"}), path)
    with pytest.raises(ConfigError, match=re.escape("documentation = ['chat'] must be a mapping")):
        parse_model(_model(["chat"]), path)


def test_the_simulated_models_documentation_loads() -> None:
    from annex.cli.demo import SIMULATED_MODELS
    from annex.model_registry import load_registry

    model = load_registry(SIMULATED_MODELS).get("annex-lm-400b")
    assert model.documentation.context_length == 131072
    assert model.documentation.adversarial_testing is None  # left out: the demo shows a gap


def _typed(parameters: dict) -> dict:
    """The manifest's JSON parameters back to the types the queries ran with."""
    return {
        name: datetime.fromisoformat(value) if name.endswith("_ts") else value
        for name, value in parameters.items()
    }


def test_simulated_world_shows_the_mark_and_the_files_answers(tmp_path: Path) -> None:
    """The demo's model: lineage from the simulator (marked simulated), its metadata file's
    documentation answers, and no compute refreshed here: the compute fields are gaps."""
    from annex.cli.demo import SIMULATED_MODELS
    from annex.settings import WarehouseSettings
    from simulator.lineage import build_events, to_json
    from simulator.world import build_world
    from tests.helpers.lineage_warehouse import load

    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5))
    load(wh, [json.loads(to_json(e)) for e in build_events(build_world(40, seed=7))])
    wh.publish()
    result = generate_report(
        wh,
        "model_documentation",
        ReportRequest(model="annex-lm-400b", edition="ai_office"),
        tmp_path,
        models_dir=SIMULATED_MODELS,
    )
    text = pdf_text(result.path)
    assert "Simulated evidence:" in text
    assert "https://annex.dev/simulator/lineage" in text
    assert "4.00 × 10¹¹ in total; 8.00 × 10¹⁰ active per token (mixture of experts" in text
    assert "131,072 tokens" in text and "8,192 tokens" in text
    assert "GAP (Annex XI 2(d); MDF 7): no evidence" in text
    assert "model-metadata.yaml" in pdf_attachments(result.path)


def test_hostile_strings_render_as_text(tmp_path: Path) -> None:
    """Dataset names come from producers and answers from a file anyone may edit: text."""
    from tests.helpers.model_documentation_scenario import MODEL_FILE
    from tests.helpers.training_summary_scenario import student_events

    hostile = '<img src="file:///etc/passwd"><script>alert(1)</script>'
    events = student_events()
    events[0]["inputs"][4]["name"] = "mystery<style>@import url(file:///etc/passwd)</style>"
    model_file = MODEL_FILE.replace(
        "intended_tasks: multilingual chat and summarisation", f"intended_tasks: '{hostile}'"
    )
    wh, models = build_documentation_scenario(tmp_path, model_file=model_file, events=events)
    result = generate_report(
        wh,
        "model_documentation",
        ReportRequest(model="student", edition="downstream"),
        tmp_path,
        models_dir=models,
    )
    unwrapped = pdf_text(result.path).replace(" ", "")
    assert '<imgsrc="file:///etc/passwd"><script>alert(1)</script>' in unwrapped
    assert "mystery<style>@importurl(file:///etc/passwd)</style>" in unwrapped
    assert result.refused == ()
    assert not any("passwd" in f.url for f in result.fetches)
    assert "root:" not in unwrapped


def test_the_demo_renders_every_edition_for_its_model(
    scenario: tuple[Warehouse, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from annex.settings import load_settings
    from services.reports import render_demo_reports

    wh, models = scenario
    config = tmp_path / "annex.toml"
    config.write_text(
        f'[warehouse]\npath = "{wh.path}"\n[models]\ndir = "{models}"\n', encoding="utf-8"
    )
    paths = render_demo_reports(load_settings(config), tmp_path, models=["student"])
    names = {p.name for p in paths}
    assert {f"model_documentation-student-{edition}.pdf" for edition in EDITIONS} <= names
    assert "training_summary-student.pdf" in names
    assert "report: " + str(
        tmp_path / "reports" / "model_documentation-student-downstream.pdf"
    ) in (capsys.readouterr().out)


def test_a_designated_systemic_risk_model_gets_annex_xi_section_2(
    scenario: tuple[Warehouse, Path], tmp_path: Path
) -> None:
    """Annex XI section 2 applies to a GPAI model with systemic risk: presumed by compute, or
    designated (Art 52(4)), which the provider states in the model's file; the section's
    fields the file does not answer are gaps with the point requiring them."""
    wh, models = scenario
    designated = tmp_path / "models"
    designated.mkdir()
    for file in models.glob("*.yaml"):
        text = file.read_text(encoding="utf-8")
        if file.name == "student.yaml":
            text += "systemic_risk: true\n"
        (designated / file.name).write_text(text, encoding="utf-8")
    report = generate_report(
        wh,
        "model_documentation",
        ReportRequest(model="student", edition="ai_office"),
        tmp_path / "out",
        generated_at=GENERATED,
        models_dir=designated,
    )
    text = pdf_text(report.path)
    assert "Systemic-risk models: Annex XI section 2 Required by" in text
    assert "GAP (Annex XI section 2(3)): no evidence" in text
    downstream = generate_report(
        wh,
        "model_documentation",
        ReportRequest(model="student", edition="downstream"),
        tmp_path / "out",
        generated_at=GENERATED,
        models_dir=designated,
    )
    assert "Annex XI section 2" not in pdf_text(downstream.path)

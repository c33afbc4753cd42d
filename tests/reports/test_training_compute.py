"""The training compute and Article 51 report, rendered from the hand-computed scenario of
tests/warehouse/models/test_compute.py (imported, not copied: T0 = 2026-11-01, refresh at
T0 + 3 h).

toy-lm: R1 (pre-training, 4 GPU-hours: hardware 4 h × 989.4 TFLOP/s × 0.4 = 5.70e18; its
architecture figure 6 × 1e11 × 2e11 = 1.2e23 is above its physical maximum 4 h × 989.4 TFLOP/s
= 1.42e19, a finding, so the hardware figure is of record) and R2 (continued pre-training from
R1's checkpoint, running, 512 GPUs for 1 h at the default MFU 0.35: 6.38e20 and 1.77e17
FLOP/s). Cumulative 6.44e20: 10^23 and 10^25 projected at the current rate; the provider
learned it at R2's start (T0 + 2 h), so the Art 52 notification for 10^25 is due at T0 + 2 h +
14 days, and 10^23 has none (Guidelines footnote 7). GPU-hours 516 (21.5 hardware-days, 3 h
wall-clock, band <1 month); energy of record: R1 measured 3.24e6 J × 1.5 × 1.2 = 1.62e-3 MWh
plus its unmeasured hour 0.7 kW × 1.8 = 1.26e-3, R2 512 × 0.7 × 1.8 / 1000 = 0.64512: 0.648
MWh, of which 1.62e-3 / 0.648 = 0.25 % measured. toy-lm-ft modifies toy-lm: its own 1.6e21
against one third of toy-lm's 6.44e20 (2.15e20). idle-lm has a metadata file and no runs: a
report of gaps.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from annex.model_registry import load_registry, registry_rows
from annex.settings import WarehouseSettings
from reports.charts import Level, TimeSeries, log_lines
from reports.definition import EvidenceQuery, ReportRequest
from reports.errors import ReportError
from reports.evidence import prepare_connection, run_query
from reports.generate import GeneratedReport, generate_report
from reports.numbers import figure, flop, magnitude, mwh, prose, ratio, share
from services.compute import PeakTable
from tests.helpers.paths import REPO_ROOT
from tests.helpers.report_pdf import pdf_attachments, pdf_text, pdf_xmp, qpdf_check
from tests.warehouse.models.test_compute import (
    CONFIG,
    NOW,
    PEAK,
    T0,
    H,
    insert_core,
    registry,
    telemetry,
)
from warehouse import Warehouse, load_collection
from warehouse.models.compute import refresh_compute
from warehouse.models.telemetry import TELEMETRY_MODEL
from warehouse.models.utilisation import refresh_gpu_hourly

pytestmark = pytest.mark.slow

GENERATED = datetime(2026, 11, 20, 8, 0)
R1 = 4 * H * PEAK * 0.4
R2 = 512 * H * PEAK * 0.35
OWN = R1 + R2
RATE = 512 * PEAK * 0.35
LEARNED = T0 + timedelta(hours=2)  # R2's start: the rate that projects the crossing began
ENERGY = 3.24e6 * 1.5 * 1.2 / 3.6e9 + 1 * 0.7 * 1.8 / 1000 + 512 * 0.7 * 1.8 / 1000
MODEL_FILES = {
    "toy-lm": """\
name: toy-lm
provider: Example Labs
parameters: 100000000000
architecture: dense decoder-only transformer
licence: LicenseRef-example
modalities: {input: [text], output: [text]}
lineage: {jobs: [toy-lm.campaign], namespaces: [team]}
training: {dtype: bf16, plan: {end: 2028-10-01T00:00:00}}
""",
    "toy-lm-ft": """\
name: toy-lm-ft
provider: Downstream Ltd
parameters: 100000000000
architecture: dense decoder-only transformer
licence: LicenseRef-example
modalities: {input: [text], output: [text]}
base_models: [toy-lm]
lineage: {jobs: [toy-lm-ft.campaign]}
alerts: {thresholds: [systemic_risk, modification]}
""",
    "idle-lm": """\
name: idle-lm
provider: Example Labs
parameters: 1000000000
architecture: dense decoder-only transformer
licence: LicenseRef-example
modalities: {input: [text], output: [text]}
""",
}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> tuple[Warehouse, Path]:
    directory = tmp_path_factory.mktemp("compute-report")
    models = directory / "models"
    models.mkdir()
    for name, text in MODEL_FILES.items():
        (models / f"{name}.yaml").write_text(text, encoding="utf-8")
    loaded = load_registry(models)
    # the files say what the hand-computed scenario's registry says (plus idle-lm)
    same = {m.name: replace(m, path=Path(f"{m.name}.yaml")) for m in loaded.models}
    assert [same[m.name] for m in registry().models] == list(registry().models)
    wh = Warehouse(WarehouseSettings(path=directory / "w.duckdb", lock_timeout_seconds=5))
    load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=telemetry().batches(), publish=False)
    with wh.writer() as con:
        refresh_gpu_hourly(con)
        insert_core(con)
        refresh_compute(con, CONFIG, registry_rows(loaded), PeakTable(), now=NOW)
    wh.publish()
    return wh, models


def render(scenario: tuple[Warehouse, Path], model: str, out: Path) -> GeneratedReport:
    wh, models = scenario
    return generate_report(
        wh,
        "training_compute",
        ReportRequest(model=model),
        out,
        generated_at=GENERATED,
        models_dir=models,
    )


@pytest.fixture(scope="module")
def toy(
    scenario: tuple[Warehouse, Path], tmp_path_factory: pytest.TempPathFactory
) -> GeneratedReport:
    return render(scenario, "toy-lm", tmp_path_factory.mktemp("out"))


def test_one_number_format() -> None:
    assert flop(OWN) == "6.44 × 10²⁰"
    assert flop(9.996e22) == "1.00 × 10²³"  # rounding carries into the exponent
    assert flop(None) is None and flop(0) == "0"
    # MWh to three significant figures (MDF 8: at least two), plain between 0.01 and 10^6
    assert mwh(0.648) == "0.648" and mwh(0.65) == "0.650" and mwh(12_345.6) == "12,300"
    assert mwh(0.00288) == "2.88 × 10⁻³" and figure(9.996) == "10.0"
    assert ratio(0.8688) == "0.87" and ratio(379.01) == "380"  # a ratio, never "differ by %"
    assert share(1.8e-5) == "0.0018 %" and share(0.2) == "20 %" and share(0.0) == "0 %"
    assert magnitude(7.16e24) == "~10²⁴" and magnitude(1.2e25) == "~10²⁵"
    # the marts' sentences in the same format: no 7.5e+23 beside 7.50 × 10²³
    assert prose("6·N·D = 7.5e+23 FLOP; 10^23/3 FLOP; ratio 0.88") == (
        "6·N·D = 7.50 × 10²³ FLOP; 10²³/3 FLOP; ratio 0.88"
    )


def test_assessment_comes_first_with_consequences_and_one_notification(
    toy: GeneratedReport,
) -> None:
    text = pdf_text(toy.path)
    assert toy.path.name == "training_compute-toy-lm.pdf"
    assessment = text[text.index("1. Article 51 assessment 6.44") :]
    assessment = assessment[: assessment.index("2. Compute of record by lifecycle stage The")]
    assert f"{flop(OWN)} FLOP" in assessment
    # band: R1's hardware at DCGM tensor activity over 3 of 4 GPU-hours, R2's at the default
    assert "2 counted training runs (1 running)" in assessment
    # 10^25: projected at the current rate; learned (plan recorded) at R2's start; due 14 days on
    crossing = NOW + timedelta(seconds=(1e25 - OWN) / RATE)
    due = LEARNED + timedelta(days=14)
    assert f"Projected to be crossed on {crossing:%Y-%m-%d %H:%M} UTC" in assessment
    assert (
        f"learned (plan recorded) {LEARNED:%Y-%m-%d %H:%M} UTC; notify by {due:%Y-%m-%d %H:%M} UTC"
        in (assessment)
    )
    assert (
        "Action required (Art 52(1)): 10²⁵ FLOP (systemic risk): PROJECTED; notify the "
        f"Commission by {due:%Y-%m-%d %H:%M} UTC" in assessment
    )
    # 10^23: projected too, but nothing is notified (Guidelines footnote 7): one notify-by date
    assert assessment.count("notify by") == 1
    assert "Obligations apply, nothing to notify: 10²³ FLOP (GPAI) projected" in assessment
    assert "nothing to notify" in assessment
    assert "the Art 53 obligations apply; nothing is notified for this criterion" in assessment
    assert "(Guidelines point 17, footnote 7)" in assessment and "(Art 52(1))" in assessment
    assert "Does not apply: the model modifies no base model." in assessment
    assert f"rate of {flop(RATE)} FLOP/s" in assessment
    projected = OWN + RATE * ((datetime(2028, 10, 1) - NOW).total_seconds())
    assert f"reaches {flop(projected)} FLOP" in assessment


def test_stages_side_by_side_with_ratio_and_why(toy: GeneratedReport) -> None:
    text = pdf_text(toy.path)
    stages = text[text.index("2. Compute of record by lifecycle stage The") :]
    stages = stages[: stages.index("3. Which runs count")]
    assert "N = 1.00 × 10¹¹ parameters (a dense model: all are active)" in stages
    # pre-training: R1 both methods, their ratio 5.70e18 / 1.2e23, the hardware figure of
    # record because 6·N·D is above the physical maximum (4 GPU-hours at dense peak)
    assert f"Pre-training 1 {flop(R1)} 1.20 × 10²³ {ratio(R1 / 1.2e23)}" in stages
    assert "1 run hardware-based: the architecture-based figure is above the physical" in (
        stages.replace("hardware- based", "hardware-based")
    )
    assert flop(4 * H * PEAK) in stages
    # continued pre-training: R2 runs on, so "running", not a gap, for its ratio and 6·N·D
    assert f"Continued pre-training 1 (1 running) {flop(R2)} running running {flop(R2)}" in stages
    assert "1 run hardware-based: running, the compute done so far" in (
        stages.replace("hardware- based", "hardware-based")
    )
    assert "differ by" not in text and "% apart" not in text  # a ratio, not a percentage
    assert "assumed default MFU: 1 run; DCGM tensor-pipe activity: 1 run" in stages


def test_time_energy_and_hardware(toy: GeneratedReport) -> None:
    text = pdf_text(toy.path)
    assert "516.0" in text and "21.50" in text  # GPU-hours, hardware-days
    assert f"{3 / 24:.2f} 3.0 h;" in text and "<1 month" in text  # 3 h wall-clock, the band
    assert "HBM3 H100-SXM5-80GB 989.4 700.0 516.0 0.0 21.5 3.0" in text  # observed, declared
    energy = text[text.index("6. Energy 0.648") :]
    energy = energy[: energy.index("7. Gaps in the evidence")]
    # the total of record with its measured share; the measured part is never the total
    assert f"{mwh(ENERGY)} MWh" in energy and mwh(ENERGY) == "0.648"
    measured = 3.24e6 * 1.5 * 1.2 / 3.6e9
    assert f"of which {share(measured / ENERGY)} measured" in energy
    assert f"Measured {mwh(measured)} integrated DCGM energy" in energy
    assert (
        f"Estimated {mwh(ENERGY - measured)} GPU-hours × TDP × 1 × server overhead 1.5 × PUE 1.2"
        in (energy)
    )
    assert f"they measured {mwh(3.24e6 / 3.6e9)} MWh at the GPUs" in energy
    assert "is above that floor" in energy  # 6.44e20 FLOP / 2e13 FLOP per J
    assert f"GAP: only {share(measured / ENERGY)} of the energy of record is measured" in energy


def test_runs_findings_and_gaps_are_shown(toy: GeneratedReport) -> None:
    text = pdf_text(toy.path)
    runs = text[text.index("3. Which runs count 2 training runs") :]
    assert f"R2 continued pre- training 2026-11-01 running 512.0 {flop(R2)} running running" in runs
    assert f"R1 pre-training 2026-11-01 2026-11-01 4.0 {flop(R1)} 1.20 × 10²³" in runs
    assert "No run attributed to toy-lm is left out: every run counts." in runs
    findings = text[text.index("4. Findings behind the figures What") :]
    findings = findings[: findings.index("5. Training time and hardware")]
    assert "HIGH Architecture-based figure above the run's physical maximum R1" in findings
    assert f"6·N·D = 1.20 × 10²³ FLOP exceeds its physical maximum of {flop(4 * H * PEAK)}" in (
        findings
    )
    assert "e+" not in findings  # the marts' message in the one number format
    gaps = text[text.index("7. Gaps in the evidence What") :]
    assert "GAP: 2 counted runs lack DCGM telemetry" in gaps
    assert "1.00 of 4.00 GPU-hours" in gaps
    # R2 is running: its missing token count is "running", not a gap
    assert "R2 no token counts" not in gaps
    assert "Simulated evidence" not in text


def test_chart_draws_the_curve_and_thresholds(toy: GeneratedReport) -> None:
    from reports.training_compute import build

    context = build(toy.evidence)
    to_date, projection = context["charts"]
    root = ET.fromstring(to_date["svg"])
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "10²³ GPAI criterion" in texts and "10²⁵ systemic risk" in texts
    projected = ET.fromstring(projection["svg"])
    assert "10²⁵ systemic risk projected" in [
        t.text for t in projected.iter("{http://www.w3.org/2000/svg}text")
    ]


def test_curve_matches_the_marts_crossing() -> None:
    """The curve accrues each run linearly over its span, as the crossing dates do."""
    from reports.training_compute import _curve

    points = dict(_curve([(T0, T0 + timedelta(hours=2), 1.2e23)], 0.0, NOW))
    assert points[T0] == 0
    assert points[T0 + timedelta(minutes=100)] == pytest.approx(1e23)
    assert points[NOW] == pytest.approx(1.2e23)


def test_log_chart_is_deterministic_and_escapes_labels() -> None:
    hostile = '</text><script>alert(1)</script> & "x"'
    series = [TimeSeries(hostile, [(T0, 1e20), (NOW, 1e22)], "#000000")]
    levels = [Level(hostile, 1e23, "#111111")]
    svg = log_lines(series, title=hostile, unit="FLOP", levels=levels, marks=[(NOW, hostile)])
    assert svg == log_lines(
        series, title=hostile, unit="FLOP", levels=levels, marks=[(NOW, hostile)]
    )
    root = ET.fromstring(svg)
    assert root.find(".//{http://www.w3.org/2000/svg}script") is None
    assert [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")].count(hostile) == 4
    empty = ET.fromstring(log_lines([TimeSeries("x", [], "#000000")], title="t", unit="FLOP"))
    assert "no evidence" in [t.text for t in empty.iter("{http://www.w3.org/2000/svg}text")]


def test_modification_assessed_against_a_third_of_the_base(
    scenario: tuple[Warehouse, Path], tmp_path: Path
) -> None:
    text = pdf_text(render(scenario, "toy-lm-ft", tmp_path).path)
    assert f"{flop(OWN / 3)}" in text  # the threshold: one third of toy-lm's compute
    assert "toy-lm-ft modifies toy-lm" in text
    # own: R3 1 GPU-hour × peak × 0.4 (its 6·N·D 6e20 is above its physical maximum) + R4's
    # generation 2 × N × D = 1e21 (every generated sample); above a third of toy-lm's 6.44e20;
    # the original is not a systemic-risk model, so nothing is notified
    assert "⅓ of the original (modification) crossed" in text
    assert "the modifier becomes the provider of a new model (Guidelines points 60-61)" in text
    assert "notify by" not in text and "Action required" not in text
    assert "Alerts for this threshold are switched off" in text
    own = 1 * H * PEAK * 0.4 + 2 * 1e11 * 5e9
    assert f"own compute, {flop(own)} FLOP, is compared with" in text
    assert f"Below: cumulative compute {flop(OWN + own)} FLOP" in text


def test_attachments_equal_the_warehouse_data(
    toy: GeneratedReport, scenario: tuple[Warehouse, Path]
) -> None:
    wh, models = scenario
    attached = pdf_attachments(toy.path)
    manifest = json.loads(attached.pop("manifest.json"))
    metadata = attached.pop("model-metadata.yaml")
    assert metadata == (models / "toy-lm.yaml").read_bytes()
    assert manifest["parameters"] == {"model": "toy-lm"}
    assert {t["file"] for t in manifest["tables"]} == set(attached)
    assert {
        "model.csv", "thresholds.csv", "stages.csv", "findings.csv", "runs.csv", "hardware.csv",
        "gaps.csv",
    } <= set(attached)  # fmt: skip
    with wh.reader() as con:
        prepare_connection(con)
        for table in manifest["tables"]:
            data = attached[table["file"]]
            assert hashlib.sha256(data).hexdigest() == table["sha256"]
            query = EvidenceQuery(table["file"][:-4], "", table["query"])
            parameters = {
                k: datetime.fromisoformat(v) if k.endswith("_ts") else v
                for k, v in table["query_parameters"].items()
            }
            assert run_query(con, query, parameters).csv == data, table["file"]
        marts = con.execute(
            "SELECT run_id, compute_flop FROM marts.training_run_compute "
            "WHERE model_name = 'toy-lm' ORDER BY run_id"
        ).fetchall()
    values = list(csv.DictReader(io.StringIO(attached["runs.csv"].decode())))
    assert len(values) == len(marts) == 2
    got = sorted((r["run_id"], float(r["compute_flop"])) for r in values)
    assert got == [(run_id, pytest.approx(value)) for run_id, value in marts]


def test_pdf_a_3b_and_qpdf_check(toy: GeneratedReport) -> None:
    xmp = pdf_xmp(toy.path).decode()
    assert 'pdfaid:part="3"' in xmp and 'pdfaid:conformance="B"' in xmp
    check = qpdf_check(toy.path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert toy.refused == ()


def test_model_without_evidence_is_a_report_of_gaps(
    scenario: tuple[Warehouse, Path], tmp_path: Path
) -> None:
    result = render(scenario, "idle-lm", tmp_path)
    text = pdf_text(result.path)
    assert "0 counted training runs (0 running)" in text
    assert "GAP: no counted training run of the model has both a compute figure" in text
    assert "GAP: no counted run, so no stage has a compute figure" in text
    assert "GAP: no GPU allocations of the model's runs in the inventory" in text
    assert "GAP: no run has a time span" in text
    assert "GAP: no counted training run of this model is in the lineage" in text
    assert "GAP: no training run of idle-lm is in the evidence" in text
    assert "0 FLOP is an absence of evidence, not a measurement" in text
    assert "Below: cumulative compute 0 FLOP" in text
    assert "No threshold is crossed" not in text  # never read as clean
    assert "recorded no gap" not in text
    assert "notify by" not in text
    assert qpdf_check(result.path).returncode == 0


def test_model_file_without_figures_shows_gaps_and_unknown_model_is_an_error(
    scenario: tuple[Warehouse, Path], tmp_path: Path
) -> None:
    wh, models = scenario
    late = tmp_path / "models"
    late.mkdir()
    (late / "late-lm.yaml").write_text(
        MODEL_FILES["idle-lm"].replace("idle-lm", "late-lm"), encoding="utf-8"
    )
    result = generate_report(
        wh, "training_compute", ReportRequest(model="late-lm"), tmp_path / "out", models_dir=late
    )
    text = pdf_text(result.path)
    assert "GAP: the compute figures have no row for late-lm" in text
    assert "annex compute --model late-lm" in text
    with pytest.raises(ReportError, match="no model named 'nosuch'"):
        generate_report(
            wh, "training_compute", ReportRequest(model="nosuch"), tmp_path / "x", models_dir=models
        )
    assert not (tmp_path / "x").exists()


def test_pages_render_to_png(toy: GeneratedReport, tmp_path: Path) -> None:
    """Every page rasterises (pdftoppm) and none is blank."""
    from PIL import Image

    subprocess.run(["pdftoppm", "-r", "40", "-png", str(toy.path), str(tmp_path / "p")], check=True)
    pages = sorted(tmp_path.glob("p-*.png"))
    assert len(pages) >= 7
    for page in pages:
        image = Image.open(page).convert("L")
        assert image.getextrema()[0] < 128, page.name  # some ink on every page


def test_simulated_world_shows_the_mark_and_the_missing_inventory(tmp_path: Path) -> None:
    """The simulated world's lineage alone (no inventory collected): the runs' token counts
    give architecture-based compute past 10^23, the missing GPU allocations are gaps, and the
    simulator's producer URI puts the simulated mark on the cover."""
    from annex.settings import ComputeSettings
    from simulator.lineage import build_events, to_json
    from simulator.world import build_world
    from tests.helpers.lineage_warehouse import load

    models = REPO_ROOT / "simulator" / "models"
    world = build_world(40, seed=7)
    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5))
    load(wh, [json.loads(to_json(e)) for e in build_events(world)])
    now = world.now.replace(tzinfo=None) - (world.now.utcoffset() or timedelta())
    with wh.writer() as con:
        rows = registry_rows(load_registry(models))
        refresh_compute(con, ComputeSettings(), rows, PeakTable(), now=now)
    wh.publish()
    result = generate_report(
        wh, "training_compute", ReportRequest(model="llama-70b"), tmp_path, models_dir=models
    )
    text = pdf_text(result.path)
    assert "Simulated evidence:" in text and "https://annex.dev/simulator/lineage" in text
    assert "have no GPU allocations in the inventory" in text
    assert "Obligations apply, nothing to notify: 10²³ FLOP (GPAI) crossed" in text
    attached = pdf_attachments(result.path)
    assert attached["model-metadata.yaml"] == (models / "llama-70b.yaml").read_bytes()
    assert result.refused == ()


def _run(run_id: str, **facts: object) -> dict:
    row = dict.fromkeys(
        ("ended_at", "gpu_hours", "declared_gpus", "hardware_flop", "architecture_flop",
         "methods_ratio", "compute_flop", "compute_method", "physical_max_flop",
         "energy_mwh", "energy_measured_share", "purpose", "exclusion", "exclusion_basis",
         "telemetry_coverage", "utilisation_source", "above_physical_max")
    )  # fmt: skip
    row |= {"run_id": run_id, "span_start": T0, "span_end": NOW, "running": False}
    row |= {"counted": True, "lifecycle_stage": "pretraining"}
    return row | facts


def test_runs_listed_apart_and_job_claims_are_shown_with_their_source() -> None:
    """Hand-built evidence: an ablation run (Guidelines para ~122) and a run whose Job another
    run claims are listed apart, not counted; the double claim names both runs; a running
    run's plan above what its GPUs did so far is not a finding until it ends."""
    from types import SimpleNamespace

    from reports.training_compute import build

    runs = [
        _run("P", compute_flop=1e22, compute_method="hardware", running=True,
             above_physical_max=True, architecture_flop=5e22),
        _run("A", counted=False, exclusion="exploratory", purpose="ABLATION",
             compute_flop=2e20, exclusion_basis="an ablation run: it does not feed the final "
             "weights, so it need not be counted (Guidelines para ~122); listed here"),
        _run("B", counted=False, exclusion="job_claimed", purpose="PRODUCTION",
             exclusion_basis="its Kubernetes Job team/j1 is claimed by run P: a GPU-hour is "
             "counted once, so this run is listed, not counted"),
    ]  # fmt: skip
    findings = [
        {"run_id": "B", "kind": "job_claimed_twice", "severity": "high", "other_run_id": "P",
         "kubernetes_job": "c/team/j1", "message": "Kubernetes Job c/team/j1 is named by runs P "
         "and B: its GPU-hours are counted once, for P", "running": False},
        {"run_id": "P", "kind": "above_physical_max", "severity": "high", "other_run_id": None,
         "kubernetes_job": "c/team/j2", "message": "run P: 6·N·D = 5e+22 FLOP exceeds",
         "running": True},
        {"run_id": "A", "kind": "exploratory_run", "severity": "info", "other_run_id": None,
         "kubernetes_job": None, "message": "run A is an ablation run", "running": False},
    ]  # fmt: skip
    records = {"runs": runs, "findings": findings}
    for empty in ("model", "thresholds", "stages", "hardware", "base_models", "gaps", "producers"):
        records[empty] = []
    evidence = SimpleNamespace(
        request=SimpleNamespace(model="m"),
        model=SimpleNamespace(dtype="bf16"),
        records=lambda name: [dict(r) for r in records[name]],
    )
    context = build(evidence)
    assert [r["run_id"] for r in context["runs"]] == ["P"]  # only the counted run
    apart = {r["run_id"]: r for r in context["apart"]}
    assert apart["A"]["exclusion_words"] == "Exploratory run"
    assert apart["A"]["exclusion_basis_words"] == (
        "An ablation run: it does not feed the final weights, so it need not be counted "
        "(Guidelines para ~122)"
    )
    assert apart["B"]["exclusion_words"] == "Job claimed by another run"
    # the double claim is a finding naming both runs; the exploratory one is not repeated
    [claim] = context["findings"]
    assert claim["runs_named"] == "B and P" and claim["severity"] == "high"
    assert [f["run_id"] for f in context["plans_ahead"]] == ["P"]
    assert context["runs"][0]["architecture_fmt"] == "5.00 × 10²² (plan)"
    assert context["runs"][0]["to_day"] == "running"  # not a gap

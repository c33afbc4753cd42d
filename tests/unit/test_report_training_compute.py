"""The training compute and Article 51 report, rendered from the hand-computed scenario of
test_compute_warehouse.py (imported, not copied: T0 = 2026-11-01, refresh at T0 + 3 h).

toy-lm: R1 (4 GPU-hours, architecture 6 × 1e11 × 2e11 = 1.2e23 of record, hardware
4 h × 989.4 TFLOP/s × 0.4 = 5.70e18, 100 % apart) and R2 (running, 512 GPUs for 1 h at the
default MFU 0.35: 6.38e20 and 1.77e17 FLOP/s). Cumulative 1.2064e23: 10^23 crossed at 01:40
(5/6 of R1's two hours), notification due 14 days later; 10^25 projected at the current rate
about 645 days after the refresh. GPU-hours 516 (21.5 hardware-days, 3 h wall-clock, band
<1 month); energy measured 0.00288 + 0.64512 = 0.648 MWh, estimated 0.650 MWh, energy
telemetry on 3 of 516 GPU-hours (0.6 %). toy-lm-ft modifies toy-lm: its own 1.6e21 against
one third of 1.2064e23 (4.02e22). idle-lm has a metadata file and no runs: a report of gaps.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from report_pdf import pdf_attachments, pdf_text, pdf_xmp, qpdf_check
from test_compute_warehouse import CONFIG, NOW, PEAK, T0, H, insert_core, registry, telemetry

from annex.compute import PeakTable
from annex.model_registry import load_registry, registry_rows
from annex.settings import WarehouseSettings
from reports.charts import Level, TimeSeries, log_lines
from reports.definition import EvidenceQuery, ReportRequest
from reports.errors import ReportError
from reports.evidence import prepare_connection, run_query
from reports.generate import GeneratedReport, generate_report
from reports.training_compute import flop, mwh
from warehouse import Warehouse, load_collection
from warehouse.models.compute import refresh_compute
from warehouse.models.telemetry import TELEMETRY_MODEL
from warehouse.models.utilisation import refresh_gpu_hourly

pytestmark = pytest.mark.slow

GENERATED = datetime(2026, 11, 20, 8, 0)
OWN = 1.2e23 + 512 * H * PEAK * 0.35
RATE = 512 * PEAK * 0.35
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


def test_formats_of_flop_and_energy() -> None:
    assert flop(OWN) == "1.21 × 10²³"
    assert flop(9.996e22) == "1.00 × 10²³"  # rounding carries into the exponent
    assert flop(5.698944e18) == "5.70 × 10¹⁸"
    assert flop(None) is None and flop(0) == "0"
    assert mwh(0.648) == "0.648" and mwh(0.65) == "0.650" and mwh(12_345.6) == "12,346"


def test_assessment_comes_first_with_dates_and_deadlines(toy: GeneratedReport) -> None:
    text = pdf_text(toy.path)
    assert toy.path.name == "training_compute-toy-lm.pdf"
    assessment = text[text.index("1. Article 51 assessment 1.21") :]
    assessment = assessment[: assessment.index("2. Training compute: both estimation methods")]
    assert "1.21 × 10²³ FLOP" in assessment
    # band: R1's architecture ±15 % plus R2's hardware at the assumed default ±50 %
    r2 = 512 * H * PEAK * 0.35
    low, high = 1.2e23 * 0.85 + r2 * 0.5, 1.2e23 * 1.15 + r2 * 1.5
    assert f"band {flop(low)} to {flop(high)}" in assessment
    # 10^23: crossed at 01:40 (R1 accrues 1.2e23 over 2 h), notify 14 days later
    assert "Crossed on 2026-11-01 01:40 UTC" in assessment
    assert "notify by 2026-11-15 01:40 UTC" in assessment
    # 10^25: projected at the current rate from the refresh
    crossing = NOW + timedelta(seconds=(1e25 - OWN) / RATE)
    due = crossing + timedelta(days=14)
    assert f"Projected to be crossed on {crossing:%Y-%m-%d %H:%M} UTC" in assessment
    assert f"notify by {due:%Y-%m-%d %H:%M} UTC" in assessment
    assert "before the planned end 2028-10-01 00:00 UTC" in assessment
    assert "CROSSED" in assessment and "PROJECTED" in assessment
    assert "Not applicable: the model modifies no base model" in assessment
    assert "Action required:" in assessment
    assert f"rate of {flop(RATE)} FLOP/s" in assessment
    projected = OWN + RATE * ((datetime(2028, 10, 1) - NOW).total_seconds())
    assert f"reaches {flop(projected)} FLOP" in assessment


def test_both_methods_side_by_side_with_agreement(toy: GeneratedReport) -> None:
    text = pdf_text(toy.path)
    methods = text[text.index("2. Training compute: both estimation methods Method") :]
    methods = methods[: methods.index("3. Training time and hardware")]
    hardware = 4 * H * PEAK * 0.4 + 512 * H * PEAK * 0.35
    assert flop(hardware) in methods  # Σ hardware over R1 and R2
    assert "1.20 × 10²³" in methods  # architecture: R1's 6·N·D (R2 runs on, no tokens)
    assert f"{flop(1.2e23 * 0.85)} to {flop(1.2e23 * 1.15)}" in methods
    apart = abs(4 * H * PEAK * 0.4 - 1.2e23) / 1.2e23
    assert f"{apart * 100:.1f} % apart" in methods and "margin of 30 %" in methods
    assert "DISAGREE beyond the margin" in methods
    assert "R1 (100 % FLAGGED)" in methods
    assert "1 of 1 finished runs" in methods and "2 of 2 runs" in methods
    assert "assumed default MFU: 1 run; DCGM tensor-pipe activity: 1 run" in methods
    assert "methods used: architecture, hardware" in methods


def test_time_energy_and_hardware(toy: GeneratedReport) -> None:
    text = pdf_text(toy.path)
    assert "516.0" in text and "21.50" in text  # GPU-hours, hardware-days
    assert f"{3 / 24:.2f} 3.0 h;" in text and "<1 month" in text  # 3 h wall-clock, the band
    # GPU model, SKU, dense bf16 peak, TDP, GPU-hours, hardware-days, telemetry GPU-hours
    assert "HBM3 H100-SXM5-80GB 989.4 700.0 516.0 21.5 3.0" in text
    energy = text[text.index("4. Energy Method") :]
    energy = energy[: energy.index("5. Training runs")]
    assert "Measured (telemetry) 0.648" in energy
    assert "Estimated (TDP) 0.650" in energy
    measured = 12 * 180_000 + 6 * 180_000  # R1's counters (R2 has no telemetry)
    assert f"they measured {mwh(measured / 3.6e9)} MWh at the GPUs" in energy
    assert "PUE 1.2" in energy and "server overhead 1.5" in energy
    assert f"cover {3 / 516 * 100:.1f} %" in energy  # 3 of 516 GPU-hours
    assert f"GAP: {(1 - 3 / 516) * 100:.1f} % of the GPU-hours have no energy" in energy


def test_runs_and_gaps_are_shown(toy: GeneratedReport) -> None:
    text = pdf_text(toy.path)
    runs = text[text.index("5. Training runs 2 training runs") :]
    assert (
        "R1 pretraining 2026-11-01 4.0 5.70 × 10¹⁸ 1.20 × 10²³ 100 % FLAGGED 75 % 0.00288" in runs
    )
    assert "R2 pretraining, running 2026-11-01 512.0 6.38 × 10²⁰ none running 0 % 0.645" in runs
    gaps = text[text.index("6. Gaps in the evidence What") :]
    assert "GAP: 2 runs lack DCGM telemetry" in gaps and "R1 (75 % covered)" in gaps
    assert "no token counts in the lineage facets" in gaps
    assert "1.00 of 4.00 GPU-hours" in gaps
    assert "Simulated evidence" not in text


def test_chart_draws_the_curve_and_thresholds(toy: GeneratedReport) -> None:
    from reports.training_compute import build

    context = build(toy.evidence)
    to_date, projection = context["charts"]
    root = ET.fromstring(to_date["svg"])
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "1.00 × 10²³ gpai" in texts and "1.00 × 10²⁵ systemic risk" in texts
    assert "gpai crossed" in texts
    assert "systemic risk projected" in ET.tostring(ET.fromstring(projection["svg"])).decode()


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
    assert f"{flop(OWN / 3)}" in text  # the threshold
    assert f"own (modification) compute {flop(1.6e21)} FLOP" in text
    assert "toy-lm-ft modifies toy-lm" in text
    # 10^23 crossed through the base's compute, from the start of its own runs; alerts off
    assert "Crossed on 2026-11-01 00:00 UTC" in text
    assert "Alerts for this threshold are switched off" in text
    assert "notify by 2026-11-15 00:00 UTC (alerts switched off)" in text
    assert f"Below: own (modification) compute {flop(1.6e21)} FLOP, 4 % of the threshold" in text


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
    assert {"model.csv", "thresholds.csv", "runs.csv", "hardware.csv", "gaps.csv"} <= set(attached)
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
    runs = attached["runs.csv"].decode().splitlines()
    header = runs[0].replace('"', "").split(",")
    assert len(runs) == 1 + len(marts) == 3
    values = [dict(zip(header, r.replace('"', "").split(","), strict=True)) for r in runs[1:]]
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
    assert "0 training runs (0 running)" in text
    assert "GAP: no training run of the model has both a compute figure" in text
    assert "GAP: no finished run has both estimates" in text
    assert "GAP: no GPU allocations of the model's runs in the inventory" in text
    assert "GAP: no run has a time span" in text
    assert "GAP: no training run of this model is in the lineage" in text
    assert "GAP: no training run of idle-lm is in the evidence" in text
    assert "0 FLOP is an absence of evidence, not a measurement" in text
    assert "Below: cumulative compute 0 FLOP" in text
    assert "No threshold is crossed" not in text  # never read as clean
    assert "recorded no gap" not in text
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
    assert "GAP: the compute marts have no figures for late-lm" in text
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
    from lineage_warehouse_helpers import load

    from annex.settings import ComputeSettings
    from simulator.lineage import build_events, to_json
    from simulator.world import build_world

    models = Path(__file__).parents[2] / "simulator" / "models"
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
    assert "10²³ FLOP: indicative GPAI criterion (CROSSED)" in text
    attached = pdf_attachments(result.path)
    assert attached["model-metadata.yaml"] == (models / "llama-70b.yaml").read_bytes()
    assert result.refused == ()

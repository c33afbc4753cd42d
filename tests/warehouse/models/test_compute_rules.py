"""The rules behind a model's compute of record, one hand-worked scenario each, with its source.

Every scenario is a fresh migrated warehouse with the few core rows it needs (H100 SXM nodes:
dense bf16 peak 989.4 TFLOP/s, TDP 700 W; [compute] PUE 1.2, server overhead 1.5, power
fraction 1.0, default MFU 0.35), refreshed at NOW. Sources: reference eu-ai-act.md §2 (what
cumulative compute counts, the thresholds) and §7 (physical maximum, energy, notification).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from annex.model_registry import ModelRegistry, parse_model, registry_rows
from annex.settings import ComputeSettings, WarehouseSettings
from services.compute import PeakTable
from warehouse import Warehouse
from warehouse.models.compute import refresh_compute

T0 = datetime(2026, 10, 1)
NOW = datetime(2026, 11, 1)
H = 3600.0
PEAK = 989.4e12
TDP = 700.0
FACILITY = 1.5 * 1.2
CONFIG = ComputeSettings(
    pue=1.2, server_overhead=1.5, power_fraction=1.0, default_mfu=0.35, disagreement_margin=0.3
)
TEXT_MODEL = {
    "provider": "Example Labs",
    "parameters": 10_000_000_000,
    "architecture": "dense decoder-only transformer",
    "licence": "LicenseRef-example",
    "modalities": {"input": ["text"], "output": ["text"]},
}


def model(name: str, **fields: Any) -> dict[str, Any]:
    return {**TEXT_MODEL, "name": name, "lineage": {"jobs": [f"{name}.campaign"]}, **fields}


class World:
    """A warehouse and the core rows of one scenario."""

    def __init__(self, tmp_path: Path, *models: dict[str, Any]) -> None:
        self.wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5))
        self.registry = ModelRegistry(
            tuple(parse_model(m, Path(f"{m['name']}.yaml")) for m in models), Path(".")
        )
        self.con: duckdb.DuckDBPyConnection | None = None
        self.statements: list[tuple[str, list[Any]]] = [
            (
                "INSERT INTO core.nodes (cluster, node_uid, node_name, gfd_product, gpu_capacity, "
                "gpu_allocatable, content_hash, valid_from, collection_id) VALUES ('c', "
                "'uid-n1', 'n1', 'NVIDIA-H100-80GB-HBM3', 8, 8, 0, ?, 'k8s-1')",
                [T0 - timedelta(days=30)],
            )
        ]
        for m in models:
            self.run(f"camp-{m['name']}", job=f"{m['name']}.campaign", stage=None, model=None)

    def pod(self, pod: str, job: str, gpus: int, start: datetime, end: datetime | None) -> None:
        self.statements.append(
            (
                "INSERT INTO core.gpu_allocations (cluster, pod_uid, namespace, pod_name, "
                "job_name, node_name, resource_name, gpus, category, valid_from, "
                "valid_from_source, valid_to, opened_collection_id) VALUES ('c', ?, 'team', ?, ?, "
                "'n1', 'nvidia.com/gpu', ?, 'workload', ?, 'scheduled', ?, 'k8s-1')",
                [f"uid-{pod}", pod, job, gpus, start, end],
            )
        )

    def run(
        self,
        run_id: str,
        *,
        job: str | None = None,
        model: str | None = "lm",
        stage: str | None = "PRETRAINING",
        start: datetime = T0,
        end: datetime | None = T0 + timedelta(hours=10),
        campaign: str | None = None,
        tokens: float | None = None,
        **facet: Any,
    ) -> None:
        state = "START" if end is None else "COMPLETE"
        parent = f"camp-{campaign or model}" if stage else None
        self.statements.append(
            (
                "INSERT INTO core.lineage_runs (run_id, job_name, parent_run_id, state, "
                "started_at, ended_at, state_event_id, cluster, namespace, "
                "kubernetes_job_name, model_name, stage) VALUES (?, ?, ?, ?, ?, ?, ?, 'c', "
                "'team', ?, ?, ?)",
                [
                    run_id,
                    job or run_id,
                    parent,
                    state,
                    start,
                    end,
                    f"ev-{run_id}",
                    job,
                    model,
                    stage,
                ],
            )
        )
        if stage is not None:
            body = {"stage": stage, "modelName": model, **facet}
            self.facet("run", run_id, "annex_trainingRun", body, run_id, None, start)
        if tokens is not None:
            self.facet(
                "input", f"{run_id}/dv", "annex_trainingUsage", {"tokensConsumed": tokens},
                run_id, f"dv-{run_id}", start,
            )  # fmt: skip

    def facet(
        self,
        kind: str,
        entity: str,
        name: str,
        body: dict,
        run_id: str,
        version: str | None,
        at: datetime,
    ) -> None:
        self.statements.append(
            (
                "INSERT INTO core.lineage_facet_heads VALUES (?, ?, ?, ?, ?, false, ?, ?, ?, NULL)",
                [kind, entity, name, f"ev-{entity}-{name}", at, json.dumps(body), run_id, version],
            )
        )

    def checkpoint(self, writer: str, reader: str) -> None:
        """``reader`` resumes from the checkpoint ``writer`` wrote."""
        version = f"ckpt-{writer}"
        self.statements += [
            (
                "INSERT INTO core.lineage_run_io (run_id, dataset_version_id, direction) "
                "VALUES (?, ?, 'OUTPUT'), (?, ?, 'INPUT')",
                [writer, version, reader, version],
            ),
            (
                "INSERT INTO core.lineage_dataset_versions (dataset_version_id, dataset_id, "
                "namespace, name, version_source, produced_by_run_id) VALUES (?, 'ckpt', "
                "'s3://ckpt', 'lm', 'run', ?)",
                [version, writer],
            ),
        ]

    def telemetry(self, pod: str, day: datetime, hours: float, joules: float) -> None:
        """``hours`` GPU-hours of DCGM energy readings (``joules`` in all) for ``pod`` on one
        day (the per-pod daily roll-up the compute refresh reads)."""
        self.statements.append(
            (
                "INSERT INTO marts.gpu_pod_daily VALUES ('c', ?, 'team', ?, 'n1', ['GPU-1'], ?, "
                "?, 1, ?, NULL, NULL, NULL, NULL, ?, ?, ?)",
                [day.date(), pod, day, day, hours, hours, joules, NOW],
            )
        )

    def refresh(self) -> None:
        with self.wh.writer() as con:
            for sql, params in self.statements:
                con.execute(sql, params)
            refresh_compute(con, CONFIG, registry_rows(self.registry), PeakTable(), now=NOW)

    def rows(self, sql: str, params: list | None = None) -> list[dict]:
        with duckdb.connect(str(self.wh.path), read_only=True) as con:
            cursor = con.execute(sql, params or [])
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]

    def one(self, table: str, **where: Any) -> dict:
        clause = " AND ".join(f"{k} = ?" for k in where)
        (row,) = self.rows(f"SELECT * FROM {table} WHERE {clause}", list(where.values()))
        return row

    def threshold(self, model_name: str, threshold: str) -> dict:
        return self.one(
            "marts.model_compute_thresholds", model_name=model_name, threshold=threshold
        )


def close(actual: float | None, expected: float, rel: float = 1e-9) -> None:
    assert actual == pytest.approx(expected, rel=rel), (actual, expected)


def test_one_job_under_two_run_ids_is_counted_once_with_a_finding(tmp_path: Path) -> None:
    """A GPU-hour is counted once (issue 40, build 1): the Job's 80 GPU-hours go to the run
    whose span matches its allocations; the other run is listed, not counted, and named."""
    w = World(tmp_path, model("lm"))
    w.pod("p1", "train-1", 8, T0, T0 + timedelta(hours=10))
    w.run("A", job="train-1", tokens=1e9)
    w.run("B", job="train-1", start=T0 + timedelta(hours=8), tokens=1e9)  # a resend, later
    w.refresh()
    a, b = (
        w.one("marts.training_run_compute", run_id="A"),
        w.one("marts.training_run_compute", run_id="B"),
    )
    assert a["counted"] and a["gpu_hours"] == 80.0
    assert not b["counted"] and b["exclusion"] == "job_claimed" and b["gpu_hours"] is None
    lm = w.one("marts.model_compute", model_name="lm")
    assert lm["gpu_hours"] == 80.0 and lm["runs"] == 1 and lm["excluded_run_ids"] == ["B"]
    close(lm["own_compute_flop"], a["compute_flop"])
    (finding,) = w.rows("SELECT * FROM marts.compute_findings WHERE kind = 'job_claimed_twice'")
    assert finding["run_id"] == "B" and finding["other_run_id"] == "A"
    assert finding["severity"] == "high" and "A and B" in finding["message"]


def test_a_run_above_its_physical_maximum_falls_back_to_the_hardware_figure(
    tmp_path: Path,
) -> None:
    """§7 item 5: no run is credited more than GPU-seconds × dense peak. 8 GPUs for 1 h can do
    at most 2.85e19 FLOP; 6 × 1e10 × 1e12 = 6e22 is an input error (a finding)."""
    w = World(tmp_path, model("lm"))
    w.pod("p1", "train-1", 8, T0, T0 + timedelta(hours=1))
    w.run("R", job="train-1", end=T0 + timedelta(hours=1), tokens=1e12)
    w.refresh()
    r = w.one("marts.training_run_compute", run_id="R")
    close(r["physical_max_flop"], 8 * H * PEAK)
    close(r["architecture_flop"], 6e22)
    assert r["above_physical_max"] is True and r["compute_method"] == "hardware"
    close(r["compute_flop"], 8 * H * PEAK * 0.35)
    (finding,) = w.rows("SELECT * FROM marts.compute_findings")
    assert finding["kind"] == "above_physical_max" and "parameter count" in finding["message"]


def test_an_ablation_run_is_listed_but_not_counted(tmp_path: Path) -> None:
    """Guidelines para ~122: exploratory runs and ablations that do not feed the final weights
    need not be counted, but are stated."""
    w = World(tmp_path, model("lm"))
    w.pod("p1", "train-1", 8, T0, T0 + timedelta(hours=10))
    w.pod("p2", "ablate-1", 8, T0, T0 + timedelta(hours=10))
    w.run("R", job="train-1", tokens=1e9)
    w.run("X", job="ablate-1", tokens=1e9, purpose="ABLATION")
    w.refresh()
    x = w.one("marts.training_run_compute", run_id="X")
    assert x["counted"] is False and x["exclusion"] == "exploratory"
    assert "para ~122" in x["exclusion_basis"]
    lm = w.one("marts.model_compute", model_name="lm")
    assert lm["runs"] == 1 and lm["gpu_hours"] == 80.0 and lm["excluded_run_ids"] == ["X"]
    close(lm["own_compute_flop"], w.one("marts.training_run_compute", run_id="R")["compute_flop"])
    (finding,) = w.rows("SELECT * FROM marts.compute_findings")
    assert finding["kind"] == "exploratory_run" and finding["severity"] == "info"


def test_a_new_pretraining_run_starts_a_new_model(tmp_path: Path) -> None:
    """Guidelines para ~23: the lifecycle starts at the large pre-training run; a later
    from-scratch pre-training run is a new model, while one that resumes from the model's
    checkpoint is continued pre-training and counts."""
    w = World(tmp_path, model("lm"))
    for pod, job in (("p1", "pre-1"), ("p2", "pre-2"), ("p3", "cont-1")):
        w.pod(pod, job, 8, T0, T0 + timedelta(hours=10))
    w.run("P1", job="pre-1", start=T0 - timedelta(days=20), tokens=1e9)
    w.run("P2", job="pre-2", tokens=1e9)  # from scratch again
    w.run("C1", job="cont-1", tokens=1e9)
    w.checkpoint("P1", "C1")
    w.refresh()
    stages = {
        r["run_id"]: (r["lifecycle_stage"], r["counted"], r["exclusion"])
        for r in w.rows("SELECT * FROM marts.training_run_compute")
    }
    assert stages == {
        "P1": ("pretraining", True, None),
        "P2": ("pretraining", False, "new_pretraining"),
        "C1": ("continued_pretraining", True, None),
    }
    got = {
        r["lifecycle_stage"]: r["runs"] for r in w.rows("SELECT * FROM marts.model_compute_stages")
    }
    assert got == {"pretraining": 1, "continued_pretraining": 1}
    (finding,) = w.rows("SELECT * FROM marts.compute_findings")
    assert finding["kind"] == "new_pretraining_run" and "para ~23" in finding["message"]


def test_synthetic_generation_counts_every_generated_sample(tmp_path: Path) -> None:
    """Guidelines para ~119: the compute of generating all samples counts, discarded ones
    included: 2 × N(generator) × every generated token, not only the kept ones."""
    w = World(tmp_path, model("lm"), model("teacher"))
    w.run("G", stage="SYNTHETIC_GENERATION", model="teacher", campaign="lm",
          generation={"tokensGenerated": 3e9, "samplesGenerated": 3000, "samplesKept": 1000},
          resources={"gpuCount": 64, "gpuProduct": "NVIDIA-H100-80GB-HBM3"})  # fmt: skip
    w.run("K", stage="SYNTHETIC_GENERATION", model="teacher", campaign="lm")
    w.facet("dataset", "dv-K", "annex_content", {"size": {"tokens": 1e9}}, "K", "dv-K", T0)
    w.statements.append(
        (
            "INSERT INTO core.lineage_run_io (run_id, dataset_version_id, direction, "
            "first_event_id) VALUES ('K', 'dv-K', 'OUTPUT', 'ev-K-out')",
            [],
        )
    )
    w.refresh()
    g = w.one("marts.training_run_compute", run_id="G")
    assert g["model_name"] == "lm" and g["lifecycle_stage"] == "synthetic_data_generation"
    assert g["tokens"] == 3e9 and g["flop_per_parameter_token"] == 2
    close(g["architecture_flop"], 2 * 1e10 * 3e9)  # the 2e9 discarded tokens count too
    k = w.one("marts.training_run_compute", run_id="K")
    assert k["tokens"] == 1e9  # only the kept samples are known: a lower bound, said so
    assert any("discarded samples" in gap for gap in k["gaps"])


def test_a_mixture_of_experts_uses_its_active_parameters(tmp_path: Path) -> None:
    """§2: for a mixture of experts 6·N·D uses the active parameters; the total is stated."""
    w = World(
        tmp_path,
        model("lm", parameters=400_000_000_000, active_parameters=80_000_000_000),
    )
    w.pod("p1", "train-1", 512, T0, T0 + timedelta(hours=10))
    w.run("R", job="train-1", tokens=1e10)
    w.refresh()
    r = w.one("marts.training_run_compute", run_id="R")
    assert r["parameters"] == 80_000_000_000 and r["total_parameters"] == 400_000_000_000
    close(r["architecture_flop"], 6 * 80e9 * 1e10)
    lm = w.one("marts.model_compute", model_name="lm")
    assert lm["parameters"] == 400_000_000_000 and lm["active_parameters"] == 80_000_000_000


@pytest.mark.parametrize("measured_hours", [0.0, 1.0, 100.0])
def test_energy_with_none_some_and_all_of_the_gpu_hours_measured(
    tmp_path: Path, measured_hours: float
) -> None:
    """§7 items 7-8: measured energy covers only the GPU-hours telemetry saw; the rest is
    estimated (TDP × power fraction × server overhead × PUE) and the total says both parts.
    100 GPUs for 1 h; telemetry saw 0, 1 or 100 GPU-hours at 500 W."""
    w = World(tmp_path, model("lm"))
    start = T0 + timedelta(hours=2)
    w.pod("p1", "train-1", 100, start, start + timedelta(hours=1))
    w.run("R", job="train-1", start=start, end=start + timedelta(hours=1), tokens=1e9)
    if measured_hours:
        w.telemetry("p1", start, measured_hours, measured_hours * 500 * H)
    w.refresh()
    r = w.one("marts.training_run_compute", run_id="R")
    measured = measured_hours * 500 * H * FACILITY / 3.6e9
    rest = (100 - measured_hours) * TDP / 1000 * FACILITY / 1000
    close(r["energy_mwh"], measured + rest)
    close(r["energy_measured_share"], measured / (measured + rest))
    if measured_hours:
        close(r["energy_measured_mwh"], measured)  # the measured part alone, never the total
        assert r["energy_method"].startswith("measured")
    else:
        assert r["energy_measured_mwh"] is None and r["energy_measured_share"] == 0
        assert r["energy_method"].startswith("estimated")
    lm = w.one("marts.model_compute", model_name="lm")
    close(lm["energy_mwh"], measured + rest)
    assert lm["energy_mwh"] * 3.6e9 >= lm["own_compute_flop"] / 2e13


def test_energy_from_compute_where_no_gpu_hours_are_known(tmp_path: Path) -> None:
    """Annex XI 2(e): energy may be estimated from compute. A run no inventory saw and that
    declares no hardware: compute ÷ (reference GPU's peak × assumed MFU) × TDP × factors."""
    w = World(tmp_path, model("lm"))
    w.pod("p1", "train-1", 8, T0, T0 + timedelta(hours=10))  # makes H100 the reference GPU
    w.run("R", job="train-1", tokens=1e9)
    w.run("OLD", job=None, start=T0 - timedelta(days=40), end=T0 - timedelta(days=30),
          stage="FINE_TUNING", tokens=1e11)  # fmt: skip
    w.refresh()
    old = w.one("marts.training_run_compute", run_id="OLD")
    flop = 6 * 1e10 * 1e11
    close(old["compute_flop"], flop)
    close(old["energy_mwh"], flop / (PEAK * 0.35) * TDP * FACILITY / 3.6e9)
    assert old["energy_method"].startswith("estimated from compute")


def test_1e23_means_gpai_obligations_and_no_notification(tmp_path: Path) -> None:
    """Guidelines point 17 and footnote 7: crossing 10^23 with a model that generates language
    makes it a presumed GPAI model; nothing is notified. A model that generates no language,
    images from text or video from text is outside the criterion."""
    w = World(
        tmp_path,
        model("lm"),
        model("vision", modalities={"input": ["image"], "output": ["other"]}),
    )
    w.pod("p1", "train-1", 1024, T0, T0 + timedelta(hours=100))
    w.run("R", job="train-1", end=T0 + timedelta(hours=100), tokens=2e12)  # 1.2e23
    w.pod("p2", "train-2", 1024, T0, T0 + timedelta(hours=100))
    w.run("V", job="train-2", model="vision", end=T0 + timedelta(hours=100), tokens=2e12)
    w.refresh()
    gpai = w.threshold("lm", "gpai")
    assert gpai["status"] == "crossed" and gpai["notification_due"] is None
    assert "nothing is notified" in gpai["consequence"] and "footnote 7" in gpai["consequence"]
    assert gpai["crossed_at"] is not None
    vision = w.threshold("vision", "gpai")
    assert vision["applies"] is False and vision["status"] == "not_applicable"
    assert "outputs are other" in vision["consequence"]
    assert w.threshold("vision", "systemic_risk")["status"] == "below"


def test_1e25_is_notified_two_weeks_after_the_plan_that_projects_it(tmp_path: Path) -> None:
    """Art 52(1): notify within two weeks of meeting 10^25 or of learning it will be met. The
    run's START recorded its plan (6 × 1e11 × 2e13 = 1.2e25) at T0: the deadline runs from
    T0, not from the crossing 8.3 days later, nor from when annex ran."""
    w = World(tmp_path, model("lm", parameters=100_000_000_000))
    w.run("R", job=None, end=T0 + timedelta(days=10), tokens=2e13,
          resources={"gpuCount": 32768, "gpuProduct": "NVIDIA-H100-80GB-HBM3"})  # fmt: skip
    w.refresh()
    r = w.one("marts.training_run_compute", run_id="R")
    assert r["physical_max_source"] == "declared"
    assert r["declared_gpu_model"] == "H100-SXM5-80GB"  # canonical, from the GFD label declared
    close(r["physical_max_flop"], 32768 * 10 * 86400 * PEAK)
    close(r["compute_flop"], 1.2e25)
    systemic = w.threshold("lm", "systemic_risk")
    assert systemic["status"] == "crossed"
    assert systemic["crossed_at"] == T0 + timedelta(days=10 * 1 / 1.2)
    assert systemic["learned_at"] == T0
    assert systemic["notification_due"] == T0 + timedelta(days=14)
    # MDF 7: hardware-days count the declared GPU-hours of a run no inventory saw, apart
    lm = w.one("marts.model_compute", model_name="lm")
    assert lm["gpu_hours"] == 0 and lm["declared_gpu_hours"] == pytest.approx(32768 * 240)
    assert lm["hardware_days"] == pytest.approx(32768 * 240 / 24)
    (gpus,) = w.rows("SELECT * FROM marts.model_gpu_hours")
    assert gpus["declared_gpu_hours"] == pytest.approx(32768 * 240) and gpus["gpu_hours"] == 0
    assert (gpus["gpu_model"], gpus["gfd_product"]) == ("H100-SXM5-80GB", "NVIDIA-H100-80GB-HBM3")


@pytest.mark.parametrize(
    ("systemic", "threshold"), [(True, 1e25 / 3), (False, 1e23 / 3), (None, 1e23 / 3)]
)
def test_a_modification_of_an_original_of_unknown_compute(
    tmp_path: Path, systemic: bool | None, threshold: float
) -> None:
    """Guidelines points 60-61: a modification counts against a third of the original's
    compute; unknown, against 10^25/3 for a systemic-risk original, 10^23/3 otherwise."""
    base = model("base")
    if systemic is not None:
        base["systemic_risk"] = systemic
    w = World(tmp_path, base, model("ft", base_models=["base"]))
    w.pod("p1", "ft-1", 8, T0, T0 + timedelta(hours=10))
    w.run("F", job="ft-1", model="ft", stage="FINE_TUNING", tokens=1e9)
    w.refresh()
    row = w.threshold("ft", "modification")
    close(row["threshold_flop"], threshold)
    assert ("10^25/3" if systemic else "10^23/3") in row["threshold_basis"]
    assert "point 61" in row["threshold_basis"]

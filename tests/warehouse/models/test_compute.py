"""The compute marts on a hand-computed scenario: rows inserted into the core tables of a fresh
migrated warehouse (telemetry loaded and rolled up by the real models), then every figure
checked against the arithmetic written out below.

The world (T0 = 2026-11-01 00:00 UTC, refresh at NOW = T0 + 3 h; [compute] PUE 1.2, server
overhead 1.5, power fraction 1.0, default MFU 0.35, margin 0.3). node-1 has H100 SXM GPUs
(dense bf16 peak 989.4 TFLOP/s, TDP 700 W).

* toy-lm (registry: N = 1e11, lineage job toy-lm.campaign, plan end T0 + 700 days)
  - R1 PRETRAINING, complete, T0..T0+2h: pod p1 holds 2 GPUs (GPU-a, GPU-b) for 2 h = 4 GPU-h.
    Telemetry: tensor_active 0.4; GPU-a's energy counter grows 180 kJ / 10 min (300 W) and
    resets at 01:30 (driver reload); GPU-b's exporter is down in hour 1 (a missing window).
    Tokens (annex_trainingUsage) 2e11.
  - R2 PRETRAINING, running since T0+2h, resuming from R1's checkpoint (continued
    pre-training): its lineage modelName is toy-lm-continued, but its parent campaign is
    toy-lm.campaign (the registry's join key). Pod p2 holds 512 GPUs, no telemetry, no tokens.
* toy-lm-ft (registry: N = 1e11, base model toy-lm, job toy-lm-ft.campaign)
  - R3 FINE_TUNING, complete, T0..T0+1h: pod p3 holds 1 GPU (GPU-d), telemetry without tensor
    activity (gpu_util 0.5, power gauge 250 W, no counter); a GEMM benchmark on node-1 reached
    0.8 of peak. Tokens 1e9.
  - R4 SYNTHETIC_GENERATION by toy-lm (the generator), in toy-lm-ft's campaign: no Kubernetes
    holdings; it wrote 5e9 tokens.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from annex.model_registry import ModelRegistry, parse_model, registry_rows
from annex.settings import ComputeSettings, WarehouseSettings
from services.compute import PeakTable
from warehouse import Warehouse, load_collection
from warehouse.models.compute import record_compute_alerts, refresh_compute
from warehouse.models.telemetry import TELEMETRY_MODEL
from warehouse.models.utilisation import refresh_gpu_hourly

T0 = datetime(2026, 11, 1)
NOW = T0 + timedelta(hours=3)
H = 3600.0
PEAK = 989.4e12
TDP = 700.0
OWN_LM = 4 * 3600.0 * 989.4e12 * 0.4 + 512 * 3600.0 * 989.4e12 * 0.35  # R1 + R2, hardware
CONFIG = ComputeSettings(
    pue=1.2, server_overhead=1.5, power_fraction=1.0, default_mfu=0.35, disagreement_margin=0.3
)
FACILITY = 1.5 * 1.2  # server overhead × PUE
MWH = 3.6e9
UNITS = {
    "gpu_util": ("ratio", "gauge"),
    "tensor_active": ("ratio", "gauge"),
    "gr_engine_active": ("ratio", "gauge"),
    "power_usage": ("watts", "gauge"),
    "total_energy_consumption": ("joules", "counter"),
}


def registry() -> ModelRegistry:
    base = {
        "provider": "Example Labs",
        "parameters": 100_000_000_000,
        "architecture": "dense decoder-only transformer",
        "licence": "LicenseRef-example",
        "modalities": {"input": ["text"], "output": ["text"]},
    }
    toy = parse_model(
        {
            **base,
            "name": "toy-lm",
            "lineage": {"jobs": ["toy-lm.campaign"], "namespaces": ["team"]},
            "training": {"dtype": "bf16", "plan": {"end": T0 + timedelta(days=700)}},
        },
        Path("toy-lm.yaml"),
    )
    ft = parse_model(
        {
            **base,
            "name": "toy-lm-ft",
            "provider": "Downstream Ltd",
            "base_models": ["toy-lm"],
            "lineage": {"jobs": ["toy-lm-ft.campaign"]},
            "alerts": {"thresholds": ["systemic_risk", "modification"]},
        },
        Path("toy-lm-ft.yaml"),
    )
    return ModelRegistry((toy, ft), Path("."))


class Telemetry:
    def __init__(self) -> None:
        self.series: list[dict] = []
        self.index: dict[tuple, int] = {}
        self.samples: list[tuple[datetime, int, float]] = []

    def add(self, gpu: str, metric: str, minutes, values, pod: str | None = None) -> None:
        key = (gpu, metric, pod)
        if key not in self.index:
            unit, kind = UNITS[metric]
            self.index[key] = len(self.series)
            self.series.append(
                {
                    "series_index": len(self.series),
                    "gpu_uuid": gpu,
                    "metric": metric,
                    "unit": unit,
                    "kind": kind,
                    "hostname": "node-1",
                    "model_name": "NVIDIA H100 80GB HBM3",
                    "pod": pod,
                    "namespace": "team" if pod else None,
                    "source": "query_range",
                }
            )
        for minute, value in zip(minutes, values, strict=True):
            self.samples.append((T0 + timedelta(minutes=minute), self.index[key], value))

    def batches(self):
        yield "telemetry_series", pa.RecordBatch.from_pylist(self.series)
        ts, index, value = zip(*self.samples, strict=True)
        yield (
            "telemetry_samples",
            pa.RecordBatch.from_pydict(
                {
                    "ts": pa.array(ts, pa.timestamp("us")),
                    "series_index": pa.array(index, pa.uint32()),
                    "value": pa.array(value, pa.float64()),
                }
            ),
        )


def telemetry() -> Telemetry:
    t = Telemetry()
    h0, h1, both = range(0, 60, 10), range(60, 120, 10), range(0, 120, 10)
    # GPU-a: a reading at -10 min (before the pod) so the first 10 minutes are integrated too.
    # 180 kJ per 10 minutes; the driver reloads at 01:30 and the counter restarts from 0.
    counter = [1_000_000.0 + 180_000.0 * k for k in range(10)] + [180_000.0, 360_000.0]
    t.add("GPU-a", "total_energy_consumption", [-10], [820_000.0])
    t.add("GPU-a", "total_energy_consumption", both, counter, pod="p1")
    t.add("GPU-a", "tensor_active", both, [0.4] * 12, pod="p1")
    t.add("GPU-a", "gr_engine_active", both, [0.9] * 12, pod="p1")
    # GPU-b: the same in hour 0, then the exporter is down for hour 1.
    t.add("GPU-b", "total_energy_consumption", [-10], [0.0])
    t.add("GPU-b", "total_energy_consumption", h0, [180_000.0 * k for k in range(1, 7)], pod="p1")
    t.add("GPU-b", "tensor_active", h0, [0.4] * 6, pod="p1")
    t.add("GPU-b", "gr_engine_active", h0, [0.9] * 6, pod="p1")
    # GPU-d (R3): an exporter without profiling metrics: gpu_util and the power gauge only.
    t.add("GPU-d", "gpu_util", h0, [0.5] * 6, pod="p3")
    t.add("GPU-d", "power_usage", h0, [250.0] * 6, pod="p3")
    assert len(list(h1)) == 6
    return t


def insert_core(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "INSERT INTO core.nodes (cluster, node_uid, node_name, gfd_product, gpu_capacity, "
        "gpu_allocatable, content_hash, valid_from, collection_id) VALUES "
        "('c', 'uid-node-1', 'node-1', 'NVIDIA-H100-80GB-HBM3', 8, 8, 0, ?, 'k8s-1')",
        [T0 - timedelta(days=1)],
    )
    for pod, job, gpus, start, end in (
        ("p1", "pretrain-1", 2, T0, T0 + timedelta(hours=2)),
        ("p2", "pretrain-2", 512, T0 + timedelta(hours=2), None),
        ("p3", "ft-1", 1, T0, T0 + timedelta(hours=1)),
    ):
        con.execute(
            "INSERT INTO core.gpu_allocations (cluster, pod_uid, namespace, pod_name, job_name, "
            "node_name, resource_name, gpus, category, valid_from, valid_from_source, valid_to, "
            "opened_collection_id) VALUES ('c', ?, 'team', ?, ?, 'node-1', 'nvidia.com/gpu', ?, "
            "'workload', ?, 'scheduled', ?, 'k8s-1')",
            ["uid-" + pod, pod, job, gpus, start, end],
        )
    runs = [
        # run_id, job_name, parent, state, started, ended, k8s job, model_name, stage
        ("camp-lm", "toy-lm.campaign", None, "START", T0, None, None, None, None),
        ("camp-ft", "toy-lm-ft.campaign", None, "START", T0, None, None, None, None),
        ("R1", "pretrain-1", "camp-lm", "COMPLETE", T0, T0 + timedelta(hours=2), "pretrain-1",
         "toy-lm", "PRETRAINING"),
        ("R2", "pretrain-2", "camp-lm", "START", T0 + timedelta(hours=2), None, "pretrain-2",
         "toy-lm-continued", "PRETRAINING"),
        ("R3", "ft-1", "camp-ft", "COMPLETE", T0, T0 + timedelta(hours=1), "ft-1", "toy-lm-ft",
         "FINE_TUNING"),
        ("R4", "synth-1", "camp-ft", "COMPLETE", T0, T0 + timedelta(hours=1), "synth-1",
         "toy-lm", "SYNTHETIC_GENERATION"),
        ("R5", "eval-1", "camp-lm", "COMPLETE", T0, T0 + timedelta(hours=1), "eval-1",
         "toy-lm", "EVALUATION"),
    ]  # fmt: skip
    for run_id, job, parent, state, started, ended, k8s_job, model, stage in runs:
        con.execute(
            "INSERT INTO core.lineage_runs (run_id, job_name, parent_run_id, state, started_at, "
            "ended_at, state_event_id, cluster, namespace, "
            "kubernetes_job_name, model_name, stage) VALUES (?, ?, ?, ?, ?, ?, ?, 'c', 'team', "
            "?, ?, ?)",
            [run_id, job, parent, state, started, ended, f"ev-{run_id}", k8s_job, model, stage],
        )
    facets = [
        ("input", "R1/dv-shards", "annex_trainingUsage", "ev-R1-usage", {"tokensConsumed": 2e11},
         "R1", "dv-shards"),
        ("input", "R3/dv-instruct", "annex_trainingUsage", "ev-R3-usage",
         {"tokensConsumed": 1_000_000_000}, "R3", "dv-instruct"),
        ("dataset", "dv-synthetic", "annex_content", "ev-R4-out", {"size": {"tokens": 5e9}},
         None, "dv-synthetic"),
    ]  # fmt: skip
    for kind, entity, name, event, facet, run_id, version in facets:
        con.execute(
            "INSERT INTO core.lineage_facet_heads VALUES (?, ?, ?, ?, ?, false, ?, ?, ?, NULL)",
            [kind, entity, name, event, T0, json.dumps(facet), run_id, version],
        )
    con.execute(
        "INSERT INTO core.lineage_run_io (run_id, dataset_version_id, direction, first_event_id) "
        "VALUES ('R4', 'dv-synthetic', 'OUTPUT', 'ev-R4-out'), "
        "('R1', 'dv-ckpt-1', 'OUTPUT', 'ev-R1'), ('R2', 'dv-ckpt-1', 'INPUT', 'ev-R2')"
    )
    # R2 resumes from R1's checkpoint: continued pre-training of toy-lm, not a new model
    con.execute(
        "INSERT INTO core.lineage_dataset_versions (dataset_version_id, dataset_id, namespace, "
        "name, version, version_source, produced_by_run_id) VALUES ('dv-ckpt-1', 'ckpt', "
        "'s3://ckpt', 'toy-lm', '1', 'facet', 'R1')"
    )
    con.execute(
        "INSERT INTO core.gpu_benchmarks (cluster, record_id, ts, node_name, gpu_uuid, gpu_model, "
        "benchmark, dtype, frac_peak_flops, correct, collection_id, loaded_at) VALUES "
        "('c', 'bench-1', ?, 'node-1', 'GPU-d', 'H100-SXM5-80GB', 'gemm', 'bf16', 0.8, true, "
        "'gb-1', ?)",
        [T0 - timedelta(days=1), T0],
    )


@pytest.fixture(scope="module")
def wh(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    path = tmp_path_factory.mktemp("compute") / "w.duckdb"
    wh = Warehouse(WarehouseSettings(path=path, lock_timeout_seconds=5))
    load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=telemetry().batches(), publish=False)
    with wh.writer() as con:
        refresh_gpu_hourly(con)
        insert_core(con)
        counts = refresh_compute(con, CONFIG, registry_rows(registry()), PeakTable(), now=NOW)
    assert counts == {"runs": 4, "models": 2, "alerts": 3, "recomputed": 4}
    return wh


def rows(wh: Warehouse, sql: str, params: list | None = None) -> list[dict]:
    with duckdb.connect(str(wh.path), read_only=True) as con:
        cursor = con.execute(sql, params or [])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


def run(wh: Warehouse, run_id: str) -> dict:
    (row,) = rows(wh, "SELECT * FROM marts.training_run_compute WHERE run_id = ?", [run_id])
    return row


def close(actual, expected, rel: float = 1e-9) -> None:
    assert actual == pytest.approx(expected, rel=rel), (actual, expected)


def test_runs_are_attributed_by_registry_job_and_evaluation_is_left_out(wh: Warehouse) -> None:
    got = rows(
        wh,
        "SELECT run_id, model_name, attributed_by, stage FROM marts.training_run_compute "
        "ORDER BY run_id",
    )
    assert got == [
        {"run_id": "R1", "model_name": "toy-lm", "attributed_by": "registry_job",
         "stage": "PRETRAINING"},
        {"run_id": "R2", "model_name": "toy-lm", "attributed_by": "registry_job",
         "stage": "PRETRAINING"},
        {"run_id": "R3", "model_name": "toy-lm-ft", "attributed_by": "registry_job",
         "stage": "FINE_TUNING"},
        # generated by toy-lm, but for toy-lm-ft's campaign: counts toward toy-lm-ft
        {"run_id": "R4", "model_name": "toy-lm-ft", "attributed_by": "registry_job",
         "stage": "SYNTHETIC_GENERATION"},
    ]  # fmt: skip


def test_telemetry_run_with_counter_reset_and_missing_window(wh: Warehouse) -> None:
    r = run(wh, "R1")
    assert r["gpu_hours"] == 4.0  # 2 GPUs × 2 h
    assert r["hardware_days"] == pytest.approx(4 / 24)
    assert r["wall_clock_seconds"] == 2 * H and r["wall_clock_source"] == "allocations"
    # GPU-a hours 0 and 1, GPU-b hour 0: 3 of 4 GPU-hours carry telemetry
    assert r["telemetry_coverage"] == 0.75 and r["energy_coverage"] == 0.75
    assert r["utilisation_source"] == "telemetry_tensor_active"
    close(r["utilisation"], 0.4)
    hardware = 4 * H * PEAK * 0.4  # 5.698944e18
    close(r["hardware_flop"], hardware)
    width = 0.25 * 0.75 + 0.50 * 0.25  # tensor band on the covered share, assumed on the rest
    close(r["hardware_flop_low"], hardware * (1 - width))
    close(r["hardware_flop_high"], hardware * (1 + width))
    architecture = 6 * 1e11 * 2e11  # 1.2e23
    assert r["parameters"] == 100_000_000_000 and r["tokens"] == 2e11
    close(r["architecture_flop"], architecture)
    close(r["architecture_flop_low"], architecture * 0.85)
    close(r["disagreement"], abs(hardware - architecture) / architecture)
    close(r["methods_ratio"], hardware / architecture)
    assert r["disagreement_flagged"] is True
    # 6·N·D = 1.2e23 on 4 GPU-hours is above the physical maximum (4 h × 989.4 TFLOP/s =
    # 1.42e19): an input error, a finding, and the hardware figure is of record (reference
    # eu-ai-act.md §7 item 5)
    close(r["physical_max_flop"], 4 * H * PEAK)
    assert r["physical_max_source"] == "allocations" and r["above_physical_max"] is True
    assert r["compute_method"] == "hardware"
    assert "physical maximum" in r["compute_method_basis"]
    close(r["compute_flop"], hardware)
    # GPU-a: 12 increments of 180 kJ (the reset at 01:30 counts its own value, 180 kJ);
    # GPU-b: 6 increments in hour 0; hour 1 is missing and filled at TDP.
    measured = 12 * 180_000 + 6 * 180_000
    assert r["measured_gpu_joules"] == measured
    filled = 1 * H * TDP * 1.0
    # measured: only the 3 GPU-hours telemetry saw; the total of record adds the TDP estimate
    close(r["energy_measured_mwh"], measured * FACILITY / MWH)
    close(r["energy_measured_mwh_low"], measured * 0.95 * FACILITY / MWH)
    close(r["energy_mwh"], (measured + filled) * FACILITY / MWH)  # 0.00288
    close(r["energy_mwh"], 0.00288)
    close(r["energy_mwh_low"], (measured * 0.95 + filled * 0.6) * FACILITY / MWH)
    close(r["energy_mwh_high"], (measured * 1.05 + filled * 1.4) * FACILITY / MWH)
    close(r["energy_measured_share"], measured / (measured + filled))
    estimated = 4 * 0.7 * 1.0 * FACILITY / 1000  # GPU-h × kW × f × k × PUE → MWh
    close(r["energy_estimated_mwh"], estimated)
    close(r["energy_estimated_mwh"], 0.00504)
    close(r["energy_estimated_mwh_low"], estimated * 0.6)
    assert any("1.00 of 4.00 GPU-hours" in gap for gap in r["gaps"])
    assert r["evidence_pod_uids"] == ["uid-p1"]
    assert r["evidence_gpu_uuids"] == ["GPU-a", "GPU-b"]
    assert r["evidence_event_ids"] == ["ev-R1", "ev-R1-usage"]
    assert r["namespace_in_registry"] is True
    assert r["running"] is False and r["rate_flop_per_s"] == 0


def test_running_run_without_telemetry_uses_the_default_and_has_a_rate(wh: Warehouse) -> None:
    r = run(wh, "R2")
    assert r["running"] is True and r["open_gpus"] == 512
    assert r["gpu_hours"] == 512.0  # 512 GPUs for 1 h up to the refresh
    assert r["utilisation_source"] == "assumed_default" and r["telemetry_coverage"] == 0
    hardware = 512 * H * PEAK * 0.35
    close(r["hardware_flop"], hardware)
    close(r["hardware_flop_low"], hardware * 0.5)
    assert r["architecture_flop"] is None and r["compute_method"] == "hardware"
    assert any("no token counts" in gap for gap in r["gaps"])
    close(r["rate_flop_per_s"], 512 * PEAK * 0.35)
    filled = 512 * H * TDP
    assert r["energy_measured_mwh"] is None and r["energy_measured_share"] == 0
    close(r["energy_mwh"], filled * FACILITY / MWH)  # all of it estimated: 0.64512
    close(r["energy_estimated_mwh"], 0.64512)
    assert r["energy_method"].startswith("estimated: GPU-hours × TDP")


def test_benchmark_calibrated_run_and_generation_stage(wh: Warehouse) -> None:
    r = run(wh, "R3")
    assert r["utilisation_source"] == "benchmark_calibrated"
    close(r["utilisation"], 0.5 * 0.8)  # busy (gpu_util) × benchmark fraction of peak
    close(r["hardware_flop"], 1 * H * PEAK * 0.4)
    close(r["hardware_flop_high"], 1 * H * PEAK * 0.4 * 1.4)
    assert r["evidence_benchmark_ids"] == ["bench-1"]
    close(r["architecture_flop"], 6 * 1e11 * 1e9)
    assert r["measured_gpu_joules"] == 250 * H  # the power gauge over the hour, no counter
    close(r["energy_measured_mwh"], 250 * H * FACILITY / MWH)
    assert r["namespace_in_registry"] is None  # toy-lm-ft lists no namespaces

    g = run(wh, "R4")
    assert g["flop_per_parameter_token"] == 2 and g["tokens"] == 5e9
    close(g["architecture_flop"], 2 * 1e11 * 5e9)  # 2·N(generator)·D = 1e21
    assert g["gpu_hours"] is None and g["hardware_flop"] is None
    assert g["wall_clock_source"] == "lineage" and g["wall_clock_seconds"] == H
    assert any("no GPU holdings" in gap for gap in g["gaps"])
    assert g["evidence_event_ids"] == ["ev-R4", "ev-R4-out"]


def test_models_accumulate_with_base_compute(wh: Warehouse) -> None:
    (lm,) = rows(wh, "SELECT * FROM marts.model_compute WHERE model_name = 'toy-lm'")
    own = OWN_LM
    assert lm["runs"] == 2 and lm["running_runs"] == 1
    assert lm["gpu_hours"] == 516.0
    assert lm["wall_clock_seconds"] == 3 * H  # R1 00:00-02:00 then R2 02:00-03:00
    assert lm["time_band"] == "<1 month"
    close(lm["own_compute_flop"], own)
    # only R1 has both estimates (R2 runs on): 5.7e18 against 1.2e23 is far beyond 30 %
    close(lm["disagreement"], abs(4 * H * PEAK * 0.4 - 1.2e23) / 1.2e23)
    assert lm["disagreement_flagged"] is True
    close(lm["architecture_flop"], 1.2e23)
    close(lm["cumulative_compute_flop"], own)
    assert lm["base_compute_flop"] == 0
    close(lm["energy_measured_mwh"], (12 + 6) * 180_000 * FACILITY / MWH)
    close(lm["energy_mwh"], 0.00288 + 0.64512)
    assert lm["energy_mwh_rounded"] == 0.648
    assert lm["energy_measured_share"] < 0.02 and "measured" in lm["energy_method"]
    close(lm["energy_estimated_mwh"], 0.00504 + 0.64512)
    assert lm["energy_estimated_mwh_rounded"] == 0.65
    assert "PUE 1.2" in lm["energy_measured_method"]
    close(lm["rate_flop_per_s"], 512 * PEAK * 0.35)
    close(lm["projected_compute_flop"], own + 512 * PEAK * 0.35 * (700 * 86400 - 3 * H))
    gpus = rows(wh, "SELECT gfd_product, gpu_model, gpu_hours FROM marts.model_gpu_hours "
                "WHERE model_name = 'toy-lm'")  # fmt: skip
    assert gpus == [
        {"gfd_product": "NVIDIA-H100-80GB-HBM3", "gpu_model": "H100-SXM5-80GB", "gpu_hours": 516.0}
    ]

    (ft,) = rows(wh, "SELECT * FROM marts.model_compute WHERE model_name = 'toy-lm-ft'")
    # R3's 6·N·D (6e20) is above its physical maximum (1 GPU-hour at peak, 3.6e18): hardware;
    # R4's generation has no holdings: its 2·N·D = 1e21 is the only estimate
    ft_own = 1 * H * PEAK * 0.4 + 2 * 1e11 * 5e9
    close(ft["own_compute_flop"], ft_own)
    close(ft["base_compute_flop"], own)
    close(ft["cumulative_compute_flop"], ft_own + own)


def test_thresholds_dates_and_notification_deadlines(wh: Warehouse) -> None:
    got = {
        (t["model_name"], t["threshold"]): t
        for t in rows(wh, "SELECT * FROM marts.model_compute_thresholds")
    }
    own = OWN_LM
    gpai = got[("toy-lm", "gpai")]
    # R2's 512 GPUs reach 1e23 in about 6.5 days, before the plan's end: projected, and the
    # criterion obliges no notification (Guidelines point 17, footnote 7)
    assert gpai["status"] == "projected" and gpai["alert"] is True
    assert gpai["notification_due"] is None and "nothing is notified" in gpai["consequence"]

    systemic = got[("toy-lm", "systemic_risk")]
    assert systemic["status"] == "projected" and systemic["alert"] is True
    seconds = (1e25 - own) / (512 * PEAK * 0.35)  # about 645 days at the current rate
    expected = NOW + timedelta(seconds=seconds)
    assert abs((systemic["projected_crossing_at"] - expected).total_seconds()) < 1e-3
    # learned when the rate that projects it began: R2's start, not when annex ran
    assert systemic["learned_at"] == T0 + timedelta(hours=2)
    assert systemic["notification_due"] == T0 + timedelta(hours=2, days=14)
    assert "Art 52(1)" in systemic["consequence"]
    assert got[("toy-lm", "modification")]["status"] == "not_applicable"

    modification = got[("toy-lm-ft", "modification")]
    close(modification["threshold_flop"], own / 3)
    # its own 1e21 is above a third of toy-lm's 6.4e20: a new provider; toy-lm is not a
    # systemic-risk model, so nothing is notified
    assert modification["status"] == "crossed" and modification["alert"] is True
    assert modification["notification_due"] is None
    ft_gpai = got[("toy-lm-ft", "gpai")]
    assert ft_gpai["status"] == "below" and ft_gpai["notification_due"] is None
    assert ft_gpai["alert_enabled"] is False and ft_gpai["alert"] is False


def test_alerts_are_recorded_once_per_model_threshold_and_day(wh: Warehouse) -> None:
    with wh.writer() as con:
        first = record_compute_alerts(con, "test", now=NOW)
        again = record_compute_alerts(con, "test", now=NOW + timedelta(hours=1))
        next_day = record_compute_alerts(con, "test", now=NOW + timedelta(days=1))
    assert [(a["model_name"], a["threshold"]) for a in first] == [
        ("toy-lm", "gpai"),
        ("toy-lm", "systemic_risk"),
        ("toy-lm-ft", "modification"),
    ]
    assert again == []
    assert len(next_day) == 3
    assert rows(wh, "SELECT count(*) AS n FROM audit.compute_alerts") == [{"n": 6}]


def test_refresh_is_idempotent_and_records_its_config(wh: Warehouse) -> None:
    before = rows(wh, "SELECT * EXCLUDE (refreshed_at) FROM marts.model_compute ORDER BY 1")
    with wh.writer() as con:
        refresh_compute(con, CONFIG, registry_rows(registry()), PeakTable(), now=NOW)
    after = rows(wh, "SELECT * EXCLUDE (refreshed_at) FROM marts.model_compute ORDER BY 1")
    assert before == after
    configs = rows(wh, "SELECT config FROM audit.compute_refreshes")
    assert len(configs) == 2 and json.loads(configs[0]["config"])["pue"] == 1.2


def test_a_running_runs_token_plan_projects_a_threshold_from_when_it_was_learned(
    tmp_path: Path,
) -> None:
    """A running run whose START facets plan 6 × 1e11 × 2e13 = 1.2e25 FLOP: not compute done
    (no holdings yet), but the plan meets 10^25, so the notification is due two weeks after
    the provider learned it (the plan's recorded time, Art 52(1)), on every refresh."""
    wh = Warehouse(WarehouseSettings(path=tmp_path / "p.duckdb", lock_timeout_seconds=5))
    model = parse_model(
        {
            "name": "plan-lm",
            "provider": "Example Labs",
            "parameters": 100_000_000_000,
            "architecture": "dense decoder-only transformer",
            "licence": "LicenseRef-example",
            "modalities": {"input": ["text"], "output": ["text"]},
        },
        Path("plan-lm.yaml"),
    )
    rows_ = registry_rows(ModelRegistry((model,), Path(".")))
    with wh.writer() as con:
        con.execute(
            "INSERT INTO core.lineage_runs (run_id, state, started_at, state_event_id, "
            "model_name, stage) VALUES ('P1', 'START', ?, 'ev-P1', 'plan-lm', 'PRETRAINING')",
            [T0],
        )
        con.execute(
            "INSERT INTO core.lineage_facet_heads VALUES ('input', 'P1/dv', "
            "'annex_trainingUsage', 'ev-P1-usage', ?, false, ?, 'P1', 'dv', NULL)",
            [T0, json.dumps({"tokensConsumed": 2e13})],
        )
        refresh_compute(con, CONFIG, rows_, PeakTable(), now=NOW)
        record_compute_alerts(con, "test", now=NOW)
        later = NOW + timedelta(days=3)
        refresh_compute(con, CONFIG, rows_, PeakTable(), now=later)
    (p1,) = rows(wh, "SELECT * FROM marts.training_run_compute")
    assert p1["compute_flop"] is None  # nothing done that annex can see
    close(p1["planned_remaining_flop"], 6 * 1e11 * 2e13)
    (m,) = rows(wh, "SELECT * FROM marts.model_compute")
    assert m["cumulative_compute_flop"] == 0
    close(m["planned_compute_flop"], 1.2e25)
    got = {t["threshold"]: t for t in rows(wh, "SELECT * FROM marts.model_compute_thresholds")}
    systemic = got["systemic_risk"]
    assert systemic["status"] == "projected"
    assert systemic["projection_basis"] == "planned_tokens"
    # learned when the plan was recorded (P1's START), not when annex first ran
    assert systemic["learned_at"] == T0
    assert systemic["notification_due"] == T0 + timedelta(days=14)
    assert got["gpai"]["status"] == "projected" and got["gpai"]["notification_due"] is None

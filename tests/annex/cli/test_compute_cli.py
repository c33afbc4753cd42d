"""``annex compute --model NAME``: the figures it prints are the rows of the published marts,
with their methods, bands, thresholds, deadlines and gaps; registry errors and unknown models
are clear errors with an exit code."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from annex.cli import main
from annex.settings import load_settings
from warehouse import Warehouse
from warehouse.migrate import utc_now

MODEL = """\
name: cli-lm
provider: Example Labs
parameters: 100000000000
architecture: dense decoder-only transformer
licence: LicenseRef-example
modalities: {input: [text], output: [text]}
lineage: {jobs: [cli-lm.campaign], namespaces: [team]}
training: {plan: {end: 2099-01-01}}
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    models = tmp_path / "models"
    models.mkdir()
    (models / "cli-lm.yaml").write_text(MODEL, encoding="utf-8")
    path = tmp_path / "annex.toml"
    path.write_text(
        f'[warehouse]\npath = "{tmp_path / "w.duckdb"}"\n[models]\ndir = "{models}"\n'
        "[compute]\npue = 1.1\n",
        encoding="utf-8",
    )
    start = utc_now() - timedelta(days=2)
    with Warehouse(load_settings(path).warehouse).writer() as con:
        _scenario(con, start)
    return path


def _scenario(con: duckdb.DuckDBPyConnection, start: datetime) -> None:
    """One finished 64-GPU pre-training day with 2e11 tokens, one running 8-GPU job."""
    con.execute(
        "INSERT INTO core.nodes (cluster, node_uid, node_name, gfd_product, content_hash, "
        "valid_from, collection_id) VALUES ('c', 'u1', 'node-1', 'NVIDIA-H100-80GB-HBM3', 0, ?, "
        "'k8s')",
        [start - timedelta(days=1)],
    )
    for pod, job, gpus, end in (
        ("p1", "pre-1", 64, start + timedelta(days=1)),
        ("p2", "pre-2", 8, None),
    ):
        con.execute(
            "INSERT INTO core.gpu_allocations (cluster, pod_uid, namespace, pod_name, job_name, "
            "node_name, resource_name, gpus, category, valid_from, valid_from_source, valid_to, "
            "opened_collection_id) VALUES ('c', ?, 'team', ?, ?, 'node-1', 'nvidia.com/gpu', ?, "
            "'workload', ?, 'scheduled', ?, 'k8s')",
            [pod, pod, job, gpus, start if end else start + timedelta(days=1), end],
        )
    con.execute(
        "INSERT INTO core.lineage_runs (run_id, job_name, state, started_at) "
        "VALUES ('camp', 'cli-lm.campaign', 'START', ?)",
        [start],
    )
    for run_id, job, state, ended in (("R1", "pre-1", "COMPLETE", start + timedelta(days=1)),
                                      ("R2", "pre-2", "START", None)):  # fmt: skip
        con.execute(
            "INSERT INTO core.lineage_runs (run_id, job_name, parent_run_id, state, started_at, "
            "ended_at, state_event_id, cluster, namespace, "
            "kubernetes_job_name, model_name, stage) VALUES (?, ?, 'camp', ?, ?, ?, ?, 'c', "
            "'team', ?, 'cli-lm', 'PRETRAINING')",
            [run_id, job, state, start, ended, f"ev-{run_id}", job],
        )
    # R2 resumes from R1's checkpoint: continued pre-training, counted toward cli-lm
    con.execute(
        "INSERT INTO core.lineage_run_io (run_id, dataset_version_id, direction) VALUES "
        "('R1', 'dv-ckpt', 'OUTPUT'), ('R2', 'dv-ckpt', 'INPUT')"
    )
    con.execute(
        "INSERT INTO core.lineage_dataset_versions (dataset_version_id, dataset_id, namespace, "
        "name, version_source, produced_by_run_id) VALUES ('dv-ckpt', 'ckpt', 's3://c', 'cli-lm', "
        "'run', 'R1')"
    )
    con.execute(
        "INSERT INTO core.lineage_facet_heads VALUES ('input', 'R1/dv', 'annex_trainingUsage', "
        "'ev-usage', ?, false, ?, 'R1', 'dv', NULL)",
        [start, json.dumps({"tokensConsumed": 2e11})],
    )


def _published(config: Path, sql: str) -> list[dict]:
    with Warehouse(load_settings(config).warehouse).reader() as con:
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _iso(row: dict) -> dict:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}


def test_json_output_is_the_published_marts(config: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["--config", str(config), "compute", "--model", "cli-lm", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (model,) = _published(config, "SELECT * FROM marts.model_compute WHERE model_name = 'cli-lm'")
    assert report["model"] == _iso(model)
    thresholds = _published(
        config,
        "SELECT * FROM marts.model_compute_thresholds WHERE model_name = 'cli-lm' "
        "ORDER BY threshold_flop",
    )
    assert report["thresholds"] == [_iso(t) for t in thresholds]
    assert [r["run_id"] for r in report["runs"]] == ["R1", "R2"]
    # and the marts hold what the scenario implies: 64 GPU-days + the running job's 8 GPUs
    assert model["gpu_hours"] == pytest.approx(64 * 24 + 8 * 24, abs=0.1)  # R2 runs on
    assert model["architecture_flop"] == pytest.approx(6 * 1e11 * 2e11)
    assert model["running_runs"] == 1 and model["rate_flop_per_s"] == pytest.approx(
        8 * 989.4e12 * 0.35
    )
    assert "PUE 1.1" in model["energy_method"] and model["energy_measured_share"] == 0


def test_text_output_shows_figures_methods_thresholds_and_gaps(
    config: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["--config", str(config), "compute", "--model", "cli-lm"]) == 0
    out = capsys.readouterr().out
    (model,) = _published(config, "SELECT * FROM marts.model_compute WHERE model_name = 'cli-lm'")
    assert f"GPU-hours: {model['gpu_hours']:,.1f}" in out
    assert (
        f"hardware-based (GPUs x dense peak x utilisation x time): {model['hardware_flop']:.3g}"
        in out
    )
    assert (
        "architecture-based (6 x N x tokens; 2 x N for generation): "
        f"{model['architecture_flop']:.3g}" in out
    )
    assert f"band {model['cumulative_compute_flop_low']:.3g} to" in out
    assert f"rounded {model['energy_mwh_rounded']:.3g} MWh" in out
    assert "measured (integrated DCGM energy) for 0 %" in out and "TDP" in out
    (gpai,) = _published(
        config,
        "SELECT * FROM marts.model_compute_thresholds "
        "WHERE model_name = 'cli-lm' AND threshold = 'gpai'",
    )
    # R1's 6·N·D (1.2e23) is above its 64 GPU-days at peak (5.5e21): the hardware figure is of
    # record, and the running job's rate reaches 10^23 later: projected, never notified
    assert gpai["status"] == "projected" and gpai["notification_due"] is None
    assert "notify by no notification (projected by rate_to_plan_end); ALERT" in out
    assert "systemic_risk (1e+25 FLOP" in out and "projected" in out
    assert "without DCGM energy or power: estimated at TDP" in out  # the telemetry gap


def test_unknown_model_and_registry_error_exit_with_a_hint(
    config: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["--config", str(config), "compute", "--model", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no compute figures for model 'nope' (models: cli-lm)" in err and "hint:" in err
    bad = config.parent / "models" / "cli-lm.yaml"
    bad.write_text(MODEL.replace("licence:", "license:"), encoding="utf-8")
    assert main(["--config", str(config), "compute", "--model", "cli-lm"]) == 2
    err = capsys.readouterr().err
    assert "unknown field license" in err and "did you mean licence?" in err

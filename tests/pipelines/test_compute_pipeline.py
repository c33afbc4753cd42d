"""The compute asset, its checks and the threshold-alert sensor: a model whose pre-training run
passed 10^23 FLOP (6 × 1e11 parameters × 2e11 tokens = 1.2e23) makes the check fail and the
sensor start a run that records the alert in audit.compute_alerts and fails; a model whose
registry file turns alerts off raises nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from pipelines.defs.compute.assets import training_compute
from pipelines.defs.compute.checks import CHECKS
from pipelines.defs.compute.sensors import compute_alert_job, compute_threshold_alerts
from pipelines.defs.resources import build_resources
from warehouse import Warehouse
from warehouse.migrate import utc_now

MODEL = """\
name: {name}
provider: Example Labs
parameters: 100000000000
architecture: dense decoder-only transformer
licence: LicenseRef-example
modalities: {{input: [text], output: [text]}}
lineage: {{jobs: [{name}.campaign]}}
alerts: {{enabled: {enabled}, thresholds: [gpai, systemic_risk]}}
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    models = tmp_path / "models"
    models.mkdir()
    (models / "loud-lm.yaml").write_text(MODEL.format(name="loud-lm", enabled="true"))
    (models / "quiet-lm.yaml").write_text(MODEL.format(name="quiet-lm", enabled="false"))
    path = tmp_path / "annex.toml"
    path.write_text(
        f'[warehouse]\npath = "{tmp_path / "w.duckdb"}"\nlock_timeout_seconds = 10\n'
        f'[models]\ndir = "{models}"\n',
        encoding="utf-8",
    )
    from annex.settings import load_settings

    wh = Warehouse(load_settings(path).warehouse)
    start = utc_now() - timedelta(days=3)
    with wh.writer() as con:
        for name in ("loud-lm", "quiet-lm"):
            _pretraining_run(con, name, start)
    return path


def _pretraining_run(con: duckdb.DuckDBPyConnection, name: str, start: datetime) -> None:
    con.execute(
        "INSERT INTO core.lineage_runs (run_id, job_name, state, started_at) "
        "VALUES (?, ?, 'START', ?)",
        [f"camp-{name}", f"{name}.campaign", start],
    )
    con.execute(
        "INSERT INTO core.lineage_runs (run_id, job_name, parent_run_id, state, started_at, "
        "ended_at, state_event_id, model_name, stage) VALUES (?, ?, ?, 'COMPLETE', ?, ?, ?, ?, "
        "'PRETRAINING')",
        [f"run-{name}", f"{name}-pretrain", f"camp-{name}", start, start + timedelta(days=1),
         f"ev-{name}", name],
    )  # fmt: skip
    con.execute(
        "INSERT INTO core.lineage_facet_heads VALUES ('input', ?, 'annex_trainingUsage', ?, ?, "
        "false, ?, ?, 'dv-shards', NULL)",
        [f"run-{name}/dv-shards", f"ev-{name}-usage", start, json.dumps({"tokensConsumed": 2e11}),
         f"run-{name}"],
    )  # fmt: skip


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as test_instance:
        yield test_instance


def _alerts(config: Path) -> list[tuple]:
    from annex.settings import load_settings

    with Warehouse(load_settings(config).warehouse).reader() as con:
        return con.execute(
            "SELECT model_name, threshold, status, raised_by FROM audit.compute_alerts "
            "ORDER BY raised_at, threshold"
        ).fetchall()


def test_check_fails_and_the_sensor_raises_a_failed_run_with_a_record(
    config: Path, instance: dg.DagsterInstance
) -> None:
    result = dg.materialize(
        [training_compute, *CHECKS],
        resources=build_resources(str(config)),
        instance=instance,
        selection=[training_compute],
        raise_on_error=False,
    )
    assert result.success
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    clear = evaluations["compute_thresholds_clear"]
    assert not clear.passed and clear.severity == dg.AssetCheckSeverity.ERROR
    assert clear.metadata["alerts"].value == 1  # quiet-lm's crossing does not alert
    assert "loud-lm gpai (1e+23 FLOP) crossed" in clear.metadata["first_alerts"].value
    assert evaluations["compute_methods_agree"].passed  # no hardware figure to disagree with

    with dg.build_sensor_context(
        instance=instance, resources=build_resources(str(config))
    ) as context:
        answer = compute_threshold_alerts(context)
    assert isinstance(answer, dg.SensorResult)
    (request,) = answer.run_requests
    assert request.tags["annex/model"] == "loud-lm"
    assert request.run_key == f"compute-alert:loud-lm:{utc_now().date()}"

    run = compute_alert_job.execute_in_process(
        run_config=request.run_config,
        resources=build_resources(str(config)),
        instance=instance,
        raise_on_error=False,
    )
    assert not run.success
    failure = run.failure_data_for_node("raise_compute_alerts")
    assert failure is not None
    assert "Article 51 threshold alert for loud-lm" in str(failure.error)
    assert "gpai (1e+23 FLOP) crossed" in str(failure.error)
    assert "no notification" in str(failure.error)  # 10^23: Guidelines footnote 7
    recorded = _alerts(config)
    assert [(m, t, s) for m, t, s, _ in recorded] == [("loud-lm", "gpai", "crossed")]
    assert recorded[0][3] == f"dagster run {run.run_id}"

    with dg.build_sensor_context(
        instance=instance, resources=build_resources(str(config))
    ) as context:
        again = compute_threshold_alerts(context)
    assert isinstance(again, dg.SkipReason)  # recorded today: nothing new to raise

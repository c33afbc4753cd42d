"""The Dagster compaction job runs ``annex warehouse compact`` (``warehouse.compaction``) with
``[retention]``; its daily schedule is stopped by default, as the export's is."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from annex.settings import load_settings
from pipelines.definitions import defs
from pipelines.defs.resources import build_resources
from pipelines.defs.retention.assets import warehouse_compaction
from pipelines.execution import write_settings
from warehouse import Warehouse


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "annex.toml"
    config.write_text(
        f'[warehouse]\npath = "{tmp_path / "annex.duckdb"}"\n'
        f'[retention]\ntelemetry_days = 3\ndir = "{tmp_path / "cold"}"\n',
        encoding="utf-8",
    )
    Warehouse(load_settings(str(config)).warehouse).migrate()
    return config


def test_the_compaction_job_compacts_with_the_configured_retention(tmp_path: Path) -> None:
    config = _config(tmp_path)
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [warehouse_compaction],
            resources=build_resources(str(config)),
            run_config=dg.RunConfig(ops={"warehouse_compaction": {"config": {"dry_run": True}}}),
            instance=instance,
        )
    assert result.success
    [materialisation] = result.asset_materializations_for_node("warehouse_compaction")
    assert materialisation.metadata["dry_run"].value is True
    assert materialisation.metadata["partitions"].value == 0  # nothing collected yet


def test_the_retention_survives_the_settings_a_cli_run_writes(tmp_path: Path) -> None:
    config = _config(tmp_path)
    written = write_settings(load_settings(str(config)), [], tmp_path / "written.toml")
    retention = load_settings(str(written)).retention
    assert retention.telemetry_days == 3
    assert retention.dir == tmp_path / "cold"


def test_the_compaction_schedule_is_daily_and_stopped_by_default() -> None:
    schedule = defs.get_schedule_def("daily_compaction")
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    assert schedule.job_name == "compaction_job"
    assert schedule.cron_schedule == "0 4 * * *"

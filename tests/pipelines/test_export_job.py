"""The Dagster export job runs ``annex export`` (``warehouse.export``) into ``[export] dir``;
its schedule is stopped by default."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg

from annex.settings import load_settings
from pipelines.definitions import defs
from pipelines.defs.export.assets import parquet_export
from pipelines.defs.resources import build_resources
from pipelines.execution import write_settings
from warehouse import Warehouse


def _config(tmp_path: Path, export_dir: Path | None) -> Path:
    lines = [f'[warehouse]\npath = "{tmp_path / "annex.duckdb"}"\n']
    if export_dir is not None:
        lines.append(f'[export]\ndir = "{export_dir}"\n')
    config = tmp_path / "annex.toml"
    config.write_text("\n".join(lines), encoding="utf-8")
    wh = Warehouse(load_settings(str(config)).warehouse)
    wh.migrate()
    wh.publish()
    return config


def test_the_export_job_writes_the_export_to_the_configured_folder(tmp_path: Path) -> None:
    config = _config(tmp_path, tmp_path / "lake")
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [parquet_export], resources=build_resources(str(config)), instance=instance
        )
    assert result.success
    manifest = tmp_path / "lake" / "_annex_export.json"
    assert json.loads(manifest.read_text(encoding="utf-8"))["tables"]
    [materialisation] = result.asset_materializations_for_node("parquet_export")
    assert materialisation.metadata["manifest"].value == str(manifest)


def test_without_a_folder_it_exports_beside_the_warehouse(tmp_path: Path) -> None:
    config = _config(tmp_path, None)
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [parquet_export],
            resources=build_resources(str(config)),
            run_config=dg.RunConfig(ops={"parquet_export": {"config": {}}}),
            instance=instance,
        )
    assert result.success
    assert (tmp_path / "export" / "_annex_export.json").is_file()


def test_the_export_folder_survives_the_settings_a_cli_run_writes(tmp_path: Path) -> None:
    config = _config(tmp_path, tmp_path / "lake")
    written = write_settings(load_settings(str(config)), [], tmp_path / "written.toml")
    assert load_settings(str(written)).export.dir == tmp_path / "lake"


def test_the_export_schedule_is_stopped_by_default() -> None:
    schedule = defs.get_schedule_def("daily_export")
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    assert schedule.job_name == "export_job"

"""The report assets: a month partition renders the PDF beside the warehouse and records the
evidence it rests on in the materialisation; the monthly schedule asks for the month just
ended."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
from pypdf import PdfReader

from pipelines.defs.reports import defs as report_defs
from pipelines.defs.reports.assets import REPORT_ASSETS
from pipelines.defs.reports.schedules import monthly_reports, reports_job
from pipelines.defs.resources import build_resources
from tests.unit.report_scenario import build_scenario

pytestmark = pytest.mark.slow


def test_fleet_report_asset_renders_the_month(tmp_path: Path) -> None:
    wh = build_scenario(tmp_path)
    config = tmp_path / "annex.toml"
    config.write_text(f'[warehouse]\npath = "{wh.path}"\n', encoding="utf-8")
    fleet = next(a for a in REPORT_ASSETS if a.key == dg.AssetKey("fleet_report"))
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [fleet],
            partition_key="2026-10-01",
            resources=build_resources(str(config)),
            instance=instance,
        )
    assert result.success
    [materialization] = result.asset_materializations_for_node("fleet_report")
    metadata = materialization.metadata
    path = Path(metadata["path"].value)
    assert path == tmp_path / "reports" / "fleet-2026-10.pdf"
    manifest = json.loads(PdfReader(path).attachments["manifest.json"][0])
    assert metadata["evidence_digest"].value == manifest["evidence_digest"]
    assert (
        metadata["data_cutoff"].value == "2026-10-31T01:01:00"
    )  # the last inventory or telemetry collection
    assert metadata["fetches_refused"].value == 0
    assert manifest["parameters"]["period"] == "2026-10"


def test_monthly_schedule_requests_the_month_just_ended() -> None:
    assert {a.key.to_user_string() for a in REPORT_ASSETS} == {
        "fleet_report",
        "attestation_report",
        "training_summary_report",
        "model_documentation_report",
        "training_compute_report",
    }
    assert reports_job.name in {j.name for j in report_defs.jobs}
    when = datetime(2026, 11, 1, 6, 0, tzinfo=UTC)
    # everything under a test instance: resolving definitions without one meets the dead
    # storage reference an earlier test's disposed instance leaves behind
    with dg.instance_for_test() as instance:
        defs = dg.Definitions.merge(report_defs, dg.Definitions(resources=build_resources(None)))
        schedule = defs.resolve_schedule_def(monthly_reports.name)
        assert schedule.cron_schedule == "0 6 1 * *"
        context = dg.build_schedule_context(instance=instance, scheduled_execution_time=when)
        requests = schedule.evaluate_tick(context).run_requests
    assert [r.partition_key for r in requests] == ["2026-10-01"]

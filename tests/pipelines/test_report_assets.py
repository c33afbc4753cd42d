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
from tests.helpers.report_scenario import build_scenario

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


def test_the_last_months_report_is_rendered_again_when_its_evidence_is_updated() -> None:
    fleet = next(a for a in REPORT_ASSETS if a.key == dg.AssetKey("fleet_report"))
    upstream = dg.AssetSpec("published_warehouse")
    now = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    with dg.instance_for_test() as instance:
        defs = dg.Definitions(assets=[fleet, upstream], resources=build_resources(None))
        # October's report exists (November is not over); nothing new since: nothing to do
        instance.report_runless_asset_event(
            dg.AssetMaterialization("fleet_report", partition="2026-10-01")
        )
        first = dg.evaluate_automation_conditions(defs, instance, evaluation_time=now)
        assert first.total_requested == 0
        # a collection publishes the warehouse (late October evidence may be in it): October's
        # report, and only it, is rendered again; older months stay as they were signed
        instance.report_runless_asset_event(dg.AssetMaterialization("published_warehouse"))
        second = dg.evaluate_automation_conditions(
            defs, instance, evaluation_time=now, cursor=first.cursor
        )
        assert second.total_requested == 1
        requested = second.get_requested_partitions(dg.AssetKey("fleet_report"))
    assert requested == {"2026-10-01"}
    with dg.instance_for_test():
        resolved = dg.Definitions.merge(
            report_defs, dg.Definitions(resources=build_resources(None))
        )
        sensor = resolved.resolve_sensor_def("reports_on_new_evidence")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING

"""The technical documentation asset: a month partition renders every registry model's
documentation in each of its three editions into that month's folder beside the warehouse."""

from pathlib import Path

import dagster as dg
import pytest

from pipelines.defs.reports.assets import REPORT_ASSETS
from pipelines.defs.resources import build_resources
from tests.helpers.model_documentation_scenario import build_documentation_scenario

pytestmark = pytest.mark.slow


def test_documentation_asset_renders_every_model_in_every_edition(tmp_path: Path) -> None:
    wh, models = build_documentation_scenario(tmp_path)
    config = tmp_path / "annex.toml"
    config.write_text(
        f'[warehouse]\npath = "{wh.path}"\n[models]\ndir = "{models}"\n', encoding="utf-8"
    )
    key = dg.AssetKey("model_documentation_report")
    asset = next(a for a in REPORT_ASSETS if a.key == key)
    assert set(asset.asset_deps[key]) == {
        dg.AssetKey("lineage_models"),
        dg.AssetKey("training_compute"),
    }
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [asset],
            partition_key="2026-10-01",
            resources=build_resources(str(config)),
            instance=instance,
        )
    assert result.success
    [materialization] = result.asset_materializations_for_node("model_documentation_report")
    assert materialization.metadata["reports"].value == 6  # 2 models × 3 editions
    month = tmp_path / "reports" / "2026-10"
    assert sorted(p.name for p in month.iterdir()) == [
        f"model_documentation-{model}-{edition}.pdf"
        for model in ("planned-lm", "student")
        for edition in ("ai_office", "downstream", "national_authority")
    ]

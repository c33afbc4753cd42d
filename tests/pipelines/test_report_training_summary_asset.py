"""The training-content summary asset: a month partition renders every registry model's summary
into that month's folder beside the warehouse (the summary's update history)."""

import hashlib
import json
import zipfile
from pathlib import Path

import dagster as dg
import pytest
from pypdf import PdfReader

from annex.settings import WarehouseSettings
from pipelines.defs.reports.assets import REPORT_ASSETS
from pipelines.defs.resources import build_resources
from tests.helpers.lineage_warehouse import load
from tests.helpers.training_summary_scenario import MODEL_FILE, student_events
from warehouse import Warehouse

pytestmark = pytest.mark.slow


def test_summary_asset_renders_every_registry_model(tmp_path: Path) -> None:
    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5))
    load(wh, student_events())
    wh.publish()
    models = tmp_path / "models"
    models.mkdir()
    (models / "student.yaml").write_text(MODEL_FILE, encoding="utf-8")
    config = tmp_path / "annex.toml"
    config.write_text(
        f'[warehouse]\npath = "{wh.path}"\n[models]\ndir = "{models}"\n', encoding="utf-8"
    )
    asset = next(a for a in REPORT_ASSETS if a.key == dg.AssetKey("training_summary_report"))
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [asset],
            partition_key="2026-10-01",
            resources=build_resources(str(config)),
            instance=instance,
        )
    assert result.success
    [materialization] = result.asset_materializations_for_node("training_summary_report")
    path = Path(materialization.metadata["path"].value)
    assert path == tmp_path / "reports" / "2026-10" / "training_summary-student.pdf"
    # a public document: its manifest is in the non-public evidence bundle, named by its hash
    assert set(PdfReader(path).attachments) == {"top_domains.csv"}
    bundle = Path(materialization.metadata["evidence_bundle"].value)
    assert bundle == path.parent / "evidence" / "training_summary-student.evidence.zip"
    sha256 = hashlib.sha256(bundle.read_bytes()).hexdigest()
    assert materialization.metadata["evidence_bundle_sha256"].value == sha256
    with zipfile.ZipFile(bundle) as files:
        manifest = json.loads(files.read("manifest.json"))
    assert manifest["parameters"] == {"model": "student"}
    assert materialization.metadata["evidence_digest"].value == manifest["evidence_digest"]

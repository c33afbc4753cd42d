"""The Dagster catalog is complete: every automation, job and asset described, every asset
owned and tagged, every table asset with its columns and their descriptions."""

from __future__ import annotations

import dagster as dg
import pytest

from pipelines.definitions import defs
from pipelines.defs.catalog import (
    DEFAULT_OWNER,
    OWNER_ENV,
    describe_asset,
    warehouse_relations,
    writer_of,
)
from warehouse.dictionary import DOCUMENTED_SCHEMAS

SOURCES = {
    "kubernetes",
    "telemetry",
    "gpubench",
    "attestation",
    "lineage",
    "compute",
    "reports",
    "warehouse",
}
LAYERS = {"raw", "core", "marts", "audit", "report", "export"}


@pytest.fixture(scope="module")
def graph():
    return defs.resolve_asset_graph()


def test_every_schedule_sensor_and_job_has_a_description() -> None:
    repo = defs.get_repository_def()
    automations = [*repo.schedule_defs, *repo.sensor_defs]
    jobs = [j for j in repo.get_all_jobs() if not j.name.startswith("__ASSET_JOB")]
    assert automations and jobs
    undescribed = [d.name for d in [*automations, *jobs] if not (d.description or "").strip()]
    assert undescribed == []


def test_every_asset_has_a_description_an_owner_and_source_and_layer_tags(graph) -> None:
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert (node.description or "").strip(), key
        assert node.owners, key
        assert node.tags.get("source") in SOURCES, (key, node.tags)
        assert node.tags.get("layer") in LAYERS, (key, node.tags)


def test_every_table_asset_has_its_column_schema_with_descriptions(graph) -> None:
    table_assets = [
        key
        for key in graph.get_all_asset_keys()
        if "dagster/kind/duckdb" in graph.get(key).tags and key != dg.AssetKey("warehouse_schema")
    ]
    assert len(table_assets) > 75
    for key in table_assets:
        node = graph.get(key)
        schema = node.metadata.get("dagster/column_schema")
        assert isinstance(schema, dg.TableSchema), key
        assert schema.columns, key
        table = node.metadata["dagster/table_name"]
        if table.split(".")[1] in DOCUMENTED_SCHEMAS:
            undescribed = [c.name for c in schema.columns if not c.description]
            assert undescribed == [], (key, undescribed)


def test_every_warehouse_table_and_view_is_in_the_catalog_after_its_writer(graph) -> None:
    keys = set(graph.get_all_asset_keys())
    for relation in warehouse_relations():
        key = dg.AssetKey([relation.schema, relation.name])
        assert key in keys, key
        [parent] = graph.get(key).parent_keys
        assert parent in keys and graph.get(parent).is_materializable, (key, parent)
    assert writer_of("core.nodes") == "cluster_inventory"
    assert writer_of("marts.collections") == "published_warehouse"
    assert writer_of("core.a_table_added_later") == "warehouse_schema"


def test_freshness_is_declared_where_the_checks_imply_it(graph) -> None:
    for name in ("cluster_inventory", "gpu_telemetry", "fleet_report"):
        assert graph.get(dg.AssetKey(name)).freshness_policy is not None, name


def test_the_owner_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = dg.AssetSpec("lineage_events")
    assert describe_asset(spec).owners == [DEFAULT_OWNER]
    monkeypatch.setenv(OWNER_ENV, "team:ml-compliance")
    assert describe_asset(spec).owners == ["team:ml-compliance"]


def test_the_run_failure_sensor_is_on_by_default() -> None:
    sensor = defs.get_sensor_def("record_inventory_failure")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING

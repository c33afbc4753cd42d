"""The cluster-state assets and checks against a small simulated cluster, over real sockets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from simulated import Setup, simulated_setup

from annex.settings import WarehouseSettings
from pipelines.defs.cluster_state.assets import (
    cluster_inventory,
    fleet_marts,
    published_warehouse,
)
from pipelines.defs.cluster_state.checks import CHECKS
from pipelines.defs.cluster_state.sensors import record_inventory_failure, record_run_failure
from pipelines.defs.resources import build_resources
from pipelines.defs.shared import warehouse_schema
from pipelines.partitions import CLUSTERS_PARTITIONS_NAME, clusters
from warehouse import Warehouse

pytestmark = pytest.mark.integration

CLUSTER = "sim-east"
NODES = 20


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    with simulated_setup(tmp_path, cluster=CLUSTER, nodes=NODES, seed=1) as prepared:
        yield prepared


def _instance() -> dg.DagsterInstance:
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(CLUSTERS_PARTITIONS_NAME, [CLUSTER])
    return instance


def _materialize(setup: Setup, assets: list, instance: dg.DagsterInstance) -> dg.ExecuteInJobResult:
    return dg.materialize(
        [*assets, *CHECKS],
        partition_key=CLUSTER,
        resources=build_resources(str(setup.config_path)),
        instance=instance,
        raise_on_error=False,
    )


def _evaluations(result: dg.ExecuteInJobResult) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_inventory_loads_and_checks_pass(setup: Setup) -> None:
    result = _materialize(setup, [warehouse_schema, cluster_inventory, fleet_marts], _instance())
    assert result.success
    [marts] = result.asset_materializations_for_node("fleet_marts")
    assert marts.metadata["rows/fleet_summary"].value == 1
    assert marts.metadata["rows/node_gpu_capacity"].value > 0

    with duckdb.connect(str(setup.warehouse_path), read_only=True) as con:
        row = con.execute(
            "SELECT count(*) FROM core.nodes WHERE valid_to IS NULL AND cluster = ?", [CLUSTER]
        ).fetchone()
    assert row is not None and row[0] == NODES

    evaluations = _evaluations(result)
    assert set(evaluations) == {c.check_key.name for c in CHECKS}
    failed = {name: e.metadata for name, e in evaluations.items() if not e.passed}
    assert not failed

    with duckdb.connect(str(setup.warehouse_path), read_only=True) as con:
        stored = con.execute(
            "SELECT r.check_name, r.passed, r.cluster, r.run_id, r.collection_id = c.collection_id"
            " FROM audit.check_results AS r"
            " JOIN audit.collections AS c ON c.cluster = r.cluster AND c.status = 'succeeded'"
        ).fetchall()
    assert sorted(name for name, *_ in stored) == sorted(evaluations)
    assert all(passed and cluster == CLUSTER and same for _, passed, cluster, _, same in stored)
    assert {run_id for *_, run_id, _ in stored} == {result.run_id}

    [materialization] = result.asset_materializations_for_node("cluster_inventory")
    metadata = materialization.metadata
    assert metadata["snapshot_consistent"].value is True
    assert metadata["rows/nodes"].value == NODES
    assert CLUSTER in str(metadata["fleet_summary"].value)


def test_failing_blocking_check_stops_publishing(setup: Setup) -> None:
    instance = _instance()
    first = _materialize(setup, [warehouse_schema, cluster_inventory], instance)
    assert first.success

    with duckdb.connect(str(setup.warehouse_path)) as con:
        con.execute("INSERT INTO core.pods SELECT * FROM core.pods LIMIT 1")

    second = _materialize(
        setup, [warehouse_schema, cluster_inventory, fleet_marts, published_warehouse], instance
    )
    assert not second.success
    evaluations = _evaluations(second)
    assert not evaluations["inventory_no_duplicate_uids"].passed
    with duckdb.connect(str(setup.warehouse_path), read_only=True) as con:
        verdicts = con.execute(
            "SELECT passed, blocking, severity, details->>'$.duplicate_pod_uids' FROM"
            " audit.check_results WHERE check_name = 'inventory_no_duplicate_uids'"
            " ORDER BY checked_at"
        ).fetchall()
    assert [(passed, blocking, severity) for passed, blocking, severity, _ in verdicts] == [
        (True, True, "ERROR"),
        (False, True, "ERROR"),
    ]
    assert verdicts[-1][3] == "1"  # the figure behind the verdict: one duplicated pod UID
    assert second.asset_materializations_for_node("fleet_marts") == []
    assert second.asset_materializations_for_node("published_warehouse") == []
    assert not Warehouse(WarehouseSettings(path=setup.warehouse_path)).published_path.exists()


def test_record_run_failure_writes_audit_row(tmp_path: Path) -> None:
    wh = Warehouse(WarehouseSettings(path=tmp_path / "annex.duckdb"))
    collection_id = record_run_failure(wh, cluster=CLUSTER, error="boom", run_id="r1")
    with wh.writer() as con:
        row = con.execute(
            "SELECT source, cluster, status, error FROM audit.collections WHERE collection_id = ?",
            [collection_id],
        ).fetchone()
    assert row == ("dagster", CLUSTER, "failed", "dagster run r1 failed: boom")


def test_failure_sensor_records_the_failed_run(tmp_path: Path) -> None:
    @dg.asset(partitions_def=clusters)
    def broken() -> None:
        raise RuntimeError("API server unreachable")

    config = tmp_path / "annex.toml"
    config.write_text(f'[warehouse]\npath = "{tmp_path / "annex.duckdb"}"\n', encoding="utf-8")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(CLUSTERS_PARTITIONS_NAME, [CLUSTER])
        result = dg.materialize(
            [broken], partition_key=CLUSTER, instance=instance, raise_on_error=False
        )
        assert not result.success
        [failure] = [
            e for e in result.all_events if e.event_type == dg.DagsterEventType.RUN_FAILURE
        ]
        # Nested resources are built as generators, so the context must be entered.
        with dg.build_run_status_sensor_context(
            sensor_name="record_inventory_failure",
            dagster_event=failure,
            dagster_instance=instance,
            dagster_run=result.dagster_run,
            resources=build_resources(str(config)),
        ).for_run_failure() as context:
            record_inventory_failure(context)

    with duckdb.connect(str(tmp_path / "annex.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT source, cluster, status, error FROM audit.collections"
        ).fetchall()
    [(source, cluster, status, error)] = rows
    assert (source, cluster, status) == ("dagster", CLUSTER, "failed")
    assert result.dagster_run.run_id in error
    # the analysts see the gap too (marts.collections of the published copy)
    with duckdb.connect(str(tmp_path / "annex.published.duckdb"), read_only=True) as con:
        shown = con.execute("SELECT source, cluster, status FROM marts.collections").fetchall()
    assert shown == [("dagster", CLUSTER, "failed")]

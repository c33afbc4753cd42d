"""The Dagster code location loads, both in-process and through the ``dagster`` CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from pipelines.definitions import defs
from pipelines.defs.cluster_state.schedules import hourly_cluster_inventory, hourly_run_requests
from pipelines.defs.cluster_state.sensors import cluster_discovery, missing_partitions
from pipelines.defs.resources import AnnexSettingsResource
from pipelines.partitions import CLUSTERS_PARTITIONS_NAME

REPO = Path(__file__).resolve().parents[2]


def test_definitions_load() -> None:
    dg.Definitions.validate_loadable(defs)


def test_every_writer_is_in_the_duckdb_pool_and_reports_are_not() -> None:
    # reports and the export read only the published copy (reference/stack.md §3): rendering
    # a month's PDFs or exporting must never hold up a collection
    graph = defs.resolve_asset_graph()
    for key in graph.materializable_asset_keys:  # (the warehouse's tables are external)
        node = graph.get(key)
        expected = set() if node.group_name in ("reports", "export") else {"duckdb"}
        assert set(node.pools or ()) == expected, key


def test_dagster_cli_validates_definitions(tmp_path: Path) -> None:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / ".dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    proc = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-m", "pipelines.definitions"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_missing_partitions_adds_only_new_clusters() -> None:
    assert missing_partitions(["b", "a", "c", "a"], ["c"]) == ["a", "b"]
    assert missing_partitions([], ["c"]) == []


def test_hourly_run_requests_one_per_cluster() -> None:
    requests = hourly_run_requests(["west", "east"], "2026-01-01T00:00:00")
    assert [r.partition_key for r in requests] == ["east", "west"]
    assert requests[0].run_key == "east:2026-01-01T00:00:00"


def test_discovery_sensor_adds_configured_clusters(tmp_path: Path) -> None:
    config = tmp_path / "annex.toml"
    config.write_text('[[clusters]]\nname = "east"\n\n[[clusters]]\nname = "west"\n')
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(CLUSTERS_PARTITIONS_NAME, ["west"])
    context = dg.build_sensor_context(
        instance=instance, resources={"annex": AnnexSettingsResource(config_path=str(config))}
    )
    result = cluster_discovery(context)
    assert isinstance(result, dg.SensorResult)
    [request] = result.dynamic_partitions_requests or []
    assert isinstance(request, dg.AddDynamicPartitionsRequest)
    assert list(request.partition_keys) == ["east"]


def test_hourly_schedule_requests_every_partition() -> None:
    # A schedule context needs an instance reference, which an ephemeral instance lacks.
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(CLUSTERS_PARTITIONS_NAME, ["b", "a"])
        context = dg.build_schedule_context(
            instance=instance, scheduled_execution_time=datetime(2026, 1, 1, 3, tzinfo=UTC)
        )
        requests = hourly_cluster_inventory(context)
    assert isinstance(requests, list)
    assert [r.partition_key for r in requests] == ["a", "b"]

"""Watch mode in Dagster: the catch-up asset, the drift check against the snapshot, the sensor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from simulated import Setup, simulated_setup

from pipelines.defs.cluster_state.assets import cluster_inventory
from pipelines.defs.resources import build_resources
from pipelines.defs.shared import warehouse_schema
from pipelines.defs.watch.assets import watched_gpu_allocations
from pipelines.defs.watch.checks import CHECKS
from pipelines.defs.watch.sensors import watch_catch_up
from pipelines.partitions import CLUSTERS_PARTITIONS_NAME

pytestmark = pytest.mark.integration

CLUSTER = "sim-watch"


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    with simulated_setup(tmp_path, cluster=CLUSTER, nodes=12, seed=3) as prepared:
        yield prepared


def materialize(setup: Setup, instance: dg.DagsterInstance, assets: list) -> dg.ExecuteInJobResult:
    return dg.materialize(
        [*assets, *CHECKS],
        partition_key=CLUSTER,
        resources=build_resources(str(setup.config_path)),
        instance=instance,
        raise_on_error=False,
    )


def drift(result: dg.ExecuteInJobResult) -> dg.AssetCheckEvaluation:
    [evaluation] = result.get_asset_check_evaluations()
    return evaluation


def test_the_watch_agrees_with_the_snapshot_until_a_change_is_lost(setup: Setup) -> None:
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(CLUSTERS_PARTITIONS_NAME, [CLUSTER])
        first = materialize(setup, instance, [warehouse_schema, cluster_inventory])
        assert first.success
        caught_up = materialize(setup, instance, [watched_gpu_allocations])
        assert caught_up.success
        [materialization] = caught_up.asset_materializations_for_node("watched_gpu_allocations")
        assert materialization.metadata["pods/lists"].value == 1
        agreed = drift(caught_up)
        assert agreed.passed, agreed.metadata
        assert agreed.metadata["holdings_only_in_snapshot"].value == 0

        with duckdb.connect(str(setup.warehouse_path)) as con:  # a change the watch lost
            (lost,) = con.execute(
                "DELETE FROM core.watched_gpu_allocations WHERE pod_uid = ("
                " SELECT min(pod_uid) FROM core.gpu_allocations WHERE valid_to IS NULL) "
                "RETURNING gpus"
            ).fetchone()
        again = materialize(setup, instance, [watched_gpu_allocations])

    evaluation = drift(again)
    assert not evaluation.passed
    assert evaluation.metadata["holdings_only_in_snapshot"].value == 1
    assert evaluation.metadata["gpus_only_in_snapshot"].value == lost
    with duckdb.connect(str(setup.warehouse_path), read_only=True) as con:
        kept = con.execute(
            "SELECT passed FROM audit.check_results WHERE check_name = 'watch_matches_snapshot' "
            "ORDER BY checked_at"
        ).fetchall()
    assert [row[0] for row in kept] == [True, False]


def test_the_sensor_asks_for_one_catch_up_per_cluster() -> None:
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(CLUSTERS_PARTITIONS_NAME, ["east", "west"])
        first = watch_catch_up(dg.build_sensor_context(instance=instance))
        second = watch_catch_up(dg.build_sensor_context(instance=instance, cursor=first.cursor))

    assert sorted(r.partition_key for r in first.run_requests) == ["east", "west"]
    keys = {r.run_key for r in first.run_requests} | {r.run_key for r in second.run_requests}
    assert len(keys) == 4  # each tick asks again: a catch-up is cheap when nothing changed

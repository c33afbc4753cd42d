"""The lineage assets, checks and sensor against a small simulated cluster and the OpenLineage
events of its training runs, dropped as a JSON-lines file in a watched folder."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from simulated import Setup, simulated_setup

from pipelines.defs.cluster_state.assets import cluster_inventory
from pipelines.defs.lineage.assets import lineage_events, lineage_models
from pipelines.defs.lineage.checks import (
    CHECKS,
    leaf_datasets_described,
    no_cycles,
    training_runs_linked,
)
from pipelines.defs.lineage.sensors import new_lineage_events
from pipelines.defs.resources import build_resources
from pipelines.defs.shared import warehouse_schema
from pipelines.partitions import CLUSTERS_PARTITIONS_NAME
from simulator.lineage.producer import build_events, write_jsonl
from simulator.world import build_world

pytestmark = pytest.mark.integration

CLUSTER = "sim-lineage"
NODES = 24
SEED = 3


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    with simulated_setup(tmp_path, cluster=CLUSTER, nodes=NODES, seed=SEED) as prepared:
        shared = tmp_path / "shared"
        shared.mkdir()
        with prepared.config_path.open("a", encoding="utf-8") as config:
            config.write(
                f'\n[lineage]\nspool_dir = "{tmp_path / "spool"}"\nwatch_dirs = ["{shared}"]\n'
            )
        world = build_world(nodes=NODES, seed=SEED)
        events = shared / "events.jsonl"
        assert write_jsonl(build_events(world, cluster=CLUSTER), events) > 0
        settled = time.time() - 60  # watched files are read once they stopped changing
        os.utime(events, (settled, settled))
        yield prepared


def _resources(setup: Setup) -> dict:
    """Fresh resources for every Dagster call: a resource set bound to one run or sensor
    context must not be handed to the next."""
    return build_resources(str(setup.config_path))


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    # A test instance, not an ephemeral one: Dagster keeps module-level references to the
    # last test instance's storage, which an earlier test's disposed instance would leave dead.
    with dg.instance_for_test() as test_instance:
        test_instance.add_dynamic_partitions(CLUSTERS_PARTITIONS_NAME, [CLUSTER])
        yield test_instance


def test_sensor_starts_a_load_whose_models_and_checks_hold(
    setup: Setup, instance: dg.DagsterInstance
) -> None:
    with dg.build_sensor_context(instance=instance, resources=_resources(setup)) as context:
        request = new_lineage_events(context)
    assert isinstance(request, dg.SensorResult) and len(request.run_requests) == 1

    # The inventory first (the run -> Job link needs core.jobs), then the lineage job.
    inventory = dg.materialize(
        [warehouse_schema, cluster_inventory],
        partition_key=CLUSTER,
        resources=_resources(setup),
        instance=instance,
    )
    assert inventory.success
    result = dg.materialize(
        [lineage_events, lineage_models, *CHECKS],
        resources=_resources(setup),
        instance=instance,
        selection=[lineage_events, lineage_models],
        raise_on_error=False,
    )
    assert result.success
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert set(evaluations) == {
        "lineage_training_runs_linked",
        "lineage_leaf_datasets_described",
        "lineage_has_no_cycles",
    }
    assert evaluations["lineage_has_no_cycles"].passed
    assert evaluations["lineage_leaf_datasets_described"].passed

    with duckdb.connect(str(setup.warehouse_path), read_only=True) as con:
        [(events, models)] = con.execute(
            "SELECT (SELECT count(*) FROM core.lineage_events), "
            "(SELECT count(*) FROM marts.lineage_models)"
        ).fetchall()
        # Every training run of a Job the simulated cluster still has is linked to it.
        [(present_unlinked,)] = con.execute(
            "SELECT count(*) FROM marts.lineage_run_jobs AS r "
            "WHERE NOT r.job_known AND EXISTS (SELECT 1 FROM core.jobs AS j "
            "WHERE j.namespace = r.namespace AND j.job_name = r.kubernetes_job_name)"
        ).fetchall()
        [(linked,)] = con.execute(
            "SELECT count(*) FROM marts.lineage_run_jobs WHERE job_known"
        ).fetchall()
    assert events > 0 and models > 0
    assert present_unlinked == 0 and linked > 0
    with dg.build_sensor_context(instance=instance, resources=_resources(setup)) as context:
        assert isinstance(new_lineage_events(context), dg.SkipReason)


def test_checks_catch_a_cycle_an_undescribed_source_and_an_unlinked_run(
    setup: Setup, instance: dg.DagsterInstance
) -> None:
    assert dg.materialize(
        [warehouse_schema, cluster_inventory],
        partition_key=CLUSTER,
        resources=_resources(setup),
        instance=instance,
    ).success
    assert dg.materialize(
        [lineage_events, lineage_models], resources=_resources(setup), instance=instance
    ).success
    with duckdb.connect(str(setup.warehouse_path)) as con:
        assert no_cycles(con, None).passed
        assert leaf_datasets_described(con, None).passed
        con.execute(
            "INSERT INTO marts.lineage_cycles SELECT 'v1', dataset_version_id, namespace, name, "
            "version, 1, NULL, now()::TIMESTAMP FROM core.lineage_dataset_versions LIMIT 1"
        )
        assert not no_cycles(con, None).passed
        con.execute(
            "DELETE FROM core.lineage_facet_heads WHERE facet_name = 'annex_licensing' "
            "AND entity_id = (SELECT min(dataset_version_id) FROM marts.lineage_model_sources "
            "WHERE is_leaf AND kind = 'DATASET')"
        )
        outcome = leaf_datasets_described(con, None)
        assert not outcome.passed and outcome.metadata["without_licence_or_category"] >= 1
        con.execute("DELETE FROM core.jobs")
        first_inventory = (
            "UPDATE audit.collections SET started_at = TIMESTAMP '{}' WHERE source = 'kubernetes'"
        )
        con.execute(first_inventory.format("2000-01-01"))  # annex saw every run's time
        outcome = training_runs_linked(con, CLUSTER)
        assert not outcome.passed
        assert outcome.metadata["runs_without_known_job"] == outcome.metadata["training_runs"]
        assert outcome.metadata["runs_ended_before_first_inventory"] == 0
        # annex first listed the cluster after the runs ended: their Jobs may have been gone
        # by then, so only the runs still going count against the check
        con.execute(first_inventory.format("2100-01-01"))
        [(ended, going)] = con.execute(
            "SELECT count(*) FILTER (WHERE ended_at IS NOT NULL), "
            "count(*) FILTER (WHERE ended_at IS NULL) FROM marts.lineage_run_jobs"
        ).fetchall()
        outcome = training_runs_linked(con, CLUSTER)
        assert outcome.metadata["runs_ended_before_first_inventory"] == ended > 0
        assert outcome.metadata["runs_without_known_job"] == going
        assert outcome.passed == (going == 0)

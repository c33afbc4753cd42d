"""The CLI's in-process Dagster runs (``annex demo``, ``annex run``) leave what ``make dev``
shows: the cluster's partition stays in the instance of ``DAGSTER_HOME``, materialised."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest
from simulated import simulated_setup

from pipelines.execution import cluster_partition, dagster_instance, resolve_job, run_job
from pipelines.partitions import CLUSTERS_PARTITIONS_NAME

pytestmark = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
CLUSTER = "demo-sim"


def test_the_demo_cluster_keeps_its_materialised_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / ".dagster_home" / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with (
        simulated_setup(tmp_path, cluster=CLUSTER, nodes=8, seed=3) as setup,
        dagster_instance() as instance,
        cluster_partition(instance, CLUSTER),
    ):
        job = resolve_job(setup.config_path)  # the inventory job, as the demo runs it
        outcome = run_job(job, instance, CLUSTER)
    assert outcome.success, outcome.failure

    # what `make dev` opens afterwards: a new instance on the same DAGSTER_HOME
    with dg.DagsterInstance.from_config(str(home)) as later:
        assert later.get_dynamic_partitions(CLUSTERS_PARTITIONS_NAME) == [CLUSTER]
        materialised = later.get_materialized_partitions(dg.AssetKey("cluster_inventory"))
    assert materialised == {CLUSTER}

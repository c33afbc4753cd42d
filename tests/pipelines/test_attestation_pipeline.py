"""The attestation assets, checks and sensor against a small simulated cluster and the files
its confidential nodes' agents wrote to a shared folder (the DaemonSet fallback delivery)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from simulated import Setup, simulated_setup

from pipelines.defs.attestation.assets import attestation_coverage, attestation_records
from pipelines.defs.attestation.checks import (
    CHECKS,
    attested_nodes_known,
    coverage_fresh,
    verdicts_explained,
)
from pipelines.defs.attestation.sensors import new_attestations
from pipelines.defs.cluster_state.assets import cluster_inventory
from pipelines.defs.resources import build_resources
from pipelines.defs.shared import warehouse_schema
from pipelines.partitions import CLUSTERS_PARTITIONS_NAME
from simulator.attestation import tokens
from simulator.attestation.agent import write_history
from simulator.attestation.issuers import LOCAL_SECRET, LOCAL_SECRET_ENV, IssuerSet
from simulator.world import build_world

pytestmark = pytest.mark.integration

CLUSTER = "sim-cc"
NODES = 16
SEED = 1


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    monkeypatch.setenv(LOCAL_SECRET_ENV, LOCAL_SECRET.decode())
    with simulated_setup(tmp_path, cluster=CLUSTER, nodes=NODES, seed=SEED) as prepared:
        issuers = IssuerSet.create(0)
        trust = tmp_path / "trust"
        issuers.write_trust(trust)
        with prepared.config_path.open("a", encoding="utf-8") as config:
            config.write(
                "\n[attestation]\n"
                f'spool_dir = "{tmp_path / "spool"}"\n'
                f'watch_dirs = ["{tmp_path / "shared"}"]\n\n'
                + issuers.settings_toml(trust)
                + tokens.policy_toml()
            )
        # The world the simulated cluster serves (same nodes, seed): a day of its agents' files.
        world = build_world(nodes=NODES, seed=SEED)
        written = write_history(world, issuers, tmp_path / "shared", days=1)
        assert written > 0
        yield prepared


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    # A test instance, not an ephemeral one: Dagster keeps module-level references to the
    # last test instance's storage, which an earlier test's disposed instance would leave dead.
    with dg.instance_for_test() as test_instance:
        test_instance.add_dynamic_partitions(CLUSTERS_PARTITIONS_NAME, [CLUSTER])
        yield test_instance


def _run(setup: Setup, instance: dg.DagsterInstance) -> dg.ExecuteInJobResult:
    return dg.materialize(
        [warehouse_schema, cluster_inventory, attestation_records, attestation_coverage, *CHECKS],
        partition_key=CLUSTER,
        resources=build_resources(str(setup.config_path)),
        instance=instance,
        raise_on_error=False,
    )


def _sensor(setup: Setup, instance: dg.DagsterInstance) -> dg.SensorResult | dg.SkipReason:
    with dg.build_sensor_context(
        instance=instance, resources=build_resources(str(setup.config_path))
    ) as context:
        return new_attestations(context)


def test_sensor_starts_a_collection_that_verifies_loads_and_covers(
    setup: Setup, instance: dg.DagsterInstance
) -> None:
    request = _sensor(setup, instance)
    assert isinstance(request, dg.SensorResult)
    [run] = request.run_requests
    assert run.partition_key == CLUSTER

    result = _run(setup, instance)
    assert result.success
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert set(evaluations) == {
        "attestation_verdicts_explained",
        "attested_nodes_in_inventory",
        "attestation_coverage_fresh",
    }
    assert all(e.passed for e in evaluations.values()), evaluations

    with duckdb.connect(str(setup.warehouse_path), read_only=True) as con:
        verdicts = dict(
            con.execute(
                "SELECT verdict, count(*) FROM core.attestation_records GROUP BY verdict"
            ).fetchall()
        )
        [(verified_hours,)] = con.execute(
            "SELECT sum(verified_gpu_hours) FROM marts.attestation_gpu_hours"
        ).fetchall()
    # The world plans failing and self-reported nodes beside passing ones.
    assert verdicts.get("pass", 0) > 0 and verdicts.get("fail", 0) > 0
    assert verdicts.get("unverifiable", 0) > 0
    assert verified_hours and verified_hours > 0
    # Everything was archived: the next tick has nothing to do.
    assert isinstance(_sensor(setup, instance), dg.SkipReason)


def test_checks_catch_unexplained_verdicts_and_unknown_nodes(
    setup: Setup, instance: dg.DagsterInstance
) -> None:
    assert _run(setup, instance).success
    with duckdb.connect(str(setup.warehouse_path)) as con:
        for check in (verdicts_explained, attested_nodes_known, coverage_fresh):
            assert check(con, CLUSTER).passed, check.__name__
        con.execute(
            "UPDATE core.attestation_records SET reasons = [] "
            "WHERE record_id = (SELECT min(record_id) FROM core.attestation_records "
            "WHERE verdict = 'fail')"
        )
        outcome = verdicts_explained(con, CLUSTER)
        assert not outcome.passed and outcome.metadata["verdicts_without_reason"] == 1
        con.execute(
            "UPDATE core.attestation_records SET node_name = 'node-from-elsewhere' "
            "WHERE record_id = (SELECT min(record_id) FROM core.attestation_records)"
        )
        outcome = attested_nodes_known(con, CLUSTER)
        assert not outcome.passed
        assert outcome.metadata["first_unknown"] == "node-from-elsewhere"
        # A newer attestation collection that the coverage has not taken in yet.
        con.execute(
            "INSERT INTO audit.collections (collection_id, source, cluster, started_at, "
            "finished_at, status) VALUES ('later', 'attestation', ?, now()::TIMESTAMP + "
            "INTERVAL 1 HOUR, now()::TIMESTAMP + INTERVAL 1 HOUR, 'succeeded')",
            [CLUSTER],
        )
        assert not coverage_fresh(con, CLUSTER).passed

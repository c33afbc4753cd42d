"""DRA collected from the simulated API server agrees with the world's ground truth.

The simulator's feature world allocates GPUs and MIG devices only through ResourceClaims on
its DRA pools (and IMEX channels of ComputeDomains, which are not GPUs); who holds which
physical GPU is ``simulator.world.truth.gpu_holdings`` (mechanism "dra"). The warehouse's
``marts.dra_gpu_claims`` must name the same (pod, node, GPU) holdings.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from annex.settings import TOPOLOGY_PRESETS, KubernetesSettings, WarehouseSettings
from collectors.kubernetes import api_client_for, collect_cluster
from simulator.kubernetes import SimulatedCluster
from simulator.world import build_world
from simulator.world.truth import gpu_holdings
from warehouse import Warehouse, load_collection
from warehouse.models.kubernetes import KUBERNETES_MODEL

pytestmark = pytest.mark.integration


def _load(world, tmp_path: Path) -> Path:
    settings = KubernetesSettings(page_size=7, max_backoff_seconds=0.2)  # several pages each
    with SimulatedCluster(world) as sim:
        sim.write_kubeconfig(tmp_path / "kubeconfig")
        api = api_client_for(
            kubeconfig=tmp_path / "kubeconfig", context=None, in_cluster=False, settings=settings
        )
        batches = list(
            collect_cluster(
                api,
                cluster="sim",
                settings=settings,
                topology_levels=TOPOLOGY_PRESETS["generic"],
                in_process=True,
            )
        )
    path = tmp_path / "annex.duckdb"
    load_collection(
        Warehouse(WarehouseSettings(path=path)), KUBERNETES_MODEL, cluster="sim", batches=batches
    )
    return path


def column(con: duckdb.DuckDBPyConnection, sql: str) -> set:
    return {row[0] for row in con.execute(sql).fetchall()}


def test_dra_holdings_match_the_simulators_ground_truth(tmp_path: Path) -> None:
    world = build_world(60, seed=7, features={"dra"})
    truth = {
        (h.namespace, h.pod, h.node, h.gpu_uuid)
        for h in gpu_holdings(world)
        if h.mechanism == "dra"
    }
    assert truth, "the feature world allocates GPUs through DRA"
    con = duckdb.connect(str(_load(world, tmp_path)), read_only=True)
    try:
        held = set(
            con.execute(
                "SELECT namespace, pod_name, node_name, gpu_uuid FROM marts.dra_gpu_claims "
                "WHERE pod_uid IS NOT NULL"
            ).fetchall()
        )
        assert held == truth
        # every slice and claim the simulator serves is in core
        slices = {s["metadata"]["uid"] for s in world.resource_slices if s["spec"].get("devices")}
        claims = {c["metadata"]["uid"] for c in world.resource_claims}
        assert slices and claims
        assert column(con, "SELECT DISTINCT resource_slice_uid FROM core.dra_devices") == slices
        assert column(con, "SELECT claim_uid FROM core.dra_claims WHERE present") == claims
        # IMEX channels are devices, not GPUs
        channels = con.execute(
            "SELECT count(*), count(gpu_uuid) FROM core.dra_devices WHERE device_type = 'channel'"
        ).fetchone()
        assert channels is not None and channels[0] > 0 and channels[1] == 0
    finally:
        con.close()


def test_the_default_world_serves_no_dra_objects_and_loads_none(tmp_path: Path) -> None:
    con = duckdb.connect(str(_load(build_world(30, seed=7), tmp_path)), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM core.dra_devices").fetchone() == (0,)
        assert con.execute("SELECT count(*) FROM core.dra_claims").fetchone() == (0,)
    finally:
        con.close()

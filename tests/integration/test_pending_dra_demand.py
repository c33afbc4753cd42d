"""Pending DRA demand in the warehouse agrees with the simulator's ground truth (issue 38):
pods waiting for GPUs they ask for only through claims or claim templates."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from simulator.world import build_world
from simulator.world.truth import pending_dra_demand
from tests.integration.test_k8s_dra_collect import _load

pytestmark = pytest.mark.integration


def test_pending_dra_demand_matches_the_simulators_ground_truth(tmp_path: Path) -> None:
    world = build_world(60, seed=7, features={"dra"})
    truth = {
        (d.namespace, d.pod): (round(d.gpus, 6), round(d.mig_devices, 6), d.all_requests)
        for d in pending_dra_demand(world)
    }
    # an uncreated template claim, a shared claim, allocationMode All, an unallocated claim
    assert len(truth) >= 5
    assert any(v[2] for v in truth.values()) and sum(v[0] for v in truth.values()) >= 5
    con = duckdb.connect(str(_load(world, tmp_path)), read_only=True)
    try:
        rows = con.execute(
            "SELECT namespace, pod_name, dra_gpus, dra_mig_slices, dra_all_requests "
            "FROM marts.pending_gpu_demand "
            "WHERE dra_gpus > 0 OR dra_mig_slices > 0 OR dra_all_requests > 0 "
            "OR unresolved_claims > 0"
        ).fetchall()
        got = {(ns, pod): (round(g, 6), round(m, 6), a) for ns, pod, g, m, a in rows}
        assert got == truth
        # the fleet summary's queued GPUs: the device-plugin requests and the DRA part beside
        total, dra, every = con.execute(
            "SELECT queued_gpus, queued_dra_gpus, queued_dra_all_requests FROM marts.fleet_summary"
        ).fetchone()
        (device_plugin,) = con.execute(
            "SELECT sum(device_plugin_gpus) FROM marts.pending_gpu_demand"
        ).fetchone()
        assert dra == round(sum(v[0] for v in truth.values()))
        assert every == sum(v[2] for v in truth.values())
        assert total == device_plugin + dra
    finally:
        con.close()

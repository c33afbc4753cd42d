"""GPU holdings in core.gpu_allocations and capacity in marts.node_gpu_capacity agree with the
simulator's ground truth for DRA claims, device-plugin sharing (time-slicing, MPS) and HAMi.

Truth (``simulator.world.truth``) is per pod and physical GPU; the warehouse is per pod and
resource: whole GPUs (``nvidia.com/gpu``, a shared claim's device 1/k per holder, a shared
GPU's replica 1/shares) and MIG slices (``nvidia.com/mig-<profile>``, counted as devices).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import duckdb
import pytest

from simulator.world import build_world
from simulator.world.truth import gpu_holdings, node_gpus
from tests.integration.test_k8s_dra_collect import _load

pytestmark = pytest.mark.integration


def test_holdings_and_capacity_match_the_simulators_ground_truth(tmp_path: Path) -> None:
    world = build_world(60, seed=7, features={"dra", "sharing"})
    whole: dict[tuple, float] = defaultdict(float)
    mig: dict[tuple, float] = defaultdict(float)
    for h in gpu_holdings(world):
        key = (h.namespace, h.pod, h.node)
        if h.mechanism == "dra" and "-mig-" in (h.device or ""):
            mig[key] += 1
        elif h.mechanism in ("dra", "time-slicing", "mps"):
            whole[key] += h.shares / h.shares_per_gpu
    assert whole and mig, "the feature world holds GPUs through DRA and shared GPUs"
    con = duckdb.connect(str(_load(world, tmp_path)), read_only=True)
    try:
        rows = con.execute(
            """
            SELECT a.namespace, a.pod_name, a.node_name,
                   a.resource_name = 'nvidia.com/gpu' AS whole,
                   sum(a.gpus / coalesce(c.shares, 1))
            FROM core.gpu_allocations AS a
            LEFT JOIN marts.node_gpu_capacity AS c
                ON c.node_name = a.node_name AND c.resource_name = a.resource_name
            WHERE a.valid_to IS NULL
              AND (a.mechanism = 'dra' OR c.sharing_strategy IN ('time-slicing', 'mps'))
            GROUP BY ALL
            """
        ).fetchall()
        held_whole = {(ns, p, n): round(g, 6) for ns, p, n, w, g in rows if w}
        held_mig = {(ns, p, n): round(g, 6) for ns, p, n, w, g in rows if not w}
        assert held_whole == {k: round(v, 6) for k, v in whole.items()}
        assert held_mig == {k: round(v, 6) for k, v in mig.items()}

        capacity = {
            node: (strategy, shares, gpus)
            for node, strategy, shares, gpus in con.execute(
                "SELECT node_name, sharing_strategy, shares, capacity_gpus "
                "FROM marts.node_gpu_capacity WHERE whole_gpus"
            ).fetchall()
        }
        shared = {n: g for n, g in node_gpus(world).items() if g.sharing in ("time-slicing", "mps")}
        assert shared
        for node, g in shared.items():
            assert capacity[node] == (g.sharing, g.shares_per_gpu, g.physical_gpus), node
        # every physical GPU holds at most one GPU's worth of shares
        over = con.execute(
            "SELECT count(*) FROM marts.node_gpu_capacity "
            "WHERE allocated_workload_gpus + allocated_balloon_gpus > capacity_gpus + 1e-9"
        ).fetchone()
        assert over == (0,)

        # HAMi: a pod holds gpucores percent of a GPU; the node its physical GPUs
        hami = {n: g for n, g in node_gpus(world).items() if g.sharing == "hami"}
        assert hami
        held_hami: dict[str, float] = defaultdict(float)
        for h in gpu_holdings(world):
            if h.mechanism == "hami":
                held_hami[h.node] += h.shares / h.shares_per_gpu
        for node, g in hami.items():
            row = con.execute(
                "SELECT sharing_strategy, shares, capacity_gpus, allocated_workload_gpus "
                f"FROM marts.node_gpu_capacity WHERE node_name = '{node}' AND whole_gpus"
            ).fetchone()
            assert row is not None
            assert row[:3] == ("hami", g.shares_per_gpu, g.physical_gpus), node
            assert round(row[3], 6) == round(held_hami[node], 6), node

        # the fleet summary counts a DRA-only node (no GPU extended resource) as a GPU node
        gpu_nodes = con.execute("SELECT gpu_nodes FROM marts.fleet_summary").fetchone()
        assert gpu_nodes == (len(node_gpus(world)),)
    finally:
        con.close()

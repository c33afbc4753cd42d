"""A Kubernetes snapshot is stamped with the API server's moment (its Date header) when that
disagrees with the local clock: audit.collections says which clock, the slowly changing rows
start then, and a moment before the cluster's last recorded snapshot is refused (issue 39)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import duckdb
import pytest

from annex.errors import CollectionError
from annex.settings import ClusterSettings, Settings, WarehouseSettings
from services.inventory import collect_cluster_inventory
from simulator.kubernetes import SimulatedCluster
from simulator.world import build_world
from simulator.world.history import WorldHistory
from warehouse import Warehouse


def _rows(path: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_snapshots_are_stamped_by_the_servers_clock_in_order(tmp_path: Path) -> None:
    settings = Settings(warehouse=WarehouseSettings(path=tmp_path / "annex.duckdb"))
    wh = Warehouse(settings.warehouse)
    world = build_world(nodes=12, seed=6)
    history = WorldHistory(world, days=5)
    first, second = world.now - timedelta(days=4), world.now - timedelta(days=1)
    with SimulatedCluster(world) as sim:
        target = ClusterSettings(name="c", kubeconfig=sim.write_kubeconfig(tmp_path / "kc"))
        for moment in (first, second):
            sim.set_clock(moment, history.objects_at(moment))
            result = collect_cluster_inventory(settings, wh, target, publish=False)
            assert result.status == "succeeded"
        back = world.now - timedelta(days=3)
        sim.set_clock(back, history.objects_at(back))
        with pytest.raises(CollectionError, match="before the last recorded one"):
            collect_cluster_inventory(settings, wh, target, publish=False)
    naive = [m.replace(tzinfo=None) for m in (first, second)]
    rows = _rows(
        wh.path,
        "SELECT status, collected_at, collected_at_clock FROM audit.collections "
        "ORDER BY started_at",
    )
    assert rows[:2] == [("succeeded", m, "api_server") for m in naive]
    assert rows[2][0] == "failed"
    assert _rows(wh.path, "SELECT min(valid_from) FROM core.nodes") == [(naive[0],)]
    # every closed node version closed at a snapshot's moment, never at the local clock
    closed = _rows(wh.path, "SELECT DISTINCT valid_to FROM core.nodes WHERE valid_to IS NOT NULL")
    assert {row[0] for row in closed} <= {naive[1]}


def test_a_server_that_agrees_with_the_local_clock_leaves_the_local_clock(tmp_path: Path) -> None:
    settings = Settings(warehouse=WarehouseSettings(path=tmp_path / "annex.duckdb"))
    wh = Warehouse(settings.warehouse)
    with SimulatedCluster(build_world(nodes=8, seed=6)) as sim:  # Date: the wall clock
        target = ClusterSettings(name="c", kubeconfig=sim.write_kubeconfig(tmp_path / "kc"))
        assert collect_cluster_inventory(settings, wh, target, publish=False).status == "succeeded"
    rows = _rows(
        wh.path, "SELECT started_at, collected_at, collected_at_clock FROM audit.collections"
    )
    assert rows == [(rows[0][0], None, None)]  # NULL: started_at, by the local clock
    assert _rows(wh.path, "SELECT DISTINCT valid_from FROM core.nodes") == [(rows[0][0],)]

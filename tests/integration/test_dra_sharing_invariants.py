"""The fleet invariants on a world with DRA claims, shared GPUs and Kueue (issue 38 item 3):
collected twice from the simulated API server, rolled up into GPU-hours, then

* buckets sum to physical capacity (capacity marts and every GPU-hour grouping);
* a GPU-hour is counted once: per node, the holdings in devices that GPU-hours, training
  compute and attestation coverage all read (``marts.gpu_allocations_in_devices``) never exceed
  the node's physical GPUs, and agree with the capacity mart's allocation;
* every (non-MIG) node's whole-GPU capacity is the simulator's physical GPU count.
"""

from __future__ import annotations

import duckdb
import pytest

from annex.settings import TOPOLOGY_PRESETS, KubernetesSettings, WarehouseSettings
from collectors.kubernetes import api_client_for, collect_cluster
from simulator.kubernetes import SimulatedCluster
from simulator.world import build_world
from simulator.world.truth import node_gpus
from tests.helpers.fleet_invariants import groupings_checked, violations
from warehouse import Warehouse, load_collection
from warehouse.models.kubernetes import KUBERNETES_MODEL
from warehouse.models.utilisation import refresh_gpu_hourly

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory):
    world = build_world(60, seed=7, features={"dra", "sharing", "kueue"})
    tmp_path = tmp_path_factory.mktemp("invariants")
    settings = KubernetesSettings(page_size=50, max_backoff_seconds=0.2)
    wh = Warehouse(WarehouseSettings(path=tmp_path / "annex.duckdb"))
    with SimulatedCluster(world) as sim:
        sim.write_kubeconfig(tmp_path / "kubeconfig")
        api = api_client_for(
            kubeconfig=tmp_path / "kubeconfig", context=None, in_cluster=False, settings=settings
        )
        for _ in range(2):  # the second snapshot gives the nodes an observed interval
            batches = list(
                collect_cluster(
                    api,
                    cluster="sim",
                    settings=settings,
                    topology_levels=TOPOLOGY_PRESETS["generic"],
                    in_process=True,
                )
            )
            load_collection(wh, KUBERNETES_MODEL, cluster="sim", batches=batches, publish=False)
    with wh.writer() as con:
        refresh_gpu_hourly(con)
    return world, wh


def test_buckets_sum_to_physical_capacity_everywhere(loaded) -> None:
    world, wh = loaded
    with duckdb.connect(str(wh.path), read_only=True) as con:
        assert violations(con) == []
        assert groupings_checked(con)["node_gpu_hours"] > 0
        broken = con.execute(
            "SELECT node_name, resource_name FROM marts.node_gpu_capacity WHERE abs("
            "allocated_workload_gpus + allocated_balloon_gpus + free_gpus + unavailable_gpus"
            " - capacity_gpus) > 1e-9"
        ).fetchall()
        assert broken == []
        capacity = dict(
            con.execute(
                # (a MIG node's partitioned GPUs count as slices, on their own rows)
                "SELECT node_name, capacity_gpus FROM marts.node_gpu_capacity AS c "
                "WHERE whole_gpus AND NOT EXISTS (SELECT 1 FROM marts.node_gpu_capacity AS m "
                "WHERE m.node_name = c.node_name AND NOT m.whole_gpus)"
            ).fetchall()
        )
    truth = node_gpus(world)
    whole = {n: g.physical_gpus for n, g in truth.items() if n in capacity}
    assert {g.sharing for g in truth.values()} >= {"time-slicing", "mps", "hami"}
    assert {g.allocation for g in truth.values()} >= {"dra", "device-plugin"}
    assert capacity == {n: whole.get(n, capacity[n]) for n in capacity}
    assert len(whole) == len(capacity)


def test_a_gpu_hour_is_counted_once_by_every_reader(loaded) -> None:
    _, wh = loaded
    with duckdb.connect(str(wh.path), read_only=True) as con:
        rows = con.execute(
            """
            WITH held AS (
                SELECT node_name, resource_name, sum(gpus) AS in_devices
                FROM marts.gpu_allocations_in_devices()
                WHERE valid_to IS NULL
                GROUP BY ALL
            )
            SELECT c.node_name, c.resource_name, c.capacity_gpus,
                   c.allocated_workload_gpus + c.allocated_balloon_gpus AS allocated,
                   coalesce(h.in_devices, 0) AS in_devices
            FROM marts.node_gpu_capacity AS c
            LEFT JOIN held AS h USING (node_name, resource_name)
            """
        ).fetchall()
        hour_over = con.execute(
            "SELECT count(*) FROM marts.node_gpu_hours WHERE allocated_workload_gpu_hours"
            " + allocated_balloon_gpu_hours > capacity_gpu_hours + 1e-6"
        ).fetchone()
    assert rows and hour_over == (0,)
    for node, resource, capacity, allocated, in_devices in rows:
        assert in_devices <= capacity + 1e-9, (node, resource)
        assert in_devices == pytest.approx(allocated, abs=1e-9), (node, resource)

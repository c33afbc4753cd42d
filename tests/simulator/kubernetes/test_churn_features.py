"""Churn over a world with the opt-in features: shared GPUs and DRA pods are left alone."""

from __future__ import annotations

from simulator.kubernetes import SimulatedCluster
from simulator.kubernetes.churn import Churn, ShortJobs
from simulator.world import build_world


def test_short_jobs_use_whole_gpus_only_and_churn_leaves_dra_jobs_running() -> None:
    world = build_world(40, seed=3, features={"dra", "sharing", "kueue"})
    cluster = SimulatedCluster(world)  # the store only: no server needed
    shared = {node for node, (strategy, _replicas) in world.gpu_sharing.items()}
    assert shared
    jobs = ShortJobs(cluster, max_jobs=5, start=1_800_000_000)
    assert jobs.free and not shared & set(jobs.free)
    dra_nodes = {n for n, pool in world.node_pools.items() if pool in ("h100-dra", "gb200-dra")}
    assert dra_nodes and not dra_nodes & set(jobs.free)
    running = Churn(cluster, per_second=1.0)._running_job_pods()
    assert running
    assert not [p for pods in running.values() for p in pods if p["spec"].get("resourceClaims")]

"""A simulated Kubernetes API server over a seeded world (reference: kubernetes-api.md).

from simulator.world import build_world
from simulator.kubernetes import SimulatedCluster, Fault

with SimulatedCluster(build_world(50, seed=1)) as cluster:
    cluster.faults.add(Fault("status", status=429, resource="pods"))
"""

from simulator.kubernetes.cluster import SimulatedCluster
from simulator.kubernetes.faults import Fault
from simulator.kubernetes.server import RequestRecord

__all__ = ["Fault", "RequestRecord", "SimulatedCluster"]

"""The seeded world model of a GPU cluster that every simulator serves from.

from simulator.world import World, build_world
world = build_world(nodes=50, seed=1)
world = build_world(nodes=50, seed=1, features={"dra", "sharing", "kueue"})  # opt-in parts

Ground truth beyond the API objects (who holds which physical GPU by which mechanism, Kueue
waits and quotas): `simulator.world.truth`.
"""

from simulator.world.build import MAX_NODES, build_world
from simulator.world.features import FEATURES
from simulator.world.model import (
    RESOURCE_KINDS,
    Gpu,
    GpuHolding,
    QueuedWorkload,
    QueueQuota,
    TrainingRun,
    World,
)

__all__ = [
    "FEATURES",
    "MAX_NODES",
    "RESOURCE_KINDS",
    "Gpu",
    "GpuHolding",
    "QueueQuota",
    "QueuedWorkload",
    "TrainingRun",
    "World",
    "build_world",
]

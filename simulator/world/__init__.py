"""The seeded world model of a GPU cluster that every simulator serves from.

from simulator.world import World, build_world
world = build_world(nodes=50, seed=1)
"""

from simulator.world.build import MAX_NODES, build_world
from simulator.world.model import RESOURCE_KINDS, Gpu, TrainingRun, World

__all__ = ["MAX_NODES", "RESOURCE_KINDS", "Gpu", "TrainingRun", "World", "build_world"]

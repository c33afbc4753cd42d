"""The simulated world's opt-in parts, as ``annex simulate`` and ``annex demo`` take them.

``--features dra,sharing,kueue`` (any of them, ``all`` or ``none``) chooses the parts of
``simulator.world.features``: GPUs allocated only through DRA ResourceClaims (a GB200 pool with
ComputeDomain claims across nodes), time-sliced, MPS and HAMi-shared GPUs, and Kueue queues
with their workloads. Left out, both commands build all three where the world has room for
their pools (they take nodes of their own), and the plain world below that size: a 3-node
demo stays a 3-node world. Asked for explicitly on too small a world, it is an error that says
how many nodes they need.
"""

from __future__ import annotations

import argparse
from typing import Any

from annex.errors import ConfigError

NAMES = ("dra", "sharing", "kueue")
"""simulator.world.features.FEATURES, named here so that parsing the command line does not
import the simulator (a test checks they agree)."""


def feature_list(text: str) -> frozenset[str]:
    """argparse type: ``dra,sharing``, ``all`` or ``none``."""
    words = {word.strip().lower() for word in text.split(",") if word.strip()}
    if words == {"all"}:
        return frozenset(NAMES)
    if words <= {"none"}:
        return frozenset()
    unknown = sorted(words - set(NAMES))
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown world features {', '.join(unknown)}: choose from {', '.join(NAMES)}, "
            "all or none"
        )
    return frozenset(words)


def add_features_option(parser: Any) -> None:
    parser.add_argument(
        "--features",
        type=feature_list,
        default=None,
        metavar="LIST",
        help="opt-in parts of the simulated world, comma-separated: dra (GPUs held only "
        "through DRA ResourceClaims, MIG devices and a GB200 ComputeDomain), sharing "
        "(time-sliced, MPS and HAMi-shared GPUs), kueue (queues, quotas and waiting "
        "workloads); all or none (default: all three where the world has room for their "
        "pools, from 14 nodes; none below)",
    )


def chosen_features(nodes: int, features: frozenset[str] | None) -> frozenset[str]:
    """The features to build a world of ``nodes`` with: ``features`` as asked (an error when
    their pools leave no node for the rest of the world), or by default all where they fit."""
    from simulator.world.features import extra_nodes

    if features is None:
        everything = frozenset(NAMES)
        return everything if nodes > extra_nodes(nodes, everything) else frozenset()
    needed = extra_nodes(nodes, features)
    if features and nodes <= needed:
        raise ConfigError(
            f"--features {','.join(sorted(features))} need {needed} nodes of their own and "
            f"--nodes is {nodes}",
            hint=f"ask for --nodes {needed + 1} or more, or leave a feature out "
            "(--features none for the plain world)",
        )
    return features


def describe(features: frozenset[str]) -> str:
    """The features in words for the commands' first line."""
    return "features " + ", ".join(sorted(features)) if features else "no features"

"""Which pods hold capacity: the scheduler's own rule (reference §4).

A pod counts against its node when it is bound (``spec.nodeName`` set) and its phase is neither
Succeeded nor Failed: exactly the scheduler's pod-informer filter, and kubectl's node describer.
So Pending-but-bound pods (pulling images) count, Running and Unknown count, and terminating
pods (``deletionTimestamp`` set) count until they are gone. A pod that is only nominated
(``status.nominatedNodeName``, waiting for a preemption) holds nothing yet.
"""

from __future__ import annotations

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def is_counted(node_name: str | None, phase: str | None) -> bool:
    """Whether the pod's requests are allocated on its node right now."""
    return bool(node_name) and phase not in TERMINAL_PHASES


def is_queued(node_name: str | None, phase: str | None) -> bool:
    """Whether the pod is demand waiting for the scheduler: Pending and not bound to a node.

    A pod that is only nominated for a node is still queued: the nomination reserves nothing.
    """
    return not node_name and (phase or "Pending") == "Pending"


def is_terminal(phase: str | None) -> bool:
    """Whether the pod has finished (its allocation, if any, has ended)."""
    return phase in TERMINAL_PHASES

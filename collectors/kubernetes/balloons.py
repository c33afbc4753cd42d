"""Balloon (placeholder) pods: capacity reserved by low-priority pods, never idle capacity.

Upstream's overprovisioning pattern runs pause pods of a negative-priority class (``placeholder``,
value -1000) that real work preempts; Cluster Autoscaler treats pods below priority -10 as
expendable (reference §4). Which pods are balloons is configured by ``BalloonRule``.
"""

from __future__ import annotations

from annex.settings import BalloonRule

WORKLOAD = "workload"
BALLOON = "balloon"


def is_balloon(priority: int | None, priority_class_name: str | None, rule: BalloonRule) -> bool:
    """Whether a pod (or a priority class) is a balloon under ``rule``.

    A missing priority (admission did not resolve one) is not a balloon by value; its class
    name can still make it one.
    """
    if priority_class_name and priority_class_name in rule.priority_classes:
        return True
    return priority is not None and priority < rule.priority_below


def category(priority: int | None, priority_class_name: str | None, rule: BalloonRule) -> str:
    """``balloon`` or ``workload``: the bucket a pod's allocated GPUs are reported in."""
    return BALLOON if is_balloon(priority, priority_class_name, rule) else WORKLOAD

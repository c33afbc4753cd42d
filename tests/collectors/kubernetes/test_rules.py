"""Which pods count, balloons, and failure-domain paths."""

from __future__ import annotations

import pytest

from annex.settings import TOPOLOGY_PRESETS, BalloonRule
from collectors.kubernetes.balloons import category, is_balloon
from collectors.kubernetes.phases import is_counted, is_queued, is_terminal
from collectors.kubernetes.topology import UNKNOWN, domain_path


@pytest.mark.parametrize(
    ("node", "phase", "counted", "queued"),
    [
        ("n1", "Running", True, False),
        ("n1", "Pending", True, False),  # bound, pulling images: holds its GPUs
        ("n1", "Unknown", True, False),
        ("n1", "Succeeded", False, False),
        ("n1", "Failed", False, False),
        (None, "Pending", False, True),  # waiting for the scheduler: demand
        ("", "Pending", False, True),
        (None, None, False, True),  # no status yet: still pending
        (None, "Failed", False, False),  # e.g. rejected at admission: neither
    ],
)
def test_counted_and_queued(node, phase, counted, queued):
    assert is_counted(node, phase) is counted
    assert is_queued(node, phase) is queued


def test_terminal():
    assert is_terminal("Succeeded") and is_terminal("Failed")
    assert not is_terminal("Running") and not is_terminal(None)


@pytest.mark.parametrize(
    ("priority", "klass", "rule", "expected"),
    [
        (-1000, "placeholder", BalloonRule(), True),
        (-1, None, BalloonRule(), True),
        (0, None, BalloonRule(), False),
        (None, None, BalloonRule(), False),
        (100, "balloon", BalloonRule(), True),  # class named in the rule wins
        (-5, None, BalloonRule(priority_below=-10), False),  # Cluster Autoscaler's threshold
        (-11, None, BalloonRule(priority_below=-10), True),
        (0, "reserve", BalloonRule(priority_classes=("reserve",)), True),
        (0, "placeholder", BalloonRule(priority_classes=()), False),
    ],
)
def test_balloons(priority, klass, rule, expected):
    assert is_balloon(priority, klass, rule) is expected
    assert category(priority, klass, rule) == ("balloon" if expected else "workload")


def test_domain_path_generic_profile():
    labels = {
        "topology.kubernetes.io/region": "eu-west",
        "topology.kubernetes.io/zone": "eu-west-1b",
        "kubernetes.io/hostname": "gpu-7",
    }
    path = domain_path(labels, TOPOLOGY_PRESETS["generic"])
    assert [(d.level, d.level_label, d.value, d.domain_key) for d in path] == [
        (1, "topology.kubernetes.io/region", "eu-west", "eu-west"),
        (2, "topology.kubernetes.io/zone", "eu-west-1b", "eu-west/eu-west-1b"),
        (3, "kubernetes.io/hostname", "gpu-7", "eu-west/eu-west-1b/gpu-7"),
    ]


def test_alternate_label_keys_and_missing_levels():
    levels = TOPOLOGY_PRESETS["generic"]
    labels = {
        "failure-domain.beta.kubernetes.io/zone": "z1",  # deprecated key stands in
        "kubernetes.io/hostname": "h1",
    }
    path = domain_path(labels, levels)
    assert path[0].value == UNKNOWN and path[0].label is None
    assert path[1].label == "failure-domain.beta.kubernetes.io/zone"
    assert path[1].level_label == "topology.kubernetes.io/zone"
    assert path[1].domain == ("unknown", "z1")
    assert path[2].domain == ("unknown", "z1", "h1")


def test_same_value_under_different_parents_are_different_domains():
    levels = TOPOLOGY_PRESETS["nvidia-topograph-v0"]
    a = domain_path(
        {"network.topology.nvidia.com/spine": "s1", "network.topology.nvidia.com/leaf": "rack-1"},
        levels,
    )
    b = domain_path(
        {"network.topology.nvidia.com/spine": "s2", "network.topology.nvidia.com/block": "rack-1"},
        levels,
    )
    assert a[1].value == b[1].value == "rack-1"
    assert a[1].domain_key != b[1].domain_key
    assert a[1].label == "network.topology.nvidia.com/leaf"  # second alternative used


def test_no_labels_at_all():
    path = domain_path(None, TOPOLOGY_PRESETS["nvlink"])
    assert [d.domain_key for d in path] == ["unknown", "unknown/unknown"]

"""The GPUs' activity in a world with a past (simulator.world.activity with a WorldHistory):
a GPU held by a past pod is held during the pod's life, as the API served it then, and free
between; the present is the same with or without the past.

Expectations come from the history's API objects (`objects_at`), never from its bookkeeping.
"""

from __future__ import annotations

import pytest

from simulator.world import build_world
from simulator.world.activity import gpu_activity
from simulator.world.history import WorldHistory

NODES, SEED, DAYS = 60, 7, 30


def present_fields(activity) -> tuple:
    return (
        activity.gpu.uuid,
        activity.role,
        activity.since,
        activity.pod,
        activity.namespace,
        activity.container,
        activity.degraded,
        activity.driver_loaded_at,
        activity.exporter_generation,
    )


@pytest.fixture(scope="module")
def world_and_present():
    world = build_world(NODES, seed=SEED)
    present = [present_fields(a) for a in gpu_activity(world)]  # computed before the past
    return world, present


@pytest.fixture(scope="module")
def history(world_and_present) -> WorldHistory:
    return WorldHistory(world_and_present[0], days=DAYS)


@pytest.fixture(scope="module")
def activity(history):
    return gpu_activity(history.world)


def test_a_world_without_history_has_no_past() -> None:
    world = build_world(20)
    assert world.history is None
    assert all(a.past == () for a in gpu_activity(world))


def test_the_history_is_attached_and_the_present_unchanged(
    world_and_present, history, activity
) -> None:
    world, present = world_and_present
    assert world.history is history
    assert [present_fields(a) for a in activity] == present
    assert sum(1 for a in activity if a.past) > len(activity) // 4, "the past should be busy"


def test_past_holdings_are_disjoint_and_end_by_the_present(history, activity) -> None:
    for a in activity:
        bound = history.now if a.role == "free" else a.since
        for held in a.past:
            assert held.begin < held.end <= bound
        for before, after in zip(a.past, a.past[1:], strict=False):
            assert before.end <= after.begin
        if not a.gpu.healthy or a.gpu.node in history.world.gpu_sharing:
            assert a.past == ()


def _running_on(history: WorldHistory, t: float, node: str) -> dict[tuple[str, str], dict]:
    pods = history.objects_at(t)["pods"]
    return {
        (p["metadata"]["namespace"], p["metadata"]["name"]): p
        for p in pods
        if p["spec"].get("nodeName") == node and p["status"].get("phase") == "Running"
    }


def test_a_gpu_held_by_a_past_pod_is_held_during_its_life_and_free_between(
    history, activity
) -> None:
    checked = 0
    for a in activity:
        if len(a.past) < 2 or a.gpu.mig_devices:
            continue
        for held, following in zip(a.past, a.past[1:], strict=False):
            middle = (held.begin + held.end) / 2
            running = _running_on(history, middle, a.gpu.node)
            pod = running.get((held.namespace, held.pod))
            assert pod is not None, f"{held.pod} should run on {a.gpu.node} at {middle}"
            assert pod["status"]["startTime"] <= _iso(held.begin)
            if following.begin > held.end:  # a gap: neither pod runs then
                gap = (held.end + following.begin) / 2
                running = _running_on(history, gap, a.gpu.node)
                assert (held.namespace, held.pod) not in running
                assert (following.namespace, following.pod) not in running
            checked += 1
        if checked > 200:
            break
    assert checked > 20


def test_a_balloon_copy_reads_as_balloon(history, activity) -> None:
    roles: dict[str, set[str]] = {}
    for a in activity:
        for held in a.past:
            if held.pod.endswith(tuple(f"-h{n}" for n in range(1, 200))):
                roles.setdefault(
                    "balloon" if held.namespace.startswith("capacity") else "other", set()
                ).add(held.role)
    assert roles.get("balloon") == {"balloon"}, "the test world's past should hold balloons"
    assert "balloon" not in roles.get("other", set())


def test_a_past_pod_role_follows_its_labels(history, activity) -> None:
    """An earlier Job pod is a research pod of the past (the history's rule); a present
    finished training pod was training while it ran."""
    roles = {(h.namespace, h.pod): h.role for a in activity for h in a.past}
    experiments = {r for (ns, name), r in roles.items() if name.startswith("experiment-")}
    assert experiments <= {"research"}
    training = {
        (p["metadata"]["namespace"], p["metadata"]["name"])
        for p in history.world.pods
        if p["status"].get("phase") in ("Succeeded", "Failed")
        and "training.annex.dev/run" in (p["metadata"].get("labels") or {})
        and (p["metadata"].get("ownerReferences") or [{}])[0].get("kind") == "Job"
    }
    held = [r for key, r in roles.items() if key in training]
    assert held, "the test world's finished training pods should have held GPUs"
    assert set(held) == {"training"}


def _iso(t: float) -> str:
    from simulator.world.model import timestamp

    return timestamp(t)

"""`WorldHistory.objects_at`: the world's past as the API would have served it (issue 39)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from simulator.world import build_world
from simulator.world.history import DAY, WorldHistory, epoch


@pytest.fixture(scope="module")
def history() -> WorldHistory:
    return WorldHistory(build_world(nodes=200, seed=4), days=30)


def _by_name(objects: list[dict]) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in objects}


def test_the_present_is_the_world_exactly(history: WorldHistory) -> None:
    present = history.objects_at(history.world.now)
    for plural, items in history.world.objects().items():
        assert len(present[plural]) == len(items), plural
        assert all(a is b for a, b in zip(present[plural], items, strict=True)), plural


def test_a_node_exists_from_its_creation(history: WorldHistory) -> None:
    joined = [
        n for n in history.world.nodes if epoch(n["metadata"]["creationTimestamp"]) > history.start
    ]
    assert joined, "a 200-node world has nodes that joined during the month"
    node = joined[0]
    created = epoch(node["metadata"]["creationTimestamp"])
    name = node["metadata"]["name"]
    assert name not in _by_name(history.objects_at(created - 60)["nodes"])
    assert name in _by_name(history.objects_at(created + 60)["nodes"])


def test_a_cordon_episode_begins_and_ends(history: WorldHistory) -> None:
    episodes = [
        lc
        for lc in history.lifecycles
        if lc.plural == "nodes"
        and any(s.get("spec", {}).get("unschedulable") for _, s in lc.states[:-1])
        and not lc.states[-1][1]["spec"].get("unschedulable")
    ]
    assert episodes, "some node was cordoned earlier and uncordoned since"
    lifecycle = episodes[0]
    name = lifecycle.states[-1][1]["metadata"]["name"]
    index = next(i for i, (_, s) in enumerate(lifecycle.states) if s["spec"].get("unschedulable"))
    begin, end = lifecycle.states[index][0], lifecycle.states[index + 1][0]

    def node_at(t: float) -> dict:
        return _by_name(history.objects_at(t)["nodes"])[name]

    assert not node_at(begin - 60)["spec"].get("unschedulable")
    cordoned = node_at(begin + 60)
    assert cordoned["spec"]["unschedulable"] is True
    assert any(t["key"] == "node.kubernetes.io/unschedulable" for t in cordoned["spec"]["taints"])
    assert not node_at(end + 60)["spec"].get("unschedulable")


def test_present_cordons_and_not_ready_nodes_began_at_their_taints(
    history: WorldHistory,
) -> None:
    cordoned = [n for n in history.world.nodes if n["spec"].get("unschedulable")]
    assert cordoned
    node = cordoned[0]
    added = min(
        epoch(t["timeAdded"])
        for t in node["spec"]["taints"]
        if t["key"] == "node.kubernetes.io/unschedulable"
    )
    earlier = _by_name(history.objects_at(added - 60)["nodes"])[node["metadata"]["name"]]
    assert not earlier["spec"].get("unschedulable")
    down = [
        n
        for n in history.world.nodes
        if any(c["type"] == "Ready" and c["status"] != "True" for c in n["status"]["conditions"])
    ]
    assert down
    before = history.objects_at(history.now - 2 * DAY)["nodes"]
    ready = _by_name(before)[down[0]["metadata"]["name"]]
    assert [c["status"] for c in ready["status"]["conditions"] if c["type"] == "Ready"] == ["True"]


def test_earlier_pods_run_finish_and_are_deleted(history: WorldHistory) -> None:
    earlier = [
        lc
        for lc in history.lifecycles
        if lc.plural == "pods" and lc.gone is not None and len(lc.states) == 2
    ]
    assert earlier
    lifecycle = earlier[0]
    name = lifecycle.states[0][1]["metadata"]["name"]
    ended = lifecycle.states[1][0]

    def pod_at(t: float) -> dict | None:
        return _by_name(history.objects_at(t)["pods"]).get(name)

    assert pod_at(lifecycle.appears - 60) is None
    running = pod_at(lifecycle.appears + 600)
    assert running is not None and running["status"]["phase"] == "Running"
    finished = pod_at(ended + 1)
    assert finished is not None and finished["status"]["phase"] in ("Succeeded", "Failed")
    terminated = finished["status"]["containerStatuses"][0]["state"]["terminated"]
    assert epoch(terminated["finishedAt"]) == ended
    assert pod_at(lifecycle.gone + 1) is None
    assert lifecycle.gone <= history.now


def test_a_present_finished_pod_was_running_before_it_finished(history: WorldHistory) -> None:
    done = [p for p in history.world.pods if p["status"].get("phase") == "Succeeded"]
    pod = done[0]
    finished = max(
        epoch(s["state"]["terminated"]["finishedAt"]) for s in pod["status"]["containerStatuses"]
    )
    key = pod["metadata"]["name"]
    before = _by_name(history.objects_at(finished - 1)["pods"])[key]
    assert before["status"]["phase"] == "Running"
    assert _by_name(history.objects_at(finished)["pods"])[key] is pod


def test_the_same_world_has_the_same_past() -> None:
    a = WorldHistory(build_world(nodes=60, seed=1), days=10)
    b = WorldHistory(build_world(nodes=60, seed=1), days=10)
    moment = a.world.now - timedelta(days=5)
    assert a.objects_at(moment) == b.objects_at(moment)
    assert [m.isoformat() for m in a.moments(24)] == [m.isoformat() for m in b.moments(24)]
    assert len(a.moments(24)) == 10 and a.moments(24)[0] == a.world.now - timedelta(days=10)

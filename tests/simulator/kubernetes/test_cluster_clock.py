"""The simulated cluster at a settable clock: lists serve the world's past, the HTTP Date says
the simulated moment, resourceVersions only grow (issue 39)."""

from __future__ import annotations

import json
import urllib.request
from datetime import timedelta
from email.utils import parsedate_to_datetime

from simulator.kubernetes import SimulatedCluster
from simulator.world import build_world
from simulator.world.history import WorldHistory


def _get(sim: SimulatedCluster, path: str) -> tuple[dict, str]:
    request = urllib.request.Request(
        sim.url + path, headers={"Authorization": f"Bearer {sim.token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read()), response.headers["Date"]


def test_the_cluster_serves_its_past_at_the_simulated_moment() -> None:
    world = build_world(nodes=30, seed=5)
    history = WorldHistory(world, days=10)
    earlier = world.now - timedelta(days=9)
    later = world.now - timedelta(days=2)
    with SimulatedCluster(world) as sim:
        assert sim.clock is None
        present, date = _get(sim, "/api/v1/pods")
        assert parsedate_to_datetime(date).year >= 2026  # the wall clock, as a real server
        versions = [int(present["metadata"]["resourceVersion"])]
        for moment in (earlier, later, world.now):
            sim.set_clock(moment, history.objects_at(moment))
            assert sim.clock == moment
            pods, date = _get(sim, "/api/v1/pods")
            assert parsedate_to_datetime(date) == moment
            expected = {p["metadata"]["name"] for p in history.objects_at(moment)["pods"]}
            assert {p["metadata"]["name"] for p in pods["items"]} == expected
            versions.append(int(pods["metadata"]["resourceVersion"]))
        nodes, _ = _get(sim, "/api/v1/nodes")
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    # back at the present: the world's own objects, as built
    assert len(nodes["items"]) == len(world.nodes)
    assert {n["metadata"]["name"] for n in nodes["items"]} == {
        n["metadata"]["name"] for n in world.nodes
    }
    assert sum(1 for n in nodes["items"] if n["spec"].get("unschedulable")) == sum(
        1 for n in world.nodes if n["spec"].get("unschedulable")
    )

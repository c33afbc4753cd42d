"""A snapshot's moment is the API server's: the HTTP Date of the first list response
(collectors.kubernetes.moment), the local clock when absent, unparseable or agreeing, and a
refusal when the server is far in the future."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from annex.errors import CollectionError
from annex.settings import TOPOLOGY_PRESETS, KubernetesSettings
from collectors.kubernetes import SnapshotMoment, api_client_for, collect_cluster
from collectors.kubernetes.moment import parse_http_date
from simulator.kubernetes import SimulatedCluster
from simulator.world import build_world
from simulator.world.history import WorldHistory

LOCAL = datetime(2026, 11, 29, 12, 0, 0)


def moment(date: str | None) -> datetime | None:
    observed = SnapshotMoment()
    observed.observe(date, LOCAL)
    return observed.collected_at()


def test_a_server_date_that_disagrees_is_the_moment() -> None:
    assert moment("Sun, 01 Nov 2026 09:00:00 GMT") == datetime(2026, 11, 1, 9, 0, 0)
    assert moment("Sun, 29 Nov 2026 11:59:50 GMT") == datetime(2026, 11, 29, 11, 59, 50)


def test_the_local_clock_when_the_date_is_absent_unparseable_or_agrees() -> None:
    assert moment(None) is None
    assert moment("not a date") is None
    assert moment("Sun, 29 Nov 2026 12:00:01 GMT") is None  # within the header's resolution
    assert moment("Sun, 29 Nov 2026 11:59:59 GMT") is None


def test_only_the_first_response_counts() -> None:
    observed = SnapshotMoment()
    observed.observe("Sun, 01 Nov 2026 09:00:00 GMT", LOCAL)
    observed.observe("Mon, 02 Nov 2026 09:00:00 GMT", LOCAL)
    assert observed.collected_at() == datetime(2026, 11, 1, 9, 0, 0)


def test_a_server_far_in_the_future_is_refused() -> None:
    assert moment("Sun, 29 Nov 2026 12:04:00 GMT") == datetime(2026, 11, 29, 12, 4, 0)
    with pytest.raises(CollectionError, match="ahead of this machine's") as refused:
        moment("Sun, 29 Nov 2026 13:00:00 GMT")
    assert "NTP" in (refused.value.hint or "")


def test_http_dates_parse_as_naive_utc() -> None:
    assert parse_http_date("Sun, 01 Nov 2026 10:00:00 +0100") == datetime(2026, 11, 1, 9, 0, 0)


def _collect(sim: SimulatedCluster, tmp_path: Path) -> SnapshotMoment:
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    settings = KubernetesSettings()
    api = api_client_for(kubeconfig=kubeconfig, context=None, in_cluster=False, settings=settings)
    observed = SnapshotMoment()
    try:
        batches = list(
            collect_cluster(
                api,
                cluster="sim",
                settings=settings,
                topology_levels=TOPOLOGY_PRESETS["generic"],
                in_process=True,
                moment=observed,
            )
        )
    finally:
        api.close()
    assert batches[-1][0] == "lists"
    return observed


def test_a_collection_of_the_simulated_past_takes_the_servers_moment(tmp_path: Path) -> None:
    world = build_world(nodes=12, seed=2)
    history = WorldHistory(world, days=3)
    then = world.now - timedelta(days=2)
    with SimulatedCluster(world) as sim:
        assert _collect(sim, tmp_path).collected_at() is None  # the wall clock: agrees
        sim.set_clock(then, history.objects_at(then))
        observed = _collect(sim, tmp_path)
    assert observed.server_date is not None
    assert observed.collected_at() == then.replace(tzinfo=None)

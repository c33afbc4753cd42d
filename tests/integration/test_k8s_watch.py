"""The raw watch reader against the simulated API server, over real sockets.

Each test lists first (the resourceVersion a watch starts from), then changes the simulated
cluster and checks what the watch yields: order, resourceVersions, resumption, 410 handling
and the streaming-list (WatchList) mode.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import msgspec
import pytest

from annex.settings import KubernetesSettings
from collectors.kubernetes import api_client_for
from collectors.kubernetes.builder import read_page
from collectors.kubernetes.collect import Resource
from collectors.kubernetes.watch import (
    Watcher,
    WatchEvent,
    WatchExpired,
    iter_lines,
    list_body,
    parse_event,
)
from simulator.kubernetes import Fault, SimulatedCluster
from simulator.world import build_world

pytestmark = pytest.mark.integration

SETTINGS = KubernetesSettings(max_backoff_seconds=0.2)
PODS = "/api/v1/pods"


@pytest.fixture
def sim(tmp_path: Path):
    cluster = SimulatedCluster(build_world(12, seed=3), bookmark_interval_seconds=0.2)
    with cluster:
        cluster.write_kubeconfig(tmp_path / "kubeconfig")
        yield cluster


@pytest.fixture
def api(sim: SimulatedCluster, tmp_path: Path):
    return api_client_for(
        kubeconfig=tmp_path / "kubeconfig", context=None, in_cluster=False, settings=SETTINGS
    )


def list_rv(api) -> str:
    """The resourceVersion of a fresh list of pods: where a watch after that list starts."""
    response = Resource("pods", PODS).method(api)(limit=500)
    try:
        page = read_page(response.data)
    finally:
        response.release_conn()
    assert page.metadata.resource_version
    return page.metadata.resource_version


def pod_names(sim: SimulatedCluster, count: int) -> list[tuple[str, str]]:
    pods = sim.objects("pods")[:count]
    return [(p["metadata"]["name"], p["metadata"]["namespace"]) for p in pods]


def label(value: str):
    def change(pod: dict) -> None:
        pod["metadata"].setdefault("labels", {})["annex-test"] = value

    return change


def name_of(event: WatchEvent) -> str:
    return msgspec.json.decode(event.raw)["metadata"]["name"]


def changes(watcher: Watcher, rv: str, wanted: int, seconds: float = 15.0) -> list[WatchEvent]:
    """The first `wanted` non-BOOKMARK events after `rv`, within `seconds`."""
    seen: list[WatchEvent] = []
    for event in watcher.events(rv, deadline=time.monotonic() + seconds):
        if event.type != "BOOKMARK":
            seen.append(event)
        if len(seen) == wanted:
            break
    return seen


def test_changes_after_a_list_arrive_in_order(sim: SimulatedCluster, api) -> None:
    rv = list_rv(api)
    (first, ns1), (second, ns2) = pod_names(sim, 2)
    sim.mutate("pods", first, label("a"), namespace=ns1)
    sim.delete("pods", second, namespace=ns2)
    watcher = Watcher(api, PODS, SETTINGS)

    events = changes(watcher, rv, 2)

    assert [(e.type, name_of(e)) for e in events] == [("MODIFIED", first), ("DELETED", second)]
    rvs = [int(e.resource_version) for e in events]
    assert int(rv) < rvs[0] < rvs[1]
    assert msgspec.json.decode(events[0].raw)["metadata"]["labels"]["annex-test"] == "a"
    assert watcher.record.resource_version == events[-1].resource_version
    assert watcher.record.first_byte_latencies and watcher.record.requests == 1


def test_bookmarks_advance_the_last_resource_version(sim: SimulatedCluster, api) -> None:
    rv = list_rv(api)
    node = sim.objects("nodes")[0]["metadata"]["name"]
    sim.mutate("nodes", node, label("b"))  # bumps the global RV; no pod event
    watcher = Watcher(api, PODS, SETTINGS)

    events = list(
        watcher.events(
            rv,
            stop=lambda: watcher.record.bookmarks > 0,
            deadline=time.monotonic() + 10,
        )
    )

    assert events and all(e.type == "BOOKMARK" for e in events)
    assert int(events[-1].resource_version) > int(rv)
    assert watcher.record.resource_version == events[-1].resource_version


def test_a_server_timeout_resumes_without_loss_or_duplicates(sim: SimulatedCluster, api) -> None:
    rv = list_rv(api)
    pods = pod_names(sim, 6)
    watcher = Watcher(api, PODS, SETTINGS, timeout_seconds=1)

    def churn() -> None:
        for number, (name, ns) in enumerate(pods):
            time.sleep(0.45)
            sim.mutate("pods", name, label(str(number)), namespace=ns)

    writer = threading.Thread(target=churn)
    writer.start()
    try:
        events = changes(watcher, rv, len(pods), seconds=20)
    finally:
        writer.join()

    assert [name_of(e) for e in events] == [name for name, _ in pods]
    rvs = [int(e.resource_version) for e in events]
    assert rvs == sorted(set(rvs))
    assert watcher.record.requests >= 2
    assert watcher.record.resumes >= 1


def test_a_compacted_resource_version_raises_watch_expired(sim: SimulatedCluster, api) -> None:
    rv = list_rv(api)
    name, ns = pod_names(sim, 1)[0]
    sim.mutate("pods", name, label("c"), namespace=ns)
    sim.expire_continue_tokens()  # compaction past rv

    with pytest.raises(WatchExpired, match="410"):
        for _ in Watcher(api, PODS, SETTINGS).events(rv, deadline=time.monotonic() + 10):
            pass


def test_an_http_410_raises_watch_expired(sim: SimulatedCluster, api) -> None:
    rv = list_rv(api)
    sim.faults.add(Fault("status", status=410, resource="pods", watch=True))

    with pytest.raises(WatchExpired):
        for _ in Watcher(api, PODS, SETTINGS).events(rv, deadline=time.monotonic() + 10):
            pass


def test_a_503_is_retried(sim: SimulatedCluster, api) -> None:
    rv = list_rv(api)
    sim.faults.add(Fault("status", status=503, resource="pods", watch=True))
    name, ns = pod_names(sim, 1)[0]
    sim.mutate("pods", name, label("d"), namespace=ns)
    watcher = Watcher(api, PODS, SETTINGS)

    events = changes(watcher, rv, 1)

    assert [(e.type, name_of(e)) for e in events] == [("MODIFIED", name)]
    assert watcher.record.retries == 1


def test_streaming_list_yields_every_pod_then_the_end_bookmark(sim: SimulatedCluster, api) -> None:
    expected = {p["metadata"]["uid"] for p in sim.objects("pods")}
    watcher = Watcher(api, PODS, SETTINGS)

    events = list(
        watcher.events(
            None,
            send_initial_events=True,
            stop=lambda: watcher.record.initial_events_done,
            deadline=time.monotonic() + 15,
        )
    )

    added = [e for e in events if e.type == "ADDED"]
    assert {msgspec.json.decode(e.raw)["metadata"]["uid"] for e in added} == expected
    assert len(added) == len(expected)
    assert events[-1].type == "BOOKMARK" and events[-1].initial_events_end
    assert not any(e.initial_events_end for e in events[:-1])
    assert watcher.record.resource_version == events[-1].resource_version

    page = read_page(list_body(events, events[-1].resource_version))
    assert len(page.items) == len(expected)


def test_lines_split_across_chunks_are_joined() -> None:
    line = b'{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"7"}}}'
    chunks = [line[:10], line[10:] + b"\n" + line[:5], line[5:] + b"\n"]

    events = [parse_event(raw) for raw in iter_lines(chunks)]

    assert [(e.type, e.resource_version) for e in events] == [("ADDED", "7"), ("ADDED", "7")]
    assert events[0].raw == line[len(b'{"type":"ADDED","object":') : -1]

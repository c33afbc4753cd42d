"""Paged listing against an in-process API stand-in: paging, 410, 429, 5xx, truncation, RBAC."""

from __future__ import annotations

import json

import pytest

from annex.errors import ClusterAccessError, CollectionError
from annex.settings import TOPOLOGY_PRESETS, KubernetesSettings
from collectors.kubernetes import collect_cluster
from collectors.kubernetes.listing import Lister, latency_summary
from tests.helpers import kubernetes_api as t

PODS = "/api/v1/pods"


def cluster(pods: int = 5) -> t.FakeCluster:
    return t.FakeCluster(
        {
            "/api/v1/nodes": [t.node(f"node-{i}") for i in range(3)],
            PODS: [t.pod(f"p{i}", node_name=f"node-{i % 3}") for i in range(pods)],
            "/apis/batch/v1/jobs": [t.job("j1")],
            "/apis/scheduling.k8s.io/v1/priorityclasses": [t.priority_class("placeholder", -1)],
            "/api/v1/events": [t.event("e1")],
        }
    )


class Clock:
    def __init__(self) -> None:
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def collect(fake: t.FakeCluster, clock: Clock | None = None, **settings):
    settings.setdefault("page_size", 2)
    kubernetes = KubernetesSettings(**settings)
    lister = Lister(kubernetes, sleep=(clock or Clock()).sleep, jitter=lambda: 1.0)
    out = list(
        collect_cluster(
            t.FakeApiClient(fake),
            cluster="test",
            settings=kubernetes,
            topology_levels=TOPOLOGY_PRESETS["generic"],
            in_process=True,
            lister=lister,
        )
    )
    lists = {row["resource"]: row for row in out[-1][1].to_pylist()}
    assert out[-1][0] == "lists"
    return out[:-1], lists


def pod_rows(batches):
    return [row for table, b in batches if table == "pods" for row in b.to_pylist()]


def test_pages_follow_continue_with_the_configured_limit():
    fake = cluster(pods=5)
    batches, lists = collect(fake)
    pod_requests = [q for path, q in fake.requests if path == PODS]
    assert [q.get("limit") for q in pod_requests] == ["2", "2", "2"]
    assert "continue" not in pod_requests[0] and "continue" in pod_requests[1]
    assert [b.num_rows for table, b in batches if table == "pods"] == [2, 2, 1]
    assert lists["pods"]["pages"] == 3 and lists["pods"]["items"] == 5
    assert lists["pods"]["consistent"] is True and lists["pods"]["resource_version"] == "100"
    assert lists["pods"]["requests"] == 3 and lists["pods"]["retries"] == 0
    assert lists["pods"]["latency_max_seconds"] >= lists["pods"]["latency_p50_seconds"] > 0
    assert [lists[r]["items"] for r in ("nodes", "jobs", "priority_classes", "events")] == [
        3,
        1,
        1,
        1,
    ]


def test_expired_continue_restarts_the_list_and_stays_consistent():
    fake = cluster(pods=5)
    fake.expire_tokens_at_page[PODS] = 2
    batches, lists = collect(fake, max_list_restarts=2)
    rows = pod_rows(batches)
    # the first attempt's page 1 was handed over before the 410; the restart sends all 5 again
    assert [r["list_attempt"] for r in rows] == [0, 0, 1, 1, 1, 1, 1]
    assert sorted(r["pod_name"] for r in rows if r["list_attempt"] == 1) == [
        f"p{i}" for i in range(5)
    ]
    assert lists["pods"]["restarts"] == 1 and lists["pods"]["consistent"] is True
    assert lists["pods"]["pages"] == 3 and lists["pods"]["items"] == 5


def test_exhausted_restarts_continue_inconsistently():
    fake = cluster(pods=5)
    fake.expire_tokens_at_page[PODS] = 2
    batches, lists = collect(fake, max_list_restarts=0)
    rows = pod_rows(batches)
    assert sorted(r["pod_name"] for r in rows) == [f"p{i}" for i in range(5)]
    assert {r["list_attempt"] for r in rows} == {0}
    assert lists["pods"]["consistent"] is False and lists["pods"]["restarts"] == 0
    assert lists["pods"]["resource_version"] == "100"  # the snapshot it started from
    tokens = [json.loads(q["continue"]) for p, q in fake.requests if p == PODS and "continue" in q]
    assert tokens[-1]["rv"] == -1  # went on with the server's inconsistent token


def test_429_waits_at_least_retry_after():
    fake = cluster()
    fake.faults.append(
        t.FakeFault(
            PODS,
            status=429,
            body=b"Too many requests, please try again later.",
            headers={"Retry-After": "3"},
            times=2,
        )
    )
    clock = Clock()
    _, lists = collect(fake, clock)
    assert len(clock.sleeps) == 2 and all(s >= 3 for s in clock.sleeps)
    assert lists["pods"]["retries"] == 2 and lists["pods"]["items"] == 5


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_5xx_is_retried_with_capped_exponential_backoff(status):
    fake = cluster()
    fake.faults.append(t.FakeFault(PODS, status=status, times=4))
    clock = Clock()
    _, lists = collect(fake, clock, max_backoff_seconds=1.5)
    assert lists["pods"]["retries"] == 4 and lists["pods"]["items"] == 5
    if status != 503:  # 503 may carry Retry-After (1 s by default)
        assert clock.sleeps == [0.5, 1.0, 1.5, 1.5]  # jitter pinned to its top


def test_5xx_beyond_max_retries_fails_the_collection():
    fake = cluster()
    fake.faults.append(t.FakeFault(PODS, status=500, times=10))
    with pytest.raises(CollectionError, match="pods page 1 still failed after 3 attempts"):
        collect(fake, max_retries=2)


def test_truncated_page_is_fetched_again():
    fake = cluster()
    fake.faults.append(t.FakeFault(PODS, truncate=True, page=2, times=1))
    batches, lists = collect(fake)
    assert len(pod_rows(batches)) == 5 and lists["pods"]["retries"] == 1


def test_page_truncated_every_time_raises_collection_error_naming_it():
    fake = cluster()
    fake.faults.append(t.FakeFault(PODS, truncate=True, page=2, times=99))
    with pytest.raises(
        CollectionError,
        match=r"cluster test \(http://fake-apiserver\): listing pods: page 2 is not valid",
    ):
        collect(fake, max_retries=2)


@pytest.mark.parametrize("status", [401, 403])
def test_refused_access_names_the_rbac(status):
    fake = cluster()
    fake.faults.append(
        t.FakeFault(
            "/api/v1/nodes",
            status=status,
            times=1,
            body=b'{"kind":"Status","message":"nodes is forbidden"}',
        )
    )
    with pytest.raises(ClusterAccessError) as caught:
        collect(fake)
    assert "deploy/rbac.yaml" in caught.value.hint and "forbidden" in caught.value.message


def test_unknown_error_status_is_not_retried():
    fake = cluster()
    fake.faults.append(t.FakeFault("/apis/batch/v1/jobs", status=404, times=1))
    with pytest.raises(CollectionError, match="jobs page 1 failed: 404"):
        collect(fake)
    assert sum(1 for p, _ in fake.requests if p == "/apis/batch/v1/jobs") == 1


def test_progress_reports_each_page():
    fake = cluster(pods=5)
    seen = []
    kubernetes = KubernetesSettings(page_size=2)
    for _ in collect_cluster(
        t.FakeApiClient(fake),
        cluster="c",
        settings=kubernetes,
        topology_levels=TOPOLOGY_PRESETS["generic"],
        in_process=True,
        on_page=seen.append,
    ):
        pass
    pods = [(s.pages, s.items, s.remaining_item_count) for s in seen if s.resource == "pods"]
    assert pods == [(1, 2, 3), (2, 4, 1), (3, 5, None)]


def test_latency_summary_nearest_rank():
    assert latency_summary([]) == (None, None, None)
    values = [float(i) for i in range(1, 101)]
    assert latency_summary(values) == (100.0, 50.0, 99.0)


def test_worker_process_builds_the_same_batches_as_in_process():
    fake = cluster(pods=7)
    wrong = t.pod("wrong-0", node_name="node-0")
    wrong["spec"]["priority"] = "high"  # rejected in the worker, with its reason
    fake.objects[PODS].append(wrong)
    settings = KubernetesSettings(page_size=3)

    def run(in_process: bool):
        return list(
            collect_cluster(
                t.FakeApiClient(fake),
                cluster="test",
                settings=settings,
                topology_levels=TOPOLOGY_PRESETS["generic"],
                lister=Lister(settings, sleep=Clock().sleep, jitter=lambda: 1.0),
                in_process=in_process,
            )
        )

    local, worker = run(True), run(False)
    assert [table for table, _ in worker] == [table for table, _ in local]
    for (table, mine), (_, theirs) in zip(local, worker, strict=True):
        if table == "lists":  # timings differ; the rest must not
            keep = ["resource", "resource_version", "consistent", "pages", "items", "rejected"]
            mine, theirs = mine.select(keep), theirs.select(keep)
        assert mine.equals(theirs), table
    assert any(table == "rejected" for table, _ in worker)

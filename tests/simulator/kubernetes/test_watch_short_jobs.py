"""The simulator's short-job sweep: its ground truth is what the pods themselves say."""

from __future__ import annotations

import calendar
import time

from simulator.kubernetes import SimulatedCluster
from simulator.kubernetes.churn import SHORT_JOB_NAMESPACE, ShortJobs
from simulator.world import build_world


def epoch(value: str) -> int:
    return calendar.timegm(time.strptime(value, "%Y-%m-%dT%H:%M:%SZ"))


def test_every_job_runs_finishes_and_is_deleted_with_its_gpu_seconds_recorded() -> None:
    cluster = SimulatedCluster(build_world(12, seed=3))  # the store only: no server needed
    jobs = ShortJobs(cluster, max_jobs=50, start=1_800_000_000)
    free_at_start = dict(jobs.free)
    rv = cluster.resource_version

    while not jobs.done:
        jobs.advance(7)
        jobs.step()
        assert all(0 <= jobs.free[node] <= free_at_start[node] for node in free_at_start)

    assert len(jobs.ledger) == 50
    assert not [
        p for p in cluster.objects("pods") if p["metadata"]["namespace"] == SHORT_JOB_NAMESPACE
    ]
    assert not [
        j for j in cluster.objects("jobs") if j["metadata"]["namespace"] == SHORT_JOB_NAMESPACE
    ]
    changes = cluster.store.changes_after("pods", rv)
    for record in jobs.ledger.values():
        seen = [c for c in changes if c.version.obj["metadata"]["uid"] == record.pod_uid]
        assert [c.type for c in seen] == ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]
        last = seen[-1].version.obj
        scheduled = last["status"]["conditions"][0]["lastTransitionTime"]
        finished = last["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
        assert (scheduled, finished) == (record.scheduled_at, record.finished_at)
        assert record.gpu_seconds == record.gpus * (epoch(finished) - epoch(scheduled)) > 0
        assert last["status"]["phase"] == "Succeeded"


def test_compaction_expires_old_resource_versions() -> None:
    cluster = SimulatedCluster(build_world(12, seed=3))
    before = cluster.store.compacted_rv
    jobs = ShortJobs(cluster, max_jobs=5, compact_keep=2, start=1_800_000_000)

    jobs.drain()

    assert cluster.store.compacted_rv == cluster.resource_version - 2 > before

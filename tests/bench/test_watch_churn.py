"""The watch-churn bench's own arithmetic: percentiles, lags, misses, the change recorder and
the report's honesty about the rate the simulator achieved."""

from __future__ import annotations

import time

from bench.watch_churn import (
    Misses,
    Phase,
    RecordingCluster,
    commit_lags,
    misses,
    percentile,
    render,
)
from simulator.kubernetes import SimulatedCluster
from simulator.world import build_world


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 1.0) == 100.0
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([], 0.5) is None


def test_commit_lags_measure_from_the_change_and_leave_out_unknown_versions() -> None:
    changes = {101: 1000.0, 102: 1000.5}
    rows = [
        ("101", 1000.25),  # opened 0.25 s after the change
        ("102", 1002.0),  # closed 1.5 s after
        ("7", 1003.0),  # the initial list's version: not a churn change
        (None, None),  # still open: no closing
    ]
    lags, unknown = commit_lags(rows, changes)
    assert lags == [0.25, 1.5]
    assert unknown == 1


def test_misses_count_absent_pods_whole_and_wrong_ones_by_the_difference() -> None:
    ledger = {"a": (1, 30), "b": (2, 40), "c": (1, 10)}
    assert misses(ledger, {"a": 30, "b": 40, "c": 10}) == Misses(0, 0, 0)
    assert misses(ledger, {"a": 30}) == Misses(2, 50, 0)
    # seen but without a duration (a snapshot) or with another one
    assert misses(ledger, {"a": None, "b": 44, "c": 10}) == Misses(0, 34, 2)


def test_recording_cluster_notes_each_write_with_its_resource_version() -> None:
    cluster = SimulatedCluster(build_world(3, seed=1))  # not serving: the store is enough
    recorder = RecordingCluster(cluster)
    before = time.time()
    stored = recorder.put(
        "pods",
        {"metadata": {"name": "p", "namespace": "team-sweep"}, "spec": {}, "status": {}},
    )
    gone = recorder.delete("pods", "p", "team-sweep")
    assert recorder.delete("pods", "p", "team-sweep") is None  # not there: nothing noted
    put_rv = int(stored["metadata"]["resourceVersion"])
    delete_rv = int(gone["metadata"]["resourceVersion"])
    assert set(recorder.changes) == {put_rv, delete_rv}
    assert all(before <= at <= time.time() for at, _ in recorder.changes.values())
    assert recorder.counts == {"pods": 2}
    assert recorder.resource_version == delete_rv  # the rest goes to the real cluster


def test_report_says_when_the_simulator_did_not_make_the_target_rate() -> None:
    kept = Phase(20, 1, achieved_rate=19.8, lags=[0.1, 0.2])
    short = Phase(200, 1, achieved_rate=120.0, lags=[0.3])
    report = render([kept, short], 7500, 30.0)
    lines = report.splitlines()
    assert any(line.startswith("At 20/s") and "(kept up)" in line for line in lines)
    assert any(
        line.startswith("At 200/s") and "could NOT make the target rate" in line for line in lines
    )
    assert "| 200 | 120.0 |" in report

"""One allocation history for utilisation: the watch's exact intervals where annex watch saw the
pod (short pods that lived between two snapshots included), the snapshots' elsewhere; and a
watch commit between two collections makes the next refresh rebuild the hours it touched."""

from __future__ import annotations

from datetime import datetime, timedelta

from tests.warehouse.models.test_utilisation import T0, inventory, query, refresh
from warehouse import Warehouse


def at(hour: int, minute: int = 0, second: int = 0) -> datetime:
    return T0 + timedelta(hours=hour, minutes=minute, seconds=second)


def watched(wh: Warehouse, pod: str, namespace: str, gpus: int, start, end, committed) -> None:
    with wh.writer() as con:
        con.execute(
            "INSERT INTO core.watched_gpu_allocations (cluster, pod_uid, namespace, pod_name, "
            "node_name, resource_name, gpus, category, valid_from, valid_from_source, valid_to, "
            "valid_to_source, valid_to_inferred, opened_resource_version, "
            "closed_resource_version, opened_at, closed_at) VALUES ('c', ?, ?, ?, 'node-1', "
            "'nvidia.com/gpu', ?, 'workload', ?, 'scheduled', ?, 'finished', false, '10', '11', "
            "?, ?)",
            ["uid-" + pod, namespace, pod, gpus, start, end, committed, committed],
        )


def namespace_hours(wh: Warehouse) -> dict[str, float]:
    rows = query(
        wh,
        "SELECT namespace, round(sum(allocated_workload_gpu_hours), 6) "
        "FROM marts.gpu_hours_daily_by_namespace GROUP BY namespace ORDER BY namespace",
    )
    return dict(rows)


def test_the_watch_replaces_snapshot_intervals_and_adds_what_snapshots_missed(
    wh: Warehouse,
) -> None:
    inventory(
        wh,
        nodes=[{"uid": "u1", "name": "node-1", "pool": "p", "region": "r", "capacity": 8,
                "allocatable": 8, "valid_from": at(0)}],
        allocations=[
            # the snapshots saw w1 late and closed it at a collection time (inferred) ...
            {"pod": "w1", "namespace": "team-a", "node": "node-1", "gpus": 4,
             "valid_from": at(0, 15), "valid_to": at(1)},
            # ... and w2 is a pod the watch never saw (it ran before the watch started)
            {"pod": "w2", "namespace": "team-b", "node": "node-1", "gpus": 1,
             "valid_from": at(0)},
        ],
        horizon=at(2),
    )  # fmt: skip
    # the watch has w1's own timestamps, and a 90-second pod no snapshot saw
    watched(wh, "w1", "team-a", 4, at(0, 10), at(0, 40), committed=at(0, 41))
    watched(wh, "s1", "team-sweep", 2, at(0, 20), at(0, 21, 30), committed=at(0, 22))

    refresh(wh)

    assert namespace_hours(wh) == {
        "team-a": 4 * 0.5,  # 00:10-00:40 from the watch, not 00:15-01:00 from the snapshots
        "team-b": 1 * 2.0,  # snapshot-only: open up to the horizon
        "team-sweep": 2 * 90 / 3600,
    }
    assert query(
        wh,
        "SELECT pod_name, recorded_by FROM core.gpu_allocation_history ORDER BY pod_name",
    ) == [("s1", "watch"), ("w1", "watch"), ("w2", "snapshot")]


def test_a_watch_commit_after_a_refresh_rebuilds_the_hours_it_touched(wh: Warehouse) -> None:
    inventory(
        wh,
        nodes=[{"uid": "u1", "name": "node-1", "pool": "p", "region": "r", "capacity": 8,
                "allocatable": 8, "valid_from": at(0)}],
        allocations=[],
        horizon=at(2),
    )  # fmt: skip
    refresh(wh)
    assert namespace_hours(wh) == {}

    # annex watch commits a short pod of hour 00 after that refresh (it caught up late), then
    # the next hourly collection arrives: its refresh must go back to hour 00.
    watched(wh, "s2", "team-sweep", 1, at(0, 5), at(0, 5, 36), committed=at(2, 30))
    with wh.writer() as con:
        con.execute(
            "INSERT INTO audit.collections (collection_id, source, cluster, started_at, "
            "finished_at, status) VALUES ('k8s-2', 'kubernetes', 'c', ?, ?, 'succeeded')",
            [at(3), at(3)],
        )
    refresh(wh)

    assert namespace_hours(wh) == {"team-sweep": 36 / 3600}

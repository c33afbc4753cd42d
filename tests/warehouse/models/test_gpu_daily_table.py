"""marts.gpu_daily, a table since migration 0013: refreshes keep it equal to its hours, an
inventory-only refresh that changes a pod's category rebuilds its days, and a period's figures
combine exactly from its columns."""

from __future__ import annotations

from datetime import timedelta

from tests.warehouse.models.test_utilisation import (
    T0,
    Telemetry,
    every,
    inventory,
    load,
    query,
    refresh,
)
from warehouse import Warehouse

NODE = {"uid": "u1", "name": "node-1", "pool": "p", "region": "r", "capacity": 8,
        "allocatable": 8, "valid_from": T0}  # fmt: skip


def test_gpu_daily_follows_the_hours_and_a_later_inventory_refresh(wh: Warehouse) -> None:
    inventory(
        wh,
        nodes=[NODE],
        allocations=[{"pod": "notebook-0", "namespace": "team-b", "node": "node-1", "gpus": 1,
                      "valid_from": T0}],
        horizon=T0 + timedelta(hours=3),
    )  # fmt: skip
    t = Telemetry()
    # hour 0 idle (0.01), hour 1 busy half the time, hour 2 without a busy value at all
    t.add("GPU-2", "gr_engine_active", every(0, 120), [0.01] * 6 + [0.5] * 6,
          pod="notebook-0", namespace="team-b")  # fmt: skip
    t.add("GPU-2", "power_usage", every(120, 180), [300.0] * 6,
          pod="notebook-0", namespace="team-b")  # fmt: skip
    load(wh, t)
    refresh(wh)

    daily = (
        "SELECT gpu_uuid, hours_reporting, busy_hours, round(busy, 6), dcgm_allocated_gpu_hours, "
        "allocated_idle_gpu_hours, top_namespace, top_namespace_gpu_hours FROM marts.gpu_daily"
    )
    assert query(wh, daily) == [
        ("GPU-2", 3, 2, round((0.01 + 0.5) / 2, 6), 3.0, 1.0, "team-b", 3.0)
    ]
    # the table holds what the hours say (the former view's definition, recomputed)
    assert query(
        wh,
        "SELECT count(*), avg(busy), sum(pod_label_fraction) FILTER (pod_category = 'workload') "
        "FROM marts.gpu_hourly",
    ) == [(3, (0.01 + 0.5) / 2, 3.0)]

    # the next collection finds notebook-0 is a balloon: nothing new in telemetry, but its
    # GPU-hours are no longer allocated (nor idle) and the day must say so
    with wh.writer() as con:
        con.execute(
            "INSERT INTO audit.collections (collection_id, source, cluster, started_at, "
            "finished_at, status) VALUES ('k8s-2', 'kubernetes', 'c', ?, ?, 'succeeded')",
            [T0 + timedelta(hours=4), T0 + timedelta(hours=4)],
        )
        con.execute(
            "INSERT INTO core.gpu_allocations (cluster, pod_uid, namespace, pod_name, "
            "node_name, resource_name, gpus, category, valid_from, valid_from_source, "
            "opened_collection_id) VALUES ('c', 'uid-b', 'team-b', 'notebook-0', 'node-1', "
            "'nvidia.com/gpu', 1, 'balloon', ?, 'scheduled', 'k8s-2')",
            [T0],
        )
    refresh(wh)

    assert query(wh, daily) == [
        ("GPU-2", 3, 2, round((0.01 + 0.5) / 2, 6), 0.0, 0.0, "team-b", 3.0)
    ]

"""What the fleet marts must satisfy whatever the evidence: for every row of every grouping
(node-hour, namespace-hour, and per day by node, team, pool, failure domain, GPU model, GPU
and the whole cluster), allocated-but-idle GPU-hours never exceed the allocated GPU-hours
they are compared with, and capacity is exactly the sum of its buckets.

``violations`` returns the rows that break a rule, each named, so a failing test says where.
"""

from __future__ import annotations

import duckdb

EPSILON = 1e-6
"""GPU-hours are sums of microsecond overlaps: compare with this much slack."""

NODE_GROUPINGS = {
    "node_gpu_hours": "cluster, node_name, hour",
    "gpu_hours_daily_by_node": "cluster, node_name, day",
    "gpu_hours_daily_by_pool": "cluster, node_pool, day",
    "gpu_hours_daily_by_domain": "cluster, failure_domain, day",
    "gpu_hours_daily_by_model": "cluster, gpu_model, day",
}
NAMESPACE_GROUPINGS = {
    "namespace_gpu_hours": "cluster, namespace, hour",
    "gpu_hours_daily_by_namespace": "cluster, namespace, day",
}

IDLE_RULES = {
    "idle above the allocation both sources saw": (
        f"allocated_idle_gpu_hours > allocated_observed_gpu_hours + {EPSILON}"
    ),
    "allocation both saw above the inventory's": (
        f"allocated_observed_gpu_hours > allocated_workload_gpu_hours + {EPSILON}"
    ),
    "idle above allocated": f"allocated_idle_gpu_hours > allocated_workload_gpu_hours + {EPSILON}",
    "negative idle": "allocated_idle_gpu_hours < 0 OR telemetry_only_idle_gpu_hours < 0",
}
BUCKET_RULES = {
    "buckets do not sum to capacity": (
        "abs(allocated_workload_gpu_hours + allocated_balloon_gpu_hours + free_gpu_hours"
        f" + unavailable_gpu_hours - capacity_gpu_hours) > {EPSILON}"
    ),
    "negative bucket": (
        "least(allocated_workload_gpu_hours, allocated_balloon_gpu_hours, free_gpu_hours,"
        f" unavailable_gpu_hours) < -{EPSILON}"
    ),
}


def _broken(
    con: duckdb.DuckDBPyConnection, source: str, keys: str, rules: dict[str, str]
) -> list[tuple]:
    out: list[tuple] = []
    for rule, condition in rules.items():
        rows = con.execute(f"SELECT {keys} FROM {source} WHERE {condition}").fetchall()
        out += [(source, rule, *row) for row in rows]
    return out


def violations(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """Every row of the fleet marts that breaks idle <= allocated or the bucket sum."""
    out: list[tuple] = []
    for view, keys in NODE_GROUPINGS.items():
        out += _broken(con, f"marts.{view}", keys, IDLE_RULES | BUCKET_RULES)
    for view, keys in NAMESPACE_GROUPINGS.items():
        out += _broken(con, f"marts.{view}", keys, IDLE_RULES)
    fleet_daily = """(
        SELECT cluster, day,
               sum(capacity_gpu_hours) AS capacity_gpu_hours,
               sum(allocated_workload_gpu_hours) AS allocated_workload_gpu_hours,
               sum(allocated_balloon_gpu_hours) AS allocated_balloon_gpu_hours,
               sum(free_gpu_hours) AS free_gpu_hours,
               sum(unavailable_gpu_hours) AS unavailable_gpu_hours,
               sum(allocated_observed_gpu_hours) AS allocated_observed_gpu_hours,
               sum(allocated_idle_gpu_hours) AS allocated_idle_gpu_hours,
               sum(telemetry_only_idle_gpu_hours) AS telemetry_only_idle_gpu_hours
        FROM marts.gpu_hours_daily_by_pool
        GROUP BY cluster, day
    )"""
    out += _broken(con, fleet_daily, "cluster, day", IDLE_RULES | BUCKET_RULES)
    # per GPU the allocation is the DCGM pod label's (no inventory knows which GPU a pod holds)
    out += [
        ("marts.gpu_daily", "idle above the DCGM allocation", *row)
        for row in con.execute(
            "SELECT cluster, gpu_uuid, day FROM marts.gpu_daily "
            f"WHERE allocated_idle_gpu_hours > dcgm_allocated_gpu_hours + {EPSILON} "
            "OR dcgm_allocated_gpu_hours > hours_reporting + 1e-6"
        ).fetchall()
    ]
    return out


def groupings_checked(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Rows each grouping holds: a test asserts there was something to check."""
    views = {**NODE_GROUPINGS, **NAMESPACE_GROUPINGS, "gpu_daily": ""}
    return {
        view: int(con.execute(f"SELECT count(*) FROM marts.{view}").fetchone()[0])  # type: ignore[index]
        for view in views
    }

"""The fleet report's shared-GPU, DRA and queue parts, with and without their data.

The queries run on hand-made marts rows (their marts are tested where they are built), and the
sections are rendered from ``build``'s context, so what a reader sees is checked for each case:
a time-sliced node of 8 physical GPUs advertised as 32 shares, an MPS and a HAMi node; GPUs
held through DRA claims; Kueue with workloads waiting and a queue borrowing above its nominal
quota; a cluster that runs no Kueue; and a period without any inventory list to tell.
"""

from __future__ import annotations

import html
import re
from datetime import date, datetime
from types import SimpleNamespace
from typing import Any

import duckdb
import pytest

from reports.fleet import DRA_NOW_SQL, QUERIES, SHARED_GPUS_SQL, build
from reports.templating import render_html

CAPACITY_COLUMNS = (
    "cluster VARCHAR, node_name VARCHAR, resource_name VARCHAR, whole_gpus BOOLEAN, "
    "sharing_strategy VARCHAR, shares BIGINT, advertised_gpus BIGINT, physical_gpus BIGINT, "
    "allocated_workload_gpus DOUBLE, allocated_balloon_gpus DOUBLE, free_gpus DOUBLE"
)


def _sql(name: str) -> str:
    return next(q.sql for q in QUERIES if q.name == name)


def _records(con: duckdb.DuckDBPyConnection, sql: str, **params: Any) -> list[dict[str, Any]]:
    cursor = con.execute(sql, params)
    names = [c[0] for c in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE SCHEMA marts")
    return con


def test_shared_gpus_are_physical_gpus_with_their_shares_per_strategy(con) -> None:
    con.execute(f"CREATE TABLE marts.node_gpu_capacity ({CAPACITY_COLUMNS})")
    con.executemany(
        "INSERT INTO marts.node_gpu_capacity VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            # time-sliced: 8 physical GPUs as 32 shares; 24 replicas held = 6 GPUs
            ("c", "ts-1", "nvidia.com/gpu", True, "time-slicing", 4, 32, 8, 5.5, 0.5, 2.0),
            # MPS: 8 GPUs as 16 shares, 12 held = 6 GPUs
            ("c", "mps-1", "nvidia.com/gpu", True, "mps", 2, 16, 8, 6.0, 0.0, 2.0),
            # HAMi: 8 GPUs split 10 ways, pods hold 75 % of one GPU by gpucores
            ("c", "hami-1", "nvidia.com/gpu", True, "hami", 10, 80, 8, 0.75, 0.0, 7.25),
            # neither an unshared node nor MIG slices belong here
            ("c", "plain-1", "nvidia.com/gpu", True, "none", 1, 8, 8, 8.0, 0.0, 0.0),
            ("c", "mig-1", "nvidia.com/mig-1g.10gb", False, "none", 1, 14, None, 2, 0, 12),
        ],
    )
    rows = {r["sharing_strategy"]: r for r in _records(con, SHARED_GPUS_SQL)}
    assert set(rows) == {"hami", "mps", "time-slicing"}
    ts = rows["time-slicing"]
    assert (ts["nodes"], ts["physical_gpus"], ts["shares_advertised"]) == (1, 8, 32)
    assert (ts["shares_allocated"], ts["held_gpus"], ts["free_gpus"]) == (24, 6.0, 2.0)
    assert (rows["mps"]["shares_allocated"], rows["mps"]["held_gpus"]) == (12, 6.0)
    # a HAMi pod's share is its gpucores percent, not a count of shares
    assert rows["hami"]["shares_allocated"] is None and rows["hami"]["held_gpus"] == 0.75


def test_dra_claims_count_each_gpu_once_however_many_pods_share_the_claim(con) -> None:
    con.execute(
        "CREATE TABLE marts.dra_gpu_claims (cluster VARCHAR, claim_uid VARCHAR, "
        "gpu_uuid VARCHAR, mig_uuid VARCHAR, pod_uid VARCHAR, node_name VARCHAR, "
        "holder_pods INTEGER)"
    )
    con.executemany(
        "INSERT INTO marts.dra_gpu_claims VALUES ('c', ?, ?, ?, ?, ?, ?)",
        [
            ("k1", "GPU-1", None, "p1", "n1", 1),
            ("k1", "GPU-2", None, "p1", "n1", 1),
            ("k2", "GPU-3", None, "p2", "n2", 2),  # one claim, two pods: one GPU
            ("k2", "GPU-3", None, "p3", "n2", 2),
            ("k3", "GPU-4", "MIG-1", "p4", "n3", 1),  # a MIG device, not a whole GPU
        ],
    )
    (row,) = _records(con, DRA_NOW_SQL)
    assert (row["claims"], row["gpus"], row["mig_devices"]) == (3, 3, 1)
    assert (row["pods"], row["nodes"], row["shared_claims"]) == (4, 3, 1)


def test_the_queue_now_is_the_last_day_of_the_period_per_cluster(con) -> None:
    con.execute(
        "CREATE TABLE marts.queue_wait (cluster VARCHAR, cluster_queue VARCHAR, day DATE, "
        "still_waiting_workloads BIGINT, queued_gpus BIGINT)"
    )
    con.executemany(
        "INSERT INTO marts.queue_wait VALUES (?, ?, ?, ?, ?)",
        [
            ("c", "q1", date(2026, 11, 27), 5, 40),
            ("c", "q1", date(2026, 11, 28), 1, 16),
            ("c", "q2", date(2026, 11, 28), 2, 16),
            ("c", "q3", date(2026, 11, 28), 0, 0),
            ("c", "q1", date(2026, 12, 1), 9, 99),  # after the period
        ],
    )
    rows = _records(con, _sql("queues_now"), start=date(2026, 11, 1), end=date(2026, 12, 1))
    assert rows == [
        {
            "cluster": "c",
            "day": date(2026, 11, 28),
            "waiting_workloads": 3,
            "queued_gpus": 32,
            "cluster_queues": 2,
        }
    ]


def test_optional_apis_count_the_kueue_and_dra_objects_each_cluster_served(con) -> None:
    """A served but empty API (Kueue's CRDs installed, no queue) counts no object."""
    con.execute("CREATE SCHEMA audit")
    con.execute(
        "CREATE TABLE audit.kubernetes_lists (collection_id VARCHAR, cluster VARCHAR, "
        "resource VARCHAR, items BIGINT, started_at TIMESTAMP)"
    )
    at = datetime(2026, 11, 5)
    con.executemany(
        "INSERT INTO audit.kubernetes_lists VALUES (?, ?, ?, ?, ?)",
        [
            ("a", "kueue", "pods", 40, at),
            ("a", "kueue", "kueue_workloads", 7, at),
            ("a", "kueue", "kueue_cluster_queues", 2, at),
            ("a", "kueue", "resource_claims", 3, at),
            ("b", "empty", "pods", 9, at),
            ("b", "empty", "kueue_workloads", 0, at),
            ("b", "empty", "resource_slices", 0, at),
            ("c", "plain", "pods", 5, at),
            ("d", "plain", "pods", 5, datetime(2026, 12, 2)),  # after the period
        ],
    )
    rows = _records(
        con,
        _sql("optional_apis"),
        start_ts=datetime(2026, 11, 1),
        end_ts=datetime(2026, 12, 1),
    )
    assert [tuple(r.values()) for r in rows] == [
        ("empty", 1, 0, 0),
        ("kueue", 1, 9, 3),
        ("plain", 1, 0, 0),
    ]


# -- what the reader sees --------------------------------------------------------------------


class _Evidence:
    """The records ``build`` reads, by query name; every other query answered no rows."""

    def __init__(self, rows: dict[str, list[dict[str, Any]]]) -> None:
        self.rows = rows
        self.request = SimpleNamespace(period=None)  # no period: the KPIs are not compared
        self.cutoff = None

    def records(self, name: str) -> list[dict[str, Any]]:
        return self.rows.get(name, [])


BENCHMARKS = [{"measurements": 0, "gpus": 0, "simulated_measurements": 0}]
FLEET_NOW = {
    "cluster": "c1",
    "nodes": 10,
    "ready_nodes": 10,
    "gpu_nodes": 8,
    "capacity_gpus": 64,
    "allocated_workload_gpus": 40,
    "allocated_balloon_gpus": 0,
    "free_gpus": 24,
    "unavailable_gpus": 0,
    "queued_pods": 3,
    "queued_gpus": 12,
    "last_collected_at": datetime(2026, 11, 30, 12),
    "snapshot_consistent": True,
}
SHARED = {
    "cluster": "c1",
    "sharing_strategy": "time-slicing",
    "nodes": 1,
    "physical_gpus": 8,
    "shares_min": 4,
    "shares_max": 4,
    "shares_advertised": 32,
    "shares_allocated": 24,
    "held_gpus": 6.0,
    "free_gpus": 2.0,
}
HAMI = SHARED | {
    "sharing_strategy": "hami",
    "shares_min": 10,
    "shares_max": 10,
    "shares_advertised": 80,
    "shares_allocated": None,
    "held_gpus": 0.75,
}
DRA = {"cluster": "c1", "claims": 3, "gpus": 12, "mig_devices": 2, "pods": 4, "nodes": 2}
QUEUE = {
    "cluster": "c1",
    "namespace": "team-llm",
    "cluster_queue": "team-llm",
    "days_with_waiting": 2,
    "admitted_workloads": 3,
    "wait_p50_hours_max": 3.0,
    "wait_p95_hours_max": 3.0,
    "queued_gpus_max": 16,
    "longest_wait_hours": 3.0,
}
QUOTA = {
    "cluster": "c1",
    "cluster_queue": "team-llm",
    "cohort": "gpu-cohort",
    "flavor": "h100",
    "resource_name": "nvidia.com/gpu",
    "nominal_gpus": 16,
    "borrowing_limit": "8",
    "used_gpus": 24,
    "borrowed_gpus": 8,
    "pending_workloads": 1,
}
NOW = {
    "cluster": "c1",
    "day": date(2026, 11, 30),
    "waiting_workloads": 3,
    "queued_gpus": 32,
    "cluster_queues": 2,
}
LISTS_KUEUE = {"cluster": "c1", "collections": 30, "kueue_objects": 120, "dra_objects": 60}
LISTS_PLAIN = {"cluster": "c1", "collections": 30, "kueue_objects": 0, "dra_objects": 0}


def page_text(rows: dict[str, list[dict[str, Any]]]) -> str:
    """The fleet report's HTML for these records, as plain text."""
    context = build(_Evidence({"benchmarks": BENCHMARKS, "fleet_now": [FLEET_NOW]} | rows))  # type: ignore[arg-type]
    context["report"] |= {
        "name": "fleet",
        "title": "Fleet",
        "summary": "",
        "scope": "Period 2026-11",
        "digest": "0" * 64,
        "dated": datetime(2026, 12, 1),
        "annex_version": "0",
        "sections": [],
        "attachments": [],
        "facts": [],
        "public": False,
        "version": None,
        "evidence_bundle": None,
    }
    text = re.sub(r"<[^>]+>", " ", render_html("fleet.html.j2", context))
    return re.sub(r"\s+", " ", html.unescape(text))


def test_shared_gpus_are_shown_as_physical_gpus_beside_their_shares() -> None:
    text = page_text({"shared_gpus": [SHARED, HAMI]})
    assert "Shares advertised" in text and "Physical GPUs held" in text
    assert "time-slicing 1 8 4 32 24 6.0 2.0" in text
    assert "hami 1 8 10 80 by gpucores % 0.8" in text
    assert "never once per share" in text
    assert "No node shared its GPUs" not in text


def test_without_shared_gpus_the_report_says_every_gpu_is_physical() -> None:
    text = page_text({})
    assert "No node shared its GPUs at the latest inventory" in text
    assert "Shares advertised" not in text


def test_dra_held_gpus_are_named_and_said_to_be_counted() -> None:
    text = page_text({"dra_now": [DRA | {"shared_claims": 1}], "optional_apis": [LISTS_KUEUE]})
    assert "12 physical GPUs and 2 MIG devices are held through 3 DRA ResourceClaims" in text
    assert "by 4 pods on 2 nodes (1 of the claims shared by several pods" in text
    assert "counts them in every allocation figure" in text
    plain = page_text({"optional_apis": [LISTS_PLAIN]})
    assert (
        "No GPU was held through DRA ResourceClaims at the latest inventory (the period's" in plain
    )


def test_queues_say_who_waits_now_and_who_borrows() -> None:
    text = page_text(
        {
            "queues": [QUEUE],
            "queue_quota": [QUOTA],
            "queues_now": [NOW],
            "optional_apis": [LISTS_KUEUE],
        }
    )
    assert "3 workloads were still waiting in c1 for 32 GPUs in 2 ClusterQueues" in text
    assert "uses 24 GPUs of h100 against a nominal quota of 16: 8 borrowed from its cohort" in text
    assert "team-llm team-llm 2 3 3.0 3.0 16 3.0" in text
    assert "run no Kueue" not in text


def test_kueue_without_waiting_workloads_shows_an_empty_wait_table() -> None:
    text = page_text(
        {"queue_quota": [QUOTA | {"borrowed_gpus": 0}], "optional_apis": [LISTS_KUEUE]}
    )
    assert "No workload waited in a Kueue queue in the period" in text
    assert "still waiting" not in text and "borrowed from its cohort" not in text


def test_a_cluster_without_kueue_is_said_to_run_none_with_its_pending_pods() -> None:
    text = page_text({"optional_apis": [LISTS_PLAIN]})
    assert "The clusters run no Kueue queues" in text
    assert "3 pods were pending in c1, asking for 12 GPUs" in text
    assert "GAP" not in text.split("9. Queues")[-1]


def test_without_inventory_lists_whether_kueue_runs_is_a_gap() -> None:
    text = page_text({})
    queues = text.split("9. Queues and waiting")[-1]
    assert "GAP: no inventory listed the clusters in the period" in queues
    assert "run no Kueue" not in queues

"""The fleet summary printed after a collection, read back from the published warehouse copy.

Every number comes from the ``marts`` views, the same ones analysts and reports read, so what
the terminal shows is what ``annex sql`` and the PDFs show. Only whole GPUs are summed as
GPUs; MIG slices are shown apart, never added to GPU counts.
"""

from __future__ import annotations

from typing import Any

import duckdb
from rich.rule import Rule
from rich.table import Table

from annex.cli.counts import plural
from annex.cli.tables import Screen
from annex.settings import Settings

TOP = 10
"""Rows shown per breakdown; the full breakdowns are in the marts."""

BY_MODEL = """
select coalesce(gpu_model, 'unknown ' || nullif(gfd_product, 'unknown'), '(no GPU product label)')
           as gpu_model,
       case when whole_gpus then 'GPU' else replace(resource_name, 'nvidia.com/', '') || ' slice'
       end as unit,
       nodes, capacity_gpus, allocated_workload_gpus, allocated_balloon_gpus, free_gpus,
       unavailable_gpus
from marts.fleet_gpu_by_model where cluster = ?
order by whole_gpus desc, capacity_gpus desc limit {top}
"""

BY_NAMESPACE = """
select namespace, gpu_pods_counted, allocated_workload_gpus, allocated_balloon_gpus,
       mig_slices_allocated, queued_gpus
from marts.fleet_gpu_by_namespace
where cluster = ?
  and allocated_workload_gpus + allocated_balloon_gpus + mig_slices_allocated + queued_gpus > 0
order by allocated_workload_gpus + allocated_balloon_gpus desc, namespace limit {top}
"""

BY_DOMAIN = """
select failure_domain, level_label, nodes, capacity_gpus, allocated_workload_gpus,
       allocated_balloon_gpus, free_gpus, unavailable_gpus,
       round(100 * blast_radius_share, 1) as "% of fleet"
from marts.fleet_gpu_by_domain
where cluster = ? and whole_gpus
  and level = (select min(level) from marts.fleet_gpu_by_domain where cluster = ?)
order by capacity_gpus desc, failure_domain limit {top}
"""

API_LATENCY = """
select resource, verb, requests, cast(round(1000 * p99_seconds) as bigint) as "p99 ms",
       cast(round(1000 * max_seconds) as bigint) as "max ms",
       cast(1000 * slo_p99_seconds as bigint) as "SLO p99 ms", within_slo as "within SLO"
from marts.kubernetes_api_latency where cluster = ? order by verb, resource
"""


QUEUES = """
with days as (
    select day, sum(still_waiting_workloads) as waiting, sum(queued_gpus) as gpus,
           max(wait_p95_seconds) as p95_seconds,
           count(distinct cluster_queue) filter (where still_waiting_workloads > 0) as queues
    from marts.queue_wait where cluster = ? group by day
)
select (select waiting from days order by day desc limit 1) as waiting_workloads,
       (select gpus from days order by day desc limit 1) as queued_gpus,
       (select queues from days order by day desc limit 1) as cluster_queues,
       (select max(p95_seconds) from days
        where day > (select max(day) from days) - interval 7 day) as wait_p95_seconds,
       (select count(distinct cluster_queue) from marts.queue_quota where cluster = ?)
           as quota_queues,
       (select sum(borrowed_gpus) from marts.queue_quota where cluster = ?) as borrowed_gpus
"""
"""Kueue at a glance: the workloads still waiting on the latest day with queue evidence (for
the current day: at the latest inventory) and the GPUs they ask for, the worst day's p95 wait
to admission over the last 7 days, and the GPUs ClusterQueues borrow from their cohorts."""


def print_fleet_summary(settings: Settings, *, screen: Screen | None = None) -> None:
    """Print each cluster's headline figures and its GPU breakdowns, sized to the terminal
    (``annex.cli.tables``: unwrapped when piped)."""
    from warehouse import Warehouse

    screen = screen or Screen()
    with Warehouse(settings.warehouse).reader() as con:
        for cluster in _rows(con, "select * from marts.fleet_summary order by cluster"):
            _print_cluster(con, screen, cluster)


def _rows(con: duckdb.DuckDBPyConnection, query: str, *params: Any) -> list[dict[str, Any]]:
    cursor = con.execute(query, list(params))
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _print_cluster(con: duckdb.DuckDBPyConnection, screen: Screen, summary: dict[str, Any]) -> None:
    from reports.fleet import DRA_NOW_SQL, SHARED_GPUS_SQL

    name = summary["cluster"]
    shared = _rows(con, f"select * from ({SHARED_GPUS_SQL}) where cluster = ?", name)
    dra = _rows(con, f"select * from ({DRA_NOW_SQL}) where cluster = ?", name)
    queues = _rows(con, QUEUES, name, name, name)[0]
    screen.print(Rule(f"[bold]fleet summary: {name}"))
    screen.print(_headline(summary, shared, dra[0] if dra else None, queues))
    for title, query, params in (
        ("GPUs by model", BY_MODEL, (name,)),
        ("GPUs by namespace (holders of GPUs)", BY_NAMESPACE, (name,)),
        ("GPUs by failure domain (broadest level)", BY_DOMAIN, (name, name)),
        ("API server latency seen by annex, 7 days (SLO: LIST p99 <= 30 s)", API_LATENCY, (name,)),
    ):
        rows = _rows(con, query.format(top=TOP), *params)
        if rows:
            screen.print_table(_table(title, rows))


def _headline(
    s: dict[str, Any],
    shared: list[dict[str, Any]] | None = None,
    dra: dict[str, Any] | None = None,
    queues: dict[str, Any] | None = None,
) -> Table:
    capacity = s["capacity_gpus"] or 0

    def share(value: int | None) -> str:
        if not capacity or value is None:
            return _text(value)
        return f"{_text(value)}  ({100 * value / capacity:.1f}%)"

    consistent = "consistent" if s["snapshot_consistent"] else "NOT consistent (see audit)"
    rows = [
        (
            "nodes",
            f"{_text(s['nodes'])}: {_text(s['ready_nodes'])} ready, "
            f"{_text(s['cordoned_nodes'])} cordoned, {_text(s['gpu_nodes'])} with GPUs",
        ),
        ("GPUs (whole)", _text(capacity) + (" physical" if shared else "")),
        *[(f"  {label}", text) for label, text in _sharing_lines(shared or [])],
        ("  allocated to workloads", share(s["allocated_workload_gpus"])),
        *([("    through DRA claims", _dra_line(dra))] if dra and dra["claims"] else []),
        ("  reserved by balloon pods", share(s["allocated_balloon_gpus"])),
        ("  free", share(s["free_gpus"])),
        ("  unavailable", share(s["unavailable_gpus"])),
        (
            "MIG slices",
            f"{_text(s['mig_slices_allocated'])} of {_text(s['mig_slices_capacity'])} allocated",
        ),
        (
            "pods",
            f"{_text(s['pods'])}: {_text(s['pods_counted'])} holding resources, "
            f"{_count(s['balloon_pods'], 'balloon')}, {_text(s['queued_pods'])} queued "
            f"(asking for {_count(s['queued_gpus'], 'GPU')})",
        ),
        *([("queues (Kueue)", _queues_line(queues))] if _has_queues(queues) else []),
        ("collected", f"{s['last_collected_at']:%Y-%m-%d %H:%M:%S} UTC, snapshot {consistent}"),
        ("collection id", str(s["last_collection_id"])),
    ]
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim")
    grid.add_column()
    for label, value in rows:
        grid.add_row(label, value)
    return grid


def _sharing_lines(shared: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """One line per sharing strategy: physical GPUs against the shares the scheduler sees."""
    lines = []
    for r in shared:
        held = f"{_text(float(r['held_gpus']))} physical GPUs held"
        if r["shares_allocated"] is not None:
            held = f"{_text(r['shares_allocated'])} shares allocated = {held}"
        else:
            held += " (by nvidia.com/gpucores %)"
        lines.append(
            (
                f"shared: {r['sharing_strategy']}",
                f"{_text(r['physical_gpus'])} on {_count(r['nodes'], 'node')} as "
                f"{_text(r['shares_advertised'])} shares; {held}",
            )
        )
    return lines


def _dra_line(dra: dict[str, Any]) -> str:
    mig = f", {_count(dra['mig_devices'], 'MIG device')}" if dra["mig_devices"] else ""
    return (
        f"{_count(dra['gpus'], 'GPU')}{mig} in {_count(dra['claims'], 'claim')} "
        f"held by {_count(dra['pods'], 'pod')} (counted above)"
    )


def _has_queues(q: dict[str, Any] | None) -> bool:
    return bool(q) and (q["waiting_workloads"] is not None or bool(q["quota_queues"]))


def _queues_line(q: dict[str, Any]) -> str:
    waiting = q["waiting_workloads"] or 0
    gpus = int(q["queued_gpus"] or 0)
    line = f"{_count(int(waiting), 'workload')} waiting for {_count(gpus, 'GPU')}"
    if waiting:
        line += f" in {_count(q['cluster_queues'], 'ClusterQueue')}"
    if q["wait_p95_seconds"] is not None:
        line += f"; p95 wait {q['wait_p95_seconds'] / 3600:,.1f} h (worst day of the last 7)"
    if q["borrowed_gpus"]:
        line += f"; {_count(int(q['borrowed_gpus']), 'GPU')} borrowed above nominal quota"
    return line


def _table(title: str, rows: list[dict[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left", header_style="bold", title_style="bold")
    columns = list(rows[0])
    for column in columns:
        numeric = isinstance(rows[0][column], int | float) and not isinstance(rows[0][column], bool)
        table.add_column(column, justify="right" if numeric else "left")
    for row in rows:
        table.add_row(*(_text(row[c]) for c in columns))
    return table


def _text(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _count(value: int | None, singular: str) -> str:
    """A counted noun ("1 node", "2 nodes"); "–" and the plural when the count is unknown."""
    if value is None:
        return f"{_text(value)} {singular}s"
    return plural(value, singular)

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
    name = summary["cluster"]
    screen.print(Rule(f"[bold]fleet summary: {name}"))
    screen.print(_headline(summary))
    for title, query, params in (
        ("GPUs by model", BY_MODEL, (name,)),
        ("GPUs by namespace (holders of GPUs)", BY_NAMESPACE, (name,)),
        ("GPUs by failure domain (broadest level)", BY_DOMAIN, (name, name)),
        ("API server latency seen by annex, 7 days (SLO: LIST p99 <= 30 s)", API_LATENCY, (name,)),
    ):
        rows = _rows(con, query.format(top=TOP), *params)
        if rows:
            screen.print_table(_table(title, rows))


def _headline(s: dict[str, Any]) -> Table:
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
        ("GPUs (whole)", _text(capacity)),
        ("  allocated to workloads", share(s["allocated_workload_gpus"])),
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
        ("collected", f"{s['last_collected_at']:%Y-%m-%d %H:%M:%S} UTC, snapshot {consistent}"),
        ("collection id", str(s["last_collection_id"])),
    ]
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim")
    grid.add_column()
    for label, value in rows:
        grid.add_row(label, value)
    return grid


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

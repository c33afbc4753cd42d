"""Report rendering at scale: the fleet report of a 7,500-node fleet against a plain table.

    python -m bench.reports --nodes 7500 --days 31

The fleet is the simulator's (about 8 GPUs per node): ``annex collect cluster`` reads its
inventory from a simulated API server on loopback, as in ``bench.collect_scale``. A month of
history is then written straight into the hourly marts the report reads (``marts.node_gpu_hours``,
``marts.namespace_gpu_hours``, ``marts.gpu_hourly``: one row per node-hour and per GPU-hour,
derived from each node's collected capacity and allocation, a tenth of the GPUs idling while
allocated) with a daily kubernetes and telemetry collection, so every query of the report runs
on a month of a 60,000-GPU fleet. Then, one after the other, each in its own process:

  annex   ``annex report fleet --period YYYY-MM``: queries, layout, PDF/A-3b with every
          evidence table attached (the render subprocess included)
  naive   WeasyPrint laying out the same month as one plain HTML table, a row per node (the
          anchor: what a report that puts every row on the page costs)

Wall time is from process start to exit; peak memory is the largest sum of the resident sets
of the process and its children (psutil, sampled every 20 ms). The table goes to stdout and is
appended to bench/RESULTS.md with the date and the machine. Bar: annex under 20 s and 1 GiB.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import html
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from bench.collect_scale import append_results, cpu_times, machine, start_simulator

CLUSTER = "bench"
BAR_SECONDS = 20.0
BAR_BYTES = 1 << 30
SAMPLE_SECONDS = 0.02


@dataclass
class Run:
    name: str
    wall_seconds: float
    peak_rss_bytes: int
    returncode: int
    detail: str = ""


def measure(name: str, argv: list[str], env: dict[str, str]) -> Run:
    """Run ``argv``; wall time and the peak of the summed RSS of its process tree."""
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors, env=env)
        root = psutil.Process(process.pid)
        peak = 0
        while process.poll() is None:
            peak = max(peak, _tree_rss(root))
            time.sleep(SAMPLE_SECONDS)
        wall = time.perf_counter() - started
        out = process.stdout.read().decode(errors="replace") if process.stdout else ""
        errors.seek(0)
        err = errors.read().decode(errors="replace")
    if process.returncode != 0:
        print(f"{name} failed ({process.returncode}):\n{err[-3000:]}", file=sys.stderr)
    return Run(name, wall, peak, process.returncode, (out + err).strip()[-2000:])


def _tree_rss(root: psutil.Process) -> int:
    total = 0
    try:
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    for p in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += p.memory_info().rss
    return total


HISTORY = """
CREATE TEMP TABLE bench_nodes AS
SELECT c.cluster, c.node_uid, c.node_name, c.node_pool, c.gpu_model,
       coalesce(list_filter(n.topology, lambda t: t.level = 1)[1].domain, 'unknown')
           AS failure_domain,
       c.capacity_gpus AS capacity, c.allocatable_gpus AS allocatable,
       c.allocated_workload_gpus AS allocated_workload,
       c.allocated_balloon_gpus AS allocated_balloon, c.free_gpus AS free,
       c.unavailable_gpus AS unavailable
FROM marts.node_gpu_capacity AS c
JOIN core.nodes AS n USING (cluster, node_uid)
WHERE c.whole_gpus AND n.valid_to IS NULL;

CREATE TEMP TABLE bench_hours AS
SELECT h AS hour, CAST(h AS DATE) AS day
FROM range(CAST($start AS TIMESTAMP), CAST($end AS TIMESTAMP), INTERVAL 1 HOUR) t(h);

-- one row per GPU: its node, its index, the namespace holding it and whether it idles
CREATE TEMP TABLE bench_gpus AS
SELECT n.cluster, n.node_name, n.gpu_model,
       'GPU-' || md5(n.node_uid || '/' || i) AS gpu_uuid,
       i < n.allocated_workload AS allocated,
       'team-' || lpad(CAST(hash(n.node_name) % 40 AS VARCHAR), 2, '0') AS namespace,
       hash(n.node_name || i) % 10 = 0 AS idles
FROM bench_nodes AS n, range(CAST(n.capacity AS BIGINT)) r(i);

INSERT INTO marts.node_gpu_hours
SELECT n.cluster, n.node_name, h.hour, h.day, n.node_uid, n.node_pool, n.gpu_model,
       n.failure_domain, 1.0, n.capacity, n.allocatable, n.allocated_workload,
       n.allocated_balloon, n.free, n.unavailable, 0, n.capacity,
       g.allocated, g.idle, g.busy, n.capacity, g.busy, n.capacity, g.busy * 0.6, n.capacity,
       g.busy * 0.4, n.capacity, n.capacity * 500 * 3600.0, 0, TIMESTAMP '2026-01-01',
       least(n.allocated_workload, g.allocated), 0, 0
FROM bench_nodes AS n
JOIN (
    SELECT node_name, count(*) FILTER (WHERE allocated) AS allocated,
           count(*) FILTER (WHERE allocated AND idles) AS idle,
           sum(CASE WHEN idles THEN 0.01 WHEN allocated THEN 0.8 ELSE 0.0 END) AS busy
    FROM bench_gpus GROUP BY node_name
) AS g USING (node_name), bench_hours AS h;

INSERT INTO marts.namespace_gpu_hours
SELECT $cluster, g.namespace, h.hour, h.day, g.allocated, 0, g.allocated, g.idle, g.busy,
       g.allocated, g.busy, g.allocated, g.busy * 0.6, g.allocated, g.busy * 0.4, g.allocated,
       g.allocated * 500 * 3600.0, 0, TIMESTAMP '2026-01-01', g.allocated, 0, 0
FROM (
    SELECT namespace, count(*) AS allocated, count(*) FILTER (WHERE idles) AS idle,
           sum(CASE WHEN idles THEN 0.01 ELSE 0.8 END) AS busy
    FROM bench_gpus WHERE allocated GROUP BY namespace
) AS g, bench_hours AS h;

INSERT INTO marts.gpu_hourly (cluster, gpu_uuid, hour, day, node_name, gpu_model, samples,
    busy_signal, busy, sm_active, power_watts, energy_joules, workload_pod,
    workload_namespace, pod_label_fraction, pod_category, refreshed_at)
SELECT g.cluster, g.gpu_uuid, h.hour, h.day, g.node_name, g.gpu_model, 60,
       'gr_engine_active', CASE WHEN g.idles THEN 0.01 WHEN g.allocated THEN 0.8 ELSE 0.0 END,
       CASE WHEN g.idles THEN 0.01 WHEN g.allocated THEN 0.6 ELSE 0.0 END, 500.0,
       500.0 * 3600, CASE WHEN g.allocated THEN g.node_name || '-pod' END,
       CASE WHEN g.allocated THEN g.namespace END, CASE WHEN g.allocated THEN 1.0 END,
       CASE WHEN g.allocated THEN 'workload' END, TIMESTAMP '2026-01-01'
FROM bench_gpus AS g, bench_hours AS h;

INSERT INTO audit.collections (collection_id, source, cluster, started_at, finished_at,
    status, rejected_count, error, annex_version)
SELECT 'bench-' || source || '-' || strftime(day, '%Y%m%d'), source, $cluster,
       day + INTERVAL 1 HOUR, day + INTERVAL 61 MINUTE, 'succeeded', 0, NULL, 'bench'
FROM (SELECT DISTINCT day FROM bench_hours), (VALUES ('kubernetes'), ('telemetry')) s(source);
"""


def build_warehouse(workdir: Path, nodes: int, seed: int, first: dt.date, days: int) -> Path:
    """Collect the simulated fleet's inventory, then write ``days`` of history from ``first``."""
    from annex.settings import WarehouseSettings
    from warehouse import Warehouse
    from warehouse.models.utilisation import rebuild_daily_rollups

    path = workdir / "annex.duckdb"
    env = {**os.environ, "ANNEX_WAREHOUSE": str(path), "ANNEX_CONFIG": str(workdir / "none.toml")}
    (workdir / "none.toml").write_text("")
    print(f"starting a simulated cluster of {nodes} nodes…", file=sys.stderr)
    simulator, kubeconfig = start_simulator(nodes, seed, workdir)
    try:
        print("  collecting its inventory (annex collect cluster)…", file=sys.stderr)
        subprocess.run(
            [
                *(sys.executable, "-m", "annex", "collect", "cluster"),
                *("--kubeconfig", str(kubeconfig), "--cluster", CLUSTER, "--quiet"),
            ],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    finally:
        simulator.terminate()
        simulator.wait(timeout=30)
    print(f"  writing {days} days of hourly history…", file=sys.stderr)
    started = time.perf_counter()
    wh = Warehouse(WarehouseSettings(path=path, lock_timeout_seconds=60))
    parameters = {
        "start": first,
        "end": first + dt.timedelta(days=days),
        "cluster": CLUSTER,
    }
    with wh.writer() as con:
        for statement in HISTORY.split(";\n"):
            if statement.strip():
                used = {k: v for k, v in parameters.items() if f"${k}" in statement}
                con.execute(statement, used)
        # the GPU-hours were written in SQL, not by refresh_gpu_hourly: build its daily rollups
        rebuild_daily_rollups(con, first, first + dt.timedelta(days=days - 1))
        rows = con.execute(
            "SELECT (SELECT count(*) FROM marts.node_gpu_hours), "
            "(SELECT count(*) FROM marts.gpu_hourly), (SELECT count(*) FROM bench_gpus)"
        ).fetchone()
    wh.publish()
    print(
        f"  {rows[0]:,} node-hours, {rows[1]:,} GPU-hours of {rows[2]:,} GPUs "
        f"in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    return path


NAIVE_SQL = """
SELECT node_name, node_pool, failure_domain, sum(capacity_gpu_hours) AS capacity,
       sum(allocated_workload_gpu_hours) AS allocated, sum(allocated_balloon_gpu_hours) AS balloon,
       sum(free_gpu_hours) AS free, sum(unavailable_gpu_hours) AS unavailable,
       sum(allocated_idle_gpu_hours) AS idle
FROM marts.node_gpu_hours
WHERE day >= ? AND day < ?
GROUP BY ALL
ORDER BY node_name
"""


def naive_html(warehouse: Path, first: dt.date, end: dt.date) -> str:
    """The month as one plain table, a row per node: what the naive report lays out."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        cursor = con.execute(NAIVE_SQL, [first, end])
        columns = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "\n".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>" for row in rows
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><style>"
        "@page { size: A4; margin: 15mm } body { font: 7pt sans-serif } "
        "table { border-collapse: collapse; width: 100% } td, th { border: 0.4pt solid #ccc; "
        "padding: 1pt 3pt } thead { display: table-header-group }</style></head><body>"
        f"<h1>Fleet {first:%Y-%m}: GPU-hours per node</h1><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></body></html>"
    )


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}"
    return "" if value is None else str(value)


def naive_worker(html_path: str, pdf_path: str) -> int:
    """``--naive-worker HTML PDF``: WeasyPrint, no limits, no fetcher, no attachments."""
    from weasyprint import HTML

    HTML(string=Path(html_path).read_text(encoding="utf-8")).write_pdf(pdf_path)
    return 0


def queries_worker(warehouse: str, period: str) -> int:
    """``--queries-worker WAREHOUSE YYYY-MM``: only the fleet report's evidence queries."""
    from annex.settings import WarehouseSettings
    from reports.catalog import report_definition
    from reports.definition import ReportRequest
    from reports.period import month_period
    from warehouse import Warehouse

    wh = Warehouse(WarehouseSettings(path=Path(warehouse)))
    request = ReportRequest(period=month_period(period))
    from reports.generate import read_evidence

    evidence = read_evidence(wh, report_definition("fleet"), request, today=dt.date.today())
    print(sum(r.rows for r in evidence.results.values()))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--naive-worker", nargs=2, metavar=("HTML", "PDF"), help=argparse.SUPPRESS)
    parser.add_argument("--nodes", type=int, default=7500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--period", default="2026-10", metavar="YYYY-MM")
    parser.add_argument(
        "--days",
        type=int,
        default=None,
        help="days of history from the period's start (default: the whole month)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="build the warehouse in DIR and keep it; reuse it when DIR already holds one",
    )
    parser.add_argument("--no-record", action="store_true", help="don't append to RESULTS.md")
    parser.add_argument(
        "--queries-worker", nargs=2, metavar=("WAREHOUSE", "PERIOD"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.naive_worker:
        return naive_worker(*args.naive_worker)
    if args.queries_worker:
        return queries_worker(*args.queries_worker)

    from reports.period import month_period

    period = month_period(args.period)
    days = args.days or (period.end - period.start).days
    with tempfile.TemporaryDirectory(prefix="annex-bench-reports-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        warehouse = workdir / "annex.duckdb"
        if not (args.keep and warehouse.exists()):
            warehouse = build_warehouse(workdir, args.nodes, args.seed, period.start, days)
        size = warehouse.stat().st_size
        steal_before, total_before = cpu_times()
        env = {
            **os.environ,
            "ANNEX_WAREHOUSE": str(warehouse),
            "ANNEX_CONFIG": str(workdir / "none.toml"),
        }
        print("  annex report fleet…", file=sys.stderr)
        out = workdir / "out"
        annex = measure(
            "annex",
            [
                *(sys.executable, "-m", "annex", "report", "fleet"),
                *("--period", args.period, "--output", str(out)),
            ],
            env,
        )
        print("  the report's queries alone…", file=sys.stderr)
        queries = measure(
            "queries",
            [
                *(sys.executable, "-m", "bench.reports"),
                *("--queries-worker", str(warehouse), args.period),
            ],
            env,
        )
        pdfs = list(out.glob("*.pdf"))
        pdf = _pdf_facts(pdfs[0]) if pdfs else {}
        page = workdir / "naive.html"
        page.write_text(naive_html(warehouse, period.start, period.end), encoding="utf-8")
        print("  naive WeasyPrint table…", file=sys.stderr)
        naive_pdf = workdir / "naive.pdf"
        naive = measure(
            "naive",
            [sys.executable, "-m", "bench.reports", "--naive-worker", str(page), str(naive_pdf)],
            env,
        )
        naive_facts = _pdf_facts(naive_pdf) if naive_pdf.exists() else {}
        steal_after, total_after = cpu_times()
    steal = (steal_after - steal_before) / max(1, total_after - total_before)
    report = render(args, period.label, days, size, annex, pdf, naive, naive_facts, queries, steal)
    print(report)
    if not args.no_record:
        append_results(report)
    return 0 if annex.returncode == 0 and naive.returncode == 0 else 1


def _pdf_facts(path: Path) -> dict[str, int]:
    from pypdf import PdfReader

    reader = PdfReader(path)
    attachments = reader.attachments
    return {
        "pages": len(reader.pages),
        "bytes": path.stat().st_size,
        "attachments": len(attachments),
        "attached_rows": sum(
            max(0, data[0].count(b"\n") - 1)
            for name, data in attachments.items()
            if name.endswith(".csv")
        ),
    }


def render(
    args: argparse.Namespace,
    period: str,
    days: int,
    warehouse_bytes: int,
    annex: Run,
    pdf: dict[str, int],
    naive: Run,
    naive_pdf: dict[str, int],
    queries: Run,
    steal: float,
) -> str:
    def row(run: Run, facts: dict[str, int], what: str) -> str:
        return (
            f"| {run.name} | {what} | {run.wall_seconds:.2f} | {run.peak_rss_bytes / 2**20:.0f} "
            f"| {facts.get('pages', '–')} | {facts.get('attachments', 0)} "
            f"| {facts.get('attached_rows', 0):,} | {facts.get('bytes', 0) / 2**10:,.0f} "
            f"| {run.returncode} |"
        )

    lines = [
        f"## reports: fleet report, {args.nodes} simulated nodes, period {period} "
        f"({days} days of hourly history) ({dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Machine: {machine()}; CPU stolen by the hypervisor during the runs: {steal:.0%}; "
        f"load average (1 min) {os.getloadavg()[0]:.1f} (other processes compete for the "
        f"cores: compare the two sides of one run, not runs). Warehouse "
        f"{warehouse_bytes / 2**20:,.0f} MiB.",
        "",
        "| run | what | wall s | peak RSS MiB (tree) | pages | attachments | rows attached "
        "| PDF KiB | exit |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        row(annex, pdf, "annex report fleet: queries, layout, PDF/A-3b, evidence attached"),
        row(naive, naive_pdf, "WeasyPrint, one plain table, a row per node"),
        row(queries, {}, "of annex's run: the report's queries alone (read_evidence)"),
    ]
    if annex.returncode == 0 and naive.returncode == 0 and annex.wall_seconds > 0:
        within = annex.wall_seconds < BAR_SECONDS and annex.peak_rss_bytes < BAR_BYTES
        lines += [
            "",
            f"The naive table takes {naive.wall_seconds / annex.wall_seconds:.1f}× annex's "
            f"time and {naive.peak_rss_bytes / max(1, annex.peak_rss_bytes):.1f}× its memory; "
            f"annex {'meets' if within else 'misses'} the bar (under {BAR_SECONDS:.0f} s and "
            f"1 GiB) with every evidence row attached.",
        ]
    for run in (annex, naive):
        if run.returncode != 0:
            lines += ["", f"{run.name} FAILED (exit {run.returncode}): `{run.detail[-300:]}`"]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

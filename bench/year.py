"""A year of a 7,500-node, 60,000-GPU fleet: disk per month and the reports' time on it.

    python -m bench.year [--scale 1.0] [--raw-days 14] [--keep DIR] [--no-record]

A fresh migrated warehouse is filled in SQL (bench/year_fill.sql: DuckDB ``range()``, no
simulator, no Python loop over rows) with what a year of annex on such a fleet holds:

- a year of Kubernetes history: ``core.nodes`` as slowly changing rows (monthly label/driver
  changes, node-days down), one ``core.pods`` row and one ``core.gpu_allocations`` interval per
  pod (64-GPU Jobs of 1 to 336 hours), an hourly ``audit.collections`` row per source;
- a year of lineage: every training Job is an OpenLineage run (START/COMPLETE events with their
  payload, corpora versions read, checkpoints written, token counts);
- a year of hourly rollups: ``marts.gpu_hourly`` (one row per GPU and hour),
  ``marts.node_gpu_hours`` and ``marts.namespace_gpu_hours`` summed from it, and the daily
  ``marts.gpu_daily`` / ``marts.gpu_pod_daily`` built by annex's own ``rebuild_daily_rollups``;
- raw DCGM samples (``core.gpu_telemetry_series`` and ``core.gpu_telemetry_samples``, the
  columns the telemetry loader writes) for the retention window only: every field annex maps
  (collectors/telemetry/fields.py), one sample a minute, for the last ``--raw-days`` days
  (default: ``[retention]`` in annex.settings when it exists, else 14).

Values are drawn with ``hash()`` per key (GPU, hour, minute, field), so compression is measured
on spread values, not on all-equal columns. The year is built a calendar month at a time with
a CHECKPOINT after each: the size per month is the growth of the file and of each table family
(DuckDB's blocks in use, a block shared by several tables split by their segments in it).

Then, each in its own process (peak memory = the largest resident set of the process and its
children, psutil sampled every 20 ms, Python and DuckDB together); the reports and queries
read the published copy, as annex's do, and compute writes the live file:

  report   every month's fleet report queries (``reports.generate.read_evidence``), and the
           full ``annex report fleet`` (queries, layout, PDF/A-3b, evidence attached) of the
           last month
  compute  ``refresh_compute`` for all models over the year: ``compute full`` rebuilds every run
           (``full=True``); ``compute`` is the scheduled refresh an hour later, after the
           hour's utilisation refresh rebuilt the last day's pod-days: it recomputes the runs
           whose evidence changed (running ones, those holding GPUs that day) and keeps the rest;
           ``compute check`` then rebuilds every run at the same moment in a transaction it
           rolls back and counts the rows that differ (none, or the step fails)
  daily    the daily utilisation query: ``marts.gpu_hours_daily_by_pool`` for one month
  floor    the anchor beside each: one plain pass over the rows the step reads (a month of
           ``marts.node_gpu_hours``; the year of ``marts.gpu_hourly``)

``--scale`` shrinks nodes, GPUs and runs (not the year, not the window); the record says the
scale and extrapolates each table family to the full fleet by its measured bytes per GPU.
The table goes to stdout and is appended to bench/RESULTS.md with the date and the machine.
Goals: under 100 GB for the year with the default retention; every monthly report under 10 s
and 1 GiB; compute under 10 s.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

FULL_NODES = 7500
GPUS_PER_NODE = 8
T0 = dt.datetime(2025, 11, 1)
"""The year: 2025-11-01 to 2026-11-01, twelve calendar months."""
YEAR_DAYS = 365
CLUSTER = "bench"
FILL = Path(__file__).with_name("year_fill.sql")
GOAL_BYTES = 100 * 10**9
GOAL_REPORT_SECONDS = 10.0
GOAL_REPORT_BYTES = 1 << 30
GOAL_COMPUTE_SECONDS = 10.0
DEFAULT_RAW_DAYS = 14

FAMILIES = (
    ("raw telemetry", lambda s, t: s == "core" and t.startswith("gpu_telemetry_")),
    ("rollups (marts)", lambda s, t: s == "marts"),
    ("lineage", lambda s, t: s == "core" and t.startswith("lineage_")),
    ("kubernetes history", lambda s, t: s == "core"),
    ("audit", lambda s, t: s == "audit"),
    ("other", lambda s, t: True),
)


def family_of(schema: str, table: str) -> str:
    return next(name for name, matches in FAMILIES if matches(schema, table))


def default_raw_days() -> tuple[int, str]:
    """The raw telemetry retention: ``[retention] telemetry_days`` when annex has it."""
    from annex import settings

    retention = getattr(settings, "RetentionSettings", None)  # issue 39 item 2 adds it
    if retention is None:
        return DEFAULT_RAW_DAYS, "bench default (no [retention] setting yet)"
    return int(retention().telemetry_days), "the default of [retention] telemetry_days"


def sections(text: str) -> dict[str, list[str]]:
    """``-- section: NAME`` blocks of the fill script, each a list of statements."""
    out: dict[str, list[str]] = {}
    for block in re.split(r"^-- section: ", text, flags=re.M)[1:]:
        name, _, body = block.partition("\n")
        statements = (_without_comments(s) for s in body.split(";\n"))
        out[name.strip()] = [s for s in statements if s.strip()]
    return out


def _without_comments(statement: str) -> str:
    """The statement without its ``--`` comment lines (they may name a ``$parameter``)."""
    return "\n".join(line for line in statement.split("\n") if not line.strip().startswith("--"))


def run_section(con, statements: list[str], params: dict[str, object]) -> None:
    for statement in statements:
        used = {k: v for k, v in params.items() if re.search(rf"\${k}\b", statement)}
        con.execute(statement, used)


def fields_values() -> tuple[str, int]:
    """The SQL VALUES rows of every DCGM field annex maps: (index, field_id, metric, unit, kind)."""
    from collectors.telemetry.fields import FIELDS

    rows = ", ".join(
        f"({i}, {f.field_id}, '{f.metric}', '{f.unit}', '{f.kind}')" for i, f in enumerate(FIELDS)
    )
    return rows, len(FIELDS)


def months(days: int) -> list[tuple[str, int, int]]:
    """(YYYY-MM, first hour index, end hour index) of each calendar month the year spans."""
    out, start, end = [], T0, T0 + dt.timedelta(days=days)
    while start < end:
        following = (start.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
        stop = min(following, end)
        out.append(
            (
                f"{start:%Y-%m}",
                int((start - T0).total_seconds()) // 3600,
                int((stop - T0).total_seconds()) // 3600,
            )
        )
        start = stop
    return out


# -- sizes ----------------------------------------------------------------------------------


def family_bytes(con) -> dict[str, float]:
    """Bytes of the blocks each table family uses (a shared block split by segment count)."""
    tables = con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() "
        "WHERE database_name = current_database() AND NOT temporary"
    ).fetchall()
    block_size = con.execute(
        "SELECT block_size FROM pragma_database_size() WHERE database_name = current_database()"
    ).fetchone()[0]
    parts = []
    for schema, table in tables:
        parts.append(
            f"SELECT '{family_of(schema, table)}' AS family, b AS block_id FROM ("
            f"SELECT unnest(list_prepend(block_id, coalesce(additional_block_ids, []))) AS b "
            f"FROM pragma_storage_info('{schema}.{table}') WHERE persistent AND block_id >= 0)"
        )
    rows = con.execute(
        "WITH segments AS (" + " UNION ALL ".join(parts) + "), "
        "shares AS (SELECT block_id, count(*) AS n FROM segments GROUP BY block_id) "
        "SELECT family, sum(1.0 / shares.n) FROM segments JOIN shares USING (block_id) "
        "GROUP BY family"
    ).fetchall()
    return {family: blocks * block_size for family, blocks in rows}


def archive_day(con, folder: Path, day: dt.datetime) -> int:
    """Bytes of one day of raw samples written as the export writes them (Parquet, zstd, by
    series then time): what each day past the retention window adds to the archive folder."""
    target = folder / "archive-day.parquet"
    con.execute(
        f"COPY (SELECT * FROM core.gpu_telemetry_samples WHERE ts >= $day "
        f"AND ts < $day + INTERVAL 1 DAY ORDER BY series_id, ts) TO '{target}' "
        "(FORMAT parquet, COMPRESSION zstd)",
        {"day": day},
    )
    size = target.stat().st_size
    target.unlink()
    return size


@dataclass
class Build:
    nodes: int
    gpus: int
    raw_days: int
    fields: int
    rows: dict[str, int] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    month_bytes: list[tuple[str, int, dict[str, float]]] = field(default_factory=list)
    """(month, file bytes after it, family bytes after it)"""
    final_families: dict[str, float] = field(default_factory=dict)
    archive_day_bytes: int = 0
    """One day of raw samples as compaction archives it (Parquet, zstd, sorted as the export)."""
    live_bytes: int = 0
    published_bytes: int = 0


def fill(nodes: int, days: int, raw_days: int, models: int) -> tuple[dict, dict[str, object]]:
    """The fill script's sections and their parameters for a fleet of ``nodes``."""
    values, field_count = fields_values()
    hours = days * 24
    script = sections(FILL.read_text(encoding="utf-8").replace("$fields", values))
    params: dict[str, object] = {
        "t0": T0,
        "hours": hours,
        "nodes": nodes,
        "models": models,
        "cluster": CLUSTER,
        "refreshed": T0 + dt.timedelta(days=days),
        "field_count": field_count,
        "w0": hours - raw_days * 24,
        "stride": raw_days * 24 + 2,
    }
    return script, params


def fill_raw_window(con, script: dict, params: dict[str, object]) -> None:
    """The raw samples of the window: its series, then an hour at a time as the loader writes."""
    run_section(con, script["raw_series"], params)
    for hour in range(int(params["w0"]), int(params["hours"])):
        run_section(con, script["raw_hour"], {**params, "hr": hour})


def add_raw_window(args: argparse.Namespace) -> str:
    """``--add-raw-days N`` on a year kept without its raw window (``--raw-days 0``): fill the
    last N days of raw samples at the kept year's scale and measure them (a full-scale year and
    its 7-day window do not fit twice on a small disk, one day does)."""
    import duckdb

    live = args.keep / "annex.duckdb"
    if not live.exists():
        raise SystemExit(f"--add-raw-days: no kept year in {args.keep} (build one with --keep)")
    before = live.stat().st_size
    with duckdb.connect(str(live)) as con:
        if con.execute("SELECT count(*) FROM core.gpu_telemetry_samples").fetchone()[0]:
            raise SystemExit(f"--add-raw-days: the year in {args.keep} has raw samples already")
        nodes = con.execute("SELECT count(DISTINCT node_name) FROM marts.gpu_daily").fetchone()[0]
        families_before = family_bytes(con)
        script, params = fill(nodes, args.days, args.add_raw_days, args.models)
        started = time.perf_counter()
        con.execute("SET preserve_insertion_order = true")
        run_section(con, script["setup"], params)
        fill_raw_window(con, script, params)
        con.execute("CHECKPOINT")
        seconds = time.perf_counter() - started
        families = family_bytes(con)
        samples = con.execute("SELECT count(*) FROM core.gpu_telemetry_samples").fetchone()[0]
        day = T0 + dt.timedelta(days=args.days - 1)
        archived = archive_day(con, args.keep, day)
    gpus = nodes * GPUS_PER_NODE
    scale = gpus / (FULL_NODES * GPUS_PER_NODE)
    raw = families.get("raw telemetry", 0.0) - families_before.get("raw telemetry", 0.0)
    per_day = raw / args.add_raw_days / scale
    rest = sum(families_before.values()) / scale
    field_count = params["field_count"]
    lines = [
        f"## year, raw window added: {nodes:,} nodes, {gpus:,} GPUs, {args.add_raw_days} day(s) "
        f"of raw samples ({dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Machine: {machine()}; DuckDB {_duckdb_version()}. `python -m bench.year --keep "
        f"{args.keep} --add-raw-days {args.add_raw_days}`: the last {args.add_raw_days} day(s) "
        f"of the kept year's raw samples ({field_count} DCGM fields at one a minute, in the "
        f"loader's order) filled in {seconds:.0f} s.",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| samples | {samples:,} |",
        f"| raw telemetry blocks (GiB) | {raw / 2**30:.3f} |",
        f"| bytes per sample | {raw / max(1, samples):.2f} |",
        f"| GB per day of window at 60,000 GPUs | {per_day / 1e9:.2f} |",
        f"| live file before / after (GiB) | {before / 2**30:.2f} / "
        f"{live.stat().st_size / 2**30:.2f} |",
        f"| everything but raw samples, the year at 60,000 GPUs (GB) | {rest / 1e9:.1f} |",
        f"| one day archived (Parquet zstd, GiB at 60,000 GPUs) | {archived / scale / 2**30:.2f} |",
        "",
        "The year on disk with a raw window of W days is the rest plus W days: "
        + ", ".join(
            f"{w} days {(rest + w * per_day) / 1e9:.0f} GB"
            + (" (under 100 GB)" if rest + w * per_day < GOAL_BYTES else " (over 100 GB)")
            for w in (5, 6, 7, 14)
        )
        + ".",
    ]
    return "\n".join(lines)


def build(
    path: Path, scale: float, days: int, raw_days: int, models: int, *, link_published: bool = False
) -> Build:
    from annex.settings import WarehouseSettings
    from warehouse import Warehouse
    from warehouse.models.utilisation import rebuild_daily_rollups

    nodes = max(8, round(FULL_NODES * scale / 8) * 8)
    raw_days = min(raw_days, days)
    script, params = fill(nodes, days, raw_days, models)
    hours, field_count = int(params["hours"]), int(params["field_count"])
    result = Build(nodes, nodes * GPUS_PER_NODE, raw_days, field_count)
    wh = Warehouse(WarehouseSettings(path=path, lock_timeout_seconds=60))

    def phase(name: str, started: float) -> None:
        result.phases[name] = result.phases.get(name, 0.0) + time.perf_counter() - started
        print(f"  {name}: {time.perf_counter() - started:.1f} s", file=sys.stderr)

    with wh.writer() as con:
        con.execute("SET preserve_insertion_order = true")
        started = time.perf_counter()
        run_section(con, script["setup"], params)
        run_section(con, script["kubernetes"], params)
        phase("kubernetes year", started)
        started = time.perf_counter()
        run_section(con, script["lineage"], params)
        phase("lineage year", started)
        con.execute("CHECKPOINT")
        result.month_bytes.append(
            ("kubernetes, lineage: the year", path.stat().st_size, family_bytes(con))
        )
        for label, h0, h1 in months(days):
            started = time.perf_counter()
            run_section(con, script["month"], {**params, "h0": h0, "h1": h1})
            first = (T0 + dt.timedelta(hours=h0)).date()
            last = (T0 + dt.timedelta(hours=h1 - 1)).date()
            rebuild_daily_rollups(con, first, last)
            con.execute("CHECKPOINT")
            phase("rollups, per month", started)
            result.month_bytes.append((label, path.stat().st_size, family_bytes(con)))
        started = time.perf_counter()
        fill_raw_window(con, script, params)
        con.execute("CHECKPOINT")
        phase("raw telemetry window", started)
        result.final_families = family_bytes(con)
        if raw_days:
            result.archive_day_bytes = archive_day(
                con, path.parent, T0 + dt.timedelta(hours=hours - 24)
            )
        for name in (
            "core.gpu_telemetry_samples",
            "core.gpu_telemetry_series",
            "marts.gpu_hourly",
            "marts.node_gpu_hours",
            "marts.gpu_daily",
            "marts.gpu_pod_daily",
            "core.gpu_allocations",
            "core.nodes",
            "core.lineage_runs",
            "core.lineage_events",
        ):
            result.rows[name] = con.execute(f"SELECT count(*) FROM {name}").fetchone()[0]
    result.live_bytes = path.stat().st_size
    started = time.perf_counter()
    if link_published:
        _link_published(wh)  # published_bytes stays 0: no second copy on disk
        phase("publish (hard link for readers)", started)
    else:
        result.published_bytes = wh.publish().stat().st_size
        phase("publish (copy for readers)", started)
    return result


def _link_published(wh) -> None:
    """``--link-published``: the readers' path is a hard link to the closed, checkpointed live
    file instead of a copy (a full-scale year does not fit twice on a small disk). The readers
    open the same bytes a copy would hold; the published copy's disk is then counted once, and
    the record says so."""
    wal = wh.path.with_name(wh.path.name + ".wal")
    if wal.exists() and wal.stat().st_size:
        raise SystemExit(f"{wal} still holds changes: the live file is not checkpointed")
    published = Path(wh.published_path)
    published.unlink(missing_ok=True)
    os.link(wh.path, published)


# -- measured steps, each in its own process -------------------------------------------------


def worker(kind: str, warehouse: str, argument: str) -> int:
    """``--worker KIND WAREHOUSE ARG``: one step; prints ``SECONDS s`` (the step alone)."""
    import duckdb

    from reports.period import month_period

    started = time.perf_counter()
    if kind == "report":
        from annex.settings import WarehouseSettings
        from reports.catalog import report_definition
        from reports.definition import ReportRequest
        from reports.generate import read_evidence
        from warehouse import Warehouse

        wh = Warehouse(WarehouseSettings(path=Path(warehouse)))
        started = time.perf_counter()
        request = ReportRequest(period=month_period(argument))
        read_evidence(wh, report_definition("fleet"), request, today=dt.date.today())
    elif kind in ("compute", "compute-hourly"):
        from annex.settings import ComputeSettings
        from bench.compute import registry
        from services.compute import PeakTable
        from warehouse.models.compute import refresh_compute
        from warehouse.models.utilisation import rebuild_daily_rollups

        models, _, now = argument.partition("@")
        rows = registry(int(models))
        moment = dt.datetime.fromisoformat(now)
        with duckdb.connect(warehouse) as con:
            if kind == "compute-hourly":
                # what the hour's utilisation refresh does before it (untimed): the last day's
                # pod-days rebuilt from its GPU-hours (refresh_gpu_hourly rebuilds the days of
                # the hours it rolled up)
                last_day = (moment - dt.timedelta(days=1)).date()
                rebuild_daily_rollups(con, last_day, last_day)
                moment += dt.timedelta(hours=1)
            started = time.perf_counter()
            counts = refresh_compute(
                con, ComputeSettings(), rows, PeakTable(), now=moment, full=kind == "compute"
            )
        print(f"runs {counts['runs']}, recomputed {counts['recomputed']}", file=sys.stderr)
    elif kind == "compute-check":
        differing = _compute_check(warehouse, argument)
        print(f"rows differing from a full rebuild: {differing}", file=sys.stderr)
        if differing:
            return 1
    elif kind in ("daily", "floor-month"):
        period = month_period(argument)
        sql = (
            "SELECT * FROM marts.gpu_hours_daily_by_pool WHERE day >= $start AND day < $end"
            if kind == "daily"
            else "SELECT sum(capacity_gpu_hours), sum(allocated_workload_gpu_hours), "
            "sum(allocated_balloon_gpu_hours), sum(free_gpu_hours), sum(unavailable_gpu_hours), "
            "sum(busy_gpu_hours) FROM marts.node_gpu_hours WHERE day >= $start AND day < $end"
        )
        with duckdb.connect(warehouse, read_only=True) as con:
            started = time.perf_counter()
            con.execute(sql, {"start": period.start, "end": period.end}).fetchall()
    elif kind == "floor-year":
        with duckdb.connect(warehouse, read_only=True) as con:
            started = time.perf_counter()
            con.execute(
                "SELECT sum(energy_joules), sum(tensor_active) FROM marts.gpu_hourly"
            ).fetchall()
    else:
        raise SystemExit(f"unknown worker {kind}")
    print(f"{time.perf_counter() - started:.3f} s")
    return 0


@dataclass
class Step:
    name: str
    what: str
    wall_seconds: float
    step_seconds: float | None
    peak_rss_bytes: int
    returncode: int


def step(name: str, what: str, argv: list[str], env: dict[str, str]) -> Step:
    from bench.reports import measure

    run = measure(name, argv, env)
    inner = re.findall(r"^(\d+\.\d+) s$", run.detail, flags=re.M)
    return Step(
        name,
        what,
        run.wall_seconds,
        float(inner[-1]) if inner else None,
        run.peak_rss_bytes,
        run.returncode,
    )


def _compute_check(warehouse: str, argument: str) -> int:
    """Rows of the compute marts that differ between the scheduled refresh's result (the
    ``compute`` step, an hour after ``now``) and a full rebuild at the same moment, run in a
    transaction rolled back (both directions, every column but ``refreshed_at``)."""
    import duckdb

    from annex.settings import ComputeSettings
    from bench.compute import registry
    from services.compute import PeakTable
    from warehouse.models.compute import COMPUTE_MARTS, refresh_compute

    models, _, now = argument.partition("@")
    moment = dt.datetime.fromisoformat(now) + dt.timedelta(hours=1)
    with duckdb.connect(warehouse) as con:
        for n, table in enumerate(COMPUTE_MARTS):
            con.execute(
                f"CREATE TEMP TABLE kept_{n} AS SELECT * EXCLUDE (refreshed_at) FROM {table}"
            )
        con.execute("BEGIN TRANSACTION")
        try:
            refresh_compute(
                con, ComputeSettings(), registry(int(models)), PeakTable(), now=moment, full=True
            )
            differing = 0
            for n, table in enumerate(COMPUTE_MARTS):
                rebuilt = f"SELECT * EXCLUDE (refreshed_at) FROM {table}"
                for a, b in ((f"FROM kept_{n}", rebuilt), (rebuilt, f"FROM kept_{n}")):
                    differing += con.execute(
                        f"SELECT count(*) FROM ({a} EXCEPT ALL {b})"
                    ).fetchone()[0]  # type: ignore[index]
        finally:
            con.execute("ROLLBACK")
    return differing


def measure_steps(workdir: Path, days: int, models: int, *, render: bool = True) -> list[Step]:
    """Every timed step, each in its own process (bench.reports.measure: wall and tree RSS)."""
    live = workdir / "annex.duckdb"
    published = str(_published(live))
    env = {
        **os.environ,
        "ANNEX_WAREHOUSE": str(live),
        "ANNEX_CONFIG": str(workdir / "none.toml"),
    }
    (workdir / "none.toml").write_text("")
    me = [sys.executable, "-m", "bench.year", "--worker"]
    labels = [label for label, h0, h1 in months(days) if h1 - h0 >= 24 * 28] or [
        months(days)[-1][0]
    ]
    last = labels[-1]
    steps = []
    for label in labels:
        print(f"  fleet report queries, {label}…", file=sys.stderr)
        steps.append(
            step(f"report {label}", "fleet report queries", [*me, "report", str(live), label], env)
        )
    out = workdir / "out"
    if render:
        print(f"  annex report fleet --period {last}…", file=sys.stderr)
        steps.append(
            step(
                f"render {last}",
                "annex report fleet (queries, layout, PDF/A-3b, evidence attached)",
                [
                    *(sys.executable, "-m", "annex", "report", "fleet"),
                    *("--period", last, "--output", str(out)),
                ],
                env,
            )
        )
    steps.append(
        step(
            f"floor {last}",
            "anchor: one pass over the month of marts.node_gpu_hours",
            [*me, "floor-month", published, last],
            env,
        )
    )
    steps.append(
        step(
            f"daily {last}",
            "marts.gpu_hours_daily_by_pool for the month",
            [*me, "daily", published, last],
            env,
        )
    )
    now = (T0 + dt.timedelta(days=days)).isoformat()
    print("  refresh_compute…", file=sys.stderr)
    steps.append(
        step(
            "compute full",
            "refresh_compute, all models, the year: every run recomputed (full=True)",
            [*me, "compute", str(live), f"{models}@{now}"],
            env,
        )
    )
    steps.append(
        step(
            "compute",
            "refresh_compute, all models, the year, an hour later: as scheduled, after the "
            "hour's utilisation refresh rebuilt the last day's pod-days (the runs whose "
            "evidence changed recomputed, the others kept)",
            [*me, "compute-hourly", str(live), f"{models}@{now}"],
            env,
        )
    )
    steps.append(
        step(
            "compute check",
            "a full rebuild at the scheduled refresh's moment (rolled back): rows of the six "
            "compute marts differing from the refresh's (exit 0: none)",
            [*me, "compute-check", str(live), f"{models}@{now}"],
            env,
        )
    )
    steps.append(
        step(
            "floor year",
            "anchor: one SUM pass over the year of marts.gpu_hourly",
            [*me, "floor-year", published, "-"],
            env,
        )
    )
    return steps


def _migrate(live: Path) -> None:
    """Open the kept year for writing once, as annex does: its migrations and views, and the
    marts macros the current compute calls."""
    from annex.settings import WarehouseSettings
    from warehouse import Warehouse

    wh = Warehouse(WarehouseSettings(path=live))
    with wh.writer():
        pass
    published = _published(live)
    if not (published.exists() and published.stat().st_ino == live.stat().st_ino):
        wh.publish()  # a copy (not --link-published): the readers' file follows the migration


def _published(live: Path) -> Path:
    from annex.settings import WarehouseSettings

    return Path(WarehouseSettings(path=live).resolved_published_path)


# -- the record -----------------------------------------------------------------------------


def render(
    args: argparse.Namespace, built: Build, raw_source: str, steps: list[Step], build_seconds: float
) -> str:
    gib = 2**30
    scale = built.gpus / (FULL_NODES * GPUS_PER_NODE)
    families = [name for name, _ in FAMILIES if built.final_families.get(name)]
    lines = [
        f"## year: {built.nodes:,} nodes, {built.gpus:,} GPUs (scale {scale:g} of 7,500 / "
        f"60,000), {args.days} days, raw telemetry {built.raw_days} days "
        f"({dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Machine: {machine()}; DuckDB {_duckdb_version()}; load average (1 min) "
        f"{os.getloadavg()[0]:.1f} at the end (other processes compete for the cores). "
        f"`python -m bench.year --scale {args.scale:g} --raw-days {built.raw_days}"
        f"{' --link-published' if args.link_published else ''}`: built in "
        f"{build_seconds:.0f} s ({', '.join(f'{k} {v:.0f} s' for k, v in built.phases.items())}). "
        f"Raw window: {raw_source}; {built.fields} DCGM fields at one sample a minute.",
        "",
        "Rows: " + ", ".join(f"{k} {v:,}" for k, v in built.rows.items()) + ".",
        "",
        "| table family | GiB at this scale | GiB extrapolated to 60,000 GPUs |",
        "|---|---:|---:|",
    ]
    total = 0.0
    for name in families:
        size = built.final_families[name]
        total += size / scale
        lines.append(f"| {name} | {size / gib:.3f} | {size / scale / gib:.1f} |")
    unattributed = built.live_bytes - sum(built.final_families.values())
    lines += [
        f"| indexes, catalog, free blocks (file - blocks above) | {unattributed / gib:.3f} | "
        f"{unattributed / scale / gib:.1f} |",
        f"| **live file** | **{built.live_bytes / gib:.3f}** | "
        f"**{built.live_bytes / scale / gib:.1f}** |",
        f"| published copy (readers' file, same size again) | {built.published_bytes / gib:.3f} | "
        f"{built.published_bytes / scale / gib:.1f} |"
        if built.published_bytes
        else "| published copy (readers' file) | hard link (`--link-published`) | "
        "same size again in a deployment |",
        f"| outside DuckDB: a year of compacted raw samples in the archive (Parquet zstd, one "
        f"day measured x 365) | {built.archive_day_bytes * 365 / gib:.3f} | "
        f"{built.archive_day_bytes * 365 / scale / gib:.1f} |"
        if built.raw_days
        else "| outside DuckDB: compacted raw samples | not built (`--raw-days 0`) | – |",
        "",
        "Size per month (growth of the live file and of each family over the month, rollups "
        "built and checkpointed; the raw window is added once at the end), extrapolated GiB:",
        "",
        "| month | file | " + " | ".join(families) + " |",
        "|---|---:|" + "---:|" * len(families),
    ]
    previous_file, previous = 0, {}
    for label, file_bytes, fam in built.month_bytes:
        cells = [f"{(fam.get(n, 0.0) - previous.get(n, 0.0)) / scale / gib:.2f}" for n in families]
        lines.append(
            f"| {label} | {(file_bytes - previous_file) / scale / gib:.2f} | {' | '.join(cells)} |"
        )
        previous_file, previous = file_bytes, fam
    lines += ["", *steps_table(steps)]
    extrapolated = built.live_bytes / scale
    disk = (
        f"{extrapolated / 1e9:.0f} GB < 100 GB: {_verdict(extrapolated < GOAL_BYTES)}"
        if built.raw_days
        else f"{extrapolated / 1e9:.0f} GB without the raw window (not built: `--raw-days 0`; "
        "not judged here)"
    )
    lines += [
        "",
        f"Goals at this scale: year on disk (live file, extrapolated) {disk}; {time_goals(steps)}.",
    ]
    raw = built.final_families.get("raw telemetry", 0.0) / scale
    if raw and built.raw_days:
        per_day = raw / built.raw_days
        room = GOAL_BYTES - (extrapolated - raw)
        lines += [
            "",
            f"Raw telemetry is {raw / extrapolated:.0%} of the file: {per_day / 1e9:.1f} GB per "
            f"day of the window at 60,000 GPUs x {built.fields} fields "
            f"({raw / max(1, built.rows.get('core.gpu_telemetry_samples', 1)) * scale:.2f} "
            f"bytes per sample); everything else {(extrapolated - raw) / 1e9:.0f} GB for the "
            f"year. A window of {max(0, int(room // per_day))} days fits under 100 GB.",
        ]
    return "\n".join(lines)


def steps_table(steps: list[Step]) -> list[str]:
    lines = [
        "| step | what | wall s (process) | step s | peak RSS MiB (tree) | exit |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for s in steps:
        inner = "–" if s.step_seconds is None else f"{s.step_seconds:.2f}"
        lines.append(
            f"| {s.name} | {s.what} | {s.wall_seconds:.2f} | {inner} | "
            f"{s.peak_rss_bytes / 2**20:.0f} | {s.returncode} |"
        )
    return lines


def time_goals(steps: list[Step]) -> str:
    """The verdicts on the time goals: every monthly report, and compute."""
    reports = [s for s in steps if s.name.startswith(("report", "render"))]
    compute = next((s for s in steps if s.name == "compute"), None)
    reports_ok = all(
        s.returncode == 0
        and s.wall_seconds < GOAL_REPORT_SECONDS
        and s.peak_rss_bytes < GOAL_REPORT_BYTES
        for s in reports
    )
    compute_ok = (
        compute is not None
        and compute.returncode == 0
        and (compute.step_seconds or compute.wall_seconds) < GOAL_COMPUTE_SECONDS
    )
    check = next((s for s in steps if s.name == "compute check"), None)
    same = (
        "the same rows as a full rebuild"
        if check and check.returncode == 0
        else ("NOT the same rows as a full rebuild" if check else "not checked")
    )
    return (
        "every monthly report < 10 s and < 1 GiB (process wall, tree RSS): "
        f"{_verdict(reports_ok)}; compute < 10 s (the refresh): {_verdict(compute_ok)}, {same}"
    )


def steps_again(args: argparse.Namespace) -> str:
    """``--steps-only``: the timed steps again on a year kept by an earlier ``--keep DIR`` (after
    a change to annex's queries or compute), without building it again; ``main`` has checked
    the year is there and migrated and published it (``_migrate``)."""
    import duckdb

    with duckdb.connect(str(_published(args.keep / "annex.duckdb")), read_only=True) as con:
        nodes, gpus = con.execute(
            "SELECT count(DISTINCT node_name), count(DISTINCT gpu_uuid) FROM marts.gpu_daily"
        ).fetchone()
    steps = measure_steps(args.keep, args.days, args.models, render=not args.no_render)
    return "\n".join(
        [
            f"## year, steps again: {nodes:,} nodes, {gpus:,} GPUs, {args.days} days "
            f"({dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)",
            "",
            f"Machine: {machine()}; DuckDB {_duckdb_version()}; load average (1 min) "
            f"{os.getloadavg()[0]:.1f} at the end. `python -m bench.year --keep {args.keep} "
            "--steps-only`: the year an earlier run kept, annex's queries and compute as of "
            "this commit (the warehouse migrated first, as annex does on open).",
            "",
            *steps_table(steps),
            "",
            f"Goals: {time_goals(steps)}.",
        ]
    )


def _emit(report: str, *, record: bool) -> None:
    """Print a record, and append it to bench/RESULTS.md unless ``--no-record``."""
    print(report)
    if record:
        from bench.collect_scale import append_results

        append_results(report)


def _verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def _duckdb_version() -> str:
    import duckdb

    return duckdb.__version__


def machine() -> str:
    from bench.collect_scale import machine as describe

    return describe()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.year", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--worker", nargs=3, metavar=("KIND", "WAREHOUSE", "ARG"), help=argparse.SUPPRESS
    )
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the 7,500-node fleet")
    parser.add_argument("--days", type=int, default=YEAR_DAYS, help="length of the history")
    parser.add_argument("--raw-days", type=int, default=None, help="raw telemetry window (days)")
    parser.add_argument("--models", type=int, default=9)
    parser.add_argument("--keep", type=Path, metavar="DIR", help="build in DIR and leave it there")
    parser.add_argument("--no-record", action="store_true", help="don't append to RESULTS.md")
    parser.add_argument(
        "--steps-only",
        action="store_true",
        help="time the steps again on the year kept in --keep DIR, without building it",
    )
    parser.add_argument(
        "--add-raw-days",
        type=int,
        metavar="N",
        help="fill N days of raw samples into the year kept in --keep DIR (built with "
        "--raw-days 0) and measure them",
    )
    parser.add_argument(
        "--link-published",
        action="store_true",
        help="the readers' copy is a hard link to the live file (a full-scale year on a small "
        "disk), not a copy",
    )
    parser.add_argument(
        "--no-render", action="store_true", help="time the report's queries, not its PDF"
    )
    args = parser.parse_args(argv)
    if args.worker:
        return worker(*args.worker)
    if args.add_raw_days is not None:
        if args.keep is None:
            parser.error("--add-raw-days needs --keep DIR (a year an earlier run kept)")
        if not 0 < args.add_raw_days <= args.days:
            parser.error(f"--add-raw-days {args.add_raw_days}: give 1 to {args.days} days")
        _emit(add_raw_window(args), record=not args.no_record)
        return 0
    if args.steps_only:
        if args.keep is None:
            parser.error("--steps-only needs --keep DIR (a year an earlier run kept)")
        if not (args.keep / "annex.duckdb").exists():
            raise SystemExit(f"--steps-only: no kept year in {args.keep} (build one with --keep)")
        _migrate(args.keep / "annex.duckdb")
        _emit(steps_again(args), record=not args.no_record)
        return 0
    raw_days, raw_source = default_raw_days()
    if args.raw_days is not None:
        raw_days, raw_source = args.raw_days, "--raw-days"
    with tempfile.TemporaryDirectory(prefix="annex-bench-year-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        path = workdir / "annex.duckdb"
        for stale in workdir.glob("annex*.duckdb*"):
            stale.unlink()
        print(f"building a year at scale {args.scale:g} in {workdir}…", file=sys.stderr)
        started = time.perf_counter()
        built = build(
            path, args.scale, args.days, raw_days, args.models, link_published=args.link_published
        )
        build_seconds = time.perf_counter() - started
        steps = measure_steps(workdir, args.days, args.models, render=not args.no_render)
        report = render(args, built, raw_source, steps, build_seconds)
        if not args.keep:
            shutil.rmtree(workdir / "out", ignore_errors=True)
    _emit(report, record=not args.no_record)
    return 0 if all(s.returncode == 0 for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main())

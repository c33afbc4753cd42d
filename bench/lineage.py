"""OpenLineage ingest at scale: annex's validated, normalised ingest over HTTP next to DuckDB
loading the same events as raw JSON lines.

    python -m bench.lineage [--events 200000] [--nodes 40] [--batch 1000] [--no-record]

The events are the simulator's (``simulator.lineage.build_events`` of a ``--nodes`` world),
repeated with fresh run ids, dataset versions and event times until there are ``--events``
distinct events (each copy is another campaign over the same sources: its runs, versions and
times are new, its facets the same). They are written as JSON lines, then loaded twice:

  anchor   DuckDB ``CREATE TABLE ... AS SELECT * FROM read_json(file)`` into a fresh database
           file: schema inference and a columnar load, no validation, no identity, no graph.
  annex    POSTs of ``--batch`` events per request (gzip, bearer token, ``--connections``
           concurrent producers, 4 by default, from another process, bodies compressed
           beforehand) to annex's ``IntakeServer`` with the routes of ``annex serve`` on
           loopback: every event decoded, validated against the OpenLineage 2-0-2 and annex
           facet schemas (jsonschema_rs, the Python validator only to explain a rejection),
           hashed (RFC 8785) and spooled as one Arrow IPC file per request (zstd, fsync);
           ``collect_lineage_evidence`` into a fresh warehouse once the last request is
           answered (with ``--collect-every S`` also every S s while the producers post, as
           the lineage sensor starts collections in production): the spool read, events
           loaded once per event_id, each new payload parsed once in SQL and normalised into
           jobs, runs, datasets, versions, inputs/outputs and facets; then the model closures
           refreshed and the analysts' copy published. Timed from the first request to the
           published warehouse; the CPU seconds of every annex process (server, collections,
           validating processes, producers) are reported too.

The anchor is the median of ``--anchor-runs`` loads (4): half of them before annex's run and
half after it, because this machine's speed drifts by up to 1.5x within minutes (the same
validation took 174 and 264 CPU µs per event twenty minutes apart) and one load's time varies
by up to 2x: loads on both sides of annex's run put the anchor under the same conditions.

Also timed: the upstream closure of the model checkpoint with the most upstream versions,
through the ``marts.lineage_upstream`` macro (computed on the fly from core.lineage_run_io) and
from the precomputed ``marts.lineage_model_inputs`` (median of 3 each). The bar: annex within
5x of the anchor's time. Results go to stdout and are appended to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.collect_scale import append_results, cpu_times, machine

TOKEN = "bench-lineage-token-0123456789abcdef"
_VERSION = re.compile(r'"datasetVersion":"([^"]*)"')
_TIME = re.compile(r'"eventTime":"([^"]*)"')
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


# --- the events ----------------------------------------------------------------------------------


def make_events(count: int, nodes: int, seed: int) -> tuple[list[bytes], dt.datetime]:
    """``count`` distinct events as compact JSON (one per line), and the newest eventTime."""
    import orjson

    from simulator.lineage.producer import build_events, to_json
    from simulator.world import build_world

    world = build_world(nodes, seed=seed)
    base = [orjson.dumps(orjson.loads(to_json(e))).decode() for e in build_events(world)]
    lines: list[bytes] = []
    copy = 0
    while len(lines) < count:
        lines.extend(_vary(base, copy)[: count - len(lines)])
        copy += 1
    newest = max(
        dt.datetime.fromisoformat(m.group(1).replace("Z", "+00:00"))
        for m in (_TIME.search(text) for text in base)
        if m
    )
    return lines, newest


def _vary(base: list[str], copy: int) -> list[bytes]:
    """Copy ``copy`` of the base events: every run id, dataset version and event time new."""
    if copy == 0:
        return [text.encode() for text in base]
    shift = dt.timedelta(minutes=copy)
    ids: dict[str, str] = {}

    def new_id(match: re.Match[str]) -> str:
        old = match.group(0)
        if old not in ids:
            digest = hashlib.sha256(f"{copy}:{old}".encode()).hexdigest()
            # keep the UUIDv7 shape: version 7, variant 10
            ids[old] = (
                f"{old[:8]}-{old[9:13]}-7{digest[:3]}-{'89ab'[int(digest[3], 16) % 4]}"
                f"{digest[4:7]}-{digest[7:19]}"
            )
        return ids[old]

    def new_time(match: re.Match[str]) -> str:
        moment = dt.datetime.fromisoformat(match.group(1).replace("Z", "+00:00")) - shift
        return f'"eventTime":"{moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")}"'

    out = []
    for text in base:
        text = _UUID.sub(new_id, text)
        text = _VERSION.sub(lambda m: f'"datasetVersion":"{m.group(1)}-c{copy}"', text)
        text = _TIME.sub(new_time, text)
        out.append(text.encode())
    return out


# --- the anchor ----------------------------------------------------------------------------------


def run_anchor(path: Path, folder: Path) -> tuple[float, float, int]:
    """One read_json load into a fresh database file: (wall s, CPU s of this process, rows)."""
    import duckdb

    database = folder / "anchor.duckdb"
    con = duckdb.connect(str(database))
    try:
        started, cpu = time.perf_counter(), process_cpu()
        con.execute(
            f"CREATE TABLE events AS SELECT * FROM read_json('{path}', "
            "format = 'newline_delimited')"
        )
        con.execute("CHECKPOINT")
        seconds, cpu = time.perf_counter() - started, process_cpu() - cpu
        [(rows,)] = con.execute("SELECT count(*) FROM events").fetchall()
    finally:
        con.close()
        database.unlink(missing_ok=True)
    return seconds, cpu, rows


def run_anchors(path: Path, folder: Path, count: int, expected: int) -> list[tuple[float, float]]:
    """``count`` read_json loads: (wall s, CPU s) each; each must load ``expected`` rows."""
    anchors = []
    for _ in range(count):
        seconds, cpu, rows = run_anchor(path, folder)
        print(
            f"anchor read_json: {seconds:.1f} s, CPU {cpu:.1f} s ({rows:,} rows)", file=sys.stderr
        )
        if rows != expected:
            raise SystemExit(f"read_json loaded {rows} rows, expected {expected}")
        anchors.append((seconds, cpu))
    return anchors


def process_cpu() -> float:
    """CPU seconds of this process and of its children that have ended (user + system): not
    inflated by the hypervisor's steal, unlike wall time (a busy neighbour on the same host
    still slows them)."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime


# --- annex ---------------------------------------------------------------------------------------


def client(url: str, folder: str, token: str, connections: str) -> None:
    """The producer side (a separate process): POST every body file of ``folder``."""
    import http.client
    import queue

    bodies: queue.Queue[Path] = queue.Queue()
    for path in sorted(Path(folder).glob("*.json.gz")):
        bodies.put(path)
    host, port = url.rsplit("//", 1)[1].rsplit(":", 1)
    failures: list[str] = []

    def worker() -> None:
        connection = http.client.HTTPConnection(host, int(port), timeout=300)
        headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Content-Encoding": "gzip",
        }
        while True:
            try:
                path = bodies.get_nowait()
            except queue.Empty:
                break
            connection.request(
                "POST", "/api/v1/lineage/batch", body=path.read_bytes(), headers=headers
            )
            response = connection.getresponse()
            answer = json.loads(response.read())
            if response.status != 200 or answer.get("status") != "success":
                failures.append(f"{path.name}: {response.status} {str(answer)[:300]}")
        connection.close()

    threads = [threading.Thread(target=worker) for _ in range(int(connections))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        print("\n".join(failures[:5]), file=sys.stderr)
        raise SystemExit(1)


def run_annex(
    lines: list[bytes],
    folder: Path,
    batch: int,
    clock: dt.datetime,
    connections: int,
    workers: int,
    collect_every: float,
) -> dict[str, float | int]:
    from annex.settings import LineageSettings, ServeSettings, Settings, WarehouseSettings
    from collectors.lineage.intake import LineageIntake
    from services.intake import IntakeServer
    from services.lineage import collect_lineage_evidence, lineage_routes, pending_lineage
    from warehouse import Warehouse

    bodies = folder / "bodies"
    bodies.mkdir()
    largest = 0
    for number, at in enumerate(range(0, len(lines), batch)):
        body = b"[" + b",".join(lines[at : at + batch]) + b"]"
        largest = max(largest, len(body))
        (bodies / f"{number:06d}.json.gz").write_bytes(gzip.compress(body, compresslevel=6))
    limit = max(5 << 20, largest + 1)  # the simulator's events: ~5.7 KB each
    settings = Settings(
        warehouse=WarehouseSettings(path=folder / "annex.duckdb"),
        lineage=LineageSettings(
            spool_dir=folder / "lineage", max_body_bytes=limit, intake_workers=workers
        ),
        serve=ServeSettings(host="127.0.0.1", port=0, max_body_bytes=limit),
    )
    wh = Warehouse(settings.warehouse)
    wh.migrate()

    def now() -> dt.datetime:
        return max(dt.datetime.now(dt.UTC), clock)

    intake = LineageIntake(settings.lineage)
    intake.wait_ready()  # the worker processes have started and imported the validator
    routes = lineage_routes(settings, intake=intake)
    # While the producers post, collections run as the lineage sensor starts them in
    # production (every ``collect_every`` s when files wait; the sensor's interval is 60 s, the
    # bench's is shorter to fit its run): each one a transaction of what had been spooled.
    posting = threading.Event()
    during: list[tuple[float, int, int]] = []
    failed: list[BaseException] = []

    def collect_while_posting() -> None:
        try:
            while not posting.wait(collect_every):
                if pending_lineage(settings):
                    began = time.perf_counter()
                    outcome = collect_lineage_evidence(
                        settings, wh=wh, refresh=False, publish=False, now=now()
                    )
                    during.append(
                        (time.perf_counter() - began, outcome.stats.events, outcome.stats.rejected)
                    )
        except BaseException as exc:  # reported after the producers finish
            failed.append(exc)

    collector = threading.Thread(target=collect_while_posting, name="bench-collections")
    with IntakeServer(settings, routes, token=TOKEN, clock=now) as server:
        started, cpu_started = time.perf_counter(), process_cpu()
        if collect_every > 0:
            collector.start()
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from bench.lineage import client; client(*sys.argv[1:])",
                server.url,
                str(bodies),
                TOKEN,
                str(connections),
            ],
            check=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        http_seconds = time.perf_counter() - started
        posting.set()
        if collect_every > 0:
            collector.join()
    intake.close()
    cpu_http = process_cpu() - cpu_started  # the validating processes and producers have ended
    if failed:
        raise failed[0]
    print(
        f"annex HTTP intake: {http_seconds:.1f} s ({len(lines) / http_seconds:,.0f} events/s); "
        f"{len(during)} collections meanwhile ({sum(n for _, n, _ in during):,} events, "
        f"{sum(s for s, _, _ in during):.1f} s)",
        file=sys.stderr,
    )
    collect_started = time.perf_counter()
    outcome = collect_lineage_evidence(settings, wh=wh, refresh=False, publish=False, now=now())
    load_seconds = time.perf_counter() - collect_started
    cpu_load = process_cpu() - cpu_started - cpu_http
    print(
        f"annex last collection: {load_seconds:.1f} s ({outcome.stats.events:,} events)",
        file=sys.stderr,
    )
    refresh_started = time.perf_counter()
    from services.lineage import refresh_lineage_models

    refresh_lineage_models(wh)
    wh.publish()
    refresh_seconds = time.perf_counter() - refresh_started
    total = time.perf_counter() - started
    # the validating processes are joined by now: their CPU counts, their start-up included
    cpu = process_cpu() - cpu_started
    cpu_refresh = cpu - cpu_http - cpu_load
    collected_during = sum(n for _, n, _ in during)
    closure = _closure_times(wh)
    spool = sum(p.stat().st_size for p in (folder / "lineage").rglob("*.arrow"))
    return {
        "http": http_seconds,
        "load": load_seconds,
        "refresh": refresh_seconds,
        "total": total,
        "cpu": cpu,
        "cpu_http": cpu_http,
        "cpu_load": cpu_load,
        "cpu_refresh": cpu_refresh,
        "events": outcome.stats.events + collected_during,
        "rejected": outcome.stats.rejected + sum(r for _, _, r in during),
        "collections_during": len(during),
        "collected_during": collected_during,
        "collecting_during": sum(s for s, _, _ in during),
        "requests": len(list(bodies.iterdir())),
        "wire_bytes": sum(p.stat().st_size for p in bodies.iterdir()),
        "spool_bytes": spool,
        "body_limit": limit,
        **closure,
    }


def _closure_times(wh) -> dict[str, float | int]:
    with wh.writer() as con:
        [(stored,)] = con.execute("SELECT count(*) FROM core.lineage_events").fetchall()
        row = con.execute(
            "SELECT model_version_id, model_name, upstream_versions FROM marts.lineage_models "
            "ORDER BY upstream_versions DESC, model_version_id LIMIT 1"
        ).fetchone()
        if row is None:
            return {"stored": stored, "closure_macro": float("nan"), "closure_mart": float("nan")}
        version_id, model, upstream = row
        macro, mart = [], []
        for _ in range(3):
            started = time.perf_counter()
            got = con.execute("SELECT count(*) FROM marts.lineage_upstream(?)", [version_id])
            macro_rows = got.fetchone()[0]
            macro.append(time.perf_counter() - started)
            started = time.perf_counter()
            got = con.execute(
                "SELECT count(*) FROM marts.lineage_model_inputs WHERE model_version_id = ?",
                [version_id],
            )
            mart_rows = got.fetchone()[0]
            mart.append(time.perf_counter() - started)
        [(versions,)] = con.execute("SELECT count(*) FROM core.lineage_dataset_versions").fetchall()
    return {
        "stored": stored,
        "model": f"{model} ({version_id[:8]})",
        "upstream": upstream,
        "macro_rows": macro_rows,
        "mart_rows": mart_rows,
        "closure_macro": statistics.median(macro),
        "closure_mart": statistics.median(mart),
        "versions": versions,
    }


# --- main ----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lineage", description=__doc__)
    parser.add_argument("--events", type=int, default=200_000, help="distinct events")
    parser.add_argument("--nodes", type=int, default=40, help="the simulated world's size")
    parser.add_argument("--batch", type=int, default=1000, help="events per POST")
    parser.add_argument(
        "--connections",
        type=int,
        default=4,
        help="concurrent POSTs (producers); more than the validating processes, so that one is "
        "never idle while a reply and its spool fsync are under way",
    )
    parser.add_argument(
        "--workers", type=int, default=2, help="lineage.intake_workers (validating processes)"
    )
    parser.add_argument(
        "--collect-every",
        type=float,
        default=0.0,
        help="seconds between collections while the producers post, as the lineage sensor "
        "starts them (0, the default: one collection after the last request; on 2 cores the "
        "validating processes already use both, so overlapping collections only add their "
        "fixed costs)",
    )
    parser.add_argument(
        "--anchor-runs",
        type=int,
        default=4,
        help="read_json loads timed, half before annex's run and half after (the median is "
        "the anchor: one load's time varies with the disk, and the machine's speed drifts)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-record", action="store_true", help="don't append to RESULTS.md")
    args = parser.parse_args(argv)
    if args.anchor_runs < 1:
        parser.error("--anchor-runs must be at least 1")

    import duckdb
    import orjson

    print(f"building {args.events:,} events from a {args.nodes}-node world…", file=sys.stderr)
    started = time.perf_counter()
    lines, newest = make_events(args.events, args.nodes, args.seed)
    build_seconds = time.perf_counter() - started
    assert len({hashlib.sha256(line).digest() for line in lines}) == len(lines)
    with tempfile.TemporaryDirectory(prefix="annex-lineage-bench-") as tmp:
        folder = Path(tmp)
        path = folder / "events.jsonl"
        with path.open("wb") as out:
            for line in lines:
                out.write(line + b"\n")
        size = path.stat().st_size
        print(f"  {size / 2**20:,.0f} MiB of JSON lines in {build_seconds:.0f} s", file=sys.stderr)

        load_before = os.getloadavg()[0]
        steal_before, cpu_before = cpu_times()
        before = (args.anchor_runs + 1) // 2
        anchors = run_anchors(path, folder, before, len(lines))
        clock = newest + dt.timedelta(minutes=5)
        annex = run_annex(
            lines, folder, args.batch, clock, args.connections, args.workers, args.collect_every
        )
        anchors += run_anchors(path, folder, args.anchor_runs - before, len(lines))
        anchor_seconds = statistics.median(a[0] for a in anchors)
        anchor_cpu = statistics.median(a[1] for a in anchors)
        steal_after, cpu_after = cpu_times()
        print(f"annex: {annex}", file=sys.stderr)
        if annex["events"] != len(lines) or annex["rejected"] or annex["stored"] != len(lines):
            raise SystemExit(f"annex loaded {annex['stored']} of {len(lines)} events: {annex}")
    stolen = (steal_after - steal_before) / max(1, cpu_after - cpu_before)

    count = len(lines)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    ratio = float(annex["total"]) / anchor_seconds
    last = count - int(annex["collected_during"])  # events of the collection after the intake
    meanwhile = " (with the collections meanwhile)" if args.collect_every > 0 else ""
    lines_out = [
        f"## lineage: {count:,} OpenLineage events, {args.batch:,} per request "
        f"({dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Machine: {machine()}; DuckDB {duckdb.__version__}, orjson {orjson.__version__}; CPU "
        f"stolen by the hypervisor during the run: {stolen:.0%}; load average "
        f"{load_before:.1f} when it started (other processes share the cores). Events: a "
        f"{args.nodes}-node world's lineage repeated with new run ids, versions and times; "
        f"{size / 2**20:,.0f} MiB of JSON lines ({size / count:,.0f} bytes per event); "
        f"{annex['requests']:,} gzip requests of {annex['wire_bytes'] / 2**20:,.0f} MiB in "
        f"all (body limit raised to {annex['body_limit'] / 2**20:.1f} MiB: 1,000 of these "
        f"events exceed the 5 MiB default); building them took {build_seconds:.0f} s (not "
        "timed).",
        "",
        "| step | s | events/s | ÷ anchor | CPU s |",
        "|---|---:|---:|---:|---:|",
        f"| DuckDB read_json into a table (anchor; median of {len(anchors)}, {before} before "
        f"annex and {len(anchors) - before} after: "
        f"{', '.join(f'{a[0]:.1f}' for a in anchors)} s) | {anchor_seconds:.1f} | "
        f"{count / anchor_seconds:,.0f} | 1.00 | {anchor_cpu:.1f} |",
        f"| annex HTTP intake ({args.connections} producers, {args.workers} validating processes): "
        "gunzip, validate, hash, "
        f"spool (Arrow IPC, fsync; {annex['spool_bytes'] / 2**20:,.0f} MiB) | "
        f"{annex['http']:.1f} | "
        f"{count / float(annex['http']):,.0f} | {float(annex['http']) / anchor_seconds:.2f} | "
        f"{annex['cpu_http']:.1f}{meanwhile} |",
        *(
            [
                f"| annex collections while the producers post ({annex['collections_during']}, "
                f"every {args.collect_every:g} s; {annex['collected_during']:,} events; "
                f"overlapping the intake) | {annex['collecting_during']:.1f} | | | |"
            ]
            if args.collect_every > 0
            else []
        ),
        f"| annex {'last ' if args.collect_every > 0 else ''}collection: spool → "
        f"core.lineage_* (one transaction, "
        f"{last:,} events) | {annex['load']:.1f} | {last / float(annex['load']):,.0f} | "
        f"{float(annex['load']) / anchor_seconds:.2f} | {annex['cpu_load']:.1f} |",
        f"| annex refresh_lineage + publish | {annex['refresh']:.1f} | | | "
        f"{annex['cpu_refresh']:.1f} |",
        f"| **annex total** (first request → published warehouse) | **{annex['total']:.1f}** | "
        f"**{count / float(annex['total']):,.0f}** | **{ratio:.2f}** | {annex['cpu']:.1f} |",
        "",
        f"CPU: annex's processes (server, collections, validating processes, producers) used "
        f"{annex['cpu']:.1f} s, {annex['cpu'] / anchor_cpu:.2f}x the anchor's {anchor_cpu:.1f} s "
        "(CPU time is not inflated by the hypervisor's steal; a busy neighbour on the host "
        f"still slows it). On {cores} cores that CPU takes at least "
        f"{annex['cpu'] / cores:.1f} s of wall time, {annex['cpu'] / cores / anchor_seconds:.2f}x "
        "the anchor's, however well the steps overlap.",
        "",
        f"Closure of the largest model, {annex.get('model')} with {annex.get('upstream')} "
        f"upstream versions (of {annex.get('versions'):,} dataset versions): "
        f"`marts.lineage_upstream` macro {float(annex['closure_macro']) * 1000:.1f} ms "
        f"({annex.get('macro_rows')} rows), `marts.lineage_model_inputs` "
        f"{float(annex['closure_mart']) * 1000:.1f} ms ({annex.get('mart_rows')} rows); "
        "median of 3.",
        "",
        f"annex's validated, normalised ingest takes {ratio:.2f}x the time of DuckDB's raw "
        f"read_json of the same events (bar: 5x); {annex['stored']:,} events stored, none "
        "rejected.",
        "",
    ]
    text = "\n".join(lines_out)
    print(text)
    if not args.no_record:
        append_results(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

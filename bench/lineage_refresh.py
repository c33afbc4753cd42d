"""The lineage refresh after each collection: incremental, next to the full rebuild of the same
warehouse.

    python -m bench.lineage_refresh [--events 200000] [--delta 1000] [--steps 3] [--no-record]

A warehouse is loaded with ``--events`` events (``bench.lineage.make_events``: a simulated
world's lineage repeated as new campaigns, read from JSON lines by ``annex collect lineage
--file``) and refreshed whole once. Then, ``--steps`` times, the next ``--delta`` events (the
following campaigns' runs, datasets and checkpoints) are collected, and the lineage models are
refreshed twice on the same state:

  annex    ``refresh_lineage`` as every collection runs it: only the closures of the
           checkpoints the new collection can change are recomputed;
  anchor   ``refresh_lineage(full=True)``: every closure rebuilt, what each refresh did before
           (run second: the incremental refresh must see the collection as new). It must leave
           the marts exactly as the incremental refresh did, or the bench fails.

The ratio is the anchor's time over annex's (higher is better). Both grow with the history:
the anchor's with every closure; annex's more slowly, with the scans of ``core.lineage_run_io``
that each step of its recursions makes, and the cycle search over every edge when a new run is
on a cycle (the cycle search column). Results go to stdout and are appended to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.collect_scale import append_results, machine
from bench.lineage import make_events

# Every column of every lineage mart, summed as hashes: equal when the marts are equal (as
# multisets), which the property tests check row by row on small graphs.
_FINGERPRINT = """
SELECT
    (SELECT count(*) FROM marts.lineage_model_inputs),
    (SELECT sum(hash(*COLUMNS(*))) FROM marts.lineage_model_inputs),
    (SELECT sum(hash(*COLUMNS(* EXCLUDE (refreshed_at)))) FROM marts.lineage_models),
    (SELECT count(*) FROM marts.lineage_cycles)
"""


def _collect(settings, wh, lines: list[bytes], path: Path, now: dt.datetime) -> float:
    from services.lineage import collect_lineage_evidence

    path.write_bytes(b"\n".join(lines) + b"\n")
    started = time.perf_counter()
    outcome = collect_lineage_evidence(
        settings, wh=wh, files=[path], refresh=False, publish=False, now=now
    )
    if outcome.stats.events != len(lines) or outcome.stats.rejected:
        raise SystemExit(f"collected {outcome.stats.events} of {len(lines)} events: {outcome}")
    return time.perf_counter() - started


def _refresh(wh, *, full: bool) -> tuple[float, dict[str, int], tuple]:
    from warehouse.models.lineage import refresh_lineage

    with wh.writer() as con:
        started = time.perf_counter()
        counts = refresh_lineage(con, full=full)
        seconds = time.perf_counter() - started
        fingerprint = con.execute(_FINGERPRINT).fetchone()
    return seconds, counts, tuple(fingerprint or ())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lineage_refresh", description=__doc__)
    parser.add_argument("--events", type=int, default=200_000, help="events loaded first")
    parser.add_argument("--delta", type=int, default=1000, help="events per later collection")
    parser.add_argument("--steps", type=int, default=3, help="later collections")
    parser.add_argument("--nodes", type=int, default=40, help="the simulated world's size")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-record", action="store_true", help="don't append to RESULTS.md")
    args = parser.parse_args(argv)
    if min(args.events, args.delta, args.steps) < 1:
        parser.error("--events, --delta and --steps must be at least 1")

    import duckdb

    from annex.settings import LineageSettings, Settings, WarehouseSettings
    from warehouse import Warehouse

    total = args.events + args.steps * args.delta
    print(f"building {total:,} events from a {args.nodes}-node world…", file=sys.stderr)
    lines, newest = make_events(total, args.nodes, args.seed)
    now = newest + dt.timedelta(minutes=5)
    rows: list[tuple[int, float, float, dict[str, int]]] = []
    with tempfile.TemporaryDirectory(prefix="annex-lineage-refresh-bench-") as tmp:
        folder = Path(tmp)
        settings = Settings(
            warehouse=WarehouseSettings(path=folder / "annex.duckdb"),
            lineage=LineageSettings(spool_dir=folder / "lineage"),
        )
        wh = Warehouse(settings.warehouse)
        wh.migrate()
        seconds = _collect(settings, wh, lines[: args.events], folder / "base.jsonl", now)
        print(f"collected {args.events:,} events in {seconds:.1f} s", file=sys.stderr)
        first, counts, _ = _refresh(wh, full=False)
        print(f"first refresh (full): {first:.1f} s {counts}", file=sys.stderr)
        for step in range(args.steps):
            at = args.events + step * args.delta
            path = folder / f"delta{step}.jsonl"
            _collect(settings, wh, lines[at : at + args.delta], path, now)
            incremental, counts, seen = _refresh(wh, full=False)
            full, _, rebuilt = _refresh(wh, full=True)
            if counts["full"] or seen != rebuilt:
                raise SystemExit(f"step {step}: the incremental refresh left other marts: {seen}")
            recomputed = f"{counts['models_recomputed']:,} of {counts['models']:,} models"
            print(
                f"step {step + 1}: incremental {incremental:.2f} s ({recomputed}), "
                f"full {full:.2f} s",
                file=sys.stderr,
            )
            rows.append((at + args.delta, incremental, full, counts))

    ratio = statistics.median(full / incremental for _, incremental, full, _ in rows)
    out = [
        f"## lineage refresh: {args.delta:,} events after {args.events:,}, {args.steps} times "
        f"({dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Machine: {machine()}; DuckDB {duckdb.__version__}. Events: a {args.nodes}-node world's "
        "lineage repeated as new campaigns (`bench.lineage.make_events`), collected from JSON "
        f"lines; the first refresh of the {args.events:,} events (full) took {first:.1f} s.",
        "",
        "| events in the warehouse | models | models recomputed | closure rows | cycle search "
        "| annex incremental refresh s | full rebuild s (anchor) | anchor ÷ annex |",
        "|---:|---:|---:|---:|---|---:|---:|---:|",
        *(
            f"| {events:,} | {counts['models']:,} | {counts['models_recomputed']:,} | "
            f"{counts['model_inputs']:,} | {'yes' if counts['cycles_searched'] else 'skipped'} | "
            f"{incremental:.2f} | {full:.2f} | {full / incremental:.1f} |"
            for events, incremental, full, counts in rows
        ),
        "",
        f"The incremental refresh takes 1/{ratio:.1f} of the full rebuild's time (median), and "
        "leaves the same marts (checked at every step).",
        "",
    ]
    text = "\n".join(out)
    print(text)
    if not args.no_record:
        append_results(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

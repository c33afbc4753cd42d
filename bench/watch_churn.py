"""Watch mode under churn: annex's lag, CPU and memory, and what hourly snapshots miss.

    python -m bench.watch_churn --nodes 7500 --minutes 10

One simulated cluster (``--nodes``, about 10 pods per node) runs in its own process with a
sweep of short jobs (``simulator.kubernetes.churn.ShortJobs`` on the real clock: each job one
pod of 1 or 2 GPUs living 5 to 55 s, deleted right after it finishes; five pod changes per
job: created, bound, running, succeeded, deleted). It is paced to each rate in ``--rates``
(pod changes per second; default the upstream steady state, 20/s, and 10x that) for
``--minutes``, then stops starting jobs and lets the running ones finish. For each rate:

1. ``annex watch`` starts, in a separate process as in production (``python -m annex watch``,
   its defaults), into a fresh warehouse, and makes its initial lists;
2. ``annex collect cluster`` takes a snapshot into a second warehouse (the hourly snapshot
   at the start of the period);
3. the churn runs; the simulator records when it made each change (wall clock, per
   resourceVersion) and keeps the ground truth of every short pod's GPU-seconds;
4. once the watch's cursors reach the simulator's last change, a second snapshot (the hourly
   snapshot at the end); the watch is stopped with SIGTERM.

"churn" figures run from the churn's start until the watch has caught up with the last
change after the running jobs finished (so they include those last minutes of finishing).

Reported: the lag from each change (when the simulator made it) to the commit of the
allocation row it opened or closed (``opened_at``/``closed_at``, stamped by annex as the
row's transaction begins; the transaction itself takes milliseconds); the watch process's CPU
seconds during the churn (psutil, from churn start until caught up) and in all, its peak RSS
(wait4) and its peak RSS during the churn (sampled each second); the list and watch requests
it made with their latencies (``audit.kubernetes_requests``) next to the snapshots' lists
(``audit.kubernetes_lists``); and the short pods and GPU-seconds each history misses against
the simulator's ledger. The achieved change rate is measured, never assumed: if the simulator
cannot keep up on this machine the table says so.

The table goes to stdout and is appended to bench/RESULTS.md with the date and the machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.collect_scale import append_results, cpu_times, machine

POD_CHANGES_PER_JOB = 5
"""A short job's pod changes: created (Pending), bound, Running, Succeeded, deleted."""
POD_CHANGES_AT_START = 3
"""Of which made when the job starts (created, bound, Running)."""

TICK_SECONDS = 0.05
"""How often the simulator's pacing loop starts the jobs that are due and finishes others."""

COMPACT_EVERY_SECONDS = 60.0
COMPACT_AGE_SECONDS = 300.0
"""Like etcd under an API server: every minute, history older than five minutes is dropped."""

CATCH_UP_TIMEOUT_SECONDS = 900.0
POLL_SECONDS = 2.0


# ---- the simulator's side (its own process: `python -m bench.watch_churn --serve`) ---------


class RecordingCluster:
    """The simulated cluster as ``ShortJobs`` sees it, noting when each write was made.

    ``changes`` maps each resourceVersion to (wall-clock time right after the write, resource):
    the event time the lag is measured from. Everything else goes to the real cluster.
    """

    def __init__(self, cluster: Any) -> None:
        self._cluster = cluster
        self.changes: dict[int, tuple[float, str]] = {}
        self.counts: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cluster, name)

    def put(self, resource: str, obj: dict) -> dict:
        stored = self._cluster.put(resource, obj)
        self._note(resource, stored)
        return stored

    def delete(self, resource: str, name: str, namespace: str | None = None) -> dict | None:
        last = self._cluster.delete(resource, name, namespace)
        if last is not None:
            self._note(resource, last)
        return last

    def _note(self, resource: str, obj: dict) -> None:
        self.changes[int(obj["metadata"]["resourceVersion"])] = (time.time(), resource)
        self.counts[resource] = self.counts.get(resource, 0) + 1


def drive(cluster: Any, *, pod_changes_per_second: float, seconds: float, seed: int) -> dict:
    """Run a paced sweep on ``cluster`` for ``seconds``, then let its jobs finish.

    The pacing is by deadline, not by sleeping a fixed interval: each tick starts as many jobs
    as the pod changes due by now (less those made, finishes included) need, so a slow tick is
    caught up by the next one, and the rate counted from the writes themselves shows whether
    the simulator kept up.
    """
    from simulator.kubernetes.churn import ShortJobs

    recorder = RecordingCluster(cluster)
    jobs = ShortJobs(recorder, jobs_per_tick=0, time_scale=1.0, seed=seed)
    started = time.monotonic()
    marks: list[tuple[float, int]] = [(started, cluster.resource_version)]
    compacted_at = started
    no_room = 0
    late_ticks = 0
    pod_changes = 0
    while (now := time.monotonic()) - started < seconds:
        # Pod changes due by now, less those made (a start makes 3 at once, a finish 2 later).
        due = pod_changes_per_second * (now - started) - pod_changes
        jobs.jobs_per_tick = max(0, -(-int(due) // POD_CHANGES_AT_START))
        before = jobs.started
        jobs.step()
        if jobs.started - before < jobs.jobs_per_tick:
            no_room += 1
        if now - compacted_at >= COMPACT_EVERY_SECONDS:
            _compact(cluster, marks, now)
            compacted_at = now
        marks.append((now, cluster.resource_version))
        pod_changes = recorder.counts.get("pods", 0)
        pause = TICK_SECONDS - (time.monotonic() - now)
        if pause > 0:
            time.sleep(pause)
        else:
            late_ticks += 1
    churn_seconds = time.monotonic() - started
    churn_end_rv = cluster.resource_version
    jobs.jobs_per_tick = 0
    while jobs.running:  # no new jobs; the running ones finish on their own (real) clock
        jobs.step()
        time.sleep(TICK_SECONDS)
    drained_seconds = time.monotonic() - started
    pod_writes = [rv for rv, (_, r) in recorder.changes.items() if r == "pods"]
    in_churn = sum(1 for rv in pod_writes if rv <= churn_end_rv)
    last = {
        resource: max((rv for rv, (_, r) in recorder.changes.items() if r == resource), default=0)
        for resource in ("pods", "jobs")
    }
    return {
        "target_pod_changes_per_second": pod_changes_per_second,
        "churn_seconds": churn_seconds,
        "drained_seconds": drained_seconds,
        "pod_changes_in_churn": in_churn,
        "pod_changes": len(pod_writes),
        "jobs_started": jobs.started,
        "no_room_ticks": no_room,
        "late_ticks": late_ticks,
        "last_rv": last,
        "changes": {str(rv): t for rv, (t, _) in recorder.changes.items()},
        "ledger": {
            uid: [record.gpus, record.gpu_seconds, record.pod_name]
            for uid, record in jobs.ledger.items()
        },
    }


def _compact(cluster: Any, marks: list[tuple[float, int]], now: float) -> None:
    old = [rv for at, rv in marks if now - at >= COMPACT_AGE_SECONDS]
    if old:
        cluster.store.compact(old[-1])
        del marks[: len(old) - 1]


def serve(nodes: int, seed: int, workdir: Path) -> int:
    """The simulator process: serve the cluster; run each churn asked for on stdin.

    Protocol (JSON lines): it prints {"kubeconfig": ...} when serving; each request
    {"rate": r, "seconds": s, "out": path} runs a churn, writes its result to ``out`` and
    prints {"done": out}; end of input stops it.
    """
    from simulator.kubernetes import SimulatedCluster
    from simulator.world import build_world

    started = time.perf_counter()
    cluster = SimulatedCluster(build_world(nodes, seed=seed), tls=True).start()
    kubeconfig = cluster.write_kubeconfig(workdir / "kubeconfig")
    built = time.perf_counter() - started
    print(json.dumps({"kubeconfig": str(kubeconfig), "seconds": built}), flush=True)
    try:
        for index, line in enumerate(sys.stdin):
            request = json.loads(line)
            result = drive(
                cluster,
                pod_changes_per_second=request["rate"],
                seconds=request["seconds"],
                seed=seed * 1000 + index,
            )
            Path(request["out"]).write_text(json.dumps(result))
            print(json.dumps({"done": request["out"]}), flush=True)
    finally:
        cluster.stop()
    return 0


# ---- figures (pure) ---------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in [0, 1]); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 1))))
    return ordered[rank - 1]


def commit_lags(
    rows: list[tuple[str | None, float | None]], changes: dict[int, float]
) -> tuple[list[float], int]:
    """Seconds from each change to the commit of the row it opened or closed.

    ``rows``: (resourceVersion, commit time as epoch seconds) of each opening and closing;
    ``changes``: when the simulator made each resourceVersion. Returns the lags and how many
    rows named a resourceVersion the simulator did not make during the churn (the initial
    list's, say), which are left out.
    """
    lags: list[float] = []
    unknown = 0
    for rv, committed in rows:
        if rv is None or committed is None:
            continue
        made = changes.get(int(rv)) if rv.isdigit() else None
        if made is None:
            unknown += 1
            continue
        lags.append(committed - made)
    return lags, unknown


@dataclass(frozen=True)
class Misses:
    pods: int
    gpu_seconds: int
    wrong_gpu_seconds: int = 0
    """Pods found with GPU-seconds different from the ground truth."""


def misses(ledger: dict[str, tuple[int, int]], recorded: dict[str, int | None]) -> Misses:
    """What a history misses against the ground truth.

    ``ledger``: pod uid -> (gpus, true GPU-seconds); ``recorded``: pod uid -> the GPU-seconds
    the history has for it (None while it believes the pod still holds its GPUs). A pod it
    lacks counts whole; a pod it has with other GPU-seconds counts the difference.
    """
    pods = seconds = wrong = 0
    for uid, (_, truth) in ledger.items():
        if uid not in recorded:
            pods += 1
            seconds += truth
            continue
        got = recorded[uid]
        if got != truth:
            wrong += 1
            seconds += abs(truth - (got or 0))
    return Misses(pods, seconds, wrong)


# ---- the driver's side ------------------------------------------------------------------------


@dataclass
class Requests:
    verb: str
    count: int
    p50: float | None
    p99: float | None
    max: float | None


@dataclass
class Phase:
    rate: float
    minutes: float
    achieved_rate: float = 0.0
    pod_changes: int = 0
    jobs: int = 0
    late_ticks: int = 0
    no_room_ticks: int = 0
    short_pods: int = 0
    true_gpu_seconds: int = 0
    lags: list[float] = field(default_factory=list)
    unknown_rvs: int = 0
    churn_cpu_seconds: float = 0.0
    total_cpu_seconds: float = 0.0
    catch_up_seconds: float = 0.0
    peak_rss_churn: int = 0
    peak_rss: int = 0
    relists: int = 0
    requests: list[Requests] = field(default_factory=list)
    snapshot_lists: Requests | None = None
    watch_misses: Misses = Misses(0, 0)
    snapshot_misses: Misses = Misses(0, 0)
    snapshot_seconds: list[float] = field(default_factory=list)
    load_before: float = 0.0
    load_after: float = 0.0
    steal_share: float = 0.0
    watch_exit: int = 0
    watch_error: str = ""
    window_seconds: float = 0.0
    listed_via: str = ""

    @property
    def churn_cpu_share(self) -> float:
        """The watch's CPU seconds per wall second during the churn (1.0: one whole core)."""
        return self.churn_cpu_seconds / self.window_seconds if self.window_seconds else 0.0


def _annex_env(warehouse: Path, workdir: Path) -> dict[str, str]:
    config = workdir / "none.toml"
    config.touch()
    return {**os.environ, "ANNEX_WAREHOUSE": str(warehouse), "ANNEX_CONFIG": str(config)}


def _snapshot(kubeconfig: Path, warehouse: Path, workdir: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "annex",
            "collect",
            "cluster",
            "--kubeconfig",
            str(kubeconfig),
            "--cluster",
            "bench",
            "--quiet",
        ],
        env=_annex_env(warehouse, workdir),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def _cursors(warehouse: Path) -> dict[str, int]:
    from annex.settings import WarehouseSettings
    from warehouse import Warehouse

    if not warehouse.exists():
        return {}
    with Warehouse(WarehouseSettings(path=warehouse)).writer(on_wait=_quiet) as con:
        rows = con.execute(
            "SELECT resource, resource_version FROM core.watch_cursors WHERE cluster = 'bench'"
        ).fetchall()
    return {resource: int(rv) for resource, rv in rows if rv.isdigit()}


def _quiet(message: str) -> None:
    """Waiting for the watch's commit to finish is expected here: say nothing."""


def _wait_for(warehouse: Path, wanted: dict[str, int], watch: subprocess.Popen) -> None:
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_SECONDS
    while True:
        if watch.poll() is not None:
            raise SystemExit(f"annex watch exited ({watch.returncode}); see its log")
        cursors = _cursors(warehouse)
        if all(cursors.get(name, -1) >= rv for name, rv in wanted.items()):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"annex watch did not reach {wanted} (at {cursors})")
        time.sleep(POLL_SECONDS)


class RssSampler:
    """The watch process's RSS each second (its peak during the churn)."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.process = psutil.Process(pid)
        self.peak = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            try:
                self.peak = max(self.peak, self.process.memory_info().rss)
            except Exception:  # the process ended
                return
            if self.stopping.wait(1.0):
                return


def run_phase(
    simulator: subprocess.Popen, kubeconfig: Path, workdir: Path, rate: float, minutes: float
) -> Phase:
    import psutil

    phase = Phase(rate, minutes)
    tag = f"{rate:g}"
    watched = workdir / f"watch-{tag}.duckdb"
    snapshots = workdir / f"snapshot-{tag}.duckdb"
    log = (workdir / f"watch-{tag}.log").open("w")
    print(f"[{rate:g}/s] annex watch: initial lists…", file=sys.stderr)
    watch = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "annex",
            "watch",
            "--kubeconfig",
            str(kubeconfig),
            "--cluster",
            "bench",
        ],
        env=_annex_env(watched, workdir),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        process = psutil.Process(watch.pid)
        _wait_for(watched, {name: 0 for name in ("pods", "nodes", "jobs", "events")}, watch)
        print(f"[{rate:g}/s] snapshot at the start…", file=sys.stderr)
        phase.snapshot_seconds.append(_snapshot(kubeconfig, snapshots, workdir))
        phase.load_before = os.getloadavg()[0]
        steal_before, total_before = cpu_times()
        cpu_before = sum(process.cpu_times()[:2])
        print(f"[{rate:g}/s] churn for {minutes:g} min…", file=sys.stderr)
        out = workdir / f"churn-{tag}.json"
        with RssSampler(watch.pid) as rss:
            assert simulator.stdin is not None and simulator.stdout is not None
            request = {"rate": rate, "seconds": minutes * 60, "out": str(out)}
            simulator.stdin.write(json.dumps(request) + "\n")
            simulator.stdin.flush()
            reply = simulator.stdout.readline()
            if not reply:
                raise SystemExit("the simulator exited during the churn; see simulator.log")
            churn = json.loads(out.read_text())
            drained = time.monotonic()
            _wait_for(watched, {k: v for k, v in churn["last_rv"].items() if v}, watch)
            phase.catch_up_seconds = time.monotonic() - drained
            phase.churn_cpu_seconds = sum(process.cpu_times()[:2]) - cpu_before
            phase.total_cpu_seconds = sum(process.cpu_times()[:2])
        phase.peak_rss_churn = rss.peak
        steal_after, total_after = cpu_times()
        phase.steal_share = (steal_after - steal_before) / max(1, total_after - total_before)
        phase.load_after = os.getloadavg()[0]
        print(f"[{rate:g}/s] snapshot at the end…", file=sys.stderr)
        phase.snapshot_seconds.append(_snapshot(kubeconfig, snapshots, workdir))
    finally:
        watch.send_signal(signal.SIGTERM)
        _, status, usage = os.wait4(watch.pid, 0)
        watch.returncode = os.waitstatus_to_exitcode(status)
        log.close()
    phase.watch_exit = watch.returncode
    if watch.returncode != 0:
        tail = (workdir / f"watch-{tag}.log").read_text(errors="replace").strip().splitlines()
        said = [line for line in tail if line.startswith("annex:")] or tail[-1:]
        phase.watch_error = said[-1][:300] if said else "no output"
        print(f"annex watch exited {watch.returncode}: {phase.watch_error}", file=sys.stderr)
    phase.peak_rss = usage.ru_maxrss * 1024
    _figures(phase, churn, watched, snapshots)
    return phase


def _figures(phase: Phase, churn: dict, watched: Path, snapshots: Path) -> None:
    from annex.settings import WarehouseSettings
    from warehouse import Warehouse

    phase.achieved_rate = churn["pod_changes_in_churn"] / churn["churn_seconds"]
    phase.window_seconds = churn["drained_seconds"] + phase.catch_up_seconds
    phase.pod_changes = churn["pod_changes"]
    phase.jobs = churn["jobs_started"]
    phase.late_ticks = churn["late_ticks"]
    phase.no_room_ticks = churn["no_room_ticks"]
    ledger = {uid: (gpus, seconds) for uid, (gpus, seconds, _) in churn["ledger"].items()}
    phase.short_pods = len(ledger)
    phase.true_gpu_seconds = sum(seconds for _, seconds in ledger.values())
    changes = {int(rv): at for rv, at in churn["changes"].items()}
    with Warehouse(WarehouseSettings(path=watched)).writer() as con:
        rows = con.execute(
            "SELECT opened_resource_version, epoch_us(opened_at) / 1e6 "
            "FROM core.watched_gpu_allocations WHERE cluster = 'bench' "
            "UNION ALL SELECT closed_resource_version, epoch_us(closed_at) / 1e6 "
            "FROM core.watched_gpu_allocations WHERE cluster = 'bench'"
        ).fetchall()
        phase.lags, phase.unknown_rvs = commit_lags(rows, changes)
        recorded = dict(
            con.execute(
                "SELECT pod_uid, gpu_seconds FROM marts.watched_gpu_allocations "
                "WHERE cluster = 'bench'"
            ).fetchall()
        )
        phase.watch_misses = misses(ledger, recorded)
        phase.relists, phase.listed_via = con.execute(
            "SELECT coalesce(sum(relists), 0), string_agg(DISTINCT listed_via, ', ') "
            "FROM core.watch_cursors WHERE cluster = 'bench'"
        ).fetchone()
        for verb in ("list", "watch"):
            latencies = [
                row[0]
                for row in con.execute(
                    "SELECT latency_seconds FROM audit.kubernetes_requests "
                    "WHERE cluster = 'bench' AND verb = ?",
                    [verb],
                ).fetchall()
            ]
            phase.requests.append(
                Requests(
                    verb,
                    len(latencies),
                    percentile(latencies, 0.5),
                    percentile(latencies, 0.99),
                    max(latencies, default=None),
                )
            )
    with Warehouse(WarehouseSettings(path=snapshots)).writer() as con:
        seen = {
            row[0]: None
            for row in con.execute(
                "SELECT pod_uid FROM core.gpu_allocations WHERE cluster = 'bench'"
            ).fetchall()
        }
        lists = con.execute(
            "SELECT sum(requests), max(latency_p99_seconds), max(latency_max_seconds) "
            "FROM audit.kubernetes_lists"
        ).fetchone()
    # A snapshot that saw a short pod would know only that it was there, not for how long.
    phase.snapshot_misses = misses(ledger, seen)
    phase.snapshot_lists = Requests(
        "snapshots' list pages (2 collections)", int(lists[0] or 0), None, lists[1], lists[2]
    )


# ---- report -------------------------------------------------------------------------------------


def _s(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def render(phases: list[Phase], nodes: int, simulator_seconds: float) -> str:
    when = dt.datetime.now(dt.UTC)
    minutes = phases[0].minutes if phases else 0
    lines = [
        f"## watch_churn: {nodes} nodes, {', '.join(f'{p.rate:g}' for p in phases)} pod "
        f"changes/s for {minutes:g} min each ({when:%Y-%m-%d %H:%M} UTC)",
        "",
        f"Machine: {machine()}. The simulator (built in {simulator_seconds:.0f} s), "
        "`annex watch` (its defaults: batches of up to 500 events or 2 s) and the snapshots "
        "(`annex collect cluster`) each run in their own process on this machine, so they "
        "share its cores (load average below: other processes compete too).",
        "",
        "| target pod changes/s | achieved/s | short pods | lag p50 s | lag p99 s | lag max s "
        "| watch CPU s (churn / all) | CPU share of a core in churn "
        "| watch peak RSS MiB (churn / all) | caught up s "
        "| relists | load avg | CPU stolen |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in phases:
        lines.append(
            f"| {p.rate:g} | {p.achieved_rate:.1f} | {p.short_pods:,} | "
            f"{_s(percentile(p.lags, 0.5))} | {_s(percentile(p.lags, 0.99))} | "
            f"{_s(max(p.lags, default=None))} | {p.churn_cpu_seconds:.1f} / "
            f"{p.total_cpu_seconds:.1f} | {p.churn_cpu_share:.0%} "
            f"| {p.peak_rss_churn / 2**20:.0f} / "
            f"{p.peak_rss / 2**20:.0f} | {p.catch_up_seconds:.1f} | {p.relists} | "
            f"{p.load_before:.1f} → {p.load_after:.1f} | {100 * p.steal_share:.0f}% |"
        )
    lines += [
        "",
        "| target pod changes/s | requests | count | p50 s | p99 s | max s |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for p in phases:
        for r in [*p.requests, *([p.snapshot_lists] if p.snapshot_lists else [])]:
            lines.append(
                f"| {p.rate:g} | {r.verb} | {r.count:,} | {_s(r.p50, 3)} | {_s(r.p99, 3)} "
                f"| {_s(r.max, 3)} |"
            )
    lines += [
        "",
        "| target pod changes/s | true GPU-s of short pods | watch misses: pods / GPU-s "
        "| hourly snapshots miss: pods / GPU-s |",
        "|---:|---:|---:|---:|",
    ]
    for p in phases:
        w, s = p.watch_misses, p.snapshot_misses
        wrong = f" ({w.wrong_gpu_seconds} with other GPU-s)" if w.wrong_gpu_seconds else ""
        lines.append(
            f"| {p.rate:g} | {p.true_gpu_seconds:,} | {w.pods:,} / {w.gpu_seconds:,}{wrong} "
            f"| {s.pods:,} / {s.gpu_seconds:,} |"
        )
    notes = []
    for p in phases:
        kept_up = p.achieved_rate >= 0.95 * p.rate
        notes.append(
            f"At {p.rate:g}/s the simulator made {p.achieved_rate:.1f} pod changes/s "
            + (
                "(kept up)"
                if kept_up
                else "(it could NOT make the target rate"
                + (": no free GPUs for more jobs" if p.no_room_ticks else " on this machine")
                + "; annex was measured at the achieved rate)"
            )
            + f" over {p.jobs:,} jobs; {p.late_ticks} of its pacing ticks overran"
            + (f", {p.no_room_ticks} found no free GPUs" if p.no_room_ticks else "")
            + f"; the watch's initial state came by {p.listed_via or '?'}"
            + f"; snapshots took {', '.join(f'{s:.1f}' for s in p.snapshot_seconds)} s; "
            f"lag from {len(p.lags):,} allocation openings and closings"
            + (
                f" ({p.unknown_rvs:,} rows of the initial list, not churn changes, left out)"
                if p.unknown_rvs
                else ""
            )
            + (
                f"; annex watch exited {p.watch_exit} on SIGTERM: `{p.watch_error}`"
                if p.watch_exit
                else ""
            )
            + "."
        )
    lines += ["", *notes]
    return "\n".join(lines) + "\n"


# ---- main -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=7500)
    parser.add_argument("--minutes", type=float, default=10.0, help="churn per rate (default 10)")
    parser.add_argument(
        "--rates",
        default="20,200",
        help="pod changes per second, comma-separated (default 20,200: upstream's steady "
        "state and 10x)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-record", action="store_true", help="don't append to RESULTS.md")
    parser.add_argument("--serve", type=Path, metavar="WORKDIR", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        return serve(args.nodes, args.seed, args.serve)
    rates = [float(rate) for rate in args.rates.split(",") if rate.strip()]

    with tempfile.TemporaryDirectory(prefix="annex-bench-watch-") as tmp:
        workdir = Path(tmp)
        print(f"starting a simulated cluster of {args.nodes} nodes…", file=sys.stderr)
        simulator = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.watch_churn",
                "--nodes",
                str(args.nodes),
                "--seed",
                str(args.seed),
                "--serve",
                str(workdir),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=(workdir / "simulator.log").open("w"),
            text=True,
        )
        try:
            assert simulator.stdout is not None
            ready = simulator.stdout.readline()
            if not ready:
                raise SystemExit(f"simulator exited: {(workdir / 'simulator.log').read_text()}")
            started = json.loads(ready)
            print(f"  ready in {started['seconds']:.1f} s", file=sys.stderr)
            phases = [
                run_phase(simulator, Path(started["kubeconfig"]), workdir, rate, args.minutes)
                for rate in rates
            ]
        finally:
            if simulator.stdin is not None:
                simulator.stdin.close()
            try:
                simulator.wait(timeout=30)
            except subprocess.TimeoutExpired:
                simulator.kill()

    report = render(phases, args.nodes, started["seconds"])
    print(report)
    if not args.no_record:
        append_results(report)
    ok = all(p.watch_exit == 0 and p.watch_misses.pods == 0 for p in phases)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

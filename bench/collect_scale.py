"""Collection at scale: annex against kubectl and the plain ``kubernetes`` client, one run.

    python -m bench.collect_scale --nodes 7500

One simulated cluster (about 8 GPUs and 10 pods per node) is served by a separate process on
loopback. Each client then lists every node and pod from it, in its own process, one after the
other, so each is timed from process start to exit and its peak memory (max RSS) is its own:

  floor      raw HTTP fetch of every page, bytes discarded: what the server and loopback allow
  kubectl    kubectl get nodes,pods -A -o json --chunk-size=500 > /dev/null
  client     the plain kubernetes client, paged lists into its model objects (V1Pod, V1Node)
  annex      annex collect cluster into a fresh DuckDB warehouse (load and publish included)

The table goes to stdout and is appended to bench/RESULTS.md with the date and the machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")


def append_results(report: str) -> None:
    """Append a bench's report to ``RESULTS`` (after a blank line), and say so on stderr."""
    with RESULTS.open("a") as out:
        out.write("\n" + report.strip("\n") + "\n")
    print(f"appended to {RESULTS}", file=sys.stderr)


@dataclass
class Measurement:
    name: str
    command: str
    wall_seconds: float
    peak_rss_bytes: int
    returncode: int
    error: str = ""
    steal_share: float = 0.0
    """Share of the machine's CPU time stolen by the hypervisor during the run (noise)."""


def measure(name: str, argv: list[str], *, env: dict[str, str] | None = None) -> Measurement:
    """Run ``argv`` to completion; wall time and the child's own peak RSS (from wait4)."""
    steal_before, total_before = cpu_times()
    started = time.perf_counter()
    # stderr goes to a file, not a pipe: a chatty child must never block on a full pipe.
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=errors, env=env or os.environ.copy()
        )
        # wait4 gives this child's own resource usage, not the maximum over all children so far.
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        stderr = errors.read().decode(errors="replace")
    error = ""
    if process.returncode != 0:
        print(f"{name} failed ({process.returncode}):\n{stderr[-3000:]}", file=sys.stderr)
        error = stderr.strip().splitlines()[-1][:300] if stderr.strip() else "no output"
    steal_after, total_after = cpu_times()
    steal = (steal_after - steal_before) / max(1, total_after - total_before)
    return Measurement(
        name, " ".join(argv), wall, usage.ru_maxrss * 1024, process.returncode, error, steal
    )


def start_simulator(
    nodes: int, seed: int, workdir: Path, features: str = ""
) -> tuple[subprocess.Popen, Path]:
    kubeconfig = workdir / "kubeconfig"
    log = (workdir / "simulator.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "simulator",
            "kubernetes",
            "--nodes",
            str(nodes),
            "--seed",
            str(seed),
            "--kubeconfig",
            str(kubeconfig),
            "--tls",  # kubectl sends bearer tokens only over TLS
            *(["--features", features] if features else []),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 600
    while not kubeconfig.exists():
        if process.poll() is not None:
            raise SystemExit(f"simulator exited: {(workdir / 'simulator.log').read_text()}")
        if time.monotonic() > deadline:
            process.kill()
            raise SystemExit("simulator did not start within 10 minutes")
        time.sleep(0.2)
    time.sleep(0.5)  # the kubeconfig is written just before serving starts
    return process, kubeconfig


def cpu_times() -> tuple[int, int]:
    """(steal, total) jiffies from /proc/stat: how much CPU the hypervisor took from this VM."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    return (fields[7] if len(fields) > 7 else 0), sum(fields)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = f"{pages / 2**30:.0f} GiB"
    except (ValueError, OSError):
        memory = "?"
    return f"{cpu}, {os.cpu_count()} cores, {memory}, Python {platform.python_version()}"


def kubectl_version() -> str:
    try:
        out = subprocess.run(
            ["kubectl", "version", "--client"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return out.splitlines()[0].split(":", 1)[-1].strip() if out else "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=7500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--skip", action="append", default=[], help="floor|kubectl|client|annex")
    parser.add_argument("--no-record", action="store_true", help="don't append to RESULTS.md")
    parser.add_argument(
        "--features",
        default="",
        help="simulator features to serve, e.g. dra,sharing,kueue (DRA claims and slices, "
        "shared GPUs, Kueue objects); default none",
    )
    args = parser.parse_args(argv)

    kubectl = shutil.which("kubectl")
    with tempfile.TemporaryDirectory(prefix="annex-bench-") as tmp:
        workdir = Path(tmp)
        print(f"starting a simulated cluster of {args.nodes} nodes…", file=sys.stderr)
        started = time.perf_counter()
        simulator, kubeconfig = start_simulator(args.nodes, args.seed, workdir, args.features)
        print(f"  ready in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        try:
            runs: list[Measurement] = []
            py = sys.executable
            plan = [
                (
                    "floor",
                    [py, "-m", "bench.raw_fetch", str(kubeconfig), str(args.page_size)],
                    None,
                ),
                (
                    "kubectl",
                    [
                        kubectl or "kubectl",
                        "--kubeconfig",
                        str(kubeconfig),
                        "get",
                        "nodes,pods",
                        "-A",
                        "-o",
                        "json",
                        f"--chunk-size={args.page_size}",
                    ],
                    None,
                ),
                (
                    "client",
                    [py, "-m", "bench.plain_client", str(kubeconfig), str(args.page_size)],
                    None,
                ),
                (
                    "annex",
                    [
                        py,
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
                    {
                        **os.environ,
                        "ANNEX_WAREHOUSE": str(workdir / "annex.duckdb"),
                        "ANNEX_KUBERNETES__PAGE_SIZE": str(args.page_size),
                        "ANNEX_CONFIG": str(workdir / "none.toml"),
                    },
                ),
            ]
            (workdir / "none.toml").write_text("")
            # Warm-up, untimed: the simulator caches gzipped pages, so the first client to ask
            # would pay for compression that the others skip. Everyone starts warm.
            print("  warm-up…", file=sys.stderr)
            measure("warm-up", plan[0][1])
            for name, command, env in plan:
                if name in args.skip or (name == "kubectl" and kubectl is None):
                    continue
                print(f"  {name}…", file=sys.stderr)
                runs.append(measure(name, command, env=env))
        finally:
            simulator.terminate()
            simulator.wait(timeout=30)

    report = render(runs, args.nodes, args.page_size, args.features)
    print(report)
    if not args.no_record:
        append_results(report)
    return 0 if all(run.returncode == 0 for run in runs) else 1


def render(runs: list[Measurement], nodes: int, page_size: int, features: str = "") -> str:
    by_name = {run.name: run for run in runs}
    annex = by_name.get("annex")
    lines = [
        f"## collect_scale: {nodes} nodes, pages of {page_size}"
        + (f", features {features}" if features else "")
        + f" ({dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Machine: {machine()}; kubectl {kubectl_version()}.",
        "",
        "| client | wall s | peak RSS MiB | annex time ÷ this | exit | CPU stolen |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        ratio = (
            f"{annex.wall_seconds / run.wall_seconds:.2f}"
            if annex and run.wall_seconds > 0
            else "–"
        )
        lines.append(
            f"| {run.name} | {run.wall_seconds:.2f} | {run.peak_rss_bytes / 2**20:.0f} "
            f"| {ratio} | {run.returncode} | {100 * run.steal_share:.0f}% |"
        )
    for run in runs:
        if run.returncode != 0:
            lines += ["", f"{run.name} FAILED (exit {run.returncode}): `{run.error}`"]
    if annex:
        notes = []
        for anchor in ("kubectl", "client"):
            if anchor in by_name:
                notes.append(
                    f"annex is {by_name[anchor].wall_seconds / annex.wall_seconds:.1f}× "
                    f"faster than {anchor}"
                )
        notes.append(f"annex peak memory {annex.peak_rss_bytes / 2**20:.0f} MiB")
        lines += ["", "; ".join(notes) + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

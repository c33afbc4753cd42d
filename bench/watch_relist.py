"""Memory of watch mode's initial list (and every relist after a 410): peak RSS and time.

    python -m bench.watch_relist --nodes 7500 [--label after]

One simulated cluster (about 10 pods per node: 75,000 pods at 7,500 nodes) is served by a
separate process on loopback (``collect_scale.start_simulator``). Each run is its own process,
timed from start to exit, with its own peak RSS (wait4):

  anchor      fetch every pod page (pages of 500, the client's transport, gzip) and decode it
              with msgspec into annex's typed pod structs, then drop it: the floor of
              "fetching and decoding the same pods" (reference: ~0.35 s for 75,000 pods)
  watchlist   ``annex watch --once`` for pods into a fresh warehouse, initial state by the
              streaming list (``sendInitialEvents``), as on servers with WatchList
  list        the same with the paged list (``limit``/``continue``), as on servers without it

Both watch runs go through ``WatchService.catch_up`` (what ``annex watch --once`` calls), one
resource (pods, the big one), into a fresh warehouse: their peak RSS is what a relist costs.
``--label`` names the code measured (``before``/``after`` a change), so runs can be compared.

The table goes to stdout and is appended to bench/RESULTS.md with the date and the machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
import time
from pathlib import Path

from bench.collect_scale import Measurement, append_results, machine, measure, start_simulator

MODES = {"watchlist": "always", "list": "never"}
"""Bench run name -> ``WatchOptions.streaming_list``."""


def fetch_and_decode(kubeconfig: Path, out: Path, page_size: int = 500) -> int:
    """The anchor: every pod page fetched and decoded into typed structs, then dropped; the
    number of pods goes to ``out``."""
    import msgspec
    from kubernetes import client, config

    from collectors.kubernetes import objects

    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    api_client.set_default_header("Accept-Encoding", "gzip")
    api = client.CoreV1Api(api_client)
    decoder = msgspec.json.Decoder(objects.PodList)
    token, pods = None, 0
    while True:
        kwargs = {"limit": page_size, "_preload_content": False}
        if token:
            kwargs["_continue"] = token
        page = decoder.decode(api.list_pod_for_all_namespaces(**kwargs).data)
        pods += len(page.items)
        token = page.metadata.continue_
        if not token:
            break
    out.write_text(str(pods))
    return 0


def catch_up(kubeconfig: Path, warehouse: Path, streaming_list: str) -> int:
    """``annex watch --once --resources pods`` with the initial list forced to one mode."""
    from dataclasses import replace

    from annex.settings import ClusterSettings, Settings, WarehouseSettings
    from collectors.kubernetes.history import WatchOptions
    from services.inventory import cluster_api
    from services.watch import WatchService
    from warehouse import Warehouse

    settings = replace(Settings(), warehouse=WarehouseSettings(path=warehouse))
    target = ClusterSettings(name="bench", kubeconfig=kubeconfig)
    api = cluster_api(settings, target)
    try:
        service = WatchService(
            api,
            Warehouse(settings.warehouse),
            cluster="bench",
            settings=settings,
            options=WatchOptions(streaming_list=streaming_list),
            resources=("pods",),
        )
        print(service.catch_up().describe(), file=sys.stderr)
    finally:
        api.close()
    return 0


def committed(warehouse: Path) -> tuple[int, str]:
    """(pods present, how the list was made) in a run's warehouse."""
    from annex.settings import WarehouseSettings
    from warehouse import Warehouse

    with Warehouse(WarehouseSettings(path=warehouse)).writer() as con:
        present = con.execute(
            "SELECT count(*) FROM core.watched_objects WHERE resource = 'pods' AND present"
        ).fetchone()[0]
        via = con.execute(
            "SELECT coalesce(max(listed_via), '?') FROM core.watch_cursors WHERE resource = 'pods'"
        ).fetchone()[0]
    return int(present), str(via)


def render(
    runs: list[Measurement], found: dict[str, tuple[int, str]], nodes: int, label: str
) -> str:
    anchor = next((run for run in runs if run.name == "anchor"), None)
    lines = [
        f"## watch_relist: {nodes} nodes, pods' initial list by `annex watch --once` "
        f"[{label}] ({dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Machine: {machine()}; load average (1 min) {os.getloadavg()[0]:.1f} at the end "
        "(other processes compete for the cores: times are noisy, memory is not).",
        "",
        "| run | pods | listed via | wall s | peak RSS MiB | RSS ÷ anchor | exit | CPU stolen |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        pods, via = found.get(run.name, (0, "–"))
        ratio = (
            f"{run.peak_rss_bytes / anchor.peak_rss_bytes:.2f}"
            if anchor and anchor.peak_rss_bytes
            else "–"
        )
        lines.append(
            f"| {run.name} | {pods:,} | {via} | {run.wall_seconds:.2f} "
            f"| {run.peak_rss_bytes / 2**20:.0f} | {ratio} | {run.returncode} "
            f"| {100 * run.steal_share:.0f}% |"
        )
    for run in runs:
        if run.returncode != 0:
            lines += ["", f"{run.name} FAILED (exit {run.returncode}): `{run.error}`"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=7500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default="current", help="names the code measured")
    parser.add_argument("--no-record", action="store_true", help="don't append to RESULTS.md")
    parser.add_argument("--anchor", nargs=2, metavar=("KUBECONFIG", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--catch-up", nargs=3, metavar=("KUBECONFIG", "WAREHOUSE", "MODE"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.anchor is not None:
        return fetch_and_decode(Path(args.anchor[0]), Path(args.anchor[1]))
    if args.catch_up is not None:
        kubeconfig, warehouse, mode = args.catch_up
        return catch_up(Path(kubeconfig), Path(warehouse), mode)

    py = sys.executable
    runs: list[Measurement] = []
    found: dict[str, tuple[int, str]] = {}
    with tempfile.TemporaryDirectory(prefix="annex-bench-relist-") as tmp:
        workdir = Path(tmp)
        print(f"starting a simulated cluster of {args.nodes} nodes…", file=sys.stderr)
        started = time.perf_counter()
        simulator, kubeconfig = start_simulator(args.nodes, args.seed, workdir)
        print(f"  ready in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        try:
            counted = workdir / "anchor.txt"
            anchor = [py, "-m", "bench.watch_relist", "--anchor", str(kubeconfig), str(counted)]
            measure("warm-up", anchor)  # the simulator caches gzipped pages: all start warm
            print("  anchor…", file=sys.stderr)
            runs.append(measure("anchor", anchor))
            if runs[-1].returncode == 0:
                found["anchor"] = (int(counted.read_text()), "list (fetched, decoded, dropped)")
            for name, mode in MODES.items():
                warehouse = workdir / f"{name}.duckdb"
                print(f"  {name}…", file=sys.stderr)
                command = [py, "-m", "bench.watch_relist", "--catch-up"]
                runs.append(measure(name, [*command, str(kubeconfig), str(warehouse), mode]))
                if runs[-1].returncode == 0:
                    found[name] = committed(warehouse)
        finally:
            simulator.terminate()
            simulator.wait(timeout=30)

    report = render(runs, found, args.nodes, args.label)
    print(report)
    if not args.no_record:
        append_results(report)
    return 0 if all(run.returncode == 0 for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())

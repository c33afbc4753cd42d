"""Command line: serve a simulated GPU cluster until Ctrl-C or SIGTERM.

python -m simulator kubernetes --nodes 200 --port 6443 --kubeconfig sim.kubeconfig --tls
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path

from simulator.kubernetes import SimulatedCluster
from simulator.world import MAX_NODES, build_world


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simulator", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    kube = commands.add_parser("kubernetes", help="serve a simulated Kubernetes API server")
    kube.add_argument("--nodes", type=int, required=True, help=f"1..{MAX_NODES}")
    kube.add_argument("--seed", type=int, default=0)
    kube.add_argument("--host", default="127.0.0.1")
    kube.add_argument("--port", type=int, default=0, help="0 picks a free port")
    kube.add_argument("--kubeconfig", type=Path, help="write a kubeconfig for the server here")
    kube.add_argument("--token", help="bearer token clients must send (default: random)")
    kube.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS with the bundled test certificate (kubectl needs it)",
    )
    kube.add_argument(
        "--churn",
        type=float,
        default=0.0,
        metavar="PER_SECOND",
        help="changes per second while serving (jobs finish and start)",
    )
    kube.add_argument(
        "--telemetry-port",
        type=int,
        metavar="PORT",
        help="also serve the DCGM exporters and their Prometheus on this port (0: a free one)",
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    world = build_world(args.nodes, seed=args.seed)
    cluster = SimulatedCluster(
        world,
        host=args.host,
        port=args.port,
        token=args.token,
        tls=args.tls,
        churn_per_second=args.churn,
    ).start()
    telemetry = None
    if args.telemetry_port is not None:
        from simulator.telemetry import TelemetryServer

        telemetry = TelemetryServer(world, host=args.host, port=args.telemetry_port).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        if args.kubeconfig:
            cluster.write_kubeconfig(args.kubeconfig)
            print(f"kubeconfig: {args.kubeconfig}", flush=True)
        counts = ", ".join(f"{n} {k}" for k, n in cluster.counts().items())
        print(
            f"simulated cluster ({counts}) ready in {time.perf_counter() - started:.1f}s",
            file=sys.stderr,
            flush=True,
        )
        print(cluster.url, flush=True)
        if telemetry is not None:
            print(
                f"telemetry: {telemetry.url} (exporters: {telemetry.url}/exporters/<node>/metrics,"
                f" prometheus: {telemetry.prometheus_url})",
                flush=True,
            )
        while not stop.is_set():
            stop.wait(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        if telemetry is not None:
            telemetry.stop()
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

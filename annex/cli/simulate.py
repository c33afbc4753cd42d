"""The CLI's command group: serve a simulated GPU cluster (``annex simulate``)."""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from annex.cli.arguments import positive_int
from annex.cli.counts import plural
from annex.cli.hints import annex_command
from annex.cli.world_features import add_features_option, chosen_features, describe
from annex.errors import ConfigError
from annex.settings import Settings


def register(commands: Any) -> None:
    simulate = commands.add_parser(
        "simulate",
        help="serve a simulated GPU cluster's Kubernetes API on loopback until stopped",
        description=(
            "Serve a seeded, simulated GPU cluster over the Kubernetes API on loopback. "
            "Writes a kubeconfig that kubectl and annex can use, then serves until Ctrl-C."
        ),
    )
    simulate.add_argument("--nodes", type=positive_int, default=100, help="cluster size (1-7500)")
    simulate.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    simulate.add_argument(
        "--kubeconfig",
        type=Path,
        default=Path(".demo/kubeconfig"),
        help="where to write the kubeconfig (default: .demo/kubeconfig)",
    )
    simulate.add_argument("--seed", type=int, default=0, help="world seed (same seed, same world)")
    add_features_option(simulate)
    simulate.set_defaults(run=cmd_simulate)


def cmd_simulate(args: argparse.Namespace, settings: Settings) -> int:
    from simulator.kubernetes import SimulatedCluster
    from simulator.world import build_world

    if args.nodes > 7500:
        raise ConfigError(f"--nodes {args.nodes} is above the simulator's 7,500-node limit")
    features = chosen_features(args.nodes, args.features)
    started = time.perf_counter()
    # The world's present is this moment, so that what annex collects now (the inventory,
    # telemetry, attestations pushed live) and the world's history line up in time.
    world = build_world(
        nodes=args.nodes,
        seed=args.seed,
        now=datetime.now(UTC).replace(microsecond=0),
        features=features,
    )
    # TLS, because kubectl sends a bearer token only over HTTPS.
    with SimulatedCluster(world, port=args.port, tls=True) as cluster:
        kubeconfig = cluster.write_kubeconfig(args.kubeconfig)
        counts = cluster.counts()
        kubectl = f"kubectl --kubeconfig {kubeconfig}"
        tries = [f"{kubectl} get nodes"]
        if "dra" in features:
            tries += [f"{kubectl} get resourceclaims -A", f"{kubectl} get resourceslices"]
        if "kueue" in features:
            tries.append(f"{kubectl} get workloads.kueue.x-k8s.io -A")
        tries.append(annex_command(f"collect cluster --kubeconfig {kubeconfig}"))
        print(
            f"simulated cluster: {plural(counts.get('nodes', 0), 'node')}, "
            f"{plural(counts.get('pods', 0), 'pod')} (seed {args.seed}, {describe(features)}, "
            f"built in {time.perf_counter() - started:.1f} s)\n"
            f"serving {cluster.url}\n"
            f"kubeconfig: {kubeconfig}\n"
            + "".join(f"  {line}\n" for line in tries)
            + "Ctrl-C to stop.",
            flush=True,
        )
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            print("stopped", file=sys.stderr)
    return 0

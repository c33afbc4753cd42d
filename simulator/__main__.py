"""Command line: serve a simulated GPU cluster until Ctrl-C or SIGTERM.

python -m simulator kubernetes --nodes 200 --port 6443 --kubeconfig sim.kubeconfig --tls
python -m simulator attestation --nodes 200 --trust-dir trust --history-dir spool --days 2
python -m simulator lineage --nodes 200 --post http://127.0.0.1:8080/ --token-env ANNEX_TOKEN
"""

from __future__ import annotations

import argparse
import os
import signal
import ssl
import sys
import threading
import time
from pathlib import Path

from simulator.kubernetes import SimulatedCluster
from simulator.world import MAX_NODES, build_world
from simulator.world.features import check_features


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
        "--features",
        default="",
        metavar="LIST",
        help="opt-in world parts, comma-separated: dra, sharing, kueue (default: none)",
    )
    kube.add_argument(
        "--telemetry-port",
        type=int,
        metavar="PORT",
        help="also serve the DCGM exporters and their Prometheus on this port (0: a free one)",
    )
    _add_attestation_parser(commands)
    _add_lineage_parser(commands)
    args = parser.parse_args(argv)
    if args.command == "attestation":
        return _attestation(args)
    if args.command == "lineage":
        return _lineage(args)

    started = time.perf_counter()
    features = {f.strip() for f in args.features.split(",") if f.strip()}
    try:
        check_features(features)
    except ValueError as error:
        parser.error(str(error))
    world = build_world(args.nodes, seed=args.seed, features=features)
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


def _add_attestation_parser(commands: argparse._SubParsersAction) -> None:
    attest = commands.add_parser(
        "attestation",
        help="write simulated attestation trust material and history; serve keys; push live",
        description="Simulated NRAS/MAA/ITA issuers over the world's confidential nodes.",
    )
    attest.add_argument("--nodes", type=int, required=True, help=f"1..{MAX_NODES}")
    attest.add_argument("--seed", type=int, default=0)
    attest.add_argument(
        "--trust-dir",
        type=Path,
        required=True,
        help="write <issuer>.jwks.json, <issuer>.root.pem and issuers.toml here",
    )
    attest.add_argument(
        "--history-dir", type=Path, help="write past submissions here as bare files"
    )
    attest.add_argument("--days", type=float, default=2.0, help="history length (days)")
    attest.add_argument(
        "--history-nodes",
        type=int,
        metavar="N",
        help="bound the history to N nodes (faulty ones first)",
    )
    attest.add_argument("--every", type=float, default=3000.0, help="seconds between attestations")
    attest.add_argument("--host", default="127.0.0.1")
    attest.add_argument(
        "--keys-port",
        type=int,
        metavar="PORT",
        help="serve the issuers' JWKS on this port (0: a free one) until Ctrl-C",
    )
    attest.add_argument(
        "--intake", metavar="URL", help="push live submissions to annex's intake at URL"
    )
    attest.add_argument(
        "--token-env",
        default="ANNEX_INTAKE_TOKEN",
        help="environment variable holding the intake's bearer token",
    )
    attest.add_argument("--cafile", type=Path, help="CA bundle to verify the intake's TLS")
    attest.add_argument("--once", action="store_true", help="push one round, then exit")


def _attestation(args: argparse.Namespace) -> int:
    from simulator.attestation.agent import AttestingAgent, write_history
    from simulator.attestation.issuers import LOCAL_SECRET, LOCAL_SECRET_ENV, IssuerSet
    from simulator.attestation.server import AttestationIssuerServer
    from simulator.attestation.tokens import policy_toml

    world = build_world(args.nodes, seed=args.seed)
    issuers = IssuerSet.create(args.seed)
    keys = None
    if args.keys_port is not None:
        keys = AttestationIssuerServer(issuers, host=args.host, port=args.keys_port).start()
    paths = issuers.write_trust(args.trust_dir)
    toml = issuers.settings_toml(args.trust_dir, jwks_base_url=keys.url if keys else None)
    toml += "\n" + policy_toml()
    settings = args.trust_dir / "issuers.toml"
    settings.write_text(toml)
    print(f"trust material: {', '.join(str(p) for p in paths.values())}", flush=True)
    print(
        f"annex settings: {settings} (set {LOCAL_SECRET_ENV}={LOCAL_SECRET.decode()}"
        " to decode self-reported tokens)",
        flush=True,
    )
    if args.history_dir is not None:
        started = time.perf_counter()
        count = write_history(
            world,
            issuers,
            args.history_dir,
            days=args.days,
            every_seconds=args.every,
            max_nodes=args.history_nodes,
        )
        print(
            f"history: {count} submissions in {args.history_dir}"
            f" ({time.perf_counter() - started:.1f}s)",
            flush=True,
        )
    agent = None
    if args.intake:
        token = os.environ.get(args.token_env)
        if not token:
            print(f"error: --intake needs a bearer token in ${args.token_env}", file=sys.stderr)
            return 2
        context = None
        if args.intake.startswith("https:"):
            context = ssl.create_default_context(cafile=str(args.cafile) if args.cafile else None)
        agent = AttestingAgent(
            world, issuers, args.intake, token, interval_seconds=args.every, verify_tls=context
        )
        if args.once:
            statuses = agent.run_once()
            print(f"pushed {len(statuses)} submissions: statuses {sorted(set(statuses))}")
            agent = None
    if keys is None and agent is None:
        return 0
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        if keys is not None:
            print(f"issuer keys: {keys.url} (nras: {keys.jwks_url('nras')})", flush=True)
        if agent is not None:
            agent.start()
            print(f"attesting {len(agent.plans)} nodes to {args.intake}", flush=True)
        while not stop.is_set():
            stop.wait(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        if agent is not None:
            agent.stop()
        if keys is not None:
            keys.stop()
    return 0


def _add_lineage_parser(commands: argparse._SubParsersAction) -> None:
    lineage = commands.add_parser(
        "lineage",
        help="emit the world's training-data lineage as OpenLineage events",
        description=(
            "OpenLineage events for every training run of the world (and the data processing,"
            " pretraining, synthetic generation and fine-tuning runs behind them), posted to an"
            " OpenLineage HTTP endpoint out of order and with duplicates, or written as JSON lines."
        ),
    )
    lineage.add_argument("--nodes", type=int, required=True, help=f"1..{MAX_NODES}")
    lineage.add_argument("--seed", type=int, default=0)
    lineage.add_argument("--cluster", default="simulated", help="cluster name in the events")
    target = lineage.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--post", metavar="URL", help="base URL of the endpoint (events go to URL/api/v1/lineage)"
    )
    target.add_argument("--jsonl", type=Path, metavar="PATH", help="write JSON lines here")
    lineage.add_argument(
        "--token-env",
        default="ANNEX_LINEAGE_TOKEN",
        help="environment variable holding the endpoint's bearer token",
    )
    lineage.add_argument(
        "--batch-size", type=int, default=1, help="events per request (>1: /lineage/batch)"
    )
    lineage.add_argument("--shuffle-seed", type=int, default=0, help="seed of the sending order")
    lineage.add_argument(
        "--duplicates", type=float, default=0.05, help="fraction of events sent twice"
    )


def _lineage(args: argparse.Namespace) -> int:
    from simulator.lineage import build_events, deliver, write_jsonl

    events = build_events(build_world(args.nodes, seed=args.seed), cluster=args.cluster)
    if args.jsonl is not None:
        count = write_jsonl(events, args.jsonl)
        print(f"wrote {count} lineage events to {args.jsonl}", flush=True)
        return 0
    token = os.environ.get(args.token_env)
    if not token:
        print(f"error: --post needs a bearer token in ${args.token_env}", file=sys.stderr)
        return 2
    sent = deliver(
        events,
        args.post,
        token=token,
        batch_size=args.batch_size,
        shuffle_seed=args.shuffle_seed,
        duplicate_fraction=args.duplicates,
    )
    print(
        f"posted {len(events)} lineage events ({len(sent.duplicates)} twice) in"
        f" {sent.requests} requests to {args.post}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

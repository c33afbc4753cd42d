"""``annex watch``: the command over ``services.watch.WatchService`` (its arguments, the
cluster it follows, SIGTERM and Ctrl-C); the service does the collecting and committing.

Heavy imports (the Kubernetes client, DuckDB) happen inside the functions, so registering the
command costs the CLI nothing.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from annex.cli.counts import plural
from annex.errors import ConfigError
from annex.settings import ClusterSettings, Settings

# -- the command -------------------------------------------------------------------------------


def register(commands: Any) -> None:
    """Register ``annex watch`` (called by ``annex.cli.build_parser``)."""
    watch = commands.add_parser(
        "watch",
        help="record allocation changes as they happen (list-then-watch), read-only",
        description=(
            "Follow pods, nodes, jobs and events of one cluster, and DRA's ResourceSlices and "
            "ResourceClaims and Kueue's objects where the server serves them, with "
            "list-then-watch and commit every change, with its resume point, into the "
            "warehouse: the exact GPU allocation history (marts.watched_gpu_allocations: "
            "device-plugin requests and GPUs held through ResourceClaims), short jobs "
            "included. Runs "
            "until stopped (SIGTERM / Ctrl-C); --once catches up and exits."
        ),
    )
    watch.add_argument(
        "--cluster",
        dest="cluster_name",
        metavar="NAME",
        help="a cluster from the settings (default: the only one configured)",
    )
    watch.add_argument("--kubeconfig", type=Path, help="kubeconfig file (default: $KUBECONFIG)")
    watch.add_argument("--context", help="kubeconfig context (default: its current context)")
    watch.add_argument("--in-cluster", action="store_true", help="use the pod's service account")
    watch.add_argument("--once", action="store_true", help="catch up to the server, then exit")
    watch.add_argument(
        "--resources",
        default="",
        help="comma-separated resources to follow (default: pods, nodes, jobs, events, and "
        "resource_slices, resource_claims and the kueue_* resources where the server serves "
        "them)",
    )
    watch.add_argument(
        "--timeout-seconds",
        type=int,
        default=300,
        help="server-side timeout of each watch request, after which it resumes (default 300)",
    )
    watch.add_argument(
        "--publish-every",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how often the service refreshes the analysts' copy (default 60)",
    )
    watch.set_defaults(run=cmd_watch)


def _target(args: argparse.Namespace, settings: Settings) -> ClusterSettings:
    explicit = args.kubeconfig is not None or args.context is not None or args.in_cluster
    if explicit:
        name = args.cluster_name or args.context or ("in-cluster" if args.in_cluster else None)
        return ClusterSettings(
            name=name or "default",
            kubeconfig=args.kubeconfig,
            context=args.context,
            in_cluster=args.in_cluster,
        )
    if args.cluster_name:
        return settings.cluster(args.cluster_name)
    if len(settings.clusters) == 1:
        return settings.clusters[0]
    if not settings.clusters:
        return ClusterSettings(name="default")
    raise ConfigError(
        f"{plural(len(settings.clusters), 'cluster')} in {settings.source}; annex watch "
        "follows one",
        hint="pass --cluster NAME (run one watch per cluster)",
    )


def cmd_watch(args: argparse.Namespace, settings: Settings) -> int:
    from collectors.kubernetes.history import WatchOptions
    from services.inventory import cluster_api
    from services.watch import WatchService
    from warehouse import Warehouse

    target = _target(args, settings)
    resources = [name.strip() for name in args.resources.split(",") if name.strip()]
    api = cluster_api(settings, target)
    try:
        service = WatchService(
            api,
            Warehouse(settings.warehouse),
            cluster=target.name,
            settings=settings,
            options=WatchOptions(timeout_seconds=args.timeout_seconds),
            resources=resources or None,
            publish_every_seconds=args.publish_every,
            topology_profile=target.topology_profile,
        )
        if args.once:
            summary = service.catch_up()
        else:
            print(
                f"watching cluster {target.name!r} ({', '.join(service.resources)}) into "
                f"{settings.warehouse.path}; Ctrl-C to stop",
                file=sys.stderr,
                flush=True,
            )
            stop = threading.Event()
            # SIGTERM (a Deployment's rollout or scale-down) lets the commit under way finish,
            # then stops: never an interrupted query, always exit 0
            previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
            try:
                summary = service.run(stop)
            except KeyboardInterrupt:  # Ctrl-C: every commit so far is whole
                stop.set()
                service.publish()
                summary = service.summary
            finally:
                signal.signal(signal.SIGTERM, previous)
        print(summary.describe(), file=sys.stderr)
    finally:
        api.close()
    return 0

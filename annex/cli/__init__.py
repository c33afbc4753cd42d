"""The ``annex`` command line.

Every command is a thin layer over the library: parse arguments, load settings, call the
collectors / warehouse / simulator, print results. Errors are ``AnnexError``s, printed without
a traceback (unless ``--debug``) and mapped to the exit codes listed in ``annex.errors``.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from annex import __version__
from annex.errors import AnnexError, ConfigError, WarehouseError
from annex.settings import ClusterSettings, Settings, load_settings

if TYPE_CHECKING:
    from pipelines.execution import RunOutcome

log = logging.getLogger("annex")

DEMO_DEFAULT_NODES = 500


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="annex",
        description=(
            "GPU-cluster capacity audit and EU AI Act compliance evidence. "
            "Collects Kubernetes cluster state into a DuckDB warehouse that analysts query."
        ),
        epilog="Settings: annex.toml (see annex.example.toml); ANNEX_WAREHOUSE sets the warehouse.",
    )
    parser.add_argument("--version", action="version", version=f"annex {__version__}")
    parser.add_argument(
        "--config", metavar="PATH", help="settings file (default: $ANNEX_CONFIG or ./annex.toml)"
    )
    parser.add_argument("--debug", action="store_true", help="verbose logs and full tracebacks")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    simulate = commands.add_parser(
        "simulate",
        help="serve a simulated GPU cluster's Kubernetes API on loopback until stopped",
        description=(
            "Serve a seeded, simulated GPU cluster over the Kubernetes API on loopback. "
            "Writes a kubeconfig that kubectl and annex can use, then serves until Ctrl-C."
        ),
    )
    simulate.add_argument("--nodes", type=_positive_int, default=100, help="cluster size (1-7500)")
    simulate.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    simulate.add_argument(
        "--kubeconfig",
        type=Path,
        default=Path(".demo/kubeconfig"),
        help="where to write the kubeconfig (default: .demo/kubeconfig)",
    )
    simulate.add_argument("--seed", type=int, default=0, help="world seed (same seed, same world)")
    simulate.set_defaults(run=cmd_simulate)

    collect = commands.add_parser("collect", help="collect evidence into the warehouse")
    sources = collect.add_subparsers(dest="source", metavar="SOURCE", required=True)
    cluster = sources.add_parser(
        "cluster",
        help="collect a cluster's state (nodes, GPUs, pods, jobs, events), read-only",
        description=(
            "Collect one cluster's state through the Kubernetes API, read-only, into the "
            "warehouse. Without options: every cluster in the settings, or else the current "
            "context of the default kubeconfig."
        ),
    )
    cluster.add_argument("--kubeconfig", type=Path, help="kubeconfig file (default: $KUBECONFIG)")
    cluster.add_argument("--context", help="kubeconfig context (default: its current context)")
    cluster.add_argument("--in-cluster", action="store_true", help="use the pod's service account")
    cluster.add_argument(
        "--cluster",
        dest="cluster_name",
        metavar="NAME",
        help="a cluster from the settings, or the name to record (default: the context's name)",
    )
    cluster.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    cluster.set_defaults(run=cmd_collect_cluster)

    gpubench = sources.add_parser(
        "gpubench",
        help="read benchmark records from completed probe pods' logs",
        description=(
            "Read the Triton probe records from the logs of completed probe pods (namespace "
            "and labels from [gpubench]) not read before, validate them and load them."
        ),
    )
    gpubench.add_argument(
        "--cluster", dest="cluster_name", metavar="NAME", help="a cluster from the settings"
    )
    gpubench.set_defaults(run=cmd_collect_gpubench)

    telemetry = sources.add_parser(
        "telemetry",
        help="collect DCGM telemetry (Prometheus range API or exporter scrapes)",
        description=(
            "Collect DCGM exporter metrics of each cluster: from its prometheus_url over a "
            "window (default: the last telemetry.window_seconds), else by scraping its "
            "dcgm_exporter_urls once. Samples already loaded are skipped."
        ),
    )
    telemetry.add_argument(
        "--cluster", dest="cluster_name", metavar="NAME", help="a cluster from the settings"
    )
    telemetry.add_argument("--since", type=_iso_time, metavar="TIME", help="window start (UTC)")
    telemetry.add_argument("--until", type=_iso_time, metavar="TIME", help="window end (UTC)")
    telemetry.add_argument(
        "--no-rollup", action="store_true", help="skip rebuilding the hourly utilisation marts"
    )
    telemetry.set_defaults(run=cmd_collect_telemetry)

    attestations = sources.add_parser(
        "attestations",
        help="verify the attestation submissions waiting in the spool and load them",
        description=(
            "Verify every submission waiting in attestation.spool_dir/incoming (from annex "
            "serve) and attestation.watch_dirs (bare files) against the pinned issuers and the "
            "appraisal policy, load every verdict into the warehouse, archive the files used "
            "to attestation.spool_dir/archive/<day>/, and refresh the coverage marts."
        ),
    )
    attestations.add_argument(
        "--cluster",
        dest="cluster_name",
        metavar="NAME",
        help="the cluster whose nodes sent them (default: the only configured cluster)",
    )
    attestations.add_argument(
        "--max-files",
        type=_positive_int,
        metavar="N",
        help="read at most N files (the rest wait for the next collection)",
    )
    attestations.add_argument(
        "--no-coverage", action="store_true", help="skip refreshing the coverage marts"
    )
    attestations.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    attestations.set_defaults(run=cmd_collect_attestations)

    lineage = sources.add_parser(
        "lineage",
        help="load the OpenLineage events waiting in the spool (and JSON-lines files)",
        description=(
            "Load every OpenLineage event waiting in lineage.spool_dir/incoming (from annex "
            "serve, already validated) and lineage.watch_dirs (*.jsonl), plus the files named "
            "with --file (validated here; rejected lines land in audit.rejected), into the "
            "warehouse as one collection; archive the spool and watched files to "
            "lineage.spool_dir/archive/<day>/; refresh the model closures the new events can "
            "change."
        ),
    )
    lineage.add_argument(
        "--file",
        dest="files",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help="a JSON-lines file of OpenLineage events (.jsonl or .jsonl.gz; repeatable); "
        "read, never moved",
    )
    lineage.add_argument(
        "--max-files",
        type=_positive_int,
        metavar="N",
        help="read at most N spool/watched files (the rest wait for the next collection)",
    )
    refresh = lineage.add_mutually_exclusive_group()
    refresh.add_argument(
        "--no-refresh", action="store_true", help="skip refreshing the lineage models"
    )
    refresh.add_argument(
        "--full-refresh",
        action="store_true",
        help="rebuild every model checkpoint's closure, not only those the new events can "
        "change (after core.lineage_* tables were repaired by hand)",
    )
    lineage.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    lineage.set_defaults(run=cmd_collect_lineage)

    serve = commands.add_parser(
        "serve",
        help="serve the evidence intake (attestations, OpenLineage events) until stopped",
        description=(
            "Serve the intake that attestation agents and OpenLineage producers push to: "
            "POST /api/v1/attestations/nonce, POST /api/v1/attestations, POST /api/v1/lineage "
            "and POST /api/v1/lineage/batch (gzip accepted), bearer token from the variable "
            "serve.token_env names, HTTPS when serve.tls_cert_file/tls_key_file are set. "
            "Submissions are written to attestation.spool_dir/incoming and events to "
            "lineage.spool_dir/incoming; `annex collect attestations` and `annex collect "
            "lineage` load them. Runs until Ctrl-C or SIGTERM."
        ),
    )
    serve.add_argument("--host", help="address to listen on (default: serve.host)")
    serve.add_argument("--port", type=int, help="port (default: serve.port; 0: any free port)")
    serve.add_argument("--quiet", action="store_true", help="no access log")
    serve.set_defaults(run=cmd_serve)

    from annex.cli.watch import add_watch_parser

    add_watch_parser(commands)

    probe = commands.add_parser("probe", help="the GPU benchmark probes annex deploys")
    probe_actions = probe.add_subparsers(dest="action", metavar="ACTION", required=True)
    manifest = probe_actions.add_parser(
        "manifest",
        help="write the Kubernetes manifest that runs the probe suite on every GPU node",
        description=(
            "Print a Namespace, PriorityClass, ServiceAccount and an indexed Job that runs the "
            "Triton benchmark suite once on each of NODES GPU nodes; apply it with kubectl."
        ),
    )
    manifest.add_argument("--nodes", type=_positive_int, required=True, help="GPU nodes to probe")
    manifest.add_argument("--gpus-per-node", type=_positive_int, default=8)
    manifest.add_argument("--image", required=True, help="container image with annex[gpu]")
    manifest.add_argument("--namespace", default=None, help="default: [gpubench] namespace")
    manifest.add_argument("--deadline-seconds", type=_positive_int, default=3600)
    manifest.add_argument("--output", "-o", type=Path, help="file to write (default: stdout)")
    manifest.set_defaults(run=cmd_probe_manifest)

    demo = commands.add_parser(
        "demo",
        help="simulate a GPU cluster, collect it into the warehouse, print the fleet summary",
    )
    demo.add_argument("--nodes", type=_positive_int, default=DEMO_DEFAULT_NODES)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument(
        "--out",
        type=Path,
        default=Path(".demo"),
        help="folder for the simulator's kubeconfig (default: .demo)",
    )
    demo.set_defaults(run=cmd_demo)

    run = commands.add_parser(
        "run",
        help="materialise Dagster assets for the configured clusters, in this process",
        description=(
            "Run the cluster_state assets and their checks through Dagster, one run per "
            "configured cluster, in this process (no daemon needed). With DAGSTER_HOME set the "
            "runs are recorded there and show in `make dev`'s UI."
        ),
    )
    run.add_argument(
        "--select",
        metavar="SELECTION",
        help="Dagster asset selection, e.g. 'key:cluster_inventory+' (default: the whole "
        "cluster_state group: schema, inventory, checks, marts, published copy)",
    )
    run.add_argument(
        "--cluster",
        dest="clusters",
        action="append",
        metavar="NAME",
        help="a cluster from the settings (repeatable; default: every configured cluster)",
    )
    run.set_defaults(run=cmd_run)

    sql = commands.add_parser(
        "sql",
        help="query the published warehouse copy (read-only)",
        description=(
            "Query the analysts' read-only copy of the warehouse. Interactive without -c; "
            "'.tables' lists the tables and views with their descriptions; start with "
            "'select * from marts.fleet_summary'."
        ),
    )
    sql.add_argument("-c", "--command", dest="query", help="run one query and exit")
    sql.add_argument("--format", choices=("table", "csv", "json"), default="table")
    sql.set_defaults(run=cmd_sql)

    export = commands.add_parser(
        "export",
        help="write every core and marts table as Parquet partitioned by cluster and day",
        description=(
            "Export the published copy's core and marts tables to DEST/<schema>/<table>/"
            "cluster=<name>/day=<day>/ as Parquet that Spark, Trino or DuckDB read; sync DEST "
            "to object storage afterwards. Reruns are idempotent."
        ),
    )
    export.add_argument(
        "--since",
        metavar="DAY",
        type=_iso_day,
        help="rewrite only partitions from DAY (YYYY-MM-DD) on, plus older ones with changes",
    )
    export.add_argument("dest", type=Path, metavar="DEST", help="local or mounted folder")
    export.set_defaults(run=cmd_export)

    spdx = commands.add_parser(
        "spdx",
        help="write the SPDX 3.0 document (AI and Dataset profiles) of a model and its data",
        description=(
            "Write the SPDX 3.0.1 JSON-LD document of a model checkpoint (AI profile) and the "
            "leaf sources of its training content (Dataset profile, with licences, source "
            "categories and crawl facts from their lineage facets), read from the published "
            "copy. The checkpoint is the model's latest in marts.lineage_models unless "
            "--checkpoint names one."
        ),
    )
    spdx.add_argument("--model", required=True, help="model name (marts.lineage_models)")
    spdx.add_argument("--checkpoint", metavar="ID", help="a model_version_id of that model")
    spdx.add_argument(
        "-o",
        "--output",
        type=Path,
        help="file to write (default: <model>.spdx.json; '-' writes to stdout)",
    )
    spdx.set_defaults(run=cmd_spdx)

    from annex.cli.compute import add_parser as add_compute_parser

    add_compute_parser(commands)

    from annex.cli.report import add_parser as add_report_parser

    add_report_parser(commands)

    warehouse = commands.add_parser("warehouse", help="manage the warehouse file")
    actions = warehouse.add_subparsers(dest="action", metavar="ACTION", required=True)
    migrate = actions.add_parser("migrate", help="apply pending migrations")
    migrate.set_defaults(run=cmd_warehouse_migrate)
    status = actions.add_parser("status", help="migrations, size and the last collections")
    status.set_defaults(run=cmd_warehouse_status)
    publish = actions.add_parser("publish", help="refresh the analysts' read-only copy")
    publish.set_defaults(run=cmd_warehouse_publish)
    return parser


def _iso_time(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time, e.g. 2026-11-20T00:00:00Z"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.debug)
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        settings = load_settings(args.config)
        return int(args.run(args, settings) or 0)
    except (Exception, KeyboardInterrupt) as exc:
        return report_failure(exc, debug=args.debug)


def report_failure(exc: BaseException, *, debug: bool = False) -> int:
    """Print why a command failed, for people, and return its exit code (``annex.errors``).

    With ``debug``, an error annex did not expect is re-raised (its traceback is the report).
    """
    if isinstance(exc, AnnexError):
        if debug:
            log.error("failed", exc_info=exc)
        print(f"annex: error: {exc.message}", file=sys.stderr)
        for note in getattr(exc, "__notes__", ()):
            print(f"  note: {note}", file=sys.stderr)
        if exc.hint:
            print(f"  hint: {exc.hint}", file=sys.stderr)
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        print("annex: interrupted", file=sys.stderr)
        return 130
    if isinstance(exc, BrokenPipeError):
        # The reader of our output went away (`annex sql ... | head`): not a failure of
        # annex's. Point stdout at /dev/null so flushing it at exit raises nothing more.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141  # 128 + SIGPIPE, as a shell reports a command its pipe stopped
    if debug:
        raise exc
    from warehouse.space import out_of_space

    if out_of_space(exc):
        # A full disk met outside the warehouse's own handling (a spool, a report file): no
        # bug, and the warehouse commits whole collections, so nothing is half-kept.
        print(f"annex: error: a disk is full: {exc}", file=sys.stderr)
        print(
            "  hint: free space on the disk of the file named above and rerun; collections "
            "already committed to the warehouse are safe, and none is ever kept in part",
            file=sys.stderr,
        )
        return WarehouseError.exit_code
    print(f"annex: unexpected error: {type(exc).__name__}: {exc}", file=sys.stderr)
    print("  hint: rerun with --debug for the traceback, and report it", file=sys.stderr)
    return 1


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _configure_logging(debug: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(asctime)s level=%(levelname)s logger=%(name)s %(message)s",
    )
    # urllib3 at debug level prints request lines (never headers); keep it quieter anyway.
    logging.getLogger("urllib3").setLevel(logging.INFO if debug else logging.WARNING)
    logging.getLogger("kubernetes").setLevel(logging.INFO if debug else logging.WARNING)


# ---------------------------------------------------------------------------------------------
# Commands


def cmd_simulate(args: argparse.Namespace, settings: Settings) -> int:
    from simulator.kubernetes import SimulatedCluster
    from simulator.world import build_world

    if args.nodes > 7500:
        raise ConfigError(f"--nodes {args.nodes} is above the simulator's 7,500-node limit")
    started = time.perf_counter()
    # The world's present is this moment, so that what annex collects now (the inventory,
    # telemetry, attestations pushed live) and the world's history line up in time.
    world = build_world(
        nodes=args.nodes, seed=args.seed, now=datetime.now(UTC).replace(microsecond=0)
    )
    # TLS, because kubectl sends a bearer token only over HTTPS.
    with SimulatedCluster(world, port=args.port, tls=True) as cluster:
        kubeconfig = cluster.write_kubeconfig(args.kubeconfig)
        counts = cluster.counts()
        print(
            f"simulated cluster: {counts.get('nodes', 0)} nodes, {counts.get('pods', 0)} pods "
            f"(seed {args.seed}, built in {time.perf_counter() - started:.1f} s)\n"
            f"serving {cluster.url}\n"
            f"kubeconfig: {kubeconfig}\n"
            f"  kubectl --kubeconfig {kubeconfig} get nodes\n"
            f"  annex collect cluster --kubeconfig {kubeconfig}\n"
            "Ctrl-C to stop.",
            flush=True,
        )
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            print("stopped", file=sys.stderr)
    return 0


def cmd_collect_cluster(args: argparse.Namespace, settings: Settings) -> int:
    targets = _collection_targets(args, settings)
    failures = 0
    for target in targets:
        result = _collect_one(target, settings, quiet=args.quiet)
        if result.status != "succeeded":
            failures += 1
    if not args.quiet:
        _print_summary(settings)
    return 4 if failures else 0


def _collection_targets(args: argparse.Namespace, settings: Settings) -> list[ClusterSettings]:
    """Which clusters to collect: explicit options first, then the settings, then kubeconfig."""
    explicit = args.kubeconfig is not None or args.context is not None or args.in_cluster
    if args.cluster_name and not explicit:
        return [settings.cluster(args.cluster_name)]
    if explicit:
        name = args.cluster_name or args.context or ("in-cluster" if args.in_cluster else None)
        if name is None:
            name = _current_context_name(args.kubeconfig) or "default"
        return [
            ClusterSettings(
                name=name,
                kubeconfig=args.kubeconfig,
                context=args.context,
                in_cluster=args.in_cluster,
            )
        ]
    if settings.clusters:
        return list(settings.clusters)
    name = _current_context_name(None) or "default"
    return [ClusterSettings(name=name)]


def _current_context_name(kubeconfig: Path | None) -> str | None:
    from kubernetes import config as kube_config

    try:
        _, current = kube_config.list_kube_config_contexts(
            config_file=str(kubeconfig) if kubeconfig else None
        )
    except Exception:
        return None
    return (current or {}).get("name")


def _collect_one(target: ClusterSettings, settings: Settings, *, quiet: bool):
    from annex.cli.progress import CollectionProgress
    from services.inventory import collect_cluster_inventory
    from warehouse import Warehouse

    wh = Warehouse(settings.warehouse)
    with CollectionProgress(cluster=target.name, enabled=not quiet) as progress:
        result = collect_cluster_inventory(
            settings, wh, target, on_page=progress.on_page, on_wait=progress.on_wait
        )
    if not quiet:
        print(
            f"collection {result.collection_id} of cluster {target.name!r}: {result.status} "
            f"in {(result.finished_at - result.started_at).total_seconds():.1f} s "
            f"({_row_count_text(result.row_counts)}; {result.rejected_count} rejected) "
            f"into {settings.warehouse.path}",
            file=sys.stderr,
        )
    return result


def _targets_named(args: argparse.Namespace, settings: Settings) -> list[ClusterSettings]:
    if args.cluster_name:
        return [settings.cluster(args.cluster_name)]
    if not settings.clusters:
        raise ConfigError(
            f"no [[clusters]] in {settings.source}",
            hint="add one (see annex.example.toml) or try `annex demo`",
        )
    return list(settings.clusters)


def _report(result, what: str, settings: Settings) -> None:
    print(
        f"{what} collection {result.collection_id} of cluster {result.cluster!r}: "
        f"{result.status} ({_row_count_text(result.row_counts)}; {result.rejected_count} "
        f"rejected) into {settings.warehouse.path}",
        file=sys.stderr,
    )


def cmd_collect_gpubench(args: argparse.Namespace, settings: Settings) -> int:
    from services.gpu_evidence import collect_gpu_benchmarks
    from warehouse import Warehouse

    wh = Warehouse(settings.warehouse)
    for target in _targets_named(args, settings):
        _report(collect_gpu_benchmarks(settings, wh, target), "benchmark", settings)
    return 0


def cmd_collect_telemetry(args: argparse.Namespace, settings: Settings) -> int:
    from services.gpu_evidence import collect_gpu_telemetry, refresh_gpu_utilisation
    from warehouse import Warehouse

    wh = Warehouse(settings.warehouse)
    for target in _targets_named(args, settings):
        result = collect_gpu_telemetry(
            settings, wh, target, start=args.since, end=args.until, publish=args.no_rollup
        )
        _report(result, "telemetry", settings)
    if not args.no_rollup:
        counts = refresh_gpu_utilisation(wh)
        print(f"utilisation marts refreshed: {counts}", file=sys.stderr)
    return 0


def _attestation_cluster(args: argparse.Namespace, settings: Settings) -> str:
    """The cluster an attestation collection is recorded for (its nodes' inventory)."""
    if args.cluster_name:
        if settings.clusters:
            settings.cluster(args.cluster_name)  # a typo would join with no inventory
        return args.cluster_name
    if len(settings.clusters) == 1:
        return settings.clusters[0].name
    configured = ", ".join(c.name for c in settings.clusters)
    raise ConfigError(
        "which cluster sent these attestations? "
        + (f"several are configured ({configured})" if configured else "none is configured"),
        hint="pass --cluster NAME: the name its inventory is collected under "
        "(annex collect cluster), so attestations join with its nodes",
    )


@contextmanager
def _spool_progress(what: str, unit: str, total: int, *, quiet: bool):
    """A progress bar over spool files for a collection, counting ``unit`` (records, events),
    and the ``on_progress``/``on_wait`` callbacks the spool collectors take."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    console = Console(file=sys.stderr)
    with Progress(
        TextColumn("[bold]{task.description:<16}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[count]} " + unit),
        console=console,
        disable=quiet,
    ) as progress:
        task = progress.add_task(what, total=total, count=0)

        def on_progress(files_read: int, count: int) -> None:
            progress.update(task, completed=files_read, count=count)

        def on_wait(message: str) -> None:
            console.print(f"[yellow]{message}[/yellow]")

        yield on_progress, on_wait


def _archive_report(archive, spool_dir: Path, kept: int) -> str:
    """Warn about each file that could not be archived (it is read again next time, which is
    safe: collections are idempotent) and say where the rest went."""
    for path, why in archive.failed:
        print(
            f"annex: warning: {path} was not archived ({why}); it is read again next time",
            file=sys.stderr,
        )
    return f"{archive.archived:,} archived to {spool_dir / 'archive'}, {kept:,} left in place"


def cmd_collect_attestations(args: argparse.Namespace, settings: Settings) -> int:
    from services.attestation import collect_attestation_evidence, pending_submissions

    cluster = _attestation_cluster(args, settings)
    pending = pending_submissions(settings)
    if args.max_files is not None:
        pending = min(pending, args.max_files)
    with _spool_progress("submissions", "records", pending, quiet=args.quiet) as (shown, wait):
        outcome = collect_attestation_evidence(
            settings,
            cluster,
            on_progress=lambda stats: shown(stats.files_read, stats.records),
            on_wait=wait,
            max_files=args.max_files,
            refresh_coverage=not args.no_coverage,
        )
    stats = outcome.stats
    archived = _archive_report(outcome.archive, settings.attestation.spool_dir, len(stats.kept))
    if args.quiet:
        return 0
    _report(outcome.result, "attestation", settings)
    verdicts = ", ".join(f"{n:,} {v}" for v, n in sorted(stats.verdicts.items())) or "none"
    reasons = ", ".join(f"{r} {n:,}" for r, n in stats.reasons.most_common(8))
    print(
        f"{stats.files_read:,} files: {stats.submissions:,} submissions, "
        f"{stats.records:,} tokens ({verdicts}{'; ' + reasons if reasons else ''}), "
        f"{stats.rejected:,} rejected; {archived}",
        file=sys.stderr,
    )
    if outcome.coverage is not None:
        counts = ", ".join(f"{n:,} {k}" for k, n in outcome.coverage.items() if k != "milliseconds")
        print(f"attestation coverage marts refreshed ({counts})", file=sys.stderr)
    return 0


def cmd_collect_lineage(args: argparse.Namespace, settings: Settings) -> int:
    from services.lineage import collect_lineage_evidence, pending_lineage

    pending = pending_lineage(settings)
    if args.max_files is not None:
        pending = min(pending, args.max_files)
    total = pending + len(args.files)
    with _spool_progress("lineage files", "events", total, quiet=args.quiet) as (shown, wait):
        outcome = collect_lineage_evidence(
            settings,
            files=args.files,
            on_progress=lambda stats: shown(stats.files_read, stats.events),
            on_wait=wait,
            max_files=args.max_files,
            refresh=not args.no_refresh,
            full_refresh=args.full_refresh,
        )
    stats = outcome.stats
    archived = _archive_report(outcome.archive, settings.lineage.spool_dir, len(stats.kept))
    if args.quiet:
        return 0
    _report(outcome.result, "lineage", settings)
    reasons = ", ".join(f"{r} {n:,}" for r, n in stats.reasons.most_common(8))
    print(
        f"{stats.files_read:,} files: {stats.events:,} events "
        f"({stats.repeated:,} repeated left out), {stats.rejected:,} rejected"
        f"{' (' + reasons + ')' if reasons else ''}; {archived}",
        file=sys.stderr,
    )
    if outcome.refresh is not None:
        counts = ", ".join(f"{n:,} {k}" for k, n in outcome.refresh.items())
        print(f"lineage models refreshed ({counts})", file=sys.stderr)
    return 0


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from services.attestation import attestation_routes
    from services.intake import IntakeServer
    from services.lineage import lineage_routes

    if not args.quiet:
        logging.getLogger("annex.serve").setLevel(logging.INFO)
    routes = [*attestation_routes(settings), *lineage_routes(settings)]
    server = IntakeServer(settings, routes, host=args.host, port=args.port)
    listing = "\n".join(f"  {route}" for route in server.describe_routes())
    print(
        f"annex intake serving {server.url}\n{listing}\n"
        f"submissions are spooled to {settings.attestation.spool_dir / 'incoming'}; "
        "verify them with `annex collect attestations`\n"
        f"OpenLineage events are spooled to {settings.lineage.spool_dir / 'incoming'}; "
        "load them with `annex collect lineage`\nCtrl-C to stop.",
        flush=True,
    )
    if server.tls is None:
        print(
            "annex: warning: plain HTTP (no serve.tls_cert_file/tls_key_file): bearer tokens "
            "and evidence cross the network unencrypted unless a TLS proxy fronts this port",
            file=sys.stderr,
        )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    return 0


def cmd_probe_manifest(args: argparse.Namespace, settings: Settings) -> int:
    from probes.gpubench.manifest import manifest_yaml, probe_manifest

    objects = probe_manifest(
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        image=args.image,
        namespace=args.namespace or settings.gpubench.namespace,
        deadline_seconds=args.deadline_seconds,
    )
    text = manifest_yaml(objects)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}; apply with: kubectl apply -f {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _row_count_text(row_counts: dict[str, int]) -> str:
    return ", ".join(f"{count:,} {table}" for table, count in sorted(row_counts.items()))


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    from annex.cli.demo import simulated_attestations, simulated_lineage
    from simulator.kubernetes import SimulatedCluster
    from simulator.telemetry import TelemetryServer
    from simulator.world import build_world

    if args.nodes > 7500:
        raise ConfigError(f"--nodes {args.nodes} is above the simulator's 7,500-node limit")
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"building a simulated GPU cluster of {args.nodes} nodes (seed {args.seed})…")
    # The world's present is this moment, so that what annex collects now (the inventory,
    # telemetry, attestations pushed live) and the world's history line up in time; a rerun on
    # a warehouse that holds the demo's evidence rebuilds the same world (the same run ids, Job
    # uids and event ids), so it collects the same evidence again and changes no figure.
    world = build_world(nodes=args.nodes, seed=args.seed, now=_demo_world_clock(settings, args))
    # the simulated Prometheus's present is the world's: the same world serves the same
    # samples, however much later a rerun asks
    present = world.now.timestamp()
    with (
        SimulatedCluster(world, tls=True) as cluster,
        TelemetryServer(world, clock=lambda: present) as telemetry,
    ):
        kubeconfig = cluster.write_kubeconfig(args.out / "kubeconfig", context="annex-demo")
        print(f"serving it at {cluster.url} (kubeconfig: {kubeconfig})")
        print(f"serving its DCGM telemetry through a Prometheus API at {telemetry.prometheus_url}")
        target = ClusterSettings(
            name=DEMO_CLUSTER,
            kubeconfig=kubeconfig,
            context="annex-demo",
            prometheus_url=telemetry.prometheus_url,
        )
        config = args.out / "annex.toml"
        outcomes = [
            _run_through_dagster(settings, target, config, job)
            for job in ("cluster_inventory_job", "gpu_benchmarks_job", "gpu_telemetry_job")
        ]
        first_run = not _has_attestations(settings, target.name)
        with simulated_attestations(
            settings, world, args.out, seed=args.seed, first_run=first_run
        ) as attestations:
            print(
                f"confidential nodes pushed {attestations.accepted} of {attestations.pushed} "
                f"attestation submissions to annex's intake at {attestations.intake_url}"
                + (
                    f"; {attestations.history_files} earlier ones wait in a shared folder"
                    if attestations.history_files
                    else ""
                )
            )
            outcomes.append(
                _run_through_dagster(attestations.settings, target, config, "attestation_job")
            )
        with simulated_lineage(settings, world, args.out, cluster=target.name) as lineage:
            print(
                f"the training pipelines' OpenLineage producer sent {lineage.events} events "
                f"(shuffled, some twice) in {lineage.requests} requests to {lineage.intake_url}"
            )
            outcomes.append(_run_through_dagster(lineage.settings, target, config, "lineage_job"))
            # figures as of the simulated world's present: the evidence of its moment, so a
            # rerun on the same warehouse (the same world) gives the same figures
            present = world.now.astimezone(UTC).replace(tzinfo=None)
            as_of = replace(
                lineage.settings,
                compute=replace(
                    lineage.settings.compute, as_of=lineage.settings.compute.as_of or present
                ),
            )
            outcomes.append(_run_through_dagster(as_of, target, config, "compute_job"))
    _print_summary(settings)
    largest = _print_compute(settings)
    from services.reports import render_demo_reports

    # the per-model reports for the model with the most training compute (each takes seconds)
    render_demo_reports(lineage.settings, args.out, models=largest[:1])
    runs = "\n".join(f"dagster run: {o.run_id} ({o.job_name})" for o in outcomes)
    print(
        f"\nwarehouse: {settings.warehouse.path} "
        f"(analysts' copy: {settings.warehouse.resolved_published_path})\n"
        f"{runs}\n"
        'next: annex sql -c "select * from marts.fleet_summary"\n'
        '      annex sql -c "select * from marts.gpu_degraded"\n'
        '      annex sql -c "select * from marts.attestation_coverage_daily"\n'
        '      annex sql -c "select * from marts.lineage_eu_summary_size"\n'
        "      annex compute --model annex-lm-400b --no-refresh"
    )
    return 0


def _print_compute(settings: Settings) -> list[str]:
    """The models' cumulative training compute and where they stand against Article 51;
    returns the model names, the largest compute first."""
    from rich.console import Console
    from rich.table import Table

    from reports.numbers import terse
    from warehouse import Warehouse

    with Warehouse(settings.warehouse).reader() as con:
        rows = con.execute(
            """
            SELECT m.model_name, m.cumulative_compute_flop,
                   array_to_string(m.compute_methods, ' + '), m.energy_mwh_rounded,
                   string_agg(
                       CASE t.threshold WHEN 'gpai' THEN '10^23' WHEN 'systemic_risk' THEN '10^25'
                            ELSE 'modification' END
                       || ' ' || t.status
                       || coalesce(' ' || strftime(t.crossed_at, '%Y-%m-%d'), '')
                       || coalesce(' (projected ' || strftime(t.projected_crossing_at, '%Y-%m-%d')
                                   || ')', '')
                       || coalesce(', notify by ' || strftime(t.notification_due, '%Y-%m-%d'), ''),
                       '; ' ORDER BY t.threshold_flop)
                       FILTER (WHERE t.applies)
            FROM marts.model_compute AS m
            LEFT JOIN marts.model_compute_thresholds AS t USING (model_name)
            GROUP BY ALL
            ORDER BY m.cumulative_compute_flop DESC NULLS LAST, m.model_name
            """
        ).fetchall()
    table = Table(title="Training compute per model (annex compute --model NAME: bands, gaps)")
    for column in ("model", "FLOP", "method", "MWh", "Article 51"):
        table.add_column(column, overflow="fold")
    for model, compute, methods, mwh, thresholds in rows:
        energy = "-" if mwh is None else str(mwh)
        table.add_row(model, terse(compute), methods or "-", energy, thresholds or "-")
    Console().print(table)
    return [row[0] for row in rows]


DEMO_CLUSTER = "annex-demo"


def _demo_world_clock(settings: Settings, args: argparse.Namespace) -> datetime:
    """The simulated world's present: the one recorded in ``<out>/world.json`` by the last demo
    of the same seed and size when the warehouse holds that demo's collections, else now (and
    recorded for the next rerun)."""
    import json

    from warehouse import Warehouse

    state = args.out / "world.json"
    key = {"seed": args.seed, "nodes": args.nodes}
    try:
        recorded = json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        recorded = {}
    if (
        {k: recorded.get(k) for k in key} == key
        and "now" in recorded
        and settings.warehouse.path.exists()
    ):
        with Warehouse(settings.warehouse).writer() as con:
            row = con.execute(
                "SELECT count(*) FROM audit.collections WHERE cluster = ? AND status = 'succeeded'",
                [DEMO_CLUSTER],
            ).fetchone()
        if row and row[0]:
            print(f"rebuilding the world of the earlier demo ({state.name}: {recorded['now']})")
            return datetime.fromisoformat(recorded["now"])
    now = datetime.now(UTC).replace(microsecond=0)
    partial = state.with_name(f".{state.name}.partial")
    partial.write_text(json.dumps({**key, "now": now.isoformat()}) + "\n", encoding="utf-8")
    os.replace(partial, state)
    return now


def _has_attestations(settings: Settings, cluster: str) -> bool:
    """Whether the warehouse already holds attestation records of ``cluster`` (the demo then
    does not write its earlier submissions again)."""
    from warehouse import Warehouse

    with Warehouse(settings.warehouse).writer() as con:
        row = con.execute(
            "SELECT count(*) FROM core.attestation_records WHERE cluster = ?", [cluster]
        ).fetchone()
    return bool(row and row[0])


def _run_through_dagster(
    settings: Settings, target: ClusterSettings, config_path: Path, job_name: str
) -> RunOutcome:
    """Run ``job_name`` in-process for ``target``'s partition; raise if the run failed.

    The Dagster resources read settings from a file, so ``settings`` with only ``target`` as
    its cluster are written to ``config_path`` first.
    """
    from annex.errors import CollectionError
    from pipelines.execution import (
        dagster_instance,
        resolve_job,
        run_job,
        temporary_partition,
        write_settings,
    )

    print(f"running Dagster job {job_name} for partition {target.name}…")
    config = write_settings(settings, [target], config_path).absolute()
    job = resolve_job(config, name=job_name)
    with dagster_instance() as instance, temporary_partition(instance, target.name):
        outcome = run_job(job, instance, target.name)
    print(outcome.describe())
    if not outcome.success:
        raise CollectionError(
            f"dagster run {outcome.run_id} ({job_name}) failed at {outcome.failure}",
            hint="rerun with --debug for details; with DAGSTER_HOME set the run's logs are in "
            "the Dagster UI (make dev)",
        )
    return outcome


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.execution import dagster_instance, ensure_partitions, resolve_job, run_job

    if not settings.clusters:
        raise ConfigError(
            f"no clusters are configured (settings: {settings.source})",
            hint="add a [[clusters]] entry (name, kubeconfig, context) to annex.toml, see "
            "annex.example.toml; or try `annex demo` against a simulated cluster",
        )
    configured = [c.name for c in settings.clusters]
    names = list(dict.fromkeys(args.clusters or configured))
    unknown = [name for name in names if name not in configured]
    if unknown:
        raise ConfigError(
            f"no cluster named {unknown[0]!r} in {settings.source} "
            f"(configured: {', '.join(configured)})",
            hint="pick one of those with --cluster, or add a [[clusters]] entry for it",
        )
    config = Path(args.config or settings.source).absolute()
    job = resolve_job(config, args.select)
    failures = 0
    with dagster_instance() as instance:
        ensure_partitions(instance, names)
        # A job without partitioned assets (e.g. --select warehouse_schema) runs once.
        for name in names if job.partitions_def is not None else [None]:
            where = f" for cluster {name!r}" if name else ""
            print(f"running {job.name}{where}…", flush=True)
            outcome = run_job(job, instance, name)
            print(outcome.describe(), flush=True)
            if not outcome.success:
                failures += 1
                print(f"  failed at {outcome.failure}", file=sys.stderr)
    return 4 if failures else 0


def cmd_sql(args: argparse.Namespace, settings: Settings) -> int:
    from annex.cli.sql import run_query, run_shell

    if args.query is not None:
        return run_query(settings, args.query, output_format=args.format)
    return run_shell(settings, output_format=args.format)


def _iso_day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a day like 2025-01-31") from None


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from warehouse import Warehouse
    from warehouse.export import export_warehouse

    result = export_warehouse(Warehouse(settings.warehouse), args.dest, since=args.since)
    for table in result.tables:
        print(
            f"{table.name}: {table.rows_written:,} of {table.rows:,} rows written "
            f"({table.partitions_written} partitions, day: {table.rule})"
        )
    print(f"exported to {result.dest} (manifest: {result.manifest})")
    return 0


def cmd_spdx(args: argparse.Namespace, settings: Settings) -> int:
    from annex.errors import QueryError
    from reports.spdx import export_spdx, spdx_json
    from warehouse import Warehouse

    with Warehouse(settings.warehouse).reader() as con:
        try:
            document = export_spdx(con, args.model, model_version_id=args.checkpoint)
        except LookupError as exc:
            raise QueryError(
                str(exc),
                hint="list the models with: annex sql -c 'SELECT model_name, model_version_id, "
                "created_at FROM marts.lineage_models ORDER BY 1, 3'",
            ) from None
    text = spdx_json(document)
    if str(args.output) == "-":
        sys.stdout.buffer.write(text)
        return 0
    output = args.output or Path(f"{_file_name(args.model)}.spdx.json")
    output.write_bytes(text)
    print(f"wrote {output} ({len(document.get('@graph', [])):,} SPDX elements)")
    return 0


def _file_name(name: str) -> str:
    """A model name as a safe file name (model names come from lineage events)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip(".") or "model"


def cmd_warehouse_migrate(args: argparse.Namespace, settings: Settings) -> int:
    from warehouse import Warehouse

    applied = Warehouse(settings.warehouse).migrate()
    if applied:
        for name in applied:
            print(f"applied {name}")
    else:
        print(f"{settings.warehouse.path} is up to date")
    return 0


def cmd_warehouse_status(args: argparse.Namespace, settings: Settings) -> int:
    from warehouse import Warehouse

    print(Warehouse(settings.warehouse).status())
    return 0


def cmd_warehouse_publish(args: argparse.Namespace, settings: Settings) -> int:
    from warehouse import Warehouse

    path = Warehouse(settings.warehouse).publish()
    print(f"published {path}")
    return 0


def _print_summary(settings: Settings) -> None:
    from annex.cli.summary import print_fleet_summary

    print_fleet_summary(settings)


if __name__ == "__main__":  # pragma: no cover - `python -m annex.cli`
    sys.exit(main())

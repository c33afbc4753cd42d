"""The CLI's command group: collect evidence into the warehouse (``annex collect SOURCE``),
through ``services``."""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from annex.cli.arguments import iso_time, positive_int
from annex.cli.counts import plural
from annex.errors import ConfigError
from annex.settings import ClusterSettings, Settings


def register(commands: Any) -> None:
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
    telemetry.add_argument("--since", type=iso_time, metavar="TIME", help="window start (UTC)")
    telemetry.add_argument("--until", type=iso_time, metavar="TIME", help="window end (UTC)")
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
        type=positive_int,
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
        type=positive_int,
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


def cmd_collect_cluster(args: argparse.Namespace, settings: Settings) -> int:
    targets = _collection_targets(args, settings)
    failures = 0
    for target in targets:
        result = _collect_one(target, settings, quiet=args.quiet)
        if result.status != "succeeded":
            failures += 1
    if not args.quiet:
        from annex.cli.summary import print_fleet_summary

        print_fleet_summary(settings)
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
        "(`annex collect cluster`), so attestations join with its nodes",
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
        f"{plural(stats.files_read, 'file')}: {plural(stats.submissions, 'submission')}, "
        f"{plural(stats.records, 'token')} ({verdicts}{'; ' + reasons if reasons else ''}), "
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
        f"{plural(stats.files_read, 'file')}: {plural(stats.events, 'event')} "
        f"({stats.repeated:,} repeated left out), {stats.rejected:,} rejected"
        f"{' (' + reasons + ')' if reasons else ''}; {archived}",
        file=sys.stderr,
    )
    if outcome.refresh is not None:
        counts = ", ".join(f"{n:,} {k}" for k, n in outcome.refresh.items())
        print(f"lineage models refreshed ({counts})", file=sys.stderr)
    return 0


def _row_count_text(row_counts: dict[str, int]) -> str:
    return ", ".join(f"{count:,} {table}" for table, count in sorted(row_counts.items()))

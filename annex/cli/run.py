"""The CLI's command group: run a Dagster job in-process (``annex run``), through
``pipelines.execution``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annex.cli.counts import plural
from annex.errors import ConfigError
from annex.settings import Settings

if TYPE_CHECKING:
    from pipelines.execution import RunOutcome


def register(commands: Any) -> None:
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


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.execution import (
        LEFT_OUT_TAG,
        dagster_instance,
        ensure_partitions,
        resolve_job,
        run_job,
    )

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
    if left_out := job.tags.get(LEFT_OUT_TAG):
        print(
            f"note: left out of this per-cluster run (another partitioning; they run on their own "
            f"schedule, or with `annex report`): {left_out}",
            file=sys.stderr,
        )
    failures = 0
    with dagster_instance() as instance:
        ensure_partitions(instance, names)
        # A job without partitioned assets (e.g. --select warehouse_schema) runs once.
        for name in names if job.partitions_def is not None else [None]:
            where = f" for cluster {name!r}" if name else ""
            print(f"running {job.name}{where}…", flush=True)
            outcome = run_job(job, instance, name)
            print(describe_run(outcome), flush=True)
            if not outcome.success:
                failures += 1
                print(f"  failed at {outcome.failure}", file=sys.stderr)
    return 4 if failures else 0


def describe_run(outcome: RunOutcome) -> str:
    """One line for the terminal about a Dagster run: its id, outcome and check tally."""
    where = f" for cluster {outcome.partition!r}" if outcome.partition else ""
    status = "succeeded" if outcome.success else "failed"
    checks = outcome.checks
    passed = sum(check.passed for check in checks)
    failed = [f"{c.name} ({c.severity})" for c in checks if not c.passed]
    if not checks:
        tally = "no checks ran"
    elif failed:
        tally = f"{passed} of {plural(len(checks), 'check')} passed; failed: " + ", ".join(failed)
    else:
        tally = f"{'' if len(checks) == 1 else 'all '}{plural(len(checks), 'check')} passed"
    return f"dagster run {outcome.run_id} ({outcome.job_name}{where}): {status}, {tally}"

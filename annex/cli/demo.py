"""The demo's pushed evidence: attestations from simulated issuers and agents, lineage events
from a simulated OpenLineage producer, both through annex's intake.

``annex demo`` runs every evidence source against the simulator. For attestations that means
what a real deployment has: issuers whose key sets annex pins (served over HTTP and fetched
from the configured URL), the intake (``annex serve``'s server, over TLS with a bearer token)
that the nodes' agents push to with annex-issued nonces, and a shared folder of earlier
submissions written by a DaemonSet (the simulator's history). The collection itself is the
Dagster ``attestation_job``, as in production. For lineage it means the training pipelines'
OpenLineage producer (openlineage-python's HTTP transport) posting every training run's events
to the intake, out of order and with duplicates, then the Dagster ``lineage_job``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import secrets
import ssl
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annex.cli.arguments import positive_int
from annex.cli.counts import noun, plural
from annex.cli.hints import annex_command, next_steps
from annex.cli.world_features import add_features_option, chosen_features, describe
from annex.errors import ConfigError
from annex.settings import ClusterSettings, Settings, load_settings

if TYPE_CHECKING:
    from annex.cli.stages import Stages
    from pipelines.execution import RunOutcome

HISTORY_DAYS = 1
"""Days of earlier submissions the demo's shared folder holds."""
HISTORY_NODES = 40
"""Nodes whose earlier submissions it holds (those with planned faults first): enough to show
every verdict without making the demo wait on minting and verifying a big world's history."""
NONCE_KEY_ENV = "ANNEX_ATTESTATION_NONCE_KEY"
INTAKE_TOKEN_ENV = "ANNEX_INTAKE_TOKEN"


@dataclass(frozen=True)
class DemoAttestations:
    """What the demo's agents delivered, for its closing summary."""

    settings: Settings
    intake_url: str
    pushed: int
    accepted: int
    history_files: int


@dataclass(frozen=True)
class DemoLineage:
    """What the demo's producer delivered, for its closing summary."""

    settings: Settings
    intake_url: str
    events: int
    requests: int


SIMULATED_MODELS = Path(__file__).resolve().parents[2] / "simulator" / "models"
"""The metadata files of the simulated world's models (the demo's ``[models] dir``)."""

LINEAGE_BATCH = 100
"""Events per request the demo's producer sends (a JSON array to /api/v1/lineage/batch)."""


@contextlib.contextmanager
def simulated_lineage(
    settings: Settings, world: object, out: Path, *, cluster: str
) -> Iterator[DemoLineage]:
    """Run annex's intake with the lineage routes on loopback and let the simulated training
    pipelines of ``world`` deliver their OpenLineage events to it (their Kubernetes facets
    name ``cluster``). Yields ``settings`` changed to read that spool and the simulated
    models' metadata files. A rerun delivers the
    same events again: annex stores each once (its event id is the content's hash)."""
    from annex.settings import ServeSettings
    from services.intake import IntakeServer
    from services.lineage import lineage_routes
    from simulator.lineage.producer import build_events, deliver

    os.environ.setdefault(INTAKE_TOKEN_ENV, secrets.token_urlsafe(32))
    folder = (out / "lineage").absolute()
    demo = replace(
        settings,
        lineage=replace(settings.lineage, spool_dir=folder / "spool", watch_dirs=()),
        serve=ServeSettings(host="127.0.0.1", port=0, token_env=INTAKE_TOKEN_ENV),
        models=replace(settings.models, dir=SIMULATED_MODELS),
    )
    events = build_events(world, cluster=cluster)  # type: ignore[arg-type]

    def world_now() -> datetime:
        return world.now  # type: ignore[attr-defined,no-any-return]

    with IntakeServer(demo, lineage_routes(demo), clock=world_now) as intake:
        delivery = deliver(
            events,
            intake.url,
            token=os.environ[INTAKE_TOKEN_ENV],
            batch_size=LINEAGE_BATCH,
            shuffle_seed=int(getattr(world, "seed", 0)),
        )
        yield DemoLineage(demo, intake.url, len(delivery.order), delivery.requests)


@contextlib.contextmanager
def simulated_attestations(
    settings: Settings, world: object, out: Path, *, seed: int, first_run: bool
) -> Iterator[DemoAttestations]:
    """Serve the simulated issuers' key sets, run annex's intake, let every confidential node
    of ``world`` push one submission to it, and (on the ``first_run`` of a warehouse) write
    ``HISTORY_DAYS`` of earlier submissions of ``HISTORY_NODES`` nodes to a shared folder.
    Yields ``settings`` changed to trust those issuers and read that spool; the issuers' key
    server stays up meanwhile, so the collection fetches the pinned key sets from their
    configured URL.

    Secrets the intake and the collection share (the nonce key, the intake token, the local
    verifier's secret) are set in this process's environment, by name only in the settings.
    """
    from services.attestation import attestation_routes
    from services.intake import IntakeServer
    from simulator.attestation import tokens
    from simulator.attestation.agent import AttestingAgent, write_history
    from simulator.attestation.issuers import LOCAL_SECRET, LOCAL_SECRET_ENV, IssuerSet
    from simulator.attestation.server import AttestationIssuerServer
    from simulator.kubernetes.cluster import TLS_CERTIFICATE, TLS_KEY

    folder = (out / "attestation").absolute()
    trust = folder / "trust"
    history = folder / "shared"
    os.environ.setdefault(NONCE_KEY_ENV, secrets.token_hex(32))
    os.environ.setdefault(INTAKE_TOKEN_ENV, secrets.token_urlsafe(32))
    os.environ.setdefault(LOCAL_SECRET_ENV, LOCAL_SECRET.decode())
    issuers = IssuerSet.create(seed)
    issuers.write_trust(trust)
    with AttestationIssuerServer(issuers) as key_server:
        config = folder / "annex-attestation.toml"
        config.write_text(
            "[serve]\n"
            "port = 0\n"
            f'tls_cert_file = "{TLS_CERTIFICATE}"\n'
            f'tls_key_file = "{TLS_KEY}"\n'
            f'token_env = "{INTAKE_TOKEN_ENV}"\n\n'
            "[attestation]\n"
            f'spool_dir = "{folder / "spool"}"\n'
            f'watch_dirs = ["{history}"]\n'
            f'jwks_cache_dir = "{folder / "jwks-cache"}"\n'
            f'nonce_key_env = "{NONCE_KEY_ENV}"\n\n'
            + issuers.settings_toml(trust, jwks_base_url=key_server.url)
            + tokens.policy_toml(),
            encoding="utf-8",
        )
        loaded = load_settings(config, env={})
        demo = replace(settings, attestation=loaded.attestation, serve=loaded.serve)
        history_files = 0
        if first_run:
            history_files = write_history(
                world,  # type: ignore[arg-type]
                issuers,
                history,
                days=HISTORY_DAYS,
                max_nodes=HISTORY_NODES,
            )

        def world_now() -> datetime:
            return world.now  # type: ignore[attr-defined,no-any-return]

        client_tls = ssl.create_default_context(cafile=TLS_CERTIFICATE)
        with IntakeServer(demo, attestation_routes(demo), clock=world_now) as intake:
            agent = AttestingAgent(
                world,  # type: ignore[arg-type]
                issuers,
                intake.url,
                os.environ[INTAKE_TOKEN_ENV],
                verify_tls=client_tls,
                clock=world_now,
            )
            statuses = agent.run_once()
            yield DemoAttestations(
                settings=demo,
                intake_url=intake.url,
                pushed=len(statuses),
                accepted=sum(1 for status in statuses if status == 202),
                history_files=history_files,
            )


# -- the command -------------------------------------------------------------------------

DEMO_DEFAULT_NODES = 500
DEMO_CLUSTER = "annex-demo"


def register(commands: Any) -> None:
    demo = commands.add_parser(
        "demo",
        help="simulate a GPU cluster, collect it into the warehouse, print the fleet summary",
        description=(
            "Build a seeded, simulated GPU cluster (Kubernetes API, DCGM telemetry through a "
            "Prometheus API, attestation issuers and agents, an OpenLineage producer), run "
            "every collection through the same Dagster jobs as production into the warehouse "
            "(ANNEX_WAREHOUSE or [warehouse] path), then print the fleet summary, each "
            "model's training compute and render the reports. A few minutes at the default "
            "size. Rerun with the same --seed and --nodes on the same warehouse: the same "
            "world, the same figures. Some findings are planted by the simulator and are "
            "marked as expected."
        ),
    )
    demo.add_argument(
        "--nodes",
        type=positive_int,
        default=DEMO_DEFAULT_NODES,
        metavar="N",
        help=f"GPU cluster size in nodes, 1-7500 (default: {DEMO_DEFAULT_NODES}; 40 takes "
        "about a minute)",
    )
    demo.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="N",
        help="world seed: the same seed, size and features build the same world (default: 0)",
    )
    add_features_option(demo)
    demo.add_argument(
        "--out",
        type=Path,
        default=Path(".demo"),
        metavar="DIR",
        help="folder for the simulator's kubeconfig, the demo's settings, spools and reports "
        "(default: .demo)",
    )
    demo.add_argument(
        "--history-days",
        type=int,
        default=HISTORY_REPLAY_DAYS,
        metavar="N",
        help="days of the cluster's past to collect first, one snapshot every "
        "--history-step-hours at its simulated time (default: "
        f"{HISTORY_REPLAY_DAYS}; 0: only the present)",
    )
    demo.add_argument(
        "--history-step-hours",
        type=float,
        default=HISTORY_STEP_HOURS,
        metavar="H",
        help="hours between the past's snapshots, as a scheduled annex's interval (default: "
        f"{HISTORY_STEP_HOURS}; 1 is a deployment's hourly schedule, about 0.9 s a snapshot at 500 "
        "nodes)",
    )
    demo.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines on stderr (the results still go to stdout)",
    )
    demo.set_defaults(run=cmd_demo)


COLLECTION_JOBS = ("cluster_inventory_job", "gpu_benchmarks_job", "gpu_telemetry_job")
"""The pulled evidence, collected first, in this order (the later jobs join with it)."""
DEMO_STAGES = len(COLLECTION_JOBS) + 8
"""The world, its past, the pulled collections, attestations pushed then collected, lineage
sent then collected, compute, the reports: the demo's progress counts these."""

HISTORY_REPLAY_DAYS = 30
"""Days of the simulated cluster's past the demo collects before its present."""
HISTORY_STEP_HOURS = 48
"""Hours between the past's snapshots (``--history-step-hours``). Measured on this project's
2-core machine: one inventory snapshot of the default 500-node world costs about 0.86 s quiet
(72 hourly snapshots of 3 days took 62 s; about 1.65 s under load 4), and the default demo
(15 snapshots) took 141 s. Hourly for 30 days (720 snapshots) would take about 10 minutes, over
the demo's 3-minute budget; one a day took it to 2 min 58 s under load. Capacity is continuous
between snapshots (slowly changing node rows) and allocations are intervals from the pods' own
timestamps, so every day still has its figures; finished pods stay listed a day or two (as the
world's Jobs' TTL), so a snapshot every two days sees most of them; a cordon shorter than the
step may go unseen. ``--history-step-hours 1`` replays what an hourly schedule records."""


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    from annex.cli.expected import describe_planted
    from annex.cli.stages import Stages
    from simulator.kubernetes import SimulatedCluster
    from simulator.telemetry import TelemetryServer
    from simulator.world import build_world
    from simulator.world.catalog import POOL_LABEL

    if args.nodes > 7500:
        raise ConfigError(f"--nodes {args.nodes} is above the simulator's 7,500-node limit")
    if not (math.isfinite(args.history_step_hours) and args.history_step_hours >= 1 / 60):
        raise ConfigError(
            f"--history-step-hours {args.history_step_hours:g} is not a number of hours of at "
            "least one minute (1/60)",
            hint="give the hours between the past's snapshots, e.g. 1 (hourly) or 24 (daily)",
        )
    features = chosen_features(args.nodes, args.features)
    args.out.mkdir(parents=True, exist_ok=True)
    stages = Stages(DEMO_STAGES, quiet=args.quiet)
    # The world's present is this moment, so that what annex collects now (the inventory,
    # telemetry, attestations pushed live) and the world's history line up in time; a rerun on
    # a warehouse that holds the demo's evidence rebuilds the same world (the same run ids, Job
    # uids and event ids), so it collects the same evidence again and changes no figure.
    clock = _demo_world_clock(settings, args, features)
    with stages.stage(
        f"building a simulated GPU cluster of {plural(args.nodes, 'node')} "
        f"(seed {args.seed}, {describe(features)})"
    ):
        world = build_world(nodes=args.nodes, seed=args.seed, now=clock, features=features)
        # its past, built once: the replay serves its objects, and the telemetry server reads
        # the GPUs' past holdings from it (`world.history`), so the past's samples agree
        history = _world_history(world, args.history_days)
    # the simulated Prometheus's present is the world's: the same world serves the same
    # samples, however much later a rerun asks
    present = world.now.timestamp()
    # the simulated nodes name their pool with the simulator's own label, as an on-premises
    # cluster names it with its own: the demo configures it as such a cluster's owner would
    if not settings.kubernetes.pool_labels:
        settings = replace(
            settings, kubernetes=replace(settings.kubernetes, pool_labels=(POOL_LABEL,))
        )
    with (
        SimulatedCluster(world, tls=True) as cluster,
        TelemetryServer(world, clock=lambda: present) as telemetry,
    ):
        kubeconfig = cluster.write_kubeconfig(args.out / "kubeconfig", context="annex-demo")
        print(
            f"simulated GPU cluster of {plural(args.nodes, 'node')} (seed {args.seed}, "
            f"{describe(features)}) serving at {cluster.url} (kubeconfig: {kubeconfig})"
        )
        print(f"serving its DCGM telemetry through a Prometheus API at {telemetry.prometheus_url}")
        target = ClusterSettings(
            name=DEMO_CLUSTER,
            kubeconfig=kubeconfig,
            context="annex-demo",
            prometheus_url=telemetry.prometheus_url,
        )
        with stages.stage(
            f"collecting the cluster's past ({plural(args.history_days, 'day')}, one snapshot "
            f"every {_hours(args.history_step_hours)} at its simulated time)"
        ):
            replayed = _replay_history(
                settings, history, cluster, target, args.history_step_hours, quiet=args.quiet
            )
        if replayed:
            print(f"collected {plural(replayed, 'snapshot')} of the cluster's past")
        config = args.out / "annex.toml"
        # the telemetry window ends at the world's present, not at the wall clock: a rerun
        # reads the same samples, so it gives the same figures
        at_present = replace(
            settings, telemetry=replace(settings.telemetry, window_end=_naive_utc(world.now))
        )
        outcomes = [
            _run_through_dagster(at_present, target, config, job, stages) for job in COLLECTION_JOBS
        ]
        first_run = not _has_attestations(settings, target.name)
        with contextlib.ExitStack() as pushed:
            with stages.stage("pushing the confidential nodes' attestations to the intake"):
                attestations = pushed.enter_context(
                    simulated_attestations(
                        settings, world, args.out, seed=args.seed, first_run=first_run
                    )
                )
            print(
                f"confidential nodes pushed {attestations.accepted} of "
                f"{plural(attestations.pushed, 'attestation submission')} to annex's intake at "
                f"{attestations.intake_url}"
                + (
                    f"; {plural(attestations.history_files, 'earlier one')} "
                    f"{noun(attestations.history_files, 'waits', 'wait')} in a shared folder"
                    if attestations.history_files
                    else ""
                )
            )
            outcomes.append(
                _run_through_dagster(
                    attestations.settings, target, config, "attestation_job", stages
                )
            )
        with contextlib.ExitStack() as sent:
            with stages.stage("sending the training pipelines' OpenLineage events"):
                lineage = sent.enter_context(
                    simulated_lineage(settings, world, args.out, cluster=target.name)
                )
            print(
                f"the training pipelines' OpenLineage producer sent "
                f"{plural(lineage.events, 'event')} (shuffled, some twice) in "
                f"{plural(lineage.requests, 'request')} to {lineage.intake_url}"
            )
            outcomes.append(
                _run_through_dagster(lineage.settings, target, config, "lineage_job", stages)
            )
            # figures as of the simulated world's present: the evidence of its moment, so a
            # rerun on the same warehouse (the same world) gives the same figures
            present_day = _naive_utc(world.now)
            as_of = replace(
                lineage.settings,
                compute=replace(
                    lineage.settings.compute, as_of=lineage.settings.compute.as_of or present_day
                ),
            )
            outcomes.append(_run_through_dagster(as_of, target, config, "compute_job", stages))
    from annex.cli.summary import print_fleet_summary

    print_fleet_summary(settings)
    print(describe_planted(world))
    largest = _print_compute(settings)
    from services.reports import render_demo_reports

    # the per-model reports for the model with the most training compute (each takes seconds)
    with stages.stage("rendering the reports"):
        render_demo_reports(lineage.settings, args.out, models=largest[:1])
    runs = "\n".join(f"dagster run: {o.run_id} ({o.job_name})" for o in outcomes)
    model = largest[0] if largest else "NAME"
    print(
        f"\nwarehouse: {settings.warehouse.path} "
        f"(analysts' copy: {settings.warehouse.resolved_published_path})\n"
        f"{runs}\n"
        + next_steps(
            'sql -c "select * from marts.fleet_summary"',
            'sql -c "select * from marts.gpu_degraded"',
            'sql -c "select * from marts.attestation_coverage_daily"',
            'sql -c "select * from marts.lineage_eu_summary_size"',
            f"compute --model {model} --no-refresh",
        )
    )
    return 0


def _world_history(world: Any, days: int) -> Any:
    """The world's past of ``days`` (a ``WorldHistory``, attached to the world as its
    ``history``)."""
    from simulator.world.history import WorldHistory

    if days < 0:
        raise ConfigError(f"--history-days {days} is negative: give 0 or more days")
    return WorldHistory(world, days=days)


def _replay_history(
    settings: Settings,
    history: Any,
    cluster: Any,
    target: ClusterSettings,
    step_hours: float,
    *,
    quiet: bool,
) -> int:
    """Live through the world's past as a scheduled annex would have: at every
    ``step_hours`` from ``days`` before the world's present, move the simulated
    cluster's clock there (``WorldHistory.objects_at``) and run annex's normal cluster
    collection, which stamps the snapshot with the API server's ``Date``. Then move the clock
    to the present, for the demo's own collection. Moments at or before the cluster's last
    recorded collection are skipped: a rerun on the same warehouse (the same world, the same
    moments) records nothing again. Returns how many snapshots it collected."""
    from services.inventory import collect_cluster_inventory
    from warehouse import Warehouse

    world, days = history.world, history.days
    last = _last_collected(settings, target.name)
    moments = [m for m in history.moments(step_hours) if last is None or _naive_utc(m) > last]
    wh = Warehouse(settings.warehouse)
    demo = replace(settings, clusters=(target,))
    for number, moment in enumerate(moments, start=1):
        cluster.set_clock(moment, history.objects_at(moment))
        collect_cluster_inventory(demo, wh, target, publish=False, in_process=True)
        if not quiet:
            day = min(days, int((moment.timestamp() - history.start) // 86400) + 1)
            print(
                f"history: day {day} of {days} ({moment:%Y-%m-%d %H:%M} UTC, "
                f"snapshot {number} of {len(moments)})",
                file=sys.stderr,
                flush=True,
            )
    cluster.set_clock(world.now, history.objects_at(world.now))
    return len(moments)


def _hours(hours: float) -> str:
    """``hour``, ``48 hours``, ``1.5 hours``: the step between the past's snapshots."""
    return "hour" if hours == 1 else f"{hours:g} hours"


def _last_collected(settings: Settings, cluster: str) -> datetime | None:
    """The moment of the cluster's last recorded inventory snapshot, if any."""
    from warehouse import Warehouse

    if not settings.warehouse.path.exists():
        return None
    with Warehouse(settings.warehouse).writer() as con:
        row = con.execute(
            "SELECT max(coalesce(collected_at, started_at)) FROM audit.collections "
            "WHERE source = 'kubernetes' AND cluster = ? AND status = 'succeeded'",
            [cluster],
        ).fetchone()
    return row[0] if row else None


def _print_compute(settings: Settings) -> list[str]:
    """The models' cumulative training compute and where they stand against Article 51;
    returns the model names, the largest compute first."""
    from rich.table import Table

    from annex.cli.expected import EXPECTED_CHECK_FAILURES, NOTE
    from annex.cli.tables import Screen
    from reports.numbers import terse
    from services.compute import compute_overview

    rows = compute_overview(settings)
    table = Table(
        title=f"Training compute per model ({annex_command('compute --model NAME')}: bands, gaps)",
        title_justify="left",
        caption=f"{NOTE}: {EXPECTED_CHECK_FAILURES['compute_thresholds_clear']}",
        caption_justify="left",
    )
    for column in ("model", "FLOP", "method", "MWh", "Article 51"):
        table.add_column(column)
    for model, compute, methods, mwh, thresholds in rows:
        energy = "-" if mwh is None else str(mwh)
        table.add_row(model, terse(compute), methods or "-", energy, thresholds or "-")
    Screen().print_table(table)
    return [row[0] for row in rows]


def _naive_utc(moment: datetime) -> datetime:
    """A zoned moment as the naive UTC that settings hold."""
    return moment.astimezone(UTC).replace(tzinfo=None)


def _demo_world_clock(
    settings: Settings, args: argparse.Namespace, features: frozenset[str]
) -> datetime:
    """The simulated world's present: the one recorded in ``<out>/world.json`` by the last demo
    of the same seed, size and features when the warehouse holds that demo's collections, else
    now (and recorded for the next rerun)."""

    from warehouse import Warehouse

    state = args.out / "world.json"
    key = {"seed": args.seed, "nodes": args.nodes, "features": sorted(features)}
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
    settings: Settings,
    target: ClusterSettings,
    config_path: Path,
    job_name: str,
    stages: Stages,
) -> RunOutcome:
    """Run ``job_name`` in-process for ``target``'s partition; raise if the run failed.

    The Dagster resources read settings from a file, so ``settings`` with only ``target`` as
    its cluster are written to ``config_path`` first. The run's line says which failed checks
    the simulated world fails on purpose (``annex.cli.expected``).
    """
    from annex.cli.expected import check_notes
    from annex.cli.run import describe_run
    from annex.errors import CollectionError
    from pipelines.execution import (
        cluster_partition,
        dagster_instance,
        resolve_job,
        run_job,
        write_settings,
    )

    with stages.stage(f"running Dagster job {job_name} for partition {target.name}"):
        config = write_settings(settings, [target], config_path).absolute()
        job = resolve_job(config, name=job_name)
        with dagster_instance() as instance, cluster_partition(instance, target.name):
            outcome = run_job(job, instance, target.name)
    print(describe_run(outcome))
    for note in check_notes(outcome):
        print(note)
    if not outcome.success:
        raise CollectionError(
            f"dagster run {outcome.run_id} ({job_name}) failed at {outcome.failure}",
            hint="rerun with --debug for details; with DAGSTER_HOME set the run's logs are in "
            "the Dagster UI (make dev)",
        )
    return outcome

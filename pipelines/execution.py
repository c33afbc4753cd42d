"""Run annex's Dagster jobs in-process, for ``annex demo`` and ``annex run``.

Why through Dagster at all: a CLI run then gets what a scheduled run gets (a run id, the
blocking asset checks before publishing, the ``duckdb`` pool, retries, and history in the UI
when ``DAGSTER_HOME`` is set) without a daemon or webserver. The CLI imports this module
lazily: importing Dagster takes seconds, and ``annex --help`` should not.

The job is the code location's own (``pipelines.definitions.build_defs``), with its resources
pointed at one settings file, so the CLI and ``dagster dev`` cannot drift apart.
"""

from __future__ import annotations

import fcntl
import json
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import dagster as dg
from sqlalchemy.exc import IntegrityError

from annex.errors import ConfigError
from annex.settings import TOPOLOGY_PRESETS, ClusterSettings, Settings
from pipelines.definitions import build_defs
from pipelines.defs.cluster_state.schedules import inventory_job
from pipelines.partitions import CLUSTERS_PARTITIONS_NAME

T = TypeVar("T")

SELECTED_JOB = "annex_run_job"
LEFT_OUT_TAG = "annex/left_out"
"""Tag of a selected job: the selected assets it cannot run (another partitioning)."""
"""The name of the job ``annex run --select`` builds; unselected, it runs ``inventory_job``."""

QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
"""Dagster's console logger prints every event, failures with tracebacks; the CLI prints its
own summary instead, and the full log stays in the instance (the UI, with ``DAGSTER_HOME``)."""

SELECTION_HINT = (
    "use Dagster's asset selection syntax, e.g. 'cluster_inventory', "
    "'key:cluster_inventory+' or 'group:cluster_state'"
)


@dataclass(frozen=True)
class CheckOutcome:
    """One asset check's verdict in a run."""

    name: str
    passed: bool
    severity: str


@dataclass(frozen=True)
class RunOutcome:
    """What the CLI reports about one Dagster run."""

    run_id: str
    job_name: str
    partition: str | None
    success: bool
    checks: tuple[CheckOutcome, ...]
    failure: str | None
    """The first failing step and its error message, without a traceback."""

    @property
    def checks_passed(self) -> bool:
        return all(check.passed for check in self.checks)


@contextmanager
def dagster_instance() -> Iterator[dg.DagsterInstance]:
    """The persistent instance of ``$DAGSTER_HOME`` (runs show in the UI), else a throwaway one.

    The persistent instance also applies ``.dagster_home/dagster.yaml``: the ``duckdb`` pool of
    limit 1 and run retries.
    """
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        with dg.DagsterInstance.ephemeral() as instance:
            yield instance
        return
    if not Path(home).is_absolute() or not Path(home).is_dir():
        raise ConfigError(
            f"DAGSTER_HOME={home} is not an absolute path to an existing folder",
            hint="point it at the repository's .dagster_home (as make dev does), or unset it "
            "to run with a throwaway Dagster instance",
        )
    # Two annex processes starting at once on a new DAGSTER_HOME would both create its SQLite
    # storage and collide; creating (and first touching) it under a file lock serialises that.
    with _exclusive(Path(home) / ".annex-instance.lock"):
        instance = dg.DagsterInstance.get()
        instance.get_dynamic_partitions(CLUSTERS_PARTITIONS_NAME)
    with instance:
        yield instance


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_partitions(instance: dg.DagsterInstance, names: Sequence[str]) -> None:
    """Add a ``clusters`` partition for each name that lacks one (the discovery sensor's job,
    done here too so that a CLI run never waits for the sensor)."""
    existing = set(instance.get_dynamic_partitions(CLUSTERS_PARTITIONS_NAME))
    new = [name for name in dict.fromkeys(names) if name not in existing]
    if not new:
        return
    try:
        instance.add_dynamic_partitions(CLUSTERS_PARTITIONS_NAME, new)
    except IntegrityError:
        # Another process (a second `annex run`, the discovery sensor) added one of them at the
        # same moment: fine, as long as they all exist now.
        existing = set(instance.get_dynamic_partitions(CLUSTERS_PARTITIONS_NAME))
        if not all(name in existing for name in new):
            raise


@contextmanager
def cluster_partition(instance: dg.DagsterInstance, name: str) -> Iterator[None]:
    """A ``clusters`` partition for a run (e.g. the demo's simulated cluster), kept afterwards.

    Kept so that ``make dev`` after ``make demo`` shows the demo cluster's partition with its
    materialisations in the instance the demo recorded its runs in. The hourly schedules are
    stopped by default; turned on, they would try to collect the demo cluster once its
    simulator is gone, and the run-failure sensor would record that gap as it should.
    """
    ensure_partitions(instance, [name])
    yield


def resolve_job(
    config_path: Path, selection: str | None = None, *, name: str | None = None
) -> dg.JobDefinition:
    """The job to run: the job called ``name`` (default ``inventory_job``), or one over
    ``selection`` (Dagster selection syntax).

    Raises ``ConfigError`` when the selection is invalid or selects nothing.
    """
    defs = build_defs(str(config_path))
    if selection is None:
        return _quietly(lambda: defs.resolve_job_def(name or inventory_job.name))
    try:
        # (the warehouse's tables are external assets in the catalog: a job runs their writers)
        chosen = dg.AssetSelection.from_string(selection).materializable()
        chosen, left_out = _per_cluster_part(chosen, defs)
        tags = {LEFT_OUT_TAG: ", ".join(left_out)} if left_out else None
        job = dg.define_asset_job(SELECTED_JOB, selection=chosen, tags=tags)
        return _quietly(
            lambda: dg.Definitions.merge(defs, dg.Definitions(jobs=[job])).resolve_job_def(
                SELECTED_JOB
            )
        )
    except Exception as exc:  # Dagster raises several kinds for bad syntax or empty selections
        assets = ", ".join(
            sorted(
                key.to_user_string() for key in defs.resolve_asset_graph().materializable_asset_keys
            )
        )
        raise ConfigError(
            f"--select {selection!r} selects nothing runnable ({_first_line(exc)}); "
            f"assets: {assets}",
            hint=SELECTION_HINT,
        ) from None


def _per_cluster_part(
    chosen: dg.AssetSelection, defs: dg.Definitions
) -> tuple[dg.AssetSelection, list[str]]:
    """The part of a selection one ``annex run`` can execute, and the assets left out: it runs
    the assets partitioned by cluster and the unpartitioned ones. A selection such as
    ``key:cluster_inventory+`` reaches the monthly reports too, and one Dagster job cannot mix
    partitionings: those are left out (they run on their own schedule, or with
    ``annex report``), and the job's ``LEFT_OUT_TAG`` names them for the user."""
    graph = defs.resolve_asset_graph()
    keys = chosen.resolve(graph)
    other = sorted(
        key.to_user_string()
        for key in keys
        if (parts := graph.get(key).partitions_def) is not None
        and getattr(parts, "name", None) != CLUSTERS_PARTITIONS_NAME
    )
    if not other or len(other) == len(keys):
        return chosen, []
    kept = [key for key in keys if key.to_user_string() not in other]
    return dg.AssetSelection.assets(*kept), other


def run_job(
    job: dg.JobDefinition, instance: dg.DagsterInstance, partition: str | None
) -> RunOutcome:
    """Execute ``job`` in this process for one partition (or none); never raises on failure."""
    if job.partitions_def is None:
        partition = None
    result = _quietly(
        lambda: job.execute_in_process(
            run_config=QUIET_RUN_CONFIG,
            instance=instance,
            partition_key=partition,
            raise_on_error=False,
        )
    )
    checks = tuple(
        CheckOutcome(name=e.check_name, passed=e.passed, severity=e.severity.value)
        for e in result.get_asset_check_evaluations()
    )
    return RunOutcome(
        run_id=result.run_id,
        job_name=job.name,
        partition=partition,
        success=result.success,
        checks=checks,
        failure=None if result.success else _failure_message(result),
    )


def write_settings(settings: Settings, clusters: Sequence[ClusterSettings], path: Path) -> Path:
    """Write ``settings`` with only ``clusters`` as an annex.toml the Dagster resources read.

    The resources load settings from a file (so ``dagster dev`` and a run re-executed from the
    UI read the same thing); the demo's cluster exists only in memory, hence this file. Paths
    are written absolute so that the file means the same wherever it is read from.
    """
    wh = settings.warehouse
    k8s = settings.kubernetes
    lines = ["# written by annex for a Dagster run; edits are overwritten", "", "[warehouse]"]
    lines.append(f"path = {_toml(wh.path.absolute())}")
    if wh.published_path is not None:
        lines.append(f"published_path = {_toml(wh.published_path.absolute())}")
    lines.append(f"lock_timeout_seconds = {_toml(wh.lock_timeout_seconds)}")
    lines += ["", "[kubernetes]"]
    for key in (
        "page_size",
        "request_timeout_seconds",
        "connect_timeout_seconds",
        "max_list_restarts",
        "max_retries",
        "max_backoff_seconds",
        "topology_profile",
        "pool_labels",
    ):
        lines.append(f"{key} = {_toml(getattr(k8s, key))}")
    lines += ["", "[kubernetes.balloons]"]
    lines.append(f"priority_below = {_toml(k8s.balloons.priority_below)}")
    lines.append(f"priority_classes = {_toml(k8s.balloons.priority_classes)}")
    for section, values in (("telemetry", settings.telemetry), ("gpubench", settings.gpubench)):
        lines += ["", f"[{section}]"]
        lines += [
            f"{key} = {_toml(value)}" for key, value in vars(values).items() if value is not None
        ]
    for name, levels in settings.topology_profiles.items():
        if TOPOLOGY_PRESETS.get(name) != levels:
            lines += ["", f"[topology.profiles.{_toml(name)}]", f"levels = {_toml(levels)}"]
    lines += _attestation_lines(settings)
    lines += _lineage_lines(settings)
    lines += ["", "[models]", f"dir = {_toml(settings.models.dir.absolute())}"]
    if settings.export.dir is not None:
        lines += ["", "[export]", f"dir = {_toml(settings.export.dir.absolute())}"]
    lines += ["", "[retention]"]
    lines += [
        f"{key} = {_toml(value.absolute() if key == 'dir' else value)}"
        for key, value in vars(settings.retention).items()
        if value is not None
    ]
    lines += ["", "[compute]"]
    lines += [
        f"{key} = {_toml(value)}"
        for key, value in vars(settings.compute).items()
        if value is not None
    ]
    for cluster in clusters:
        lines += ["", "[[clusters]]", f"name = {_toml(cluster.name)}"]
        if cluster.kubeconfig is not None:
            lines.append(f"kubeconfig = {_toml(cluster.kubeconfig.absolute())}")
        if cluster.context is not None:
            lines.append(f"context = {_toml(cluster.context)}")
        if cluster.in_cluster:
            lines.append("in_cluster = true")
        if cluster.topology_profile is not None:
            lines.append(f"topology_profile = {_toml(cluster.topology_profile)}")
        if cluster.prometheus_url is not None:
            lines.append(f"prometheus_url = {_toml(cluster.prometheus_url)}")
        if cluster.prometheus_token_env is not None:
            lines.append(f"prometheus_token_env = {_toml(cluster.prometheus_token_env)}")
        if cluster.prometheus_username is not None:
            lines.append(f"prometheus_username = {_toml(cluster.prometheus_username)}")
        if cluster.prometheus_password_env is not None:
            lines.append(f"prometheus_password_env = {_toml(cluster.prometheus_password_env)}")
        if cluster.dcgm_exporter_urls:
            lines.append(f"dcgm_exporter_urls = {_toml(cluster.dcgm_exporter_urls)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _attestation_lines(settings: Settings) -> list[str]:
    """The [attestation] (with its issuers and policy) and [serve] sections, paths absolute."""
    att = settings.attestation
    lines = ["", "[attestation]"]
    for key in (
        "leeway_seconds",
        "nonce_ttl_seconds",
        "nonce_key_env",
        "max_submission_bytes",
        "max_token_bytes",
        "max_submods",
        "max_x5c_certs",
        "jwks_cache_seconds",
    ):
        lines.append(f"{key} = {_toml(getattr(att, key))}")
    lines.append(f"spool_dir = {_toml(att.spool_dir.absolute())}")
    lines.append(f"watch_dirs = {_toml([p.absolute() for p in att.watch_dirs])}")
    lines.append(f"jwks_cache_dir = {_toml(att.jwks_cache_dir.absolute())}")
    lines += ["", "[attestation.policy]"]
    lines += [f"{key} = {_toml(value)}" for key, value in vars(att.policy).items()]
    for issuer in att.issuers:
        lines += ["", "[[attestation.issuers]]"]
        for key, value in vars(issuer).items():
            if value is None:
                continue
            lines.append(f"{key} = {_toml(value.absolute() if isinstance(value, Path) else value)}")
    serve = settings.serve
    lines += ["", "[serve]"]
    for key, value in vars(serve).items():
        if value is None:
            continue
        lines.append(f"{key} = {_toml(value.absolute() if isinstance(value, Path) else value)}")
    return lines


def _lineage_lines(settings: Settings) -> list[str]:
    """The [lineage] section, paths absolute."""
    lineage = settings.lineage
    return [
        "",
        "[lineage]",
        f"spool_dir = {_toml(lineage.spool_dir.absolute())}",
        f"watch_dirs = {_toml([p.absolute() for p in lineage.watch_dirs])}",
        f"max_body_bytes = {_toml(lineage.max_body_bytes)}",
        f"max_events = {_toml(lineage.max_events)}",
        f"intake_workers = {_toml(lineage.intake_workers)}",
    ]


def _toml(value: object) -> str:
    """A TOML literal for the few kinds settings hold (JSON strings are valid TOML strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, datetime):  # settings hold naive UTC: a TOML offset date-time
        return value.replace(tzinfo=None).isoformat() + "Z"
    return json.dumps(str(value))


def _failure_message(result: dg.ExecuteInProcessResult) -> str:
    """The first failed step and its root error, as the user would want to read it."""
    for event in result.all_events:
        if event.event_type != dg.DagsterEventType.STEP_FAILURE:
            continue
        error = event.step_failure_data.error if event.step_failure_data else None
        while error is not None and error.cause is not None:
            error = error.cause
        if error is None:
            return f"step {event.step_key}"
        message = error.message.strip()
        prefix = f"{error.cls_name}: "
        if error.cls_name and prefix in message:
            message = message.split(prefix, 1)[1]
        return f"step {event.step_key}: {message}"
    for event in result.all_events:
        if event.event_type == dg.DagsterEventType.RUN_FAILURE and event.message:
            return event.message
    return "the run failed without a step failure (see the Dagster run logs)"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _quietly(call: Callable[[], T]) -> T:
    """Call without Dagster's beta/deprecation warnings, which mean nothing to a CLI user."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call()

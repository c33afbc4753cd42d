"""GPU evidence collections: benchmark records from probe pods, DCGM telemetry, the rollups.

The one place that wires ``collectors.gpubench`` and ``collectors.telemetry`` to the
warehouse; the CLI (``annex collect gpubench|telemetry``, ``annex demo``) and the Dagster assets
call these functions, so a collection behaves the same whoever starts it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from annex.errors import ConfigError
from annex.settings import ClusterSettings, Settings
from collectors.fetched import FetchedCollection
from services.inventory import cluster_api
from warehouse import CollectionResult, Warehouse, load_collection


def collect_gpu_benchmarks(
    settings: Settings, wh: Warehouse, target: ClusterSettings, *, publish: bool = True
) -> CollectionResult:
    """Read the records of completed probe pods not read before, and load them atomically."""
    from collectors.gpubench import collect_gpubench
    from warehouse.models.gpubench import GPUBENCH_MODEL

    known = known_probe_pods(wh, target.name)
    api = cluster_api(settings, target)
    with FetchedCollection(prefix="annex-gpubench-") as fetched:
        try:  # the pods' logs, read without the writer lock
            fetched.fetch(collect_gpubench(api, target.name, settings, known_pod_uids=known))
        finally:
            api.close()
        return load_collection(
            wh, GPUBENCH_MODEL, cluster=target.name, batches=fetched.replay(), publish=publish
        )


def known_probe_pods(wh: Warehouse, cluster: str) -> frozenset[str]:
    """UIDs of probe pods whose logs are already in the warehouse (read once, never again)."""
    with wh.writer() as con:
        rows = con.execute(
            "SELECT pod_uid FROM core.gpu_benchmark_pods WHERE cluster = ?", [cluster]
        ).fetchall()
    return frozenset(uid for (uid,) in rows)


def telemetry_window(
    settings: Settings, *, start: datetime | None = None, end: datetime | None = None
) -> tuple[datetime, datetime]:
    """``[start, end]`` in UTC: by default the last ``telemetry.window_seconds`` up to now (or
    up to ``telemetry.window_end`` when set), with that end rounded down to the step so that
    consecutive windows line up."""
    step = settings.telemetry.step_seconds
    if end is None:
        fixed = settings.telemetry.window_end
        now = datetime.now(UTC) if fixed is None else fixed.replace(tzinfo=UTC)
        end = datetime.fromtimestamp(int(now.timestamp()) // step * step, UTC)
    if start is None:
        start = end - timedelta(seconds=settings.telemetry.window_seconds)
    if start.tzinfo is None or end.tzinfo is None:
        raise ConfigError("telemetry window times must carry a time zone (use UTC, e.g. ...Z)")
    if start >= end:
        raise ConfigError(
            f"telemetry window start {start:%Y-%m-%dT%H:%M:%SZ} is not before its end"
        )
    return start, end


def collect_gpu_telemetry(
    settings: Settings,
    wh: Warehouse,
    target: ClusterSettings,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    publish: bool = True,
) -> CollectionResult:
    """Collect DCGM telemetry of one cluster: Prometheus' range API when the cluster names one
    (``prometheus_url``), else its exporters' ``/metrics`` (``dcgm_exporter_urls``)."""
    from collectors.telemetry import collect_exporters, collect_prometheus
    from warehouse.models.telemetry import TELEMETRY_MODEL

    if target.prometheus_url:
        window_start, window_end = telemetry_window(settings, start=start, end=end)
        batches = collect_prometheus(
            target.prometheus_url,
            target.name,
            settings,
            start=window_start,
            end=window_end,
            token=prometheus_token(target),
            basic_auth=prometheus_basic_auth(target),
        )
    elif target.dcgm_exporter_urls:
        urls = exporter_urls(target.dcgm_exporter_urls, gpu_nodes(wh, target.name))
        batches = collect_exporters(urls, target.name, settings)
    else:
        raise ConfigError(
            f"cluster {target.name!r} has no telemetry source",
            hint="set prometheus_url (Prometheus holding the DCGM exporter series) or "
            "dcgm_exporter_urls in its [[clusters]] entry",
        )
    with FetchedCollection(prefix="annex-telemetry-") as fetched:
        fetched.fetch(batches)  # Prometheus or the exporters, without the writer lock
        return load_collection(
            wh, TELEMETRY_MODEL, cluster=target.name, batches=fetched.replay(), publish=publish
        )


def prometheus_token(target: ClusterSettings) -> str | None:
    """The bearer token from the environment variable the settings name (never from a file)."""
    if not target.prometheus_token_env:
        return None
    token = os.environ.get(target.prometheus_token_env)
    if not token:
        raise ConfigError(
            f"cluster {target.name!r}: environment variable {target.prometheus_token_env} "
            "(prometheus_token_env) is not set or empty",
            hint="export the Prometheus bearer token in that variable, or remove "
            "prometheus_token_env if Prometheus needs none",
        )
    return token


def prometheus_basic_auth(target: ClusterSettings) -> tuple[str, str] | None:
    """``(username, password)`` for Prometheus' own basic auth, the password from the
    environment variable the settings name (never from a file; never logged or stored)."""
    if target.prometheus_token_env and (
        target.prometheus_username or target.prometheus_password_env
    ):
        raise ConfigError(
            f"cluster {target.name!r} sets both prometheus_token_env and basic auth "
            "(prometheus_username/prometheus_password_env)",
            hint="Prometheus takes either a bearer token or basic auth: remove one of them",
        )
    if not target.prometheus_username or not target.prometheus_password_env:
        return None
    password = os.environ.get(target.prometheus_password_env)
    if not password:
        raise ConfigError(
            f"cluster {target.name!r}: environment variable {target.prometheus_password_env} "
            "(prometheus_password_env) is not set or empty",
            hint=f"export the password of Prometheus user {target.prometheus_username!r} in "
            "that variable, or remove prometheus_username and prometheus_password_env if "
            "Prometheus needs no basic auth",
        )
    return target.prometheus_username, password


def gpu_nodes(wh: Warehouse, cluster: str) -> list[str]:
    """Current nodes of the cluster with GPUs, from the latest inventory."""
    with wh.writer() as con:
        rows = con.execute(
            "SELECT node_name FROM core.nodes WHERE cluster = ? AND valid_to IS NULL "
            "AND coalesce(gpu_capacity, 0) > 0 ORDER BY node_name",
            [cluster],
        ).fetchall()
    return [name for (name,) in rows]


def exporter_urls(templates: Sequence[str], nodes: Sequence[str]) -> list[str]:
    """Expand ``{node}`` in the configured exporter URLs with each GPU node's name."""
    urls: list[str] = []
    for template in templates:
        if "{node}" not in template:
            urls.append(template)
            continue
        if not nodes:
            raise ConfigError(
                f"exporter URL {template!r} names {{node}}, but the warehouse knows no GPU "
                "nodes of this cluster yet",
                hint="collect the cluster's inventory first (annex collect cluster)",
            )
        urls.extend(template.replace("{node}", node) for node in nodes)
    return urls


def refresh_gpu_utilisation(wh: Warehouse, *, publish: bool = True) -> dict[str, int]:
    """Rebuild the hourly utilisation marts for the hours new telemetry touched."""
    from warehouse.models.utilisation import refresh_gpu_hourly

    with wh.writer() as con:
        counts = refresh_gpu_hourly(con)
    if publish:
        wh.publish()
    return counts


def completed_probe_pods(settings: Settings, target: ClusterSettings) -> frozenset[str]:
    """UIDs of the cluster's probe pods that have finished (Succeeded or Failed).

    The sensor's light check before a benchmark collection: the collector's own paged listing
    (same selectors, same retries), no log is read.
    """
    from collectors.gpubench.collect import list_probe_pods
    from collectors.kubernetes.listing import Lister

    api = cluster_api(settings, target)
    try:
        pods = list_probe_pods(api, settings.gpubench, Lister(settings.kubernetes))
    finally:
        api.close()
    return frozenset(pod.uid for pod in pods)

"""The watch-built allocation history of one cluster, caught up to the API server.

No ``from __future__ import annotations``: Dagster inspects parameter annotations.
"""

from typing import Any

import dagster as dg

from annex.settings import ClusterSettings, Settings
from pipelines.defs.resources import AnnexSettingsResource, WarehouseResource
from pipelines.defs.shared import collection_asset
from services.inventory import cluster_api
from services.watch import WatchService, WatchSummary
from warehouse import Warehouse

GROUP = "watch"


def catch_up_cluster(settings: Settings, wh: Warehouse, target: ClusterSettings) -> WatchSummary:
    """``annex watch --once`` for one cluster: from the committed cursors up to the server."""
    api = cluster_api(settings, target)
    try:
        service = WatchService(
            api,
            wh,
            cluster=target.name,
            settings=settings,
            topology_profile=target.topology_profile,
        )
        return service.catch_up()
    finally:
        api.close()


def summary_metadata(summary: WatchSummary) -> dict[str, Any]:
    """Per resource: where the watch stands and what this catch-up committed."""
    metadata: dict[str, Any] = {"session_id": summary.session_id}
    for name, progress in sorted(summary.resources.items()):
        metadata[f"{name}/resource_version"] = progress.resource_version or ""
        metadata[f"{name}/events"] = progress.events
        metadata[f"{name}/commits"] = progress.commits
        metadata[f"{name}/lists"] = progress.snapshots
        metadata[f"{name}/max_lag_seconds"] = round(progress.max_lag_seconds, 3)
    return metadata


@collection_asset(GROUP, {"kubernetes", "duckdb"})
def watched_gpu_allocations(
    context: dg.AssetExecutionContext, annex: AnnexSettingsResource, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    """The exact GPU allocation history (marts.watched_gpu_allocations) of the partition's
    cluster, caught up by list-then-watch. In pool ``duckdb`` like every writer; a catch-up
    is short (it stops at the server's resourceVersion when it started), and inside it the
    writer lock is taken only for each small commit."""
    settings = annex.load()
    target = settings.cluster(context.partition_key)
    summary = catch_up_cluster(settings, warehouse.get(), target)
    return dg.MaterializeResult(metadata=summary_metadata(summary))

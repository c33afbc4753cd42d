"""One cluster-inventory collection: the Kubernetes collector streamed into the warehouse.

The one place that wires ``collectors.kubernetes`` to ``warehouse.load_collection``; the CLI
(``annex collect cluster``, ``annex demo``) and the Dagster asset ``cluster_inventory`` both
call it, so a collection behaves the same whoever starts it. The lists are fetched first, to a
local spool (``collectors.fetched``), and the warehouse's writer lock is taken only to load
them: no writer waits on an API server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from annex.settings import ClusterSettings, Settings
from collectors.fetched import FetchedCollection
from collectors.kubernetes import SnapshotMoment, api_client_for, collect_cluster
from warehouse import CollectionResult, Warehouse, load_collection
from warehouse.models.kubernetes import KUBERNETES_MODEL

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


def cluster_api(settings: Settings, target: ClusterSettings) -> ApiClient:
    """The read-only API client for ``target`` (kubeconfig and context, or in-cluster)."""
    return api_client_for(
        kubeconfig=target.kubeconfig,
        context=target.context,
        in_cluster=target.in_cluster,
        settings=settings.kubernetes,
    )


def collect_cluster_inventory(
    settings: Settings,
    wh: Warehouse,
    target: ClusterSettings,
    *,
    on_page: Callable[[Any], None] | None = None,
    on_wait: Callable[[str], None] | None = None,
    publish: bool = True,
    in_process: bool = False,
) -> CollectionResult:
    """Collect ``target`` read-only and load it atomically; publish the analysts' copy if asked.

    The snapshot's moment (its rows' ``collected_at``) is the API server's: the ``Date`` of
    the first list response, unless it agrees with the local clock
    (``collectors.kubernetes.moment``). ``in_process`` decodes the pages in this process
    (``collect_cluster``): the decoding worker's start-up (about a second) pays off for one big
    snapshot, not for many small ones in a row (the demo's replay of the past).

    Raises ``ConfigError``/``ClusterAccessError``/``CollectionError``/``WarehouseError``; a
    failed collection leaves only its ``audit.collections`` row behind.
    """
    profile = target.topology_profile or settings.kubernetes.topology_profile
    levels = settings.topology_levels(profile)
    api = cluster_api(settings, target)
    moment = SnapshotMoment()
    with FetchedCollection(prefix="annex-k8s-") as fetched:
        try:
            # The network part, without the writer lock: every list, to a local spool.
            fetched.fetch(
                collect_cluster(
                    api,
                    cluster=target.name,
                    settings=settings.kubernetes,
                    topology_levels=levels,
                    on_page=on_page,
                    moment=moment,
                    in_process=in_process,
                )
            )
        finally:
            api.close()
        # The lock is taken only to load what was fetched (or to record why it failed).
        return load_collection(
            wh,
            KUBERNETES_MODEL,
            cluster=target.name,
            batches=fetched.replay(),
            on_wait=on_wait,
            publish=publish,
            collected_at=moment.collected_at,
        )

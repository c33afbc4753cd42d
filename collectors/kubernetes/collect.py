"""The collection: every list annex needs, as a stream of Arrow record batches.

``collect_cluster`` lists nodes, pods, jobs, priority classes and events, Kueue's
Workloads, ClusterQueues, LocalQueues and ResourceFlavors where the API server serves
kueue.x-k8s.io (``kueue``), and DRA's ResourceSlices, ResourceClaims and ResourceClaimTemplates
where it serves resource.k8s.io/v1, one cluster-scope paged list per resource, one after another
(never per-node lists: reference "server friendliness"), and yields one
``(table, RecordBatch)`` per page as it arrives, so that memory stays bounded by the page size
whatever the cluster size. Records it cannot use go to ``("rejected", batch)``; a final
``("lists", batch)`` says how each list went (snapshot resourceVersion, consistency, pages,
retries, latency). Table names and schemas: ``schema``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from annex.errors import ClusterAccessError, CollectionError
from annex.settings import KubernetesSettings
from collectors.kubernetes import kueue, schema
from collectors.kubernetes.builder import PageBuilder, read_page
from collectors.kubernetes.decode import DecodeContext, rejected_batch
from collectors.kubernetes.listing import (
    ListCall,
    Lister,
    ListRecord,
    ListStats,
    latency_summary,
    utc_now,
)
from collectors.kubernetes.moment import SnapshotMoment
from collectors.kubernetes.transport import raw_get

_log = logging.getLogger(__name__)

DRA_DISCOVERY_PATH = "/apis/resource.k8s.io/v1"
"""Discovery of DRA's GA API version: 404 before Kubernetes 1.34 (or with the group off)."""


@dataclass(frozen=True)
class Resource:
    table: str
    api_path: str
    discovery_path: str | None = None
    """For an optional API group (a CRD): its discovery document. When the API server does not
    serve it (404), the list is skipped with a note, never an error."""

    def method(self, api: ApiClient) -> ListCall:
        """A paged GET of this list (``limit``/``_continue``), as the lister calls it."""

        def call(
            *,
            limit: int,
            _preload_content: bool = False,
            _request_timeout: tuple[float, float] | None = None,
            _continue: str | None = None,
        ) -> Any:
            query: list[tuple[str, Any]] = [("limit", limit)]
            if _continue:
                query.append(("continue", _continue))
            return raw_get(api, self.api_path, query, timeout=_request_timeout)

        return call


RESOURCES: tuple[Resource, ...] = (
    Resource("nodes", "/api/v1/nodes"),
    Resource("pods", "/api/v1/pods"),
    Resource("jobs", "/apis/batch/v1/jobs"),
    Resource("priority_classes", "/apis/scheduling.k8s.io/v1/priorityclasses"),
    Resource("events", "/api/v1/events"),
    Resource("kueue_workloads", "/apis/kueue.x-k8s.io/v1beta1/workloads", kueue.DISCOVERY_PATH),
    Resource(
        "kueue_cluster_queues", "/apis/kueue.x-k8s.io/v1beta1/clusterqueues", kueue.DISCOVERY_PATH
    ),
    Resource(
        "kueue_local_queues", "/apis/kueue.x-k8s.io/v1beta1/localqueues", kueue.DISCOVERY_PATH
    ),
    Resource(
        "kueue_resource_flavors",
        "/apis/kueue.x-k8s.io/v1beta1/resourceflavors",
        kueue.DISCOVERY_PATH,
    ),
    # DRA (resource.k8s.io/v1, GA in Kubernetes 1.34): the devices drivers publish, and the
    # claims that hold them; older API servers do not serve the group and are skipped.
    Resource("resource_slices", "/apis/resource.k8s.io/v1/resourceslices", DRA_DISCOVERY_PATH),
    Resource("resource_claims", "/apis/resource.k8s.io/v1/resourceclaims", DRA_DISCOVERY_PATH),
    # what a pending pod's claims will request before the claim exists (its GPU demand)
    Resource(
        "resource_claim_templates",
        "/apis/resource.k8s.io/v1/resourceclaimtemplates",
        DRA_DISCOVERY_PATH,
    ),
)
"""What annex reads, in order. deploy/rbac.yaml grants exactly these (a test checks)."""


def collect_cluster(
    api: ApiClient,
    *,
    cluster: str,
    settings: KubernetesSettings,
    topology_levels: tuple[tuple[str, ...], ...],
    on_page: Callable[[ListStats], None] | None = None,
    lister: Lister | None = None,
    in_process: bool = False,
    moment: SnapshotMoment | None = None,
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Yield ``(table_name, batch)`` for every page of every list, then ``("lists", batch)``.

    Raises ``ClusterAccessError`` (unreachable, 401/403) or ``CollectionError`` (a page that
    cannot be read after retries, a 410 with no way on); the consumer must then discard what it
    received (the warehouse's ``load_collection`` does: one transaction per collection).

    Pages are decoded into Arrow in a worker process while the next page is fetched
    (``builder``); ``in_process=True`` decodes in this process instead.

    ``moment`` observes the ``Date`` header of the first list's first response: the
    snapshot's moment by the API server's clock (``collectors.kubernetes.moment``).
    """
    context = DecodeContext.from_settings(settings, topology_levels)
    lister = lister or Lister(settings)
    records: list[ListRecord] = []
    try:
        with PageBuilder(context, in_process=in_process) as builder:
            served: dict[str, bool] = {}
            for resource in RESOURCES:
                if resource.discovery_path is not None:
                    path = resource.discovery_path
                    if path not in served:
                        served[path] = group_served(api, path, settings)
                    if not served[path]:
                        _log.info(
                            "cluster %s does not serve %s: %s not collected",
                            cluster,
                            path,
                            resource.table,
                        )
                        continue
                record = ListRecord(
                    resource.table, resource.api_path, settings.page_size, utc_now()
                )
                records.append(record)
                read = functools.partial(read_page, resource=resource.table)
                pages = lister.pages(resource.method(api), record, read, on_page)
                for batch, rejected in builder.build(resource.table, pages):
                    if batch.num_rows:
                        yield resource.table, batch
                    if rejected:
                        record.rejected += len(rejected)
                        yield "rejected", rejected_batch(rejected)
                if moment is not None and record.server_date_local is not None:
                    moment.observe(record.server_date, record.server_date_local)
    except (ClusterAccessError, CollectionError) as exc:
        server = api.configuration.host
        raise type(exc)(f"cluster {cluster} ({server}): {exc.message}", hint=exc.hint) from exc
    yield "lists", lists_batch(records)


def group_served(api: ApiClient, discovery_path: str, settings: KubernetesSettings) -> bool:
    """Whether the API server serves an optional group version (its discovery answers 200).

    404 means the CRDs are not installed: the caller skips their lists. Any other failure is
    left to the list itself, which retries and reports it as for every resource.
    """
    timeout = (settings.connect_timeout_seconds, settings.request_timeout_seconds)
    try:
        response = raw_get(api, discovery_path, [], timeout=timeout)
    except ApiException as exc:
        return exc.status != 404
    except (urllib3.exceptions.HTTPError, OSError):
        return True
    response.release_conn()
    return True


def lists_batch(records: list[ListRecord]) -> pa.RecordBatch:
    """One row per list: the evidence of how complete and consistent the snapshot is."""
    summaries = [latency_summary(r.latencies) for r in records]
    return pa.RecordBatch.from_arrays(
        [
            pa.array([r.resource for r in records], pa.string()),
            pa.array([r.api_path for r in records], pa.string()),
            pa.array([r.resource_version for r in records], pa.string()),
            pa.array([r.consistent for r in records], pa.bool_()),
            pa.array([r.pages for r in records], pa.int32()),
            pa.array([r.items for r in records], pa.int64()),
            pa.array([r.rejected for r in records], pa.int64()),
            pa.array([r.restarts for r in records], pa.int32()),
            pa.array([r.retries for r in records], pa.int32()),
            pa.array([len(r.latencies) for r in records], pa.int32()),
            pa.array([r.response_bytes for r in records], pa.int64()),
            pa.array([r.page_size for r in records], pa.int32()),
            pa.array([r.started_at for r in records], schema.TIMESTAMP),
            pa.array([r.finished_at for r in records], schema.TIMESTAMP),
            pa.array([s[0] for s in summaries], pa.float64()),
            pa.array([s[1] for s in summaries], pa.float64()),
            pa.array([s[2] for s in summaries], pa.float64()),
            pa.array([sum(r.latencies) for r in records], pa.float64()),
        ],
        schema=schema.LISTS,
    )

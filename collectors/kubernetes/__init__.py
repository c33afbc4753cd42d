"""The Kubernetes collector: cluster state, read-only, as Arrow record batches.

Public API (used by the CLI and the Dagster assets)::

    api = api_client_for(kubeconfig=..., context=..., in_cluster=False, settings=s.kubernetes)
    for table, batch in collect_cluster(api, cluster="prod", settings=s.kubernetes,
                                        topology_levels=s.topology_levels("generic")):
        ...

Tables and their schemas are in ``collectors.kubernetes.schema``.
"""

from collectors.kubernetes.client import api_client_for
from collectors.kubernetes.collect import RESOURCES, collect_cluster
from collectors.kubernetes.listing import ListStats
from collectors.kubernetes.schema import SCHEMAS

__all__ = ["RESOURCES", "SCHEMAS", "ListStats", "api_client_for", "collect_cluster"]

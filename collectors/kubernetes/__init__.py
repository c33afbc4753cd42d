"""The Kubernetes collector: cluster state, read-only, as Arrow record batches.

Public API (used by the CLI and the Dagster assets)::

    api = api_client_for(kubeconfig=..., context=..., in_cluster=False, settings=s.kubernetes)
    for table, batch in collect_cluster(api, cluster="prod", settings=s.kubernetes,
                                        topology_levels=s.topology_levels("generic")):
        ...

Tables and their schemas are in ``collectors.kubernetes.schema``.
"""

from typing import Any

__all__ = [
    "RESOURCES",
    "SCHEMAS",
    "ListStats",
    "SnapshotMoment",
    "api_client_for",
    "collect_cluster",
]

_EXPORTS = {
    "api_client_for": "collectors.kubernetes.client",
    "RESOURCES": "collectors.kubernetes.collect",
    "collect_cluster": "collectors.kubernetes.collect",
    "ListStats": "collectors.kubernetes.listing",
    "SnapshotMoment": "collectors.kubernetes.moment",
    "SCHEMAS": "collectors.kubernetes.schema",
}


def __getattr__(name: str) -> Any:
    """Import lazily: the page-decoding worker process imports this package, and must not pay
    for the ``kubernetes`` client's import (about a second) that only the fetching side needs.
    """
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'collectors.kubernetes' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

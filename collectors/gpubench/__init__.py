"""The gpubench collector: Triton benchmark records from the probe pods' logs, as Arrow batches.

Public API (used by the CLI and the Dagster assets)::

    api = api_client_for(kubeconfig=..., context=..., in_cluster=False, settings=s.kubernetes)
    for table, batch in collect_gpubench(api, "prod", s, known_pod_uids=frozenset(...)):
        ...

Tables and their schemas are in ``collectors.gpubench.schema``; one line's validation is the
pure ``collectors.gpubench.records.validate_line``.
"""

from typing import Any

__all__ = ["SCHEMAS", "CollectStats", "collect_gpubench", "validate_line"]

_EXPORTS = {
    "collect_gpubench": "collectors.gpubench.collect",
    "CollectStats": "collectors.gpubench.collect",
    "SCHEMAS": "collectors.gpubench.schema",
    "validate_line": "collectors.gpubench.records",
}


def __getattr__(name: str) -> Any:
    """Import lazily, as ``collectors.kubernetes`` does: the record validator and the schemas
    need neither the ``kubernetes`` client nor its import time."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'collectors.gpubench' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

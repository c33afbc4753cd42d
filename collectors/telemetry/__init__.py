"""The telemetry collector: DCGM exporter metrics, scraped or read back from Prometheus.

Public API::

    for table, batch in collect_exporters(urls, cluster="prod", settings=s): ...
    for table, batch in collect_prometheus(url, "prod", s, start=t0, end=t1, token=tok): ...

Tables and schemas: ``collectors.telemetry.schema``; the DCGM alias table:
``collectors.telemetry.fields``.
"""

from typing import Any

__all__ = ["FIELDS", "SCHEMAS", "TargetRecord", "collect_exporters", "collect_prometheus"]

_EXPORTS = {
    "collect_exporters": "collectors.telemetry.collect",
    "collect_prometheus": "collectors.telemetry.collect",
    "TargetRecord": "collectors.telemetry.collect",
    "SCHEMAS": "collectors.telemetry.schema",
    "FIELDS": "collectors.telemetry.fields",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'collectors.telemetry' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

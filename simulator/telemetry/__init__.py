"""Simulated DCGM telemetry: per-node dcgm-exporters and the Prometheus that scraped them.

    from simulator.telemetry import TelemetryServer
    with TelemetryServer(world) as telemetry:
        telemetry.exporter_url(node), telemetry.prometheus_url

Signals (``signals``) are closed-form functions of time per GPU, built on the world's
``simulator.world.activity.gpu_activity``; ``exporter`` writes them as dcgm-exporter does;
``prometheus`` answers range and instant queries over the same signals. Never imports annex.
"""

from typing import Any

__all__ = ["TelemetryServer"]


def __getattr__(name: str) -> Any:
    if name == "TelemetryServer":
        from simulator.telemetry.server import TelemetryServer

        return TelemetryServer
    raise AttributeError(f"module 'simulator.telemetry' has no attribute {name!r}")

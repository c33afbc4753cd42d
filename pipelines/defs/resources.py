"""Dagster resources: annex's settings and its warehouse, as configurable resources.

Both are thin: the settings resource only says *which* annex.toml to read (``None`` follows
annex's own search order: ``ANNEX_CONFIG``, then ``./annex.toml``), and the warehouse resource
builds a ``warehouse.Warehouse`` from those settings. Kubernetes access per cluster comes from
the settings' ``[[clusters]]`` entries (kubeconfig, context or in-cluster service account), so
no secret ever sits in Dagster config: tokens stay in the kubeconfig or the environment.
"""

from __future__ import annotations

import dagster as dg

from annex.settings import ClusterSettings, Settings, load_settings
from warehouse import Warehouse


class AnnexSettingsResource(dg.ConfigurableResource):
    """Where annex's settings come from; loaded on use so edits apply to the next run."""

    config_path: str | None = None

    def load(self) -> Settings:
        """Read and validate the settings (raises ``ConfigError`` naming the bad key)."""
        return load_settings(self.config_path)

    def cluster(self, name: str) -> ClusterSettings:
        """The ``[[clusters]]`` entry for a partition key; a clear error when it is gone."""
        return self.load().cluster(name)


class WarehouseResource(dg.ConfigurableResource):
    """annex's DuckDB warehouse, located by the settings so the CLI and Dagster share a file."""

    annex: AnnexSettingsResource

    def get(self) -> Warehouse:
        """A ``Warehouse`` handle; opening nothing until a method is called."""
        return Warehouse(self.annex.load().warehouse)


def build_resources(config_path: str | None = None) -> dict[str, dg.ConfigurableResource]:
    """The resource dict every asset, check and sensor of this code location expects."""
    annex = AnnexSettingsResource(config_path=config_path)
    return {"annex": annex, "warehouse": WarehouseResource(annex=annex)}

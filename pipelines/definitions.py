"""annex's single Dagster code location: every source's definitions plus shared resources.

Run with ``DAGSTER_HOME=.dagster_home`` so the ``duckdb`` pool limit, run retries and history
persist (see ``.dagster_home/dagster.yaml``). Settings are found as the CLI finds them
(``ANNEX_CONFIG`` or ``./annex.toml``).
"""

from __future__ import annotations

import warnings

import dagster as dg

from pipelines.defs import attestation, cluster_state, gpu_evidence, lineage
from pipelines.defs import compute as compute_defs
from pipelines.defs import export as export_defs
from pipelines.defs import reports as report_defs
from pipelines.defs import retention as retention_defs
from pipelines.defs import watch as watch_defs
from pipelines.defs.catalog import catalogued
from pipelines.defs.resources import build_resources

# Sensor owners and freshness policies are beta/preview in the pinned Dagster; annex uses them on
# purpose (the catalog), and a CLI user should not read Dagster's warning on every run.
for _category in (dg.BetaWarning, dg.PreviewWarning):
    warnings.filterwarnings("ignore", category=_category, module=r"dagster(\.|$)")


def build_defs(config_path: str | None = None) -> dg.Definitions:
    """The code location with resources reading ``config_path``.

    ``annex demo`` and ``annex run`` execute these same definitions in-process, pointed at the
    settings file they were given, so a CLI run and a ``dagster dev`` run share one job. Every
    asset's owner, tags, freshness and column schema are applied here, in one place
    (``pipelines.defs.catalog``).
    """
    sources = dg.Definitions.merge(
        cluster_state.defs,
        gpu_evidence.defs,
        attestation.defs,
        lineage.defs,
        compute_defs.defs,
        report_defs.defs,
        watch_defs.defs,
        export_defs.defs,
        retention_defs.defs,
    )
    return dg.Definitions.merge(
        catalogued(sources), dg.Definitions(resources=build_resources(config_path))
    )


defs = build_defs()

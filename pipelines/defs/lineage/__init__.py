"""Training-data lineage: OpenLineage events received by ``annex serve`` (or read from files),
the lineage graph and the EU training-content summary built from them."""

from __future__ import annotations

import dagster as dg

from pipelines.defs.lineage.assets import lineage_events, lineage_models
from pipelines.defs.lineage.checks import CHECKS
from pipelines.defs.lineage.sensors import lineage_job, new_lineage_events

defs = dg.Definitions(
    assets=[lineage_events, lineage_models],
    asset_checks=CHECKS,
    jobs=[lineage_job],
    sensors=[new_lineage_events],
)

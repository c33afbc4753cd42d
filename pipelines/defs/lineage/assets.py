"""Lineage assets: load the waiting OpenLineage events, then rebuild the lineage models.

Thin calls into ``services.lineage``. The endpoint itself is ``annex serve`` (a long-running
service beside Dagster, deployed with annex); it only spools what producers send, and these
assets turn the spool into warehouse rows. Events are not per cluster: a training run names its
Kubernetes cluster, namespace and Job in its ``annex_trainingRun`` facet.

No ``from __future__ import annotations`` in the Dagster modules (see cluster_state/assets.py).
"""

import dagster as dg

from pipelines.defs.resources import AnnexSettingsResource, WarehouseResource
from pipelines.defs.shared import (
    collection_asset,
    collection_metadata,
)
from services.lineage import collect_lineage_evidence, refresh_lineage_models

GROUP = "lineage"


@collection_asset(GROUP, {"openlineage", "duckdb"}, per_cluster=False)
def lineage_events(
    annex: AnnexSettingsResource, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    """Every waiting OpenLineage event (intake spool and watched folders), validated, stored
    once by its content hash; rejected events kept in audit.rejected with their reason."""
    collection = collect_lineage_evidence(
        annex.load(), wh=warehouse.get(), publish=False, refresh=False
    )
    metadata = collection_metadata(collection.result)
    metadata["files_archived"] = collection.archive.archived
    metadata["files_not_archived"] = len(collection.archive.failed)
    return dg.MaterializeResult(metadata=metadata)


@dg.asset(group_name=GROUP, pool="duckdb", kinds={"duckdb"}, deps=[lineage_events])
def lineage_models(warehouse: WarehouseResource) -> dg.MaterializeResult:
    """Every model checkpoint's upstream closure and the cycle findings, recomputed for only
    what the new lineage collections can change (the first time: all of it); then publish the
    analysts' copy."""
    wh = warehouse.get()
    counts = refresh_lineage_models(wh)
    wh.publish()
    return dg.MaterializeResult(metadata={f"refresh/{k}": v for k, v in counts.items()})

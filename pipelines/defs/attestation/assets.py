"""Attestation assets: verify and load the waiting submissions, then rebuild coverage.

Thin calls into ``services.attestation`` (plain, tested functions). The collection loads
unpublished and archives the files it used once it has committed; ``attestation_coverage``
rebuilds the coverage marts for the days the new evidence touched, after the blocking check on
the records passed, and publishes the analysts' copy.

No ``from __future__ import annotations`` in the Dagster modules (see cluster_state/assets.py).
"""

import dagster as dg

from pipelines.defs.resources import AnnexSettingsResource, WarehouseResource
from pipelines.defs.shared import (
    collection_asset,
    collection_metadata,
)
from services.attestation import collect_attestation_evidence, refresh_attestation_coverage

GROUP = "attestation"


@collection_asset(GROUP, {"duckdb"})
def attestation_records(
    context: dg.AssetExecutionContext, annex: AnnexSettingsResource, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    """Every waiting attestation submission, each token verified against the pinned keys and
    the appraisal policy, stored with its verdict and reasons whatever they are."""
    settings = annex.load()
    cluster = settings.cluster(context.partition_key).name
    collection = collect_attestation_evidence(
        settings, cluster, wh=warehouse.get(), publish=False, refresh_coverage=False
    )
    stats = collection.stats
    metadata = collection_metadata(collection.result)
    metadata.update(
        {
            "files_read": stats.files_read,
            "files_archived": collection.archive.archived,
            "files_not_archived": len(collection.archive.failed),
        }
    )
    metadata.update({f"verdict/{k}": v for k, v in sorted(stats.verdicts.items())})
    metadata.update({f"reason/{k}": v for k, v in sorted(stats.reasons.items())})
    return dg.MaterializeResult(metadata=metadata)


@dg.asset(group_name=GROUP, pool="duckdb", kinds={"duckdb"}, deps=[attestation_records])
def attestation_coverage(warehouse: WarehouseResource) -> dg.MaterializeResult:
    """Rebuild marts.attestation_node_windows and marts.attestation_gpu_hours for the days new
    evidence (attestations or inventory) touched, then publish the analysts' copy."""
    wh = warehouse.get()
    counts = refresh_attestation_coverage(wh)
    wh.publish()
    return dg.MaterializeResult(metadata={f"refresh/{k}": v for k, v in counts.items()})

"""``annex export`` in Dagster: every ``core`` and ``marts`` table of the published copy as
Hive-partitioned Parquet, written to ``[export] dir`` (default ``export/`` beside the warehouse
file) through ``warehouse.export.export_warehouse``, the function the CLI calls.

No pool: the export reads only the published copy, so it never holds up a collection (as the
reports do not).

No ``from __future__ import annotations`` in the Dagster modules (see cluster_state/assets.py).
"""

from datetime import date

import dagster as dg

from pipelines.defs.resources import AnnexSettingsResource, WarehouseResource
from warehouse.export import ExportResult, export_warehouse

GROUP = "export"
PUBLISHERS = [
    dg.AssetKey(name)
    for name in (
        "published_warehouse",
        "gpu_utilisation",
        "attestation_coverage",
        "lineage_models",
        "training_compute",
    )
]
"""The assets that publish the copy the export reads, for the asset graph's lineage."""


class ExportConfig(dg.Config):
    since: str | None = None
    """Rewrite only partitions from this day (YYYY-MM-DD) on, plus older ones with changes, as
    ``annex export --since``; unset: every partition with changes."""
    dest: str | None = None
    """Another folder than ``[export] dir`` for this run."""


def export_metadata(result: ExportResult) -> dict[str, object]:
    """Where the export went and what it wrote, per table."""
    metadata: dict[str, object] = {
        "dest": dg.MetadataValue.path(str(result.dest)),
        "manifest": dg.MetadataValue.path(str(result.manifest)),
        "tables": len(result.tables),
        "rows_written": sum(t.rows_written for t in result.tables),
        "partitions_written": sum(t.partitions_written for t in result.tables),
    }
    for table in result.tables:
        metadata[f"rows_written/{table.name}"] = table.rows_written
    return metadata


@dg.asset(group_name=GROUP, kinds={"parquet"}, deps=PUBLISHERS)
def parquet_export(
    config: ExportConfig, annex: AnnexSettingsResource, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    """Every core and marts table of the analysts' published copy as Parquet partitioned by
    cluster and day (annex export), for Spark, Trino or DuckDB; sync the folder to object
    storage afterwards. Reruns are idempotent."""
    settings = annex.load()
    dest = config.dest or settings.export.resolved_dir(settings.warehouse)
    since = date.fromisoformat(config.since) if config.since else None
    result = export_warehouse(warehouse.get(), dest, since=since)
    return dg.MaterializeResult(metadata=export_metadata(result))

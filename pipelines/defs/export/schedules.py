"""The export job and its daily schedule, stopped by default (turn it on where a lake reads the
export)."""

import dagster as dg

from pipelines.defs.export.assets import parquet_export

export_job = dg.define_asset_job(
    name="export_job",
    selection=dg.AssetSelection.assets(parquet_export),
    description="Export the published copy's core and marts tables as Parquet partitioned by "
    "cluster and day (annex export) to [export] dir.",
)

daily_export = dg.ScheduleDefinition(
    name="daily_export",
    job=export_job,
    cron_schedule="30 2 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Export every day at 02:30 UTC (after the night's collections). Stopped by "
    "default: turn it on where Spark, Trino or a lake reads the export.",
)

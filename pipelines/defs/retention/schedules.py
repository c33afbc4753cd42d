"""The compaction job and its daily schedule, stopped by default like ``daily_export`` (turn it
on once ``[retention]`` says how long raw rows stay)."""

import dagster as dg

from pipelines.defs.retention.assets import warehouse_compaction

compaction_job = dg.define_asset_job(
    name="compaction_job",
    selection=dg.AssetSelection.assets(warehouse_compaction),
    description="Move raw rows past [retention] to Parquet under [retention] dir (annex "
    "warehouse compact); they stay readable as archive.<table>.",
)

daily_compaction = dg.ScheduleDefinition(
    name="daily_compaction",
    job=compaction_job,
    cron_schedule="0 4 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Compact every day at 04:00 UTC (after the night's collections and the 02:30 "
    "export). Stopped by default, as in the demo: turn it on where the warehouse must stay "
    "within a disk budget.",
)

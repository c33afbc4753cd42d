"""Retention: ``annex warehouse compact`` as an asset, its job and its (stopped) daily schedule."""

import dagster as dg

from pipelines.defs.retention.assets import warehouse_compaction
from pipelines.defs.retention.schedules import compaction_job, daily_compaction

defs = dg.Definitions(
    assets=[warehouse_compaction], jobs=[compaction_job], schedules=[daily_compaction]
)

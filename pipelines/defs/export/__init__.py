"""The export: ``annex export`` as an asset, its job and its (stopped) daily schedule."""

import dagster as dg

from pipelines.defs.export.assets import parquet_export
from pipelines.defs.export.schedules import daily_export, export_job

defs = dg.Definitions(assets=[parquet_export], jobs=[export_job], schedules=[daily_export])

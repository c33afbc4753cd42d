"""The monthly report run: on the 1st at 06:00 UTC, every report for the month just ended.

No ``from __future__ import annotations`` in the Dagster modules (see cluster_state/assets.py).
"""

import dagster as dg

from pipelines.defs.reports.assets import GROUP

reports_job = dg.define_asset_job(
    name="reports_job",
    selection=dg.AssetSelection.groups(GROUP),
    description="Render every report for one month from the published warehouse copy.",
)

monthly_reports = dg.build_schedule_from_partitioned_job(
    reports_job, name="monthly_reports", hour_of_day=6, day_of_month=1
)

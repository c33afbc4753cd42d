"""The monthly report run: on the 1st at 06:00 UTC, every report for the month just ended; and
that month's reports rendered again when their evidence is updated, at most hourly.

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
    reports_job,
    name="monthly_reports",
    hour_of_day=6,
    day_of_month=1,
    description="Render every report for the month just ended, on the 1st at 06:00 UTC.",
)

reports_on_new_evidence = dg.AutomationConditionSensorDefinition(
    "reports_on_new_evidence",
    target=dg.AssetSelection.groups(GROUP),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=3600,
    description="Render the latest month's reports again when the assets they are drawn "
    "from have been materialised since (each report asset's automation condition).",
)

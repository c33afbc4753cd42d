"""Reports: one monthly-partitioned asset per report, rendered on the first of each month for
the month just ended, and again when that month's evidence is updated."""

from __future__ import annotations

import dagster as dg

from pipelines.defs.reports.assets import REPORT_ASSETS
from pipelines.defs.reports.schedules import monthly_reports, reports_job, reports_on_new_evidence

defs = dg.Definitions(
    assets=REPORT_ASSETS,
    jobs=[reports_job],
    schedules=[monthly_reports],
    sensors=[reports_on_new_evidence],
)

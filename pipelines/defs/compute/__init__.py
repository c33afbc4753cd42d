"""Training compute, time and energy per model and the Article 51 thresholds: the marts
refresh, its checks, and the sensor that turns a threshold alert into a failed run plus a
record in audit.compute_alerts."""

from __future__ import annotations

import dagster as dg

from pipelines.defs.compute.assets import training_compute
from pipelines.defs.compute.checks import CHECKS
from pipelines.defs.compute.sensors import compute_alert_job, compute_threshold_alerts

compute_job = dg.define_asset_job(
    name="compute_job",
    selection=dg.AssetSelection.assets(training_compute),
    description="Rebuild the training compute, energy and threshold marts from the evidence.",
)

defs = dg.Definitions(
    assets=[training_compute],
    asset_checks=CHECKS,
    jobs=[compute_job, compute_alert_job],
    sensors=[compute_threshold_alerts],
)

"""GPU evidence: Triton benchmark records and DCGM telemetry, with their rollups and checks."""

from __future__ import annotations

import dagster as dg

from pipelines.defs.gpu_evidence.assets import gpu_benchmarks, gpu_telemetry, gpu_utilisation
from pipelines.defs.gpu_evidence.checks import CHECKS
from pipelines.defs.gpu_evidence.schedules import (
    benchmarks_job,
    hourly_gpu_telemetry,
    telemetry_job,
)
from pipelines.defs.gpu_evidence.sensors import completed_probe_jobs

defs = dg.Definitions(
    assets=[gpu_benchmarks, gpu_telemetry, gpu_utilisation],
    asset_checks=CHECKS,
    jobs=[telemetry_job, benchmarks_job],
    schedules=[hourly_gpu_telemetry],
    sensors=[completed_probe_jobs],
)

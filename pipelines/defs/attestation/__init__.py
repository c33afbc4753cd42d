"""Confidential-computing evidence: verified attestation tokens and their GPU-hour coverage."""

from __future__ import annotations

import dagster as dg

from pipelines.defs.attestation.assets import attestation_coverage, attestation_records
from pipelines.defs.attestation.checks import CHECKS
from pipelines.defs.attestation.sensors import attestation_job, new_attestations

defs = dg.Definitions(
    assets=[attestation_records, attestation_coverage],
    asset_checks=CHECKS,
    jobs=[attestation_job],
    sensors=[new_attestations],
)

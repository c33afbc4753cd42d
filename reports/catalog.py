"""Every report annex can render, by name (``annex report NAME``, one Dagster asset each)."""

from __future__ import annotations

from reports.definition import ReportDefinition
from reports.errors import ReportError


def report_definitions() -> dict[str, ReportDefinition]:
    from reports.attestation_coverage import ATTESTATION_COVERAGE
    from reports.fleet import FLEET
    from reports.model_documentation import MODEL_DOCUMENTATION
    from reports.training_compute import TRAINING_COMPUTE
    from reports.training_summary import TRAINING_SUMMARY

    return {
        d.name: d
        for d in (
            FLEET,
            ATTESTATION_COVERAGE,
            TRAINING_SUMMARY,
            MODEL_DOCUMENTATION,
            TRAINING_COMPUTE,
        )
    }


def report_definition(name: str) -> ReportDefinition:
    definitions = report_definitions()
    if name not in definitions:
        raise ReportError(
            f"there is no report named {name!r}",
            hint="reports: " + ", ".join(sorted(definitions)),
        )
    return definitions[name]

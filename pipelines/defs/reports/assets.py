"""Report assets: one per report, partitioned by month, each a thin call into
``reports.generate.generate_reports`` (which reads the published read-only copy, so rendering
never holds the ``duckdb`` pool or blocks a collection).

The PDFs go to ``reports/`` beside the warehouse file, named ``<report>-<YYYY-MM>.pdf``;
the materialisation's metadata carries the path, the evidence digest and the data cut-off, so
the Dagster UI shows which evidence each month's PDF rests on.

No ``from __future__ import annotations`` in the Dagster modules (see cluster_state/assets.py).
"""

import os
from pathlib import Path

import dagster as dg

from annex.settings import Settings
from pipelines.defs.resources import AnnexSettingsResource, WarehouseResource
from reports.catalog import report_definition, report_definitions
from reports.generate import GeneratedReport, generate_reports
from reports.period import month_period
from reports.signing import configured_signer

GROUP = "reports"
REPORT_PARTITIONS = dg.MonthlyPartitionsDefinition(start_date="2026-01-01")
UPSTREAM = {
    "fleet": [dg.AssetKey("published_warehouse")],
    "attestation": [dg.AssetKey("attestation_coverage")],
    "training_summary": [dg.AssetKey("lineage_models")],
    "model_documentation": [dg.AssetKey("lineage_models"), dg.AssetKey("training_compute")],
    "training_compute": [dg.AssetKey("training_compute")],
}
"""What each report is drawn from, for the asset graph's lineage."""

RERENDER = dg.AutomationCondition.eager()
"""The latest month's report (the month just ended: a month is a partition once it is over) is
rendered again when what it is drawn from is updated, so late evidence for that month reaches
its PDF; older months stay as they were rendered (each manifest's evidence digest tells the
versions apart). Evaluated by the ``reports_on_new_evidence`` sensor, at most hourly."""


def report_output_dir(settings: Settings) -> Path:
    """``reports/`` beside the warehouse file."""
    return Path(settings.warehouse.path).parent / "reports"


def report_metadata(results: list[GeneratedReport]) -> dict[str, object]:
    """One report's path, digest and cut-off; for a per-model report, the PDFs it wrote."""
    if len(results) != 1:
        return {
            "reports": len(results),
            "paths": dg.MetadataValue.json([str(r.path) for r in results]),
            "fetches_refused": sum(len(r.refused) for r in results),
        }
    [result] = results
    manifest = result.manifest
    bundle = {}
    if result.evidence_bundle is not None:  # a public report's evidence, kept apart
        bundle = {
            "evidence_bundle": dg.MetadataValue.path(str(result.evidence_bundle)),
            "evidence_bundle_sha256": result.evidence_bundle_sha256,
        }
    return bundle | {
        "path": dg.MetadataValue.path(str(result.path)),
        "evidence_digest": manifest["evidence_digest"],
        "data_cutoff": manifest["data_cutoff"] or "none",
        "collections": len(manifest["collections"]),
        "tables": len(manifest["tables"]),
        "rows_attached": sum(t["rows"] for t in manifest["tables"]),
        "fetches_refused": len(result.refused),
    }


def render_month(
    name: str, month_key: str, annex: AnnexSettingsResource, warehouse: WarehouseResource
) -> list[GeneratedReport]:
    """Render report ``name`` for the partition ``YYYY-MM-DD`` (its month). A per-model report
    (the training-content summary) is rendered for every model of the registry into
    ``reports/YYYY-MM/``: that month's snapshot, kept as the summary's update history."""
    settings = annex.load()
    out = report_output_dir(settings)
    return generate_reports(
        warehouse.get(),
        name,
        month_period(month_key[:7]),
        out / month_key[:7] if report_definition(name).needs_model else out,
        models_dir=settings.models.dir,
        versions_dir=out,  # one history across the months
        signer=configured_signer(settings.reports, os.environ),  # [reports] signing_key
        retention_years=settings.reports.retention_years,
    )


def report_asset(name: str, description: str) -> dg.AssetsDefinition:
    @dg.asset(
        name=f"{name}_report",
        group_name=GROUP,
        # no pool: rendering reads only the published copy (reference/stack.md §3), so a
        # month's reports never hold up a collection
        kinds={"pdf"},
        partitions_def=REPORT_PARTITIONS,
        deps=UPSTREAM.get(name, []),
        automation_condition=RERENDER,
        description=description,
    )
    def _report(
        context: dg.AssetExecutionContext,
        annex: AnnexSettingsResource,
        warehouse: WarehouseResource,
    ) -> dg.MaterializeResult:
        results = render_month(name, context.partition_key, annex, warehouse)
        return dg.MaterializeResult(metadata=report_metadata(results))

    return _report


REPORT_ASSETS = [report_asset(d.name, d.summary) for d in report_definitions().values()]

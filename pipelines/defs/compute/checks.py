"""Asset checks on the compute marts, kept as evidence in audit.check_results.

``compute_thresholds_clear`` fails (ERROR) while a model has crossed, or is projected by its
running jobs to cross, a threshold its registry file asks alerts for (its verdict is kept in
audit.check_results); the alert itself is recorded in audit.compute_alerts by the run the
sensor starts (sensors.py), so each alert is one failed run and one record a day.
``compute_methods_agree`` warns when hardware- and architecture-based compute disagree beyond
the model's margin.
"""

import dagster as dg
import duckdb

from pipelines.defs.check_results import Outcome, evaluate
from pipelines.defs.compute.assets import training_compute
from pipelines.defs.resources import WarehouseResource
from warehouse.models.compute import alert_text, alerting_thresholds


def thresholds_clear(con: duckdb.DuckDBPyConnection, cluster: str | None) -> Outcome:
    """No model has an alerting threshold (models span clusters: ``cluster`` is unused)."""
    alerts = alerting_thresholds(con)
    return Outcome(
        passed=not alerts,
        metadata={
            "alerts": len(alerts),
            "first_alerts": "; ".join(alert_text(a) for a in alerts[:5]),
        },
    )


def methods_agree(con: duckdb.DuckDBPyConnection, cluster: str | None) -> Outcome:
    """Every model's hardware- and architecture-based compute agree within its margin."""
    row = con.execute(
        "SELECT count(*) FILTER (WHERE disagreement_flagged), count(*), "
        "list(model_name ORDER BY model_name) FILTER (WHERE disagreement_flagged)[1:5] "
        "FROM marts.model_compute"
    ).fetchone()
    assert row is not None
    flagged, models, sample = row
    return Outcome(
        passed=flagged == 0,
        metadata={
            "models": models,
            "models_disagreeing": flagged,
            "first_disagreeing": ", ".join(sample or []),
        },
    )


@dg.asset_check(asset=training_compute, pool="duckdb")
def compute_thresholds_clear(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """No model has crossed or is projected to cross an alerted Article 51 threshold."""
    return evaluate(context, warehouse, thresholds_clear)


@dg.asset_check(asset=training_compute, pool="duckdb")
def compute_methods_agree(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """Hardware- and architecture-based compute agree within the margin (warns)."""
    return evaluate(context, warehouse, methods_agree, dg.AssetCheckSeverity.WARN)


CHECKS = [compute_thresholds_clear, compute_methods_agree]

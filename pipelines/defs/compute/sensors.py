"""Threshold alerts: a sensor over the published compute marts, and the job it starts.

The sensor requests one run per model with alerting thresholds not yet recorded today (the run
key carries model and day, so an alert is raised once a day). The run records the alerts in
audit.compute_alerts and then fails, naming the thresholds and the notification deadlines, so
the alert reaches whoever watches failed runs (Dagster's run-failure notifications).
"""

import dagster as dg
import duckdb

from annex.errors import AnnexError
from pipelines.defs.resources import WarehouseResource
from warehouse.migrate import utc_now
from warehouse.models.compute import alert_text, alerting_thresholds, record_compute_alerts

_NOT_RECORDED_TODAY = """
SELECT t.model_name, list(t.threshold ORDER BY t.threshold) AS thresholds
FROM marts.model_compute_thresholds AS t
WHERE t.alert AND NOT EXISTS (
    SELECT 1 FROM audit.compute_alerts AS a
    WHERE a.model_name = t.model_name AND a.threshold = t.threshold AND a.day = ?
)
GROUP BY t.model_name
ORDER BY t.model_name
"""


class ComputeAlertConfig(dg.Config):
    model: str
    """The model whose alerting thresholds the run records and reports."""


@dg.op(pool="duckdb")
def raise_compute_alerts(
    context: dg.OpExecutionContext, config: ComputeAlertConfig, warehouse: WarehouseResource
) -> None:
    """Record the model's alerting thresholds in audit.compute_alerts, publish, then fail."""
    wh = warehouse.get()
    with wh.writer() as con:
        record_compute_alerts(con, f"dagster run {context.run_id}", model=config.model)
        alerts = alerting_thresholds(con, config.model)
    wh.publish()
    if not alerts:
        context.log.info(f"{config.model}: no threshold alerts any more")
        return
    lines = [alert_text(a) for a in alerts]
    raise dg.Failure(
        description=f"Article 51 threshold alert for {config.model}: " + "; ".join(lines),
        metadata={"model": config.model, "alerts": len(alerts), "thresholds": "; ".join(lines)},
    )


@dg.job(description="Record a model's Article 51 threshold alerts, then fail to raise them.")
def compute_alert_job() -> None:
    raise_compute_alerts()


@dg.sensor(
    job=compute_alert_job,
    minimum_interval_seconds=300,
    description="Request an alert run per model whose Article 51 thresholds alert and are not "
    "yet recorded today in audit.compute_alerts (read from the published compute marts).",
)
def compute_threshold_alerts(
    context: dg.SensorEvaluationContext, warehouse: WarehouseResource
) -> dg.SensorResult | dg.SkipReason:
    """Request an alert run per model whose alerting thresholds are not recorded today."""
    day = utc_now().date()
    try:
        with warehouse.get().reader() as con:
            pending = con.execute(_NOT_RECORDED_TODAY, [day]).fetchall()
    except (AnnexError, duckdb.Error) as exc:  # no published copy yet, or not migrated
        return dg.SkipReason(f"compute marts not readable: {exc}")
    if not pending:
        return dg.SkipReason("no new threshold alerts")
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                run_key=f"compute-alert:{model}:{day}",
                run_config=dg.RunConfig(
                    ops={"raise_compute_alerts": ComputeAlertConfig(model=model)}
                ),
                tags={"annex/model": model, "annex/thresholds": ",".join(thresholds)},
            )
            for model, thresholds in pending
        ]
    )

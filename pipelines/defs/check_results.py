"""What every asset check shares: a verdict with its figures, kept as evidence.

A check is a plain function ``(connection, cluster or None) -> Outcome`` over the live
warehouse; ``evaluate`` runs it for a Dagster check under the writer lock, in the run's cluster
partition (every cluster without one), and records the verdict in ``audit.check_results`` so
that reports can cite data-quality evidence without Dagster's event log.
"""

from dataclasses import dataclass, field
from typing import Any

import dagster as dg
import duckdb

from pipelines.defs.resources import WarehouseResource
from warehouse.audit import record_check_result

PARTITION_TAG = "dagster/partition"

# ``$cluster`` NULL means every cluster; the CAST lets DuckDB type a NULL parameter.
_IN_SCOPE = "(CAST($cluster AS VARCHAR) IS NULL OR {alias}cluster = $cluster)"


@dataclass(frozen=True)
class Outcome:
    """A check's verdict and the figures behind it, independent of Dagster."""

    passed: bool
    metadata: dict[str, Any] = field(default_factory=dict)


def scope(alias: str = "") -> str:
    return _IN_SCOPE.format(alias=f"{alias}." if alias else "")


def one(con: duckdb.DuckDBPyConnection, sql: str, cluster: str | None) -> tuple[Any, ...]:
    row = con.execute(sql, {"cluster": cluster}).fetchone()
    assert row is not None
    return tuple(row)


def run_cluster(context: dg.AssetCheckExecutionContext) -> str | None:
    return context.run.tags.get(PARTITION_TAG)


def evaluate(
    context: dg.AssetCheckExecutionContext,
    warehouse: WarehouseResource,
    check: Any,
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR,
) -> dg.AssetCheckResult:
    cluster = run_cluster(context)
    (spec,) = context.check_specs
    with warehouse.get().writer() as con:
        outcome: Outcome = check(con, cluster)
        record_check_result(
            con,
            check_name=spec.name,
            asset=spec.asset_key.to_user_string(),
            cluster=cluster,
            passed=outcome.passed,
            severity=severity.value,
            blocking=spec.blocking,
            run_id=context.run.run_id,
            details=outcome.metadata,
        )
    metadata = {"cluster": cluster or "all", **outcome.metadata}
    return dg.AssetCheckResult(passed=outcome.passed, severity=severity, metadata=metadata)

"""Asset checks on the lineage models: thin SQL over the live warehouse, kept as evidence.

All three warn rather than block: a training run's Kubernetes Job may not be collected yet, a
licence may still be under review, and a cycle is a producer's error that the graph reports
(every closure still terminates). Reports show what they found.
"""

import dagster as dg
import duckdb

from pipelines.defs.check_results import Outcome, evaluate, one
from pipelines.defs.lineage.assets import lineage_models
from pipelines.defs.resources import WarehouseResource


def _row(con: duckdb.DuckDBPyConnection, sql: str) -> tuple:
    """One row of a query that is not per cluster (lineage spans clusters)."""
    row = con.execute(sql).fetchone()
    assert row is not None
    return tuple(row)


def training_runs_linked(con: duckdb.DuckDBPyConnection, cluster: str | None) -> Outcome:
    """Every training run names a Kubernetes Job (annex_trainingRun.kubernetes) that the
    inventory knows.

    A run that ended before annex's first inventory of its cluster cannot be held to that: its
    Job may have been deleted (a TTL, a clean-up) before annex ever listed the cluster. Such
    runs are counted apart and do not fail the check; a run whose cluster annex has never
    collected does (a misspelt cluster name looks like that).
    """
    (unlinked, before, without_facet, runs, sample) = one(
        con,
        """
        WITH first_inventory AS (
            SELECT cluster, min(started_at) AS since
            FROM audit.collections
            WHERE source = 'kubernetes' AND status = 'succeeded'
            GROUP BY cluster
        ),
        runs AS (
            SELECT r.*, r.ended_at IS NOT NULL AND r.ended_at < f.since AS before_inventory
            FROM marts.lineage_run_jobs AS r
            LEFT JOIN first_inventory AS f ON f.cluster = r.cluster
            WHERE CAST($cluster AS VARCHAR) IS NULL OR r.cluster = $cluster
        )
        SELECT count(*) FILTER (WHERE NOT job_known AND NOT coalesce(before_inventory, false)),
               count(*) FILTER (WHERE NOT job_known AND before_inventory),
               count(*) FILTER (WHERE NOT has_kubernetes_facet),
               count(*),
               list(run_id ORDER BY run_id)
                   FILTER (WHERE NOT job_known AND NOT coalesce(before_inventory, false))[1:5]
        FROM runs
        """,
        cluster,
    )
    return Outcome(
        passed=unlinked == 0,
        metadata={
            "training_runs": runs,
            "runs_without_known_job": unlinked,
            "runs_ended_before_first_inventory": before,
            "runs_without_kubernetes_facet": without_facet,
            "first_unlinked_runs": ", ".join(str(r) for r in sample or []),
        },
    )


def leaf_datasets_described(con: duckdb.DuckDBPyConnection, cluster: str | None) -> Outcome:
    """Every source (leaf dataset) in a model's training content has a licence and a source
    category (annex_licensing.spdxExpression and annex_source.sourceCategory)."""
    (undescribed, leaves, sample) = _row(
        con,
        """
        WITH leaves AS (
            SELECT DISTINCT dataset_version_id, namespace, name, source_category,
                   spdx_expression
            FROM marts.lineage_model_sources
            WHERE is_leaf AND kind = 'DATASET'
        ),
        missing AS (
            SELECT * FROM leaves
            WHERE spdx_expression IS NULL OR source_category IS NULL
               OR source_category = 'UNKNOWN'
        )
        SELECT (SELECT count(*) FROM missing), (SELECT count(*) FROM leaves),
               (SELECT list(namespace || '/' || name ORDER BY namespace, name)[1:5] FROM missing)
        """,
    )
    return Outcome(
        passed=undescribed == 0,
        metadata={
            "leaf_datasets": leaves,
            "without_licence_or_category": undescribed,
            "first_undescribed": ", ".join(sample or []),
        },
    )


def no_cycles(con: duckdb.DuckDBPyConnection, cluster: str | None) -> Outcome:
    """The dataset-version graph has no cycle (a producer reusing version ids)."""
    (cycles, versions) = _row(
        con, "SELECT count(DISTINCT cycle_id), count(*) FROM marts.lineage_cycles"
    )
    return Outcome(passed=cycles == 0, metadata={"cycles": cycles, "versions_on_cycles": versions})


@dg.asset_check(asset=lineage_models, pool="duckdb")
def lineage_training_runs_linked(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """Every training run is linked to a known Kubernetes Job (warns)."""
    return evaluate(context, warehouse, training_runs_linked, dg.AssetCheckSeverity.WARN)


@dg.asset_check(asset=lineage_models, pool="duckdb")
def lineage_leaf_datasets_described(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """Every source dataset has a licence and a source category (warns)."""
    return evaluate(context, warehouse, leaf_datasets_described, dg.AssetCheckSeverity.WARN)


@dg.asset_check(asset=lineage_models, pool="duckdb")
def lineage_has_no_cycles(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """No cycle in the lineage graph (warns: closures terminate regardless)."""
    return evaluate(context, warehouse, no_cycles, dg.AssetCheckSeverity.WARN)


CHECKS = [lineage_training_runs_linked, lineage_leaf_datasets_described, lineage_has_no_cycles]

"""Asset checks on the attestation evidence: thin SQL over the live warehouse, kept as evidence.

``verdicts_explained`` is blocking: a failing verdict without a reason (or a pass with one)
means the verifier or the merge is wrong, and no coverage figure should be built on it. The
other two warn: the inventory can lag a new node, and coverage is rebuilt by a later step.
"""

import dagster as dg
import duckdb

from pipelines.defs.attestation.assets import attestation_coverage, attestation_records
from pipelines.defs.check_results import Outcome, evaluate, one, scope
from pipelines.defs.resources import WarehouseResource


def verdicts_explained(con: duckdb.DuckDBPyConnection, cluster: str | None) -> Outcome:
    """Every non-passing verdict names at least one reason; no passing verdict names any."""
    (unexplained, passes_with_reasons, records) = one(
        con,
        f"""
        SELECT count(*) FILTER (WHERE verdict <> 'pass' AND len(reasons) = 0),
               count(*) FILTER (WHERE verdict = 'pass' AND len(reasons) > 0),
               count(*)
        FROM core.attestation_records
        WHERE {scope()}
        """,
        cluster,
    )
    return Outcome(
        passed=unexplained == 0 and passes_with_reasons == 0,
        metadata={
            "verdicts_without_reason": unexplained,
            "passes_with_reasons": passes_with_reasons,
            "records": records,
        },
    )


def attested_nodes_known(con: duckdb.DuckDBPyConnection, cluster: str | None) -> Outcome:
    """Every node that sent attestations is (or was) a node of the cluster's inventory."""
    (unknown, nodes, sample) = one(
        con,
        f"""
        WITH attested AS (
            SELECT DISTINCT cluster, node_name FROM core.attestation_records WHERE {scope()}
        ),
        unknown AS (
            SELECT a.node_name FROM attested AS a
            WHERE NOT EXISTS (
                SELECT 1 FROM core.nodes AS n
                WHERE n.cluster = a.cluster AND n.node_name = a.node_name
            )
        )
        SELECT (SELECT count(*) FROM unknown), (SELECT count(*) FROM attested),
               (SELECT list(node_name ORDER BY node_name)[1:10] FROM unknown)
        """,
        cluster,
    )
    return Outcome(
        passed=unknown == 0,
        metadata={
            "nodes_unknown_to_inventory": unknown,
            "attested_nodes": nodes,
            "first_unknown": ", ".join(sample or []),
        },
    )


def coverage_fresh(con: duckdb.DuckDBPyConnection, cluster: str | None) -> Outcome:
    """The coverage marts took in the latest successful attestation collection of each
    cluster (the refresh's attestation horizon is that collection's start)."""
    (stale, clusters) = one(
        con,
        f"""
        WITH latest AS (
            SELECT cluster, max(started_at) AS started_at
            FROM audit.collections
            WHERE source = 'attestation' AND status = 'succeeded' AND {scope()}
            GROUP BY cluster
        ),
        refreshed AS (
            SELECT cluster, max(attestation_horizon) AS horizon
            FROM audit.attestation_refreshes GROUP BY cluster
        )
        SELECT count(*) FILTER (WHERE r.horizon IS NULL OR r.horizon < l.started_at), count(*)
        FROM latest AS l LEFT JOIN refreshed AS r USING (cluster)
        """,
        cluster,
    )
    return Outcome(
        passed=stale == 0, metadata={"clusters_with_stale_coverage": stale, "clusters": clusters}
    )


@dg.asset_check(asset=attestation_records, blocking=True, pool="duckdb")
def attestation_verdicts_explained(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """No verdict without reasons (and no pass with one)."""
    return evaluate(context, warehouse, verdicts_explained)


@dg.asset_check(asset=attestation_records, pool="duckdb")
def attested_nodes_in_inventory(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """Every attested node is known to the inventory (warns: the inventory may lag)."""
    return evaluate(context, warehouse, attested_nodes_known, dg.AssetCheckSeverity.WARN)


@dg.asset_check(asset=attestation_coverage, pool="duckdb")
def attestation_coverage_fresh(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """Coverage includes the latest attestation collection (warns)."""
    return evaluate(context, warehouse, coverage_fresh, dg.AssetCheckSeverity.WARN)


CHECKS = [attestation_verdicts_explained, attested_nodes_in_inventory, attestation_coverage_fresh]

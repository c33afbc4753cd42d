"""Asset checks on the GPU evidence: thin SQL over the live warehouse, kept as evidence too.

``no_gpu_above_peak`` is blocking: a record faster than the hardware can be means the peak
table or the probe is wrong, and no report should show it. Freshness and the GPU-identity check
warn: telemetry can lag or include GPUs the inventory has not seen yet, which reports show.
"""

from datetime import timedelta

import dagster as dg
import duckdb

from pipelines.defs.check_results import Outcome, evaluate, one, scope
from pipelines.defs.gpu_evidence.assets import gpu_benchmarks, gpu_telemetry
from pipelines.defs.resources import WarehouseResource
from warehouse.migrate import utc_now

MAX_SAMPLE_AGE = timedelta(hours=2)


def no_gpu_above_peak(con: duckdb.DuckDBPyConnection, cluster: str | None) -> Outcome:
    """No stored benchmark record beats its GPU's dense peak (FLOP/s or HBM bandwidth)."""
    (above, records) = one(
        con,
        f"""
        SELECT
            count(*) FILTER (WHERE achieved_tflops > peak_tflops OR achieved_gbps > peak_gbps),
            count(*)
        FROM core.gpu_benchmarks
        WHERE backend <> 'interpreter' AND {scope()}
        """,
        cluster,
    )
    return Outcome(passed=above == 0, metadata={"records_above_peak": above, "records": records})


def samples_fresh(
    con: duckdb.DuckDBPyConnection, cluster: str | None, max_age: timedelta = MAX_SAMPLE_AGE
) -> Outcome:
    """The newest DCGM sample is at most ``max_age`` old."""
    (last,) = one(
        con, f"SELECT max(last_ts) FROM core.gpu_telemetry_series WHERE {scope()}", cluster
    )
    if last is None:
        return Outcome(passed=False, metadata={"newest_sample": "never"})
    age = utc_now() - last
    return Outcome(
        passed=age <= max_age,
        metadata={
            "newest_sample": last.isoformat(),
            "age_minutes": round(age.total_seconds() / 60, 1),
            "max_age_minutes": max_age.total_seconds() / 60,
        },
    )


def samples_on_known_gpus(con: duckdb.DuckDBPyConnection, cluster: str | None) -> Outcome:
    """Every series names a GPU (UUID) on a node the inventory knows with that many GPUs.

    A node's physical GPUs are its ``nvidia.com/gpu`` capacity or, when more, the
    ``nvidia.com/gpu.count`` label: with the mixed MIG strategy the partitioned GPUs leave the
    whole-GPU capacity, but their exporter series keep their physical index.
    """
    (unknown, series) = one(
        con,
        f"""
        SELECT count(*) FILTER (WHERE s.gpu_uuid IS NULL OR n.node_name IS NULL
                                 OR s.gpu_index >= greatest(
                                     coalesce(n.gpu_capacity, 0),
                                     coalesce(TRY_CAST(n.labels['nvidia.com/gpu.count']
                                                       AS BIGINT), 0))),
               count(*)
        FROM core.gpu_telemetry_series AS s
        LEFT JOIN core.nodes AS n
            ON n.cluster = s.cluster AND n.node_name = s.node_name AND n.valid_to IS NULL
        WHERE {scope("s")}
        """,
        cluster,
    )
    return Outcome(
        passed=unknown == 0, metadata={"series_on_unknown_gpus": unknown, "series": series}
    )


@dg.asset_check(asset=gpu_benchmarks, blocking=True, pool="duckdb")
def gpu_benchmarks_within_peak(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """No benchmark record above its GPU's dense peak."""
    return evaluate(context, warehouse, no_gpu_above_peak)


@dg.asset_check(asset=gpu_telemetry, pool="duckdb")
def gpu_telemetry_fresh(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """The newest DCGM sample is recent (warns: telemetry may lag)."""
    return evaluate(context, warehouse, samples_fresh, dg.AssetCheckSeverity.WARN)


@dg.asset_check(asset=gpu_telemetry, pool="duckdb")
def gpu_telemetry_on_known_gpus(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """Every telemetry series is on a GPU the inventory knows (warns)."""
    return evaluate(context, warehouse, samples_on_known_gpus, dg.AssetCheckSeverity.WARN)


CHECKS = [gpu_benchmarks_within_peak, gpu_telemetry_fresh, gpu_telemetry_on_known_gpus]

"""Which training runs a compute refresh must recompute: those whose evidence changed.

A year of a 60,000-GPU fleet holds about 71,000 training runs; a few hundred a day start, end
or gain evidence. ``refresh_compute`` (warehouse/models/compute.py) gathers every run's cheap
inputs in SQL, then recomputes only the runs that need it and keeps the other rows of
``marts.training_run_compute`` and ``marts.training_run_gpus`` as they are. A run is recomputed
when:

- **what every run shares changed** (``shared_digest``): the registry, ``[compute]``,
  ``core.gpu_peak_reference``, the GPU model most GPU-hours ran on (the reference of an energy
  estimated from compute), this code or DuckDB (whose ``hash()`` the digests use). Then every
  run is (a full rebuild), as it is with no earlier state (``meta.compute_state``) or when the
  stored rows and state disagree;
- **its own inputs changed** (``meta.compute_run_inputs``): its lineage row and facets
  (``cmp_runs``), its Job's holdings in physical GPUs with their GPU models (``cmp_alloc``:
  late, closed or re-matched holdings, a node's GPU model, the peak table's SKU, dense peaks
  and TDP of each GPU model it held or declared), its nodes' GEMM benchmarks
  (``cmp_bench``) or, where they have none, the fleet's medians it falls back to, its token
  counts (``cmp_tokens``), the Job claim it lost (``cmp_claims``), its lifecycle stage and
  exclusion (which the model's other runs decide);
- **the telemetry of a day it held GPUs on changed** (``meta.compute_telemetry_days``): the
  day's ``marts.gpu_pod_daily`` rows were rebuilt (late samples), added or removed;
- **its figures move with time**: it is running, it has no end time or it holds GPUs now.

Whatever it keeps equals what a full rebuild would write (tests/warehouse/models/
test_compute_incremental.py: row for row, with evidence arriving late and out of order).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from annex.settings import ComputeSettings

_CODE = (
    Path(__file__).with_name("compute.py"),
    Path(__file__).with_name("compute_formulas.py"),
    Path(__file__),
    Path(__file__).parents[1] / "marts" / "macros" / "gpu_sharing.sql",
)
"""The files whose code makes the figures: a change to any of them rebuilds every run."""

_RUN_INPUTS = """
CREATE OR REPLACE TEMP TABLE cmp_run_inputs AS
WITH holdings AS (
    -- with the peak table's answers for the GPU model (its SKU, dense peaks and TDP)
    SELECT a.run_id,
           sum(hash(a.cluster, a.pod_uid, a.namespace, a.pod_name, a.node_name, a.gpus,
                    a.valid_from, a.valid_to, a.open, a.inferred, a.gpu_product,
                    p.peaks)::HUGEINT) AS digest,
           count(*) AS holdings,
           bool_or(a.open) AS open
    FROM cmp_alloc AS a
    LEFT JOIN cmp_products AS p USING (gpu_product)
    GROUP BY a.run_id
),
bench AS (
    SELECT run_id, sum(hash(gpu_product, dtype, frac_peak, record_ids)::HUGEINT) AS digest
    FROM cmp_bench
    GROUP BY run_id
),
fleet AS (
    -- the fleet's medians a run falls back to: its GPU models with no benchmark on its nodes
    SELECT a.run_id, sum(hash(f.gpu_product, f.dtype, f.frac_peak, f.record_ids)::HUGEINT)
               AS digest
    FROM (SELECT DISTINCT run_id, gpu_product FROM cmp_alloc) AS a
    JOIN cmp_runs AS r USING (run_id)
    LEFT JOIN core.model_registry AS m ON m.model_name = r.model_name
    JOIN cmp_fleet AS f
        ON f.gpu_product = a.gpu_product
        AND f.dtype = CASE WHEN m.model_name IS NULL THEN 'bf16' ELSE m.training_dtype END
    WHERE NOT EXISTS (
        SELECT 1 FROM cmp_bench AS b
        WHERE b.run_id = a.run_id AND b.gpu_product = a.gpu_product AND b.dtype = f.dtype)
    GROUP BY a.run_id
),
tokens AS (
    SELECT run_id, sum(hash(tokens, event_ids)::HUGEINT) AS digest
    FROM cmp_tokens
    GROUP BY run_id
)
SELECT
    r.run_id,
    hash(r, h.digest, h.holdings, b.digest, f.digest, t.digest, c.kept_run_id, c.job_uid,
         l.lifecycle_stage, l.exclusion, l.exclusion_basis, d.peaks) AS inputs_digest,
    r.running OR r.ended_at IS NULL OR coalesce(h.open, false) AS moving
FROM cmp_runs AS r
LEFT JOIN holdings AS h USING (run_id)
LEFT JOIN bench AS b USING (run_id)
LEFT JOIN fleet AS f USING (run_id)
LEFT JOIN tokens AS t USING (run_id)
LEFT JOIN cmp_claims AS c USING (run_id)
LEFT JOIN cmp_lifecycle AS l USING (run_id)
LEFT JOIN cmp_products AS d ON d.gpu_product = coalesce(r.declared_gpu_product, 'unknown')
"""

_TELEMETRY_DAYS = """
CREATE OR REPLACE TEMP TABLE cmp_telemetry_days AS
SELECT cluster, day, count(*) AS pod_days, max(refreshed_at) AS refreshed_at
FROM marts.gpu_pod_daily
GROUP BY cluster, day
"""

# The runs to recompute: every one when the state is not there to compare with (the caller
# asks for a full rebuild then); else the moving ones, the ones whose digest is new or
# changed, and the ones holding GPUs on a day whose telemetry changed.
_RECOMPUTE = """
CREATE OR REPLACE TEMP TABLE cmp_recompute AS
WITH changed_days AS (
    SELECT coalesce(n.cluster, o.cluster) AS cluster, coalesce(n.day, o.day) AS day
    FROM cmp_telemetry_days AS n
    FULL JOIN meta.compute_telemetry_days AS o ON o.cluster = n.cluster AND o.day = n.day
    WHERE n.pod_days IS DISTINCT FROM o.pod_days OR n.refreshed_at IS DISTINCT FROM o.refreshed_at
)
SELECT i.run_id
FROM cmp_run_inputs AS i
LEFT JOIN meta.compute_run_inputs AS o USING (run_id)
WHERE i.moving OR o.inputs_digest IS DISTINCT FROM i.inputs_digest
UNION
SELECT a.run_id
FROM cmp_alloc AS a
JOIN changed_days AS d
    ON d.cluster = a.cluster
    AND d.day >= CAST(a.valid_from AS DATE) AND d.day <= CAST(a.valid_to AS DATE)
"""

_CONSISTENT = """
SELECT
    (SELECT count(*) FROM meta.compute_run_inputs)
        = (SELECT count(*) FROM marts.training_run_compute)
    AND NOT EXISTS (
        SELECT 1 FROM marts.training_run_compute AS m
        ANTI JOIN meta.compute_run_inputs AS i USING (run_id))
"""

KEPT_COLUMNS = (
    "run_id", "model_name", "stage", "lifecycle_stage", "counted", "exclusion",
    "exclusion_basis", "running", "started_at", "ended_at", "cluster", "namespace",
    "kubernetes_job_name", "gpu_hours", "declared_gpu_hours", "first_allocation_at",
    "last_allocation_at", "hardware_flop", "hardware_flop_low", "hardware_flop_high",
    "architecture_flop", "architecture_flop_low", "architecture_flop_high",
    "physical_max_flop", "above_physical_max", "disagreement", "methods_ratio",
    "compute_flop", "compute_flop_low", "compute_flop_high", "compute_method",
    "compute_method_basis", "measured_gpu_joules", "energy_coverage", "energy_measured_mwh",
    "energy_measured_mwh_low", "energy_measured_mwh_high", "energy_estimated_mwh",
    "energy_estimated_mwh_low", "energy_estimated_mwh_high", "energy_mwh", "energy_mwh_low",
    "energy_mwh_high", "rate_flop_per_s", "planned_remaining_flop", "gaps",
)  # fmt: skip
"""The columns of a kept run row that the model, stage, threshold and finding rows read."""


def shared_digest(
    con: duckdb.DuckDBPyConnection,
    config: ComputeSettings,
    registry_rows: Sequence[Mapping[str, Any]],
    reference_gpu: str | None,
) -> str:
    """SHA-256 (hex) of what every run's figures depend on (module docstring)."""
    reference_table = con.execute(
        "SELECT gpu_model, dtype, peak_tflops_dense, tdp_watts FROM core.gpu_peak_reference "
        "ORDER BY ALL"
    ).fetchall()
    shared = {
        "registry": sorted(
            json.dumps(dict(row), sort_keys=True, default=str) for row in registry_rows
        ),
        "config": asdict(config),
        "peak_reference": reference_table,
        "reference_gpu": reference_gpu,
        "code": [hashlib.sha256(path.read_bytes()).hexdigest() for path in _CODE],
        "duckdb": duckdb.__version__,
    }
    text = json.dumps(shared, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def digest_runs(
    con: duckdb.DuckDBPyConnection,
    lifecycle: Iterable[Mapping[str, Any]],
    fleet: Mapping[tuple[str, str], tuple[float, list[str]]],
    sku_of: Callable[[str], str | None],
    peaks_of: Callable[[str], Any],
) -> None:
    """``cmp_run_inputs``: each run's digest and whether time moves its figures, from the
    ``cmp_*`` tables of the refresh's gathering (all runs), ``lifecycle`` (per run: its
    ``lifecycle_stage``, ``exclusion``, ``exclusion_basis``) and the peak table (``sku_of``, and
    ``peaks_of``: a GPU product's dense peaks and TDP at every dtype runs are computed at)."""
    products = sorted(  # held or declared
        p
        for (p,) in con.execute(
            "SELECT gpu_product FROM cmp_alloc UNION "
            "SELECT coalesce(declared_gpu_product, 'unknown') FROM cmp_runs"
        ).fetchall()
    )
    products_table = pa.Table.from_pylist(
        [
            {"gpu_product": p, "peaks": json.dumps([sku_of(p), peaks_of(p)], sort_keys=True)}
            for p in products
        ],
        pa.schema([("gpu_product", pa.string()), ("peaks", pa.string())]),
    )
    fleet_rows = [
        {"gpu_product": p, "dtype": dtype, "frac_peak": frac, "record_ids": list(ids)}
        for p in products
        for (sku, dtype), (frac, ids) in sorted(fleet.items())
        if sku == sku_of(p)
    ]
    lifecycle_table = pa.Table.from_pylist(
        list(lifecycle),
        pa.schema(
            [
                ("run_id", pa.string()),
                ("lifecycle_stage", pa.string()),
                ("exclusion", pa.string()),
                ("exclusion_basis", pa.string()),
            ]
        ),
    )
    fleet_table = pa.Table.from_pylist(
        fleet_rows,
        pa.schema(
            [
                ("gpu_product", pa.string()),
                ("dtype", pa.string()),
                ("frac_peak", pa.float64()),
                ("record_ids", pa.list_(pa.string())),
            ]
        ),
    )
    con.register("cmp_lifecycle", lifecycle_table)
    con.register("cmp_fleet", fleet_table)
    con.register("cmp_products", products_table)
    try:
        con.execute(_RUN_INPUTS)
    finally:
        for name in ("cmp_lifecycle", "cmp_fleet", "cmp_products"):
            con.unregister(name)
    con.execute(_TELEMETRY_DAYS)


def runs_to_recompute(con: duckdb.DuckDBPyConnection, digest: str, full: bool) -> set[str] | None:
    """The runs this refresh recomputes (``cmp_recompute``), or None for every run: asked for
    (``full``), no earlier state, shared inputs changed, or state and marts disagree."""
    state = con.execute("SELECT shared_inputs_digest FROM meta.compute_state").fetchall()
    if full or state != [(digest,)]:
        return None
    (consistent,) = con.execute(_CONSISTENT).fetchone() or (False,)
    if not consistent:
        return None
    con.execute(_RECOMPUTE)
    return {r for (r,) in con.execute("SELECT run_id FROM cmp_recompute").fetchall()}


def keep_only(con: duckdb.DuckDBPyConnection, tables: Sequence[str]) -> None:
    """Leave in each ``cmp_*`` table of ``tables`` only the rows of the runs to recompute."""
    for table in tables:
        con.execute(f"DELETE FROM {table} WHERE run_id NOT IN (SELECT run_id FROM cmp_recompute)")


def kept_runs(con: duckdb.DuckDBPyConnection, now: datetime) -> list[dict[str, Any]]:
    """The stored rows of the runs this refresh keeps (``KEPT_COLUMNS``), each with the
    ``_span`` the model roll-up reads (as ``compute._run_row`` builds it)."""
    rows = (
        con.sql(
            f"SELECT {', '.join(KEPT_COLUMNS)} FROM marts.training_run_compute "
            "WHERE run_id IN (SELECT run_id FROM cmp_run_inputs) "
            "AND run_id NOT IN (SELECT run_id FROM cmp_recompute)"
        )
        .to_arrow_table()
        .to_pylist()
    )
    for row in rows:
        if row["first_allocation_at"] is not None:
            row["_span"] = (row["first_allocation_at"], row["last_allocation_at"])
        elif row["started_at"] is not None:
            row["_span"] = (row["started_at"], row["ended_at"] or now)
        else:
            row["_span"] = None
    return rows


def record(con: duckdb.DuckDBPyConnection, now: datetime, digest: str) -> None:
    """Replace ``meta.compute_state``, ``meta.compute_run_inputs`` and
    ``meta.compute_telemetry_days`` with what this refresh computed from."""
    con.execute("DELETE FROM meta.compute_state")
    con.execute("INSERT INTO meta.compute_state VALUES (?, ?)", [now, digest])
    con.execute("DELETE FROM meta.compute_run_inputs")
    con.execute(
        "INSERT INTO meta.compute_run_inputs SELECT run_id, inputs_digest FROM cmp_run_inputs"
    )
    con.execute("DELETE FROM meta.compute_telemetry_days")
    con.execute(
        "INSERT INTO meta.compute_telemetry_days "
        "SELECT cluster, day, pod_days, refreshed_at FROM cmp_telemetry_days"
    )

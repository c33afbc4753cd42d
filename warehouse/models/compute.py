"""Training compute, time and energy per run and model, and the Article 51 thresholds.

``refresh_compute(con, config, registry_rows, catalogue)`` rebuilds, in one transaction (or the
caller's), ``core.model_registry`` and the ``marts`` tables of migrations 0008 and 0018:

1. SQL gathers the evidence per training run (lineage runs of stage PRETRAINING, FINE_TUNING or
   SYNTHETIC_GENERATION, attributed to a model by the registry's lineage job names or by their
   ``annex_trainingRun.modelName``): the Job's GPU intervals (``core.gpu_allocation_history``,
   device-plugin requests and DRA claims alike, in physical GPUs by ``marts.gpu_held``: a shared
   GPU's replica is its fraction of the GPU: ``marts.gpu_allocations_in_devices``) per GPU
   model, the telemetry of the GPU-hours whose DCGM pod label is one of the Job's pods
   (``marts.gpu_hourly``, through its per-pod daily sums ``marts.gpu_pod_daily``: counter
   resets and power-only exporters are handled there), GEMM
   benchmarks on the Job's nodes, and the tokens of the lineage facets.
2. Python applies the formulas of ``compute_formulas`` (one definition each) to those few rows
   per run, and aggregates runs into models and threshold rows.
3. The results are inserted from Arrow tables.

It reads only the warehouse; which SKU a GPU product is and its dense peak come from
``catalogue`` (annex passes its built-in peak table) where ``core.gpu_peak_reference`` has none.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import operator
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Protocol

import duckdb
import pyarrow as pa

from annex.settings import ComputeSettings
from warehouse.migrate import utc_now
from warehouse.models import compute_formulas as f
from warehouse.models import compute_inputs as inputs
from warehouse.models import sql_files
from warehouse.transaction import atomic

log = logging.getLogger(__name__)

TERMINAL_STATES = ("COMPLETE", "FAIL", "ABORT")
COMPUTE_MARTS = (
    "marts.training_run_compute",
    "marts.training_run_gpus",
    "marts.model_compute",
    "marts.model_compute_thresholds",
    "marts.model_compute_stages",
    "marts.compute_findings",
)
"""The tables refresh_compute writes (the first two per run, the others rebuilt each time)."""
COUNTED_STAGES = ("PRETRAINING", "FINE_TUNING", "SYNTHETIC_GENERATION")
_TEMP_TABLES = (
    "cmp_runs",
    "cmp_checkpoint_reads",
    "cmp_holdings",
    "cmp_alloc",
    "cmp_claims",
    "cmp_tel_days",
    "cmp_tel",
    "cmp_evidence",
    "cmp_bench",
    "cmp_tokens",
    "cmp_run_inputs",
    "cmp_telemetry_days",
    "cmp_recompute",
)


class GpuCatalogue(Protocol):
    """Which SKU a GPU product name is, and its dense peak and TDP (annex's peak table)."""

    def sku_for(self, product: str | None) -> str | None: ...

    def peak(self, sku: str, dtype: str) -> tuple[float | None, float | None]: ...


@dataclass
class _Group:
    """One run's holdings on one GPU model, and the figures derived from them."""

    gpu_product: str
    gpu_sku: str | None
    gpu_seconds: float
    """Physical GPU-seconds: a shared GPU's holders split it (marts.gpu_held)."""
    open_gpus: float
    """Physical GPUs held now (fractional where GPUs are shared)."""
    peak_tflops: float | None
    tdp_watts: float | None
    telemetry_gpu_hours: float = 0.0
    tensor_active: float | None = None
    tensor_gpu_hours: float = 0.0
    busy: float | None = None
    busy_gpu_hours: float = 0.0
    measured_gpu_joules: float = 0.0
    energy_gpu_hours: float = 0.0
    benchmark_frac_peak: float | None = None
    benchmark_ids: list[str] = field(default_factory=list)
    utilisation: float = 0.0
    utilisation_source: str = "assumed_default"
    hardware: f.Band | None = None
    energy_measured: f.Band | None = None
    """Measured energy (facility) over the GPU-hours telemetry saw; None where it saw none."""
    energy_unmeasured: f.Band | None = None
    """TDP-based estimate for the GPU-hours telemetry did not see."""
    energy_estimated: f.Band | None = None
    """TDP-based estimate over all its GPU-hours (the comparator of the measured part)."""
    declared: bool = False
    """Hardware the run's producer declared (annex_trainingRun.resources), not observed."""

    @property
    def physical_max_flop(self) -> float | None:
        if self.peak_tflops is None:
            return None
        return f.physical_max_flop(self.gpu_seconds, self.peak_tflops)


def refresh_compute(
    con: duckdb.DuckDBPyConnection,
    config: ComputeSettings,
    registry_rows: Sequence[Mapping[str, Any]],
    catalogue: GpuCatalogue,
    *,
    now: datetime | None = None,
    full: bool = False,
) -> dict[str, int]:
    """Refresh the registry copy and the compute marts; returns row counts. Atomic.

    Only the runs whose evidence changed since the last refresh are recomputed, the others'
    rows kept (``compute_inputs``: the same rows a full rebuild writes); ``full`` recomputes
    every run. The counts: ``runs``, ``models``, ``alerts`` and ``recomputed`` (runs)."""
    now = now or utc_now()
    try:
        with atomic(con):
            _write_registry(con, registry_rows, now)
            _gather(con, now)
            run_rows = _dicts(con, "SELECT * FROM cmp_runs ORDER BY run_id")
            lifecycles = _lifecycles(con, run_rows)
            peaks = _PeakLookup(con, catalogue)
            fleet = {
                (s, d): (frac, ids) for s, d, frac, ids in con.execute(_FLEET_BENCH).fetchall()
            }
            reference = _reference_gpu(con, peaks)
            dtypes = sorted({"bf16", *(str(r["training_dtype"]) for r in registry_rows)})
            inputs.digest_runs(
                con,
                (_lifecycle_row(run, lifecycles) for run in run_rows),
                fleet,
                peaks.sku_of,
                lambda product: {d: peaks.peak_of(peaks.sku_of(product), d) for d in dtypes},
            )
            digest = inputs.shared_digest(con, config, registry_rows, reference)
            recompute = inputs.runs_to_recompute(con, digest, full)
            if recompute is not None:
                inputs.keep_only(con, ("cmp_runs", "cmp_alloc", "cmp_bench", "cmp_tokens"))
                run_rows = [run for run in run_rows if run["run_id"] in recompute]
            _gather_telemetry(con)
            runs, groups = _runs(con, config, peaks, now, run_rows, lifecycles, fleet, reference)
            every_run = runs
            if recompute is not None:
                kept = {row["run_id"]: row for row in inputs.kept_runs(con, now)}
                every_run = {key: (runs.get(key) or kept[key]) for key in sorted({*runs, *kept})}
            models = _models(con, config, every_run, now)
            thresholds = _thresholds(models, every_run, now)
            written = (
                list(runs.values()),
                groups,
                list(models.values()),
                thresholds,
                _stages(every_run),
                _findings(every_run, lifecycles.claims),
            )
            for table, rows in zip(COMPUTE_MARTS, written, strict=True):
                by_run = table in COMPUTE_MARTS[:2]
                _replace(con, table, rows, now, runs_only=by_run and recompute is not None)
            alerts = sum(1 for t in thresholds if t["alert"])
            inputs.record(con, now, digest)
            con.execute(
                "INSERT INTO audit.compute_refreshes VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [now, len(registry_rows), len(every_run), len(models), alerts,
                 json.dumps(asdict(config), default=str),
                 "full" if recompute is None else "incremental", len(runs)],
            )  # fmt: skip
    finally:
        _drop_temp_tables(con)
        with contextlib.suppress(duckdb.Error):
            con.execute("DROP MACRO IF EXISTS temp.exact_sum")
    return {"runs": len(every_run), "models": len(models), "alerts": alerts,
            "recomputed": len(runs)}  # fmt: skip


class _PeakLookup:
    """Which SKU a GPU product is and its dense peak and TDP for a dtype:
    ``core.gpu_peak_reference`` first, the catalogue (annex's peak table) for what it lacks."""

    def __init__(self, con: duckdb.DuckDBPyConnection, catalogue: GpuCatalogue) -> None:
        self._catalogue = catalogue
        self._reference = {
            (sku, dtype): (tflops, tdp)
            for sku, dtype, tflops, tdp in con.execute(
                "SELECT gpu_model, dtype, peak_tflops_dense, tdp_watts FROM core.gpu_peak_reference"
            ).fetchall()
        }
        self._skus: dict[str, str | None] = {}

    def sku_of(self, product: str) -> str | None:
        if product not in self._skus:
            self._skus[product] = self._catalogue.sku_for(None if product == "unknown" else product)
        return self._skus[product]

    def peak_of(self, sku: str | None, dtype: str) -> tuple[float | None, float | None]:
        if sku is None:
            return None, None
        tflops, tdp = self._reference.get((sku, dtype), (None, None))
        if tflops is None or tdp is None:
            built_in = self._catalogue.peak(sku, dtype)
            tflops, tdp = tflops or built_in[0], tdp or built_in[1]
        return tflops, tdp


def _reference_gpu(con: duckdb.DuckDBPyConnection, peaks: _PeakLookup) -> str | None:
    """The GPU model most GPU-hours of every run ran on (the reference of an energy estimated
    from compute), among those with a known SKU; None without any."""
    seconds = con.execute(
        "SELECT gpu_product, exact_sum(gpus * (epoch_us(valid_to) - epoch_us(valid_from))) "
        "FROM cmp_alloc GROUP BY gpu_product"
    ).fetchall()
    return max(((s, p) for p, s in seconds if peaks.sku_of(p)), default=(None, None))[1]


def _lifecycle_row(run: Mapping[str, Any], lifecycles: _Lifecycles) -> dict[str, Any]:
    exclusion = lifecycles.exclusion(run)
    return {
        "run_id": run["run_id"],
        "lifecycle_stage": lifecycles.stage(run),
        "exclusion": exclusion[0] if exclusion else None,
        "exclusion_basis": exclusion[1] if exclusion else None,
    }


# -- the registry --------------------------------------------------------------------------


def _write_registry(
    con: duckdb.DuckDBPyConnection, rows: Sequence[Mapping[str, Any]], now: datetime
) -> None:
    con.execute("DELETE FROM core.model_registry")
    if not rows:
        return
    table = pa.Table.from_pylist([{**row, "loaded_at": now} for row in rows])
    con.register("cmp_registry_rows", table)
    try:
        columns = ", ".join(table.column_names)
        con.execute(
            f"INSERT INTO core.model_registry ({columns}) SELECT {columns} FROM cmp_registry_rows"
        )
    finally:
        con.unregister("cmp_registry_rows")


# -- evidence (SQL) ------------------------------------------------------------------------

_RUNS = """
CREATE OR REPLACE TEMP TABLE cmp_runs AS
WITH reg_jobs AS (
    SELECT model_name, unnest(lineage_jobs) AS job_name FROM core.model_registry
),
runs AS (
    SELECT r.*, p.job_name AS parent_job_name
    FROM core.lineage_runs AS r
    LEFT JOIN core.lineage_runs AS p ON p.run_id = r.parent_run_id
    WHERE r.stage IN ('PRETRAINING', 'FINE_TUNING', 'SYNTHETIC_GENERATION')
),
matched AS (
    SELECT runs.run_id, min(j.model_name) AS registry_model
    FROM runs
    JOIN reg_jobs AS j ON j.job_name = runs.job_name OR j.job_name = runs.parent_job_name
    GROUP BY runs.run_id
)
SELECT
    runs.run_id,
    coalesce(m.registry_model, runs.model_name) AS model_name,
    CASE WHEN m.registry_model IS NULL THEN 'run_model_name' ELSE 'registry_job' END
        AS attributed_by,
    runs.model_name AS lineage_model_name,
    runs.stage,
    runs.state,
    coalesce(runs.state NOT IN ('COMPLETE', 'FAIL', 'ABORT'), true) AS running,
    runs.started_at,
    runs.ended_at,
    runs.cluster AS kubernetes_cluster,
    runs.namespace AS kubernetes_namespace,
    runs.kubernetes_job_name,
    runs.state_event_id,
    coalesce(f.facet ->> '$.purpose', 'PRODUCTION') AS purpose,
    f.facet ->> '$.method' AS method,
    TRY_CAST(f.facet ->> '$.resources.gpuCount' AS BIGINT) AS declared_gpus,
    f.facet ->> '$.resources.gpuProduct' AS declared_gpu_product,
    (SELECT max(m.gpu_model) FROM marts.gpu_models AS m
     WHERE m.spelling = f.facet ->> '$.resources.gpuProduct') AS declared_gpu_model,
    TRY_CAST(f.facet ->> '$.generation.tokensGenerated' AS DOUBLE) AS tokens_generated
FROM runs
LEFT JOIN matched AS m ON m.run_id = runs.run_id
LEFT JOIN core.lineage_current_facets AS f
    ON f.entity_kind = 'run' AND f.run_id = runs.run_id AND f.facet_name = 'annex_trainingRun'
WHERE coalesce(m.registry_model, runs.model_name) IS NOT NULL
"""

# Runs that read a checkpoint an earlier training run of the same model wrote (any version of
# the same dataset): a PRETRAINING run among them continues the model's pre-training; one that
# reads none starts from scratch.
_CHECKPOINT_READS = """
CREATE OR REPLACE TEMP TABLE cmp_checkpoint_reads AS
WITH written AS (
    SELECT v.dataset_id, w.model_name, min(w.run_id) AS first_writer,
           max(w.run_id) AS last_writer
    FROM core.lineage_dataset_versions AS v
    JOIN cmp_runs AS w ON w.run_id = v.produced_by_run_id
    WHERE w.stage IN ('PRETRAINING', 'FINE_TUNING')
    GROUP BY v.dataset_id, w.model_name
)
SELECT DISTINCT r.run_id
FROM cmp_runs AS r
JOIN core.lineage_run_io AS i ON i.run_id = r.run_id AND i.direction = 'INPUT'
JOIN core.lineage_dataset_versions AS vi ON vi.dataset_version_id = i.dataset_version_id
JOIN written AS w
    ON w.dataset_id = vi.dataset_id AND w.model_name = r.model_name
    AND NOT (w.first_writer = r.run_id AND w.last_writer = r.run_id)
"""

# An open allocation is counted up to the last moment the inventory saw the cluster (its last
# successful snapshot's start, or the watch's last commit), never to a refresh time the
# evidence does not reach; and never past $now (the refresh time, or [compute] as_of).
_HOLDINGS = """
CREATE OR REPLACE TEMP TABLE cmp_holdings AS
SELECT a.*
FROM core.gpu_allocation_history AS a
WHERE a.resource_name = 'nvidia.com/gpu' AND a.category = 'workload'
  AND EXISTS (
      SELECT 1 FROM cmp_runs AS r
      WHERE r.kubernetes_cluster = a.cluster AND r.kubernetes_namespace = a.namespace
        AND r.kubernetes_job_name = a.job_name)
"""
"""The holdings of the runs' Jobs, before the sharing rule matches each to its node version (the
costly part: about 10 s for every holding of a 60,000-GPU fleet's year, a second for its
training Jobs' holdings)."""

_ALLOC = """
CREATE OR REPLACE TEMP TABLE cmp_alloc AS
WITH products AS (
    SELECT cluster, node_name,
           arg_max(gfd_product, valid_from) FILTER (WHERE gfd_product IS NOT NULL) AS gpu_product
    FROM core.nodes
    GROUP BY cluster, node_name
),
held AS (
    -- in physical GPUs, as capacity and GPU-hours count them (marts.gpu_holdings_in_devices,
    -- warehouse/marts/macros/gpu_sharing.sql): a time-sliced or MPS replica is 1/shares of a
    -- GPU, a HAMi pod nvidia.com/gpucores/100 of each GPU, a DRA claim shared by k pods 1/k
    SELECT * FROM marts.gpu_holdings_in_devices('cmp_holdings')
),
horizons AS (
    SELECT cluster, max(observed_at) AS horizon
    FROM (
        SELECT cluster, started_at AS observed_at FROM audit.collections
        WHERE source = 'kubernetes' AND status = 'succeeded'
        UNION ALL
        SELECT cluster, committed_at FROM core.watch_cursors
    )
    GROUP BY cluster
)
SELECT
    row_number() OVER () AS alloc_id,
    r.run_id,
    a.cluster,
    a.pod_uid,
    a.namespace,
    a.pod_name,
    a.node_name,
    a.gpus,
    a.valid_from,
    -- (DuckDB's greatest() skips NULLs: no horizon must stay NULL, hence the CASE)
    least(
        coalesce(
            a.valid_to,
            CASE WHEN h.horizon IS NOT NULL THEN greatest(h.horizon, a.valid_from) END,
            $now
        ),
        $now
    ) AS valid_to,
    a.valid_to IS NULL AS open,
    coalesce(a.valid_to_inferred, false) AS inferred,
    coalesce(p.gpu_product, 'unknown') AS gpu_product
FROM cmp_runs AS r
JOIN held AS a
    ON a.cluster = r.kubernetes_cluster AND a.namespace = r.kubernetes_namespace
    AND a.job_name = r.kubernetes_job_name
LEFT JOIN products AS p ON p.cluster = a.cluster AND p.node_name = a.node_name
LEFT JOIN horizons AS h ON h.cluster = a.cluster
WHERE a.valid_from < $now
"""

# One claim per Kubernetes Job: when several lineage runs name the same (cluster, namespace,
# Job), its GPU-hours go to the run whose lineage span overlaps the Job's allocations most (then
# the earliest start, then the smallest run id: the same choice whatever order the evidence came
# in); the others lose its holdings and are not counted (marts.compute_findings names both).
_CLAIMS = """
CREATE OR REPLACE TEMP TABLE cmp_claims AS
WITH spans AS (
    SELECT a.run_id, a.cluster, a.namespace, r.kubernetes_job_name AS job_name,
           min(a.valid_from) AS first_at, max(a.valid_to) AS last_at,
           any_value(r.started_at) AS started_at, any_value(r.ended_at) AS ended_at
    FROM cmp_alloc AS a
    JOIN cmp_runs AS r USING (run_id)
    GROUP BY a.run_id, a.cluster, a.namespace, r.kubernetes_job_name
),
scored AS (
    SELECT *,
           greatest(0, epoch(least(last_at, coalesce(ended_at, $now)))
                       - epoch(greatest(first_at, coalesce(started_at, first_at)))) AS overlap
    FROM spans
),
ranked AS (
    SELECT *,
           count(*) OVER job AS claims,
           row_number() OVER (job ORDER BY overlap DESC, started_at NULLS LAST, run_id) AS rank,
           first_value(run_id) OVER (job ORDER BY overlap DESC, started_at NULLS LAST, run_id)
               AS kept_run_id
    FROM scored
    WINDOW job AS (PARTITION BY cluster, namespace, job_name)
)
SELECT r.run_id, r.kept_run_id, r.cluster, r.namespace, r.job_name,
       (SELECT arg_max(j.job_uid, j.first_seen_at) FROM core.jobs AS j
        WHERE j.cluster = r.cluster AND j.namespace = r.namespace AND j.job_name = r.job_name)
           AS job_uid
FROM ranked AS r
WHERE r.claims > 1 AND r.rank > 1
"""

# The telemetry of a holding: the pod-node-days of marts.gpu_pod_daily (migration 0011, about
# 200 times fewer rows than the GPU-hours) with its pod label on its node, limited to the
# holding's own hours (from the hour of valid_from to valid_to) so that a pod name reused later
# is not counted twice. A day whose first_hour..last_hour lies wholly inside those hours counts
# whole; one that straddles the holding's start or end (the same pod name on the same node
# earlier or later that day) is re-read hour by hour from marts.gpu_hourly (_TELEMETRY_EDGES)
# and one wholly outside is left out: the same GPU-hours as joining marts.gpu_hourly on the hour
# range, at a fraction of the cost. ``counted``: the row's sums are the holding's (a straddling
# day's own are not; its re-read rows are).
_TELEMETRY_DAYS = """
CREATE OR REPLACE TEMP TABLE cmp_tel_days AS
SELECT
    a.alloc_id,
    d.cluster,
    d.day,
    d.workload_namespace,
    d.workload_pod,
    d.node_name,
    date_trunc('hour', a.valid_from) AS lo,
    a.valid_to AS hi,
    d.first_hour >= date_trunc('hour', a.valid_from) AND d.last_hour < a.valid_to AS counted,
    d.gpu_uuids,
    d.labelled_gpu_hours,
    d.tensor_gpu_hours,
    d.tensor_active_gpu_hours,
    d.busy_gpu_hours,
    d.busy_active_gpu_hours,
    d.energy_gpu_hours,
    d.energy_joules
FROM cmp_alloc AS a
JOIN marts.gpu_pod_daily AS d
    ON d.cluster = a.cluster AND d.workload_namespace = a.namespace
    AND d.workload_pod = a.pod_name AND d.node_name = a.node_name
    AND d.last_hour >= date_trunc('hour', a.valid_from) AND d.first_hour < a.valid_to
"""

_TELEMETRY_EDGES = """
INSERT INTO cmp_tel_days
SELECT
    e.alloc_id, e.cluster, e.day, e.workload_namespace, e.workload_pod, e.node_name, e.lo, e.hi,
    true,
    list_sort(list_distinct(list(h.gpu_uuid))),
    exact_sum(h.pod_label_fraction),
    exact_sum(CASE WHEN h.tensor_active IS NOT NULL THEN h.pod_label_fraction END),
    exact_sum(h.tensor_active * h.pod_label_fraction),
    exact_sum(CASE WHEN h.busy IS NOT NULL THEN h.pod_label_fraction END),
    exact_sum(h.busy * h.pod_label_fraction),
    exact_sum(CASE WHEN coalesce(h.energy_joules, h.energy_estimated_joules) IS NOT NULL
             THEN h.pod_label_fraction END),
    exact_sum(coalesce(h.energy_joules, h.energy_estimated_joules) * h.pod_label_fraction)
FROM (SELECT * FROM cmp_tel_days WHERE NOT counted) AS e
JOIN marts.gpu_hourly AS h
    ON h.cluster = e.cluster AND h.day = e.day AND h.workload_namespace = e.workload_namespace
    AND h.workload_pod = e.workload_pod AND h.node_name = e.node_name
    AND h.hour >= e.lo AND h.hour < e.hi
WHERE h.day >= $first AND h.day <= $last
GROUP BY e.alloc_id, e.cluster, e.day, e.workload_namespace, e.workload_pod, e.node_name, e.lo,
         e.hi
"""

_TELEMETRY = """
CREATE OR REPLACE TEMP TABLE cmp_tel AS
SELECT
    a.run_id,
    a.gpu_product,
    exact_sum(d.labelled_gpu_hours) AS telemetry_gpu_hours,
    exact_sum(d.tensor_active_gpu_hours) AS tensor_weighted,
    coalesce(exact_sum(d.tensor_gpu_hours), 0) AS tensor_gpu_hours,
    exact_sum(d.busy_active_gpu_hours) AS busy_weighted,
    coalesce(exact_sum(d.busy_gpu_hours), 0) AS busy_gpu_hours,
    coalesce(exact_sum(d.energy_joules), 0) AS measured_gpu_joules,
    coalesce(exact_sum(d.energy_gpu_hours), 0) AS energy_gpu_hours
FROM cmp_tel_days AS d
JOIN cmp_alloc AS a ON a.alloc_id = d.alloc_id
WHERE d.counted
GROUP BY a.run_id, a.gpu_product
"""

# The evidence lists of each run (pods and GPUs), kept in SQL: built as Python lists they cost
# more than every formula together at fleet scale; _replace joins them to the run rows.
# list_sort(list_distinct(...)) is several times cheaper than list(DISTINCT ... ORDER BY ...).
_EVIDENCE = """
CREATE OR REPLACE TEMP TABLE cmp_evidence AS
WITH pods AS (
    SELECT run_id, list_sort(list_distinct(list(pod_uid))) AS pod_uids
    FROM cmp_alloc
    GROUP BY run_id
),
gpu_lists AS (
    -- a pod's GPUs are mostly the same list every day: each distinct list once (a quarter less
    -- time for a 60,000-GPU fleet's year than flattening every pod-day's)
    SELECT DISTINCT a.run_id, d.gpu_uuids
    FROM cmp_tel_days AS d
    JOIN cmp_alloc AS a ON a.alloc_id = d.alloc_id
    WHERE d.counted
),
gpus AS (
    SELECT run_id, list_sort(list_distinct(flatten(list(gpu_uuids)))) AS gpu_uuids
    FROM gpu_lists
    GROUP BY run_id
)
SELECT
    r.run_id,
    coalesce(p.pod_uids, []) AS evidence_pod_uids,
    coalesce(g.gpu_uuids, []) AS evidence_gpu_uuids
FROM cmp_runs AS r
LEFT JOIN pods AS p ON p.run_id = r.run_id
LEFT JOIN gpus AS g ON g.run_id = r.run_id
"""

_BENCH = """
CREATE OR REPLACE TEMP TABLE cmp_bench AS
SELECT
    a.run_id,
    a.gpu_product,
    b.dtype,
    median(b.frac_peak_flops) AS frac_peak,
    list(DISTINCT b.record_id ORDER BY b.record_id) AS record_ids
FROM (SELECT DISTINCT run_id, cluster, node_name, gpu_product FROM cmp_alloc) AS a
JOIN core.gpu_benchmarks AS b ON b.cluster = a.cluster AND b.node_name = a.node_name
WHERE b.benchmark = 'gemm' AND b.frac_peak_flops IS NOT NULL AND coalesce(b.correct, true)
GROUP BY a.run_id, a.gpu_product, b.dtype
"""

_FLEET_BENCH = """
SELECT gpu_model, dtype, median(frac_peak_flops), list(DISTINCT record_id ORDER BY record_id)[1:20]
FROM core.gpu_benchmarks
WHERE benchmark = 'gemm' AND frac_peak_flops IS NOT NULL AND coalesce(correct, true)
  AND gpu_model IS NOT NULL
GROUP BY gpu_model, dtype
"""

_TOKENS = """
CREATE OR REPLACE TEMP TABLE cmp_tokens AS
SELECT r.run_id,
       sum(TRY_CAST(c.facet ->> '$.tokensConsumed' AS DOUBLE)) AS tokens,
       list(DISTINCT c.event_id ORDER BY c.event_id) AS event_ids
FROM cmp_runs AS r
JOIN core.lineage_current_facets AS c
    ON c.entity_kind = 'input' AND c.run_id = r.run_id AND c.facet_name = 'annex_trainingUsage'
WHERE r.stage <> 'SYNTHETIC_GENERATION'
GROUP BY r.run_id
UNION ALL
SELECT r.run_id,
       sum(TRY_CAST(v.facet ->> '$.size.tokens' AS DOUBLE)) AS tokens,
       list(DISTINCT o.first_event_id ORDER BY o.first_event_id) AS event_ids
FROM cmp_runs AS r
JOIN core.lineage_run_io AS o ON o.run_id = r.run_id AND o.direction = 'OUTPUT'
JOIN core.lineage_version_facets AS v
    ON v.dataset_version_id = o.dataset_version_id AND v.facet_name = 'annex_content'
WHERE r.stage = 'SYNTHETIC_GENERATION'
GROUP BY r.run_id
"""


def _gather(con: duckdb.DuckDBPyConnection, now: datetime) -> None:
    """Every run's evidence but its telemetry: cheap enough to gather for all runs each time."""
    con.execute(sql_files.statement("create_exact_sum"))
    con.execute(_RUNS)
    con.execute(_CHECKPOINT_READS)
    con.execute(_HOLDINGS)
    con.execute(_ALLOC, {"now": now})
    con.execute(_CLAIMS, {"now": now})
    con.execute("DELETE FROM cmp_alloc WHERE run_id IN (SELECT run_id FROM cmp_claims)")
    con.execute(_BENCH)
    con.execute(_TOKENS)


def _gather_telemetry(con: duckdb.DuckDBPyConnection) -> None:
    """The telemetry and evidence lists of the runs left in cmp_runs and cmp_alloc."""
    con.execute(_TELEMETRY_DAYS)
    edges = con.execute("SELECT min(day), max(day) FROM cmp_tel_days WHERE NOT counted").fetchone()
    if edges is not None and edges[0] is not None:
        con.execute(_TELEMETRY_EDGES, {"first": edges[0], "last": edges[1]})
    con.execute(_TELEMETRY)
    con.execute(_EVIDENCE)


def _dicts(con: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> list[dict]:
    """Rows as dicts, through Arrow (several times faster than zipping fetched tuples)."""
    return con.sql(sql, params=params).to_arrow_table().to_pylist()


# -- per run -------------------------------------------------------------------------------


def _runs(
    con: duckdb.DuckDBPyConnection,
    config: ComputeSettings,
    peaks: _PeakLookup,
    now: datetime,
    run_rows: Sequence[Mapping[str, Any]],
    lifecycles: _Lifecycles,
    fleet: Mapping[tuple[str, str], tuple[float, list[str]]],
    reference_product: str | None,
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The rows of ``run_rows`` (the runs to compute) and of their GPU models."""
    registry = {r["model_name"]: r for r in _dicts(con, "SELECT * FROM core.model_registry")}
    alloc = _dicts(
        con,
        """
        SELECT run_id, gpu_product,
               exact_sum(gpus * (epoch_us(valid_to) - epoch_us(valid_from))) / 1e6 AS gpu_seconds,
               round(coalesce(exact_sum(CASE WHEN open THEN gpus END), 0), 9) AS open_gpus,
               round(exact_sum(gpus), 9) AS gpus,
               coalesce(exact_sum(CASE WHEN inferred
                                       THEN gpus * (epoch_us(valid_to) - epoch_us(valid_from))
                                  END), 0) / 1e6 AS inferred_gpu_seconds,
               min(valid_from) AS first_at, max(valid_to) AS last_at
        FROM cmp_alloc GROUP BY run_id, gpu_product ORDER BY run_id, gpu_product
        """,
    )
    tel = {(t["run_id"], t["gpu_product"]): t for t in _dicts(con, "SELECT * FROM cmp_tel")}
    bench = {
        (b["run_id"], b["gpu_product"], b["dtype"]): b
        for b in _dicts(con, "SELECT * FROM cmp_bench")
    }
    tokens = {t["run_id"]: t for t in _dicts(con, "SELECT * FROM cmp_tokens")}
    by_run: dict[str, list[dict]] = defaultdict(list)
    for row in alloc:
        by_run[row["run_id"]].append(row)
    sku_of, peak_of = peaks.sku_of, peaks.peak_of

    runs: dict[str, dict[str, Any]] = {}
    group_rows: list[dict[str, Any]] = []
    for run in run_rows:
        reg = registry.get(run["model_name"])
        dtype = reg["training_dtype"] if reg else "bf16"
        gaps: list[str] = []
        if reg is None:
            gaps.append(f"no registry file for model {run['model_name']}")
        groups: list[_Group] = []
        benchmark_ids: set[str] = set()
        for holding in by_run.get(run["run_id"], []):
            product = holding["gpu_product"]
            sku = sku_of(product)
            tflops, tdp = peak_of(sku, dtype)
            g = _Group(product, sku, holding["gpu_seconds"], holding["open_gpus"], tflops, tdp)
            t = tel.get((run["run_id"], product))
            if t:
                g.telemetry_gpu_hours = t["telemetry_gpu_hours"] or 0.0
                g.tensor_gpu_hours = t["tensor_gpu_hours"]
                g.busy_gpu_hours = t["busy_gpu_hours"]
                if g.tensor_gpu_hours > 0:
                    g.tensor_active = t["tensor_weighted"] / g.tensor_gpu_hours
                if g.busy_gpu_hours > 0:
                    g.busy = t["busy_weighted"] / g.busy_gpu_hours
                g.measured_gpu_joules = t["measured_gpu_joules"]
                g.energy_gpu_hours = t["energy_gpu_hours"]
            b = bench.get((run["run_id"], product, dtype))
            if b is not None:
                g.benchmark_frac_peak, g.benchmark_ids = b["frac_peak"], list(b["record_ids"])
            elif sku and (sku, dtype) in fleet:
                g.benchmark_frac_peak, ids = fleet[(sku, dtype)]
                g.benchmark_ids = list(ids)
            _apply(g, config, gaps)
            if g.utilisation_source == "benchmark_calibrated":
                benchmark_ids.update(g.benchmark_ids)
            groups.append(g)
            group_rows.append(_group_row(run, g))
        claim = lifecycles.claims.get(run["run_id"])
        if not groups and claim is None and run["declared_gpus"] and run["started_at"]:
            # a run the inventory never saw: the hardware its producer declared
            product = run["declared_gpu_product"] or "unknown"
            tflops, tdp = peak_of(sku_of(product), dtype)
            span = ((run["ended_at"] or now) - run["started_at"]).total_seconds()
            g = _Group(
                product,
                sku_of(product),
                run["declared_gpus"] * max(0.0, span),
                run["declared_gpus"] if run["running"] else 0,
                tflops,
                tdp,
                declared=True,
            )
            _apply(g, config, gaps)
            groups.append(g)
            group_rows.append(_group_row(run, g))
            gaps.append(
                f"not observed by the inventory: {run['declared_gpus']} × {product} declared by "
                "its producer over its lineage span (hardware method at the assumed utilisation)"
            )
        reference_peak = peak_of(sku_of(reference_product), dtype) if reference_product else None
        first_row = len(group_rows) - len(groups)
        runs[run["run_id"]] = _run_row(
            run, reg, registry, groups, by_run.get(run["run_id"], []), tokens.get(run["run_id"]),
            config, now, gaps, sorted(benchmark_ids), lifecycles,
            (reference_product, *reference_peak) if reference_peak else None,
        )  # fmt: skip
        for row in group_rows[first_row:]:
            row["counted"] = runs[run["run_id"]]["counted"]
    return runs, group_rows


def _apply(g: _Group, config: ComputeSettings, gaps: list[str]) -> None:
    """Utilisation, hardware compute and both energies of one run's holdings on a GPU model."""
    hours = f.gpu_hours(g.gpu_seconds)
    if g.tensor_active is not None:
        g.utilisation, g.utilisation_source = g.tensor_active, "telemetry_tensor_active"
        coverage = g.tensor_gpu_hours / hours if hours else 0.0
    elif g.busy is not None and g.benchmark_frac_peak is not None:
        g.utilisation = f.benchmark_utilisation(g.busy, g.benchmark_frac_peak)
        g.utilisation_source = "benchmark_calibrated"
        coverage = g.busy_gpu_hours / hours if hours else 0.0
    else:
        g.utilisation, g.utilisation_source, coverage = config.default_mfu, "assumed_default", 0.0
    if g.peak_tflops is None:
        gaps.append(f"no dense peak for {g.gpu_product}: no hardware-based compute for it")
    else:
        flop = f.hardware_flop(g.gpu_seconds, g.peak_tflops, g.utilisation)
        g.hardware = f.hardware_band(flop, g.utilisation_source, coverage)
    uncovered_hours = max(0.0, hours - g.energy_gpu_hours)
    facility = config.server_overhead * config.pue
    if g.energy_gpu_hours > 0:
        g.energy_measured = f.Band.relative(
            g.measured_gpu_joules * facility / f.JOULES_PER_MWH, f.MEASURED_POWER_BAND
        )
    if g.tdp_watts is None:
        gaps.append(f"no TDP for {g.gpu_product}: no energy estimate for its unmeasured GPU-hours")
        return
    if hours and uncovered_hours > 1e-9 and not g.declared:
        gaps.append(
            f"{uncovered_hours:.2f} of {hours:.2f} GPU-hours on {g.gpu_product} without DCGM "
            "energy or power: estimated at TDP"
        )
    g.energy_unmeasured = f.estimated_energy(
        uncovered_hours, g.tdp_watts, config.power_fraction, config.server_overhead, config.pue
    )
    g.energy_estimated = f.estimated_energy(
        hours, g.tdp_watts, config.power_fraction, config.server_overhead, config.pue
    )


def _whole_gpus(physical: float) -> int:
    """The GPUs a count touches, for the BIGINT gpu-count columns: a share of a GPU is one GPU
    touched (4 time-sliced replicas of one GPU: 1). GPU-hours and rates keep the fraction."""
    return math.ceil(round(physical, 6))


def _group_row(run: Mapping[str, Any], g: _Group) -> dict[str, Any]:
    return {
        "run_id": run["run_id"],
        "model_name": run["model_name"],
        "gfd_product": g.gpu_product,
        "gpu_model": g.gpu_sku,
        "gpu_hours": f.gpu_hours(g.gpu_seconds),
        "open_gpus": _whole_gpus(g.open_gpus),
        "peak_tflops_dense": g.peak_tflops,
        "tdp_watts": g.tdp_watts,
        "telemetry_gpu_hours": g.telemetry_gpu_hours,
        "tensor_active": g.tensor_active,
        "busy": g.busy,
        "benchmark_frac_peak": g.benchmark_frac_peak,
        "utilisation": g.utilisation,
        "utilisation_source": g.utilisation_source,
        **_band("hardware_flop", g.hardware),
        "measured_gpu_joules": g.measured_gpu_joules,
        "energy_gpu_hours": g.energy_gpu_hours,
        "declared": g.declared,
    }


def _band(name: str, band: f.Band | None) -> dict[str, float | None]:
    if band is None:
        return {name: None, f"{name}_low": None, f"{name}_high": None}
    return {name: band.value, f"{name}_low": band.low, f"{name}_high": band.high}


def _sum(bands: Sequence[f.Band | None]) -> f.Band | None:
    present = [b for b in bands if b is not None]
    if not present:
        return None
    # from the first band, not ZERO + it: the same sums (0.0 + x == x), one Band fewer per call,
    # none for the usual single band (most runs hold one GPU model)
    total = present[0]
    for band in present[1:]:
        total = total + band
    return total


@dataclass(frozen=True)
class _Lifecycles:
    """Which runs count toward their model's compute (the Guidelines' lifecycle rules)."""

    checkpoint_reads: frozenset[str]
    """Runs that read a checkpoint an earlier training run of their model wrote."""
    starts: Mapping[str, str]
    """Model -> the run that starts its lifecycle: its first from-scratch production
    pre-training run (by start, then run id)."""
    claims: Mapping[str, Mapping[str, Any]]
    """Run -> the Job claim it lost (cmp_claims): another run holds its Job's GPU-hours."""

    def stage(self, run: Mapping[str, Any]) -> str:
        if run["stage"] == "SYNTHETIC_GENERATION":
            return "synthetic_data_generation"
        if run["stage"] == "FINE_TUNING":
            return "reinforcement_learning" if run["method"] == "RL" else "fine_tuning"
        if run["run_id"] in self.checkpoint_reads:
            return "continued_pretraining"
        return "pretraining"

    def exclusion(self, run: Mapping[str, Any]) -> tuple[str, str] | None:
        """(exclusion, basis) of a run that does not count, else None."""
        claim = self.claims.get(run["run_id"])
        if claim is not None:
            return (
                "job_claimed",
                f"its Kubernetes Job {claim['namespace']}/{claim['job_name']} is claimed by run "
                f"{claim['kept_run_id']}: a GPU-hour is counted once, so this run is listed, "
                "not counted",
            )
        if run["purpose"] != "PRODUCTION":
            return (
                "exploratory",
                f"{_PURPOSES.get(run['purpose'], run['purpose'].lower())}: it does not feed the "
                "final weights, so it need not be counted (Guidelines para ~122); listed here",
            )
        if self.stage(run) == "pretraining" and self.starts.get(run["model_name"]) != run["run_id"]:
            return (
                "new_pretraining",
                "a second from-scratch pre-training run (it reads none of the model's "
                "checkpoints): a new large pre-training run starts a new model (Guidelines para "
                "~23); register it as its own model",
            )
        return None


_PURPOSES = {
    "ABLATION": "an ablation run",
    "EXPLORATORY": "an exploratory run",
    "HYPERPARAMETER_SEARCH": "a hyperparameter-search run",
}


def _lifecycles(
    con: duckdb.DuckDBPyConnection, run_rows: Sequence[Mapping[str, Any]]
) -> _Lifecycles:
    reads = frozenset(
        r for (r,) in con.execute("SELECT run_id FROM cmp_checkpoint_reads").fetchall()
    )
    claims = {c["run_id"]: c for c in _dicts(con, "SELECT * FROM cmp_claims")}
    starts: dict[str, str] = {}
    ordered = sorted(run_rows, key=lambda r: (r["started_at"] or datetime.max, r["run_id"]))
    for run in ordered:
        if (
            run["stage"] == "PRETRAINING"
            and run["purpose"] == "PRODUCTION"
            and run["run_id"] not in reads
            and run["run_id"] not in claims
        ):
            starts.setdefault(run["model_name"], run["run_id"])
    return _Lifecycles(reads, starts, claims)


def _run_row(
    run: Mapping[str, Any],
    reg: Mapping[str, Any] | None,
    registry: Mapping[str, Mapping[str, Any]],
    groups: Sequence[_Group],
    holdings: Sequence[Mapping[str, Any]],
    token_row: Mapping[str, Any] | None,
    config: ComputeSettings,
    now: datetime,
    gaps: list[str],
    benchmark_ids: list[str],
    lifecycles: _Lifecycles,
    reference: tuple[str, float | None, float | None] | None,
) -> dict[str, Any]:
    observed = [g for g in groups if not g.declared]
    gpu_seconds = sum(g.gpu_seconds for g in observed)
    hours = f.gpu_hours(gpu_seconds) if observed else None
    declared = [g for g in groups if g.declared]
    declared_hours = f.gpu_hours(sum(g.gpu_seconds for g in declared)) if declared else None
    inferred = sum(h["inferred_gpu_seconds"] for h in holdings)
    if inferred > 0:
        gaps.append(
            f"{f.gpu_hours(inferred):.2f} GPU-hours end at an inferred time (the pod was gone at "
            "the next collection): exact to the collection interval only"
        )
    if not groups:
        gaps.append(
            "no GPU holdings for its Kubernetes Job in the inventory and no declared hardware: "
            "no hardware-based compute or physical maximum"
        )
    if holdings:
        first = min(h["first_at"] for h in holdings)
        last = max(h["last_at"] for h in holdings)
        wall, wall_source = (last - first).total_seconds(), "allocations"
    elif run["started_at"] is not None:
        first, last = run["started_at"], run["ended_at"] or now
        wall, wall_source = (last - first).total_seconds(), "lineage"
    else:
        first = last = None
        wall, wall_source = None, None
    telemetry_hours = sum(g.telemetry_gpu_hours for g in observed)
    energy_hours = sum(g.energy_gpu_hours for g in observed)
    sources = {g.utilisation_source for g in groups}
    hardware = _sum([g.hardware for g in groups])
    maxima = [g.physical_max_flop for g in groups]
    physical_max = sum(maxima) if maxima and None not in maxima else None  # type: ignore[arg-type]
    # architecture: N of the trained model, of the generator for generation stages
    generator = run["stage"] in f.GENERATION_STAGES
    param_reg = registry.get(run["lineage_model_name"]) if generator else reg
    parameters = total_parameters = None
    if param_reg is not None:
        parameters = param_reg["active_parameters"] or param_reg["parameters"]
        total_parameters = param_reg["parameters"]
    token_count = token_row["tokens"] if token_row else None
    if generator:
        if run["tokens_generated"] is not None:
            token_count = run["tokens_generated"]
        elif token_count:
            gaps.append(
                "the generator's facets give only the kept samples' tokens (no "
                "annex_trainingRun.generation.tokensGenerated): the compute of the discarded "
                "samples, which counts too (Guidelines para ~119), is missing: a lower bound"
            )
    architecture = None
    if parameters is None:
        whose = run["lineage_model_name"] if generator else run["model_name"]
        gaps.append(f"no parameter count for {whose}: no architecture-based compute")
    elif not token_count:
        gaps.append("no token counts in the lineage facets: no architecture-based compute")
    else:
        architecture = f.Band.relative(
            f.architecture_flop(parameters, token_count, run["stage"]), f.ARCHITECTURE_BAND
        )
    margin = (reg or {}).get("disagreement_margin") or config.disagreement_margin
    # a running run's hardware figure is compute so far, its architecture figure the plan
    gap = ratio = None
    if not run["running"]:
        gap = f.disagreement(
            hardware.value if hardware else None, architecture.value if architecture else None
        )
        if hardware is not None and architecture is not None and architecture.value > 0:
            ratio = hardware.value / architecture.value
    above = (  # a running run's architecture figure is its plan, not compute done
        not run["running"]
        and architecture is not None
        and physical_max is not None
        and architecture.value > physical_max * (1 + 1e-9)
    )
    # A running run's token counts come from its START facets: a plan, not compute done yet.
    done_architecture = None if run["running"] or above else architecture
    record = f.compute_of_record(hardware, done_architecture)
    basis = _method_basis(run, hardware, architecture, record, above, ratio, gap, margin)
    planned_remaining = None
    if run["running"] and architecture is not None:
        done = record[0].value if record else 0.0
        planned_remaining = max(0.0, architecture.value - done)
        gaps.append(
            "running: its architecture-based figure is the plan of its START facets, counted "
            "as planned, not as compute done"
        )
    namespaces = (reg or {}).get("namespaces") or []
    rate = 0.0
    if run["running"]:
        rate = sum(
            g.open_gpus * g.peak_tflops * 1e12 * g.utilisation
            for g in groups
            if g.peak_tflops is not None
        )
    energy, energy_method = _run_energy(groups, record, reference, config)
    if energy is None:
        gaps.append("no basis for an energy figure (no GPU-hours, no GPU model, no compute)")
    measured = _sum([g.energy_measured for g in groups])
    exclusion = lifecycles.exclusion(run)
    event_ids = sorted({run["state_event_id"], *(token_row["event_ids"] if token_row else [])})
    return {
        "run_id": run["run_id"],
        "model_name": run["model_name"],
        "attributed_by": run["attributed_by"],
        "lineage_model_name": run["lineage_model_name"],
        "stage": run["stage"],
        "lifecycle_stage": lifecycles.stage(run),
        "purpose": run["purpose"],
        "counted": exclusion is None,
        "exclusion": exclusion[0] if exclusion else None,
        "exclusion_basis": exclusion[1] if exclusion else None,
        "state": run["state"],
        "running": run["running"],
        "started_at": run["started_at"],
        "ended_at": run["ended_at"],
        "cluster": run["kubernetes_cluster"],
        "namespace": run["kubernetes_namespace"],
        "kubernetes_job_name": run["kubernetes_job_name"],
        "namespace_in_registry": (run["kubernetes_namespace"] in namespaces)
        if namespaces
        else None,
        "gpus": _whole_gpus(sum(h["gpus"] for h in holdings)),
        "open_gpus": _whole_gpus(sum(g.open_gpus for g in groups)),
        "gpu_hours": hours,
        "declared_gpu_hours": declared_hours,
        "declared_gpus": run["declared_gpus"],
        "declared_gpu_model": run["declared_gpu_model"],
        "first_allocation_at": min(h["first_at"] for h in holdings) if holdings else None,
        "last_allocation_at": max(h["last_at"] for h in holdings) if holdings else None,
        "wall_clock_seconds": wall,
        "wall_clock_source": wall_source,
        "hardware_days": (
            f.hardware_days(hours or declared_hours)
            if (hours or declared_hours) is not None
            else None
        ),
        "utilisation": (
            sum(g.utilisation * g.gpu_seconds for g in groups) / sum(g.gpu_seconds for g in groups)
            if sum(g.gpu_seconds for g in groups)
            else None
        ),
        "utilisation_source": (sources.pop() if len(sources) == 1 else "mixed")
        if sources
        else None,
        "telemetry_coverage": min(1.0, telemetry_hours / hours) if hours else None,
        **_band("hardware_flop", hardware),
        "parameters": parameters,
        "total_parameters": total_parameters,
        "tokens": token_count,
        "flop_per_parameter_token": (
            f.GENERATION_MULTIPLIER if generator else f.TRAINING_MULTIPLIER
        ),
        **_band("architecture_flop", architecture),
        "physical_max_flop": physical_max,
        "physical_max_source": (
            None
            if physical_max is None
            else ("declared" if any(g.declared for g in groups) else "allocations")
        ),
        "above_physical_max": above,
        "disagreement": gap,
        "methods_ratio": ratio,
        "disagreement_margin": margin,
        "disagreement_flagged": gap > margin if gap is not None else None,
        **_band("compute_flop", record[0] if record else None),
        "compute_method": record[1] if record else None,
        "compute_method_basis": basis,
        "measured_gpu_joules": sum(g.measured_gpu_joules for g in observed) if observed else None,
        "energy_coverage": min(1.0, energy_hours / hours) if hours else None,
        **_band("energy_measured_mwh", measured),
        **_band("energy_estimated_mwh", _sum([g.energy_estimated for g in observed])),
        **_band("energy_mwh", energy),
        "energy_measured_share": (
            (measured.value / energy.value if measured else 0.0)
            if energy is not None and energy.value > 0
            else None
        ),
        "energy_method": energy_method,
        "rate_flop_per_s": rate,
        "planned_remaining_flop": planned_remaining,
        "gaps": gaps,
        "evidence_event_ids": [e for e in event_ids if e],
        "evidence_benchmark_ids": benchmark_ids,
        # for the model roll-up, not stored
        "_span": (first, last) if first is not None else None,
    }


def _method_basis(
    run: Mapping[str, Any],
    hardware: f.Band | None,
    architecture: f.Band | None,
    record: tuple[f.Band, str] | None,
    above: bool,
    ratio: float | None,
    gap: float | None,
    margin: float,
) -> str | None:
    """Why the compute of record is the figure it is, in words."""
    if record is None:
        return None
    if above:
        return (
            "hardware: the architecture-based figure exceeds the run's physical maximum (its "
            "GPU-seconds at dense peak), an error in its inputs (parameters, tokens or the "
            "run-to-Job link)"
        )
    if run["running"]:
        return "hardware: running, so the compute done so far (its token counts are a plan)"
    if hardware is None or architecture is None:
        return f"{record[1]}: the only estimate the evidence allows"
    agreement = "agree within" if gap is not None and gap <= margin else "differ beyond"
    return (
        f"{record[1]}: the larger of the two; they {agreement} the {margin:.0%} margin "
        f"(hardware / architecture = {ratio:.2g})"
    )


def _run_energy(
    groups: Sequence[_Group],
    record: tuple[f.Band, str] | None,
    reference: tuple[str, float | None, float | None] | None,
    config: ComputeSettings,
) -> tuple[f.Band | None, str | None]:
    """The run's energy of record and how it was obtained: measured where telemetry saw the
    GPU-hours, TDP-based for the rest; without GPU-hours, from the compute of record at the
    assumed utilisation on the reference GPU (Annex XI 2(e) allows an estimate from compute)."""
    factors = (
        f"TDP × {config.power_fraction:g} × server overhead {config.server_overhead:g} × "
        f"PUE {config.pue:g}"
    )
    if groups:
        parts = [g.energy_measured for g in groups] + [g.energy_unmeasured for g in groups]
        total = _sum(parts)
        measured = any(g.energy_measured for g in groups)
        if total is None:
            return None, None
        if any(g.declared for g in groups):
            return total, f"estimated: declared GPU-hours × {factors}"
        if not measured:
            return total, f"estimated: GPU-hours × {factors} (no telemetry)"
        return total, (
            "measured: integrated DCGM energy × server overhead × PUE where telemetry saw the "
            f"GPU-hours; estimated for the rest: GPU-hours × {factors}"
        )
    if record is None or reference is None or reference[1] is None or reference[2] is None:
        return None, None
    product, tflops, tdp = reference
    gpu_seconds = record[0].value / (tflops * 1e12 * config.default_mfu)
    joules = gpu_seconds * tdp * config.power_fraction * config.server_overhead * config.pue
    band = f.Band.relative(joules / f.JOULES_PER_MWH, f.ESTIMATED_ENERGY_BAND)
    return band, (
        f"estimated from compute: compute ÷ ({product} dense peak × assumed utilisation "
        f"{config.default_mfu:g}) × {factors}"
    )


# -- per model -----------------------------------------------------------------------------


def _models(
    con: duckdb.DuckDBPyConnection,
    config: ComputeSettings,
    runs: Mapping[str, Mapping[str, Any]],
    now: datetime,
) -> dict[str, dict[str, Any]]:
    registry = {r["model_name"]: r for r in _dicts(con, "SELECT * FROM core.model_registry")}
    by_model: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    excluded: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for run in runs.values():
        (by_model if run["counted"] else excluded)[run["model_name"]].append(run)
    names = sorted(set(by_model) | set(excluded) | set(registry))
    own: dict[str, f.Band | None] = {
        name: _runs_band(by_model.get(name, []), "compute_flop") for name in names
    }

    def cumulative(name: str, seen: frozenset[str]) -> float | None:
        """The model's own compute plus its bases' (recursively); None when one is unknown."""
        reg = registry.get(name)
        mine = own[name].value if own.get(name) else None
        if mine is None and reg is not None and reg["reported_compute_flop"]:
            mine = reg["reported_compute_flop"]
        if mine is None:
            return None
        base = base_compute(name, seen | {name})
        return None if base is None else mine + base

    def base_compute(name: str, seen: frozenset[str]) -> float | None:
        total = 0.0
        for base in (registry.get(name) or {}).get("base_models") or []:
            value = None if base in seen else cumulative(base, seen)
            if value is None:
                return None
            total += value
        return total

    models: dict[str, dict[str, Any]] = {}
    for name in names:
        reg = registry.get(name)
        model_runs = by_model.get(name, [])
        gaps = sorted({gap for r in model_runs for gap in r["gaps"]})
        if reg is None:
            gaps.insert(0, f"no registry file for model {name}")
        base = base_compute(name, frozenset({name})) if reg else 0.0
        if reg and reg["base_models"] and base is None:
            gaps.append("a base model's compute is unknown: cumulative compute is a lower bound")
        own_band = own[name]
        if own_band is None and reg is not None and reg["reported_compute_flop"]:
            own_band = f.Band(*(reg["reported_compute_flop"],) * 3)
        cumulative_band = (own_band or f.ZERO) + f.Band(*((base or 0.0),) * 3)
        hardware = _runs_band(model_runs, "hardware_flop")
        architecture = _runs_band([r for r in model_runs if not r["running"]], "architecture_flop")
        both = [r for r in model_runs if r["disagreement"] is not None]
        both_hardware = sum(r["hardware_flop"] for r in both)
        both_architecture = sum(r["architecture_flop"] for r in both)
        gap = f.disagreement(both_hardware, both_architecture) if both else None
        margin = (reg or {}).get("disagreement_margin") or config.disagreement_margin
        hours = sum(r["gpu_hours"] or 0.0 for r in model_runs)
        declared_hours = sum(r["declared_gpu_hours"] or 0.0 for r in model_runs)
        energy_hours = sum(
            (r["energy_coverage"] or 0.0) * (r["gpu_hours"] or 0.0) for r in model_runs
        )
        measured = _runs_band(model_runs, "energy_measured_mwh")
        estimated = _runs_band(model_runs, "energy_estimated_mwh")
        energy = _runs_band(model_runs, "energy_mwh")
        if any(r["energy_mwh"] is None for r in model_runs):
            gaps.append("a counted run has no energy figure: energy_mwh is a lower bound")
        maxima = [r["physical_max_flop"] for r in model_runs]
        spans = [r["_span"] for r in model_runs if r["_span"]]
        wall = f.union_seconds(spans) if spans else None
        rate = sum(r["rate_flop_per_s"] for r in model_runs)
        plan_end = reg["plan_end"] if reg else None
        coverage = energy_hours / hours if hours else None
        share = (
            (measured.value / energy.value if measured else 0.0)
            if energy is not None and energy.value > 0
            else None
        )
        models[name] = {
            "model_name": name,
            "in_registry": reg is not None,
            "provider": reg["provider"] if reg else None,
            "parameters": reg["parameters"] if reg else None,
            "active_parameters": reg["active_parameters"] if reg else None,
            "base_models": list(reg["base_models"] or []) if reg else [],
            "runs": len(model_runs),
            "running_runs": sum(1 for r in model_runs if r["running"]),
            "excluded_runs": len(excluded.get(name, [])),
            "excluded_run_ids": sorted(r["run_id"] for r in excluded.get(name, [])),
            "stages": sorted({r["stage"] for r in model_runs}),
            "gpu_hours": hours,
            "declared_gpu_hours": declared_hours,
            "wall_clock_seconds": wall,
            "wall_clock_days": wall / 86_400 if wall is not None else None,
            "hardware_days": f.hardware_days(hours + declared_hours),
            "time_band": f.time_band(wall) if wall is not None else None,
            **_band("hardware_flop", hardware),
            **_band("architecture_flop", architecture),
            "disagreement": gap,
            "disagreement_flagged": gap > margin if gap is not None else None,
            "methods_ratio": both_hardware / both_architecture if both_architecture else None,
            **_band("own_compute_flop", own_band),
            "physical_max_flop": sum(maxima) if maxima and None not in maxima else None,
            "base_compute_flop": base,
            **_band("cumulative_compute_flop", cumulative_band),
            "compute_methods": sorted(
                {r["compute_method"] for r in model_runs if r["compute_method"]}
            ),
            "measured_gpu_joules": sum(r["measured_gpu_joules"] or 0.0 for r in model_runs),
            "energy_coverage": coverage,
            **_band("energy_mwh", energy),
            "energy_mwh_rounded": f.round_significant(energy.value) if energy else None,
            "energy_measured_share": share,
            "energy_method": _energy_method(share, config) if energy is not None else None,
            **_band("energy_measured_mwh", measured),
            "energy_measured_mwh_rounded": f.round_significant(measured.value)
            if measured
            else None,
            "energy_measured_method": (
                _measured_method(coverage, config) if measured is not None else None
            ),
            **_band("energy_estimated_mwh", estimated),
            "energy_estimated_mwh_rounded": (
                f.round_significant(estimated.value) if estimated else None
            ),
            "energy_estimated_method": (
                _estimated_method(config) if estimated is not None else None
            ),
            "rate_flop_per_s": rate,
            "plan_end": plan_end,
            "projected_compute_flop": (
                f.projected_flop(cumulative_band.value, rate, now, plan_end) if plan_end else None
            ),
            "planned_compute_flop": (
                cumulative_band.value + sum(planned)
                if (
                    planned := [
                        r["planned_remaining_flop"]
                        for r in model_runs
                        if r["planned_remaining_flop"] is not None
                    ]
                )
                else None
            ),
            "gaps": gaps,
            "evidence_run_ids": sorted(r["run_id"] for r in model_runs),
            "_registry": reg,
            "_base_known": base is not None,
        }
    return models


def _runs_band(runs: Sequence[Mapping[str, Any]], name: str) -> f.Band | None:
    """The sum of the runs' band ``name`` (its value, ``_low`` and ``_high`` columns), None when
    none has it: the same sums as ``_sum`` of their bands (left to right from the first, since
    0.0 + x == x), without building a Band per run (a year holds 71,000 runs)."""
    present = [r for r in runs if r[name] is not None]
    if not present:
        return None
    value, low, high = (
        sum(map(operator.itemgetter(column), present))
        for column in (name, f"{name}_low", f"{name}_high")
    )
    return f.Band(value, low, high)


def _measured_method(coverage: float | None, config: ComputeSettings) -> str:
    share = f"{100 * (coverage or 0):.0f} %"
    return (
        f"DCGM energy counters (power gauge where no counter), integrated per GPU-hour, on {share}"
        f" of GPU-hours (only those); × server overhead {config.server_overhead:g} × PUE "
        f"{config.pue:g}"
    )


def _estimated_method(config: ComputeSettings) -> str:
    return (
        f"GPU-hours × TDP × {config.power_fraction:g} × server overhead "
        f"{config.server_overhead:g} × PUE {config.pue:g}"
    )


def _energy_method(share: float | None, config: ComputeSettings) -> str:
    return (
        f"measured (integrated DCGM energy) for {_percent(share)} of the total; the "
        f"rest estimated (GPU-hours × TDP × {config.power_fraction:g} × server overhead "
        f"{config.server_overhead:g} × PUE {config.pue:g}, or from compute at the assumed "
        f"utilisation {config.default_mfu:g} where GPU-hours are unknown, Annex XI 2(e))"
    )


def _percent(share: float | None) -> str:
    """A share as a percentage a reader can trust: two significant figures below 1 %, so
    0.0018 % is not printed as 0 %."""
    value = 100 * (share or 0.0)
    return f"{value:.2g} %" if 0 < value < 1 else f"{value:.0f} %"


STAGE_ORDER = (
    "pretraining",
    "continued_pretraining",
    "fine_tuning",
    "reinforcement_learning",
    "synthetic_data_generation",
)


def _stages(runs: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per model and lifecycle stage, over the counted runs: both methods and the record."""
    grouped: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for run in runs.values():
        if run["counted"]:
            grouped[(run["model_name"], run["lifecycle_stage"])].append(run)
    rows = []
    for (model, stage), members in sorted(
        grouped.items(), key=lambda kv: (kv[0][0], STAGE_ORDER.index(kv[0][1]))
    ):
        finished = [r for r in members if r["methods_ratio"] is not None]
        hardware_both = sum(r["hardware_flop"] for r in finished)
        architecture_both = sum(r["architecture_flop"] for r in finished)
        record = _runs_band(members, "compute_flop")
        methods = sorted({r["compute_method"] for r in members if r["compute_method"]})
        energy = _runs_band(members, "energy_mwh")
        measured = _runs_band(members, "energy_measured_mwh")
        maxima = [r["physical_max_flop"] for r in members]
        basis = defaultdict(int)
        for r in members:
            if r["compute_method_basis"]:
                basis[r["compute_method_basis"].split(":")[0] + ": " + _basis_kind(r)] += 1
        hardware = _runs_band(members, "hardware_flop")
        architecture = _runs_band([r for r in members if not r["running"]], "architecture_flop")
        rows.append(
            {
                "model_name": model,
                "lifecycle_stage": stage,
                "runs": len(members),
                "running_runs": sum(1 for r in members if r["running"]),
                "gpu_hours": sum(r["gpu_hours"] or 0.0 for r in members),
                "hardware_flop": hardware.value if hardware else None,
                "architecture_flop": architecture.value if architecture else None,
                "methods_ratio": hardware_both / architecture_both if architecture_both else None,
                **_band("compute_flop", record),
                "compute_method": (methods[0] if len(methods) == 1 else "mixed")
                if methods
                else None,
                "compute_method_basis": "; ".join(
                    f"{count} run{'s' if count > 1 else ''} {text}"
                    for text, count in sorted(basis.items())
                )
                or None,
                "physical_max_flop": sum(maxima) if maxima and None not in maxima else None,
                "energy_mwh": energy.value if energy else None,
                "energy_measured_share": (
                    (measured.value / energy.value if measured else 0.0)
                    if energy is not None and energy.value > 0
                    else None
                ),
            }
        )
    return rows


def _basis_kind(run: Mapping[str, Any]) -> str:
    if run["above_physical_max"]:
        return "architecture figure above the physical maximum"
    if run["running"]:
        return "running (compute so far)"
    if run["methods_ratio"] is None:
        return "only estimate"
    return "larger of the two"


def _findings(
    runs: Mapping[str, Mapping[str, Any]], claims: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """What an officer must see behind the figures, one row per run and kind."""
    rows = []
    for run in sorted(runs.values(), key=lambda r: (r["model_name"], r["run_id"])):
        job = (
            f"{run['cluster']}/{run['namespace']}/{run['kubernetes_job_name']}"
            if run["kubernetes_job_name"]
            else None
        )
        claim = claims.get(run["run_id"])
        if claim is not None:
            uid = f" (uid {claim['job_uid']})" if claim["job_uid"] else ""
            rows.append(
                _finding(
                    run, "job_claimed_twice", "high", claim["kept_run_id"], f"{job}{uid}",
                    f"Kubernetes Job {job}{uid} is named by runs {claim['kept_run_id']} and "
                    f"{run['run_id']}: its GPU-hours are counted once, for "
                    f"{claim['kept_run_id']} (the larger overlap with the Job's allocations); "
                    f"{run['run_id']} is listed, not counted",
                )
            )  # fmt: skip
        if run["above_physical_max"]:
            rows.append(
                _finding(
                    run, "above_physical_max", "high", None, job,
                    f"run {run['run_id']}: 6·N·D = {run['architecture_flop']:.3g} FLOP exceeds "
                    f"its physical maximum of {run['physical_max_flop']:.3g} FLOP (its "
                    "GPU-seconds at dense peak): the parameter count, the token count or the "
                    "run-to-Job link is wrong; the hardware-based figure is of record",
                )
            )  # fmt: skip
        listed_apart = _LISTED_APART.get(run["exclusion"])
        if listed_apart is not None:  # the Guidelines allow it: said, not a fault
            message = f"run {run['run_id']} is {run['exclusion_basis']}"
            rows.append(_finding(run, listed_apart, "info", None, job, message))
    return rows


_LISTED_APART = {"exploratory": "exploratory_run", "new_pretraining": "new_pretraining_run"}
"""Exclusions that are findings of their own kind (a claimed Job is job_claimed_twice)."""


def _finding(
    run: Mapping[str, Any],
    kind: str,
    severity: str,
    other: str | None,
    job: str | None,
    message: str,
) -> dict[str, Any]:
    return {
        "model_name": run["model_name"],
        "run_id": run["run_id"],
        "kind": kind,
        "severity": severity,
        "other_run_id": other,
        "kubernetes_job": job,
        "message": message,
    }


# -- thresholds ----------------------------------------------------------------------------

LANGUAGE_OUTPUTS = frozenset({"text", "code", "audio"})
"""Outputs that are language (text, code as text, speech): Guidelines point 17."""
VISUAL_OUTPUTS = frozenset({"image", "video"})
"""Outputs of text-to-image and text-to-video models (with text among the inputs)."""


def generates_language(registry_row: Mapping[str, Any] | None) -> bool:
    """Whether the 10^23 indicative criterion can apply: the model generates language (text or
    audio), text-to-image or text-to-video (Guidelines point 17), by its registry modalities."""
    if registry_row is None:
        return False
    outputs = set(registry_row["output_modalities"] or [])
    inputs = set(registry_row["input_modalities"] or [])
    return bool(outputs & LANGUAGE_OUTPUTS) or bool(outputs & VISUAL_OUTPUTS and "text" in inputs)


def _thresholds(
    models: Mapping[str, Mapping[str, Any]],
    runs: Mapping[str, Mapping[str, Any]],
    now: datetime,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    counted_by_model: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for run in runs.values():
        if run["counted"]:
            counted_by_model[run["model_name"]].append(run)
    for name, model in models.items():
        reg = model["_registry"]
        counted = counted_by_model.get(name, [])
        contributions = [
            (r["_span"][0], r["_span"][1], r["compute_flop"])
            for r in counted
            if r["_span"] and r["compute_flop"]
        ]
        # what each counted run's recorded plan (its START) adds: its compute, or its plan
        plans = sorted(
            (
                r["started_at"],
                r["run_id"],
                (r["compute_flop"] or 0.0) + (r["planned_remaining_flop"] or 0.0),
            )
            for r in counted
            if r["started_at"] is not None
        )
        base = model["base_compute_flop"] or 0.0
        has_base = bool(reg and reg["base_models"])
        own = model["own_compute_flop"] or 0.0
        bases = [models.get(b, {}) for b in (reg["base_models"] or [])] if has_base else []
        original_systemic = has_base and (
            any((b.get("_registry") or {}).get("systemic_risk") for b in bases)
            or (model["_base_known"] and base >= f.SYSTEMIC_RISK_FLOP)
        )
        if has_base and model["_base_known"]:
            modification_flop = base * f.MODIFICATION_SHARE
            modification_basis = (
                "one third of the original model's compute (Guidelines points 60-61)"
            )
        elif original_systemic:
            modification_flop = f.SYSTEMIC_RISK_FLOP * f.MODIFICATION_SHARE
            modification_basis = (
                "10^25/3 FLOP: the original's compute is unknown and it is a systemic-risk "
                "model (Guidelines point 61)"
            )
        elif has_base:
            modification_flop = f.GPAI_FLOP * f.MODIFICATION_SHARE
            modification_basis = (
                "10^23/3 FLOP: the original's compute is unknown and it is not known to be a "
                "systemic-risk model (Guidelines point 61)"
            )
        else:
            modification_flop = f.GPAI_FLOP * f.MODIFICATION_SHARE
            modification_basis = (
                "a modification's threshold, one third of its original's compute (Guidelines "
                "points 60-61): this model modifies no base model"
            )
        planned_total = model["planned_compute_flop"]
        planned_own = (
            own + planned_total - model["cumulative_compute_flop"]
            if planned_total is not None
            else None
        )
        language = generates_language(reg)
        outputs = ", ".join((reg or {}).get("output_modalities") or []) or "none recorded"
        specs = [
            ("gpai", f.GPAI_FLOP,
             "10^23 FLOP: indicative criterion of a general-purpose AI model that generates "
             "language, text-to-image or text-to-video (Guidelines point 17)",
             model["cumulative_compute_flop"], model["cumulative_compute_flop_high"], base,
             language, planned_total, False),
            ("systemic_risk", f.SYSTEMIC_RISK_FLOP,
             "10^25 FLOP: presumption of high-impact capabilities, systemic risk (Art 51(2))",
             model["cumulative_compute_flop"], model["cumulative_compute_flop_high"], base, True,
             planned_total, True),
            ("modification", modification_flop, modification_basis,
             own, model["own_compute_flop_high"] or 0.0, 0.0, has_base, planned_own,
             original_systemic),
        ]  # fmt: skip
        for threshold, flop, basis, compared, high, offset, applies, planned, notifies in specs:
            crossed_at = projected_at = learned_at = basis_of_projection = None
            if not applies:
                status = "not_applicable"
            elif compared >= flop:
                status = "crossed"
                crossed_at = f.crossing_time(contributions, flop, offset)
                if crossed_at is None and contributions:
                    crossed_at = min(c[0] for c in contributions)
                learned_at = f.plan_reaching(plans, flop, offset)
            else:
                plan_end = model["plan_end"]
                if plan_end is not None:
                    projected_at = f.projected_crossing(
                        compared, model["rate_flop_per_s"], now, plan_end, flop
                    )
                if projected_at is not None:
                    status, basis_of_projection = "projected", "rate_to_plan_end"
                    learned_at = max(
                        (r["started_at"] for r in counted if r["running"] and r["started_at"]),
                        default=None,
                    )
                elif planned is not None and planned >= flop:
                    status, basis_of_projection = "projected", "planned_tokens"
                    learned_at = f.plan_reaching(plans, flop, offset)
                elif high >= flop:
                    status = "within_band"
                else:
                    status = "below"
            due = None
            if notifies and status in ("crossed", "projected"):
                moments = [m for m in (crossed_at, learned_at) if m is not None]
                due_from = min(moments) if moments else projected_at
                due = f.notification_due(due_from) if due_from else None
            enabled = (
                (reg["alerts_enabled"] and threshold in reg["alert_thresholds"]) if reg else True
            )
            rows.append(
                {
                    "model_name": name,
                    "threshold": threshold,
                    "threshold_flop": flop,
                    "threshold_basis": basis,
                    "compared_flop": compared,
                    "compared_flop_high": high or compared,
                    "applies": applies,
                    "status": status,
                    "crossed_at": crossed_at,
                    "projected_crossing_at": projected_at,
                    "projection_basis": basis_of_projection,
                    "learned_at": learned_at,
                    "notification_due": due,
                    "consequence": _consequence(threshold, status, notifies, outputs),
                    "alert_enabled": bool(enabled),
                    "alert": bool(enabled) and status in ("crossed", "projected"),
                }
            )
    return rows


def _consequence(threshold: str, status: str, notifies: bool, outputs: str) -> str:
    """What a threshold's status means for the provider, with its source."""
    if status == "not_applicable":
        if threshold == "gpai":
            return (
                "does not apply: the indicative criterion covers models that generate language "
                "(text or audio), text-to-image or text-to-video (Guidelines point 17); this "
                f"model's outputs are {outputs}"
            )
        if threshold == "modification":
            return "does not apply: the model modifies no base model"
        return "does not apply"
    if status in ("below", "within_band"):
        text = "below the threshold"
        if status == "within_band":
            text += ", but the high end of the compute band reaches it: improve the evidence"
        return text
    will = "reaches" if status == "crossed" else "will reach (by the counted runs' plans)"
    if threshold == "gpai":
        return (
            f"cumulative compute {will} 10^23 FLOP: the model is presumed a general-purpose AI "
            "model and the Art 53 obligations apply; nothing is notified for this criterion "
            "(Guidelines point 17, footnote 7)"
        )
    if threshold == "systemic_risk":
        return (
            f"cumulative compute {will} 10^25 FLOP: presumed to have high-impact capabilities "
            "(Art 51(2)); notify the Commission within two weeks of meeting it or of learning "
            "that it will be met (Art 52(1))"
        )
    text = (
        f"the modification's own compute {will} the threshold: the modifier becomes the "
        "provider of a new model (Guidelines points 60-61)"
    )
    if notifies:
        text += "; its original is a systemic-risk model, so notify within two weeks (Art 52(1))"
    return text


# -- writing -------------------------------------------------------------------------------


def _replace(
    con: duckdb.DuckDBPyConnection,
    table: str,
    rows: Sequence[Mapping[str, Any]],
    now: datetime,
    *,
    runs_only: bool = False,
) -> None:
    """Write ``rows`` in place of ``table``'s rows, or with ``runs_only`` in place of the rows of
    the runs recomputed (``cmp_recompute``) and of runs no longer there."""
    if runs_only:
        con.execute(
            f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM cmp_recompute) "
            "OR run_id NOT IN (SELECT run_id FROM cmp_run_inputs)"
        )
    else:
        con.execute(f"DELETE FROM {table}")
    if not rows:
        return
    columns = [
        name
        for (name,) in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE schema_name = ? AND table_name = ? "
            "ORDER BY column_index",
            table.split("."),
        ).fetchall()
    ]
    types = {
        name: kind
        for name, kind in con.execute(
            "SELECT column_name, data_type FROM duckdb_columns() "
            "WHERE schema_name = ? AND table_name = ?",
            table.split("."),
        ).fetchall()
    }
    joined = {c for c in columns if c.startswith("evidence_") and c not in rows[0]}
    own = [c for c in columns if c not in joined]
    # Every row of a table is built by one function, so rows[0]'s keys are every row's: one
    # itemgetter call per row and a zip transpose, not a dict lookup per cell.
    present = [c for c in own if c in rows[0] and c != "refreshed_at"]
    cells = map(operator.itemgetter(*present), rows) if len(present) > 1 else []
    data: dict[str, Sequence[Any]] = dict(zip(present, zip(*cells, strict=True), strict=True))
    if len(present) == 1:
        data[present[0]] = [row[present[0]] for row in rows]
    for c in own:
        if c not in data:
            data[c] = [now if c == "refreshed_at" else None] * len(rows)
    arrow = pa.table({c: pa.array(data[c], _arrow_type(types[c])) for c in own})
    con.register("cmp_rows", arrow)
    try:
        # the evidence lists a run row leaves out come from cmp_evidence (_EVIDENCE)
        source = "cmp_rows JOIN cmp_evidence USING (run_id)" if joined else "cmp_rows"
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {source}")
    finally:
        con.unregister("cmp_rows")


def _arrow_type(duck: str) -> pa.DataType:
    return {
        "VARCHAR": pa.string(),
        "DOUBLE": pa.float64(),
        "BIGINT": pa.int64(),
        "INTEGER": pa.int32(),
        "BOOLEAN": pa.bool_(),
        "TIMESTAMP": pa.timestamp("us"),
        "DATE": pa.date32(),
        "VARCHAR[]": pa.list_(pa.string()),
    }[duck]


def _drop_temp_tables(con: duckdb.DuckDBPyConnection) -> None:
    for name in _TEMP_TABLES:
        with contextlib.suppress(duckdb.Error):
            con.execute(f"DROP TABLE IF EXISTS temp.{name}")


# -- alerts --------------------------------------------------------------------------------

_NEW_ALERTS = """
SELECT t.model_name, t.threshold, t.status, t.threshold_flop, t.compared_flop, t.crossed_at,
       t.projected_crossing_at, t.notification_due
FROM marts.model_compute_thresholds AS t
WHERE t.alert
  AND (CAST($model AS VARCHAR) IS NULL OR t.model_name = $model)
  AND NOT EXISTS (
      SELECT 1 FROM audit.compute_alerts AS a
      WHERE a.model_name = t.model_name AND a.threshold = t.threshold AND a.day = $day
  )
ORDER BY t.model_name, t.threshold
"""


def record_compute_alerts(
    con: duckdb.DuckDBPyConnection,
    raised_by: str,
    *,
    model: str | None = None,
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """Record every alerting threshold of ``marts.model_compute_thresholds`` (of ``model``, or
    all) in ``audit.compute_alerts``, once per model, threshold and UTC day; returns the alerts
    recorded now (an alert already recorded today is not recorded again)."""
    now = now or utc_now()
    with atomic(con):
        alerts = _dicts(con, _NEW_ALERTS, {"model": model, "day": now.date()})
        for alert in alerts:
            con.execute(
                "INSERT INTO audit.compute_alerts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                [alert["model_name"], alert["threshold"], now.date(), alert["status"],
                 alert["threshold_flop"], alert["compared_flop"], alert["crossed_at"],
                 alert["projected_crossing_at"], alert["notification_due"], now, raised_by],
            )  # fmt: skip
    return alerts


def alerting_thresholds(
    con: duckdb.DuckDBPyConnection, model: str | None = None
) -> list[dict[str, Any]]:
    """The thresholds of ``marts.model_compute_thresholds`` that alert now (of ``model``, or
    all), whether or not they were recorded already."""
    return _dicts(
        con,
        "SELECT model_name, threshold, status, threshold_flop, compared_flop, crossed_at, "
        "projected_crossing_at, notification_due, consequence FROM marts.model_compute_thresholds "
        "WHERE alert AND (CAST($model AS VARCHAR) IS NULL OR model_name = $model) "
        "ORDER BY model_name, threshold",
        {"model": model},
    )


def alert_text(alert: Mapping[str, Any]) -> str:
    """One alerting threshold in words: what was met and what it obliges (a deadline only where
    the law asks for a notification)."""
    action = (
        f"notify the Commission by {alert['notification_due']:%Y-%m-%d}"
        if alert["notification_due"] is not None
        else "no notification; the obligations it brings apply"
    )
    return (
        f"{alert['model_name']} {alert['threshold']} ({alert['threshold_flop']:.3g} FLOP) "
        f"{alert['status']}: compute {alert['compared_flop']:.3g} FLOP; {action}"
    )

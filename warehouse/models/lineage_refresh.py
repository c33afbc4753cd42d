"""Lineage marts: every model checkpoint's upstream closure, and the cycles of the graph.

``refresh_lineage(con)`` keeps, from ``core.lineage_run_io`` (the graph: a run reads its INPUT
versions and writes its OUTPUT versions), in one transaction (or the caller's):

* ``marts.lineage_models``: every checkpoint (a dataset version of kind MODEL that a run wrote),
  named by its producing run's ``annex_trainingRun.modelName``;
* ``marts.lineage_model_inputs``: each checkpoint's transitive upstream, from a version to every
  run that wrote it and that run's inputs. The walk is a recursive CTE over the node set: with
  ``USING KEY (model, version)`` and a ``recurring`` anti-join a version already reached is
  never expanded again, so it ends on diamonds and cycles and yields the fewest runs to each
  version (its depth), a breadth-first search in SQL. ``in_eu_scope`` is a second, plain
  ``UNION`` recursion (the reference's pattern; the macro ``marts.lineage_upstream`` is the
  same) that does not walk past another model's checkpoint: a teacher is a generator model of
  this one, its own training data is not this model's;
* ``marts.lineage_cycles``: the versions on a cycle (only a producer reusing version ids makes
  one). Edges that cannot be on a cycle are trimmed first (a version nothing writes into, or
  nothing reads, repeatedly; one statement per round, at most ``TRIM_ROUNDS``), then what is
  left is closed transitively (a ``UNION`` recursion, which ends) and a version reaching itself
  is on a cycle; versions that reach each other share a ``cycle_id``.

The ``marts.lineage_eu_*`` views and ``marts.lineage_run_jobs`` read these tables and ``core``.
Runs' state and current facets are kept by the merge of each collection (only what it touched),
so they are current before this runs.

**Incremental.** Rebuilding every checkpoint's closure at every refresh grows with the whole
history (two 200,000-event loads: 4.5 s, then 10.0 s; a year's would take minutes). So a
refresh recomputes only the checkpoints that the lineage collections it takes in (succeeded,
not in ``audit.lineage_refreshed_collections``) can have changed, and keeps the other closures:

* the *touched* versions: every output of a run those collections brought an edge for (a new
  input of a run gives all its outputs a new upstream; a new output is a new upstream, or a
  version that stops being a leaf), and every checkpoint that is new, gone or changed (the
  ``in_eu_scope`` walk stops at other models' checkpoints, by name);
* a checkpoint is recomputed when it is touched itself or its current closure holds a touched
  version. That is exact: a new path upstream of a checkpoint leaves it through an old path to
  the output of some new edge, so that output is in its current closure (or is the checkpoint);
  depth, ``is_leaf`` and ``in_eu_scope`` change only along such paths or at touched versions;
* a ``kind`` changed by a later ``datasetType`` facet is updated in place in the kept rows.

An input sent without a version facet is an edge the merge can move later (to the version
current at its run's start, once the write is known: ``lineage_merge.sql`` step 7); a moved
edge names its collection (``resolved_collection_id``), and its run counts as touched.

The cycle search runs over every edge only when an edge of a touched run is on a cycle (one of
the run's outputs reaches, downstream, one of its own inputs: a walk per touched run, short
when their outputs are new) or an edge the marts reflected has moved; otherwise the cycles
found before stand, since no edge left the graph. ``marts.lineage_models`` rows are written
again for the recomputed checkpoints and those whose own columns changed (all of them when the
cycles were searched). The first refresh (nothing in ``audit.lineage_refreshes``) and
``full=True`` rebuild everything; a property test holds the incremental refresh to the full
rebuild after every load of random graphs.

What an incremental refresh still pays for the whole history: each step of its recursions
scans ``core.lineage_run_io`` (DuckDB hash-joins the step's few rows against the whole table),
and the ``kind`` update probes every kept closure row (against only the datasets whose
``datasetType`` facets the new collections brought).
"""

from __future__ import annotations

import contextlib
import logging
import time
from datetime import datetime

import duckdb

from warehouse.migrate import utc_now
from warehouse.models import sql_files
from warehouse.models.attestation_coverage import link_training_runs
from warehouse.transaction import atomic

log = logging.getLogger(__name__)

TRIM_ROUNDS = 200
"""Rounds of trimming before the cycle search closes what is left (correct either way; more
rounds leave less to close on deep graphs)."""

_TEMP_TABLES = (
    "lin_models",
    "lin_new_collections",
    "lin_changed",
    "lin_touched_runs",
    "lin_touched",
    "lin_seeds",
    "lin_stale",
    "lin_closure",
    "lin_scope",
    "lin_edges",
    "lin_reach",
)

_MODELS = """
CREATE OR REPLACE TEMP TABLE lin_models AS
SELECT
    v.dataset_version_id AS model_version_id,
    coalesce(r.model_name, v.name) AS model_name,
    v.namespace,
    v.name,
    v.version,
    v.produced_by_run_id,
    r.stage,
    v.created_at
FROM core.lineage_dataset_versions AS v
JOIN core.lineage_datasets AS d ON d.dataset_id = v.dataset_id
LEFT JOIN core.lineage_runs AS r ON r.run_id = v.produced_by_run_id
WHERE d.kind = 'MODEL' AND v.produced_by_run_id IS NOT NULL
"""

# The lineage collections the marts do not reflect yet (a failed collection loaded nothing).
_NEW_COLLECTIONS = """
CREATE OR REPLACE TEMP TABLE lin_new_collections AS
SELECT collection_id
FROM audit.collections
WHERE source = 'lineage' AND status = 'succeeded'
  AND collection_id NOT IN (SELECT collection_id FROM audit.lineage_refreshed_collections)
"""

# Checkpoints that are new, gone, or changed in a column of marts.lineage_models (renamed,
# restaged, another producing run found) since the previous refresh.
_CHANGED = """
CREATE OR REPLACE TEMP TABLE lin_changed AS
SELECT model_version_id FROM (
    SELECT model_version_id, model_name, namespace, name, version, produced_by_run_id, stage,
           created_at
    FROM lin_models
    EXCEPT
    SELECT model_version_id, model_name, namespace, name, version, produced_by_run_id, stage,
           created_at
    FROM marts.lineage_models
)
UNION
SELECT model_version_id FROM marts.lineage_models
WHERE model_version_id NOT IN (SELECT model_version_id FROM lin_models)
"""

# Runs the new collections brought edges (inputs or outputs) for, or moved an input of to
# another version (an input without a version facet, resolved again when a write completes:
# the merge's step 7).
_TOUCHED_RUNS = """
CREATE OR REPLACE TEMP TABLE lin_touched_runs AS
SELECT DISTINCT run_id
FROM core.lineage_run_io
WHERE collection_id IN (SELECT collection_id FROM lin_new_collections)
   OR resolved_collection_id IN (SELECT collection_id FROM lin_new_collections)
"""

# Did a new collection move an edge the marts already reflect? Then an edge left the graph, a
# cycle may be gone, and the cycles are searched again (as a full rebuild would find them).
_EDGE_MOVED = """
SELECT EXISTS (
    SELECT 1 FROM core.lineage_run_io
    WHERE resolved_collection_id IN (SELECT collection_id FROM lin_new_collections)
      AND collection_id NOT IN (SELECT collection_id FROM lin_new_collections)
)
"""

_TOUCHED = """
CREATE OR REPLACE TEMP TABLE lin_touched AS
SELECT o.dataset_version_id
FROM core.lineage_run_io AS o
WHERE o.direction = 'OUTPUT' AND o.run_id IN (SELECT run_id FROM lin_touched_runs)
UNION
SELECT model_version_id FROM lin_changed
"""

# Is a touched run's edge on a cycle? Exactly when one of its outputs reaches, downstream, one
# of its own inputs (its edge closes that path). If none is, the cycles found before stand:
# edges are never removed, and an edge off every cycle changes no cycle's versions or example
# run. The walk is per run; usually a touched run's outputs are new, read only by other new
# runs, and it ends after a few steps.
_TOUCHED_RUN_ON_CYCLE = """
WITH RECURSIVE down(run_id, dataset_version_id) AS (
    SELECT o.run_id, o.dataset_version_id
    FROM core.lineage_run_io AS o
    WHERE o.direction = 'OUTPUT' AND o.run_id IN (SELECT run_id FROM lin_touched_runs)
    UNION
    SELECT down.run_id, o.dataset_version_id
    FROM down
    JOIN core.lineage_run_io AS i
        ON i.dataset_version_id = down.dataset_version_id AND i.direction = 'INPUT'
    JOIN core.lineage_run_io AS o ON o.run_id = i.run_id AND o.direction = 'OUTPUT'
)
SELECT EXISTS (
    SELECT 1
    FROM down
    JOIN core.lineage_run_io AS i
        ON i.run_id = down.run_id AND i.dataset_version_id = down.dataset_version_id
    WHERE i.direction = 'INPUT'
)
"""

_SEEDS_ALL = """
CREATE OR REPLACE TEMP TABLE lin_seeds AS SELECT model_version_id, model_name FROM lin_models
"""

_SEEDS_TOUCHED = """
CREATE OR REPLACE TEMP TABLE lin_seeds AS
SELECT m.model_version_id, m.model_name
FROM lin_models AS m
WHERE m.model_version_id IN (SELECT dataset_version_id FROM lin_touched)
   OR m.model_version_id IN (
       SELECT i.model_version_id
       FROM marts.lineage_model_inputs AS i
       WHERE i.dataset_version_id IN (SELECT dataset_version_id FROM lin_touched)
   )
"""

_DROP_INPUTS = sql_files.statement("delete_lineage_model_inputs")

_KINDS = sql_files.statement("update_lineage_model_inputs_kind")

# Breadth-first: a version reached in an earlier round is never expanded again.
_CLOSURE = """
CREATE OR REPLACE TEMP TABLE lin_closure AS
WITH RECURSIVE up(model_version_id, dataset_version_id, depth)
USING KEY (model_version_id, dataset_version_id) AS (
    SELECT DISTINCT m.model_version_id, i.dataset_version_id, 1
    FROM lin_seeds AS m
    JOIN core.lineage_run_io AS o
        ON o.dataset_version_id = m.model_version_id AND o.direction = 'OUTPUT'
    JOIN core.lineage_run_io AS i ON i.run_id = o.run_id AND i.direction = 'INPUT'
    UNION
    SELECT DISTINCT up.model_version_id, i.dataset_version_id, up.depth + 1
    FROM up
    JOIN core.lineage_run_io AS o
        ON o.dataset_version_id = up.dataset_version_id AND o.direction = 'OUTPUT'
    JOIN core.lineage_run_io AS i ON i.run_id = o.run_id AND i.direction = 'INPUT'
    WHERE NOT EXISTS (
        SELECT 1 FROM recurring.up AS seen
        WHERE seen.model_version_id = up.model_version_id
          AND seen.dataset_version_id = i.dataset_version_id
    )
)
SELECT * FROM up
"""

# The node set again, not walking past another model's checkpoint (UNION: ends on cycles).
_SCOPE = """
CREATE OR REPLACE TEMP TABLE lin_scope AS
WITH RECURSIVE s(model_version_id, model_name, dataset_version_id) AS (
    SELECT m.model_version_id, m.model_name, i.dataset_version_id
    FROM lin_seeds AS m
    JOIN core.lineage_run_io AS o
        ON o.dataset_version_id = m.model_version_id AND o.direction = 'OUTPUT'
    JOIN core.lineage_run_io AS i ON i.run_id = o.run_id AND i.direction = 'INPUT'
    UNION
    SELECT s.model_version_id, s.model_name, i.dataset_version_id
    FROM s
    LEFT JOIN lin_models AS other ON other.model_version_id = s.dataset_version_id
    JOIN core.lineage_run_io AS o
        ON o.dataset_version_id = s.dataset_version_id AND o.direction = 'OUTPUT'
    JOIN core.lineage_run_io AS i ON i.run_id = o.run_id AND i.direction = 'INPUT'
    WHERE other.model_name IS NULL OR other.model_name = s.model_name
)
SELECT DISTINCT model_version_id, dataset_version_id FROM s
"""

_INPUTS = sql_files.statement("insert_lineage_model_inputs")

_EDGES = """
CREATE OR REPLACE TEMP TABLE lin_edges AS
SELECT DISTINCT i.dataset_version_id AS src, o.dataset_version_id AS dst, o.run_id
FROM core.lineage_run_io AS i
JOIN core.lineage_run_io AS o ON o.run_id = i.run_id
WHERE i.direction = 'INPUT' AND o.direction = 'OUTPUT'
"""

# An edge whose source nothing writes into, or whose target nothing reads, is on no cycle.
_TRIM = """
DELETE FROM lin_edges
WHERE src NOT IN (SELECT dst FROM lin_edges) OR dst NOT IN (SELECT src FROM lin_edges)
"""

_REACH = """
CREATE OR REPLACE TEMP TABLE lin_reach AS
WITH RECURSIVE r(a, b) AS (
    SELECT DISTINCT src, dst FROM lin_edges
    UNION
    SELECT r.a, e.dst FROM r JOIN lin_edges AS e ON e.src = r.b
)
SELECT * FROM r
"""

_CYCLES = sql_files.statement("insert_lineage_cycles")

# The models rows to write again: recomputed closures and changed checkpoints; all of them when
# the cycles were searched.
_STALE_MODELS = """
CREATE OR REPLACE TEMP TABLE lin_stale AS
SELECT model_version_id FROM lin_seeds
UNION
SELECT model_version_id FROM lin_changed
"""

_STALE_ALL = """
CREATE OR REPLACE TEMP TABLE lin_stale AS SELECT model_version_id FROM lin_models
"""

_DROP_MODELS = sql_files.statement("delete_lineage_models")

_MODELS_INSERT = sql_files.statement("insert_lineage_models")


def refresh_lineage(con: duckdb.DuckDBPyConnection, *, full: bool = False) -> dict[str, int]:
    """Bring the lineage marts up to date with ``core``: incrementally (only the checkpoints
    the new lineage collections can have changed), or whole with ``full`` and at the first
    refresh. Returns row counts (``models``, ``model_inputs``, ``cycle_versions``,
    ``trim_rounds``) and what it did (``full`` and ``cycles_searched``, 0 or 1;
    ``collections``; ``models_recomputed``).
    Atomic: joins the caller's transaction or runs in its own; recorded in
    ``audit.lineage_refreshes``."""
    now = utc_now()
    started = time.perf_counter()
    try:
        with atomic(con):
            full = full or not _scalar(con, "SELECT count(*) FROM audit.lineage_refreshes")
            con.execute(_MODELS)
            con.execute(_NEW_COLLECTIONS)
            touched: int | None = None
            if full:
                con.execute(_SEEDS_ALL)
                con.execute("DELETE FROM marts.lineage_model_inputs")
            else:
                con.execute(_CHANGED)
                con.execute(_TOUCHED_RUNS)
                con.execute(_TOUCHED)
                touched = _scalar(con, "SELECT count(*) FROM lin_touched")
                con.execute(_SEEDS_TOUCHED)
                con.execute(_DROP_INPUTS)
                con.execute(_KINDS)
            con.execute(_CLOSURE)
            con.execute(_SCOPE)
            con.execute(_INPUTS)
            cycles_searched = (
                full or bool(_scalar(con, _EDGE_MOVED)) or bool(_scalar(con, _TOUCHED_RUN_ON_CYCLE))
            )
            rounds = _search_cycles(con, now) if cycles_searched else 0
            if cycles_searched:  # on_cycle may change for any checkpoint
                con.execute(_STALE_ALL)
            else:
                con.execute(_STALE_MODELS)
            con.execute(_DROP_MODELS)
            con.execute(_MODELS_INSERT, {"now": now})
            link_training_runs(con)  # attestation coverage per training run
            counts = {
                "models": _scalar(con, "SELECT count(*) FROM marts.lineage_models"),
                "model_inputs": _scalar(con, "SELECT count(*) FROM marts.lineage_model_inputs"),
                "cycle_versions": _scalar(con, "SELECT count(*) FROM marts.lineage_cycles"),
                "trim_rounds": rounds,
                "full": int(full),
                "cycles_searched": int(cycles_searched),
                "collections": _scalar(con, "SELECT count(*) FROM lin_new_collections"),
                "models_recomputed": _scalar(con, "SELECT count(*) FROM lin_seeds"),
            }
            con.execute(
                "INSERT INTO audit.lineage_refreshed_collections "
                "SELECT collection_id, $now FROM lin_new_collections",
                {"now": now},
            )
            con.execute(
                "INSERT INTO audit.lineage_refreshes (refreshed_at, mode, collections, "
                "touched_versions, models_recomputed, cycles_searched, models, model_inputs, "
                "cycle_versions, milliseconds) VALUES ($now, $mode, $collections, $touched, "
                "$recomputed, $searched, $models, $inputs, $cycles, $ms)",
                {
                    "now": now,
                    "mode": "full" if full else "incremental",
                    "collections": counts["collections"],
                    "touched": touched,
                    "recomputed": counts["models_recomputed"],
                    "searched": cycles_searched,
                    "models": counts["models"],
                    "inputs": counts["model_inputs"],
                    "cycles": counts["cycle_versions"],
                    "ms": round((time.perf_counter() - started) * 1000),
                },
            )
    finally:
        _drop_temp_tables(con)
    log.debug("lineage refresh took %.3f s: %s", time.perf_counter() - started, counts)
    return counts


def _search_cycles(con: duckdb.DuckDBPyConnection, now: datetime) -> int:
    """Rebuild ``marts.lineage_cycles`` from every edge; returns the trim rounds it took."""
    con.execute(_EDGES)
    rounds = 0
    while rounds < TRIM_ROUNDS:
        rounds += 1
        if not _count(con.execute(_TRIM)):
            break
    con.execute(_REACH)
    con.execute("DELETE FROM marts.lineage_cycles")
    con.execute(_CYCLES, {"now": now})
    return rounds


def _count(result: duckdb.DuckDBPyConnection) -> int:
    row = result.fetchone()
    return int(row[0]) if row else 0


def _scalar(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    return _count(con.execute(sql))


def _drop_temp_tables(con: duckdb.DuckDBPyConnection) -> None:
    for name in _TEMP_TABLES:
        with contextlib.suppress(duckdb.Error):
            con.execute(f"DROP TABLE IF EXISTS temp.{name}")

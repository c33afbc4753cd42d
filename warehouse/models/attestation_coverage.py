"""Attestation coverage marts: which GPU-hours ran on attested nodes, by exact interval arithmetic.

``refresh_attestation_coverage`` rebuilds, per cluster and UTC day,
``marts.attestation_node_windows`` (when each node was covered, and by what) and
``marts.attestation_gpu_hours`` (the workload GPU-hours of ``core.gpu_allocation_history``
split into verified, self_reported, unattested and unknown). Migration ``0006_attestation.sql``
documents every column; the rules, in order:

1. A record's window is ``[valid_from, valid_until)`` (``max(nbf, iat)``, ``min(exp, iat +
   max_age)``, from the verifier), ended earlier at the node's next boot change and at the
   ``issued_at`` of a later ``fail`` record of the same subject (the node's NRAS platform token,
   one GPU by its UUID, or the node's CVM). The boot change is the first time after the window
   starts that the node was seen on another boot: a submission naming another ``boot_id``, or a
   ``core.nodes`` version (first seen at its ``valid_from``) with another ``boot_id``. A fail
   whose only reasons are about delivery time (expired, not_yet_valid, nonce_expired) ends
   nothing: arriving late says nothing about the subject at its ``issued_at``.
2. GPU-covered (per node, boot and tier): one NRAS result covers the node while its overall
   token's window and the windows of at least ``core.nodes.gpu_capacity`` (of the node version
   valid then, so never beyond the inventory's horizon; a node's first version counts from the
   node's creation) of its detached GPU tokens do; the
   results' intervals are merged. GPUs are not pooled across results: each result must vouch
   for the whole node. Tiers: verified (``pass``/``verified``) and self_reported
   (``unverifiable``/``self_reported``, the NVIDIA local verifier).
3. CPU-covered (per node and boot): passing verified Azure Attestation / Intel Trust Authority
   windows of a confidential VM (SEV-SNP or TDX; an SGX enclave's token covers nothing), merged.
4. Verified = GPU-covered (verified) ∩ CPU-covered, same node and boot.
5. Each instant of an allocation is verified, else self_reported (GPU self-reported covered),
   else unattested (the inventory knew the node with GPU capacity), else unknown.

Every step is set-based SQL over intervals (window functions for merging overlapping intervals
and for running counts at interval edges, ASOF joins for "the next fail" and "the next boot
change"); nothing is sampled and no row is handled in Python. Work is bounded by the days
rebuilt: records are read by their windows (the scans prune by valid_from/valid_until), fails
and boot sightings by time, and the ASOF joins only see the records of nodes that have a fail or
more than one boot in the chunk. A day of 7,500 nodes with 8 GPUs and a result every 50 minutes
(2.2 million records) rebuilds in about 5 s on the 2-core build machine.

What is rebuilt (per cluster): the days touched by attestation collections newer than the
cluster's last ``attestation_horizon`` in ``audit.attestation_refreshes`` (their records'
windows, and a day past each fail and submission, whose boot may end earlier windows), and by
kubernetes collections newer than its ``inventory_horizon`` (from the previous horizon, or the
earliest allocation those collections opened or closed, to the new horizon); with ``since``,
also every day from ``since`` to the end of the cluster's evidence. Days are rebuilt in chunks
of ``CHUNK_DAYS``.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

import duckdb

from warehouse.migrate import utc_now
from warehouse.models import sql_files
from warehouse.transaction import atomic

log = logging.getLogger(__name__)

CHUNK_DAYS = 7
"""Days rebuilt per pass of the statements (bounds memory on a long backfill)."""

DELIVERY_REASONS = ("expired", "not_yet_valid", "nonce_expired")
"""Reasons about when a token arrived, not about its subject: a fail with only these ends
no earlier window."""

_SUBJECT = """
CASE
    WHEN subject_kind = 'gpu' AND token_role = 'detached'
        THEN 'gpu:' || coalesce(gpu_uuid, device_ueid, submod_key, '?')
    WHEN subject_kind = 'gpu' THEN 'gpu:platform'
    ELSE coalesce(subject_kind, 'unknown')
END
"""

_DELIVERY = ", ".join(f"'{reason}'" for reason in DELIVERY_REASONS)


def _merged(target: str, source: str, keys: str) -> str:
    """SQL creating ``target``: the intervals ``[s, e)`` of ``source`` merged per ``keys``
    (overlapping or touching intervals become one; gaps-and-islands over the running end)."""
    return f"""
CREATE OR REPLACE TEMP TABLE {target} AS
WITH ordered AS (
    SELECT {keys}, s, e,
           max(e) OVER (PARTITION BY {keys} ORDER BY s, e
                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM {source}
),
islands AS (
    SELECT {keys}, s, e,
           sum(CASE WHEN reach IS NULL OR s > reach THEN 1 ELSE 0 END)
               OVER (PARTITION BY {keys} ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS island
    FROM ordered
)
SELECT {keys}, min(s) AS s, max(e) AS e
FROM islands
GROUP BY {keys}, island
"""


# One chunk of days [$lo, $hi) of one cluster: the records whose windows reach into it.
# $reach: their earliest window start (fails and boot sightings before it end none of them).
_SCOPE = """
SELECT *
FROM core.attestation_records
WHERE cluster = $cluster AND valid_from < $hi AND valid_until > $lo
  AND valid_until > valid_from AND node_name IS NOT NULL AND boot_id IS NOT NULL
  AND subject_kind IN ('gpu', 'cpu_tee')
  AND ((verdict = 'pass' AND assurance_tier = 'verified')
       OR (verdict = 'unverifiable' AND assurance_tier = 'self_reported'))
"""

_REACH = f"SELECT min(valid_from) FROM ({_SCOPE})"

# Where windows end early: the next fail of the record's subject, the node's next boot change.
# Computed for the few records that can have one (nodes with a fail, nodes seen on more than
# one boot), so the ASOF joins stay small; the rest end at valid_until.
_CUTS = f"""
CREATE OR REPLACE TEMP TABLE cov_fails AS
SELECT node_name, {_SUBJECT} AS subject, failed_at
FROM (
    SELECT *, coalesce(issued_at, received_at) AS failed_at
    FROM core.attestation_records
    WHERE cluster = $cluster AND verdict = 'fail' AND received_at >= $reach - INTERVAL 1 DAY
)
WHERE failed_at >= $reach AND failed_at < $hi AND node_name IS NOT NULL
  AND NOT (len(reasons) > 0 AND list_has_all([{_DELIVERY}], reasons));

CREATE OR REPLACE TEMP TABLE cov_fail_cuts AS
SELECT r.submission_id, r.record_id, f.failed_at
FROM (
    SELECT submission_id, record_id, node_name, issued_at, {_SUBJECT} AS subject
    FROM ({_SCOPE})
    WHERE node_name IN (SELECT node_name FROM cov_fails)
) AS r
ASOF JOIN cov_fails AS f
    ON f.node_name = r.node_name AND f.subject = r.subject AND f.failed_at > r.issued_at;

-- Boot sightings; next_change: when the node was first seen on another boot after this one.
CREATE OR REPLACE TEMP TABLE cov_boot_seen AS
WITH seen AS (
    SELECT node_name, boot_id, received_at AS seen_at
    FROM core.attestation_submissions
    WHERE cluster = $cluster AND received_at >= $reach AND received_at < $hi
      AND node_name IS NOT NULL AND boot_id IS NOT NULL
    UNION ALL
    SELECT node_name, boot_id, valid_from
    FROM core.nodes
    WHERE cluster = $cluster AND valid_from >= $reach AND valid_from < $hi
      AND node_name IS NOT NULL AND boot_id IS NOT NULL
),
marked AS (
    SELECT
        *,
        CASE WHEN boot_id IS DISTINCT FROM lag(boot_id) OVER w THEN 1 ELSE 0 END AS starts
    FROM seen
    WINDOW w AS (PARTITION BY node_name ORDER BY seen_at, boot_id)
),
numbered AS (
    SELECT
        *,
        sum(starts) OVER (PARTITION BY node_name ORDER BY seen_at, boot_id
                          ROWS UNBOUNDED PRECEDING) AS run
    FROM marked
),
runs AS (
    SELECT node_name, run, min(seen_at) AS run_start FROM numbered GROUP BY node_name, run
)
SELECT n.node_name, n.boot_id, n.seen_at, r.run_start AS next_change
FROM numbered AS n
LEFT JOIN runs AS r ON r.node_name = n.node_name AND r.run = n.run + 1;

-- The first sighting at or after the window's start: another boot ends the window there; the
-- same boot ends it where that boot's run of sightings ends.
CREATE OR REPLACE TEMP TABLE cov_boot_cuts AS
SELECT
    r.submission_id,
    r.record_id,
    CASE WHEN s.boot_id <> r.boot_id THEN s.seen_at ELSE s.next_change END AS changed_at
FROM (
    SELECT r.submission_id, r.record_id, r.node_name, r.boot_id, r.valid_from
    FROM ({_SCOPE}) AS r
    JOIN (
        SELECT node_name, count(DISTINCT boot_id) AS boots, any_value(boot_id) AS boot_id
        FROM cov_boot_seen
        GROUP BY node_name
    ) AS n ON n.node_name = r.node_name
    WHERE n.boots > 1 OR n.boot_id <> r.boot_id
) AS r
ASOF JOIN cov_boot_seen AS s ON s.node_name = r.node_name AND s.seen_at >= r.valid_from
"""


def _windows(token_roles: str) -> str:
    """SQL selecting the scope's records of ``token_roles`` with their effective windows."""
    return f"""
SELECT
    r.submission_id,
    r.record_id,
    r.parent_record_id,
    r.node_name,
    r.boot_id,
    r.subject_kind,
    r.token_role,
    r.tee_type,
    coalesce(r.device_ueid, r.gpu_uuid, r.submod_key) AS device,
    CASE WHEN r.verdict = 'pass' THEN 'verified' ELSE 'self_reported' END AS tier,
    r.valid_from AS s,
    least(r.valid_until, coalesce(f.failed_at, $hi), coalesce(b.changed_at, $hi), $hi) AS e
FROM ({_SCOPE} AND token_role IN ({token_roles})) AS r
LEFT JOIN cov_fail_cuts AS f ON f.submission_id = r.submission_id AND f.record_id = r.record_id
LEFT JOIN cov_boot_cuts AS b ON b.submission_id = r.submission_id AND b.record_id = r.record_id
"""


# One NRAS result (an envelope: the overall token and its detached GPU tokens) covers the
# node's GPUs while its overall window and the windows of at least gpu_capacity of its GPUs do
# (the merge fails a GPU named twice in one result, so its detached rows count distinct GPUs).
# Per envelope, the GPUs' windows cut to the overall's: when they all share one window (the
# usual case) that is one interval and a count; else _UNEVEN sweeps their edges.
_GPU = f"""
CREATE OR REPLACE TEMP TABLE cov_heads AS
{_windows("'overall', 'single'")};

CREATE OR REPLACE TEMP TABLE cov_envelopes AS
WITH gpus AS (
    SELECT
        submission_id, parent_record_id AS envelope, tier,
        count(*) AS devices,
        min(s) AS s, max(s) AS last_start, min(e) AS first_end, max(e) AS e
    FROM ({_windows("'detached'")})
    WHERE subject_kind = 'gpu'
    GROUP BY submission_id, parent_record_id, tier
)
SELECT
    o.tier, o.node_name, o.boot_id, g.submission_id, g.envelope, g.devices,
    greatest(g.s, o.s, $lo) AS s,
    least(g.e, o.e) AS e,
    g.s = g.last_start AND g.first_end = g.e AS even
FROM gpus AS g
JOIN cov_heads AS o
    ON o.submission_id = g.submission_id AND o.record_id = g.envelope AND o.tier = g.tier
WHERE o.subject_kind = 'gpu' AND o.token_role = 'overall';

CREATE OR REPLACE TEMP TABLE cov_gpu_counts AS
SELECT tier, node_name, boot_id, s, e, devices
FROM cov_envelopes
WHERE even AND s < e;

-- What the inventory knew: node versions with GPU capacity (open ones up to the horizon).
-- A node's first version stands from the node's creation: annex may start collecting long
-- after a node joined, and its GPU capacity is a fact of its hardware (allocations, too, start
-- at the pods' own scheduling times, not when annex first saw them).
CREATE OR REPLACE TEMP TABLE cov_capacity AS
WITH versions AS (
    -- physical GPUs: nvidia.com/gpu / its shares (a time-sliced node advertises replicas x
    -- GPUs, marts.gpu_shares); a DRA-only node advertises none: the GPUs (distinct UUIDs, a
    -- MIG device's is its parent's) its ResourceSlices published during the version
    SELECT
        n.node_name,
        CASE
            WHEN n.gpu_capacity > 0
                THEN n.gpu_capacity
                     // marts.gpu_shares(n.labels, 'nvidia.com/gpu', n.gpu_capacity, n.mig_strategy)
            ELSE (
                SELECT count(DISTINCT d.gpu_uuid)
                FROM core.dra_devices AS d
                WHERE d.cluster = n.cluster AND d.node_name = n.node_name
                  AND d.gpu_uuid IS NOT NULL
                  AND d.valid_from < coalesce(n.valid_to, 'infinity'::TIMESTAMP)
                  AND coalesce(d.valid_to, 'infinity'::TIMESTAMP) > n.valid_from)
        END AS gpu_capacity,
        CASE
            WHEN row_number() OVER (PARTITION BY n.node_name ORDER BY n.valid_from) = 1
                THEN least(n.valid_from, coalesce(n.creation_timestamp, n.valid_from))
            ELSE n.valid_from
        END AS effective_from,
        n.valid_to
    FROM core.nodes AS n
    WHERE n.cluster = $cluster AND n.node_name IS NOT NULL
)
SELECT
    node_name,
    gpu_capacity,
    greatest(effective_from, $lo) AS s,
    least(coalesce(valid_to, $horizon), $hi) AS e
FROM versions
WHERE gpu_capacity > 0
  AND greatest(effective_from, $lo) < least(coalesce(valid_to, $horizon), $hi)
"""

_UNEVEN = f"""
INSERT INTO cov_gpu_counts
WITH uneven AS (
    SELECT v.tier, v.node_name, v.boot_id, v.submission_id, v.envelope, d.device,
           min(greatest(d.s, o.s, $lo)) AS s, max(least(d.e, o.e)) AS e
    FROM cov_envelopes AS v
    JOIN cov_heads AS o ON o.submission_id = v.submission_id AND o.record_id = v.envelope
    JOIN ({_windows("'detached'")}) AS d
        ON d.submission_id = v.submission_id AND d.parent_record_id = v.envelope
    WHERE NOT v.even
      AND d.subject_kind = 'gpu' AND o.tier = d.tier AND greatest(d.s, o.s, $lo) < least(d.e, o.e)
    GROUP BY v.tier, v.node_name, v.boot_id, v.submission_id, v.envelope, d.device
),
edges AS (
    SELECT tier, node_name, boot_id, submission_id, envelope, s AS t, 1 AS delta FROM uneven
    UNION ALL
    SELECT tier, node_name, boot_id, submission_id, envelope, e, -1 FROM uneven
),
steps AS (
    SELECT tier, node_name, boot_id, submission_id, envelope, t, sum(delta) AS delta
    FROM edges
    GROUP BY tier, node_name, boot_id, submission_id, envelope, t
),
running AS (
    SELECT tier, node_name, boot_id, t AS s, lead(t) OVER w AS e, sum(delta) OVER w AS devices
    FROM steps
    WINDOW w AS (PARTITION BY submission_id, envelope ORDER BY t)
)
SELECT tier, node_name, boot_id, s, e, devices
FROM running
WHERE devices > 0 AND e IS NOT NULL
"""

_UNEVEN_COUNT = "SELECT count(*) FROM cov_envelopes WHERE NOT even"

_COVERAGE = (
    """
CREATE OR REPLACE TEMP TABLE cov_gpu_pieces AS
SELECT c.tier, c.node_name, c.boot_id, greatest(c.s, k.s) AS s, least(c.e, k.e) AS e
FROM cov_gpu_counts AS c
JOIN cov_capacity AS k ON k.node_name = c.node_name AND k.s < c.e AND c.s < k.e
WHERE c.devices >= k.gpu_capacity;
"""
    + _merged("cov_gpu_windows", "cov_gpu_pieces", "tier, node_name, boot_id")
    + """;
CREATE OR REPLACE TEMP TABLE cov_cpu_pieces AS
SELECT node_name, boot_id, greatest(s, $lo) AS s, e
FROM cov_heads
WHERE subject_kind = 'cpu_tee' AND tier = 'verified' AND greatest(s, $lo) < e
  -- an SGX enclave's token (Intel Trust Authority) attests an enclave, not the node's VM
  AND tee_type IS DISTINCT FROM 'sgx';
"""
    + _merged("cov_cpu_windows", "cov_cpu_pieces", "node_name, boot_id")
    + """;
CREATE OR REPLACE TEMP TABLE cov_verified AS
SELECT g.node_name, g.boot_id, greatest(g.s, c.s) AS s, least(g.e, c.e) AS e
FROM cov_gpu_windows AS g
JOIN cov_cpu_windows AS c
    ON c.node_name = g.node_name AND c.boot_id = g.boot_id AND c.s < g.e AND g.s < c.e
WHERE g.tier = 'verified';

-- Each node's time cut at every edge of the three sets, each piece with its category.
CREATE OR REPLACE TEMP TABLE cov_states AS
WITH sets AS (
    SELECT node_name, s, e, 1 AS v, 0 AS sr, 0 AS k FROM cov_verified
    UNION ALL
    SELECT node_name, s, e, 0, 1, 0 FROM cov_gpu_windows WHERE tier = 'self_reported'
    UNION ALL
    SELECT node_name, s, e, 0, 0, 1 FROM cov_capacity
),
edges AS (
    SELECT node_name, s AS t, v, sr, k FROM sets
    UNION ALL
    SELECT node_name, e, -v, -sr, -k FROM sets
),
steps AS (
    SELECT node_name, t, sum(v) AS v, sum(sr) AS sr, sum(k) AS k
    FROM edges
    GROUP BY node_name, t
),
running AS (
    SELECT node_name, t AS s, lead(t) OVER w AS e, sum(v) OVER w AS v, sum(sr) OVER w AS sr,
           sum(k) OVER w AS k
    FROM steps
    WINDOW w AS (PARTITION BY node_name ORDER BY t)
)
SELECT
    node_name,
    s,
    e,
    CASE WHEN v > 0 THEN 'verified' WHEN sr > 0 THEN 'self_reported' ELSE 'unattested' END
        AS category
FROM running
WHERE e IS NOT NULL AND (v > 0 OR sr > 0 OR k > 0)
"""
)

_DAYS = """
CREATE OR REPLACE TEMP TABLE cov_days AS
SELECT unnest(range($lo, $hi, INTERVAL 1 DAY)) AS day_start
"""

_DELETE_WINDOWS = sql_files.statement("delete_attestation_node_windows")

_INSERT_WINDOWS = sql_files.statement("insert_attestation_node_windows")

_HOLDINGS = """
CREATE OR REPLACE TEMP TABLE cov_holdings AS
SELECT
    row_number() OVER () AS piece,
    a.node_name,
    a.namespace,
    a.job_name,
    a.gpus,
    CAST(d.day_start AS DATE) AS day,
    greatest(a.valid_from, d.day_start) AS s,
    least(coalesce(a.valid_to, $horizon), d.day_start + INTERVAL 1 DAY) AS e
FROM marts.gpu_allocations_in_devices() AS a
JOIN cov_days AS d
    ON a.valid_from < d.day_start + INTERVAL 1 DAY AND coalesce(a.valid_to, $horizon) > d.day_start
WHERE a.cluster = $cluster AND a.resource_name = 'nvidia.com/gpu' AND a.category = 'workload'
  AND a.gpus > 0 AND a.valid_from < $hi AND coalesce(a.valid_to, $horizon) > $lo
  AND greatest(a.valid_from, d.day_start)
      < least(coalesce(a.valid_to, $horizon), d.day_start + INTERVAL 1 DAY)
"""

_DELETE_HOURS = sql_files.statement("delete_attestation_gpu_hours")

_INSERT_HOURS = sql_files.statement("insert_attestation_gpu_hours")

_LINK_RUNS = sql_files.statement("update_attestation_gpu_hours_run_id")


def link_training_runs(
    con: duckdb.DuckDBPyConnection,
    *,
    cluster: str | None = None,
    lo: datetime | None = None,
    hi: datetime | None = None,
) -> None:
    """Set ``marts.attestation_gpu_hours.run_id``: the OpenLineage training run that names the
    row's Job (annex_trainingRun.kubernetes) and was running that day (the latest started of
    them, should a Job name be reused). Called by the coverage refresh for its days and by the
    lineage refresh for every day, so whichever evidence arrives last completes the link."""
    con.execute(_LINK_RUNS, {"cluster": cluster, "lo": lo, "hi": hi})


_CLUSTERS = """
WITH done AS (
    SELECT cluster, max(attestation_horizon) AS attestation, max(inventory_horizon) AS inventory
    FROM audit.attestation_refreshes
    GROUP BY cluster
)
SELECT
    c.cluster,
    any_value(d.attestation),
    any_value(d.inventory),
    max(c.started_at) FILTER (WHERE c.source = 'attestation'),
    max(c.started_at) FILTER (WHERE c.source = 'kubernetes'),
    count(*) FILTER (WHERE c.source = 'attestation'
                       AND (d.attestation IS NULL OR c.started_at > d.attestation)),
    count(*) FILTER (WHERE c.source = 'kubernetes'
                       AND (d.inventory IS NULL OR c.started_at > d.inventory))
FROM audit.collections AS c
LEFT JOIN done AS d ON d.cluster = c.cluster
WHERE c.status = 'succeeded' AND c.source IN ('attestation', 'kubernetes')
GROUP BY c.cluster
ORDER BY c.cluster
"""

# The span of days new attestation evidence touches: each record's window (kept within two days
# of its receipt, so that a wildly wrong clock cannot make a refresh rebuild years), and a day
# past each fail and submission (whose boot may end earlier windows).
_ATTESTATION_SPAN = """
SELECT min(lo), max(hi)
FROM (
    SELECT
        greatest(least(coalesce(valid_from, received_at), coalesce(issued_at, received_at),
                       received_at), received_at - INTERVAL 2 DAY) AS lo,
        least(greatest(coalesce(valid_until, received_at),
                       coalesce(issued_at, received_at) + INTERVAL 1 DAY,
                       received_at + INTERVAL 1 DAY), received_at + INTERVAL 2 DAY) AS hi
    FROM core.attestation_records
    WHERE cluster = $cluster AND loaded_at > $after
    UNION ALL
    SELECT received_at, received_at + INTERVAL 1 DAY
    FROM core.attestation_submissions
    WHERE cluster = $cluster AND loaded_at > $after
)
"""

# The span new kubernetes collections touch: from the previous horizon (open node versions and
# allocations grew from there), or the earliest allocation they opened or closed.
_INVENTORY_SPAN = """
WITH pending AS (
    SELECT collection_id
    FROM audit.collections
    WHERE cluster = $cluster AND source = 'kubernetes' AND status = 'succeeded'
      AND started_at > $after
)
SELECT least(
    (SELECT min(valid_from) FROM core.gpu_allocations
     WHERE cluster = $cluster AND opened_collection_id IN (SELECT collection_id FROM pending)),
    (SELECT min(valid_to) FROM core.gpu_allocations
     WHERE cluster = $cluster AND closed_collection_id IN (SELECT collection_id FROM pending)),
    (SELECT min(valid_from) FROM core.watched_gpu_allocations
     WHERE cluster = $cluster AND opened_at > $after),
    (SELECT min(valid_to) FROM core.watched_gpu_allocations
     WHERE cluster = $cluster AND closed_at > $after),
    (SELECT min(CASE
                    WHEN NOT EXISTS (
                        SELECT 1 FROM core.nodes AS earlier
                        WHERE earlier.cluster = n.cluster AND earlier.node_name = n.node_name
                          AND earlier.valid_from < n.valid_from)
                        THEN least(n.valid_from, coalesce(n.creation_timestamp, n.valid_from))
                    ELSE n.valid_from
                END)
     FROM core.nodes AS n
     WHERE n.cluster = $cluster AND n.collection_id IN (SELECT collection_id FROM pending))
)
"""

# The end of a cluster's evidence from a day on (a rebuild from ``since`` goes that far).
_EVIDENCE_END = """
SELECT greatest(
    (SELECT max(valid_until) FROM core.attestation_records
     WHERE cluster = $cluster AND valid_until >= $since),
    (SELECT max(received_at) FROM core.attestation_submissions
     WHERE cluster = $cluster AND received_at >= $since)
)
"""

_AUDIT = """
INSERT INTO audit.attestation_refreshes VALUES (
    $now, $cluster, $since, $first_day, $last_day, $days, $attestation_collections,
    $kubernetes_collections, $attestation_horizon, $inventory_horizon, $node_window_rows,
    $gpu_hours_rows, $milliseconds
)
"""

_TEMP_TABLES = (
    "cov_fails",
    "cov_fail_cuts",
    "cov_boot_seen",
    "cov_boot_cuts",
    "cov_heads",
    "cov_envelopes",
    "cov_gpu_counts",
    "cov_capacity",
    "cov_gpu_pieces",
    "cov_gpu_windows",
    "cov_cpu_pieces",
    "cov_cpu_windows",
    "cov_verified",
    "cov_states",
    "cov_days",
    "cov_holdings",
)

_PARAMETER = re.compile(r"\$([a-z_]+)")


@dataclass(frozen=True)
class _ClusterPlan:
    cluster: str
    days: tuple[date, ...]
    attestation_collections: int
    kubernetes_collections: int
    attestation_horizon: datetime | None
    inventory_horizon: datetime | None


def refresh_attestation_coverage(
    con: duckdb.DuckDBPyConnection, *, since: date | datetime | None = None
) -> dict[str, int]:
    """Rebuild the attestation coverage marts for the days new evidence touched.

    ``con`` is the writer connection (``with wh.writer() as con:``). Everything happens in one
    transaction: the caller's when it has one open, else one this function begins and commits,
    so a failure leaves the marts as they were. Rerunning it with nothing new changes nothing.

    Rebuilds, per cluster, the UTC days touched by attestation and kubernetes collections
    newer than its last refresh (see the module docstring); with ``since`` (a day, or a time
    whose UTC day is meant) also every day from it to the end of the cluster's evidence (the
    inventory horizon or the last attestation window, whichever is later). Records one row per
    cluster rebuilt in ``audit.attestation_refreshes``.

    Returns counts: ``clusters``, ``days`` (cluster-days rebuilt), ``node_window_rows``,
    ``gpu_hours_rows`` and ``milliseconds``.
    """
    started = time.perf_counter()
    since_day = since.date() if isinstance(since, datetime) else since
    try:
        with atomic(con):
            counts = _refresh(con, utc_now(), since_day)
    finally:
        _drop_temp_tables(con)
    counts["milliseconds"] = round((time.perf_counter() - started) * 1000)
    return counts


def _refresh(con: duckdb.DuckDBPyConnection, now: datetime, since: date | None) -> dict[str, int]:
    counts = {"clusters": 0, "days": 0, "node_window_rows": 0, "gpu_hours_rows": 0}
    for plan in _plan(con, now, since):
        if not plan.days:
            continue
        cluster_started = time.perf_counter()
        horizon = plan.inventory_horizon or now
        written = {"node_window_rows": 0, "gpu_hours_rows": 0}
        for first, last in _chunks(plan.days):
            chunk = _rebuild_days(con, plan.cluster, first, last, horizon, now)
            for key, value in chunk.items():
                written[key] += value
        _execute(
            con,
            _AUDIT,
            {
                "now": now,
                "cluster": plan.cluster,
                "since": since,
                "first_day": plan.days[0],
                "last_day": plan.days[-1],
                "days": len(plan.days),
                "attestation_collections": plan.attestation_collections,
                "kubernetes_collections": plan.kubernetes_collections,
                "attestation_horizon": plan.attestation_horizon,
                "inventory_horizon": plan.inventory_horizon,
                "milliseconds": round((time.perf_counter() - cluster_started) * 1000),
            }
            | written,
        )
        counts["clusters"] += 1
        counts["days"] += len(plan.days)
        for key, value in written.items():
            counts[key] += value
    return counts


def _plan(con: duckdb.DuckDBPyConnection, now: datetime, since: date | None) -> list[_ClusterPlan]:
    """Per cluster, the days to rebuild and the horizons the rebuild brings them up to."""
    plans = []
    for row in con.execute(_CLUSTERS).fetchall():
        cluster, done_attestation, done_inventory, attestation, inventory, new_att, new_k8s = row
        latest = max(t for t in (now, attestation, inventory) if t is not None)
        spans: list[tuple[datetime | None, datetime | None]] = []
        if new_att:
            after = done_attestation or datetime.min
            spans.append(_fetch(con, _ATTESTATION_SPAN, {"cluster": cluster, "after": after}))
        if new_k8s:
            after = done_inventory or datetime.min
            (opened,) = _fetch(con, _INVENTORY_SPAN, {"cluster": cluster, "after": after})
            starts = [t for t in (done_inventory, opened) if t is not None]
            spans.append((min(starts) if starts else None, inventory))
        if since is not None:
            start = datetime.combine(since, datetime.min.time())
            (evidence_end,) = _fetch(con, _EVIDENCE_END, {"cluster": cluster, "since": start})
            ends = [t for t in (evidence_end, inventory) if t is not None]
            spans.append((start, max(ends) if ends else None))
        days: set[date] = set()
        for lo, hi in spans:
            if lo is None or hi is None:
                continue
            first, last = lo.date(), min(hi, latest + timedelta(days=1)).date()
            days.update(first + timedelta(days=n) for n in range((last - first).days + 1))
        plans.append(
            _ClusterPlan(
                cluster=cluster,
                days=tuple(sorted(days)),
                attestation_collections=int(new_att),
                kubernetes_collections=int(new_k8s),
                attestation_horizon=attestation,
                inventory_horizon=inventory,
            )
        )
    return plans


def _chunks(days: tuple[date, ...]) -> list[tuple[date, date]]:
    """Runs of consecutive days, at most ``CHUNK_DAYS`` long: (first, last) inclusive."""
    chunks: list[tuple[date, date]] = []
    for day in days:
        if chunks:
            first, last = chunks[-1]
            if day == last + timedelta(days=1) and (day - first).days < CHUNK_DAYS:
                chunks[-1] = (first, day)
                continue
        chunks.append((day, day))
    return chunks


def _rebuild_days(
    con: duckdb.DuckDBPyConnection,
    cluster: str,
    first: date,
    last: date,
    horizon: datetime,
    now: datetime,
) -> dict[str, int]:
    lo = datetime.combine(first, datetime.min.time())
    hi = datetime.combine(last + timedelta(days=1), datetime.min.time())
    params: dict[str, Any] = {"cluster": cluster, "lo": lo, "hi": hi, "horizon": horizon}
    (reach,) = _fetch(con, _REACH, params)
    for statement in con.extract_statements(_CUTS):
        _execute(con, statement, params | {"reach": reach or lo}, "window cuts")
    for statement in con.extract_statements(_GPU):
        _execute(con, statement, params, "envelopes")
    if _fetch(con, _UNEVEN_COUNT, {})[0]:
        _execute(con, _UNEVEN, params, "uneven envelopes")
    for statement in con.extract_statements(_COVERAGE):
        _execute(con, statement, params, "coverage intervals")
    _execute(con, _DAYS, params)
    _execute(con, _HOLDINGS, params, "holdings")
    written = {}
    _execute(con, _DELETE_WINDOWS, params)
    written["node_window_rows"] = _count(_execute(con, _INSERT_WINDOWS, params | {"now": now}))
    _execute(con, _DELETE_HOURS, params)
    written["gpu_hours_rows"] = _count(_execute(con, _INSERT_HOURS, params | {"now": now}))
    link_training_runs(con, cluster=params["cluster"], lo=params["lo"], hi=params["hi"])
    log.debug("attestation coverage %s %s..%s: %s", cluster, first, last, written)
    return written


def _execute(
    con: duckdb.DuckDBPyConnection, sql: Any, params: dict[str, Any], what: str = ""
) -> duckdb.DuckDBPyConnection:
    """Run one statement with the parameters it names (DuckDB refuses extra ones)."""
    text = sql.query if hasattr(sql, "query") else sql
    used = {name: params[name] for name in set(_PARAMETER.findall(text)) if name in params}
    started = time.perf_counter()
    result = con.execute(sql, used)
    if what:
        log.debug("%s took %.3f s", what, time.perf_counter() - started)
    return result


def _fetch(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any]) -> tuple:
    row = _execute(con, sql, params).fetchone()
    assert row is not None
    return row


def _count(result: duckdb.DuckDBPyConnection) -> int:
    row = result.fetchone()
    return int(row[0]) if row else 0


def _drop_temp_tables(con: duckdb.DuckDBPyConnection) -> None:
    for name in _TEMP_TABLES:
        with contextlib.suppress(duckdb.Error):
            con.execute(f"DROP TABLE IF EXISTS temp.{name}")

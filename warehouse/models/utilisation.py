"""GPU utilisation marts: hourly tables rebuilt incrementally, daily views over them.

Why tables and not views: a day of one DCGM field for 60,000 GPUs is 86.4 million samples, and
a year of 7,500 nodes is 66 million node-hours. Views over ``core`` would redo that work on
every query; instead ``refresh_gpu_hourly`` rebuilds only the hours that changed, and the daily
rollups ``marts.gpu_hours_daily_by_*`` are views over the hourly tables (migration
``0005_gpu_utilisation.sql`` defines and documents every column). ``marts.gpu_daily`` (per GPU
and day) is a table since migration 0013: a month of it is read by reports and analysts, and
aggregating 45 million GPU-hours on each read took seconds.

What is rebuilt, per cluster:

* ``marts.gpu_hourly`` (per GPU and hour, from samples): every hour spanned by an
  ``audit.telemetry_loads`` row with ``rolled_up = false`` (from ``min_ts`` to ``max_ts``), and
  the hour after it when that one is already rolled up (its first energy increase starts from
  the load's last sample). An hour's rows are deleted and recomputed from *all* samples of the
  hour, so a window loaded in two pieces ends up complete.
* ``marts.gpu_pod_daily`` (migration 0011: the telemetry per pod label, node and day, which
  training compute joins instead of the GPU-hours): every UTC day of those hours, summed again
  whole from ``marts.gpu_hourly``.
* ``marts.gpu_daily``: every (cluster, UTC day) of any hour rebuilt below (telemetry or
  inventory: an inventory hour may change pod categories), summed again whole.
* ``marts.node_gpu_hours`` and ``marts.namespace_gpu_hours`` (inventory GPU-hours beside the
  telemetry of those GPUs): the telemetry hours above, plus the hours touched by successful
  kubernetes collections newer than the cluster's last ``inventory_horizon`` in
  ``audit.utilisation_refreshes``: from the earliest of the previous horizon (open node
  versions and intervals grew from there to the new collection), the start of allocation
  intervals those collections opened and the end of those they closed (and of the intervals
  ``annex watch`` committed since: allocations are read from ``core.gpu_allocation_history``,
  the watch's exact intervals where it saw the pod, the snapshots' elsewhere), up to the new
  horizon.
  They are tables for the same reason as gpu_hourly (the SCD rows and intervals would have to be
  cut into hours on every query). A telemetry-only hour past the horizon gets its capacity when
  the next kubernetes collection rebuilds it.
* Never an hour of a day whose samples ``annex warehouse compact`` moved to Parquet
  (``audit.compactions``): its telemetry rollup is final; a load reaching back there rebuilds
  only the inventory GPU-hours of those hours.

Speed. A day of one-minute samples of one field for 60,000 GPUs plus six fields for 2,000
(103.7 million samples) rolls up in about 9 s on the 2-core build machine, about twice a bare
``GROUP BY series_id, hour`` of the same day there; one more hour, the steady state of hourly
collections, in under 1 s. How:

* samples are aggregated one hour at a time, grouped by the integer ``series_id`` alone (count,
  sum, max): one hour's series fit a cache-friendly hash table, where grouping the whole day by
  (series, hour) at once is slower than the whole per-hour loop;
* everything after that works on small integers (GPU, metric code, pod label, host and model
  keys from the small series table, ``util_keys``); the names come back once per chunk of hours;
* the pivot to one row per GPU multiplies by ``(code = c)`` masks (cheaper than ``FILTER``), and
  a GPU whose only series is one metric needs no pivot at all (a projection);
* the few metrics read sample by sample (power's span, XID codes, the energy counter) are
  picked out once per hour by series id; ``lag`` runs over the counter's samples only, with the
  previous hour's last sample per GPU carried over instead of re-reading that hour.
"""

from __future__ import annotations

import contextlib
import logging
import time
from datetime import date, datetime, timedelta
from typing import Any

import duckdb

from warehouse.migrate import table_exists, utc_now
from warehouse.models import sql_files
from warehouse.transaction import atomic

log = logging.getLogger(__name__)

IDLE_BUSY_THRESHOLD = 0.05
"""A workload-held GPU-hour whose busy is below this is allocated-but-idle (the marts' comments
say 0.05; keep them in step)."""

CHUNK_HOURS = 24
"""Hours written to the marts per statement (bounds memory on a long backfill or full rebuild)."""

# Canonical metric -> the small integer code the hourly statements carry instead of the name.
METRIC_CODES: dict[str, int] = {
    "gr_engine_active": 1,
    "gpu_util": 2,
    "sm_active": 3,
    "tensor_active": 4,
    "dram_active": 5,
    "power_usage": 6,
    "total_energy_consumption": 7,
    "sm_clock": 8,
    "gpu_temp": 9,
    "xid_errors": 10,
    "uncorrectable_remapped_rows": 11,
    "correctable_remapped_rows": 12,
    "row_remap_failure": 13,
}

SHARE_CODE = 0
"""The code of a shared GPU's per-pod line (``pod_share``): it names the pod holding the GPU
(label and pod_label_fraction) but no value of it enters the GPU's figures, which come from the
GPU's device-level line (dcgm-exporter 4.8+ ``--kubernetes-virtual-gpus``)."""

_CODE_CASE = (
    "CASE s.metric "
    + " ".join(f"WHEN '{name}' THEN {code}" for name, code in METRIC_CODES.items())
    + " END"
)

_PLAN = """
CREATE OR REPLACE TEMP TABLE util_loads AS
SELECT collection_id, cluster, min_ts, max_ts
FROM audit.telemetry_loads
WHERE NOT rolled_up;

CREATE OR REPLACE TEMP TABLE util_inventory AS
WITH collections AS (
    SELECT cluster, collection_id, started_at
    FROM audit.collections
    WHERE source = 'kubernetes' AND status = 'succeeded'
),
done AS (
    SELECT cluster, max(inventory_horizon) AS rolled
    FROM audit.utilisation_refreshes
    GROUP BY cluster
),
pending AS (
    SELECT c.*
    FROM collections AS c
    LEFT JOIN done AS d USING (cluster)
    WHERE d.rolled IS NULL OR c.started_at > d.rolled
),
opened AS (
    SELECT a.cluster, min(a.valid_from) AS t
    FROM core.gpu_allocations AS a
    JOIN pending AS p ON p.cluster = a.cluster AND p.collection_id = a.opened_collection_id
    GROUP BY a.cluster
),
closed AS (
    SELECT a.cluster, min(a.valid_to) AS t
    FROM core.gpu_allocations AS a
    JOIN pending AS p ON p.cluster = a.cluster AND p.collection_id = a.closed_collection_id
    GROUP BY a.cluster
),
watched AS (
    -- intervals annex watch committed since the last refresh (it writes between collections)
    SELECT w.cluster,
           least(min(w.valid_from) FILTER (WHERE d.rolled IS NULL OR w.opened_at > d.rolled),
                 min(w.valid_to) FILTER (WHERE d.rolled IS NULL OR w.closed_at > d.rolled)) AS t
    FROM core.watched_gpu_allocations AS w
    LEFT JOIN done AS d USING (cluster)
    GROUP BY w.cluster
),
first_seen AS (
    SELECT cluster, min(valid_from) AS t FROM core.nodes GROUP BY cluster
),
per_cluster AS (
    SELECT cluster, min(started_at) AS first_pending, max(started_at) AS horizon,
           count(*) AS collections
    FROM pending
    GROUP BY cluster
)
SELECT
    p.cluster,
    greatest(least(p.first_pending, d.rolled, o.t, c.t, w.t), f.t) AS start,
    p.horizon,
    p.collections
FROM per_cluster AS p
LEFT JOIN done AS d USING (cluster)
LEFT JOIN opened AS o USING (cluster)
LEFT JOIN closed AS c USING (cluster)
LEFT JOIN watched AS w USING (cluster)
LEFT JOIN first_seen AS f USING (cluster);

CREATE OR REPLACE TEMP TABLE util_next_hours (cluster VARCHAR, hour TIMESTAMP);
"""

# util_next_hours: the hour after a load's last one, when it is already rolled up: its first
# energy increase starts from the load's last sample (filled in by _refresh).
_PLAN_HOURS = """
CREATE OR REPLACE TEMP TABLE util_hours AS
SELECT cluster, hour, bool_or(telemetry) AS telemetry
FROM (
    SELECT cluster, hour, true AS telemetry FROM util_next_hours
    UNION ALL
    SELECT
        cluster,
        unnest(range(date_trunc('hour', min_ts), date_trunc('hour', max_ts) + INTERVAL 1 HOUR,
                     INTERVAL 1 HOUR)) AS hour,
        true AS telemetry
    FROM util_loads
    WHERE min_ts IS NOT NULL
    UNION ALL
    SELECT
        cluster,
        unnest(range(date_trunc('hour', start), date_trunc('hour', horizon) + INTERVAL 1 HOUR,
                     INTERVAL 1 HOUR)) AS hour,
        false AS telemetry
    FROM util_inventory
    WHERE start IS NOT NULL AND start <= horizon
)
GROUP BY cluster, hour;

CREATE OR REPLACE TEMP TABLE util_horizon AS
SELECT cluster, max(started_at) AS horizon
FROM audit.collections
WHERE source = 'kubernetes' AND status = 'succeeded'
GROUP BY cluster;

CREATE OR REPLACE TEMP TABLE util_balloons AS
SELECT DISTINCT cluster, namespace, pod_name, valid_from, valid_to
FROM core.gpu_allocation_history
WHERE category = 'balloon';
"""

_KEEP_COMPACTED_HOURS = """
UPDATE util_hours SET telemetry = false
WHERE telemetry AND hour < (
    SELECT CAST(max(day) + 1 AS TIMESTAMP) FROM audit.compactions
    WHERE table_name = 'core.gpu_telemetry_samples'
)
"""

_SERIES = f"""
CREATE OR REPLACE TEMP TABLE util_series AS
WITH bounds AS (
    SELECT cluster, min(hour) AS lo, max(hour) + INTERVAL 1 HOUR AS hi
    FROM util_hours
    WHERE telemetry
    GROUP BY cluster
)
SELECT
    s.series_id,
    s.cluster,
    s.gpu_uuid,
    CAST(CASE WHEN coalesce(s.pod_share, false) THEN {SHARE_CODE} ELSE {_CODE_CASE} END
        AS UTINYINT) AS code,
    s.pod,
    s.namespace,
    s.node_name AS hostname,
    s.nvml_device_name AS model_name
FROM core.gpu_telemetry_series AS s
JOIN bounds AS b USING (cluster)
WHERE s.gpu_uuid IS NOT NULL
  AND s.metric IN ({", ".join(f"'{m}'" for m in METRIC_CODES)})
  AND s.first_ts < b.hi
  AND s.last_ts >= b.lo - INTERVAL 1 HOUR;

CREATE OR REPLACE TEMP TABLE util_gpus AS
SELECT
    CAST(row_number() OVER (ORDER BY cluster, gpu_uuid) AS UINTEGER) AS gpu_key,
    cluster,
    gpu_uuid
FROM (SELECT DISTINCT cluster, gpu_uuid FROM util_series);

CREATE OR REPLACE TEMP TABLE util_clusters AS
SELECT CAST(row_number() OVER (ORDER BY cluster) AS USMALLINT) AS cluster_key, cluster
FROM (SELECT DISTINCT cluster FROM util_series);

CREATE OR REPLACE TEMP TABLE util_labels AS
SELECT
    CAST(row_number() OVER (ORDER BY pod, namespace) AS UINTEGER) AS label_key,
    pod,
    namespace
FROM (SELECT DISTINCT pod, namespace FROM util_series WHERE pod IS NOT NULL);

CREATE OR REPLACE TEMP TABLE util_names AS
SELECT CAST(row_number() OVER (ORDER BY name) AS UINTEGER) AS name_key, name
FROM (
    SELECT hostname AS name FROM util_series WHERE hostname IS NOT NULL
    UNION
    SELECT model_name FROM util_series WHERE model_name IS NOT NULL
);

-- Everything per series as small integers: the hourly statements join and group on these.
-- single: the GPU's only series in the refresh (its hours need no pivot).
CREATE OR REPLACE TEMP TABLE util_keys AS
SELECT
    s.series_id,
    g.gpu_key,
    count(*) OVER (PARTITION BY g.gpu_key) = 1 AS single,
    c.cluster_key,
    s.code,
    l.label_key,
    h.name_key AS host_key,
    m.name_key AS model_key
FROM util_series AS s
JOIN util_gpus AS g USING (cluster, gpu_uuid)
JOIN util_clusters AS c USING (cluster)
LEFT JOIN util_labels AS l ON l.pod = s.pod AND l.namespace IS NOT DISTINCT FROM s.namespace
LEFT JOIN util_names AS h ON h.name = s.hostname
LEFT JOIN util_names AS m ON m.name = s.model_name;

-- Series whose samples are read one by one: power, the energy counter, XID codes.
CREATE OR REPLACE TEMP TABLE util_special_series AS
SELECT series_id, gpu_key, code
FROM util_keys
WHERE code IN (6, 7, 10);

CREATE OR REPLACE TEMP TABLE util_counters AS
SELECT series_id, gpu_key
FROM util_keys
WHERE code = {METRIC_CODES["total_energy_consumption"]};

CREATE OR REPLACE TEMP TABLE util_hour_clusters AS
SELECT u.hour, c.cluster_key
FROM util_hours AS u
JOIN util_clusters AS c USING (cluster)
WHERE u.telemetry;
"""

_POD_CATEGORY = """
CASE
    WHEN {pod} IS NULL THEN NULL
    WHEN EXISTS (
        SELECT 1 FROM util_balloons AS b
        WHERE b.cluster = {cluster} AND b.pod_name = {pod}
          AND b.namespace IS NOT DISTINCT FROM {namespace}
          AND b.valid_from < {hour} + INTERVAL 1 HOUR
          AND (b.valid_to IS NULL OR b.valid_to > {hour})
    ) THEN 'balloon'
    ELSE 'workload'
END
"""

# One hour of samples ($lo <= ts < $hi) -> one integer-keyed row per GPU in util_ghour:
# 1. count, sum and max per series (grouped by the integer series_id alone: one hour's series
#    fit a cache-friendly hash table), joined to the series' integer keys afterwards;
_HOUR_SERIES = """
CREATE OR REPLACE TEMP TABLE util_agg AS
SELECT k.gpu_key, k.code, k.label_key, k.host_key, k.model_key, k.single, a.n, a.total, a.top
FROM (
    SELECT series_id, count(*) AS n, sum(value) AS total, max(value) AS top
    FROM core.gpu_telemetry_samples
    WHERE ts >= $lo AND ts < $hi
    GROUP BY series_id
) AS a
JOIN util_keys AS k USING (series_id)
WHERE k.cluster_key IN (SELECT cluster_key FROM util_hour_clusters WHERE hour = $lo)
"""

# 2. the samples of the series that need more than count, sum and max (power: the time span it
#    covers; XID: which codes were non-zero, the last one; the energy counter: increases);
_HOUR_SPECIAL = """
CREATE OR REPLACE TEMP TABLE util_special AS
SELECT d.gpu_key, d.code, s.ts, s.value
FROM core.gpu_telemetry_samples AS s
JOIN util_special_series AS d USING (series_id)
WHERE s.ts >= $lo AND s.ts < $hi
"""

_HOUR_DETAIL = """
CREATE OR REPLACE TEMP TABLE util_detail AS
SELECT
    gpu_key,
    count(*) FILTER (WHERE code = 6) AS n_power,
    min(ts) FILTER (WHERE code = 6) AS power_first,
    max(ts) FILTER (WHERE code = 6) AS power_last,
    arg_max(value, (ts, value)) FILTER (WHERE code = 10 AND value <> 0) AS xid_last,
    CASE WHEN count(*) FILTER (WHERE code = 10) > 0
        THEN count(*) FILTER (WHERE code = 10 AND value <> 0) END AS xid_samples
FROM util_special
WHERE code IN (6, 10)
GROUP BY gpu_key
"""

# 3. counter increases: each energy sample with the GPU's previous one (at most 1 h before; the
#    previous hour's last sample per GPU is carried in util_counter_last);
_COUNTER_SEED = """
CREATE OR REPLACE TEMP TABLE util_counter_last AS
SELECT m.gpu_key, max(s.ts) AS ts, arg_max(s.value, (s.ts, s.value)) AS value
FROM core.gpu_telemetry_samples AS s
JOIN util_counters AS m USING (series_id)
WHERE s.ts >= $lo - INTERVAL 1 HOUR AND s.ts < $lo
GROUP BY m.gpu_key
"""

_HOUR_ENERGY = """
CREATE OR REPLACE TEMP TABLE util_energy AS
SELECT
    gpu_key,
    sum(CASE WHEN value >= prev_value THEN value - prev_value ELSE value END) AS energy_joules
FROM (
    SELECT
        gpu_key,
        ts,
        value,
        lag(value) OVER w AS prev_value,
        lag(ts) OVER w AS prev_ts
    FROM (
        SELECT gpu_key, ts, value FROM util_special WHERE code = 7
        UNION ALL
        SELECT gpu_key, ts, value FROM util_counter_last
        WHERE ts >= $lo - INTERVAL 1 HOUR AND ts < $lo
    )
    WINDOW w AS (PARTITION BY gpu_key ORDER BY ts, value)
)
WHERE ts >= $lo AND prev_ts >= ts - INTERVAL 1 HOUR
GROUP BY gpu_key
"""

_COUNTER_CARRY = """
CREATE OR REPLACE TEMP TABLE util_counter_last AS
SELECT gpu_key, max(ts) AS ts, arg_max(value, (ts, value)) AS value
FROM (
    SELECT gpu_key, ts, value FROM util_special WHERE code = 7
    UNION ALL
    SELECT gpu_key, ts, value FROM util_counter_last
)
GROUP BY gpu_key
"""

# 4. the pivot per GPU (sums of masked values: code = c is 1 or 0; cheaper than FILTER), the
#    most frequent pod label, the details and the energy: integers and numbers only.
_UTIL_GHOUR = """
CREATE OR REPLACE TEMP TABLE util_ghour (
    hour TIMESTAMP, gpu_key UINTEGER, host_key UINTEGER, model_key UINTEGER,
    label_key UINTEGER, samples BIGINT, busy_code UTINYINT, busy DOUBLE, sm_active DOUBLE,
    tensor_active DOUBLE, dram_active DOUBLE, power_watts DOUBLE,
    power_covered_seconds DOUBLE, energy_joules DOUBLE, max_gpu_temp_c DOUBLE,
    mean_sm_clock_mhz DOUBLE, xid_last DOUBLE, xid_samples BIGINT,
    uncorrectable_remapped_rows_max DOUBLE, correctable_remapped_rows_max DOUBLE,
    row_remap_failure_max DOUBLE, pod_label_fraction DOUBLE
)
"""


_SHARE_N = f"max(n) FILTER (WHERE code = {SHARE_CODE} AND label_key IS NOT NULL)"


def _pivot_columns() -> tuple[str, str]:
    """The pivot's columns as aggregates (GPUs with several series in the hour) and as plain
    expressions (GPUs with one series: no aggregation needed)."""
    ratio = {"sm_active": 3, "tensor_active": 4, "dram_active": 5, "power_watts": 6}
    ratio["mean_sm_clock_mhz"] = 8
    peak = {
        "max_gpu_temp_c": 9,
        "uncorrectable_remapped_rows_max": 11,
        "correctable_remapped_rows_max": 12,
        "row_remap_failure_max": 13,
    }
    aggregated = [
        "sum(n * (code = 1)::INTEGER) AS n_gr",
        "sum(total * (code = 1)::INTEGER) AS s_gr",
        "sum(n * (code = 2)::INTEGER) AS n_gu",
        "sum(total * (code = 2)::INTEGER) AS s_gu",
    ]
    single = [
        "n * (code = 1)::INTEGER AS n_gr",
        "total * (code = 1)::INTEGER AS s_gr",
        "n * (code = 2)::INTEGER AS n_gu",
        "total * (code = 2)::INTEGER AS s_gu",
    ]
    for name, code in ratio.items():
        mask = f"(code = {code})::INTEGER"
        aggregated.append(f"sum(total * {mask}) / nullif(sum(n * {mask}), 0) AS {name}")
        single.append(f"CASE WHEN code = {code} THEN total / n END AS {name}")
    for name, code in peak.items():
        aggregated.append(f"max(CASE WHEN code = {code} THEN top END) AS {name}")
        single.append(f"CASE WHEN code = {code} THEN top END AS {name}")
    aggregated += [
        # over the GPU's own lines; a shared GPU's pod-share lines (code 0) count as held for
        # the part of the hour they cover (their samples against the GPU's busiest line)
        f"greatest(sum(n * (label_key IS NOT NULL AND code <> {SHARE_CODE})::INTEGER) "
        f"/ nullif(sum(n * (code <> {SHARE_CODE})::INTEGER), 0), "
        f"least(1.0, coalesce({_SHARE_N} / coalesce(max(n) FILTER (WHERE code <> {SHARE_CODE}), "
        f"{_SHARE_N}), 0.0))) AS pod_label_fraction",
        "arg_max(host_key, n * 4294967296 + host_key) AS host_key",
        "arg_max(model_key, n * 4294967296 + model_key) AS model_key",
        "NULL::UINTEGER AS label_key",
    ]
    single += [
        "(label_key IS NOT NULL)::INTEGER::DOUBLE AS pod_label_fraction",
        "host_key",
        "model_key",
        "label_key",
    ]
    indent = ",\n        "
    return indent.join(aggregated), indent.join(single)


_AGGREGATED, _SINGLE = _pivot_columns()

_HOUR_PIVOT = f"""
INSERT INTO util_ghour BY NAME
WITH g AS (
    SELECT
        gpu_key,
        {_AGGREGATED}
    FROM util_agg
    WHERE NOT single
    GROUP BY gpu_key
    UNION ALL BY NAME
    SELECT
        gpu_key,
        {_SINGLE}
    FROM util_agg
    WHERE single
),
labels AS (
    SELECT gpu_key, arg_max(label_key, n * 4294967296 + label_key) AS label_key
    FROM (
        SELECT gpu_key, label_key, sum(n) AS n
        FROM util_agg
        WHERE label_key IS NOT NULL AND NOT single
        GROUP BY gpu_key, label_key
    )
    GROUP BY gpu_key
)
SELECT
    CAST($lo AS TIMESTAMP) AS hour,
    g.gpu_key,
    g.host_key,
    g.model_key,
    coalesce(g.label_key, l.label_key) AS label_key,
    CASE WHEN g.n_gr > 0 THEN g.n_gr WHEN g.n_gu > 0 THEN g.n_gu ELSE 0 END AS samples,
    CASE WHEN g.n_gr > 0 THEN 1 WHEN g.n_gu > 0 THEN 2 END AS busy_code,
    CASE WHEN g.n_gr > 0 THEN g.s_gr / g.n_gr WHEN g.n_gu > 0 THEN g.s_gu / g.n_gu END AS busy,
    g.sm_active,
    g.tensor_active,
    g.dram_active,
    g.power_watts,
    CASE WHEN d.n_power >= 2
        THEN least(3600.0, epoch(d.power_last - d.power_first) * d.n_power / (d.n_power - 1))
    END AS power_covered_seconds,
    e.energy_joules,
    g.max_gpu_temp_c,
    g.mean_sm_clock_mhz,
    d.xid_last,
    d.xid_samples,
    g.uncorrectable_remapped_rows_max,
    g.correctable_remapped_rows_max,
    g.row_remap_failure_max,
    g.pod_label_fraction
FROM g
LEFT JOIN labels AS l USING (gpu_key)
LEFT JOIN util_detail AS d USING (gpu_key)
LEFT JOIN util_energy AS e USING (gpu_key)
"""

_DELETE_GPU_HOURS = sql_files.statement("delete_gpu_hourly")

# 5. per chunk of hours: names back (integer keys were all the hourly statements carried):
# sql/insert_gpu_hourly.sql.
_INSERT_GPU_HOURS = sql_files.statement(
    "insert_gpu_hourly",
    pod_category=_POD_CATEGORY.format(
        pod="workload_pod", namespace="workload_namespace", cluster="cluster", hour="hour"
    ),
)

# The daily rollups are rebuilt whole per (cluster, day) by the statements in sql/:
# {delete,insert}_gpu_pod_daily.sql and {delete,insert}_gpu_daily.sql (the idle threshold is
# IDLE_BUSY_THRESHOLD, filled in here, as in the hourly statements above).
_INSERT_GPU_DAYS = sql_files.statement("insert_gpu_daily", idle_busy_threshold=IDLE_BUSY_THRESHOLD)

_UPDATE_POD_CATEGORY = sql_files.statement(
    "update_gpu_hourly_pod_category",
    pod_category=_POD_CATEGORY.format(
        pod="g.workload_pod", namespace="g.workload_namespace", cluster="g.cluster", hour="g.hour"
    ),
)

# Node versions cut into hours, and the allocation GPU-hours inside each cut: the chunk of hours
# in util_chunk (cluster, hour), $lo = its first hour, $hi = its last hour + 1 hour.
_SEGMENTS = """
-- A DRA-only node's whole GPUs over time: core.dra_devices versions (GPU devices, not MIG),
-- cut at every change of the node's devices, counted per span (physical GPUs: gpu_uuid).
CREATE OR REPLACE TEMP TABLE util_dra_gpus AS
WITH devices AS (
    SELECT cluster, node_name, gpu_uuid, valid_from, valid_to
    FROM core.dra_devices
    WHERE gpu_uuid IS NOT NULL AND mig_profile IS NULL AND node_name IS NOT NULL
      AND cluster IN (SELECT cluster FROM util_chunk)
),
points AS (
    SELECT cluster, node_name, valid_from AS change_at FROM devices
    UNION
    SELECT cluster, node_name, valid_to FROM devices WHERE valid_to IS NOT NULL
),
spans AS (
    SELECT cluster, node_name, change_at AS span_from,
           lead(change_at) OVER (PARTITION BY cluster, node_name ORDER BY change_at) AS span_to
    FROM points
)
SELECT s.cluster, s.node_name, s.span_from, s.span_to, count(DISTINCT d.gpu_uuid) AS devices
FROM spans AS s
JOIN devices AS d
    ON d.cluster = s.cluster AND d.node_name = s.node_name
    AND d.valid_from <= s.span_from AND coalesce(d.valid_to, 'infinity'::TIMESTAMP) > s.span_from
GROUP BY s.cluster, s.node_name, s.span_from, s.span_to;

CREATE OR REPLACE TEMP TABLE util_segments AS
WITH versions AS (
    SELECT
        n.cluster,
        n.node_uid,
        n.node_name,
        n.node_pool,
        gm.gpu_model,
        coalesce(list_filter(n.topology, lambda t: t.level = 1)[1].domain, 'unknown')
            AS failure_domain,
        coalesce(n.ready, false) AND NOT coalesce(n.unschedulable, false) AS schedulable,
        n.shares,
        n.sharing_strategy,
        n.r.capacity // n.shares AS capacity,
        n.r.allocatable // n.shares AS allocatable,
        n.valid_from,
        least(coalesce(n.valid_to, h.horizon), h.horizon) AS valid_to
    FROM (
        -- in physical GPUs, as marts.node_gpu_capacity (one rule: marts.gpu_shares,
        -- warehouse/marts/macros/gpu_sharing.sql): a time-sliced or MPS node advertises
        -- replicas x GPUs, a HAMi node deviceSplitCount x GPUs; a DRA-only node advertises
        -- none, its ResourceSlices publish its GPUs.
        SELECT
            *,
            marts.gpu_shares(labels, r.resource_name, r.capacity, mig_strategy) AS shares,
            marts.gpu_sharing_strategy(labels, r.resource_name, r.capacity, mig_strategy)
                AS sharing_strategy
        FROM (
            SELECT *, unnest(gpu_resources) AS r FROM core.nodes
            UNION ALL BY NAME
            -- a DRA-only node: per node version, the GPUs its ResourceSlices published while
            -- it held (util_dra_gpus: the device versions valid in each span), so a slice
            -- that changes changes capacity from then on, never back to its first hour
            SELECT
                n.* REPLACE (
                    greatest(n.valid_from, d.span_from) AS valid_from,
                    least(n.valid_to, d.span_to) AS valid_to
                ),
                {
                    'resource_name': 'nvidia.com/gpu', 'capacity': d.devices,
                    'allocatable': d.devices
                } AS r
            FROM core.nodes AS n
            JOIN util_dra_gpus AS d
                ON d.cluster = n.cluster AND d.node_name = n.node_name
                AND n.valid_from < coalesce(d.span_to, 'infinity'::TIMESTAMP)
                AND coalesce(n.valid_to, 'infinity'::TIMESTAMP) > d.span_from
            WHERE NOT list_contains(
                list_transform(coalesce(n.gpu_resources, []), lambda x: x.resource_name),
                'nvidia.com/gpu')
        )
    ) AS n
    JOIN util_horizon AS h USING (cluster)
    LEFT JOIN marts.gpu_models AS gm
        ON gm.source = 'gfd_product' AND gm.spelling = n.gfd_product
    WHERE n.r.resource_name = 'nvidia.com/gpu'
      AND coalesce(n.mig_strategy, 'none') <> 'single'
      AND n.valid_from < $hi
      AND coalesce(n.valid_to, h.horizon) > $lo
      AND n.cluster IN (SELECT cluster FROM util_chunk)
)
SELECT
    row_number() OVER () AS segment,
    v.* EXCLUDE (valid_from, valid_to),
    u.hour,
    greatest(v.valid_from, u.hour) AS seg_from,
    least(v.valid_to, u.hour + INTERVAL 1 HOUR) AS seg_to,
    epoch(least(v.valid_to, u.hour + INTERVAL 1 HOUR) - greatest(v.valid_from, u.hour)) / 3600.0
        AS seg_hours
FROM versions AS v
JOIN util_chunk AS u
    ON u.cluster = v.cluster
    AND u.hour >= date_trunc('hour', v.valid_from)
    AND u.hour < v.valid_to
WHERE least(v.valid_to, u.hour + INTERVAL 1 HOUR) > greatest(v.valid_from, u.hour);

CREATE OR REPLACE TEMP TABLE util_held AS
WITH allocations AS (
    -- gpucores: a HAMi pod's nvidia.com/gpucores (its share of each GPU, marts.gpu_held)
    SELECT
        a.cluster,
        a.node_name,
        a.namespace,
        a.category,
        a.gpus,
        c.gpus AS gpucores,
        a.valid_from,
        least(coalesce(a.valid_to, h.horizon), h.horizon) AS valid_to
    FROM core.gpu_allocation_history AS a
    JOIN util_horizon AS h USING (cluster)
    LEFT JOIN core.gpu_allocation_history AS c
        ON c.cluster = a.cluster AND c.pod_uid = a.pod_uid
        AND c.resource_name = 'nvidia.com/gpucores' AND a.mechanism = 'device_plugin'
        AND c.valid_from = a.valid_from
    WHERE a.resource_name = 'nvidia.com/gpu'
      AND a.valid_from < $hi
      AND coalesce(a.valid_to, h.horizon) > $lo
      AND a.cluster IN (SELECT cluster FROM util_chunk)
),
allocation_hours AS (
    SELECT
        *,
        unnest(range(date_trunc('hour', greatest(valid_from, $lo)), least(valid_to, $hi),
                     INTERVAL 1 HOUR)) AS hour
    FROM allocations
    WHERE valid_to > valid_from
),
held AS (
    SELECT
        s.segment,
        s.cluster,
        s.hour,
        a.namespace,
        a.category,
        sum(marts.gpu_held(a.gpus, s.shares, s.sharing_strategy, a.gpucores)
            * epoch(least(s.seg_to, a.valid_to) - greatest(s.seg_from, a.valid_from))
            / 3600.0) AS gpu_hours
    FROM util_segments AS s
    JOIN allocation_hours AS a
        ON a.cluster = s.cluster AND a.node_name = s.node_name AND a.hour = s.hour
        AND a.valid_from < s.seg_to AND a.valid_to > s.seg_from
    GROUP BY s.segment, s.cluster, s.hour, a.namespace, a.category
)
-- Never more GPU-hours held than the node version has (intervals that outlive a capacity
-- drop): beyond it, each holder keeps its share of the capacity, so the buckets of
-- marts.node_gpu_hours sum to capacity whatever the intervals say.
SELECT
    h.segment,
    h.cluster,
    h.hour,
    h.namespace,
    h.category,
    h.gpu_hours * coalesce(
        least(1.0, s.capacity * s.seg_hours
                   / nullif(sum(h.gpu_hours) OVER (PARTITION BY h.segment), 0)),
        1.0
    ) AS gpu_hours
FROM held AS h
JOIN util_segments AS s USING (segment);
"""

_TELEMETRY_IN_CHUNK = """
SELECT g.*
FROM marts.gpu_hourly AS g
WHERE g.hour >= $lo AND g.hour < $hi
  AND EXISTS (SELECT 1 FROM util_chunk AS u WHERE u.cluster = g.cluster AND u.hour = g.hour)
"""

_DELETE_NODE_HOURS = sql_files.statement("delete_hourly_rollup")

_INSERT_NODE_HOURS = sql_files.statement(
    "insert_node_gpu_hours",
    idle_busy_threshold=IDLE_BUSY_THRESHOLD,
    telemetry_in_chunk=_TELEMETRY_IN_CHUNK,
)

_INSERT_NAMESPACE_HOURS = sql_files.statement(
    "insert_namespace_gpu_hours",
    idle_busy_threshold=IDLE_BUSY_THRESHOLD,
    telemetry_in_chunk=_TELEMETRY_IN_CHUNK,
)

_FINISH = """
UPDATE audit.telemetry_loads AS l
SET rolled_up = true
WHERE NOT l.rolled_up AND l.collection_id IN (SELECT collection_id FROM util_loads);

INSERT INTO audit.utilisation_refreshes
SELECT
    CAST($now AS TIMESTAMP),
    c.cluster,
    coalesce((SELECT count(*) FROM util_loads AS l WHERE l.cluster = c.cluster), 0),
    coalesce((SELECT any_value(collections) FROM util_inventory AS i
              WHERE i.cluster = c.cluster), 0),
    (SELECT max(horizon) FROM util_horizon AS h WHERE h.cluster = c.cluster),
    (SELECT min(hour) FROM util_hours AS u WHERE u.cluster = c.cluster),
    (SELECT max(hour) FROM util_hours AS u WHERE u.cluster = c.cluster),
    (SELECT count(*) FROM util_hours AS u WHERE u.cluster = c.cluster),
    (SELECT count(*) FROM util_hours AS u WHERE u.cluster = c.cluster AND u.telemetry),
    coalesce((SELECT rows FROM util_written AS w
              WHERE w.cluster = c.cluster AND w.tbl = 'gpu_hourly'), 0),
    coalesce((SELECT rows FROM util_written AS w
              WHERE w.cluster = c.cluster AND w.tbl = 'node_gpu_hours'), 0),
    coalesce((SELECT rows FROM util_written AS w
              WHERE w.cluster = c.cluster AND w.tbl = 'namespace_gpu_hours'), 0)
FROM (
    SELECT cluster FROM util_loads
    UNION
    SELECT cluster FROM util_inventory
) AS c;
"""

_WRITTEN = """
INSERT INTO util_written
SELECT '{table}', t.cluster, count(*)
FROM marts.{table} AS t
WHERE t.hour >= $first AND t.hour <= $last AND t.refreshed_at = $now
  AND EXISTS (SELECT 1 FROM util_hours AS u WHERE u.cluster = t.cluster AND u.hour = t.hour)
GROUP BY t.cluster
"""

_TEMP_TABLES = (
    "util_loads",
    "util_inventory",
    "util_next_hours",
    "util_hours",
    "util_horizon",
    "util_balloons",
    "util_series",
    "util_gpus",
    "util_clusters",
    "util_labels",
    "util_names",
    "util_keys",
    "util_special_series",
    "util_counters",
    "util_hour_clusters",
    "util_agg",
    "util_special",
    "util_detail",
    "util_energy",
    "util_counter_last",
    "util_ghour",
    "util_chunk",
    "util_dra_gpus",
    "util_segments",
    "util_held",
    "util_written",
    "util_pod_days",
    "util_gpu_days",
)


def refresh_gpu_hourly(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Rebuild the hourly utilisation tables for everything loaded since the last refresh.

    ``con`` is the writer connection (``with wh.writer() as con:``). Everything happens in one
    transaction: the caller's when it has one open, else one this function begins and commits
    (``Warehouse.writer()`` opens none), so a failure leaves the marts as they were and the
    loads still marked not rolled up. Rerunning it with nothing new changes nothing.

    Rebuilds (see the module docstring for the exact hours): ``marts.gpu_hourly`` for the hours
    of ``audit.telemetry_loads`` rows with ``rolled_up = false``, then sets them rolled up;
    ``marts.node_gpu_hours`` and ``marts.namespace_gpu_hours`` for those hours and the hours
    touched by kubernetes collections newer than the last refresh. Records one row per cluster
    in ``audit.utilisation_refreshes``.

    Returns counts: ``telemetry_loads``, ``kubernetes_collections``, ``clusters``, ``hours``
    (cluster-hours of node/namespace rollups rebuilt), ``telemetry_hours`` (cluster-hours of
    ``gpu_hourly`` rebuilt), ``gpu_hourly_rows``, ``node_gpu_hours_rows``,
    ``namespace_gpu_hours_rows`` and ``milliseconds``.
    """
    started = time.perf_counter()
    try:
        with atomic(con):
            counts = _refresh(con, utc_now())
    finally:
        _drop_temp_tables(con)
    counts["milliseconds"] = round((time.perf_counter() - started) * 1000)
    return counts


def _refresh(con: duckdb.DuckDBPyConnection, now: datetime) -> dict[str, int]:
    for statement in con.extract_statements(_PLAN):
        con.execute(statement)
    next_hours = con.execute(
        "SELECT DISTINCT cluster, date_trunc('hour', max_ts) + INTERVAL 1 HOUR FROM util_loads "
        "WHERE max_ts IS NOT NULL"
    ).fetchall()
    for cluster, hour in next_hours:
        rolled = con.execute(
            "SELECT count(*) FROM marts.gpu_hourly WHERE hour = ? AND cluster = ?", [hour, cluster]
        ).fetchone()
        if rolled and rolled[0]:
            con.execute("INSERT INTO util_next_hours VALUES (?, ?)", [cluster, hour])
    for statement in con.extract_statements(_PLAN_HOURS):
        con.execute(statement)
    if table_exists(con, "audit", "compactions"):
        # never rebuild an hour from samples compaction moved out (warehouse.compaction): its
        # rollup is final; a late load for it changes the inventory hours only
        con.execute(_KEEP_COMPACTED_HOURS)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE util_written (tbl VARCHAR, cluster VARCHAR, rows BIGINT)"
    )
    plan = con.execute(
        "SELECT (SELECT count(*) FROM util_loads), "
        "(SELECT coalesce(sum(collections), 0) FROM util_inventory), "
        "(SELECT count(DISTINCT cluster) FROM util_hours), "
        "(SELECT count(*) FROM util_hours), "
        "(SELECT count(*) FROM util_hours WHERE telemetry)"
    ).fetchone()
    assert plan is not None
    loads, collections, clusters, hours, telemetry_hours = (int(v) for v in plan)
    counts = {
        "telemetry_loads": loads,
        "kubernetes_collections": collections,
        "clusters": clusters,
        "hours": hours,
        "telemetry_hours": telemetry_hours,
        "gpu_hourly_rows": 0,
        "node_gpu_hours_rows": 0,
        "namespace_gpu_hours_rows": 0,
    }
    if loads == 0 and collections == 0:
        return counts

    all_hours = [
        h for (h,) in con.execute("SELECT DISTINCT hour FROM util_hours ORDER BY hour").fetchall()
    ]
    gpu_hours = [
        h
        for (h,) in con.execute(
            "SELECT DISTINCT hour FROM util_hours WHERE telemetry ORDER BY hour"
        ).fetchall()
    ]
    if gpu_hours:
        for statement in con.extract_statements(_SERIES):
            con.execute(statement)
        previous = None
        for start in range(0, len(gpu_hours), CHUNK_HOURS):
            chunk = gpu_hours[start : start + CHUNK_HOURS]
            con.execute(_UTIL_GHOUR)
            for hour in chunk:
                params = {"lo": hour, "hi": hour + timedelta(hours=1)}
                if previous is None or hour - previous != timedelta(hours=1):
                    _run(con, "energy counter seed", _COUNTER_SEED, {"lo": hour})
                _run(con, "series aggregates", _HOUR_SERIES, params)
                _run(con, "special samples", _HOUR_SPECIAL, params)
                _run(con, "xid and power details", _HOUR_DETAIL, {})
                _run(con, "energy counter increases", _HOUR_ENERGY, {"lo": hour})
                _run(con, "energy counter carry", _COUNTER_CARRY, {})
                _run(con, "pivot", _HOUR_PIVOT, {"lo": hour})
                previous = hour
            bounds = {"lo": chunk[0], "hi": chunk[-1] + timedelta(hours=1)}
            _run(con, "delete gpu_hourly", _DELETE_GPU_HOURS, bounds)
            _run(con, "insert gpu_hourly", _INSERT_GPU_HOURS, {"now": now})
        con.execute(
            "CREATE OR REPLACE TEMP TABLE util_pod_days AS "
            "SELECT DISTINCT cluster, CAST(hour AS DATE) AS day FROM util_hours WHERE telemetry"
        )
        _rebuild_pod_days(con, gpu_hours[0].date(), gpu_hours[-1].date(), now)

    for start in range(0, len(all_hours), CHUNK_HOURS):
        chunk = all_hours[start : start + CHUNK_HOURS]
        lo, last = chunk[0], chunk[-1]
        bounds = {"lo": lo, "hi": last + timedelta(hours=1)}
        con.execute(
            "CREATE OR REPLACE TEMP TABLE util_chunk AS SELECT * FROM util_hours "
            "WHERE hour >= $lo AND hour <= $last",
            {"lo": lo, "last": last},
        )
        _run(con, "pod categories", _UPDATE_POD_CATEGORY, {"lo": lo, "last": last})
        dra_gpus, segments, held = con.extract_statements(_SEGMENTS)
        _run(con, "DRA-only GPUs over time", dra_gpus, {})
        _run(con, "node version segments", segments, bounds)
        _run(con, "allocations in segments", held, bounds)
        for table in ("node_gpu_hours", "namespace_gpu_hours"):
            _run(con, f"delete {table}", _DELETE_NODE_HOURS.replace("{table}", table), bounds)
        _run(con, "insert node_gpu_hours", _INSERT_NODE_HOURS, bounds | {"now": now})
        _run(con, "insert namespace_gpu_hours", _INSERT_NAMESPACE_HOURS, bounds | {"now": now})

    if all_hours:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE util_gpu_days AS "
            "SELECT DISTINCT cluster, CAST(hour AS DATE) AS day FROM util_hours"
        )
        _rebuild_gpu_days(con, all_hours[0].date(), all_hours[-1].date(), now)
        span = {"first": all_hours[0], "last": all_hours[-1], "now": now}
        for table in ("gpu_hourly", "node_gpu_hours", "namespace_gpu_hours"):
            con.execute(_WRITTEN.replace("{table}", table), span)
    for table, key in (
        ("gpu_hourly", "gpu_hourly_rows"),
        ("node_gpu_hours", "node_gpu_hours_rows"),
        ("namespace_gpu_hours", "namespace_gpu_hours_rows"),
    ):
        row = con.execute(
            "SELECT coalesce(sum(rows), 0) FROM util_written WHERE tbl = ?", [table]
        ).fetchone()
        counts[key] = int(row[0]) if row else 0
    update_loads, record = con.extract_statements(_FINISH)
    con.execute(update_loads)
    con.execute(record, {"now": now})
    return counts


def rebuild_daily_rollups(
    con: duckdb.DuckDBPyConnection, first: date, last: date
) -> dict[str, int]:
    """Rebuild ``marts.gpu_pod_daily`` and ``marts.gpu_daily`` for every cluster's days
    ``first``..``last`` from ``marts.gpu_hourly``; returns the rows each now has in those days.
    ``refresh_gpu_hourly`` keeps both up to date by itself: this is for GPU-hours written
    another way (the compute and report benchmarks fill ``marts.gpu_hourly`` in SQL). Atomic,
    like the refresh."""
    days = {"first": first, "last": last}
    try:
        with atomic(con):
            con.execute(
                "CREATE OR REPLACE TEMP TABLE util_pod_days AS SELECT DISTINCT cluster, day "
                "FROM marts.gpu_hourly WHERE day >= $first AND day <= $last",
                days,
            )
            con.execute("CREATE OR REPLACE TEMP TABLE util_gpu_days AS FROM util_pod_days")
            now = utc_now()
            _rebuild_pod_days(con, first, last, now)
            _rebuild_gpu_days(con, first, last, now)
            counts = {
                table: int(
                    con.execute(
                        f"SELECT count(*) FROM marts.{table} WHERE day >= $first AND day <= $last",
                        days,
                    ).fetchone()[0]  # type: ignore[index]
                )
                for table in ("gpu_pod_daily", "gpu_daily")
            }
    finally:
        _drop_temp_tables(con)
    return counts


def _rebuild_pod_days(
    con: duckdb.DuckDBPyConnection, first: date, last: date, now: datetime
) -> None:
    days = {"first": first, "last": last}
    con.execute(sql_files.statement("create_exact_sum"))
    _run(con, "delete gpu_pod_daily", sql_files.statement("delete_gpu_pod_daily"), days)
    _run(
        con,
        "insert gpu_pod_daily",
        sql_files.statement("insert_gpu_pod_daily"),
        days | {"now": now},
    )


def _rebuild_gpu_days(
    con: duckdb.DuckDBPyConnection, first: date, last: date, now: datetime
) -> None:
    days = {"first": first, "last": last}
    _run(con, "delete gpu_daily", sql_files.statement("delete_gpu_daily"), days)
    _run(con, "insert gpu_daily", _INSERT_GPU_DAYS, days | {"now": now})


def _run(con: duckdb.DuckDBPyConnection, what: str, sql: Any, params: dict[str, object]) -> None:
    started = time.perf_counter()
    con.execute(sql, params)
    log.debug("%s %s took %.3f s", what, params.get("lo", ""), time.perf_counter() - started)


def _drop_temp_tables(con: duckdb.DuckDBPyConnection) -> None:
    for name in _TEMP_TABLES:
        with contextlib.suppress(duckdb.Error):
            con.execute(f"DROP TABLE IF EXISTS temp.{name}")

"""The telemetry source model: DCGM series and samples from ``collectors/telemetry``.

Series (a GPU, a canonical metric, the workload labels) are few and are staged and merged like
any table. Samples are many (a day of one field for 60,000 GPUs at one-minute steps is 86.4
million), so they bypass staging: each chunk is appended straight into
``core.gpu_telemetry_samples`` inside the collection's transaction, after its collection-local
``series_index`` is translated to the warehouse's compact ``series_id`` with one Arrow ``take``
(a SQL join costs about 1.7x the insert; the take costs a few percent). All-or-nothing still
holds: everything commits with the collection or not at all.

Idempotency: every series keeps ``last_ts``, the latest sample loaded. A sample at or before its
series' ``last_ts`` (as it was when the collection started) is already in the warehouse and is
skipped, so a rerun or an overlapping window loads each sample once. The limit: a window
*older* than what a series already holds (a backfill behind the watermark) is skipped too;
backfill a gap into a fresh series or re-load from the start.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from annex.errors import CollectionError
from warehouse.load import SourceModel
from warehouse.staging import Sink

_HERE = Path(__file__).parent
log = logging.getLogger(__name__)

_SERIES_IDENTITY = (
    "hash(getvariable('cluster'), gpu_uuid, metric, hostname, pod, namespace, container, "
    "mig_profile, mig_instance)"
)

_CHUNK_SERIES = "series_index >= $known"
"""Staged series the appender has not mapped yet (it maps them in index order)."""
_UNMAPPED_SERIES = "series_index NOT IN (SELECT series_index FROM telemetry_series_map)"
"""Staged series no sample referenced (mapped by the merge, after the last chunk)."""


def _register_series_sql(staged: str) -> str:
    """Add the staged series matching ``staged`` that the warehouse does not know yet."""
    return f"""
CREATE OR REPLACE TEMP TABLE telemetry_fresh_series AS
WITH staged AS (
    SELECT *, {_SERIES_IDENTITY} AS series_key
    FROM stage_telemetry_series
    WHERE {staged}
),
fresh AS (
    SELECT *
    FROM staged
    ANTI JOIN (
        SELECT series_key FROM core.gpu_telemetry_series WHERE cluster = getvariable('cluster')
    ) AS known USING (series_key)
    QUALIFY row_number() OVER (PARTITION BY series_key ORDER BY series_index) = 1
)
SELECT
    getvariable('cluster') AS cluster,
    ((SELECT coalesce(max(series_id), 0) FROM core.gpu_telemetry_series)
        + row_number() OVER (ORDER BY series_index))::UINTEGER AS series_id,
    series_key,
    * EXCLUDE (series_index, series_key),
    NULL::TIMESTAMP AS first_ts,
    NULL::TIMESTAMP AS last_ts,
    getvariable('collection_id') AS first_collection_id,
    getvariable('collection_id') AS last_collection_id
FROM fresh;

INSERT INTO core.gpu_telemetry_series BY NAME SELECT * FROM telemetry_fresh_series;
"""


def _map_series_sql(staged: str) -> str:
    """Map the staged series matching ``staged`` to their warehouse ids and watermarks."""
    return f"""
INSERT INTO telemetry_series_map
SELECT s.series_index, c.series_id, c.last_ts
FROM (
    SELECT series_index, {_SERIES_IDENTITY} AS series_key
    FROM stage_telemetry_series
    WHERE {staged}
) AS s
JOIN core.gpu_telemetry_series AS c
    ON c.cluster = getvariable('cluster') AND c.series_key = s.series_key
ORDER BY s.series_index
"""


class SampleAppender:
    """Appends one collection's sample chunks to ``core.gpu_telemetry_samples``."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.series_ids = pa.array([], pa.uint32())
        self.watermarks = pa.array([], pa.timestamp("us"))
        self.any_watermark = False
        self.received = 0
        self.loaded = 0
        self.min_ts: object = None
        self.max_ts: object = None
        self._publish_counts()

    def __call__(self, chunk: pa.Table) -> None:
        if chunk.num_rows == 0:
            return
        index = chunk.column("series_index")
        highest = pc.max(index).as_py()
        if highest >= len(self.series_ids):
            self._map_new_series(highest)
        self.received += chunk.num_rows
        ts = chunk.column("ts")
        if ts.type != pa.timestamp("us"):
            ts = ts.cast(pa.timestamp("us"))
        samples = pa.table(
            {
                "ts": ts,
                "series_id": pc.take(self.series_ids, index),
                "value": chunk.column("value").cast(pa.float64()),
            }
        )
        if self.any_watermark:
            watermark = pc.take(self.watermarks, index)
            fresh = pc.or_kleene(pc.is_null(watermark), pc.greater(ts, watermark))
            samples = samples.filter(fresh)
        if samples.num_rows == 0:
            self._publish_counts()
            return
        bounds = pc.min_max(samples.column("ts")).as_py()
        self.min_ts = bounds["min"] if self.min_ts is None else min(self.min_ts, bounds["min"])
        self.max_ts = bounds["max"] if self.max_ts is None else max(self.max_ts, bounds["max"])
        self.con.register("annex_telemetry_samples", samples)
        try:
            self.con.execute(
                "INSERT INTO core.gpu_telemetry_samples SELECT ts, series_id, value "
                "FROM annex_telemetry_samples"
            )
        finally:
            self.con.unregister("annex_telemetry_samples")
        self.loaded += samples.num_rows
        self._publish_counts()

    def _map_new_series(self, highest: int) -> None:
        started = time.perf_counter()
        known = len(self.series_ids)
        for statement in self.con.extract_statements(_register_series_sql(_CHUNK_SERIES)):
            self.con.execute(statement, {"known": known} if "$known" in statement.query else None)
        log.debug("registering series took %.3f s", time.perf_counter() - started)
        self.con.execute(_map_series_sql(_CHUNK_SERIES), {"known": known})
        log.debug("mapping series took %.3f s", time.perf_counter() - started)
        mapped = self.con.sql(
            "SELECT series_index, series_id, watermark FROM telemetry_series_map "
            "WHERE series_index >= $known ORDER BY series_index",
            params={"known": known},
        ).to_arrow_table()
        indexes = mapped.column("series_index").to_pylist()
        if indexes != list(range(known, known + len(indexes))) or known + len(indexes) <= highest:
            raise CollectionError(
                f"telemetry samples reference series_index {highest}, but the collector staged "
                f"series {known}..{known + len(indexes) - 1} only (or not densely numbered)",
                hint="a collector must yield each series (dense indexes from 0) before its samples",
            )
        self.series_ids = pa.concat_arrays(
            [self.series_ids, *mapped.column("series_id").cast(pa.uint32()).chunks]
        )
        watermarks = mapped.column("watermark").cast(pa.timestamp("us"))
        self.watermarks = pa.concat_arrays([self.watermarks, *watermarks.chunks])
        self.any_watermark = self.any_watermark or watermarks.null_count < len(watermarks)

    def _publish_counts(self) -> None:
        # read by the merge SQL (SET VARIABLE is not transactional; every collection resets them)
        self.con.execute("SET VARIABLE telemetry_samples_received = ?::BIGINT", [self.received])
        self.con.execute("SET VARIABLE telemetry_samples_loaded = ?::BIGINT", [self.loaded])
        self.con.execute("SET VARIABLE telemetry_min_ts = ?::TIMESTAMP", [self.min_ts])
        self.con.execute("SET VARIABLE telemetry_max_ts = ?::TIMESTAMP", [self.max_ts])


def _sample_sink(con: duckdb.DuckDBPyConnection) -> Sink:
    return SampleAppender(con)


TELEMETRY_MODEL = SourceModel(
    source="telemetry",
    staging_sql=(_HERE / "telemetry_staging.sql").read_text(encoding="utf-8"),
    # series that had no samples in this collection are registered too
    merge_sql=_register_series_sql(_UNMAPPED_SERIES)
    + _map_series_sql(_UNMAPPED_SERIES)
    + ";\n"
    + (_HERE / "telemetry_merge.sql").read_text(encoding="utf-8"),
    appends={"telemetry_samples": _sample_sink},
)

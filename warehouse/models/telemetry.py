"""The telemetry source model: DCGM series and samples from ``collectors/telemetry``.

Neither series nor samples are staged; one sink per collection (``TelemetryAppender``) receives
both. Series (a GPU, a canonical metric, the workload labels) are few: they are kept as Arrow
batches, given compact warehouse ids when samples first need them, and written into
``core.gpu_telemetry_series`` by the merge, straight from Arrow. Samples are many (a day of
one field for 60,000 GPUs at one-minute steps is 86.4 million): their collection-local
``series_index`` is translated to the ``series_id`` with one Arrow ``take`` (a SQL join costs
about 1.7x the insert) and they stream into ``core.gpu_telemetry_samples`` through a single
open ``INSERT`` (``staging.AppendStream``) while the collector goes on. All-or-nothing still
holds: everything is in the collection's transaction and commits with it or not at all.

Idempotency: every series keeps ``last_ts``, the latest sample loaded. A sample at or before its
series' ``last_ts`` (as it was when the collection started) is already in the warehouse and is
skipped, so a rerun or an overlapping window loads each sample once. The limit: a window
*older* than what a series already holds (a backfill behind the watermark) is skipped too;
backfill a gap into a fresh series or re-load from the start. ``first_ts``/``last_ts`` come
from the collector's ``telemetry_extents`` (checked against the samples received), so the
merge never rescans what it just loaded; a collection without them (batches built by hand) gets
them from one pass over the time range it loaded.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from annex.errors import CollectionError
from collectors.telemetry.schema import SERIES as COLLECTED_SERIES
from warehouse import staging
from warehouse.load import SourceModel
from warehouse.staging import ARROW_NAME, AppendStream, Sink, execute_over_arrow

_HERE = Path(__file__).parent
log = logging.getLogger(__name__)

SERIES = COLLECTED_SERIES.set(
    COLLECTED_SERIES.get_field_index("mig_instance"), pa.field("mig_instance", pa.string())
)
"""The series columns in the types of ``core.gpu_telemetry_series`` (a batch may omit nullable
columns; ``series_index`` and ``metric`` are required): the collector's one declaration
(``collectors/telemetry/schema.py``) but for ``mig_instance``. The MIG GPU instance id
(dcgm-exporter's ``GPU_I_ID``) is a small integer, yielded as ``int32``; the warehouse column
is ``VARCHAR`` (migration 0004, frozen) and the series identity hashes that text, so the id is
cast to its decimal text on the way in."""


_SAMPLES = pa.schema(
    [("ts", pa.timestamp("us")), ("series_id", pa.uint32()), ("value", pa.float64())]
)

_IDENTITY_COLUMNS = (
    "getvariable('cluster'), gpu_uuid, metric, hostname, pod, namespace, container, "
    "mig_profile, mig_instance"
)
_SERIES_IDENTITY = (
    f"CASE WHEN link IS NULL THEN hash({_IDENTITY_COLUMNS}) "
    f"ELSE hash({_IDENTITY_COLUMNS}, link) END"
)
"""A per-link series' link is part of its identity (one NVLink metric per link of a GPU); every
other series keeps the key it had before links were told apart."""

_NEW_KEYS = f"""
CREATE OR REPLACE TEMP TABLE telemetry_new_keys AS
SELECT series_index, {_SERIES_IDENTITY} AS series_key
FROM {ARROW_NAME}
"""
"""The identity of the series received since the last mapping (Arrow, in the types of
``SERIES``: the same values hash as in ``core.gpu_telemetry_series``)."""

_TAKE_IDS = """
INSERT INTO telemetry_fresh_series
SELECT
    k.series_index,
    k.series_key,
    (b.base + row_number() OVER (ORDER BY k.series_index))::UINTEGER
FROM (
    SELECT min(series_index) AS series_index, series_key
    FROM telemetry_new_keys
    GROUP BY series_key
) AS k
ANTI JOIN (
    SELECT series_key FROM core.gpu_telemetry_series WHERE cluster = getvariable('cluster')
) AS known USING (series_key)
ANTI JOIN telemetry_fresh_series AS fresh USING (series_key)
CROSS JOIN (
    SELECT greatest(
        (SELECT max(series_id) FROM core.gpu_telemetry_series),
        (SELECT max(series_id) FROM telemetry_fresh_series),
        0
    ) AS base
) AS b
"""
"""Series neither the warehouse nor this collection knew get the next ids, in order of first
appearance (the narrow key table is grouped and numbered, never the wide series rows)."""

_MAP = """
INSERT INTO telemetry_series_map
SELECT k.series_index, coalesce(c.series_id, f.series_id), c.last_ts
FROM telemetry_new_keys AS k
LEFT JOIN core.gpu_telemetry_series AS c
    ON c.cluster = getvariable('cluster') AND c.series_key = k.series_key
LEFT JOIN telemetry_fresh_series AS f ON f.series_key = k.series_key
ORDER BY k.series_index
"""
"""Each new ``series_index`` -> its ``series_id`` and watermark (the series' ``last_ts`` before
this collection; NULL for a series first seen now)."""


_SAMPLES = pa.schema(
    [("ts", pa.timestamp("us")), ("series_id", pa.uint32()), ("value", pa.float64())]
)


class TelemetryAppender:
    """The sink of one telemetry collection: its ``telemetry_series`` and ``telemetry_samples``.

    A series batch is checked and kept (Arrow, no statement). A samples batch naming only
    mapped series is translated, filtered by the watermarks and streamed at once. A batch naming
    a series not mapped yet waits, with every samples batch after it (their order is kept),
    until ``SINK_FLUSH_ROWS`` rows or ``FLUSH_BYTES`` bytes wait or the collection ends; then
    the statement is ended, the series received so far are mapped in one go, and the waiting
    batches go into a new statement. ``close()`` also maps the series no sample named,
    registers the series for the merge (``annex_telemetry_series``), checks the collector's
    ``telemetry_extents`` against the samples received and publishes the counts the merge SQL
    reads.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.stream = AppendStream(
            con,
            "INSERT INTO core.gpu_telemetry_samples SELECT ts, series_id, value "
            "FROM annex_telemetry_samples",
            _SAMPLES,
            name="annex_telemetry_samples",
        )
        self.series: list[pa.RecordBatch] = []
        self.series_received = 0
        self.unmapped: list[pa.RecordBatch] = []
        self.series_ids = pa.array([], pa.uint32())
        self.watermarks = pa.array([], pa.timestamp("us"))
        self.any_watermark = False
        self.waiting: list[pa.RecordBatch] = []
        self.waiting_rows = 0
        self.waiting_bytes = 0
        self.waiting_highest = -1
        self.received = 0
        self.loaded = 0
        self.min_ts: object = None
        self.max_ts: object = None
        self._publish(extents_given=False)

    def __call__(self, table: str, batch: pa.RecordBatch) -> None:
        if table == "telemetry_series":
            self._add_series(batch)
        else:
            self._add_samples(batch)

    def pause(self) -> None:
        self.stream.close()

    def abort(self) -> None:
        self.stream.abort()

    def close(self) -> None:
        self._drain()
        self.stream.close()
        log.debug("%d samples appended in %d statement(s)", self.loaded, self.stream.statements)
        if self.unmapped:
            self._map_new_series()
        self.con.register(
            "annex_telemetry_series", pa.Table.from_batches(self.series, schema=SERIES)
        )
        self._publish(extents_given=self._check_extents())

    def _add_series(self, batch: pa.RecordBatch) -> None:
        batch = _conform_series(batch)
        if batch.num_rows == 0:
            return
        index = batch.column("series_index").cast(pa.int64())
        dense = index[0].as_py() == self.series_received and (
            pc.all(pc.equal(pc.subtract(index[1:], index[:-1]), 1), min_count=0).as_py()
        )
        if not dense:
            raise CollectionError(
                f"the telemetry collector yielded series_index {index[0].as_py()}.."
                f"{index[-1].as_py()} after {self.series_received} series (or not in order)",
                hint="a collector must number its series densely from 0, in the order it "
                "yields them",
            )
        self.series.append(batch)
        self.unmapped.append(batch)
        self.series_received += batch.num_rows

    def _add_samples(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        self.received += batch.num_rows
        if not self.waiting:
            try:
                ids = pc.take(self.series_ids, batch.column("series_index"))
            except pa.ArrowIndexError:  # it names a series not mapped yet
                pass
            else:
                self._append(batch, ids)
                return
        self.waiting.append(batch)
        self.waiting_rows += batch.num_rows
        self.waiting_bytes += batch.nbytes
        self.waiting_highest = max(
            self.waiting_highest, pc.max(batch.column("series_index")).as_py()
        )
        if (
            self.waiting_rows >= staging.SINK_FLUSH_ROWS
            or self.waiting_bytes >= staging.FLUSH_BYTES
        ):
            self._drain()

    def _drain(self) -> None:
        """Map the series the waiting batches need, then stream those batches."""
        if not self.waiting:
            return
        if self.waiting_highest >= len(self.series_ids):
            if self.waiting_highest >= self.series_received:
                raise CollectionError(
                    f"telemetry samples reference series_index {self.waiting_highest}, but the "
                    f"collector yielded {self.series_received} series before them",
                    hint="a collector must yield each series (dense indexes from 0) before its "
                    "samples",
                )
            self.stream.close()
            self._map_new_series()
        waiting, self.waiting = self.waiting, []
        self.waiting_rows, self.waiting_bytes, self.waiting_highest = 0, 0, -1
        for batch in waiting:
            try:
                ids = pc.take(self.series_ids, batch.column("series_index"))
            except pa.ArrowIndexError as exc:
                raise CollectionError(
                    f"telemetry samples reference a series_index out of range ({exc})",
                    hint="series_index values count from 0",
                ) from None
            self._append(batch, ids)

    def _append(self, batch: pa.RecordBatch, series_ids: pa.Array) -> None:
        """Stream one batch, its ``series_index`` translated to ``series_ids``."""
        ts = batch.column("ts")
        if ts.type != pa.timestamp("us"):
            ts = ts.cast(pa.timestamp("us"))
        value = batch.column("value")
        if value.type != pa.float64():
            value = value.cast(pa.float64())
        samples = pa.RecordBatch.from_arrays([ts, series_ids, value], schema=_SAMPLES)
        if self.any_watermark:
            watermark = pc.take(self.watermarks, batch.column("series_index"))
            samples = samples.filter(pc.or_kleene(pc.is_null(watermark), pc.greater(ts, watermark)))
            if samples.num_rows == 0:
                return
        bounds = pc.min_max(samples.column("ts")).as_py()
        self.min_ts = bounds["min"] if self.min_ts is None else min(self.min_ts, bounds["min"])
        self.max_ts = bounds["max"] if self.max_ts is None else max(self.max_ts, bounds["max"])
        self.stream.put(samples)
        self.loaded += samples.num_rows

    def _map_new_series(self) -> None:
        """Ids and watermarks for every series received since the last mapping."""
        started = time.perf_counter()
        known = len(self.series_ids)
        new = pa.Table.from_batches(self.unmapped, schema=SERIES)
        execute_over_arrow(self.con, _NEW_KEYS, new)  # (its Arrow data freed at once)
        for statement in (_TAKE_IDS, _MAP):
            self.con.execute(statement)
        mapped = self.con.sql(
            "SELECT series_id, watermark FROM telemetry_series_map "
            "WHERE series_index >= $known ORDER BY series_index",
            params={"known": known},
        ).to_arrow_table()
        if mapped.num_rows != new.num_rows:  # a key the warehouse holds twice
            raise CollectionError(
                f"{new.num_rows} new telemetry series mapped to {mapped.num_rows} warehouse series",
                hint="core.gpu_telemetry_series holds a series_key twice in this cluster",
            )
        self.unmapped = []
        self.series_ids = pa.concat_arrays(
            [self.series_ids, *mapped.column("series_id").cast(pa.uint32()).chunks]
        )
        watermarks = mapped.column("watermark").cast(pa.timestamp("us"))
        self.watermarks = pa.concat_arrays([self.watermarks, *watermarks.chunks])
        self.any_watermark = self.any_watermark or watermarks.null_count < len(watermarks)
        log.debug("mapping %d series took %.3f s", new.num_rows, time.perf_counter() - started)

    def _check_extents(self) -> bool:
        """Whether the collector yielded ``telemetry_extents``; if so they must cover exactly
        the samples received (a cheap check of the collector's arithmetic, not a rescan)."""
        rows, samples, highest, first, last = self.con.execute(
            "SELECT count(*), coalesce(sum(samples), 0), max(series_index), min(first_ts), "
            "max(last_ts) FROM stage_telemetry_extents"
        ).fetchone()
        if rows == 0:
            return False
        problem = None
        if samples != self.received:
            problem = f"count {samples:,} samples but {self.received:,} were received"
        elif highest >= len(self.series_ids):
            problem = f"name series_index {highest}, which no telemetry_series row has"
        elif self.min_ts is not None and not (first <= self.min_ts and self.max_ts <= last):
            problem = (
                f"span {first} to {last}, but samples from {self.min_ts} to {self.max_ts} "
                "were loaded"
            )
        if problem is not None:
            raise CollectionError(
                f"the telemetry collector's telemetry_extents {problem}",
                hint="a collector yielding telemetry_extents must cover every sample it yields "
                "(collectors.telemetry.collect.Extents); nothing of this collection was kept",
            )
        return True

    def _publish(self, *, extents_given: bool) -> None:
        # read by the merge SQL (SET VARIABLE is not transactional; every collection resets them)
        self.con.execute(
            "SET VARIABLE telemetry_series_received = ?::BIGINT", [self.series_received]
        )
        self.con.execute("SET VARIABLE telemetry_samples_received = ?::BIGINT", [self.received])
        self.con.execute("SET VARIABLE telemetry_samples_loaded = ?::BIGINT", [self.loaded])
        self.con.execute("SET VARIABLE telemetry_min_ts = ?::TIMESTAMP", [self.min_ts])
        self.con.execute("SET VARIABLE telemetry_max_ts = ?::TIMESTAMP", [self.max_ts])
        self.con.execute("SET VARIABLE telemetry_extents_given = ?::BOOLEAN", [extents_given])


def _conform_series(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` in the columns and types of ``SERIES``, or a ``CollectionError``."""
    extra = sorted(set(batch.schema.names) - set(SERIES.names))
    if extra:
        raise CollectionError(
            f"telemetry_series batch has columns the warehouse does not know: {', '.join(extra)}",
            hint="the collector's Arrow schema and the telemetry model disagree",
        )
    columns = []
    for field in SERIES:
        if field.name not in batch.schema.names:
            columns.append(pa.nulls(batch.num_rows, field.type))
            continue
        column = batch.column(field.name)
        if column.type != field.type:
            try:
                column = column.cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise CollectionError(
                    f"telemetry_series column {field.name} ({column.type}) does not fit "
                    f"{field.type}: {exc}",
                    hint="the collector's Arrow schema and the telemetry model disagree",
                ) from None
        columns.append(column)
    conformed = pa.RecordBatch.from_arrays(columns, schema=SERIES)
    for required in ("series_index", "metric"):
        if conformed.column(required).null_count:
            raise CollectionError(
                f"telemetry_series rows without {required}",
                hint="the collector must fill series_index and metric on every series",
            )
    return conformed


def _telemetry_sink(con: duckdb.DuckDBPyConnection) -> Sink:
    return TelemetryAppender(con)


TELEMETRY_MODEL = SourceModel(
    source="telemetry",
    staging_sql=(_HERE / "telemetry_staging.sql").read_text(encoding="utf-8"),
    merge_sql=(_HERE / "telemetry_merge.sql").read_text(encoding="utf-8"),
    appends={"telemetry_series": _telemetry_sink, "telemetry_samples": _telemetry_sink},
)

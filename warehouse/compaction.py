"""``annex warehouse compact``: expired raw rows move to Hive-partitioned Parquet, one atomic
step per partition, and stay readable in ``annex sql`` as ``archive.<table>``.

Why: 60,000 GPUs sampled once a minute are 86.4 million rows a day per DCGM field. The figures
annex reports come from the hourly and daily rollups, the versions and the intervals, which are
kept forever; the raw rows behind them are needed at full resolution only for a while
(``[retention]``, ``annex.settings.RetentionSettings``). Past that they leave DuckDB for Parquet
files in the export's layout (``warehouse.export``: ``<schema>/<table>/[cluster=<name>/]
day=<YYYY-MM-DD>/``), which DuckDB, Spark and Trino read as they are.

What is compacted (``compactable_tables``), by the day of a time column that never changes for
a row:

=====================================  ===============  =========================================
table                                  family           day from
=====================================  ===============  =========================================
core.gpu_telemetry_samples             telemetry        ``ts`` (partitioned by day only: a
                                                        sample has no cluster column)
raw.kubernetes_* (every one)           kubernetes       ``collected_at``
audit.kubernetes_requests              audit            ``requested_at``
audit.telemetry_targets                audit            ``started_at``
core.lineage_events (``payload``)      lineage          ``event_time``
core.attestation_records (``claims``)  attestation      ``received_at``
archived attestation submission files  attestation      ``received_at`` of the submission
=====================================  ===============  =========================================

Whole rows move for the first four; for ``core.lineage_events`` and ``core.attestation_records``
only the named column does: the row (ids, times, hashes, verdicts) stays, the column is set to
NULL, and the file holds it beside the row's key (``archive.<table>`` joins it back; the facet
history ``core.lineage_facets`` has ``archive.lineage_facets``, the same view over
``archive.lineage_events``). Nothing derived reads those columns again (the lineage merge parses
only the batch's staged payloads and keeps each current facet in ``core.lineage_facet_heads``;
the attestation merge judges staged tokens, coverage reads verdicts and times); their horizon is
still held back to the first row a refresh has not taken in (``NOT_FINAL``). The submission
files the attestation collector archived (``archive_uri``; ``raw_token_uri`` points into them)
move into Parquet files of their bytes (``archive.attestation_submission_files``) and leave the
spool's archive folder once committed. Never compacted, whatever ``audit_days`` says: the
records in ``NEVER_COMPACTED`` (collections, rejected records, document versions, handovers).

A day is compacted when it lies wholly before the horizon: the data cut-off (the end of the
latest successful collection, so a warehouse nobody collects into ages no further) less the
family's retention. Never before its rollups are final: the telemetry horizon is held back to
the first day of any telemetry load not rolled up yet, and ``refresh_gpu_hourly`` never
recomputes the telemetry of an hour of a compacted day (``audit.compactions``), so a late load
can never rebuild an hour from samples that are no longer there.

One atomic step per partition, under the writer lock (given back between partitions every
``LOCK_SLICE_SECONDS``, so collections go on during a long first compaction): in one DuckDB
transaction the partition's rows are written to ``data_<n>.parquet`` (its final name;
fsync'ed, SHA-256 taken), deleted, the ledger row added to ``audit.compactions`` and the
table's ``archive`` view re-created over every file the ledger names; then COMMIT. A crash
before the commit leaves the old state (the rows in DuckDB, the ledger without the file: a
stray file nobody reads, overwritten by the next compact); after it, the new one. ``n`` counts
the partition's earlier files, so rows that arrive late for a day already compacted go to a
second file, never over the first. Rerunning with nothing expired changes nothing.

Readers trust a Parquet file only when the ledger names it: ``archive.<table>`` is the live
rows ``UNION ALL BY NAME`` the ledger's files (absolute paths, so the published copy reads them
too; moving the archive folder means re-creating the views: compact again). Files keep the
table's own types (``UINTEGER`` series ids, ``UBIGINT`` hashes), so the archive view returns
exactly the rows the table had.

A ``raw.kubernetes_*`` row is the object as listed when it changed; a collection compares with
the latest such row. An object unchanged for longer than the retention therefore gets one new
raw row at the next collection (its state then): ``core`` is unaffected.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import duckdb
import pyarrow as pa

from annex.errors import WarehouseError
from annex.settings import RetentionSettings
from warehouse.connection import Warehouse
from warehouse.export import (
    HIVE_TYPES,
    TablePlan,
    copy_parquet,
    count_rows,
    data_cutoff,
    partition_filter,
    partition_path,
    sort_order,
    sql_ident,
    sql_literal,
)
from warehouse.migrate import utc_now
from warehouse.transaction import atomic

ARCHIVE_SCHEMA = "archive"
LEDGER = "audit.compactions"

FIXED_TABLES: tuple[tuple[str, str, str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("telemetry", "core", "gpu_telemetry_samples", "ts", (), ()),
    ("audit", "audit", "kubernetes_requests", "requested_at", (), ()),
    ("audit", "audit", "telemetry_targets", "started_at", (), ()),
    ("lineage", "core", "lineage_events", "event_time", ("payload",), ("event_id",)),
    (
        "attestation",
        "core",
        "attestation_records",
        "received_at",
        ("claims",),
        ("cluster", "record_id"),
    ),
)
"""Compactable tables besides every ``raw.kubernetes_*``: (family, schema, table, time column,
moved columns, key). Moved columns empty: whole rows move; else only those columns do, the row
(its ids, times, hashes and verdicts) stays and the file holds the key beside them."""

NEVER_COMPACTED = frozenset(
    {
        "audit.collections",
        "audit.rejected",
        "audit.report_versions",
        "audit.documents",
        "audit.document_handovers",
        "audit.compactions",
    }
)
"""Records kept whole in DuckDB whatever ``[retention]`` says: every collection, every rejected
record with its reason, every rendered document version and handover (kept for the records
retention, ``keep_until``), and the ledger itself. ``audit_days`` is for the request logs only;
``compactable_tables`` refuses any table named here."""

KUBERNETES_TIME = "collected_at"

LOCK_SLICE_SECONDS = 60.0
"""Compaction gives the writer lock back after this long (between two partitions), so a
collection waiting for it starts well within ``warehouse.lock_timeout_seconds``."""
LOCK_GAP_SECONDS = 0.5
"""How long it waits before taking the lock again: longer than a waiting writer's poll
(``warehouse.lock.POLL_SECONDS``), so that writer gets it."""

Step = Callable[[str], None]
"""Called with ``"written"`` (the file is on disk, nothing committed) and ``"committing"``
(rows deleted and ledger row added, not committed): the seams the crash tests kill at."""


@dataclass(frozen=True)
class Compactable:
    """One table compaction may move rows of."""

    family: str
    """The ``[retention]`` family: ``<family>_days`` is its retention."""
    schema: str
    table: str
    time_column: str
    columns: tuple[tuple[str, str], ...]
    moved: tuple[str, ...] = ()
    """Columns moved out of rows that stay (set to NULL once in Parquet); empty: whole rows."""
    key: tuple[str, ...] = ()
    """What identifies a row: written beside the moved columns, the archive view joins on it."""

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def unmoved(self) -> str:
        """SQL: a row still holds what compaction moves (for whole rows: every row)."""
        return " OR ".join(f"{sql_ident(c)} IS NOT NULL" for c in self.moved) or "true"

    @property
    def written(self) -> dict[str, str]:
        """The columns a partition's file holds (the partition columns are its folders)."""
        wanted = (*self.key, self.time_column, *self.moved) if self.moved else None
        return {
            c: t
            for c, t in self.columns
            if c not in self.plan.partition_columns and (wanted is None or c in wanted)
        }

    @property
    def has_cluster(self) -> bool:
        return any(column == "cluster" for column, _ in self.columns)

    @property
    def plan(self) -> TablePlan:
        """The export's plan of the table: its partition filter, path and sort order."""
        return TablePlan(
            self.schema, self.table, "table", self.time_column, self.has_cluster, (), self.columns
        )


@dataclass(frozen=True)
class Partition:
    """One (cluster, day) of a table whose rows are past the retention."""

    table: str
    family: str
    cluster: str | None
    day: date
    rows: int
    bytes: int
    """In DuckDB (an estimate: the table's blocks times the partition's share of its rows) for
    a dry run; of the Parquet file once compacted."""
    file: Path | None = None


@dataclass(frozen=True)
class CompactionResult:
    """What ``compact_warehouse`` moved (or, for a dry run, would move)."""

    dry_run: bool
    data_cutoff: datetime | None
    horizons: dict[str, date]
    """Per table: rows of days before this one are (or would be) compacted."""
    partitions: tuple[Partition, ...]

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.partitions)

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.partitions)


def compact_warehouse(
    wh: Warehouse,
    retention: RetentionSettings,
    *,
    dry_run: bool = False,
    now: datetime | None = None,
    on_step: Step | None = None,
) -> CompactionResult:
    """Move every partition past its retention to ``retention.resolved_dir`` (see the module
    docstring); ``dry_run`` only lists them. ``now`` replaces the data cut-off (tests, a
    backfill). Publishes the analysts' copy when anything moved."""
    root = retention.resolved_dir(wh.settings)
    with wh.writer() as con:
        cutoff = now if now is not None else data_cutoff(con)
        tables = compactable_tables(con)
        horizons = {t.name: horizon(con, t, retention, cutoff) for t in tables}
        planned = [
            p
            for t in tables
            if horizons[t.name] is not None
            for p in expired_partitions(con, t, horizons[t.name], estimate=dry_run)  # type: ignore[arg-type]
        ]
        evidence_horizon = horizons.get("core.attestation_records")
        if evidence_horizon is not None:
            horizons[EVIDENCE_TABLE] = evidence_horizon
            planned += expired_evidence(con, evidence_horizon)
    done: list[Partition] = []
    pending = [] if dry_run else list(planned)
    by_name = {t.name: t for t in tables}
    while pending:
        # the writer lock for at most LOCK_SLICE_SECONDS at a time: a first compaction of a
        # long history must not keep a collection waiting past its lock timeout
        with wh.writer() as con:
            started = time.monotonic()
            while pending:  # at least one partition a session, however short the slice
                partition = pending.pop(0)
                if partition.table == EVIDENCE_TABLE:
                    moved = _compact_evidence(con, partition, root, on_step)
                else:
                    moved = _compact_partition(
                        con, by_name[partition.table], partition, root, on_step
                    )
                if moved is not None:
                    done.append(moved)
                if time.monotonic() - started >= LOCK_SLICE_SECONDS:
                    break
        if pending:
            time.sleep(LOCK_GAP_SECONDS)
    if done:
        wh.publish()
    kept = {name: day for name, day in horizons.items() if day is not None}
    return CompactionResult(dry_run, cutoff, kept, tuple(planned if dry_run else done))


def compactable_tables(con: duckdb.DuckDBPyConnection) -> list[Compactable]:
    """The tables compaction moves rows of, as this warehouse has them (a ``raw.kubernetes_*``
    table a later migration adds is compacted too)."""
    columns: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for schema, table, column, data_type in con.execute(
        "SELECT schema_name, table_name, column_name, data_type FROM duckdb_columns() "
        "WHERE schema_name IN ('raw', 'core', 'audit') ORDER BY schema_name, table_name, "
        "column_index"
    ).fetchall():
        columns.setdefault((schema, table), []).append((column, data_type))
    wanted = [fixed for fixed in FIXED_TABLES if (fixed[1], fixed[2]) in columns]
    wanted += [
        ("kubernetes", schema, table, KUBERNETES_TIME, (), ())
        for schema, table in sorted(columns)
        if schema == "raw"
        and table.startswith("kubernetes_")
        and (KUBERNETES_TIME, "TIMESTAMP") in columns[(schema, table)]
    ]
    tables = [
        Compactable(family, schema, table, time, tuple(columns[(schema, table)]), moved, key)
        for family, schema, table, time, moved, key in sorted(wanted, key=lambda w: (w[1], w[2]))
    ]
    kept = sorted(NEVER_COMPACTED & {t.name for t in tables})
    if kept:  # a programming error, never a setting: these are records, not logs
        raise WarehouseError(
            f"refusing to compact {', '.join(kept)}: records kept whole (NEVER_COMPACTED)",
            hint="report this as a bug in annex",
        )
    return tables


def horizon(
    con: duckdb.DuckDBPyConnection,
    table: Compactable,
    retention: RetentionSettings,
    cutoff: datetime | None,
) -> date | None:
    """The first day of ``table`` kept in DuckDB: the cut-off less the retention, held back
    for telemetry to the first day of a load not rolled up yet. None: nothing expires."""
    if cutoff is None:
        return None
    first_kept = (cutoff - timedelta(days=retention.days(table.family))).date()
    pending = NOT_FINAL.get(table.family)
    if pending is not None:
        row = con.execute(pending).fetchone()
        if row and row[0] is not None:
            first_kept = min(first_kept, row[0].date())
    return first_kept


NOT_FINAL = {
    "telemetry": "SELECT min(min_ts) FROM audit.telemetry_loads WHERE NOT rolled_up",
    # lineage: events of collections refresh_lineage has not taken in yet
    "lineage": (
        "SELECT min(event_time) FROM core.lineage_events WHERE collection_id NOT IN "
        "(SELECT collection_id FROM audit.lineage_refreshed_collections)"
    ),
    # attestation: records of collections after the cluster's latest coverage refresh
    "attestation": (
        "SELECT min(r.received_at) FROM core.attestation_records AS r "
        "JOIN audit.collections AS c ON c.collection_id = r.collection_id "
        "WHERE c.started_at > coalesce((SELECT max(a.attestation_horizon) "
        "FROM audit.attestation_refreshes AS a WHERE a.cluster = r.cluster), "
        "TIMESTAMP '-infinity')"
    ),
}
"""Per family, the earliest time of rows whose derived tables are not final yet (their rollup,
lineage refresh or coverage refresh has not run since they were loaded): the horizon is held
back to its day, so nothing a refresh may still read is moved. The refreshes read none of the
moved columns (the lineage merge parses only the batch's staged payloads and keeps each
current facet in core.lineage_facet_heads; the attestation merge judges staged tokens, and
coverage reads verdicts and times, never claims); the hold is there so that stays true if a
refresh ever re-reads them."""


def expired_partitions(
    con: duckdb.DuckDBPyConnection, table: Compactable, first_kept: date, *, estimate: bool
) -> list[Partition]:
    """Every (cluster, day) of ``table`` before ``first_kept`` with its rows, oldest first."""
    time = sql_ident(table.time_column)
    keys, order = ("cluster, ", "day, cluster") if table.has_cluster else ("", "day")
    rows = con.execute(
        f"SELECT {keys}CAST({time} AS DATE) AS day, count(*) FROM {table.plan.source} "
        f"WHERE {time} < CAST(? AS TIMESTAMP) AND ({table.unmoved}) "
        f"GROUP BY ALL ORDER BY {order}",
        [first_kept],
    ).fetchall()
    per_row = _bytes_per_row(con, table) if estimate and rows else 0.0
    partitions = []
    for row in rows:
        cluster = row[0] if table.has_cluster else None
        day, count = row[-2], int(row[-1])
        partitions.append(
            Partition(table.name, table.family, cluster, day, count, round(count * per_row))
        )
    return partitions


def archive_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """(Re)create ``archive.<table>`` for every compactable table: its live rows and the rows
    of every Parquet file the ledger names. Joins the caller's transaction, if any."""
    with atomic(con):
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {ARCHIVE_SCHEMA}")
        names = []
        for table in compactable_tables(con):
            _create_view(con, table)
            names.append(f"{ARCHIVE_SCHEMA}.{table.table}")
        names += _derived_views(con)
        _create_evidence_view(con)
        names.append(f"{ARCHIVE_SCHEMA}.{EVIDENCE_VIEW}")
    return names


def _compact_partition(
    con: duckdb.DuckDBPyConnection,
    table: Compactable,
    partition: Partition,
    root: Path,
    on_step: Step | None,
) -> Partition | None:
    """Move one partition (see the module docstring); None when its rows are gone already."""
    plan = table.plan
    values = (partition.cluster, partition.day) if table.has_cluster else (partition.day,)
    where = f"{partition_filter(plan, values)} AND ({table.unmoved})"
    written_columns = table.written
    select = ", ".join(sql_ident(c) for c in written_columns)
    try:
        with atomic(con):
            earlier = con.execute(
                f"SELECT count(*) FROM {LEDGER} WHERE table_name = ? "
                "AND cluster IS NOT DISTINCT FROM ? AND day = ?",
                [table.name, partition.cluster, partition.day],
            ).fetchone()
            if not count_rows(con, f"SELECT count(*) FROM {plan.source} WHERE {where}"):
                return None
            folder = root / table.schema / table.table / partition_path(values)
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"data_{earlier[0] if earlier else 0}.parquet"
            query = f"SELECT {select} FROM {plan.source} WHERE {where}"
            copy_parquet(con, query, sort_order(plan, written_columns), path)
            digest, size = _sync_and_hash(path)
            if on_step:
                on_step("written")
            if table.moved:  # the rows stay: only the moved columns leave
                cleared = ", ".join(f"{sql_ident(c)} = NULL" for c in table.moved)
                deleted = con.execute(
                    f"UPDATE {plan.source} SET {cleared} WHERE {where}"
                ).fetchone()
            else:
                deleted = con.execute(f"DELETE FROM {plan.source} WHERE {where}").fetchone()
            in_file = con.execute(
                f"SELECT count(*) FROM read_parquet('{sql_literal(str(path))}')"
            ).fetchone()
            if not deleted or not in_file or deleted[0] != in_file[0]:
                raise WarehouseError(
                    f"compacting {table.name} {partition.cluster or ''} {partition.day}: "
                    f"{in_file} rows written but {deleted} deleted; nothing was changed",
                    hint="rerun `annex warehouse compact`",
                )
            con.execute(
                f"INSERT INTO {LEDGER} (table_name, family, cluster, day, rows, bytes, file, "
                "sha256, compacted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    table.name,
                    table.family,
                    partition.cluster,
                    partition.day,
                    int(deleted[0]),
                    size,
                    str(path),
                    digest,
                    utc_now(),
                ],
            )
            _create_view(con, table)
            if on_step:
                on_step("committing")
    except OSError as exc:
        raise WarehouseError(
            f"cannot write the compacted partition of {table.name} under {root}: {exc}",
            hint="check free space and permissions there, then rerun (nothing was deleted)",
        ) from exc
    except duckdb.Error as exc:
        raise WarehouseError(
            f"compacting {table.name} failed and was rolled back: {exc}",
            hint="rerun `annex warehouse compact`; partitions already compacted stay so",
        ) from exc
    return Partition(
        table.name, table.family, partition.cluster, partition.day, int(deleted[0]), size, path
    )


def _create_view(con: duckdb.DuckDBPyConnection, table: Compactable) -> None:
    files = [
        row[0]
        for row in con.execute(
            f"SELECT file FROM {LEDGER} WHERE table_name = ? ORDER BY day, cluster, file",
            [table.name],
        ).fetchall()
    ]
    view = f"{ARCHIVE_SCHEMA}.{sql_ident(table.table)}"
    sql = f"SELECT * FROM {table.plan.source}"
    if files:
        listed = ", ".join(f"'{sql_literal(f)}'" for f in files)
        types = ", ".join(f"'{c}': '{HIVE_TYPES[c]}'" for c in table.plan.partition_columns)
        parquet = f"read_parquet([{listed}], hive_partitioning = true, hive_types = {{{types}}})"
        if table.moved:
            kinds = dict(table.columns)
            restored = ", ".join(
                f"coalesce(t.{sql_ident(c)}, CAST(a.{sql_ident(c)} AS {kinds[c]})) "
                f"AS {sql_ident(c)}"
                for c in table.moved
            )
            # the partition's day too: a query on a few days then opens only their files
            # (DuckDB pushes the join's filter down to the hive partitions)
            on = [f"a.{sql_ident(c)} = t.{sql_ident(c)}" for c in table.key]
            on.append(f"a.day = CAST(t.{sql_ident(table.time_column)} AS DATE)")
            joined = " AND ".join(on)
            picked = ", ".join(sql_ident(c) for c in (*table.key, "day", *table.moved))
            sql = (
                f"SELECT t.* REPLACE ({restored}) FROM {table.plan.source} AS t\n"
                f"LEFT JOIN (SELECT {picked} FROM {parquet}) AS a ON {joined}"
            )
        else:
            sql += f"\nUNION ALL BY NAME\nSELECT * EXCLUDE (day) FROM {parquet}"
    con.execute(f"CREATE OR REPLACE VIEW {view} AS {sql}")
    if table.moved:
        moved = ", ".join(table.moved)
        comment = (
            f"{table.name} whole: every row, with {moved} read back from Parquet where "
            f"compaction moved it past [retention] {table.family}_days (the files "
            f"audit.compactions names, partitioned by "
            f"{' and '.join(table.plan.partition_columns)} of {table.time_column}; the row "
            f"stays in {table.name} with {moved} NULL). Same columns and rows as {table.name}."
        )
    else:
        comment = (
            f"{table.name} whole: its rows still in DuckDB and those compacted to Parquet past "
            f"[retention] {table.family}_days (the files audit.compactions names, partitioned "
            f"by {' and '.join(table.plan.partition_columns)} of {table.time_column}). Same "
            f"columns as {table.name}; filter on {table.time_column} to read only the files "
            "needed."
        )
    con.execute(f"COMMENT ON VIEW {view} IS '{sql_literal(comment)}'")


DERIVED_VIEWS = (("core", "lineage_facets", "core.lineage_events", "lineage_events"),)
"""Views over a table whose moved columns they read (schema, view, the table it reads, its
archive view): ``archive.<view>`` is the same view over the archive view, so its history reaches
the compacted rows too (the facet history parses the events' payloads)."""


def _derived_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """(Re)create ``archive.<view>`` for every ``DERIVED_VIEWS`` entry this warehouse has: its
    definition as DuckDB holds it, reading the archive view instead of the table."""
    names = []
    for schema, name, source, archived in DERIVED_VIEWS:
        row = con.execute(
            "SELECT sql, comment FROM duckdb_views() WHERE schema_name = ? AND view_name = ?",
            [schema, name],
        ).fetchone()
        if row is None:
            continue
        sql, comment = row
        body = sql[sql.upper().index(" AS ") + 4 :].rstrip().rstrip(";")
        if body.count(f"FROM {source}") != 1:
            raise WarehouseError(
                f"{schema}.{name} no longer reads {source} once: archive.{name} cannot follow",
                hint="update warehouse.compaction.DERIVED_VIEWS with the view",
            )
        body = body.replace(f"FROM {source}", f"FROM {ARCHIVE_SCHEMA}.{archived}")
        view = f"{ARCHIVE_SCHEMA}.{sql_ident(name)}"
        con.execute(f"CREATE OR REPLACE VIEW {view} AS {body}")
        note = (
            f"{schema}.{name} over archive.{archived}: the same rows, including those of "
            f"events whose payloads compaction moved to Parquet. {comment or ''}"
        )
        con.execute(f"COMMENT ON VIEW {view} IS '{sql_literal(note.strip())}'")
        names.append(f"{ARCHIVE_SCHEMA}.{name}")
    return names


EVIDENCE_TABLE = "core.attestation_submissions"
"""The ledger's ``table_name`` for archived submission files moved to Parquet."""
EVIDENCE_VIEW = "attestation_submission_files"
EVIDENCE_FILE_BYTES = 256 << 20
"""A Parquet file of archived submissions holds about this much at most: a day of a large
fleet's submissions is several files (``data_<n>``), each its own atomic step."""
EVIDENCE_COLUMNS = {
    "submission_id": "VARCHAR",
    "archive_uri": "VARCHAR",
    "file_sha256": "VARCHAR",
    "body": "BLOB",
}


def expired_evidence(con: duckdb.DuckDBPyConnection, first_kept: date) -> list[Partition]:
    """Every (cluster, day) of submissions received before ``first_kept`` whose archived file
    (``archive_uri``: the tokens exactly as received, ``raw_token_uri`` points into it) is
    still on disk and not in Parquet yet: rows are the files, bytes their size."""
    partitions: dict[tuple[str, date], list[int]] = {}
    for file in _evidence_files(con, "received_at < CAST(? AS TIMESTAMP)", [first_kept]):
        partitions.setdefault((file.cluster, file.day), []).append(file.path.stat().st_size)
    return [
        Partition(EVIDENCE_TABLE, "attestation", cluster, day, len(sizes), sum(sizes))
        for (cluster, day), sizes in sorted(partitions.items(), key=lambda p: (p[0][1], p[0][0]))
    ]


@dataclass(frozen=True)
class _EvidenceFile:
    cluster: str
    day: date
    submission_id: str
    archive_uri: str
    path: Path


def _evidence_files(
    con: duckdb.DuckDBPyConnection, where: str, params: list
) -> list[_EvidenceFile]:
    """The submissions matching ``where`` whose archived file is still on disk and whose URI
    is in no ledger's file yet. A file never archived here (another machine's spool) or gone
    is skipped."""
    found = []
    for cluster, day, submission_id, uri in con.execute(
        f"SELECT cluster, day, min(submission_id), archive_uri FROM {EVIDENCE_TABLE} "
        f"WHERE {where} AND archive_uri LIKE 'file:%' AND archive_uri NOT IN "
        f"(SELECT archive_uri FROM {ARCHIVE_SCHEMA}.{EVIDENCE_VIEW}) "
        "GROUP BY cluster, day, archive_uri ORDER BY day, cluster, archive_uri",
        params,
    ).fetchall():
        path = Path(url2pathname(urlparse(uri).path))
        if path.is_file():
            found.append(_EvidenceFile(cluster, day, submission_id, uri, path))
    return found


def _compact_evidence(
    con: duckdb.DuckDBPyConnection, partition: Partition, root: Path, on_step: Step | None
) -> Partition | None:
    """Move one (cluster, day)'s archived submission files into Parquet (submission_id,
    archive_uri, file_sha256, body), at most ``EVIDENCE_FILE_BYTES`` a file, each file one
    transaction (file written and fsync'ed, ledger row, view), then remove the originals.
    A crash before a commit leaves the originals and a stray file the next run overwrites;
    after it, before the removal, the originals stay too: a second copy, never a loss."""
    files = _evidence_files(con, "cluster = ? AND day = ?", [partition.cluster, partition.day])
    moved, size, last = 0, 0, None
    while files:
        chunk = [files.pop(0)]
        total = chunk[0].path.stat().st_size
        while files and total + files[0].path.stat().st_size <= EVIDENCE_FILE_BYTES:
            chunk.append(files.pop(0))
            total += chunk[-1].path.stat().st_size
        bodies = [file.path.read_bytes() for file in chunk]
        rows = pa.table(
            {
                "submission_id": [file.submission_id for file in chunk],
                "archive_uri": [file.archive_uri for file in chunk],
                "file_sha256": [hashlib.sha256(body).hexdigest() for body in bodies],
                "body": pa.array(bodies, pa.binary()),
            }
        )
        last, written = _write_evidence(con, partition, rows, root, on_step)
        size += written
        moved += len(chunk)
        for file in chunk:  # committed: the Parquet file is the archive now
            file.path.unlink(missing_ok=True)
    if not moved:
        return None
    return replace(partition, rows=moved, bytes=size, file=last)


def _write_evidence(
    con: duckdb.DuckDBPyConnection,
    partition: Partition,
    rows: pa.Table,
    root: Path,
    on_step: Step | None,
) -> tuple[Path, int]:
    """One Parquet file of archived submissions, its ledger row and the view: one transaction."""
    try:
        with atomic(con):
            earlier = con.execute(
                f"SELECT count(*) FROM {LEDGER} WHERE table_name = ? AND cluster = ? AND day = ?",
                [EVIDENCE_TABLE, partition.cluster, partition.day],
            ).fetchall()[0]  # (fetched to the end: register() wants no open result)
            values = (partition.cluster, partition.day)
            folder = root / "core" / "attestation_submissions" / partition_path(values)
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"data_{earlier[0] if earlier else 0}.parquet"
            con.register("compaction_evidence", rows)
            try:
                copy_parquet(con, "SELECT * FROM compaction_evidence", "archive_uri", path)
            finally:
                con.unregister("compaction_evidence")
            digest, size = _sync_and_hash(path)
            if on_step:
                on_step("written")
            con.execute(
                f"INSERT INTO {LEDGER} (table_name, family, cluster, day, rows, bytes, file, "
                "sha256, compacted_at) VALUES (?, 'attestation', ?, ?, ?, ?, ?, ?, ?)",
                [
                    EVIDENCE_TABLE,
                    partition.cluster,
                    partition.day,
                    rows.num_rows,
                    size,
                    str(path),
                    digest,
                    utc_now(),
                ],
            )
            _create_evidence_view(con)
            if on_step:
                on_step("committing")
    except OSError as exc:
        raise WarehouseError(
            f"cannot write the archived submissions of {partition.cluster} {partition.day} "
            f"under {root}: {exc}",
            hint="check free space and permissions there, then rerun (nothing was removed)",
        ) from exc
    except duckdb.Error as exc:
        raise WarehouseError(
            f"compacting archived submissions failed and was rolled back: {exc}",
            hint="rerun `annex warehouse compact`; partitions already compacted stay so",
        ) from exc
    return path, size


def _create_evidence_view(con: duckdb.DuckDBPyConnection) -> None:
    """``archive.attestation_submission_files``: every archived submission file moved to
    Parquet, its bytes exactly as archived (the ledger's files; empty before the first)."""
    files = [
        row[0]
        for row in con.execute(
            f"SELECT file FROM {LEDGER} WHERE table_name = ? ORDER BY day, cluster, file",
            [EVIDENCE_TABLE],
        ).fetchall()
    ]
    if files:
        listed = ", ".join(f"'{sql_literal(f)}'" for f in files)
        sql = (
            "SELECT cluster, day, submission_id, archive_uri, file_sha256, body "
            f"FROM read_parquet([{listed}], hive_partitioning = true, "
            "hive_types = {'cluster': 'VARCHAR', 'day': 'DATE'})"
        )
    else:
        typed = ", ".join(f"NULL::{t} AS {c}" for c, t in EVIDENCE_COLUMNS.items())
        sql = f"SELECT NULL::VARCHAR AS cluster, NULL::DATE AS day, {typed} WHERE false"
    view = f"{ARCHIVE_SCHEMA}.{EVIDENCE_VIEW}"
    con.execute(f"CREATE OR REPLACE VIEW {view} AS {sql}")
    comment = (
        "The attestation submissions annex archived (core.attestation_submissions.archive_uri: "
        "the tokens exactly as received; core.attestation_records.raw_token_uri is "
        "<archive_uri>#<key>) whose files compaction moved to Parquet past [retention] "
        "attestation_days: body holds the file's bytes, file_sha256 their SHA-256. The files "
        "are gone from the spool's archive folder; look a token up here by archive_uri."
    )
    con.execute(f"COMMENT ON VIEW {view} IS '{sql_literal(comment)}'")


def _sync_and_hash(path: Path) -> tuple[str, int]:
    """Flush the file and its folder to disk (a committed ledger row never names a file the
    disk lost) and return its SHA-256 and size."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
        os.fsync(handle.fileno())
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
    return digest.hexdigest(), path.stat().st_size


def _bytes_per_row(con: duckdb.DuckDBPyConnection, table: Compactable) -> float:
    """The table's bytes in DuckDB per row (its blocks, for a dry run's estimate)."""
    columns = (
        " AND column_name IN ({})".format(", ".join(f"'{c}'" for c in table.moved))
        if table.moved
        else ""
    )
    row = con.execute(
        "SELECT count(DISTINCT block_id) * (SELECT block_size FROM pragma_database_size()), "
        f"(SELECT count(*) FROM {table.plan.source}) "
        f"FROM pragma_storage_info('{sql_literal(table.name)}') WHERE block_id >= 0{columns}"
    ).fetchone()
    if not row or not row[1]:
        return 0.0
    return float(row[0] or 0) / float(row[1])

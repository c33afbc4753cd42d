"""``annex export``: every ``core`` and ``marts`` table as Hive-partitioned Parquet.

Why: one DuckDB file does not follow pods or scale past one machine (DESIGN.md §2). Parquet
partitioned by cluster and day is what Spark, Trino, DuckDB and Athena read from object
storage without annex, and per-day partitions make the export incremental.

Layout::

    DEST/<schema>/<table>/cluster=<name>/day=<YYYY-MM-DD>/data_0.parquet
    DEST/_annex_export.json          manifest, replaced atomically at the end of each export

Read it back with ``read_parquet('DEST/core/nodes/**/*.parquet', hive_partitioning=true,
hive_types={'cluster': 'VARCHAR', 'day': 'DATE'})`` (naming the types keeps a cluster called
``2024`` a string). Sync the folder to object storage afterwards (``aws s3 sync --delete``,
``rclone sync``, ``gsutil rsync -d``): annex writes to a local or mounted folder only, because
rewriting a partition means deleting its old files first, and plain object stores cannot do that
safely from inside DuckDB.

Each table's ``day``, chosen so that a row never moves between partitions (a moved row would
leave a stale copy behind in the partition an incremental export does not rewrite):

==========================  ======================  ===========================================
table                       day                     partition also rewritten when
==========================  ======================  ===========================================
core.nodes                  valid_from (version)    the version closes (valid_to)
core.node_gpu_resources     valid_from (version)    the version closes (valid_to)
core.gpu_allocations        valid_from (interval)   the interval closes (valid_to)
core.pods                   first_seen_at           changed_at or vanished_at
core.jobs                   first_seen_at           changed_at or vanished_at
core.events                 first_seen_at           changed_at or vanished_at
core.priority_classes       first_seen_at           changed_at or vanished_at
marts.* (current state)     snapshot: the day of    (always written for that day: each day
                            the cluster's latest    keeps its own snapshot, earlier snapshots
                            successful collection   are kept as history)
==========================  ======================  ===========================================

``first_seen_at`` rather than ``changed_at`` for the current-state tables because
``changed_at`` moves when a pod changes. Tables added later get their day by the same rules
(a DATE column ``day`` is used as is; then ``valid_from``; then ``first_seen_at``; else a
snapshot), see ``plan_table``.

Incremental and idempotent: ``since=DAY`` rewrites the partitions with ``day >= DAY`` plus the
older partitions holding a row that changed on or after DAY; everything else is untouched.
Without ``since`` every partition is rewritten (except older snapshots of the marts). Each
table is written to a hidden staging folder first and then moved partition by partition, so a
failed export leaves the previous files readable; rerunning gives identical content. Exports to
one DEST must not run concurrently (the Dagster pool or one cron entry keeps them apart).

It reads the published copy (``Warehouse.reader()``), so it never blocks a collection. The views
in ``NOT_EXPORTED`` are left out (they re-derive what is exported).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Literal

import duckdb

from annex import __version__
from annex.errors import ConfigError, WarehouseError
from warehouse.connection import Warehouse

SCHEMAS = ("core", "marts")
"""The schemas exported: the analysts' tables, never ``raw``, ``audit`` or ``meta``."""

NOT_EXPORTED = frozenset({("core", "lineage_facets")})
"""Views left out. ``core.lineage_facets`` parses every stored payload each time it is read
(some 9 s per 200,000 lineage events on 2 cores, and an export reads a view three or four
times); the payloads it reads are exported whole in ``core/lineage_events``, the current
facets in ``core/lineage_facet_heads``."""

MANIFEST = "_annex_export.json"
STAGING = ".annex-export-staging"
"""Hidden (a leading dot), so Spark, Trino and DuckDB globs never read half-written files."""

DayRule = Literal["day", "valid_from", "first_seen_at", "snapshot"]

_CHANGE_COLUMNS = {
    "valid_from": ("valid_from", "valid_to"),
    "first_seen_at": ("first_seen_at", "changed_at", "vanished_at"),
}


@dataclass(frozen=True)
class TablePlan:
    """How one table is exported: its day rule and the SQL that adds ``day`` to its rows."""

    schema: str
    table: str
    kind: str
    """``table`` or ``view``."""
    rule: DayRule
    has_cluster: bool
    change_columns: tuple[str, ...]
    """Columns whose day >= since marks an older partition as changed."""

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"


@dataclass(frozen=True)
class TableExport:
    """What one export did to one table."""

    name: str
    rule: DayRule
    rows: int
    """Rows of the table in the warehouse (the current snapshot for snapshot tables)."""
    rows_written: int
    partitions_written: int


@dataclass(frozen=True)
class ExportResult:
    """The outcome of ``export_warehouse``."""

    dest: Path
    since: date | None
    tables: tuple[TableExport, ...]
    manifest: Path


def export_warehouse(
    wh: Warehouse, dest: str | os.PathLike[str], *, since: date | None = None
) -> ExportResult:
    """Export every ``core`` and ``marts`` table of the published copy to ``dest``.

    Raises ``ConfigError`` for a DEST that is not a local folder and ``WarehouseError`` when
    nothing is published yet or a write fails.
    """
    if "://" in os.fspath(dest):
        raise ConfigError(
            f"annex export writes to a local or mounted folder, not {dest}",
            hint="export to a folder, then sync it: aws s3 sync --delete DEST s3://bucket/annex",
        )
    dest = Path(dest)
    try:
        dest.mkdir(parents=True, exist_ok=True)
        staging_root = dest / STAGING
        shutil.rmtree(staging_root, ignore_errors=True)
        with wh.reader() as con:
            plans = [plan_table(con, schema, table, kind) for schema, table, kind in _tables(con)]
            results = [_export_table(con, plan, dest, staging_root, since) for plan in plans]
            collections = _collection_ids(con)
        shutil.rmtree(staging_root, ignore_errors=True)
        manifest = _write_manifest(dest, since, plans, results, collections, wh.published_path)
    except OSError as exc:
        raise WarehouseError(
            f"cannot write the export to {dest}: {exc}",
            hint="check free space and permissions there, then rerun (reruns are idempotent)",
        ) from exc
    except duckdb.Error as exc:
        raise WarehouseError(
            f"the export to {dest} failed: {exc}",
            hint="rerun `annex export`; partitions already moved in place are complete",
        ) from exc
    return ExportResult(dest=dest, since=since, tables=tuple(results), manifest=manifest)


def plan_table(con: duckdb.DuckDBPyConnection, schema: str, table: str, kind: str) -> TablePlan:
    """Choose a table's day by its columns (the rules in the module docstring)."""
    rows = con.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = ? AND table_name = ?",
        [schema, table],
    ).fetchall()
    types = {name: data_type for name, data_type in rows}
    rule: DayRule
    if types.get("day") == "DATE":
        rule = "day"
    elif "valid_from" in types:
        rule = "valid_from"
    elif "first_seen_at" in types:
        rule = "first_seen_at"
    else:
        rule = "snapshot"
    changes = tuple(c for c in _CHANGE_COLUMNS.get(rule, ()) if c in types)
    return TablePlan(schema, table, kind, rule, "cluster" in types, changes)


def _tables(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    placeholders = ", ".join("?" for _ in SCHEMAS)
    return [
        (schema, table, kind)
        for schema, table, kind in con.execute(
            "SELECT schema_name, table_name, 'table' FROM duckdb_tables() "
            f"WHERE NOT temporary AND schema_name IN ({placeholders}) "
            "UNION ALL SELECT schema_name, view_name, 'view' FROM duckdb_views() "
            f"WHERE NOT internal AND NOT temporary AND schema_name IN ({placeholders}) "
            "ORDER BY 1, 2",
            [*SCHEMAS, *SCHEMAS],
        ).fetchall()
        if (schema, table) not in NOT_EXPORTED
    ]


def _rows_sql(plan: TablePlan) -> str:
    """The table's rows with ``day`` and ``__annex_changed`` (a DATE) added."""
    source = f"{_ident(plan.schema)}.{_ident(plan.table)}"
    if plan.rule == "snapshot":
        asof = (
            "(SELECT cluster AS c, CAST(max(started_at) AS DATE) AS d FROM audit.collections "
            "WHERE status = 'succeeded' GROUP BY cluster)"
        )
        overall = (
            "(SELECT CAST(max(started_at) AS DATE) FROM audit.collections "
            "WHERE status = 'succeeded')"
        )
        if plan.has_cluster:
            day = f"coalesce(a.d, {overall}, current_date)"
            return (
                f"SELECT t.*, {day} AS day, {day} AS __annex_changed "
                f"FROM {source} AS t LEFT JOIN {asof} AS a ON a.c = t.cluster"
            )
        day = f"coalesce({overall}, current_date)"
        return f"SELECT t.*, {day} AS day, {day} AS __annex_changed FROM {source} AS t"
    day = "t.day" if plan.rule == "day" else f"CAST(t.{_ident(plan.rule)} AS DATE)"
    changed = ", ".join(f"CAST(t.{_ident(c)} AS DATE)" for c in plan.change_columns)
    changed_sql = f"greatest({day}, {changed})" if changed else day
    added = "" if plan.rule == "day" else f", {day} AS day"
    return f"SELECT t.*{added}, {changed_sql} AS __annex_changed FROM {source} AS t"


def _export_table(
    con: duckdb.DuckDBPyConnection,
    plan: TablePlan,
    dest: Path,
    staging_root: Path,
    since: date | None,
) -> TableExport:
    partition_by = "cluster, day" if plan.has_cluster else "day"
    rows = _rows_sql(plan)
    if since is None:
        selected = "SELECT * EXCLUDE (__annex_changed) FROM annex_rows"
    else:
        day = f"DATE '{since.isoformat()}'"
        selected = (
            f"SELECT * EXCLUDE (__annex_changed) FROM annex_rows SEMI JOIN "
            f"(SELECT DISTINCT {partition_by} FROM annex_rows "
            f"WHERE day >= {day} OR __annex_changed >= {day}) AS changed "
            f"USING ({partition_by})"
        )
    query = f"WITH annex_rows AS ({rows}) {selected}"
    written = _count(con, f"SELECT count(*) FROM ({query})")
    staging = staging_root / plan.schema / plan.table
    staging.parent.mkdir(parents=True, exist_ok=True)
    if written:
        con.execute(
            f"COPY ({query}) TO '{_literal(staging)}' "
            f"(FORMAT parquet, PARTITION_BY ({partition_by}), COMPRESSION zstd)"
        )
    target = dest / plan.schema / plan.table
    new_parts = _partitions(staging, plan.has_cluster)
    if since is None and plan.rule != "snapshot":
        shutil.rmtree(target, ignore_errors=True)
    elif since is not None and plan.rule != "snapshot":
        for part in _partitions(target, plan.has_cluster):
            if _day_of(part) >= since:
                shutil.rmtree(target / part)
    for part in new_parts:
        shutil.rmtree(target / part, ignore_errors=True)
        (target / part).parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / part, target / part)
    _remove_empty_dirs(target)
    total = _count(con, f"SELECT count(*) FROM {_ident(plan.schema)}.{_ident(plan.table)}")
    return TableExport(plan.name, plan.rule, total, written, len(new_parts))


def _partitions(root: Path, has_cluster: bool) -> list[Path]:
    """Partition folders under ``root``, relative to it: ``cluster=x/day=y`` or ``day=y``."""
    if not root.is_dir():
        return []
    pattern = "*/day=*" if has_cluster else "day=*"
    return sorted(p.relative_to(root) for p in root.glob(pattern) if p.is_dir())


def _day_of(part: Path) -> date:
    return date.fromisoformat(part.name.removeprefix("day="))


def _remove_empty_dirs(root: Path) -> None:
    if not root.is_dir():
        return
    for child in root.iterdir():
        if child.is_dir() and not any(child.iterdir()):
            child.rmdir()


def _collection_ids(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [
        row[0]
        for row in con.execute(
            "SELECT collection_id FROM audit.collections WHERE status = 'succeeded' "
            "ORDER BY started_at, collection_id"
        ).fetchall()
    ]


def _write_manifest(
    dest: Path,
    since: date | None,
    plans: Iterable[TablePlan],
    results: Iterable[TableExport],
    collections: list[str],
    source: Path,
) -> Path:
    """Write ``_annex_export.json`` atomically: a reader sees the old or the new one whole."""
    kinds = {plan.name: plan for plan in plans}
    manifest = {
        "format": 1,
        "annex_version": __version__,
        "exported_at": datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="seconds"),
        "since": since.isoformat() if since else None,
        "source": str(source),
        "partitioning": ["cluster", "day"],
        "hive_types": {"cluster": "VARCHAR", "day": "DATE"},
        "tables": {
            r.name: {
                "path": r.name.replace(".", "/"),
                "kind": kinds[r.name].kind,
                "day": r.rule,
                "rows": r.rows,
                "rows_written": r.rows_written,
                "partitions_written": r.partitions_written,
            }
            for r in results
        },
        "collections": collections,
    }
    path = dest / MANIFEST
    tmp = path.with_name(f".{MANIFEST}.tmp")
    with tmp.open("w", encoding="utf-8") as out:
        json.dump(manifest, out, indent=2, sort_keys=True)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    return path


def _count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    row = con.execute(sql).fetchone()
    return int(row[0]) if row else 0


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(path: Path) -> str:
    return str(path).replace("'", "''")

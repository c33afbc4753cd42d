"""``annex export``: every ``core`` and ``marts`` table as Parquet that Spark, Trino and DuckDB
read unchanged.

Why: one DuckDB file does not follow pods or scale past one machine (DESIGN.md §2). Parquet in
the Hive layout is what Spark, Trino, DuckDB and Athena read from object storage without annex.

Two kinds of table, named per table in the manifest (``kind`` and ``partition_columns``):

- **partitioned**: history that grows with time (facts, versions, objects first seen on a day).
  Partitioned by ``cluster`` (when the table has one) and ``day``, the day of the table's *own*
  time column, one that never changes for a row, so a row never moves between partitions and an
  export on a later day rewrites or adds partitions but never copies a row twice::

      DEST/<schema>/<table>/cluster=<name>/day=<YYYY-MM-DD>/data_0.parquet

- **snapshot**: dimensions and current-state views (series, registries, lineage graph, every
  marts view without a ``day``). One file holding the table as it is now, overwritten by each
  export (no history: the warehouse keeps that)::

      DEST/<schema>/<table>/data_0.parquet

``DEST/_annex_export.json`` (the manifest, replaced atomically at the end of each export) lists
each table's path, kind, partition columns and their types, the column its day is taken from,
its columns with their exported types and its row count.

Each partitioned table's ``day`` comes from (first rule that matches, see ``plan_table``):

=============================  ==============================  ===============================
table                          day from                        partition also rewritten when
=============================  ==============================  ===============================
a ``day DATE`` column          ``day`` (attestations, lineage  ``loaded_at`` (late arrivals)
                               events, marts by day)
core.gpu_telemetry_samples     ``ts`` (sample time)            (appended once, never changed)
core.gpu_benchmarks            ``ts`` (measurement time)       ``loaded_at``
core.gpu_benchmark_pods        ``read_at`` (its collection)    (read once, never changed)
``valid_from`` (versions:      ``valid_from``                  the version closes (valid_to)
nodes, gpu_allocations)
``first_seen_at`` (pods, jobs, ``first_seen_at``               ``changed_at`` or
events, priority classes)                                      ``vanished_at``
anything else                  snapshot                        (always rewritten whole)
=============================  ==============================  ===============================

``first_seen_at`` rather than ``changed_at`` because ``changed_at`` moves when a pod changes; a
time column is named in ``FACT_TIME`` only when it never changes for a row (``lineage_runs``'
times move with late events, so the lineage graph is a snapshot).

Types are the ones every engine reads: unsigned integers become the next signed type
(``UINTEGER`` -> ``BIGINT``, ``UBIGINT`` -> ``DECIMAL(20,0)``, exact for the 64-bit hashes Spark
and Trino have no unsigned type for), ``HUGEINT`` sums become ``BIGINT`` when every value of the
column fits (checked at each export) and ``DECIMAL(38,0)`` otherwise, never ``DOUBLE``.

Deterministic: two exports of the same warehouse are byte-identical. Rows are written sorted (by
``SORT_FIRST``, then every column), one file per partition by DuckDB's single-file writer; the
manifest holds no wall-clock time, only the data cut-off (the end of the latest successful
collection), and the views that compute "up to now" compute up to that cut-off
(``AS_OF_VARIABLE``).

Incremental and idempotent: ``since=DAY`` rewrites the partitions with ``day >= DAY``, the older
partitions holding a row that changed on or after DAY, those whose row count differs from the
previous export's (a row that arrived late: an allocation's ``valid_from`` is the pod's
scheduled time, which can be days before the collection that first saw it), and every snapshot;
everything else is untouched. A table whose columns or types differ from the previous manifest's
is rewritten whole. Without ``since`` every table is rewritten. Each table is written to a
hidden staging folder first and then moved partition by partition, so a failed export leaves the
previous files readable. Exports to one DEST must not run concurrently (the Dagster pool or one
cron entry keeps them apart). Sync DEST to object storage afterwards (``aws s3 sync --delete``,
``rclone sync``, ``gsutil rsync -d``): annex writes to a local or mounted folder only, because
rewriting a partition means deleting its old files first, which plain object stores cannot do
safely.

It reads the published copy (``Warehouse.reader()``), so it never blocks a collection. The views
in ``NOT_EXPORTED`` are left out (they re-derive what is exported).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Literal
from urllib.parse import quote

import duckdb

from annex import __version__
from annex.errors import ConfigError, WarehouseError
from warehouse.connection import Warehouse

SCHEMAS = ("core", "marts")
"""The schemas exported: the analysts' tables, never ``raw``, ``audit`` or ``meta``."""

NOT_EXPORTED = frozenset({("core", "lineage_facets")})
"""Views left out. ``core.lineage_facets`` parses every stored payload each time it is read
(some 9 s per 200,000 lineage events on 2 cores); the payloads it reads are exported whole in
``core/lineage_events``, the current facets in ``core/lineage_facet_heads``."""

FACT_TIME = {
    ("core", "gpu_telemetry_samples"): "ts",
    ("core", "gpu_benchmarks"): "ts",
    ("core", "gpu_benchmark_pods"): "read_at",
}
"""Fact tables without a ``day`` column, and the time column whose day partitions them: a time
of the row that never changes once it is loaded (a row loaded late for an older day changes
that day's row count, which an incremental export notices)."""

SORT_FIRST = {("core", "gpu_telemetry_samples"): ("series_id", "ts")}
"""Columns a table's rows are sorted by first (then by every column, for a total order). Each
series' samples side by side compress to half the size of samples sorted by time (8 MB instead
of 20 MB for the demo's 5.2 million)."""

AS_OF_VARIABLE = "as_of"
"""The DuckDB variable a view reads instead of the clock: ``coalesce(getvariable('as_of'),
CAST(timezone('UTC', now()) AS TIMESTAMP))``. The export sets it to the data cut-off, so a
figure computed "up to now" is the same in every export of one warehouse."""

MANIFEST = "_annex_export.json"
MANIFEST_FORMAT = 2
STAGING = ".annex-export-staging"
"""Hidden (a leading dot), so Spark, Trino and DuckDB globs never read half-written files."""
DATA_FILE = "data_0.parquet"

HIVE_TYPES = {"cluster": "VARCHAR", "day": "DATE"}
"""The partition columns' types: name them when reading (a cluster called ``2024`` stays a
string)."""

Kind = Literal["partitioned", "snapshot"]

_CHANGE_COLUMNS = {
    "valid_from": ("valid_to",),
    "first_seen_at": ("changed_at", "vanished_at"),
}
_LATE_ARRIVAL = "loaded_at"

_EXACT_TYPES = {
    "UTINYINT": "SMALLINT",
    "USMALLINT": "INTEGER",
    "UINTEGER": "BIGINT",
    "UBIGINT": "DECIMAL(20,0)",
    "UHUGEINT": "DECIMAL(38,0)",
    "HUGEINT": "DECIMAL(38,0)",
}
"""Integer types no other engine shares, and the exact type each is written as (inside nested
types too). A top-level ``HUGEINT`` becomes ``BIGINT`` when its values fit (``_hugeint_types``)."""
_TYPE_WORDS = re.compile(r'"[^"]*"|\b(' + "|".join(_EXACT_TYPES) + r")\b")
_BIGINT_RANGE = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class TablePlan:
    """How one table is exported: its kind, the column its day comes from, its columns."""

    schema: str
    table: str
    relation: str
    """``table`` or ``view``."""
    day_from: str | None
    """The column whose day partitions the table (``day`` itself for a DATE ``day``); None for
    a snapshot."""
    has_cluster: bool
    change_columns: tuple[str, ...]
    """Columns whose day >= since marks an older partition as changed."""
    columns: tuple[tuple[str, str], ...]
    """The table's columns and their DuckDB types, in order."""
    whole: str | None = None
    """The view that reads the table whole, its compacted rows included (``archive.<table>``,
    ``warehouse.compaction``): the export reads it, so compacting never removes an exported
    partition. None: the table itself."""

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def kind(self) -> Kind:
        return "snapshot" if self.day_from is None else "partitioned"

    @property
    def partition_columns(self) -> tuple[str, ...]:
        if self.day_from is None:
            return ()
        return ("cluster", "day") if self.has_cluster else ("day",)

    @property
    def source(self) -> str:
        return self.whole or f"{sql_ident(self.schema)}.{sql_ident(self.table)}"


@dataclass(frozen=True)
class TableExport:
    """What one export did to one table."""

    name: str
    kind: Kind
    rows: int
    """Rows of the table in the warehouse."""
    rows_written: int
    partitions_written: int
    columns: dict[str, str]
    """The columns in the files and their exported types (partition columns excluded)."""
    partitions: dict[str, int]
    """Each partition's path and row count (none for a snapshot)."""


@dataclass(frozen=True)
class ExportResult:
    """The outcome of ``export_warehouse``."""

    dest: Path
    since: date | None
    data_cutoff: datetime | None
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
        previous = _previous_tables(dest)
        staging_root = dest / STAGING
        shutil.rmtree(staging_root, ignore_errors=True)
        with wh.reader() as con:
            cutoff = data_cutoff(con)
            con.execute(f"SET VARIABLE {AS_OF_VARIABLE} = CAST(? AS TIMESTAMP)", [cutoff])
            plans = [plan_table(con, schema, table, kind) for schema, table, kind in _tables(con)]
            results = [
                _export_table(con, plan, dest, staging_root, since, previous.get(plan.name, {}))
                for plan in plans
            ]
            collections = _collection_ids(con)
        shutil.rmtree(staging_root, ignore_errors=True)
        _remove_dropped(dest, previous, {plan.name for plan in plans})
        manifest = _write_manifest(
            dest, since, cutoff, plans, results, collections, wh.published_path
        )
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
    return ExportResult(dest, since, cutoff, tuple(results), manifest)


def data_cutoff(con: duckdb.DuckDBPyConnection) -> datetime | None:
    """The end of the warehouse's latest successful collection: what "now" is for an export."""
    row = con.execute(
        "SELECT max(finished_at) FROM audit.collections WHERE status = 'succeeded'"
    ).fetchone()
    return row[0] if row else None


def plan_table(con: duckdb.DuckDBPyConnection, schema: str, table: str, kind: str) -> TablePlan:
    """Choose a table's kind and day by its meaning (the rules in the module docstring)."""
    columns = tuple(
        (name, data_type)
        for name, data_type in con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
            [schema, table],
        ).fetchall()
    )
    types = dict(columns)
    day_from: str | None
    if types.get("day") == "DATE":
        day_from = "day"
    elif (schema, table) in FACT_TIME:
        day_from = FACT_TIME[(schema, table)]
    elif "valid_from" in types:
        day_from = "valid_from"
    elif "first_seen_at" in types and "changed_at" in types:
        # an object tracked with its change times; a first/last-seen dimension without them
        # (marts.gpus, core.gpu_attested_devices) changes in place: a snapshot
        day_from = "first_seen_at"
    else:
        day_from = None
    candidates = (*_CHANGE_COLUMNS.get(day_from or "", ()), _LATE_ARRIVAL) if day_from else ()
    changes = tuple(c for c in candidates if c in types)
    whole = None
    if schema == "core" and _archived(con, table):
        whole = f"archive.{sql_ident(table)}"
    return TablePlan(schema, table, kind, day_from, "cluster" in types, changes, columns, whole)


def _archived(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether ``archive.<table>`` exists: the table's rows live and compacted."""
    row = con.execute(
        "SELECT count(*) FROM duckdb_views() WHERE schema_name = 'archive' AND view_name = ?",
        [table],
    ).fetchone()
    return bool(row and row[0])


def duckdb_source(dest: str | os.PathLike[str], entry: dict) -> str:
    """The ``read_parquet(...)`` that reads one table of the manifest back in DuckDB, partition
    columns typed as the manifest says (``entry`` is the manifest's entry for the table)."""
    glob = sql_literal(str(Path(dest) / entry["path"] / "**" / "*.parquet"))
    types = entry["partition_types"]
    if not types:
        return f"read_parquet('{glob}')"
    named = ", ".join(f"'{column}': '{kind}'" for column, kind in types.items())
    return f"read_parquet('{glob}', hive_partitioning = true, hive_types = {{{named}}})"


def exported_type(duckdb_type: str) -> str:
    """The type a column is written as: unsigned and 128-bit integers as exact signed types."""
    return _TYPE_WORDS.sub(lambda m: _EXACT_TYPES.get(m.group(1) or "", m.group(0)), duckdb_type)


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


def _column_types(con: duckdb.DuckDBPyConnection, plan: TablePlan) -> dict[str, str]:
    """The exported type of each column written to the files (partition columns excluded)."""
    written = [(c, t) for c, t in plan.columns if c not in plan.partition_columns]
    types = {c: exported_type(t) for c, t in written}
    huge = [c for c, t in written if t == "HUGEINT"]
    if huge:
        bounds = ", ".join(f"min({sql_ident(c)}), max({sql_ident(c)})" for c in huge)
        row = con.execute(f"SELECT {bounds} FROM {plan.source}").fetchone() or ()
        for i, column in enumerate(huge):
            low, high = row[2 * i], row[2 * i + 1]
            fits = low is None or (_BIGINT_RANGE[0] <= low and high <= _BIGINT_RANGE[1])
            types[column] = "BIGINT" if fits else "DECIMAL(38,0)"
    return types


def _day_sql(column: str) -> str:
    return f"CAST({sql_ident(column)} AS DATE)"


def _export_table(
    con: duckdb.DuckDBPyConnection,
    plan: TablePlan,
    dest: Path,
    staging_root: Path,
    since: date | None,
    previous: dict,
) -> TableExport:
    columns = _column_types(con, plan)
    select = ", ".join(
        sql_ident(c) if t == original else f"CAST({sql_ident(c)} AS {t}) AS {sql_ident(c)}"
        for (c, original), t in ((ct, columns[ct[0]]) for ct in plan.columns if ct[0] in columns)
    )
    total = count_rows(con, f"SELECT count(*) FROM {plan.source}")
    staging = staging_root / plan.schema / plan.table
    target = dest / plan.schema / plan.table
    if plan.day_from is None:
        staging.mkdir(parents=True, exist_ok=True)
        copy_parquet(
            con,
            f"SELECT {select} FROM {plan.source}",
            sort_order(plan, columns),
            staging / DATA_FILE,
        )
        shutil.rmtree(target, ignore_errors=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging, target)
        return TableExport(plan.name, plan.kind, total, total, 0, columns, {})

    whole = since is None or previous.get("columns") != columns
    current = _partition_rows(con, plan, since)
    exported = previous.get("partitions") or {}
    write = [p for p in current if whole or p.changed or exported.get(p.path) != p.rows]
    for part in write:
        (staging / part.path).mkdir(parents=True, exist_ok=True)
        where = partition_filter(plan, part.values)
        query = f"SELECT {select} FROM {plan.source} WHERE {where}"
        copy_parquet(con, query, sort_order(plan, columns), staging / part.path / DATA_FILE)
    if whole:
        shutil.rmtree(target, ignore_errors=True)
    else:  # a partition whose rows are all gone
        kept = {p.path for p in current}
        for old in _partitions(target, plan.has_cluster):
            if old.as_posix() not in kept:
                shutil.rmtree(target / old)
    for part in write:
        shutil.rmtree(target / part.path, ignore_errors=True)
        (target / part.path).parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / part.path, target / part.path)
    _remove_empty_dirs(target)
    written = sum(p.rows for p in write)
    counts = {p.path: p.rows for p in current}
    return TableExport(plan.name, plan.kind, total, written, len(write), columns, counts)


@dataclass(frozen=True)
class _Partition:
    values: tuple
    """``(cluster, day)`` or ``(day,)``."""
    path: str
    """``cluster=<name>/day=<day>`` or ``day=<day>``."""
    rows: int
    changed: bool
    """A row of it is from or changed on or after ``since``."""


def _partition_rows(
    con: duckdb.DuckDBPyConnection, plan: TablePlan, since: date | None
) -> list[_Partition]:
    """Every partition of the table with its row count, sorted.

    An incremental export rewrites those changed since ``since`` and those whose row count
    differs from the previous export's (a row that arrived late, e.g. a pod seen for the first
    time with an older scheduled time, lands in an older day)."""
    assert plan.day_from is not None
    keys = ["cluster"] if plan.has_cluster else []
    changed = "false"
    if since is not None:
        changed = " OR ".join(
            f"{_day_sql(c)} >= DATE '{since.isoformat()}'"
            for c in (plan.day_from, *plan.change_columns)
        )
    group = ", ".join([*(sql_ident(k) for k in keys), _day_sql(plan.day_from)])
    rows = con.execute(
        f"SELECT {group}, count(*), coalesce(bool_or({changed}), false) FROM {plan.source} "
        "GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    return [
        _Partition(tuple(values), partition_path(tuple(values)).as_posix(), count, flag)
        for *values, count, flag in rows
    ]


def partition_filter(plan: TablePlan, values: tuple) -> str:
    """The rows of one partition; a range on a timestamp so that DuckDB skips row groups."""
    assert plan.day_from is not None
    *cluster, day = values
    if day is None:
        where = [f"{sql_ident(plan.day_from)} IS NULL"]
    elif plan.day_from == "day":
        where = [f"day = DATE '{day.isoformat()}'"]
    else:
        column = sql_ident(plan.day_from)
        end = day + timedelta(days=1)
        where = [
            f"{column} >= CAST(DATE '{day.isoformat()}' AS TIMESTAMP)",
            f"{column} < CAST(DATE '{end.isoformat()}' AS TIMESTAMP)",
        ]
    if cluster:
        (name,) = cluster
        where.append("cluster IS NULL" if name is None else f"cluster = '{sql_literal(name)}'")
    return " AND ".join(where)


def partition_path(values: tuple) -> Path:
    """``cluster=<name>/day=<day>`` (percent-encoded as Hive does; NULL as Hive's default)."""
    *cluster, day = values
    parts = [f"cluster={_hive_value(name)}" for name in cluster]
    parts.append(f"day={_hive_value(day.isoformat() if day else None)}")
    return Path(*parts)


def _hive_value(value: str | None) -> str:
    return "__HIVE_DEFAULT_PARTITION__" if value is None else quote(value, safe="-_.~")


def sort_order(plan: TablePlan, columns: dict[str, str]) -> str:
    """A total order of the written rows: ``SORT_FIRST``, then every column."""
    first = SORT_FIRST.get((plan.schema, plan.table), ())
    return ", ".join(sql_ident(c) for c in (*first, *(c for c in columns if c not in first)))


def copy_parquet(con: duckdb.DuckDBPyConnection, query: str, order: str, path: Path) -> None:
    """One Parquet file, rows sorted: DuckDB's single-file writer keeps that order, so the bytes
    depend only on the rows."""
    con.execute(
        f"COPY ({query} ORDER BY {order}) TO '{sql_literal(str(path))}' "
        "(FORMAT parquet, COMPRESSION zstd)"
    )


def _partitions(root: Path, has_cluster: bool) -> list[Path]:
    """Partition folders under ``root``, relative to it: ``cluster=x/day=y`` or ``day=y``."""
    if not root.is_dir():
        return []
    pattern = "*/day=*" if has_cluster else "day=*"
    return sorted(p.relative_to(root) for p in root.glob(pattern) if p.is_dir())


def _remove_empty_dirs(root: Path) -> None:
    if not root.is_dir():
        return
    for child in root.iterdir():
        if child.is_dir() and not any(child.iterdir()):
            child.rmdir()
    if not any(root.iterdir()):
        root.rmdir()


def _collection_ids(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [
        row[0]
        for row in con.execute(
            "SELECT collection_id FROM audit.collections WHERE status = 'succeeded' "
            "ORDER BY started_at, collection_id"
        ).fetchall()
    ]


def _remove_dropped(dest: Path, previous: dict[str, dict], exported: set[str]) -> None:
    """Remove the folders of tables the previous export had and the warehouse no longer has (a
    view dropped or renamed), so that a reader of DEST never finds a table annex left behind."""
    for name in sorted(set(previous) - exported):
        schema, _, table = name.partition(".")
        if schema in SCHEMAS and table and "/" not in table and not table.startswith("."):
            shutil.rmtree(dest / schema / table, ignore_errors=True)


def _previous_tables(dest: Path) -> dict[str, dict]:
    """Each table's entry in the manifest already at ``dest`` (none if unreadable or of an
    older format: then every table is rewritten whole)."""
    try:
        manifest = json.loads((dest / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        return {}
    tables = manifest.get("tables")
    return tables if isinstance(tables, dict) else {}


def _write_manifest(
    dest: Path,
    since: date | None,
    cutoff: datetime | None,
    plans: list[TablePlan],
    results: list[TableExport],
    collections: list[str],
    source: Path,
) -> Path:
    """Write ``_annex_export.json`` atomically: a reader sees the old or the new one whole."""
    by_name = {plan.name: plan for plan in plans}
    manifest = {
        "format": MANIFEST_FORMAT,
        "annex_version": __version__,
        "data_cutoff": cutoff.isoformat() if cutoff else None,
        "since": since.isoformat() if since else None,
        "source": str(source),
        "tables": {
            r.name: {
                "path": r.name.replace(".", "/"),
                "relation": by_name[r.name].relation,
                "kind": r.kind,
                "partition_columns": list(by_name[r.name].partition_columns),
                "partition_types": {c: HIVE_TYPES[c] for c in by_name[r.name].partition_columns},
                "day_from": by_name[r.name].day_from,
                "columns": r.columns,
                "rows": r.rows,
                "rows_written": r.rows_written,
                "partitions_written": r.partitions_written,
                "partitions": r.partitions,
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


def count_rows(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    """The first column of the query's first row (a ``count(*)``), 0 when there is none."""
    row = con.execute(sql).fetchone()
    return int(row[0]) if row else 0


def sql_ident(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: str) -> str:
    """``value`` escaped for use inside a single-quoted SQL string."""
    return value.replace("'", "''")

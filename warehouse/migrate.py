"""Numbered SQL migrations: ``migrations/NNNN_name.sql``, applied in order, one transaction each.

Each migration runs in ONE transaction together with its row in ``meta.migrations`` (version,
name, SHA-256 of the file, applied_at): DuckDB's DDL is transactional, so a migration that fails
half-way leaves nothing behind, and a killed process leaves the file at the last whole
migration. Opening an older warehouse applies the missing ones. An applied migration is never
edited: its checksum is checked on every open, and a changed file is refused, because the
warehouse would silently differ from what the file says.

Migrations keep tables and data changes. The ``marts`` views are living SQL instead: each is one
file ``marts/<name>.sql`` beside the migrations folder (its ``CREATE OR REPLACE VIEW`` and its
``COMMENT ON``s), and every migrate re-creates them all, in dependency order, when a file changed
or a migration ran (``meta.marts_views`` records each file's checksum). Changing a view is editing
its file; no migration restates it. A rule several views and models share (e.g. how a shared GPU
counts) is a macro in ``marts/macros/<name>.sql`` (``CREATE OR REPLACE MACRO marts.<name>`` and
its ``COMMENT ON MACRO``): created before every view that calls it, and part of that view's
checksum, so editing the rule re-creates its views.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from annex.errors import MigrationError
from warehouse.transaction import roll_back

DEFAULT_MIGRATIONS_DIR = Path(__file__).with_name("migrations")

_NAME = re.compile(r"^(\d{4})_([a-z0-9][a-z0-9_]*)\.sql$")

_BOOTSTRAP = """
CREATE SCHEMA IF NOT EXISTS meta;
CREATE TABLE IF NOT EXISTS meta.migrations (
    version INTEGER NOT NULL PRIMARY KEY,
    name VARCHAR NOT NULL,
    checksum VARCHAR NOT NULL,
    applied_at TIMESTAMP NOT NULL
);
COMMENT ON TABLE meta.migrations IS
    'One row per applied schema migration (warehouse/migrations/NNNN_name.sql).';
COMMENT ON COLUMN meta.migrations.version IS 'The migration number NNNN.';
COMMENT ON COLUMN meta.migrations.name IS 'The migration file name.';
COMMENT ON COLUMN meta.migrations.checksum IS
    'SHA-256 (hex) of the file as applied; an applied migration must never change.';
COMMENT ON COLUMN meta.migrations.applied_at IS 'When it was applied (UTC).';
CREATE TABLE IF NOT EXISTS meta.marts_views (
    name VARCHAR NOT NULL PRIMARY KEY,
    checksum VARCHAR NOT NULL,
    applied_at TIMESTAMP NOT NULL
);
COMMENT ON TABLE meta.marts_views IS
    'One row per marts view as last created from its file warehouse/marts/<name>.sql.';
COMMENT ON COLUMN meta.marts_views.name IS 'The view name in schema marts (the file stem).';
COMMENT ON COLUMN meta.marts_views.checksum IS
    'SHA-256 (hex) of the file as applied; a different file re-creates the views on migrate.';
COMMENT ON COLUMN meta.marts_views.applied_at IS 'When the view was last created (UTC).';
"""

_VIEW_CREATE = re.compile(
    r"^\s*CREATE\s+OR\s+REPLACE\s+VIEW\s+marts\.([a-z0-9_]+)\b", re.IGNORECASE
)
_MARTS_REFERENCE = re.compile(r"\bmarts\.([a-z0-9_]+)\b", re.IGNORECASE)
_MACRO_CREATE = re.compile(
    r"^\s*CREATE\s+OR\s+REPLACE\s+MACRO\s+marts\.([a-z0-9_]+)\b", re.IGNORECASE
)


@dataclass(frozen=True)
class Migration:
    """One migration file."""

    version: int
    name: str
    """The file name, e.g. ``0001_foundation.sql``."""
    path: Path
    sql: str
    checksum: str


@dataclass(frozen=True)
class AppliedMigration:
    """One row of ``meta.migrations``."""

    version: int
    name: str
    checksum: str
    applied_at: datetime


@dataclass(frozen=True)
class MartView:
    """One living view file ``marts/<name>.sql``."""

    name: str
    """The view's name in schema ``marts``: the file stem."""
    path: Path
    sql: str
    checksum: str
    depends_on: frozenset[str]
    """The other marts views its SQL reads (so they are created first)."""
    macros: tuple[Path, ...] = ()
    """The macro files (``marts/macros/``) defining the ``marts`` macros it calls: their SQL
    runs before the view's and their bytes are in ``checksum``."""


def default_marts_dir(migrations_dir: Path | None) -> Path:
    """The views folder beside a migrations folder: ``warehouse/marts`` for annex's own."""
    return (migrations_dir or DEFAULT_MIGRATIONS_DIR).parent / "marts"


def discover_mart_views(marts_dir: Path) -> list[MartView]:
    """The view files of ``marts_dir`` in creation order (a view after those it reads).

    A missing folder means no living views (a test's own migrations folder). A file whose
    first statement is not ``CREATE OR REPLACE VIEW marts.<its stem>`` is an error, and so is
    a cycle. Parsed once per process while no file in the folder changes (every warehouse open
    asks; a demo's history opens it dozens of times).
    """
    if not marts_dir.is_dir():
        return []
    return list(_mart_views(marts_dir, _files_signature(marts_dir, marts_dir / "macros")))


def _files_signature(*folders: Path) -> tuple[tuple[str, str], ...]:
    """Each ``*.sql`` file of ``folders`` with the SHA-256 of its bytes: what the parsed files
    are cached under, so that an edited, added or removed file is read again (reading and
    hashing them costs milliseconds; parsing them, tens)."""
    return tuple(
        (str(path), hashlib.sha256(path.read_bytes()).hexdigest())
        for folder in folders
        if folder.is_dir()
        for path in sorted(folder.glob("*.sql"))
    )


def _unchanged_since(
    signature: tuple[tuple[str, str], ...], now: tuple[tuple[str, str], ...]
) -> None:
    """What was parsed is what the cache key says: a file edited while annex read it is an
    error (raised, so not cached), and the next open reads it again."""
    if now != signature:
        changed = sorted({p for p, _ in set(now) ^ set(signature)})
        raise MigrationError(
            f"{', '.join(changed)} changed while annex read the folder",
            hint="rerun once the edit is saved",
        )


@functools.lru_cache(maxsize=8)
def _mart_views(marts_dir: Path, signature: tuple[tuple[str, str], ...]) -> tuple[MartView, ...]:
    con = duckdb.connect()
    try:
        macros = _discover_macros(con, marts_dir / "macros")
        views: dict[str, MartView] = {}
        for path in sorted(marts_dir.glob("*.sql")):
            data = path.read_bytes()
            sql = data.decode("utf-8")
            try:
                statements = con.extract_statements(sql)
            except duckdb.Error as exc:
                raise MigrationError(
                    f"view file {path} is not valid SQL: {exc}", hint="fix the file and rerun"
                ) from exc
            first = _VIEW_CREATE.match(_strip_comments(statements[0].query)) if statements else None
            if first is None or first.group(1).lower() != path.stem:
                raise MigrationError(
                    f"view file {path} does not start with CREATE OR REPLACE VIEW "
                    f"marts.{path.stem}",
                    hint="one view a file, named after the view; its COMMENT ON statements follow",
                )
            depends_on = frozenset(
                m.group(1).lower() for m in _MARTS_REFERENCE.finditer(statements[0].query)
            )
            uses = sorted({macros[name] for name in depends_on if name in macros})
            digest = hashlib.sha256(data)
            for macro in uses:
                digest.update(macro.read_bytes())
            views[path.stem] = MartView(
                name=path.stem,
                path=path,
                sql="".join(m.read_text("utf-8") + "\n" for m in uses) + sql,
                checksum=digest.hexdigest(),
                depends_on=depends_on,
                macros=tuple(uses),
            )
    finally:
        con.close()
    ordered: list[MartView] = []
    placed: set[str] = set()
    while len(ordered) < len(views):
        ready = [
            v
            for name, v in views.items()
            if name not in placed
            and all(d in placed or d == name or d not in views for d in v.depends_on)
        ]
        if not ready:
            stuck = sorted(set(views) - placed)
            raise MigrationError(
                f"marts views {', '.join(stuck)} in {marts_dir} depend on each other in a cycle",
                hint="break the cycle: a view may read only views that do not read it",
            )
        ordered.extend(ready)
        placed.update(v.name for v in ready)
    _unchanged_since(signature, _files_signature(marts_dir, marts_dir / "macros"))
    return tuple(ordered)


def _discover_macros(con: duckdb.DuckDBPyConnection, macros_dir: Path) -> dict[str, Path]:
    """``marts`` macro name -> the file in ``macros_dir`` defining it (a file may define several,
    one rule's macros together); a statement that is not a macro or its comment is an error."""
    defined: dict[str, Path] = {}
    if not macros_dir.is_dir():
        return defined
    for path in sorted(macros_dir.glob("*.sql")):
        try:
            statements = con.extract_statements(path.read_text("utf-8"))
        except duckdb.Error as exc:
            raise MigrationError(
                f"macro file {path} is not valid SQL: {exc}", hint="fix the file and rerun"
            ) from exc
        for statement in statements:
            query = _strip_comments(statement.query)
            created = _MACRO_CREATE.match(query)
            if created:
                defined[created.group(1).lower()] = path
            elif not re.match(r"^\s*COMMENT\s+ON\s+MACRO\b", query, re.IGNORECASE):
                raise MigrationError(
                    f"macro file {path} holds a statement that is not CREATE OR REPLACE MACRO "
                    f"marts.<name> or its COMMENT ON MACRO",
                    hint="keep views in warehouse/marts/<name>.sql and macros here",
                )
    return defined


def _strip_comments(sql: str) -> str:
    return re.sub(r"^(\s*--[^\n]*\n)+", "", sql)


def apply_mart_views(
    con: duckdb.DuckDBPyConnection,
    views: list[MartView],
    warehouse: str,
) -> list[str]:
    """(Re)create the marts views from their files when any file changed; return their names.

    One transaction: the views, their comments and ``meta.marts_views`` change together. A
    view whose file was removed (it is in ``meta.marts_views`` but has no file) is dropped.
    A migration empties ``meta.marts_views`` (see ``apply_migrations``), so after one the
    views are re-created even if no file changed.
    """
    recorded = dict(con.execute("SELECT name, checksum FROM meta.marts_views").fetchall())
    wanted = {v.name: v.checksum for v in views}
    if recorded == wanted:
        return []
    con.execute("BEGIN")
    try:
        for name in sorted(set(recorded) - set(wanted)):
            con.execute(f'DROP VIEW IF EXISTS marts."{name}"')
        con.execute("DELETE FROM meta.marts_views")
        now = utc_now()
        for view in views:
            try:
                for statement in con.extract_statements(view.sql):
                    con.execute(statement)
            except duckdb.Error as exc:
                raise MigrationError(
                    f"view file {view.path} failed on {warehouse} and nothing was changed: {exc}",
                    hint="fix the view's SQL (views are re-created on every migrate) and rerun",
                ) from exc
            con.execute(
                "INSERT INTO meta.marts_views (name, checksum, applied_at) VALUES (?, ?, ?)",
                [view.name, view.checksum, now],
            )
        con.execute("COMMIT")
    except BaseException as exc:
        roll_back(con, exc)
        raise
    return [v.name for v in views]


def discover_migrations(migrations_dir: Path | None = None) -> list[Migration]:
    """The migrations in ``migrations_dir`` in order; a bad name, gap or duplicate is an error.
    Read once per process while no file in the folder changes."""
    directory = migrations_dir or DEFAULT_MIGRATIONS_DIR
    if not directory.is_dir():
        raise MigrationError(f"migrations folder {directory} does not exist")
    return list(_migrations(directory, _files_signature(directory)))


@functools.lru_cache(maxsize=8)
def _migrations(directory: Path, signature: tuple[tuple[str, str], ...]) -> tuple[Migration, ...]:
    migrations: list[Migration] = []
    for path in sorted(directory.glob("*.sql")):
        match = _NAME.match(path.name)
        if match is None:
            raise MigrationError(
                f"migration file {path} is not named NNNN_name.sql",
                hint="rename it, e.g. 0007_add_gpu_table.sql (lowercase, digits, underscores)",
            )
        data = path.read_bytes()
        migrations.append(
            Migration(
                version=int(match.group(1)),
                name=path.name,
                path=path,
                sql=data.decode("utf-8"),
                checksum=hashlib.sha256(data).hexdigest(),
            )
        )
    migrations.sort(key=lambda m: m.version)
    for expected, migration in enumerate(migrations, start=1):
        if migration.version != expected:
            same = [m.name for m in migrations if m.version == migration.version]
            if len(same) > 1:
                raise MigrationError(
                    f"migrations {', '.join(same)} in {directory} share number "
                    f"{migration.version:04d}",
                    hint="give the newer one the next free number",
                )
            raise MigrationError(
                f"migration {migration.name} in {directory}: expected number {expected:04d} "
                "(migrations are numbered 0001, 0002, ... without gaps)",
                hint=f"rename it to {expected:04d}_...sql",
            )
    _unchanged_since(signature, _files_signature(directory))
    return tuple(migrations)


def table_exists(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> bool:
    """Whether ``schema.table`` exists (a new or older file may lack it)."""
    row = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = ? AND table_name = ?",
        [schema, table],
    ).fetchone()
    return bool(row and row[0])


def applied_migrations(con: duckdb.DuckDBPyConnection) -> list[AppliedMigration]:
    """The rows of ``meta.migrations``; empty on a new file."""
    if not table_exists(con, "meta", "migrations"):
        return []
    rows = con.execute(
        "SELECT version, name, checksum, applied_at FROM meta.migrations ORDER BY version"
    ).fetchall()
    return [AppliedMigration(*row) for row in rows]


def check_applied(
    migrations: list[Migration], applied: list[AppliedMigration], warehouse: str
) -> list[Migration]:
    """Refuse edited or unknown applied migrations; return those still to apply."""
    by_version = {m.version: m for m in migrations}
    for row in applied:
        migration = by_version.get(row.version)
        if migration is None:
            raise MigrationError(
                f"warehouse {warehouse} has migration {row.name} applied, which this annex "
                "does not have",
                hint="the warehouse was written by a newer annex: upgrade annex",
            )
        if migration.checksum != row.checksum or migration.name != row.name:
            raise MigrationError(
                f"migration file {migration.path} changed after it was applied to {warehouse} "
                f"(applied as {row.name} on {row.applied_at:%Y-%m-%d %H:%M} UTC, "
                f"sha256 {row.checksum[:12]}…, file now {migration.checksum[:12]}…)",
                hint=(
                    "restore the file as it was (git checkout / git log it) and put the change "
                    "in a new migration with the next number; never edit an applied migration"
                ),
            )
    done = {row.version for row in applied}
    return [m for m in migrations if m.version not in done]


def apply_migrations(
    con: duckdb.DuckDBPyConnection,
    migrations: list[Migration],
    warehouse: str,
    views: list[MartView] | None = None,
) -> list[str]:
    """Apply the pending migrations, then the marts ``views``; return the migrations' names.

    The caller holds the writer lock. Each migration and its ``meta.migrations`` row commit
    together or not at all; the views are re-created in one more transaction when a file
    changed or a migration ran (``apply_mart_views``).
    """
    con.execute("BEGIN")
    try:
        con.execute(_BOOTSTRAP)
        con.execute("COMMIT")
    except BaseException as exc:
        roll_back(con, exc)
        raise
    pending = check_applied(migrations, applied_migrations(con), warehouse)
    names: list[str] = []
    for migration in pending:
        try:
            statements = con.extract_statements(migration.sql)
        except duckdb.Error as exc:
            raise MigrationError(
                f"migration {migration.path} is not valid SQL: {exc}",
                hint="fix the migration (it was not applied, so it may still be edited) and rerun",
            ) from exc
        if any(s.type == duckdb.StatementType.TRANSACTION for s in statements):
            raise MigrationError(
                f"migration {migration.path} contains BEGIN/COMMIT/ROLLBACK",
                hint="remove them: annex runs each migration in its own transaction",
            )
        con.execute("BEGIN")
        try:
            for statement in statements:
                con.execute(statement)
            con.execute(
                "INSERT INTO meta.migrations (version, name, checksum, applied_at) "
                "VALUES (?, ?, ?, ?)",
                [migration.version, migration.name, migration.checksum, utc_now()],
            )
            # A migration may restate a marts view as it stood then: forget the recorded
            # views in the same transaction, so the next migrate re-creates them from files
            # even if this process dies before it does.
            con.execute("DELETE FROM meta.marts_views")
            con.execute("COMMIT")
        except duckdb.Error as exc:
            roll_back(con, exc)
            raise MigrationError(
                f"migration {migration.path} failed on {warehouse} and was rolled back: {exc}",
                hint="fix the migration (it was not applied, so it may still be edited) and rerun",
            ) from exc
        except BaseException as exc:
            roll_back(con, exc)
            raise
        names.append(migration.name)
    apply_mart_views(con, views or [], warehouse)
    return names


def utc_now() -> datetime:
    """Now as a naive UTC datetime: what annex stores in ``TIMESTAMP`` columns."""
    return datetime.now(UTC).replace(tzinfo=None)

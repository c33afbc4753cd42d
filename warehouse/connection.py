"""The ``Warehouse``: where the DuckDB file is, and the only ways annex opens it.

* ``writer()``: the writer lock, then a read-write connection to the live file, migrated.
* ``reader()``: a read-only connection to the published copy (never the live file, so an
  analyst or a report never blocks the next write).
* ``publish()``: checkpoint the live file and atomically replace the published copy with it.
* ``status()``: what is applied, pending, how big, and the last collections, without waiting.

Nothing is opened when a ``Warehouse`` is made, so building one is free (Dagster resources,
CLI start-up).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from annex.errors import MigrationError, WarehouseError, WarehouseSpaceError
from annex.settings import MEMORY_LIMIT_FORMS, WarehouseSettings
from warehouse.lock import read_holder, try_writer_lock, writer_lock
from warehouse.migrate import (
    AppliedMigration,
    Migration,
    applied_migrations,
    apply_migrations,
    check_applied,
    default_marts_dir,
    discover_mart_views,
    discover_migrations,
    table_exists,
)
from warehouse.publish import clear_stale, copy_atomically, mark_stale, read_stale
from warehouse.space import file_bytes, out_of_space, room_needed

OnWait = Callable[[str], None]

log = logging.getLogger(__name__)

RECENT_COLLECTIONS = 10
"""How many collections ``status()`` lists."""


@dataclass(frozen=True)
class CollectionSummary:
    """One row of ``audit.collections``, as ``status()`` reports it."""

    collection_id: str
    source: str
    cluster: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    rejected_count: int | None
    error: str | None


@dataclass(frozen=True)
class WarehouseStatus:
    """What ``annex status`` shows about the warehouse."""

    path: Path
    exists: bool
    size_bytes: int
    wal_bytes: int
    published_path: Path
    published_exists: bool
    published_bytes: int
    published_at: datetime | None
    """Modification time of the published copy (UTC)."""
    read_from: str
    """Which file the figures below come from, and why: ``live``, ``published`` or ``none``."""
    writer: str | None
    """Who holds the writer lock (pid and start time), or None when no one writes."""
    applied: tuple[AppliedMigration, ...]
    pending: tuple[str, ...]
    problems: tuple[str, ...]
    last_collections: tuple[CollectionSummary, ...]

    def __str__(self) -> str:
        return self.describe()

    def describe(self) -> str:
        """A few lines for people (also what ``str()`` gives, so ``print(status)`` reads well)."""
        lines = [f"warehouse: {self.path} ({_size(self.size_bytes, self.exists)})"]
        if self.wal_bytes:
            lines.append(f"  write-ahead log: {self.wal_bytes} bytes (replayed on next open)")
        published = _size(self.published_bytes, self.published_exists)
        if self.published_at is not None:
            published += f", published {self.published_at:%Y-%m-%d %H:%M:%S} UTC"
        lines.append(f"published copy (analysts): {self.published_path} ({published})")
        lines.append(f"read from: {self.read_from}")
        if self.writer:
            lines.append(f"writer: {self.writer}")
        lines.append(f"migrations applied: {', '.join(m.name for m in self.applied) or 'none'}")
        lines.append(f"migrations pending: {', '.join(self.pending) or 'none'}")
        lines.extend(f"problem: {p}" for p in self.problems)
        for c in self.last_collections:
            when = f"{c.started_at:%Y-%m-%d %H:%M:%S}"
            lines.append(f"  {when} {c.source}/{c.cluster} {c.status} {c.collection_id}")
        return "\n".join(lines)


def _size(size: int, exists: bool) -> str:
    return f"{size} bytes" if exists else "missing"


class Warehouse:
    """One annex warehouse: the live DuckDB file, its writer lock and its published copy."""

    def __init__(
        self,
        settings: WarehouseSettings,
        *,
        migrations_dir: Path | None = None,
        marts_dir: Path | None = None,
    ):
        self.settings = settings
        self.path = Path(settings.path)
        self.published_path = Path(settings.resolved_published_path)
        self.migrations_dir = migrations_dir
        self.marts_dir = marts_dir or default_marts_dir(migrations_dir)
        """The living ``marts`` view files (``warehouse/marts``; beside a test's migrations)."""

    # -- writing ------------------------------------------------------------------------------

    def migrate(self, on_wait: OnWait | None = None) -> list[str]:
        """Apply pending migrations (under the writer lock); return the names applied."""
        with self._lock(on_wait):
            con = self._connect_live()
            try:
                return self._migrate(con)
            finally:
                con.close()

    @contextmanager
    def writer(self, on_wait: OnWait | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """The writer lock plus a read-write connection to the migrated live file.

        The connection is closed (and DuckDB checkpoints) when the block ends; call
        ``publish()`` afterwards to show the change to analysts.
        """
        with self._lock(on_wait):
            con = self._connect_live()
            try:
                self._migrate(con)
                yield con
            finally:
                con.close()

    def publish(self, on_wait: OnWait | None = None) -> Path:
        """Checkpoint the live file and atomically replace the published copy with it.

        If an earlier publish failed, ``on_wait`` (or the log) is told that the copy was stale
        and is up to date again; if this one fails, the copy stays as it was (never half
        written) and is recorded as stale, and the ``WarehouseError`` says why (a
        ``WarehouseSpaceError``, with the room needed, when a disk is full).
        """
        with self._lock(on_wait):
            return self._publish_locked(on_wait)

    # -- reading ------------------------------------------------------------------------------

    @contextmanager
    def reader(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only connection to the published copy.

        DuckDB shares one open database per file within a process: a reader opened while
        another reader of this process is still open sees that reader's (possibly older) copy.
        Long-lived processes should keep readers short.
        """
        if not self.published_path.exists():
            raise WarehouseError(
                f"there is no published copy of the warehouse at {self.published_path} yet",
                hint="run a collection (it publishes when it succeeds) or "
                "`annex warehouse publish`",
            )
        con = open_duckdb(
            self.published_path,
            read_only=True,
            live=self.path,
            memory_limit=self.settings.memory_limit,
        )
        try:
            yield con
        finally:
            con.close()

    def status(self) -> WarehouseStatus:
        """Applied and pending migrations, file sizes and the last collections; never waits.

        Reads the live file when no writer holds it (holding the lock meanwhile, so a writer
        that starts now waits instead of failing), else the published copy.
        """
        problems: list[str] = []
        try:
            migrations = discover_migrations(self.migrations_dir)
        except MigrationError as exc:
            problems.append(str(exc))
            migrations = []
        applied: list[AppliedMigration] = []
        pending = [m.name for m in migrations]
        collections: list[CollectionSummary] = []
        writer: str | None = None
        stale = read_stale(self.path)
        if stale is not None:
            problems.append(
                stale.describe(self.published_path) + "; the next publish (`annex warehouse "
                "publish`, or any collection) replaces it"
            )
        if not self.path.exists():
            read_from = f"none: no warehouse at {self.path} yet (the first write creates it)"
        else:
            with try_writer_lock(self.path) as free:
                if free:
                    source, read_from = self.path, "live"
                else:
                    writer = read_holder(self.path) or "another process"
                    source = self.published_path
                    read_from = "published (a writer holds the live file)"
                if source.exists():
                    con = open_duckdb(
                        source,
                        read_only=True,
                        live=self.path,
                        memory_limit=self.settings.memory_limit,
                    )
                    try:
                        applied = applied_migrations(con)
                        try:
                            pending = [
                                m.name for m in check_applied(migrations, applied, str(source))
                            ]
                        except MigrationError as exc:
                            problems.append(str(exc))
                        collections = _recent_collections(con)
                    finally:
                        con.close()
                else:
                    read_from = "none: a writer holds the live file and nothing is published yet"
        return WarehouseStatus(
            path=self.path,
            exists=self.path.exists(),
            size_bytes=_file_size(self.path),
            wal_bytes=_file_size(self.path.with_name(self.path.name + ".wal")),
            published_path=self.published_path,
            published_exists=self.published_path.exists(),
            published_bytes=_file_size(self.published_path),
            published_at=_mtime(self.published_path),
            read_from=read_from,
            writer=writer,
            applied=tuple(applied),
            pending=tuple(pending),
            problems=tuple(problems),
            last_collections=tuple(collections),
        )

    # -- internals shared with load.py ----------------------------------------------------------

    def migrations(self) -> list[Migration]:
        """The migration files this warehouse uses, in order."""
        return discover_migrations(self.migrations_dir)

    @contextmanager
    def _lock(self, on_wait: OnWait | None) -> Iterator[None]:
        # (writer_lock refuses a second hold by the same thread, whichever Warehouse asks)
        with writer_lock(
            self.path, timeout_seconds=self.settings.lock_timeout_seconds, on_wait=on_wait
        ):
            yield

    def _connect_live(self) -> duckdb.DuckDBPyConnection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return open_duckdb(
            self.path,
            read_only=False,
            live=self.path,
            published=self.published_path,
            memory_limit=self.settings.memory_limit,
        )

    def _migrate(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        try:
            applied = apply_migrations(
                con, self.migrations(), str(self.path), discover_mart_views(self.marts_dir)
            )
            if applied and table_exists(con, "audit", "compactions"):
                from warehouse.compaction import archive_views  # it imports this module

                archive_views(con)  # a migration may change a table the view reads
            return applied
        except (MigrationError, duckdb.Error) as exc:
            if not out_of_space(exc):
                raise
            raise WarehouseSpaceError(
                f"cannot migrate the warehouse {self.path}: its disk is full ({exc})",
                hint=(
                    f"the migration was rolled back and nothing was loaded; the evidence already "
                    f"there is safe; free {room_needed(self.path.parent, None)} and rerun"
                ),
            ) from exc

    def _publish_locked(self, on_wait: OnWait | None = None) -> Path:
        """Checkpoint and copy, keeping ``<live>.unpublished`` true (see ``warehouse.publish``)."""
        if not self.path.exists():
            raise WarehouseError(
                f"cannot publish: there is no warehouse at {self.path}",
                hint="run `annex warehouse migrate` or a collection first",
            )
        stale = read_stale(self.path)
        since = stale.since if stale else datetime.now(UTC)
        mark_stale(self.path, _PUBLISH_UNFINISHED, since=since)
        try:
            self._checkpoint_for_publish()
            published = copy_atomically(self.path, self.published_path)
        except BaseException as exc:
            reason = exc.message if isinstance(exc, WarehouseError) else str(exc)
            mark_stale(self.path, reason or type(exc).__name__, since=since)
            if stale is not None and isinstance(exc, WarehouseError):
                earlier = "" if stale.reason == reason else f" (earlier: {stale.reason})"
                exc.message += (
                    f"; the copy has been stale since {since:%Y-%m-%d %H:%M:%S} UTC{earlier}"
                )
            raise
        clear_stale(self.path)
        if stale is not None:
            notify(
                on_wait,
                f"the analysts' copy {self.published_path} is up to date again; it had been "
                f"stale since {since:%Y-%m-%d %H:%M:%S} UTC because: {stale.reason}",
            )
        return published

    def _checkpoint_for_publish(self) -> None:
        """Move the write-ahead log into the live file, which alone is then copied."""
        con = self._connect_live()
        try:
            con.execute("CHECKPOINT")
        except duckdb.Error as exc:
            if not out_of_space(exc):
                raise
            wal = self.path.with_name(self.path.name + ".wal")
            raise WarehouseSpaceError(
                f"cannot checkpoint the live warehouse {self.path} before publishing: its disk "
                f"is full ({exc})",
                hint=(
                    f"everything committed is safe in {self.path} and its write-ahead log "
                    f"{wal}, which DuckDB replays when it next opens it; free "
                    f"{room_needed(self.path.parent, file_bytes(wal))}, then run `annex "
                    "warehouse publish`"
                ),
            ) from exc
        finally:
            con.close()


_PUBLISH_UNFINISHED = "a publish did not finish (killed, or the machine stopped)"
"""What ``<live>.unpublished`` says while a publish runs, which is true if it never ends."""


def notify(on_wait: OnWait | None, message: str) -> None:
    """Tell the person running annex something they should act on or know, through the
    caller's ``on_wait`` (the CLI prints it) or else the log, as the writer lock does."""
    if on_wait is not None:
        on_wait(message)
    else:
        log.warning(message)


def _limit_memory(con: duckdb.DuckDBPyConnection, memory_limit: str) -> None:
    try:
        con.execute("SET memory_limit = ?", [memory_limit])
    except duckdb.Error as exc:
        con.close()
        raise WarehouseError(
            f"DuckDB refuses warehouse.memory_limit = {memory_limit!r}: {exc}",
            hint=f"give {MEMORY_LIMIT_FORMS}",
        ) from exc


_PID = re.compile(r"\(PID (\d+)\)")


def open_duckdb(
    path: Path,
    *,
    read_only: bool,
    live: Path,
    published: Path | None = None,
    memory_limit: str | None = None,
) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect``, with DuckDB's errors turned into ``WarehouseError`` that say what to do.

    ``memory_limit`` (``warehouse.memory_limit``) caps the DuckDB database of the file: past it
    DuckDB spills to disk. It holds for every connection of this process to that file.

    DuckDB's lock error is never retried: it means a process outside annex's writer lock (an
    analyst's session on the live file, a stray script) has the file, and waiting would hang a
    scheduled run for as long as that session stays open.
    """
    try:
        con = duckdb.connect(str(path), read_only=read_only)
        # No progress bar: annex prints its own, and DuckDB's would interleave with it.
        con.execute("SET enable_progress_bar = false")
        if memory_limit is not None:
            _limit_memory(con, memory_limit)
        return con
    except duckdb.IOException as exc:
        text = str(exc)
        if out_of_space(exc):
            raise WarehouseSpaceError(
                f"cannot open warehouse file {path}: its disk is full ({text})",
                hint=(
                    f"nothing was changed; free {room_needed(path.parent, None)} (DuckDB "
                    "writes its write-ahead log and checkpoints there) and rerun"
                ),
            ) from exc
        if "lock" not in text.lower():
            raise WarehouseError(f"cannot open warehouse file {path}: {text}") from exc
        match = _PID.search(text)
        who = f"process {match.group(1)}" if match else "another process"
        if path == live:
            copy = published or "the published copy"
            raise WarehouseError(
                f"the live warehouse {path} is open in {who} outside annex's writer lock "
                "(an analyst's session or a script opened the live file)",
                hint=(
                    f"close that session; analysts must open the published copy {copy} "
                    "(`annex sql`, or `duckdb -readonly` on it), never the live file"
                ),
            ) from exc
        raise WarehouseError(
            f"the published copy {path} is open read-write in {who}",
            hint="open the published copy read-only only (`duckdb -readonly`, `annex sql`)",
        ) from exc
    except duckdb.Error as exc:
        raise WarehouseError(
            f"cannot open warehouse file {path}: {exc}",
            hint="check it is a DuckDB 2.x database file (DuckDB 1.x cannot read it)",
        ) from exc


def _recent_collections(con: duckdb.DuckDBPyConnection) -> list[CollectionSummary]:
    if not table_exists(con, "audit", "collections"):
        return []
    rows = con.execute(
        "SELECT collection_id, source, cluster, status, started_at, finished_at, "
        "rejected_count, error FROM audit.collections "
        "ORDER BY started_at DESC, collection_id LIMIT ?",
        [RECENT_COLLECTIONS],
    ).fetchall()
    return [CollectionSummary(*row) for row in rows]


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _mtime(path: Path) -> datetime | None:
    try:
        stamp = path.stat().st_mtime
    except OSError:
        return None
    return datetime.fromtimestamp(stamp, UTC).replace(tzinfo=None)

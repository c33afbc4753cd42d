"""Loading one collection into the warehouse, all or nothing.

A collector yields ``(table, pyarrow.RecordBatch)`` pairs lazily (pages from the network). The
engine stages the batches into a temp table ``stage_<table>`` with ``INSERT ... BY NAME SELECT *
FROM <arrow>`` (no Python row loops; a few batches are grouped per INSERT, see ``staging.py``,
so memory stays bounded by that small buffer), then runs the source model's merge SQL, which
moves staged rows into ``raw``/``core``/``audit`` tables. Tables a model appends directly
(``SourceModel.appends``: telemetry series and samples) go to its sink instead, which streams
them into their table through one open ``INSERT`` on the same connection and transaction.
Staging, sinks, merge, rejected records and the final ``succeeded`` row of ``audit.collections``
commit in ONE transaction: a failure, Ctrl-C or ``kill -9`` leaves no partial rows, only the
collection's audit row (``failed``/``interrupted``, or ``running`` after a kill until the next
writer marks it ``interrupted``).
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from importlib import metadata
from pathlib import Path

import duckdb
import pyarrow as pa

from annex.errors import CollectionError, WarehouseError, WarehouseSpaceError
from warehouse.connection import OnWait, Warehouse, notify
from warehouse.migrate import utc_now
from warehouse.publish import mark_stale, read_stale
from warehouse.publish_failures import publish_failed_collections_locked
from warehouse.space import out_of_space, room_needed
from warehouse.staging import SinkFactory, Stager
from warehouse.transaction import roll_back

log = logging.getLogger(__name__)

RAW_CAP_BYTES = 64 * 1024
"""``audit.rejected.raw`` keeps at most this many bytes of a rejected record."""

REJECTED_TABLE = "rejected"
"""The table name under which collectors yield rejected records (to ``stage_rejected``)."""

_STAGE_REJECTED = """
CREATE TEMP TABLE stage_rejected (
    locator VARCHAR, reason_code VARCHAR, message VARCHAR, raw BLOB
)
"""

_TABLE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class SourceModel:
    """How one evidence source lands in the warehouse.

    ``staging_sql`` creates one ``CREATE TEMP TABLE stage_<name> (...)`` per table the
    collector yields (columns matched BY NAME; the batch may omit nullable columns).
    ``merge_sql`` (';'-separated statements) runs in the collection's transaction after all
    batches are staged; it reads ``stage_*`` and writes ``raw``/``core``/``audit`` tables, using
    ``getvariable('collection_id' | 'cluster' | 'source' | 'collected_at')``. It may also insert
    into ``stage_rejected``: those rows are moved to ``audit.rejected`` after it. Loading the
    same input twice must change nothing: that is the merge's job (natural keys, hashes).
    """

    source: str
    staging_sql: str
    merge_sql: str
    appends: Mapping[str, SinkFactory] = field(default_factory=dict)
    """Tables appended straight into the warehouse inside the collection's transaction instead
    of being staged and copied: name -> factory called once per collection with the connection,
    returning the ``Sink`` that receives that table's batches (``staging.Sink``; a factory
    listed under several names makes one sink for all of them). For very large, append-only
    tables (telemetry samples), where a second copy would double the load time. The sink owns
    idempotency; its ``close()`` runs after the last batch, when every staged table is
    complete, before the merge SQL."""
    staging_threads: int | None = None
    """DuckDB's threads while the batches are staged (None: the warehouse's own), put back
    before the merge SQL. DuckDB's ``threads`` belongs to the whole database instance, so this
    also holds for other connections of this process meanwhile. For a collector that keeps the
    cores busy itself while its batches go in."""


@dataclass(frozen=True)
class CollectionResult:
    """What happened to one collection (also its row in ``audit.collections``)."""

    collection_id: str
    source: str
    cluster: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    row_counts: dict[str, int] = field(default_factory=dict)
    rejected_count: int = 0
    error: str | None = None


def load_collection(
    wh: Warehouse,
    model: SourceModel,
    *,
    cluster: str,
    batches: Iterable[tuple[str, pa.RecordBatch]],
    on_progress: Callable[[str, int], None] | None = None,
    on_wait: OnWait | None = None,
    publish: bool = True,
    collected_at: Callable[[], datetime | None] | None = None,
) -> CollectionResult:
    """Load one collection atomically and return its result; on failure record it and re-raise.

    ``batches`` is consumed lazily, once. ``collected_at`` (called before the merge, once the
    batches are staged) gives the moment to stamp the rows with by the source's own clock
    (the Kubernetes API server's ``Date``), None for the local clock when loading began
    (``started_at``); it may raise ``CollectionError`` to refuse the collection. A source
    moment before the last recorded collection of the same source and cluster is refused:
    history is recorded in order. ``on_progress(table, rows_so_far)`` is called after
    each batch. With ``publish`` the analysts' copy is refreshed after the commit.

    A full disk is a ``WarehouseSpaceError`` that says whether the collection was loaded:
    while loading or at its ``COMMIT``, it was not (nothing of it is kept; a rerun loads it
    once); after the commit (checkpoint, publish), it was, and only the analysts' copy is
    behind, which this run and the next say, and the next publish repairs.
    """
    with wh._lock(on_wait):
        stale = read_stale(wh.path)
        if stale is not None:
            then = (
                "this collection publishes it again when it is loaded"
                if publish
                else "the next publish (`annex warehouse publish`, or a collection that "
                "publishes) replaces it"
            )
            notify(on_wait, f"{stale.describe(wh.published_path)}; {then}")
        collection_id = str(uuid.uuid4())
        what = _describe(collection_id, model.source, cluster)
        tally = _Tally()
        failure_to_publish = False
        try:
            con = wh._connect_live()
        except WarehouseError as exc:
            if out_of_space(exc):
                raise _not_loaded_for_space(wh, what, exc, tally, _NO_AUDIT_ROW) from exc
            raise
        try:
            started_at = utc_now()
            try:
                wh._migrate(con)
                _mark_interrupted(con)
                con.execute(
                    "INSERT INTO audit.collections "
                    "(collection_id, source, cluster, started_at, status, annex_version) "
                    "VALUES (?, ?, ?, ?, 'running', ?)",
                    [collection_id, model.source, cluster, started_at, _annex_version()],
                )
            except (WarehouseError, duckdb.Error) as exc:
                if out_of_space(exc):
                    raise _not_loaded_for_space(wh, what, exc, tally, _NO_AUDIT_ROW) from exc
                raise
            try:
                row_counts, rejected = _load_in_transaction(
                    con,
                    model,
                    collection_id,
                    cluster,
                    started_at,
                    batches,
                    on_progress,
                    tally,
                    collected_at,
                )
            except BaseException as exc:
                interrupted = isinstance(exc, KeyboardInterrupt | duckdb.InterruptException)
                status = "interrupted" if interrupted else "failed"
                recorded = _record_failure(con, collection_id, status, exc)
                # (on a full disk the copy would fail too, and take room the rerun needs)
                failure_to_publish = recorded and not interrupted and not out_of_space(exc)
                audit = (
                    "its row in audit.collections says failed"
                    if recorded
                    else "its row in audit.collections could not be updated (no room) and the "
                    "next run marks it interrupted"
                )
                if out_of_space(exc) and not isinstance(exc, WarehouseSpaceError):
                    raise _not_loaded_for_space(wh, what, exc, tally, audit) from exc
                raise
            try:
                finished_at = _finished_at(con, collection_id)
                _drop_staging(con)
                checkpoint_started = time.perf_counter()
                con.execute("CHECKPOINT")
                log.debug("checkpoint took %.3f s", time.perf_counter() - checkpoint_started)
            except duckdb.Error as exc:
                raise _loaded_but_not_checkpointed(wh, what, exc, publish) from exc
        finally:
            con.close()
            if failure_to_publish:
                _publish_failure(wh)
        if publish:
            try:
                publish_started = time.perf_counter()
                wh._publish_locked(on_wait)
                log.debug("publish took %.3f s", time.perf_counter() - publish_started)
            except WarehouseError as exc:
                raise type(exc)(
                    f"{what} was loaded, but publishing the analysts' copy failed: {exc.message}",
                    hint=exc.hint,
                ) from exc
    return CollectionResult(
        collection_id=collection_id,
        source=model.source,
        cluster=cluster,
        status="succeeded",
        started_at=started_at,
        finished_at=finished_at,
        row_counts=row_counts,
        rejected_count=rejected,
        error=None,
    )


def _stamp(
    con: duckdb.DuckDBPyConnection,
    source: str,
    cluster: str,
    collection_id: str,
    started_at: datetime,
    collected_at: Callable[[], datetime | None] | None,
) -> None:
    """Set the collection's ``collected_at`` before the merge reads it: the source's moment
    when it gives one (recorded in its ``audit.collections`` row), else ``started_at`` by the
    local clock (the row's ``collected_at`` stays NULL: it is ``started_at``)."""
    moment = collected_at() if collected_at is not None else None
    if moment is not None:
        row = con.execute(
            "SELECT max(coalesce(collected_at, started_at)) FROM audit.collections "
            "WHERE source = ? AND cluster = ? AND status = 'succeeded'",
            [source, cluster],
        ).fetchone()
        last = row[0] if row else None
        if last is not None and moment < last:
            raise CollectionError(
                f"the {source} source's clock says this snapshot of {cluster} was taken at "
                f"{moment:%Y-%m-%d %H:%M:%S} UTC, before the last recorded one "
                f"({last:%Y-%m-%d %H:%M:%S} UTC); annex records a cluster's history in order",
                hint="check the API server's clock (its Date header): it went back in time; "
                "collect again once it is right",
            )
        con.execute("SET VARIABLE collected_at = CAST(? AS TIMESTAMP)", [moment])
        con.execute(
            "UPDATE audit.collections SET collected_at = ?, collected_at_clock = 'api_server' "
            "WHERE collection_id = ?",
            [moment, collection_id],
        )


def _load_in_transaction(
    con: duckdb.DuckDBPyConnection,
    model: SourceModel,
    collection_id: str,
    cluster: str,
    started_at: datetime,
    batches: Iterable[tuple[str, pa.RecordBatch]],
    on_progress: Callable[[str, int], None] | None,
    tally: _Tally,
    collected_at: Callable[[], datetime | None] | None = None,
) -> tuple[dict[str, int], int]:
    """Stage, merge, keep rejected records and mark the collection succeeded: one transaction.

    A ``COMMIT`` that fails is reported as such (``_commit_failed``), never as the ``ROLLBACK``
    that follows it, and says whether the collection landed.
    """
    # SET VARIABLE is not transactional in DuckDB (a ROLLBACK keeps the value), which is fine:
    # every collection sets all four before its merge runs.
    con.execute("SET VARIABLE collection_id = ?", [collection_id])
    con.execute("SET VARIABLE cluster = ?", [cluster])
    con.execute("SET VARIABLE source = ?", [model.source])
    con.execute("SET VARIABLE collected_at = CAST(? AS TIMESTAMP)", [started_at])
    con.execute("BEGIN")
    try:
        con.execute(_STAGE_REJECTED)
        _run_statements(con, model.staging_sql, f"staging SQL of the {model.source} model")
        stage_started = time.perf_counter()
        with _threads(con, model.staging_threads):
            row_counts = _stage(con, model, batches, on_progress, tally)
        log.debug("collecting and staging took %.3f s", time.perf_counter() - stage_started)
        _stamp(con, model.source, cluster, collection_id, started_at, collected_at)
        merge_started = time.perf_counter()
        _run_statements(con, model.merge_sql, f"merge SQL of the {model.source} model")
        log.debug("merge took %.3f s", time.perf_counter() - merge_started)
        rejected = _keep_rejected(con)
        con.execute(
            "UPDATE audit.collections SET status = 'succeeded', finished_at = ?, "
            "row_counts = map(?::VARCHAR[], ?::BIGINT[]), rejected_count = ? "
            "WHERE collection_id = ?",
            [
                utc_now(),
                list(row_counts),
                list(row_counts.values()),
                rejected,
                collection_id,
            ],
        )
    except BaseException as exc:
        roll_back(con, exc)
        raise
    commit_started = time.perf_counter()
    try:
        con.execute("COMMIT")
    except BaseException as exc:
        roll_back(con, exc)
        if isinstance(exc, duckdb.Error):
            what = _describe(collection_id, model.source, cluster)
            raise _commit_failed(con, collection_id, what, exc, tally) from exc
        raise
    log.debug("commit took %.3f s", time.perf_counter() - commit_started)
    return row_counts, rejected


@dataclass
class _Tally:
    """How much of a collection was staged, kept outside ``_stage`` so that a failure (a full
    disk) can still say how large the collection was getting."""

    arrow_bytes: int = 0


def _commit_failed(
    con: duckdb.DuckDBPyConnection,
    collection_id: str,
    what: str,
    exc: duckdb.Error,
    tally: _Tally,
) -> WarehouseError:
    """The error of a ``COMMIT`` that failed: its own text (and any ``ROLLBACK`` failure after
    it, noted by ``roll_back``), and whether the collection landed, read back from
    ``audit.collections`` on the same connection."""
    notes = "".join(f"; {note}" for note in getattr(exc, "__notes__", ()))
    landed = _landed(con, collection_id)
    if landed is True:
        message = f"{what} was loaded, though its COMMIT reported an error: {exc}{notes}"
        safe = "audit.collections says it succeeded; check it with `annex warehouse status`"
    elif landed is False:
        message = f"{what} was NOT loaded: its COMMIT failed: {exc}{notes}"
        safe = "nothing of it was kept: the warehouse is consistent and holds what it held before"
    else:
        message = (
            f"{what}: its COMMIT failed ({exc}{notes}), and whether it landed could not be "
            "read back"
        )
        safe = (
            "`annex warehouse status` shows it (succeeded, or not kept); the warehouse is "
            "consistent either way"
        )
    if out_of_space(exc):
        room = room_needed(_database_folder(con), tally.arrow_bytes)
        return WarehouseSpaceError(
            message,
            hint=f"{safe}; free {room} and rerun the collection: loading the same input again "
            "adds it once",
        )
    return WarehouseError(
        message, hint=f"{safe}; a rerun is safe (loading the same input again adds it once)"
    )


def _database_folder(con: duckdb.DuckDBPyConnection) -> Path:
    """The folder of the file ``con`` writes (where a full disk must be freed)."""
    try:
        row = con.execute(
            "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchone()
    except duckdb.Error:
        row = None
    return Path(row[0]).parent if row and row[0] else Path.cwd()


def _landed(con: duckdb.DuckDBPyConnection, collection_id: str) -> bool | None:
    """Whether ``collection_id`` committed, as this connection now sees it (None: unknown)."""
    try:
        row = con.execute(
            "SELECT status FROM audit.collections WHERE collection_id = ?", [collection_id]
        ).fetchone()
    except duckdb.Error:
        return None
    return row is not None and row[0] == "succeeded"


_NO_AUDIT_ROW = "the disk was full before even its row in audit.collections could be written"


def _not_loaded_for_space(
    wh: Warehouse, what: str, exc: BaseException, tally: _Tally, audit: str
) -> WarehouseSpaceError:
    """A collection that failed because the warehouse's disk is full: not loaded, and why
    (``audit``: what its row in ``audit.collections`` says)."""
    staged = tally.arrow_bytes
    return WarehouseSpaceError(
        f"{what} was NOT loaded: the disk of the warehouse {wh.path} is full ({_first_line(exc)})",
        hint=(
            "nothing of it was kept: the warehouse holds what it held before, and the analysts' "
            f"copy is unchanged; {audit}. Free {room_needed(wh.path.parent, staged)} "
            + (
                f"(the collection had staged {staged:,} bytes of Arrow data when it stopped) "
                if staged
                else ""
            )
            + "and rerun the collection: loading the same input again adds it once"
        ),
    )


def _loaded_but_not_checkpointed(
    wh: Warehouse, what: str, exc: duckdb.Error, publish: bool
) -> WarehouseError:
    """The collection committed, but the checkpoint after it failed: it is safe in the
    write-ahead log, and the analysts' copy is behind until a publish succeeds."""
    if publish:
        mark_stale(wh.path, f"{what} was loaded, but its checkpoint failed: {_first_line(exc)}")
    wal = wh.path.with_name(wh.path.name + ".wal")
    error_type = WarehouseSpaceError if out_of_space(exc) else WarehouseError
    room = f"free {room_needed(wh.path.parent, None)}, then " if out_of_space(exc) else ""
    return error_type(
        f"{what} was loaded (committed), but the checkpoint after it failed: {_first_line(exc)}",
        hint=(
            f"the collection is safe in the write-ahead log {wal}, which DuckDB replays when it "
            f"next opens the warehouse; the analysts' copy does not show it yet: {room}run "
            "`annex warehouse publish`"
        ),
    )


def _describe(collection_id: str, source: str, cluster: str) -> str:
    """How messages name a collection: ``collection <id> (<source>, <cluster>)``."""
    return f"collection {collection_id} ({source}, {cluster})"


def _first_line(exc: BaseException) -> str:
    text = exc.message if isinstance(exc, WarehouseError | CollectionError) else str(exc)
    return (text or type(exc).__name__).splitlines()[0]


@contextlib.contextmanager
def _threads(con: duckdb.DuckDBPyConnection, count: int | None) -> Iterator[None]:
    """DuckDB's ``threads`` set to ``count`` for the block (None: unchanged), then put back,
    also when the block fails."""
    if count is None:
        yield
        return
    row = con.execute("SELECT current_setting('threads')").fetchone()
    restore = f"SET threads = {int(row[0])}" if row is not None else "RESET threads"
    con.execute(f"SET threads = {int(count)}")
    try:
        yield
    except BaseException:
        with contextlib.suppress(duckdb.Error):  # (a broken connection: the block's error counts)
            con.execute(restore)
        raise
    con.execute(restore)


def _stage(
    con: duckdb.DuckDBPyConnection,
    model: SourceModel,
    batches: Iterable[tuple[str, pa.RecordBatch]],
    on_progress: Callable[[str, int], None] | None,
    tally: _Tally,
) -> dict[str, int]:
    staged = _staging_tables(con) | set(model.appends)
    stager = Stager(con, model.source, model.appends)
    row_counts: dict[str, int] = {}
    iterator = iter(batches)
    try:
        for index, (table, batch) in enumerate(iterator, start=1):
            if table not in staged:
                known = ", ".join(sorted(staged))
                raise CollectionError(
                    f"the {model.source} collector yielded table {table!r} (batch {index}), "
                    f"but the {model.source} model stages no such table (known: {known})",
                    hint=f"add CREATE TEMP TABLE stage_{table} to the model's staging_sql, "
                    "or fix the collector's table name",
                )
            stager.add(table, batch, index)
            tally.arrow_bytes += batch.nbytes
            row_counts[table] = row_counts.get(table, 0) + batch.num_rows
            if on_progress is not None:
                on_progress(table, row_counts[table])
        stager.finish()
    except BaseException:
        stager.abort()  # before the caller's ROLLBACK: no sink statement may still be running
        raise
    finally:
        # A generator left suspended by an error would close its HTTP response only when
        # garbage-collected; close it now (a no-op once it is exhausted).
        close = getattr(iterator, "close", None)
        if close is not None:
            close()
    return row_counts


def _staging_tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE temporary AND starts_with(table_name, "
        "'stage_')"
    ).fetchall()
    return {name.removeprefix("stage_") for (name,) in rows if _TABLE_NAME.match(name)}


def _keep_rejected(con: duckdb.DuckDBPyConnection) -> int:
    count = con.execute(
        "INSERT INTO audit.rejected (collection_id, source, cluster, locator, reason_code, "
        "message, raw, raw_truncated, raw_bytes, rejected_at) "
        "SELECT getvariable('collection_id'), getvariable('source'), getvariable('cluster'), "
        "locator, coalesce(reason_code, 'unspecified'), message, "
        "CASE WHEN octet_length(raw) > $cap THEN raw[1:$cap] ELSE raw END, "
        "coalesce(octet_length(raw) > $cap, false), octet_length(raw), "
        "getvariable('collected_at') FROM stage_rejected",
        {"cap": RAW_CAP_BYTES},
    ).fetchone()
    return int(count[0]) if count else 0


def _run_statements(con: duckdb.DuckDBPyConnection, sql: str, what: str) -> None:
    """Run ';'-separated statements one by one, so an error names the statement that failed."""
    for number, statement in enumerate(con.extract_statements(sql), start=1):
        started, cpu_started = time.perf_counter(), time.process_time()
        try:
            con.execute(statement)
            log.debug(
                "%s statement %d took %.3f s (CPU %.3f s): %s",
                what,
                number,
                time.perf_counter() - started,
                time.process_time() - cpu_started,
                statement.query.strip().splitlines()[0][:80],
            )
        except duckdb.Error as exc:
            first_line = statement.query.strip().splitlines()[0][:120]
            raise WarehouseError(
                f"{what} failed at statement {number} ({first_line}): {exc}",
                hint="fix the model's SQL; nothing of this collection was kept",
            ) from exc


def _mark_interrupted(con: duckdb.DuckDBPyConnection) -> None:
    """Collections still ``running`` were killed: we hold the writer lock, so none runs."""
    rows = con.execute(
        "UPDATE audit.collections SET status = 'interrupted', error = ? "
        "WHERE status = 'running' RETURNING collection_id",
        [
            "the process ended while loading (killed or crashed), or its failure could not be "
            "recorded (a full disk); nothing of it was kept. "
            f"Noticed by the next writer at {utc_now():%Y-%m-%d %H:%M:%S} UTC"
        ],
    ).fetchall()
    for (collection_id,) in rows:
        log.warning("collection %s was interrupted by a crash or kill", collection_id)


def _record_failure(
    con: duckdb.DuckDBPyConnection, collection_id: str, status: str, exc: BaseException
) -> bool:
    """Record why the collection failed, in its own transaction after the rollback; return
    whether that worked (on a full disk it cannot). A collection whose ``COMMIT`` landed
    despite an error keeps its ``succeeded``."""
    message = str(exc) or type(exc).__name__
    try:
        con.execute(
            "UPDATE audit.collections SET status = ?, finished_at = ?, error = ? "
            "WHERE collection_id = ? AND status = 'running'",
            [status, utc_now(), message, collection_id],
        )
    except duckdb.Error as record_error:
        log.error("could not record failure of collection %s: %s", collection_id, record_error)
        return False
    return True


def _publish_failure(wh: Warehouse) -> None:
    """Show the failed collection in the analysts' copy (``warehouse.publish_failures``), its
    data left as last published; a failure to do so is logged, never raised over the
    collection's own error."""
    try:
        publish_failed_collections_locked(wh)
    except Exception as exc:  # the collection's own error is the one to raise
        log.warning("%s", exc)


def _finished_at(con: duckdb.DuckDBPyConnection, collection_id: str) -> datetime | None:
    row = con.execute(
        "SELECT finished_at FROM audit.collections WHERE collection_id = ?", [collection_id]
    ).fetchone()
    return row[0] if row else None


def _drop_staging(con: duckdb.DuckDBPyConnection) -> None:
    """Free the staging tables (and any temp tables the merge made) before the checkpoint."""
    rows = con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()
    for (name,) in rows:
        con.execute(f'DROP TABLE temp."{name}"')


def _annex_version() -> str:
    try:
        return metadata.version("annex")
    except metadata.PackageNotFoundError:
        return "unknown"

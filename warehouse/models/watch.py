"""Watch mode in the warehouse: each batch of watch events committed with its resume point.

Tables (``migrations/0009_watch.sql``, ``0028``): ``core.watch_cursors`` (per cluster and
resource, the resourceVersion every change up to which is committed), ``core.watched_objects``,
``core.watched_gpu_allocations`` (exact GPU intervals, device-plugin and DRA), the watch's DRA
state (``core.watched_resource_claims``, ``core.watched_dra_devices``, ``core.watched_dra_pods``:
a pod, its claims and their devices arrive in three streams, committed in any order, and the
commit that completes a holding opens it: ``watch_dra_allocations.sql``),
``audit.kubernetes_requests`` (each list and watch request's latency), the views
``marts.watched_gpu_allocations`` and ``marts.kubernetes_api_latency``.

``commit_batch`` writes one batch in ONE transaction: the objects, the intervals they open or
close, the requests, rejected records and the cursor move together. A crash before the commit
leaves the cursor where it was, so the restarted watch receives the same changes again; after
it, the changes are in and the watch resumes past them: no loss, no duplicates. The caller
holds the writer lock only around this call (``Warehouse.writer()``), so scheduled collections
and analysts' publishes are never starved by a watch that runs for weeks.

``commit_snapshot`` does the same for a list (the first one, and each relist after a 410),
which is streamed: its pages are staged one by one into temp tables inside the transaction,
and only after the last one do the same statements as for a batch (``watch_objects.sql``,
``watch_allocations.sql``) run over the whole list, find what vanished, and move the cursor;
then the transaction commits. Python holds one page at a time, never the cluster (75,000 pods
held at once cost about 1.6 GiB); DuckDB holds the staged rows, and spills them to disk when
they outgrow its memory limit. A failure anywhere in the list (a crash, the API server giving
up, the warehouse) rolls everything back: state and cursor stay as they were, and the next run
lists again.

The writer lock is held only to stage and commit the list, never while it downloads: the
collector fetches the whole list to a local spool first (``HistorySnapshot.prefetch``), so an
API server that stalls or trickles delays only the watch, not the other writers. Its continue
tokens are all spent before the lock is asked for, so waiting for the lock cannot expire them.

This module reads the batch's attributes (``WatchBatch``), not the collector's classes: the
warehouse does not import collectors.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from annex.errors import WarehouseError
from warehouse.load import RAW_CAP_BYTES
from warehouse.migrate import utc_now
from warehouse.staging import ARROW_NAME, execute_over_arrow
from warehouse.transaction import atomic

_HERE = Path(__file__).parent
_OBJECTS_SQL = (_HERE / "watch_objects.sql").read_text(encoding="utf-8")
_ALLOCATIONS_SQL = (_HERE / "watch_allocations.sql").read_text(encoding="utf-8")
_DRA_SQL = {
    name: (_HERE / f"watch_dra_{name}.sql").read_text(encoding="utf-8")
    for name in ("pods", "claims", "slices", "allocations")
}

_DECODED = {"pods": "watch_pods", "claims": "watch_claims", "slices": "watch_slices"}
"""Batch attribute -> the relation its decoded rows are read as (by the SQL files), in the
order they are merged: pods first (their own device-plugin rows), then DRA's state."""

WATCH_SOURCE = "kubernetes-watch"
"""``audit.rejected.source`` of records watch mode could not use."""


class WatchBatch(Protocol):
    """What ``commit_batch`` needs of a batch (``collectors.kubernetes.history.HistoryBatch``)."""

    resource: str
    api_path: str
    kind: str
    resource_version: str
    objects: pa.RecordBatch
    pods: pa.RecordBatch | None
    claims: pa.RecordBatch | None
    slices: pa.RecordBatch | None
    rejected: pa.RecordBatch | None
    requests: pa.RecordBatch
    lists: pa.RecordBatch | None
    via: str
    events: int


@dataclass(frozen=True)
class Cursor:
    """One row of ``core.watch_cursors``."""

    resource: str
    resource_version: str
    listed_via: str
    relists: int
    events: int
    commits: int
    committed_at: datetime


class SnapshotPage(Protocol):
    """One page of a streamed list (``collectors.kubernetes.history.SnapshotPage``)."""

    objects: pa.RecordBatch
    pods: pa.RecordBatch | None
    claims: pa.RecordBatch | None
    slices: pa.RecordBatch | None
    rejected: pa.RecordBatch | None
    first: bool
    """True on the first page of a list attempt: what was staged before is dropped."""


class WatchSnapshot(Protocol):
    """What ``commit_snapshot`` needs of a list (``collectors.kubernetes.history.HistorySnapshot``).

    ``resource_version``, ``events``, ``requests``, ``lists`` and ``via`` are read only after
    ``pages()`` has ended.
    """

    resource: str
    api_path: str
    kind: str
    resource_version: str
    requests: pa.RecordBatch
    lists: pa.RecordBatch | None
    via: str
    events: int

    def pages(self) -> Generator[SnapshotPage, None, None]: ...


_STAGED = {
    "objects": "watch_objects",
    "pods": "watch_pods",
    "claims": "watch_claims",
    "slices": "watch_slices",
    "rejected": "watch_snapshot_rejected",
}
"""Page attribute -> the temp table it is staged in (the names the SQL files read)."""

_STAGED_ROWS = {
    "pods": (
        "SELECT pod_uid, namespace, pod_name, job_name, node_name, gpu_requests, category, "
        "priority_class_name, scheduled_at, started_at, creation_timestamp, finished_at, "
        "deletion_timestamp, phase, deleted, observed_at, resource_claims FROM {page} "
        "WHERE len(gpu_requests) > 0 OR resource_claims > 0"
    ),
}
"""What a list stages of each page, where not all of it: of pods, the columns
``watch_allocations.sql`` and ``watch_dra_pods.sql`` read, and only pods that request GPUs or
name ResourceClaims (only they open or close an allocation; a pod's requests and claims cannot
change). A list's staged rows are the one thing that grows with the cluster, so they stay
lean."""


class CursorMoved(WarehouseError):
    """The cursor is not where this process left it: another watch writes the same cluster."""


def load_cursors(con: duckdb.DuckDBPyConnection, cluster: str) -> dict[str, Cursor]:
    """The committed resume points of ``cluster``, by resource."""
    rows = con.execute(
        "SELECT resource, resource_version, listed_via, relists, events, commits, committed_at "
        "FROM core.watch_cursors WHERE cluster = ?",
        [cluster],
    ).fetchall()
    return {row[0]: Cursor(*row) for row in rows}


def commit_batch(
    con: duckdb.DuckDBPyConnection,
    batch: WatchBatch,
    *,
    cluster: str,
    session_id: str,
    expected: str | None = None,
    committed_at: datetime | None = None,
) -> Cursor:
    """Write ``batch`` and move the cursor to its resourceVersion, atomically.

    ``expected``: the cursor this process last committed for the resource (None: do not
    check). A different stored cursor means a second ``annex watch`` writes the same cluster;
    that raises ``CursorMoved`` and writes nothing (one replica only: see the Deployment).
    """
    now = committed_at or utc_now()
    with atomic(con):
        previous = _expected_cursor(con, cluster, batch.resource, expected)
        _set_variables(con, cluster, batch, now)
        con.register("watch_objects", pa.Table.from_batches([batch.objects]))
        try:
            _run(con, _OBJECTS_SQL, "watch objects")
            for attribute, relation in _DECODED.items():
                rows: pa.RecordBatch | None = getattr(batch, attribute, None)
                if rows is None:
                    continue
                con.register(relation, pa.Table.from_batches([rows]))
                try:
                    _merge_decoded(con, attribute, "watch", dra=_may_change_dra(attribute, rows))
                finally:
                    con.unregister(relation)
        finally:
            con.unregister("watch_objects")
        _insert_requests(con, cluster, session_id, batch.requests)
        if batch.lists is not None:
            _insert_lists(con, cluster, session_id, batch.lists)
        if batch.rejected is not None and batch.rejected.num_rows:
            con.register("watch_rejected", pa.Table.from_batches([batch.rejected]))
            try:
                _insert_rejected(con, cluster, session_id, "watch_rejected", now)
            finally:
                con.unregister("watch_rejected")
        return _move_cursor(con, cluster, session_id, batch, previous, now)


def commit_snapshot(
    con: duckdb.DuckDBPyConnection,
    snapshot: WatchSnapshot,
    *,
    cluster: str,
    session_id: str,
    expected: str | None = None,
    committed_at: datetime | None = None,
) -> Cursor:
    """Stream ``snapshot`` (a list) into the warehouse and move the cursor to its
    resourceVersion, all in ONE transaction that commits after the last page.

    Each page is staged as it arrives (a page that starts a restarted list first drops what
    was staged); then what the list lacks is closed and the rest upserted, exactly as
    ``commit_batch`` does for a list held whole. ``expected`` as for ``commit_batch``. Whatever
    ``pages()`` raises (the API server failing, a 410 the list could not recover from) rolls
    the transaction back and propagates: nothing of the list is kept.
    """
    now = committed_at or utc_now()
    with atomic(con):
        previous = _expected_cursor(con, cluster, snapshot.resource, expected)
        try:
            _stage_pages(con, snapshot.pages())
            _set_variables(con, cluster, snapshot, now)
            _run(con, _OBJECTS_SQL, "snapshot objects")
            for attribute in _DECODED:
                if _staged(con, attribute):
                    _merge_decoded(con, attribute, "snapshot")
            _insert_requests(con, cluster, session_id, snapshot.requests)
            if snapshot.lists is not None:
                _insert_lists(con, cluster, session_id, snapshot.lists)
            if _staged(con, "rejected"):
                _insert_rejected(con, cluster, session_id, _STAGED["rejected"], now)
            return _move_cursor(con, cluster, session_id, snapshot, previous, now)
        finally:
            for table in _STAGED.values():  # after a failure the rollback drops them anyway
                with contextlib.suppress(duckdb.Error):
                    con.execute(f"DROP TABLE IF EXISTS temp.{table}")


def _merge_decoded(
    con: duckdb.DuckDBPyConnection, attribute: str, what: str, *, dra: bool = True
) -> None:
    """The statements that read one kind of decoded rows (``_DECODED``; registered or staged
    under its relation's name): pods' own device-plugin intervals and, unless ``dra`` is
    false, the DRA state they, claims or slices feed, then the DRA holdings that state now
    completes or ends."""
    if attribute == "pods":
        _run(con, _ALLOCATIONS_SQL, f"{what} allocations")
    if dra:
        _run(con, _DRA_SQL[attribute], f"{what} DRA {attribute}")
        _run(con, _DRA_SQL["allocations"], f"{what} DRA allocations")


def _may_change_dra(attribute: str, rows: pa.RecordBatch) -> bool:
    """Whether a batch of changes can change a DRA holding: claims and slices always; pods
    only when one of them names ResourceClaims (a pod's claims are fixed at its creation, its
    DELETED event still names them; other pods are not in core.watched_dra_pods). Most pod
    batches skip the DRA statements (about 60 ms per 500 pods on 2 shared cores). A list
    always runs them: what it lacks is gone."""
    if attribute != "pods":
        return True
    claims = rows.column(rows.schema.get_field_index("resource_claims"))
    return rows.num_rows > 0 and (pc.max(claims).as_py() or 0) > 0


def _stage_pages(
    con: duckdb.DuckDBPyConnection, pages: Generator[SnapshotPage, None, None]
) -> None:
    """Insert each page's rows into the staging temp tables (made from the first page's
    schemas; the objects table always exists, even for an empty list)."""
    with contextlib.closing(pages):  # ends the fetch (and its connection) on any failure
        for page in pages:
            if page.first:
                for table in _STAGED.values():
                    con.execute(f"DROP TABLE IF EXISTS temp.{table}")
            for attribute, table in _STAGED.items():
                batch: pa.RecordBatch | None = getattr(page, attribute, None)
                if batch is None:
                    continue
                rows = _STAGED_ROWS.get(attribute, "SELECT * FROM {page}").format(page=ARROW_NAME)
                data = pa.Table.from_batches([batch])
                # (not a registered view: those stay in memory until the commit, every page)
                execute_over_arrow(
                    con, f"CREATE TEMP TABLE IF NOT EXISTS {table} AS {rows} LIMIT 0", data
                )
                execute_over_arrow(con, f"INSERT INTO temp.{table} {rows}", data)
    if not _staged(con, "objects"):
        raise WarehouseError(
            "the list yielded no first page, so nothing says what exists",
            hint="this is a bug in the collector: a list always starts with a first page",
        )


def _staged(con: duckdb.DuckDBPyConnection, attribute: str) -> bool:
    """Whether the staging table of ``attribute`` exists (a page had such rows or schema)."""
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE temporary AND table_name = ?",
        [_STAGED[attribute]],
    ).fetchall()
    return bool(rows)


def _expected_cursor(
    con: duckdb.DuckDBPyConnection, cluster: str, resource: str, expected: str | None
) -> Cursor | None:
    """The stored cursor; ``CursorMoved`` when it is not where this process left it."""
    previous = _cursor(con, cluster, resource)
    if expected is not None and previous is not None and previous.resource_version != expected:
        raise CursorMoved(
            f"the {resource} watch cursor of cluster {cluster} is at "
            f"{previous.resource_version}, not {expected} where this process left it",
            hint="another `annex watch` writes this cluster; run exactly one per cluster",
        )
    return previous


def _cursor(con: duckdb.DuckDBPyConnection, cluster: str, resource: str) -> Cursor | None:
    row = con.execute(
        "SELECT resource, resource_version, listed_via, relists, events, commits, committed_at "
        "FROM core.watch_cursors WHERE cluster = ? AND resource = ?",
        [cluster, resource],
    ).fetchone()
    return Cursor(*row) if row else None


def _set_variables(
    con: duckdb.DuckDBPyConnection,
    cluster: str,
    batch: WatchBatch | WatchSnapshot,
    now: datetime,
) -> None:
    for name, value in (
        ("cluster", cluster),
        ("resource", batch.resource),
        ("kind", batch.kind),
        ("resource_version", batch.resource_version),
    ):
        con.execute(f"SET VARIABLE {name} = ?", [value])
    con.execute("SET VARIABLE committed_at = CAST(? AS TIMESTAMP)", [now])


def _run(con: duckdb.DuckDBPyConnection, sql: str, what: str) -> None:
    for number, statement in enumerate(con.extract_statements(sql), start=1):
        try:
            con.execute(statement)
        except duckdb.Error as exc:
            first = statement.query.strip().splitlines()[0][:120]
            raise WarehouseError(
                f"{what} failed at statement {number} ({first}): {exc}",
                hint="nothing of this batch was kept; the watch resumes from the last cursor",
            ) from exc


def _insert_requests(
    con: duckdb.DuckDBPyConnection, cluster: str, session_id: str, requests: pa.RecordBatch
) -> None:
    if not requests.num_rows:
        return
    con.register("watch_requests", pa.Table.from_batches([requests]))
    try:
        con.execute(
            "INSERT INTO audit.kubernetes_requests BY NAME "
            "SELECT ? AS session_id, ? AS cluster, * FROM watch_requests",
            [session_id, cluster],
        )
    finally:
        con.unregister("watch_requests")


def _insert_lists(
    con: duckdb.DuckDBPyConnection, cluster: str, session_id: str, lists: pa.RecordBatch
) -> None:
    con.register("watch_lists", pa.Table.from_batches([lists]))
    try:
        con.execute(
            "INSERT INTO audit.kubernetes_lists BY NAME "
            "SELECT ? AS collection_id, ? AS cluster, * FROM watch_lists",
            [session_id, cluster],
        )
    finally:
        con.unregister("watch_lists")


def _insert_rejected(
    con: duckdb.DuckDBPyConnection,
    cluster: str,
    session_id: str,
    relation: str,
    now: datetime,
) -> None:
    """Copy the rejected records in ``relation`` (a registered batch or the staged table)."""
    con.execute(
        "INSERT INTO audit.rejected (collection_id, source, cluster, locator, reason_code, "
        "message, raw, raw_truncated, raw_bytes, rejected_at) "
        "SELECT $session, $source, $cluster, locator, coalesce(reason_code, 'unspecified'), "
        "message, CASE WHEN octet_length(raw) > $cap THEN raw[1:$cap] ELSE raw END, "
        "coalesce(octet_length(raw) > $cap, false), octet_length(raw), "
        f"CAST($now AS TIMESTAMP) FROM {relation}",
        {
            "session": session_id,
            "source": WATCH_SOURCE,
            "cluster": cluster,
            "cap": RAW_CAP_BYTES,
            "now": now,
        },
    )


def _move_cursor(
    con: duckdb.DuckDBPyConnection,
    cluster: str,
    session_id: str,
    batch: WatchBatch | WatchSnapshot,
    previous: Cursor | None,
    now: datetime,
) -> Cursor:
    snapshot = batch.kind == "snapshot"
    if previous is None:
        cursor = Cursor(batch.resource, batch.resource_version, batch.via, 0, batch.events, 1, now)
        listed_at = now
    else:
        cursor = Cursor(
            batch.resource,
            batch.resource_version,
            batch.via if snapshot else previous.listed_via,
            previous.relists + (1 if snapshot else 0),
            previous.events + (0 if snapshot else batch.events),
            previous.commits + 1,
            now,
        )
        listed_at = None if not snapshot else now
    con.execute(
        "INSERT INTO core.watch_cursors (cluster, resource, api_path, resource_version, "
        "listed_at, listed_via, committed_at, relists, events, commits, session_id) "
        "VALUES ($cluster, $resource, $path, $rv, CAST($listed AS TIMESTAMP), $via, "
        "CAST($now AS TIMESTAMP), $relists, $events, $commits, $session) "
        "ON CONFLICT (cluster, resource) DO UPDATE SET "
        "api_path = excluded.api_path, resource_version = excluded.resource_version, "
        "listed_at = coalesce(CAST($listed_new AS TIMESTAMP), watch_cursors.listed_at), "
        "listed_via = excluded.listed_via, committed_at = excluded.committed_at, "
        "relists = excluded.relists, events = excluded.events, commits = excluded.commits, "
        "session_id = excluded.session_id",
        {
            "cluster": cluster,
            "resource": batch.resource,
            "path": batch.api_path,
            "rv": batch.resource_version,
            "listed": listed_at or now,
            "listed_new": listed_at,
            "via": cursor.listed_via,
            "now": now,
            "relists": cursor.relists,
            "events": cursor.events,
            "commits": cursor.commits,
            "session": session_id,
        },
    )
    return cursor

"""Failed collections reach the analysts' copy; the data they see stays the last good data.

A collection that fails leaves only its row in ``audit.collections`` (``failed`` or
``interrupted``, with the error). A full publish would copy the whole live file, including
whatever an unpublished collection loaded before its blocking checks failed, so a failure is
never followed by one. Instead the failed rows alone are carried into the published copy: the
published file is copied beside itself, the rows it lacks are inserted into that copy's
``audit.collections``, and the copy replaces the published file atomically (``os.replace``, as
``warehouse.publish`` does). ``marts.collections`` (a view over ``audit.collections``) then
shows the failure to analysts, and every other table stays as last published.

Before anything was ever published, the copy starts from a freshly migrated, empty warehouse:
analysts see the failure and no data, which is what there is.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

import duckdb

from annex.errors import WarehouseError
from annex.settings import WarehouseSettings
from warehouse.connection import OnWait, Warehouse
from warehouse.lock import lock_path_for

log = logging.getLogger(__name__)

FAILED_STATUSES = ("failed", "interrupted")
"""Statuses of a collection that loaded nothing (``warehouse.load``)."""

_TMP_SUFFIX = ".failures.tmp"


def publish_failed_collections(wh: Warehouse, on_wait: OnWait | None = None) -> int:
    """Carry the live file's failed and interrupted collections into the published copy;
    return how many rows the copy gained or had corrected. Takes the writer lock."""
    with wh._lock(on_wait):
        return publish_failed_collections_locked(wh)


def publish_failed_collections_locked(wh: Warehouse) -> int:
    """``publish_failed_collections`` for a caller that already holds the writer lock."""
    if not wh.path.exists():
        return 0
    con = wh._connect_live()
    try:
        cursor = con.execute(
            "SELECT * FROM audit.collections WHERE status IN ? ORDER BY started_at",
            [list(FAILED_STATUSES)],
        )
        names = [d[0] for d in cursor.description or []]
        rows = cursor.fetchall()
    finally:
        con.close()
    if not rows:
        return 0
    published = wh.published_path
    published.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(
        dir=published.parent, prefix=f".{published.name}.", suffix=_TMP_SUFFIX
    )
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if published.exists():
            shutil.copyfile(published, tmp)
        else:
            tmp.unlink()
            Warehouse(
                WarehouseSettings(path=tmp),
                migrations_dir=wh.migrations_dir,
                marts_dir=wh.marts_dir,
            ).migrate()
        changed = _merge_rows(tmp, names, rows)
        if changed:
            os.chmod(tmp, 0o644)
            os.replace(tmp, published)
        return changed
    except (OSError, duckdb.Error) as exc:
        raise WarehouseError(
            f"could not add the failed collections to the analysts' copy {published}: {exc}",
            hint="the live warehouse has them; the next publish (`annex warehouse publish`, or "
            "a collection that succeeds) copies them too",
        ) from exc
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal"), lock_path_for(tmp)):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def _merge_rows(path: Path, names: list[str], rows: list[tuple[object, ...]]) -> int:
    """Insert the rows ``path`` lacks and correct those it has with another status (a
    ``running`` row the crash left); return how many changed."""
    con = duckdb.connect(str(path))
    try:
        described = con.execute("DESCRIBE audit.collections").fetchall()
        present = {row[0] for row in described}
        columns = [n for n in names if n in present]  # an older copy may lack a newer column
        picked = [[row[names.index(c)] for c in columns] for row in rows]
        statuses = dict(
            con.execute(
                "SELECT collection_id, status FROM audit.collections WHERE collection_id IN ?",
                [[row[names.index("collection_id")] for row in rows]],
            ).fetchall()
        )
        key_at, status_at = columns.index("collection_id"), columns.index("status")
        stale = [r for r in picked if r[key_at] in statuses and statuses[r[key_at]] != r[status_at]]
        new = [r for r in picked if r[key_at] not in statuses]
        if not stale and not new:
            return 0
        others = [c for c in columns if c != "collection_id"]
        assignments = ", ".join(f'"{c}" = ?' for c in others)
        quoted = ", ".join(f'"{c}"' for c in columns)
        marks = ", ".join("?" for _ in columns)
        con.execute("BEGIN")
        for row in stale:
            values = [row[columns.index(c)] for c in others]
            con.execute(
                f"UPDATE audit.collections SET {assignments} WHERE collection_id = ?",
                [*values, row[key_at]],
            )
        if new:
            con.executemany(f"INSERT INTO audit.collections ({quoted}) VALUES ({marks})", new)
        con.execute("COMMIT")
        con.execute("CHECKPOINT")
        return len(stale) + len(new)
    finally:
        con.close()

"""Publishing the analysts' read-only copy of the warehouse.

DuckDB allows one read-write process or many read-only ones, never both, so an analyst's open
session on the live file would block the next scheduled write. Analysts therefore open a copy
(``WarehouseSettings.resolved_published_path``, by default ``annex.published.duckdb`` beside
``annex.duckdb``) with ``annex sql`` or ``duckdb -readonly``. The copy is written to a temp file
in the same folder and renamed over the old one with ``os.replace`` (atomic on POSIX), so a
reader sees the previous copy or the new one, never half of one; readers that have the old copy
open keep reading it (the old inode) until they reconnect.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

from annex.errors import WarehouseError

log = logging.getLogger(__name__)


def copy_atomically(live: Path, published: Path) -> Path:
    """Copy the closed, checkpointed ``live`` file to ``published`` atomically.

    The caller holds the writer lock and has closed every connection to ``live`` after a
    ``CHECKPOINT``, so the file alone (without a ``.wal``) is the whole warehouse.
    """
    wal = live.with_name(live.name + ".wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise WarehouseError(
            f"cannot publish {live}: its write-ahead log {wal} still holds changes",
            hint="open the warehouse for writing once (annex warehouse migrate) so DuckDB "
            "replays it",
        )
    published.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(
        dir=published.parent, prefix=f".{published.name}.", suffix=".tmp"
    )
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, live.open("rb") as src:
            shutil.copyfileobj(src, out, length=8 * 1024 * 1024)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        # A .wal beside the copy can only come from someone opening the copy read-write; DuckDB
        # would replay it into the new copy, so it must go (the copy is read-only by contract).
        stale_wal = published.with_name(published.name + ".wal")
        if stale_wal.exists():
            log.warning("removing %s: the published copy must only be opened read-only", stale_wal)
            stale_wal.unlink()
        os.replace(tmp, published)
        _fsync_dir(published.parent)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise WarehouseError(
                f"cannot publish {live} to {published}: {exc}",
                hint=(
                    "check free space and permissions in that folder; the live warehouse and "
                    "the previous published copy are intact; then run `annex warehouse publish`"
                ),
            ) from exc
        raise
    return published


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

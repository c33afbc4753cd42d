"""Publishing the analysts' read-only copy of the warehouse.

DuckDB allows one read-write process or many read-only ones, never both, so an analyst's open
session on the live file would block the next scheduled write. Analysts therefore open a copy
(``WarehouseSettings.resolved_published_path``, by default ``annex.published.duckdb`` beside
``annex.duckdb``) with ``annex sql`` or ``duckdb -readonly``. The copy is written to a temp file
in the same folder and renamed over the old one with ``os.replace`` (atomic on POSIX), so a
reader sees the previous copy or the new one, never half of one; readers that have the old copy
open keep reading it (the old inode) until they reconnect.

A publish that fails (a full disk, most often: the new copy needs as much room as the live file
while the old copy still exists) or never finishes (killed) leaves the live warehouse complete
and the old copy in place, but the copy is then *stale*: analysts miss what was loaded since.
``<live>.unpublished`` says so until a publish succeeds. It is written before each copy starts
(an empty file needs no data block, so it lands even on a full disk, and a killed publish
leaves it too), rewritten with the reason when the copy fails, and removed once the new copy
is in place; every later writer reads it, says the copy is stale and why, and publishes again.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from annex.errors import WarehouseError, WarehouseSpaceError
from warehouse.space import file_bytes, out_of_space, room_needed

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
    _remove_unfinished_copies(published)
    fd, tmp_name = tempfile.mkstemp(
        dir=published.parent, prefix=f".{published.name}.", suffix=_TMP_SUFFIX
    )
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, live.open("rb") as src:
            _copy_contents(src, out)
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
            raise _copy_failed(live, published, exc) from exc
        raise
    return published


def _copy_failed(live: Path, published: Path, exc: OSError) -> WarehouseError:
    """The error of a copy that failed: a full disk says how much room is needed where."""
    previous = _previous_copy(published)
    if out_of_space(exc):
        return WarehouseSpaceError(
            f"the analysts' copy {published} could not be replaced: no room for the new copy "
            f"in {published.parent} ({exc.strerror or exc})",
            hint=(
                f"the copy needs {room_needed(published.parent, file_bytes(live))}; the evidence "
                f"is safe in the live warehouse {live}, and {previous}; free that space (or set "
                "warehouse.published_path on a disk with room), then run `annex warehouse "
                "publish`: the next collection also publishes again, and says the copy is stale "
                "until one does"
            ),
        )
    return WarehouseError(
        f"cannot publish {live} to {published}: {exc}",
        hint=(
            f"check permissions in {published.parent}; the live warehouse is intact and "
            f"{previous}; then run `annex warehouse publish`"
        ),
    )


def _previous_copy(published: Path) -> str:
    try:
        stamp = datetime.fromtimestamp(published.stat().st_mtime, UTC)
    except OSError:
        return "there is no published copy yet (analysts have nothing to read until one is made)"
    return f"analysts keep reading the previous copy (published {stamp:%Y-%m-%d %H:%M:%S} UTC)"


STALE_SUFFIX = ".unpublished"


def stale_marker_path(live: Path) -> Path:
    """``annex.duckdb`` -> ``annex.duckdb.unpublished``: present while the analysts' copy lacks
    changes the live warehouse has (a publish failed or was killed). Beside the live file, like
    the writer lock, whichever disk the published copy is on."""
    return live.with_name(live.name + STALE_SUFFIX)


@dataclass(frozen=True)
class StaleCopy:
    """Why the published copy is behind the live warehouse, and since when."""

    since: datetime
    """When the first publish that did not succeed started (UTC)."""
    reason: str
    """Why the last publish did not succeed."""

    def describe(self, published: Path) -> str:
        return (
            f"the analysts' copy {published} is stale since {self.since:%Y-%m-%d %H:%M:%S} UTC "
            f"(it lacks what was loaded since): {self.reason}"
        )


def read_stale(live: Path) -> StaleCopy | None:
    """The stale copy's note, or None when the last publish succeeded."""
    marker = stale_marker_path(live)
    try:
        text = marker.read_text(encoding="utf-8")
        written = datetime.fromtimestamp(marker.stat().st_mtime, UTC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return StaleCopy(since=datetime.now(UTC), reason=f"{marker} cannot be read: {exc}")
    try:
        note = json.loads(text)
        return StaleCopy(since=datetime.fromisoformat(note["since"]), reason=str(note["reason"]))
    except (ValueError, KeyError, TypeError):
        # Empty: there was no room even for the note (or the writer was killed writing it).
        return StaleCopy(
            since=written,
            reason="a publish did not finish (no room was left to record why)",
        )


def mark_stale(live: Path, reason: str, *, since: datetime | None = None) -> None:
    """Record that the published copy is behind the live warehouse, and why; never raises (on
    a full disk the file is created empty, which still says "stale")."""
    marker = stale_marker_path(live)
    note = json.dumps({"since": (since or datetime.now(UTC)).isoformat(), "reason": reason})
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as exc:
        log.error("cannot record that the published copy is stale in %s: %s", marker, exc)
        return
    try:
        os.write(fd, note.encode("utf-8"))
    except OSError as exc:
        log.warning("%s is left empty (%s): it still says the published copy is stale", marker, exc)
    finally:
        os.close(fd)


def clear_stale(live: Path) -> None:
    """The published copy is complete again."""
    with contextlib.suppress(FileNotFoundError):
        stale_marker_path(live).unlink()


_TMP_SUFFIX = ".tmp"


def _remove_unfinished_copies(published: Path) -> None:
    """Delete the temp copies of publishes that were killed mid-copy (SIGKILL, an OOM kill, a
    lost node: no ``except`` ran). Each is as large as the warehouse, and nothing else would
    ever remove them. Only the writer lock's holder publishes, so none of them is in use."""
    for leftover in published.parent.glob(f".{glob.escape(published.name)}.*{_TMP_SUFFIX}"):
        with contextlib.suppress(FileNotFoundError):
            size = leftover.stat().st_size
            leftover.unlink()
            log.warning(
                "removed %s (%d bytes): the copy of a publish that did not finish", leftover, size
            )


_NO_KERNEL_COPY = frozenset(
    {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM}
)
"""How ``copy_file_range`` says it cannot copy between these two files at all (another file
system on an older kernel, a file system or sandbox without it): then the bytes are copied
through user space instead."""


def _copy_contents(src: BinaryIO, dst: BinaryIO) -> None:
    """Copy the whole of ``src`` (at offset 0) into the empty ``dst``.

    In the kernel where it can (``copy_file_range``): the bytes never pass through Python, and
    on a file system with shared extents (XFS, Btrfs) the copy is a reflink that takes no time
    or space until the live file changes. A warehouse of a year's history is tens of GB and is
    published after every collection, so this is the publish's cost. Where the kernel cannot
    (``_NO_KERNEL_COPY`` on the first call), 8 MiB reads and writes. Any other error (a full
    disk) is raised: the caller discards the partial copy.
    """
    kernel_copy = getattr(os, "copy_file_range", None)  # Linux; not on macOS
    size = os.fstat(src.fileno()).st_size
    copied = 0
    try:
        if kernel_copy is None:
            raise OSError(errno.ENOSYS, "copy_file_range is not available")
        while copied < size:
            step = kernel_copy(src.fileno(), dst.fileno(), size - copied)
            if step == 0:
                raise OSError(errno.EIO, f"{src.name} ended after {copied} of {size} bytes")
            copied += step
    except OSError as exc:
        if copied or exc.errno not in _NO_KERNEL_COPY:
            raise
        shutil.copyfileobj(src, dst, length=8 * 1024 * 1024)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

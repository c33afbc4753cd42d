"""Spool folders, shared by the pushed evidence sources (attestations, lineage events).

An intake writes each request's file atomically into ``<spool_dir>/incoming`` before it
answers; producers may also drop files into watched folders. A collection lists what waits
(cheaply: a directory listing, so a sensor can ask every minute), reads it, and moves the files
it used up to an archive only after its warehouse transaction committed: a crash in between
leaves them waiting, and the next collection's load is idempotent. An intake killed mid-write
leaves a hidden temporary file, never a half file; the next intake to start deletes it.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)


def compact_time(moment: datetime) -> str:
    """``20261102T081001123456Z``: sortable, file-name safe, microseconds kept."""
    return utc(moment).strftime("%Y%m%dT%H%M%S%fZ")


def utc(moment: datetime) -> datetime:
    """Aware times are converted to UTC; naive ones are taken as UTC already (DESIGN §2)."""
    return moment.astimezone(UTC) if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class UnreadableFile(Exception):
    """A waiting file annex will not read. ``keep``: it stays where it is and is tried again by
    the next collection (a problem an operator can fix: access rights, not a regular file);
    otherwise it is used up (rejected with the reason, never retried)."""

    def __init__(self, message: str, *, keep: bool) -> None:
        super().__init__(message)
        self.keep = keep


def open_waiting_file(path: Path, *, link_advice: str = "") -> IO[bytes]:
    """Open a regular file of a spool or watched folder for reading, without following a link
    (a link could make annex read, and archive, a file nobody submitted) and without blocking
    on a FIFO. ``FileNotFoundError`` if it vanished; ``UnreadableFile`` otherwise, with what to
    do (``link_advice`` is added to a link's reason)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnreadableFile(
                f"{path} is a symbolic link: annex never follows links in its spool or "
                "watched folders" + (f"; {link_advice}" if link_advice else ""),
                keep=False,
            ) from None
        raise UnreadableFile(
            f"{path} cannot be opened ({exc.strerror or exc}); it stays there and is tried "
            "again by the next collection: give annex read and write access to it",
            keep=True,
        ) from None
    handle = os.fdopen(descriptor, "rb")
    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
        handle.close()
        raise UnreadableFile(f"{path} is not a regular file", keep=True)
    return handle


ABANDONED_AFTER_SECONDS = 3600.0
"""Age past which a temporary file of ``write_atomically`` is one nobody writes any more (a
write takes milliseconds; another intake sharing the folder may be writing a younger one)."""
_TEMPORARY = re.compile(r"\..+\.\d+\.\d+\.tmp")


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees all of it or nothing, even after a
    crash: a hidden temporary file in the same folder, fsync, rename, fsync of the folder."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)  # the rename too must survive a crash
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def remove_abandoned_writes(
    folder: Path, *, older_than_seconds: float = ABANDONED_AFTER_SECONDS
) -> int:
    """Delete the temporary files that ``write_atomically`` left in ``folder`` when its process
    was killed between writing and renaming (an OOM kill, a lost node: no ``except`` ran), once
    they are ``older_than_seconds`` old; return how many. Such a request was never answered, so
    its producer sends it again: the file holds nothing that is not elsewhere, and nothing else
    would ever remove it. An intake calls this when it starts, which is when a killed one
    restarts."""
    removed = 0
    cutoff = time.time() - older_than_seconds
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return 0  # nothing written yet (or no folder at all: the first write will say so)
    except OSError as exc:
        log.warning("cannot list %s: %s", folder, exc.strerror or exc)
        return 0
    for entry in entries:
        if not _TEMPORARY.fullmatch(entry.name):
            continue
        try:
            if not entry.is_file(follow_symlinks=False) or entry.stat().st_mtime > cutoff:
                continue
            os.unlink(entry.path)
        except FileNotFoundError:
            continue
        except OSError as exc:  # never stops an intake from starting
            log.warning("cannot remove %s: %s", entry.path, exc.strerror or exc)
            continue
        removed += 1
    if removed:
        log.warning(
            "removed %d unfinished spool writes from %s (older than %.0f s)",
            removed,
            folder,
            older_than_seconds,
        )
    return removed


# --- what waits ------------------------------------------------------------------------------


def waiting_files(
    incoming: Path,
    spool_suffix: str,
    watch_dirs: Iterable[Path],
    watch_suffixes: tuple[str, ...],
) -> Iterator[tuple[Path, str]]:
    """``(path, 'intake' | 'file')`` of every file waiting, without opening any: the intake's
    files in ``incoming`` (by name, so by arrival), then every file under each watched folder.
    Hidden entries (an intake's temporary files among them) are skipped, links never
    followed."""
    for name in sorted(_names(incoming, spool_suffix)):
        yield incoming / name, "intake"
    for folder in watch_dirs:
        for relative in sorted(_walk(folder, watch_suffixes)):
            yield folder / relative, "file"


def _names(folder: Path, suffix: str) -> Iterator[str]:
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.endswith(suffix) and not entry.name.startswith("."):
                    yield entry.name
    except FileNotFoundError:
        return
    except OSError as exc:
        log.warning("cannot list %s: %s", folder, exc.strerror or exc)


def _walk(folder: Path, suffixes: tuple[str, ...]) -> Iterator[str]:
    for root, dirs, files in os.walk(folder, onerror=_walk_error):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        base = Path(root).relative_to(folder)
        for name in files:
            if name.endswith(suffixes) and not name.startswith("."):
                yield str(base / name) if base != Path(".") else name


def _walk_error(exc: OSError) -> None:
    if not isinstance(exc, FileNotFoundError):
        log.warning("cannot list %s: %s", exc.filename, exc.strerror or exc)


# --- archiving --------------------------------------------------------------------------------


@dataclass
class ArchiveOutcome:
    archived: int = 0
    failed: list[tuple[Path, str]] = field(default_factory=list)
    """(file, why) of files left in place; the next collection reads them again (its load is
    idempotent)."""


def archive_files(moves: Iterable[tuple[Path, Path]]) -> ArchiveOutcome:
    """Move each ``(source, destination)``; a source already gone whose destination exists
    counts as archived. Never raises for one file: failures are listed."""
    outcome = ArchiveOutcome()
    folders: set[Path] = set()
    for source, destination in moves:
        try:
            destination.parent.mkdir(parents=True, exist_ok=True)
            _move(source, destination)
        except FileNotFoundError:
            if destination.exists():
                outcome.archived += 1
            else:
                outcome.failed.append((source, "the file vanished before it was archived"))
            continue
        except OSError as exc:
            outcome.failed.append((source, exc.strerror or str(exc)))
            log.warning("cannot archive %s to %s: %s", source, destination, exc)
            continue
        outcome.archived += 1
        folders.update((source.parent, destination.parent))
    for folder in folders:
        _fsync_folder(folder)
    return outcome


def _move(source: Path, destination: Path) -> None:
    try:
        os.replace(source, destination)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        # Another file system (a watched volume): copy under a hidden name, then rename.
        temporary = destination.with_name(f".{destination.name}.{os.getpid()}.tmp")
        try:
            shutil.copyfile(source, temporary, follow_symlinks=False)
            with open(temporary, "rb") as handle:
                os.fsync(handle.fileno())
            os.replace(temporary, destination)
        finally:
            temporary.unlink(missing_ok=True)
        source.unlink()


def _fsync_folder(folder: Path) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)

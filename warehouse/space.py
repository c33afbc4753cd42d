"""Telling a full disk from other write failures, and saying how much room is needed where.

A full disk reaches annex in three forms: ``OSError`` (``ENOSPC``; ``EDQUOT`` for a quota;
``EFBIG`` past a file-size limit) from its own writes; DuckDB's ``IOException`` or
``TransactionException`` carrying the C library's text (``Could not write file "...": No space
left on device``, ``Failed to commit: ...``); and either of them wrapped by an annex error
(``raise ... from``). ``out_of_space`` looks through all of them, so each writer decides once
what a full disk means for what it was doing, and says so.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import duckdb

SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""The ``errno`` values that mean "no room to write": a full file system, a full quota, a file
past the process's size limit (``RLIMIT_FSIZE``)."""

_SPACE_TEXTS = tuple(os.strerror(code).lower() for code in sorted(SPACE_ERRNOS))
"""How DuckDB's messages spell them (it appends ``strerror``): "no space left on device",
"disk quota exceeded", "file too large"."""


def out_of_space(exc: BaseException) -> bool:
    """Whether ``exc``, or an error it was raised from or while handling, is a full disk."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in SPACE_ERRNOS:
            return True
        if isinstance(current, duckdb.Error):
            text = str(current).lower()
            if any(spelling in text for spelling in _SPACE_TEXTS):
                return True
        current = current.__cause__ or current.__context__
    return False


def free_bytes(folder: Path) -> int | None:
    """Bytes free to annex in ``folder`` (or its nearest existing parent); None if unknown."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            try:
                return shutil.disk_usage(candidate).free
            except OSError:
                return None
    return None


def file_bytes(path: Path) -> int:
    """Size of ``path``, 0 when it does not exist."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def human_bytes(count: int) -> str:
    """``123456789`` -> ``"117.7 MiB"``: sizes people compare with ``df -h``."""
    size = float(count)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{count} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def room_needed(folder: Path, needed: int | None) -> str:
    """``"at least 1.2 GiB in /srv/annex (0 bytes free now)"`` (or ``"space in ..."`` when the
    amount is unknown): the clause every out-of-space hint gives, after "free" or "needs", so
    the operator knows how much to free, and where."""
    free = free_bytes(folder)
    now = f" ({human_bytes(free)} free now)" if free is not None else ""
    amount = f"at least {human_bytes(needed)}" if needed else "space"
    return f"{amount} in {folder}{now}"

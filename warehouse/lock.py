"""The warehouse writer lock: one exclusive ``flock`` on ``<warehouse>.lock`` around every write.

DuckDB lets one process write a file at a time and fails at once (or, through Dagster's
resource, after ~100 s of retries) when another holds it. annex serialises its own writers
(CLI, Dagster, tests) *before* they open DuckDB, so a second writer waits politely and says
whom it waits for instead of crashing into DuckDB's lock. The lock file holds the holder's pid
and start time for that message. It is never deleted: deleting a flock'ed file lets two
processes lock two different inodes.

``flock`` is released by the kernel when the holder dies (even ``kill -9``), so there are no
stale locks to clean up.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from annex.errors import WarehouseError

log = logging.getLogger(__name__)

_HELD = threading.local()
"""The lock files this thread holds: a second ``writer_lock`` on one of them would wait for
itself (flock locks belong to open files, not processes) until its timeout."""

POLL_SECONDS = 0.1
"""How often a waiting writer tries the lock again (``LOCK_NB``): cheap, and short enough that
the next writer starts soon after the previous one finishes."""


def lock_path_for(warehouse_path: Path) -> Path:
    """The sidecar lock file of a warehouse: ``annex.duckdb`` → ``annex.duckdb.lock``."""
    return warehouse_path.with_name(warehouse_path.name + ".lock")


def read_holder(warehouse_path: Path) -> str:
    """Who holds (or last held) the writer lock, as written by the holder; "" if unknown."""
    try:
        return lock_path_for(warehouse_path).read_text(encoding="utf-8").strip()
    except OSError:
        return ""


@contextmanager
def writer_lock(
    warehouse_path: Path,
    *,
    timeout_seconds: float,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold the exclusive writer lock of ``warehouse_path`` for the ``with`` block.

    If another writer holds it, report that once through ``on_wait`` (or the log) and wait up to
    ``timeout_seconds``; then raise ``WarehouseError`` naming the holder.
    """
    lock_path = lock_path_for(warehouse_path)
    held: set[Path] = _HELD.__dict__.setdefault("paths", set())
    key = lock_path.absolute()
    if key in held:
        raise WarehouseError(
            f"this thread already holds the writer lock of {warehouse_path}: a second writer "
            "would wait for itself",
            hint="finish the `with wh.writer()` block before publishing or writing again, or "
            "pass its connection down",
        )
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _try_lock(fd):
            _wait_for_lock(fd, warehouse_path, timeout_seconds, on_wait)
        held.add(key)
        try:
            _write_holder(fd)
            yield
        finally:
            held.discard(key)
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def try_writer_lock(warehouse_path: Path) -> Iterator[bool]:
    """Take the writer lock if it is free, without waiting; yield whether we got it.

    For readers of the live file (``Warehouse.status``): holding the lock while they read keeps
    a writer from starting and then failing on DuckDB's own lock.
    """
    lock_path = lock_path_for(warehouse_path)
    if not lock_path.parent.is_dir():
        yield True
        return
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        acquired = _try_lock(fd)
        try:
            yield acquired
        finally:
            if acquired:
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _wait_for_lock(
    fd: int,
    warehouse_path: Path,
    timeout_seconds: float,
    on_wait: Callable[[str], None] | None,
) -> None:
    holder = read_holder(warehouse_path) or "another process"
    message = (
        f"waiting for the warehouse writer lock held by {holder} "
        f"(warehouse {warehouse_path}, waiting up to {timeout_seconds:g} s)"
    )
    if on_wait is not None:
        on_wait(message)
    else:
        log.warning(message)
    deadline = time.monotonic() + timeout_seconds
    while not _try_lock(fd):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            holder = read_holder(warehouse_path) or "another process"
            raise WarehouseError(
                f"gave up after {timeout_seconds:g} s waiting for the writer lock of "
                f"{warehouse_path}: it is held by {holder}",
                hint=(
                    "let that writer finish (check it is still making progress), or raise "
                    "warehouse.lock_timeout_seconds; never delete the .lock file"
                ),
            )
        time.sleep(min(POLL_SECONDS, remaining))


def _write_holder(fd: int) -> None:
    """Say who holds the lock, for the next writer's message. Only a courtesy: on a full disk
    the write fails, the lock is held all the same, and the writer goes on to meet (and
    report) the full disk where it matters, in the warehouse."""
    since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    command = " ".join(os.path.basename(arg) for arg in sys.argv[:2]) or "python"
    text = f"pid {os.getpid()} since {since} ({command})\n"
    os.ftruncate(fd, 0)
    try:
        os.pwrite(fd, text.encode("utf-8"), 0)
    except OSError as exc:
        log.warning("cannot write the writer lock's holder (%s); the lock is held", exc)

"""The writer lock: a second writer waits and says so, gives up after the timeout, and DuckDB's
own lock (someone opened the live file) is reported, never retried."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from annex.errors import WarehouseError
from annex.settings import WarehouseSettings
from tests.helpers.warehouse_things import THINGS_MODEL, make_migrations_dir, things_batches
from warehouse import Warehouse, load_collection
from warehouse.lock import lock_path_for, try_writer_lock, writer_lock


def _warehouse(tmp_path: Path, timeout: float = 30.0) -> Warehouse:
    return Warehouse(
        WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=timeout),
        migrations_dir=make_migrations_dir(tmp_path / "migrations"),
    )


@contextmanager
def _other_process(code: str) -> Iterator[subprocess.Popen[str]]:
    """Run ``code`` in another Python process until it prints 'ready'; stop it afterwards."""
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        proc.kill()
        proc.wait()


_HOLD_LOCK = """
    import sys
    from pathlib import Path
    from warehouse.lock import writer_lock
    with writer_lock(Path({path!r}), timeout_seconds=5):
        print("ready", flush=True)
        sys.stdin.readline()
"""


def test_second_writer_waits_reports_the_holder_then_proceeds(tmp_path: Path) -> None:
    wh = _warehouse(tmp_path)
    wh.migrate()
    messages: list[str] = []
    got_lock = threading.Event()

    def second_writer() -> None:
        with wh.writer(on_wait=messages.append) as con:
            con.execute("CREATE TABLE core.second (a INTEGER)")
            got_lock.set()

    with _other_process(_HOLD_LOCK.format(path=str(wh.path))) as holder:
        thread = threading.Thread(target=second_writer)
        thread.start()
        deadline = time.monotonic() + 10
        while not messages and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(messages) == 1
        assert f"pid {holder.pid} since" in messages[0]
        assert "waiting for the warehouse writer lock" in messages[0]
        assert not got_lock.is_set()
        assert holder.stdin is not None
        holder.stdin.write("go\n")
        holder.stdin.flush()
        thread.join(timeout=20)

    assert got_lock.is_set()
    assert lock_path_for(wh.path).read_text() == ""  # released: no stale holder


def test_writer_gives_up_after_the_timeout(tmp_path: Path) -> None:
    wh = _warehouse(tmp_path, timeout=0.3)
    with _other_process(_HOLD_LOCK.format(path=str(wh.path))) as holder:
        with pytest.raises(WarehouseError) as caught, wh.writer(on_wait=lambda m: None):
            pass
        assert f"pid {holder.pid}" in caught.value.message
        assert "lock_timeout_seconds" in (caught.value.hint or "")
    assert not wh.path.exists()


def test_writers_in_threads_take_turns(tmp_path: Path) -> None:
    wh = _warehouse(tmp_path)
    wh.migrate()
    inside = 0
    overlaps: list[int] = []
    waits: list[str] = []
    guard = threading.Lock()

    def writer() -> None:
        nonlocal inside
        with wh.writer(on_wait=waits.append):
            with guard:
                inside += 1
                overlaps.append(inside)
            time.sleep(0.05)
            with guard:
                inside -= 1

    threads = [threading.Thread(target=writer) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert overlaps == [1, 1, 1]
    assert waits  # at least one of them had to wait, and said so


def test_publishing_inside_a_writer_block_is_refused_not_deadlocked(tmp_path: Path) -> None:
    wh = _warehouse(tmp_path)
    with pytest.raises(WarehouseError, match="already holds the writer lock"), wh.writer():
        wh.publish()


def test_live_file_opened_by_an_analyst_is_reported_not_retried(tmp_path: Path) -> None:
    wh = _warehouse(tmp_path)
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10))
    analyst = f"""
        import sys, duckdb
        con = duckdb.connect({str(wh.path)!r}, read_only=True)
        print("ready", flush=True)
        sys.stdin.readline()
    """
    with _other_process(analyst) as proc:
        with pytest.raises(WarehouseError) as caught:
            load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10))
        assert f"process {proc.pid}" in caught.value.message
        assert str(wh.published_path) in (caught.value.hint or "")
        assert "-readonly" in (caught.value.hint or "")
    # Once the analyst is gone, writing works again.
    result = load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10))
    assert result.status == "succeeded"


def test_a_second_warehouse_on_the_same_file_in_one_thread_is_refused_not_deadlocked(
    tmp_path: Path,
) -> None:
    # two Warehouse objects, one file: the second writer would wait for the first until its
    # timeout and then blame the lock's holder (this very process)
    first, second = _warehouse(tmp_path, timeout=30), _warehouse(tmp_path, timeout=30)
    first.migrate()
    refused = pytest.raises(WarehouseError, match="already holds the writer lock")
    with first.writer(), refused, second.writer():
        pass
    with second.writer() as con:  # released: the next writer goes ahead
        assert con.execute("SELECT 1").fetchone() == (1,)


def test_a_full_disk_does_not_stop_the_lock_from_being_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Writing the holder's name into the lock file is a courtesy: on a full disk it fails, the
    lock is held all the same, and the full disk is met (and reported) in the warehouse."""

    def no_space(*args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", no_space)
    with (
        caplog.at_level("WARNING", logger="warehouse.lock"),
        writer_lock(tmp_path / "w.duckdb", timeout_seconds=1),
        try_writer_lock(tmp_path / "w.duckdb") as another_writer_got_it,
    ):
        assert not another_writer_got_it
    assert "the lock is held" in caplog.text

"""The published copy: atomic replacement, readers that never block the writer, repeated
open/close/publish cycles without stray write-ahead logs."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from annex.errors import WarehouseError, WarehouseSpaceError
from annex.settings import WarehouseSettings
from tests.helpers.warehouse_things import THINGS_MODEL, make_migrations_dir, things_batches
from warehouse import Warehouse, load_collection
from warehouse.publish import read_stale, stale_marker_path
from warehouse.space import human_bytes


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    return Warehouse(
        WarehouseSettings(
            path=tmp_path / "live" / "w.duckdb",
            published_path=tmp_path / "published" / "analysts.duckdb",
            lock_timeout_seconds=5,
        ),
        migrations_dir=make_migrations_dir(tmp_path / "migrations"),
    )


def _published_count(wh: Warehouse) -> int:
    with wh.reader() as con:
        return con.execute("SELECT count(*) FROM core.things").fetchone()[0]


def test_default_published_path_is_beside_the_live_file(tmp_path: Path) -> None:
    settings = WarehouseSettings(path=tmp_path / "annex.duckdb")
    assert Warehouse(settings).published_path == tmp_path / "annex.published.duckdb"


def test_open_close_publish_cycles_keep_files_consistent(wh: Warehouse) -> None:
    for cycle in range(1, 5):
        load_collection(wh, THINGS_MODEL, cluster=f"c{cycle}", batches=things_batches(cycle, 25))
        assert _published_count(wh) == cycle * 25
        assert not wh.path.with_name(wh.path.name + ".wal").exists()
        assert sorted(p.name for p in wh.published_path.parent.iterdir()) == ["analysts.duckdb"]
        with wh.writer() as con:
            assert con.execute("SELECT count(*) FROM core.things").fetchone() == (cycle * 25,)
        wh.publish()
        with duckdb.connect(str(wh.published_path), read_only=True) as con:
            statuses = con.execute("SELECT status FROM audit.collections").fetchall()
        assert statuses == [("succeeded",)] * cycle


def test_a_reader_of_the_published_copy_does_not_block_the_writer(wh: Warehouse) -> None:
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10))
    analyst = textwrap.dedent(
        f"""
        import sys, duckdb
        con = duckdb.connect({str(wh.published_path)!r}, read_only=True)
        print(con.execute("SELECT count(*) FROM core.things").fetchone()[0], flush=True)
        sys.stdin.readline()
        print(con.execute("SELECT count(*) FROM core.things").fetchone()[0], flush=True)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", analyst], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "10"

        result = load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(3, 10))

        assert result.status == "succeeded"
        assert _published_count(wh) == 30
        # The analyst's open session keeps reading the copy it opened, consistently.
        proc.stdin.write("again\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "10"
    finally:
        proc.kill()
        proc.wait()


def test_failed_copy_never_exposes_a_partial_file(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10))
    before = wh.published_path.read_bytes()
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(2, 10), publish=False)

    real_copy = os.copy_file_range
    calls = []

    def copy_part_then_fail(src: int, dst: int, count: int, *args: object) -> int:
        calls.append(count)
        if len(calls) == 1:
            return real_copy(src, dst, 4096)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "copy_file_range", copy_part_then_fail)
    with pytest.raises(WarehouseError, match="No space left") as caught:
        wh.publish()
    assert "annex warehouse publish" in (caught.value.hint or "")

    assert wh.published_path.read_bytes() == before
    assert [p.name for p in wh.published_path.parent.iterdir()] == ["analysts.duckdb"]
    monkeypatch.undo()
    wh.publish()
    assert _published_count(wh) == 20


@pytest.mark.parametrize("kernel", ["cross-device", "missing"])
def test_publish_copies_through_user_space_where_the_kernel_cannot(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch, kernel: str
) -> None:
    """copy_file_range refused between two file systems (older kernels), or absent (macOS):
    the same bytes, read and written by Python."""
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10), publish=False)
    if kernel == "missing":
        monkeypatch.delattr(os, "copy_file_range")
    else:

        def cross_device(*args: object) -> int:
            raise OSError(errno.EXDEV, "Invalid cross-device link")

        monkeypatch.setattr(os, "copy_file_range", cross_device)
    through_python = []
    real_copyfileobj = shutil.copyfileobj

    def counted(*args: object, **kwargs: object) -> None:
        through_python.append(args)
        real_copyfileobj(*args, **kwargs)

    monkeypatch.setattr(shutil, "copyfileobj", counted)
    wh.publish()
    assert len(through_python) == 1
    assert wh.published_path.read_bytes() == wh.path.read_bytes()
    assert _published_count(wh) == 10


def test_publish_copies_in_the_kernel(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy is the kernel's (no pass through Python), whole and byte for byte."""
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10), publish=False)

    def not_through_python(*args: object, **kwargs: object) -> None:
        raise AssertionError("the copy went through user space")

    monkeypatch.setattr(shutil, "copyfileobj", not_through_python)
    wh.publish()
    assert wh.published_path.read_bytes() == wh.path.read_bytes()
    assert _published_count(wh) == 10


def test_publish_removes_the_copies_of_killed_publishes(
    wh: Warehouse, caplog: pytest.LogCaptureFixture
) -> None:
    """A publish killed mid-copy (no ``except`` runs) leaves its temp copy, as large as the
    warehouse; the next publish deletes it and nothing else."""
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10))
    folder = wh.published_path.parent
    leftover = folder / f".{wh.published_path.name}.k1ll3d.tmp"
    leftover.write_bytes(b"\0" * 4096)
    unrelated = [folder / "notes.tmp", folder / f"{wh.published_path.name}.bak"]
    for path in unrelated:
        path.write_text("not annex's")
    with caplog.at_level("WARNING", logger="warehouse.publish"):
        wh.publish()
    assert not leftover.exists()
    assert all(path.read_text() == "not annex's" for path in unrelated)
    assert "did not finish" in caplog.text and str(leftover) in caplog.text
    assert _published_count(wh) == 10


def test_status_during_a_write_reads_the_published_copy_without_waiting(
    wh: Warehouse,
) -> None:
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10))
    with wh.writer():
        status = wh.status()
    assert status.read_from.startswith("published")
    assert status.writer is not None and "pid" in status.writer
    assert [c.status for c in status.last_collections] == ["succeeded"]
    after = wh.status()
    assert after.read_from == "live" and after.writer is None


def test_load_that_cannot_publish_says_the_collection_was_kept(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_space(*args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "copy_file_range", no_space)
    with pytest.raises(WarehouseError, match="was loaded, but publishing") as caught:
        load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10))
    assert "annex warehouse publish" in (caught.value.hint or "")
    with duckdb.connect(str(wh.path), read_only=True) as con:
        assert con.execute("SELECT status FROM audit.collections").fetchall() == [("succeeded",)]
        assert con.execute("SELECT count(*) FROM core.things").fetchone() == (10,)


def test_status_prints_for_people(wh: Warehouse) -> None:
    load_collection(wh, THINGS_MODEL, cluster="c7", batches=things_batches(1, 10))
    text = str(wh.status())
    assert f"published copy (analysts): {wh.published_path}" in text
    assert "migrations pending: none" in text
    assert "things/c7 succeeded" in text


def _duckdb_spelling(memory_limit: str) -> str:
    """How DuckDB reports ``memory_limit`` once set (it rounds to binary units)."""
    con = duckdb.connect()
    try:
        con.execute("SET memory_limit = ?", [memory_limit])
        return con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    finally:
        con.close()


def test_memory_limit_holds_for_the_writer_and_the_reader(tmp_path: Path) -> None:
    """warehouse.memory_limit reaches every connection annex opens, live file and published
    copy alike; without it DuckDB keeps its own default (a share of RAM)."""
    settings = WarehouseSettings(
        path=tmp_path / "w.duckdb", lock_timeout_seconds=5, memory_limit="300MB"
    )
    wh = Warehouse(settings, migrations_dir=make_migrations_dir(tmp_path / "migrations"))
    expected = _duckdb_spelling("300MB")
    query = "SELECT current_setting('memory_limit')"
    with wh.writer() as con:
        assert con.execute(query).fetchone()[0] == expected
    wh.publish()
    with wh.reader() as con:
        assert con.execute(query).fetchone()[0] == expected

    unlimited = Warehouse(
        WarehouseSettings(path=tmp_path / "u.duckdb", lock_timeout_seconds=5),
        migrations_dir=make_migrations_dir(tmp_path / "migrations-u"),
    )
    with unlimited.writer() as con:
        assert con.execute(query).fetchone()[0] != expected


def test_a_memory_limit_duckdb_refuses_says_which_setting(tmp_path: Path) -> None:
    settings = WarehouseSettings(path=tmp_path / "w.duckdb", memory_limit="plenty")
    wh = Warehouse(settings, migrations_dir=make_migrations_dir(tmp_path / "migrations"))
    with pytest.raises(WarehouseError, match=r"warehouse\.memory_limit") as caught:
        wh.migrate()
    assert "4GB" in (caught.value.hint or "")


# -- a publish that fails or never finishes: the copy is stale, says so, and is repaired --------
# (On a real full disk: tests/integration/test_warehouse_disk_full.py.)


def _no_space(*args: object) -> int:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_at_publish_is_reported_this_run_and_the_next(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10))
    before = wh.published_path.read_bytes()
    said: list[str] = []

    # This run: loaded, not published, exit 5, the room it needs and where, the copy intact.
    monkeypatch.setattr(os, "copy_file_range", _no_space)
    with pytest.raises(WarehouseSpaceError) as caught:
        load_collection(
            wh, THINGS_MODEL, cluster="c2", batches=things_batches(2, 10), on_wait=said.append
        )
    error = caught.value
    assert error.exit_code == 5
    assert "(things, c2) was loaded, but publishing the analysts' copy failed" in error.message
    assert f"no room for the new copy in {wh.published_path.parent}" in error.message
    hint = error.hint or ""
    assert f"needs at least {human_bytes(wh.path.stat().st_size)} in " in hint
    assert f"the evidence is safe in the live warehouse {wh.path}" in hint
    assert "analysts keep reading the previous copy (published " in hint
    assert said == []
    assert wh.published_path.read_bytes() == before
    assert [p.name for p in wh.published_path.parent.iterdir()] == ["analysts.duckdb"]
    stale = [p for p in wh.status().problems if "is stale since" in p]
    assert len(stale) == 1 and "no room for the new copy" in stale[0]

    # The next run, still no room: says the copy is stale and why, and fails the same way.
    with pytest.raises(WarehouseSpaceError, match="the copy has been stale since"):
        load_collection(
            wh, THINGS_MODEL, cluster="c3", batches=things_batches(3, 10), on_wait=said.append
        )
    assert len(said) == 1
    assert "is stale since" in said[0] and "no room for the new copy" in said[0]
    assert "this collection publishes it again" in said[0]
    assert wh.published_path.read_bytes() == before

    # The first run with room publishes, and says the copy was stale and is not any more.
    monkeypatch.undo()
    said.clear()
    load_collection(
        wh, THINGS_MODEL, cluster="c4", batches=things_batches(4, 10), on_wait=said.append
    )
    assert len(said) == 2 and "is up to date again" in said[1]
    assert _published_count(wh) == 40
    assert read_stale(wh.path) is None
    assert not [p for p in wh.status().problems if "stale" in p]


def test_annex_warehouse_publish_repairs_a_stale_copy(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10))
    monkeypatch.setattr(os, "copy_file_range", _no_space)
    with pytest.raises(WarehouseSpaceError, match="was loaded, but publishing"):
        load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(2, 10))
    with pytest.raises(WarehouseSpaceError, match="no room for the new copy"):
        wh.publish()
    monkeypatch.undo()
    said: list[str] = []
    wh.publish(on_wait=said.append)
    assert len(said) == 1 and "up to date again" in said[0] and "no room" in said[0]
    assert _published_count(wh) == 20


def test_a_publish_that_could_not_say_why_is_still_stale(wh: Warehouse) -> None:
    """On a disk too full for even the note, the marker is empty: still stale."""
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10))
    stale_marker_path(wh.path).write_bytes(b"")
    stale = read_stale(wh.path)
    assert stale is not None and "no room was left to record why" in stale.reason
    assert any("is stale since" in p for p in wh.status().problems)
    wh.publish()
    assert read_stale(wh.path) is None


def test_a_publish_killed_mid_copy_leaves_the_copy_marked_stale(wh: Warehouse) -> None:
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10))
    before = wh.published_path.read_bytes()
    killed = textwrap.dedent(
        f"""
        import time
        from pathlib import Path
        from annex.settings import WarehouseSettings
        from warehouse import Warehouse, connection

        def copy_forever(live, published):
            print("copying", flush=True)
            time.sleep(60)

        connection.copy_atomically = copy_forever
        Warehouse(WarehouseSettings(
            path=Path({str(wh.path)!r}), published_path=Path({str(wh.published_path)!r})
        ), migrations_dir=Path({str(wh.migrations_dir)!r})).publish()
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", killed], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "copying"
    finally:
        proc.kill()
        proc.wait()
    stale = read_stale(wh.path)
    assert stale is not None and "did not finish" in stale.reason
    assert wh.published_path.read_bytes() == before
    said: list[str] = []
    load_collection(
        wh, THINGS_MODEL, cluster="c1", batches=things_batches(2, 10), on_wait=said.append
    )
    assert "is stale since" in said[0] and "did not finish" in said[0]
    assert _published_count(wh) == 20

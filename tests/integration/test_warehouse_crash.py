"""Crash safety for real: a collector process killed with SIGKILL in the middle of a load.

The killed process is inside the collection's transaction (staging batches, or running its merge
after writing hundreds of thousands of uncommitted rows, which DuckDB may already have written
to the file optimistically). Afterwards the warehouse must open (DuckDB replays its WAL), show
nothing of the killed collection except its ``running`` audit row, and a rerun must mark that
row ``interrupted`` and load normally.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest

from annex.settings import WarehouseSettings
from tests.helpers.warehouse_things import THINGS_MODEL, make_migrations_dir, things_batches
from warehouse import Warehouse, load_collection

pytestmark = pytest.mark.slow

_COLLECTOR = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from annex.settings import WarehouseSettings
    from warehouse import SourceModel, Warehouse, load_collection
    from tests.helpers.warehouse_things import THINGS_MODEL, things_batches

    path, migrations, marker, mode = sys.argv[1:5]
    wh = Warehouse(WarehouseSettings(path=Path(path)), migrations_dir=Path(migrations))

    def mark(batches_done):
        if batches_done == 5:
            Path(marker).write_text("staging")

    if mode == "staging":
        model = THINGS_MODEL
        batches = things_batches(1_000_000, 1000, after_batch=mark, delay_seconds=0.05)
    else:
        # Stage and merge 300k rows (more than a row group, so DuckDB writes them to the file
        # before commit), say so through a file written by the merge itself, then keep the
        # transaction open with a long query until killed.
        model = SourceModel(
            source=THINGS_MODEL.source,
            staging_sql=THINGS_MODEL.staging_sql,
            merge_sql=THINGS_MODEL.merge_sql
            + f"; COPY (SELECT 'merging') TO '{marker}' (FORMAT csv, HEADER false);"
            + " SELECT count(*) FROM range(100000) a, range(100000000) b"
            + " WHERE a.range + b.range < 0;",
        )
        batches = things_batches(6, 50_000)
    load_collection(wh, model, cluster="crash", batches=batches)
    print("finished without being killed", flush=True)
    """
)


def _kill_mid_load(wh: Warehouse, migrations: Path, tmp_path: Path, mode: str) -> None:
    marker = tmp_path / f"marker-{mode}"
    proc = subprocess.Popen(
        [sys.executable, "-c", _COLLECTOR, str(wh.path), str(migrations), str(marker), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            if proc.poll() is not None:
                out, err = proc.communicate()
                pytest.fail(f"collector exited early ({proc.returncode}): {out}{err}")
            if time.monotonic() > deadline:
                pytest.fail("collector never reached the point where it is killed")
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("mode", ["staging", "merge"])
def test_kill_9_mid_load_leaves_a_consistent_warehouse(tmp_path: Path, mode: str) -> None:
    migrations = make_migrations_dir(tmp_path / "migrations")
    wh = Warehouse(
        WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=30),
        migrations_dir=migrations,
    )
    first = load_collection(wh, THINGS_MODEL, cluster="crash", batches=things_batches(2, 100))
    published_before = wh.published_path.read_bytes()

    _kill_mid_load(wh, migrations, tmp_path, mode)

    # The file opens (WAL replayed), the killed collection left only its 'running' row.
    with duckdb.connect(str(wh.path), read_only=True) as con:
        collections = con.execute(
            "SELECT collection_id, status FROM audit.collections ORDER BY started_at"
        ).fetchall()
        things = con.execute(
            "SELECT count(*), count(DISTINCT collection_id) FROM core.things"
        ).fetchone()
        rejected = con.execute("SELECT count(*) FROM audit.rejected").fetchone()
    assert collections[0] == (first.collection_id, "succeeded")
    assert [status for _, status in collections[1:]] == ["running"]
    killed_id = collections[1][0]
    assert things == (200, 1)
    assert rejected == (0,)
    assert wh.published_path.read_bytes() == published_before
    assert wh.status().last_collections[0].status == "running"

    # The next writer notices the kill, and a rerun completes.
    rerun = load_collection(wh, THINGS_MODEL, cluster="crash", batches=things_batches(4, 100))

    assert rerun.status == "succeeded"
    with wh.reader() as con:
        statuses = dict(
            con.execute("SELECT collection_id, status FROM audit.collections").fetchall()
        )
        error = con.execute(
            "SELECT error FROM audit.collections WHERE collection_id = ?", [killed_id]
        ).fetchone()[0]
        keys = con.execute("SELECT count(*), count(DISTINCT thing_key) FROM core.things").fetchone()
        killed_rows = con.execute(
            "SELECT count(*) FROM core.things WHERE collection_id = ?", [killed_id]
        ).fetchone()
    assert statuses == {
        first.collection_id: "succeeded",
        killed_id: "interrupted",
        rerun.collection_id: "succeeded",
    }
    assert "killed or crashed" in error
    assert keys == (400, 400)
    assert killed_rows == (0,)

"""A failed collection reaches the analysts' copy; the data there stays the last published."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from annex.settings import WarehouseSettings
from tests.helpers.warehouse_things import THINGS_MODEL, make_migrations_dir, things_batches
from warehouse import Warehouse, load_collection
from warehouse.lock import lock_path_for
from warehouse.publish_failures import publish_failed_collections


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    return Warehouse(
        WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5),
        migrations_dir=make_migrations_dir(tmp_path / "migrations"),
    )


def _published(wh: Warehouse, sql: str) -> list[tuple]:
    with duckdb.connect(str(wh.published_path), read_only=True) as con:
        return con.execute(sql).fetchall()


def _fail(wh: Warehouse, *, publish: bool) -> None:
    with pytest.raises(RuntimeError, match="source went away"):
        load_collection(
            wh,
            THINGS_MODEL,
            cluster="c1",
            batches=things_batches(5, 10, fail_after=2),
            publish=publish,
        )


@pytest.mark.parametrize("publish", [True, False], ids=["annex-collect", "dagster-unpublished"])
def test_a_failed_collection_is_published_and_the_data_stays_the_last_good(
    wh: Warehouse, publish: bool
) -> None:
    good = load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 5))
    # loaded but never published (its blocking checks failed): analysts must not see it
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 7), publish=False)

    _fail(wh, publish=publish)

    rows = _published(wh, "SELECT collection_id, status, error FROM audit.collections")
    statuses = sorted(status for _, status, _ in rows)
    assert statuses == ["failed", "succeeded"]  # the unpublished success is not there
    [(_, _, error)] = [r for r in rows if r[1] == "failed"]
    assert error == "source went away after 2 batches"
    assert good.collection_id in {cid for cid, _, _ in rows}
    assert _published(wh, "SELECT count(*) FROM core.things") == [(5,)]
    leftovers = [p.name for p in wh.published_path.parent.iterdir() if ".tmp" in p.name]
    assert leftovers == []


def test_a_failure_before_any_publish_gives_a_copy_with_only_the_failure(wh: Warehouse) -> None:
    _fail(wh, publish=False)
    assert _published(wh, "SELECT status FROM audit.collections") == [("failed",)]
    assert _published(wh, "SELECT count(*) FROM core.things") == [(0,)]
    names = sorted(p.name for p in wh.path.parent.iterdir() if p.is_file())
    assert names == sorted({wh.path.name, wh.published_path.name, lock_path_for(wh.path).name}), (
        names
    )


def test_publishing_failures_again_changes_nothing_and_corrects_a_stale_status(
    wh: Warehouse,
) -> None:
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 5))
    _fail(wh, publish=False)
    before = wh.published_path.stat().st_mtime_ns
    assert publish_failed_collections(wh) == 0
    assert wh.published_path.stat().st_mtime_ns == before

    # a row the published copy holds as running (published mid-collection) is corrected
    with duckdb.connect(str(wh.published_path)) as con:
        con.execute("UPDATE audit.collections SET status = 'running' WHERE status = 'failed'")
    assert publish_failed_collections(wh) == 1
    assert sorted(_published(wh, "SELECT status FROM audit.collections")) == [
        ("failed",),
        ("succeeded",),
    ]

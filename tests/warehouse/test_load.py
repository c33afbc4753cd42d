"""load_collection: all or nothing, lazy staging, rejected records, audit rows."""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from annex.errors import CollectionError, WarehouseError, WarehouseSpaceError
from annex.settings import WarehouseSettings
from tests.helpers.warehouse_things import (
    THINGS_MODEL,
    make_migrations_dir,
    things_batch,
    things_batches,
)
from warehouse import (
    RAW_CAP_BYTES,
    SourceModel,
    Warehouse,
    load,
    load_collection,
    staging,
    transaction,
)


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    return Warehouse(
        WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5),
        migrations_dir=make_migrations_dir(tmp_path / "migrations"),
    )


def _query(wh: Warehouse, sql: str, params: list | None = None) -> list[tuple]:
    with duckdb.connect(str(wh.path), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def _table_counts(wh: Warehouse) -> dict[str, int]:
    """Row counts of every table in the annex schemas, except the collection log itself."""
    with duckdb.connect(str(wh.path), read_only=True) as con:
        tables = con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() "
            "WHERE schema_name IN ('raw', 'core', 'marts', 'audit')"
        ).fetchall()
        return {
            f"{s}.{t}": con.execute(f'SELECT count(*) FROM {s}."{t}"').fetchone()[0]
            for s, t in tables
            if (s, t) != ("audit", "collections")
        }


def _collection(wh: Warehouse, collection_id: str) -> tuple:
    return _query(
        wh,
        "SELECT status, error, row_counts, rejected_count, finished_at IS NOT NULL "
        "FROM audit.collections WHERE collection_id = ?",
        [collection_id],
    )[0]


def _only_collection_id(wh: Warehouse, status: str) -> str:
    rows = _query(wh, "SELECT collection_id FROM audit.collections WHERE status = ?", [status])
    assert len(rows) == 1, rows
    return rows[0][0]


def test_successful_load_stages_merges_and_publishes(wh: Warehouse) -> None:
    progress: list[tuple[str, int]] = []
    result = load_collection(
        wh,
        THINGS_MODEL,
        cluster="c1",
        batches=things_batches(3, 100),
        on_progress=lambda table, rows: progress.append((table, rows)),
    )

    assert result.status == "succeeded"
    assert result.row_counts == {"things": 300}
    assert result.rejected_count == 0
    assert progress == [("things", 100), ("things", 200), ("things", 300)]
    assert _collection(wh, result.collection_id) == ("succeeded", None, {"things": 300}, 0, True)
    rows = _query(wh, "SELECT DISTINCT collection_id, collected_at FROM core.things")
    assert rows == [(result.collection_id, result.started_at)]
    with wh.reader() as con:
        assert con.execute("SELECT count(*) FROM core.things").fetchone() == (300,)
    # Temp staging tables do not outlive the load.
    assert _query(wh, "SELECT count(*) FROM duckdb_tables() WHERE temporary") == [(0,)]


def test_batches_are_consumed_lazily(wh: Warehouse) -> None:
    events: list[str] = []

    def collector() -> Iterator[tuple[str, pa.RecordBatch]]:
        for n in range(3):
            events.append(f"fetch {n}")
            yield "things", things_batch(n * 10, 10)

    load_collection(
        wh,
        THINGS_MODEL,
        cluster="c1",
        batches=collector(),
        on_progress=lambda table, rows: events.append(f"staged {rows}"),
        publish=False,
    )

    assert events == ["fetch 0", "staged 10", "fetch 1", "staged 20", "fetch 2", "staged 30"]


def test_generator_failing_midway_leaves_no_partial_rows(wh: Warehouse) -> None:
    first = load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(2, 50))
    before = _table_counts(wh)

    with pytest.raises(RuntimeError, match="source went away after 3 batches"):
        load_collection(
            wh, THINGS_MODEL, cluster="c1", batches=things_batches(10, 50, fail_after=3)
        )

    assert _table_counts(wh) == before
    failed = _only_collection_id(wh, "failed")
    _, error, row_counts, rejected, finished = _collection(wh, failed)
    assert error == "source went away after 3 batches"
    assert (row_counts, rejected, finished) == (None, None, True)
    assert _query(wh, "SELECT count(*) FROM core.things WHERE collection_id = ?", [failed]) == [
        (0,)
    ]
    assert _collection(wh, first.collection_id)[0] == "succeeded"


def test_failing_merge_rolls_back_and_is_recorded(wh: Warehouse) -> None:
    broken = SourceModel(
        source="things",
        staging_sql=THINGS_MODEL.staging_sql,
        merge_sql=THINGS_MODEL.merge_sql + "; INSERT INTO core.things SELECT * FROM nowhere;",
    )
    with pytest.raises(WarehouseError, match="merge SQL of the things model failed") as caught:
        load_collection(wh, broken, cluster="c1", batches=things_batches(2, 10))

    assert _table_counts(wh) == {"core.things": 0, "audit.rejected": 0}
    failed = _only_collection_id(wh, "failed")
    assert _collection(wh, failed)[1] == str(caught.value)


def test_interrupt_is_recorded_as_interrupted(wh: Warehouse) -> None:
    def collector() -> Iterator[tuple[str, pa.RecordBatch]]:
        yield "things", things_batch(0, 10)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        load_collection(wh, THINGS_MODEL, cluster="c1", batches=collector())

    interrupted = _only_collection_id(wh, "interrupted")
    assert _collection(wh, interrupted)[1] == "KeyboardInterrupt"
    assert _table_counts(wh)["core.things"] == 0


def test_unknown_table_is_a_collection_error_and_loads_nothing(wh: Warehouse) -> None:
    closed: list[bool] = []

    def collector() -> Iterator[tuple[str, pa.RecordBatch]]:
        try:
            yield "things", things_batch(0, 10)
            yield "gizmos", things_batch(10, 10)
            yield "things", things_batch(20, 10)
        finally:
            closed.append(True)  # the collector's connections are released at once

    with pytest.raises(CollectionError, match="'gizmos'") as caught:
        load_collection(wh, THINGS_MODEL, cluster="c1", batches=collector())

    assert "stage_gizmos" in (caught.value.hint or "")
    assert closed == [True]
    assert _table_counts(wh)["core.things"] == 0
    failed = _only_collection_id(wh, "failed")
    assert "gizmos" in _collection(wh, failed)[1]


def test_batch_not_matching_staging_table_is_a_collection_error(wh: Warehouse) -> None:
    wrong = pa.RecordBatch.from_pydict({"thing_key": ["a"], "colour": ["red"]})
    with pytest.raises(CollectionError, match="batch 1 of table 'things'"):
        load_collection(wh, THINGS_MODEL, cluster="c1", batches=iter([("things", wrong)]))
    assert _table_counts(wh)["core.things"] == 0


def test_reloading_the_same_input_adds_only_the_audit_row(wh: Warehouse) -> None:
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(3, 40))
    before = _table_counts(wh)
    things_before = _query(wh, "SELECT * FROM core.things ORDER BY thing_key")

    second = load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(3, 40))

    assert second.status == "succeeded"
    assert second.row_counts == {"things": 120}
    assert _table_counts(wh) == before
    assert _query(wh, "SELECT * FROM core.things ORDER BY thing_key") == things_before
    assert _query(wh, "SELECT status, count(*) FROM audit.collections GROUP BY ALL") == [
        ("succeeded", 2)
    ]


def test_rejected_records_land_in_audit_with_capped_raw(wh: Warehouse) -> None:
    big = b"x" * (RAW_CAP_BYTES + 1000)
    small = b'{"kind": "Pod"}'
    rejected = pa.RecordBatch.from_pydict(
        {
            "locator": ["pods page 1 item 1 (ns/a)", "pods page 1 item 2 (ns/b)", "pods page 2"],
            "reason_code": ["bad_quantity", "missing_field", "truncated"],
            "message": ["cpu '1x' is not a quantity", "no metadata.uid", "body cut"],
            "raw": pa.array([big, small, None], type=pa.binary()),
        }
    )
    nulls = pa.RecordBatch.from_pydict(
        {"thing_key": ["n1"], "value": pa.array([None], type=pa.int64())}
    )

    result = load_collection(
        wh,
        THINGS_MODEL,
        cluster="c1",
        batches=iter([("things", things_batch(0, 5)), ("rejected", rejected), ("things", nulls)]),
    )

    assert result.rejected_count == 4  # three from the collector, one from the merge SQL
    assert result.row_counts == {"things": 6, "rejected": 3}
    rows = _query(
        wh,
        "SELECT locator, reason_code, octet_length(raw), raw_truncated, raw_bytes, "
        "collection_id, source, cluster FROM audit.rejected ORDER BY locator",
    )
    ident = (result.collection_id, "things", "c1")
    assert rows == [
        ("pods page 1 item 1 (ns/a)", "bad_quantity", RAW_CAP_BYTES, True, len(big), *ident),
        ("pods page 1 item 2 (ns/b)", "missing_field", len(small), False, len(small), *ident),
        ("pods page 2", "truncated", None, False, None, *ident),
        ("things key n1", "missing_value", None, False, None, *ident),
    ]
    assert _query(wh, "SELECT raw FROM audit.rejected WHERE reason_code = 'missing_field'") == [
        (small,)
    ]
    assert _query(wh, "SELECT count(*) FROM core.things") == [(5,)]


def test_leftover_running_collections_are_marked_interrupted(wh: Warehouse) -> None:
    with wh.writer() as con:
        con.execute(
            "INSERT INTO audit.collections (collection_id, source, cluster, started_at, status) "
            "VALUES ('killed-one', 'things', 'c1', TIMESTAMP '2025-01-01', 'running')"
        )

    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 5))

    status, error, *_ = _collection(wh, "killed-one")
    assert status == "interrupted"
    assert "killed or crashed" in error


def test_publish_false_leaves_the_published_copy_alone(wh: Warehouse) -> None:
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 5), publish=False)
    assert not wh.published_path.exists()
    with pytest.raises(WarehouseError, match="no published copy"):
        wh.reader().__enter__()


def test_grouped_staging_keeps_every_row_across_flushes_and_schema_changes(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(staging, "FLUSH_ROWS", 25)
    all_null = pa.RecordBatch.from_pydict(
        {"thing_key": ["z1", "z2"], "value": pa.array([None, None], type=pa.null())}
    )

    def collector() -> Iterator[tuple[str, pa.RecordBatch]]:
        for n in range(4):
            yield "things", things_batch(n * 10, 10)
        yield "things", all_null  # another schema: flushed separately, still staged
        for n in range(4, 7):
            yield "things", things_batch(n * 10, 10)

    result = load_collection(wh, THINGS_MODEL, cluster="c1", batches=collector())

    assert result.row_counts == {"things": 72}
    assert result.rejected_count == 2  # the NULL values, rejected by the merge SQL
    assert _query(wh, "SELECT count(*), count(DISTINCT thing_key) FROM core.things") == [(70, 70)]


def test_each_staged_chunk_is_freed_when_staged_not_at_the_commit(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A view made with register and dropped inside the transaction keeps its Arrow data alive
    # until the commit: every chunk of a collection stayed in memory (1.1 GB for a
    # 200,000-event lineage collection).
    monkeypatch.setattr(staging, "FLUSH_ROWS", 1000)
    growth: list[int] = []

    def collector() -> Iterator[tuple[str, pa.RecordBatch]]:
        before = pa.total_allocated_bytes()
        for n in range(20):
            growth.append(pa.total_allocated_bytes() - before)
            keys = pa.array([f"{n}-{i}-" + "x" * 1000 for i in range(1000)])  # 1 MB
            values = pa.array(range(1000), pa.int64())
            yield "things", pa.RecordBatch.from_arrays([keys, values], ["thing_key", "value"])

    result = load_collection(wh, THINGS_MODEL, cluster="c1", batches=collector())

    assert result.row_counts == {"things": 20_000}
    assert max(growth) < 4 << 20, growth  # the chunk just yielded, not the 19 before it


def _slow_inserts(monkeypatch: pytest.MonkeyPatch, seconds: float) -> list[tuple]:
    """Make each staged insert take ``seconds`` longer; returns its (start, end, thread)."""
    inserts: list[tuple] = []
    insert = staging.execute_over_arrow

    def slow(con: duckdb.DuckDBPyConnection, sql: str, data: pa.Table) -> None:
        start = time.monotonic()
        time.sleep(seconds)
        insert(con, sql, data)
        inserts.append((start, time.monotonic(), threading.current_thread()))

    monkeypatch.setattr(staging, "execute_over_arrow", slow)
    return inserts


def test_the_collector_goes_on_while_a_chunk_is_inserted(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(staging, "FLUSH_ROWS", 10)  # every batch is a chunk
    inserts = _slow_inserts(monkeypatch, 0.2)
    fetched: list[float] = []

    def collector() -> Iterator[tuple[str, pa.RecordBatch]]:
        for n in range(4):
            fetched.append(time.monotonic())
            yield "things", things_batch(n * 10, 10)

    result = load_collection(wh, THINGS_MODEL, cluster="c1", batches=collector())

    assert result.row_counts == {"things": 40}
    assert _query(wh, "SELECT count(*) FROM core.things") == [(40,)]
    assert len(inserts) == 4
    assert all(thread is not threading.main_thread() for _, _, thread in inserts)
    # batches 2-4 were fetched before the chunk ahead of them was in
    assert all(at < end for (_, end, _), at in zip(inserts, fetched[1:], strict=False))
    # one chunk at a time: each insert began after the one before it ended
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(inserts))


def test_a_chunk_failing_while_the_collector_goes_on_fails_the_collection(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(staging, "FLUSH_ROWS", 10)
    wrong = pa.RecordBatch.from_pydict({"thing_key": ["a"] * 10, "colour": ["red"] * 10})

    def collector() -> Iterator[tuple[str, pa.RecordBatch]]:
        yield "things", things_batch(0, 10)
        yield "things", wrong
        for n in range(2, 6):
            yield "things", things_batch(n * 10, 10)

    with pytest.raises(CollectionError, match="batch 2 of table 'things'"):
        load_collection(wh, THINGS_MODEL, cluster="c1", batches=collector())
    assert _table_counts(wh)["core.things"] == 0
    assert "batch 2" in _collection(wh, _only_collection_id(wh, "failed"))[1]


@pytest.mark.parametrize(
    ("error", "status"),
    [(RuntimeError("source went away"), "failed"), (KeyboardInterrupt(), "interrupted")],
)
def test_a_collector_failing_while_a_chunk_is_inserted_loads_nothing(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch, error: BaseException, status: str
) -> None:
    monkeypatch.setattr(staging, "FLUSH_ROWS", 10)
    inserts = _slow_inserts(monkeypatch, 0.3)

    def collector() -> Iterator[tuple[str, pa.RecordBatch]]:
        for n in range(3):
            yield "things", things_batch(n * 10, 10)
        raise error

    with pytest.raises(type(error)):
        load_collection(wh, THINGS_MODEL, cluster="c1", batches=collector())

    assert len(inserts) == 3  # the third chunk was still going in: waited for, then rolled back
    assert _table_counts(wh)["core.things"] == 0
    assert _collection(wh, _only_collection_id(wh, status))[1] == (
        str(error) or type(error).__name__
    )


def test_ctrl_c_after_the_merge_wrote_rows_rolls_them_back(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python can raise KeyboardInterrupt between two statements, where DuckDB has not aborted
    # the transaction itself: only the engine's ROLLBACK keeps the merge's rows out.
    def interrupted_after_merge(con: duckdb.DuckDBPyConnection) -> int:
        assert con.execute("SELECT count(*) FROM core.things").fetchone() == (20,)
        raise KeyboardInterrupt

    monkeypatch.setattr(load, "_keep_rejected", interrupted_after_merge)
    with pytest.raises(KeyboardInterrupt):
        load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(2, 10))

    assert _table_counts(wh) == {"core.things": 0, "audit.rejected": 0}
    assert _collection(wh, _only_collection_id(wh, "interrupted"))[1] == "KeyboardInterrupt"


# -- tables appended through a sink (SourceModel.appends) --------------------------------------

_LOG = pa.schema([("thing_key", pa.string()), ("value", pa.int64())])


class _LogSink:
    """Appends ``thing_log`` batches straight into core.things through one open INSERT."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.stream = staging.AppendStream(
            con,
            "INSERT INTO core.things SELECT thing_key, value, getvariable('collection_id'), "
            "getvariable('collected_at') FROM annex_log_stream",
            _LOG,
            name="annex_log_stream",
        )
        self.closed = False

    def __call__(self, table: str, batch: pa.RecordBatch) -> None:
        assert table == "thing_log"
        self.stream.put(batch)

    def pause(self) -> None:
        self.stream.close()

    def close(self) -> None:
        self.stream.close()
        self.closed = True

    def abort(self) -> None:
        self.stream.abort()


_SINKS: list[_LogSink] = []


def _log_sink(con: duckdb.DuckDBPyConnection) -> _LogSink:
    _SINKS.append(_LogSink(con))
    return _SINKS[-1]


LOGGED_MODEL = SourceModel(
    source="things",
    staging_sql=THINGS_MODEL.staging_sql,
    merge_sql=THINGS_MODEL.merge_sql,
    appends={"thing_log": _log_sink},
)


def _log_batch(start: int, n: int, key: str | None = "log") -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {"thing_key": [key] * n, "value": list(range(start, start + n))}, schema=_LOG
    )


def test_a_sink_streams_between_staged_flushes(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(staging, "FLUSH_ROWS", 25)  # staged flushes happen mid-stream

    def collector() -> Iterator[tuple[str, pa.RecordBatch]]:
        for n in range(10):
            yield "thing_log", _log_batch(n * 100, 100)
            yield "things", things_batch(n * 10, 10)

    _SINKS.clear()
    result = load_collection(wh, LOGGED_MODEL, cluster="c1", batches=collector())

    assert result.row_counts == {"thing_log": 1000, "things": 100}
    assert _query(wh, "SELECT count(*) FROM core.things WHERE thing_key = 'log'") == [(1000,)]
    assert _query(wh, "SELECT count(*) FROM core.things WHERE thing_key <> 'log'") == [(100,)]
    (sink,) = _SINKS
    _SINKS.clear()
    assert sink.closed and 1 < sink.stream.statements <= 5  # paused for each staged flush


def test_a_failing_sink_statement_fails_the_collection(wh: Warehouse) -> None:
    def collector() -> Iterator[tuple[str, pa.RecordBatch]]:
        yield "things", things_batch(0, 10)
        for n in range(5):
            yield "thing_log", _log_batch(n * 100, 100, key=None if n == 2 else "log")

    with pytest.raises(duckdb.ConstraintException, match="NOT NULL"):
        load_collection(wh, LOGGED_MODEL, cluster="c1", batches=collector())
    _SINKS.clear()

    assert _table_counts(wh) == {"core.things": 0, "audit.rejected": 0}
    assert "NOT NULL" in _collection(wh, _only_collection_id(wh, "failed"))[1]


def test_an_append_stream_ends_cleanly_when_aborted(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "s.duckdb"))
    con.execute("CREATE TABLE t (thing_key VARCHAR NOT NULL, value BIGINT)")
    stream = staging.AppendStream(con, "INSERT INTO t SELECT * FROM s", _LOG, name="s")
    con.execute("BEGIN")
    for n in range(5):
        stream.put(_log_batch(n * 10, 10))
    stream.abort()  # the statement ends; the caller rolls back
    assert not stream.running
    con.execute("ROLLBACK")
    stream.put(_log_batch(0, 10))  # a new statement
    stream.close()
    assert con.execute("SELECT count(*) FROM t").fetchone() == (10,)
    con.close()


def _threads_in_merge(model: SourceModel) -> SourceModel:
    """``model`` whose merge notes DuckDB's threads as a rejected record (reason 'threads')."""
    return dataclasses.replace(
        model,
        merge_sql=model.merge_sql
        + "; INSERT INTO stage_rejected (locator, reason_code, message, raw) "
        "SELECT 'merge', 'threads', current_setting('threads')::VARCHAR, NULL",
    )


def test_a_model_stages_on_the_threads_it_names_and_merges_on_the_warehouses(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []
    staging = load._stage

    def noting(con: duckdb.DuckDBPyConnection, *args: object) -> dict[str, int]:
        seen.append(con.execute("SELECT current_setting('threads')").fetchone()[0])
        return staging(con, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(load, "_stage", noting)
    default = _threads_in_merge(THINGS_MODEL)
    load_collection(wh, default, cluster="c1", batches=things_batches(1, 5))
    own = seen[0]  # the warehouse's threads; the model names another number
    model = _threads_in_merge(dataclasses.replace(THINGS_MODEL, staging_threads=own + 1))
    # a failing collection puts the threads back too
    with pytest.raises(RuntimeError, match="source went away"):
        load_collection(wh, model, cluster="c1", batches=things_batches(3, 5, fail_after=1))
    load_collection(wh, model, cluster="c1", batches=things_batches(1, 5))
    load_collection(wh, default, cluster="c1", batches=things_batches(1, 5))
    assert seen == [own, own + 1, own + 1, own]
    merged = _query(wh, "SELECT message FROM audit.rejected WHERE reason_code = 'threads'")
    assert merged == [(str(own),)] * 3


# -- faults: a failed COMMIT, a failed ROLLBACK, a full disk ------------------------------------
# (A real full disk, a tmpfs that fills up, is in tests/integration/test_warehouse_disk_full.py;
# these inject DuckDB's own errors where they arise, to reach the cases a disk cannot time.)

_COMMIT_NO_SPACE = 'Failed to commit: Could not write file "w.duckdb.wal": No space left on device'


class _FaultyConnection:
    """A warehouse connection whose COMMIT fails the way DuckDB's does (DuckDB has then rolled
    the transaction back itself) and, with ``rollback_error``, whose ROLLBACK fails too."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        commit_error: duckdb.Error,
        rollback_error: duckdb.Error | None,
    ) -> None:
        self.real = con
        self.commit_error = commit_error
        self.rollback_error = rollback_error

    def execute(self, sql: object, *args: object) -> object:
        statement = str(sql).strip().upper()
        if statement == "COMMIT":
            self.real.execute("ROLLBACK")
            raise self.commit_error
        if statement == "ROLLBACK" and self.rollback_error is not None:
            raise self.rollback_error
        return self.real.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)


def _commit_fails(
    wh: Warehouse,
    monkeypatch: pytest.MonkeyPatch,
    commit_error: duckdb.Error,
    rollback_error: duckdb.Error | None,
) -> None:
    """The next collection's COMMIT (and ROLLBACK) fail; the migration's commits do not."""
    connect, migrate = wh._connect_live, wh._migrate

    def faulty_connect() -> _FaultyConnection:
        return _FaultyConnection(connect(), commit_error, rollback_error)

    def real_migrate(con: object) -> list[str]:
        return migrate(getattr(con, "real", con))

    real_execute_over_arrow = staging.execute_over_arrow

    def unwrapped(con: object, sql: str, data: pa.Table) -> None:
        real_execute_over_arrow(getattr(con, "real", con), sql, data)

    monkeypatch.setattr(wh, "_connect_live", faulty_connect)
    monkeypatch.setattr(wh, "_migrate", real_migrate)
    monkeypatch.setattr(staging, "execute_over_arrow", unwrapped)


def test_a_failed_commit_is_reported_not_the_rollback_that_failed_after_it(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10))
    before = _table_counts(wh)
    published = wh.published_path.read_bytes()
    _commit_fails(
        wh,
        monkeypatch,
        duckdb.TransactionException(_COMMIT_NO_SPACE),
        duckdb.IOException("Could not truncate the write-ahead log: Input/output error"),
    )

    with pytest.raises(WarehouseSpaceError) as caught:
        load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(3, 10))

    error = caught.value
    assert error.exit_code == 5
    assert "was NOT loaded: its COMMIT failed" in error.message
    assert _COMMIT_NO_SPACE in error.message
    assert "the ROLLBACK that followed also failed: Could not truncate" in error.message
    assert "nothing of it was kept" in (error.hint or "")
    staged = sum(batch.nbytes for _, batch in things_batches(3, 10))  # what it needed, at least
    assert f"free at least {staged} bytes in {wh.path.parent}" in (error.hint or "")
    monkeypatch.undo()
    assert _table_counts(wh) == before
    assert wh.published_path.read_bytes() == published
    failed = _only_collection_id(wh, "failed")
    assert "COMMIT failed" in _collection(wh, failed)[1]

    rerun = load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(3, 10))
    assert rerun.status == "succeeded"
    assert _query(wh, "SELECT count(*), count(DISTINCT thing_key) FROM core.things") == [(30, 30)]


def test_a_failed_commit_that_is_no_full_disk_says_so_and_what_landed(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB's own ROLLBACK after a failed COMMIT ("no transaction is active") is no second
    fault: the COMMIT's error alone is reported, with no note."""
    _commit_fails(
        wh, monkeypatch, duckdb.TransactionException("Failed to commit: write-write conflict"), None
    )
    with pytest.raises(WarehouseError) as caught:
        load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10))
    assert not isinstance(caught.value, WarehouseSpaceError)
    assert caught.value.message.endswith(
        "its COMMIT failed: Failed to commit: write-write conflict"
    )
    assert "was NOT loaded" in caught.value.message
    assert "ROLLBACK" not in caught.value.message
    assert not getattr(caught.value.__cause__, "__notes__", None)


def test_rolling_back_never_hides_the_error_that_caused_it() -> None:
    """``atomic`` (mart refreshes) re-raises the block's error, with a failed ROLLBACK as a
    note on it, never the ROLLBACK's error instead."""
    con = duckdb.connect()
    faulty = _FaultyConnection(
        con, duckdb.TransactionException("unused"), duckdb.IOException("disk went away")
    )
    with (
        pytest.raises(ValueError, match="the refresh's own error") as caught,
        transaction.atomic(faulty),
    ):
        raise ValueError("the refresh's own error")
    assert caught.value.__notes__ == ["the ROLLBACK that followed also failed: disk went away"]


def test_a_full_disk_while_staging_loads_nothing_and_says_so(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB's "No space left on device" while a chunk is staged is no collector's fault (a
    CollectionError, exit 4) but the warehouse's disk: exit 5, not loaded, rerun loads once."""
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(1, 10))
    before = _table_counts(wh)

    def no_space(con: object, sql: str, data: pa.Table) -> None:
        raise duckdb.IOException(f'Could not write file "{wh.path}": No space left on device')

    monkeypatch.setattr(staging, "execute_over_arrow", no_space)
    with pytest.raises(WarehouseSpaceError) as caught:
        load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(4, 10))
    monkeypatch.undo()

    assert caught.value.exit_code == 5
    assert "(things, c1) was NOT loaded: the disk of the warehouse" in caught.value.message
    assert "No space left on device" in caught.value.message
    hint = caught.value.hint or ""
    assert "nothing of it was kept" in hint and "says failed" in hint
    assert str(wh.path.parent) in hint and "rerun the collection" in hint
    assert _table_counts(wh) == before

    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(4, 10))
    load_collection(wh, THINGS_MODEL, cluster="c1", batches=things_batches(4, 10))
    assert _query(wh, "SELECT count(*) FROM core.things") == [(40,)]

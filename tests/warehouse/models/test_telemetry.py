"""The telemetry model: compact series ids, samples appended once, counters kept as received,
extents from the collector, samples streamed with bounded memory, all or nothing."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from annex.errors import CollectionError
from annex.settings import WarehouseSettings
from collectors.telemetry.collect import Extents
from warehouse import Warehouse, load_collection, staging
from warehouse.models.telemetry import TELEMETRY_MODEL
from warehouse.staging import AppendStream

T0 = datetime(2026, 11, 20, 0, 0)


def series_batch(rows: list[dict]) -> pa.RecordBatch:
    columns = {
        "series_index": pa.array([r["series_index"] for r in rows], pa.uint32()),
        "gpu_uuid": pa.array([r["gpu_uuid"] for r in rows]),
        "field_id": pa.array([r.get("field_id", 1001) for r in rows], pa.uint16()),
        "metric": pa.array([r.get("metric", "gr_engine_active") for r in rows]),
        "unit": pa.array([r.get("unit", "ratio") for r in rows]),
        "kind": pa.array([r.get("kind", "gauge") for r in rows]),
        "hostname": pa.array([r.get("hostname", "node-1") for r in rows]),
        "pod": pa.array([r.get("pod") for r in rows], pa.string()),
        "namespace": pa.array([r.get("namespace") for r in rows], pa.string()),
        "labels": pa.array([[("instance", "x")] for _ in rows], pa.map_(pa.string(), pa.string())),
        "source": pa.array(["scrape"] * len(rows)),
    }
    return pa.RecordBatch.from_pydict(columns)


def samples_batch(index: list[int], minutes: list[int], values: list[float]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "ts": pa.array([T0 + timedelta(minutes=m) for m in minutes], pa.timestamp("us")),
            "series_index": pa.array(index, pa.uint32()),
            "value": pa.array(values, pa.float64()),
        }
    )


def query(wh: Warehouse, sql: str) -> list[tuple]:
    with duckdb.connect(str(wh.path), read_only=True) as con:
        return con.execute(sql).fetchall()


def two_gpus(minutes: range, energy: list[float] | None = None):
    yield (
        "telemetry_series",
        series_batch(
            [
                {"series_index": 0, "gpu_uuid": "GPU-a", "pod": "p", "namespace": "team"},
                {"series_index": 1, "gpu_uuid": "GPU-b"},
                {
                    "series_index": 2,
                    "gpu_uuid": "GPU-a",
                    "metric": "total_energy_consumption",
                    "unit": "joules",
                    "kind": "counter",
                    "field_id": 156,
                    "pod": "p",
                    "namespace": "team",
                },
            ]
        ),
    )
    n = len(minutes)
    yield "telemetry_samples", samples_batch([0] * n, list(minutes), [0.5] * n)
    yield "telemetry_samples", samples_batch([1] * n, list(minutes), [0.01] * n)
    if energy is not None:
        yield "telemetry_samples", samples_batch([2] * len(energy), list(minutes), energy)


def test_series_get_compact_ids_and_samples_land_once(wh: Warehouse) -> None:
    first = load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=two_gpus(range(10)))
    assert first.row_counts == {"telemetry_series": 3, "telemetry_samples": 20}
    series = query(
        wh,
        "SELECT gpu_uuid, series_id, first_ts, last_ts FROM core.gpu_telemetry_series "
        "ORDER BY series_id",
    )
    assert [s[0] for s in series] == ["GPU-a", "GPU-b", "GPU-a"]
    assert [s[1] for s in series] == [1, 2, 3]
    assert series[0][2:] == (T0, T0 + timedelta(minutes=9))

    # the same window again, then an overlapping one: only the new minutes are added
    load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=two_gpus(range(10)))
    load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=two_gpus(range(5, 15)))
    counts = query(
        wh,
        "SELECT series_id, count(*), count(DISTINCT ts), max(ts) FROM core.gpu_telemetry_samples "
        "GROUP BY ALL ORDER BY 1",
    )
    assert counts == [
        (1, 15, 15, T0 + timedelta(minutes=14)),
        (2, 15, 15, T0 + timedelta(minutes=14)),
    ]
    loads = query(
        wh,
        "SELECT samples_received, samples_loaded FROM audit.telemetry_loads "
        "ORDER BY min_ts, samples_loaded DESC",
    )
    assert sorted(loads) == [(20, 0), (20, 10), (20, 20)]
    # a second cluster with the same GPU names is a different series
    load_collection(wh, TELEMETRY_MODEL, cluster="other", batches=two_gpus(range(3)))
    assert query(wh, "SELECT count(*) FROM core.gpu_telemetry_series WHERE cluster = 'other'") == [
        (3,)
    ]


def test_counter_values_are_stored_as_received_resets_included(wh: Warehouse) -> None:
    energy = [1000.0, 2000.0, 3000.0, 50.0, 1050.0]  # the driver reloaded after minute 2
    load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=two_gpus(range(5), energy))
    values = query(
        wh,
        "SELECT value FROM core.gpu_telemetry_samples s "
        "JOIN core.gpu_telemetry_series USING (series_id) "
        "WHERE metric = 'total_energy_consumption' ORDER BY ts",
    )
    assert [v for (v,) in values] == energy


def test_samples_before_their_series_fail_the_whole_collection(wh: Warehouse) -> None:
    def broken():
        yield "telemetry_series", series_batch([{"series_index": 0, "gpu_uuid": "GPU-a"}])
        yield "telemetry_samples", samples_batch([0, 1], [0, 0], [0.1, 0.2])

    with pytest.raises(CollectionError, match="series_index 1"):
        load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=broken())
    assert query(wh, "SELECT count(*) FROM core.gpu_telemetry_samples") == [(0,)]
    assert query(wh, "SELECT count(*) FROM core.gpu_telemetry_series") == [(0,)]
    assert query(wh, "SELECT status FROM audit.collections") == [("failed",)]


# -- extents, streaming, bounded memory -------------------------------------------------------


def with_extents(batches):
    """The collection, then the ``telemetry_extents`` the collector computes for its samples."""
    extents = Extents()
    for table, batch in batches:
        if table == "telemetry_samples":
            extents.add(batch)
        yield table, batch
    last = extents.batch()
    if last is not None:
        yield "telemetry_extents", last


def warehouse_state(wh: Warehouse) -> dict[str, list[tuple]]:
    return {
        "series": query(
            wh,
            "SELECT cluster, series_id, gpu_uuid, metric, first_ts, last_ts FROM "
            "core.gpu_telemetry_series ORDER BY series_id",
        ),
        "samples": query(wh, "SELECT * FROM core.gpu_telemetry_samples ORDER BY ALL"),
        "loads": query(
            wh,
            "SELECT min_ts, max_ts, series, samples_received, samples_loaded "
            "FROM audit.telemetry_loads ORDER BY ALL",
        ),
    }


def test_extents_from_the_collector_give_what_a_rescan_gives(tmp_path: Path) -> None:
    windows = [range(10), range(10), range(5, 15), range(0, 3), range(20, 30)]
    states = []
    for given in (False, True):
        wh = Warehouse(WarehouseSettings(path=tmp_path / f"{given}.duckdb"))
        for minutes in windows:  # the same, an overlap, one behind the watermark, a gap
            batches = two_gpus(minutes, [float(m) for m in minutes])
            if given:
                batches = with_extents(batches)
            load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=batches)
        states.append(warehouse_state(wh))
        # first_ts/last_ts are the extremes of what is stored
        assert query(
            wh,
            "SELECT count(*) FROM core.gpu_telemetry_series AS c JOIN (SELECT series_id, "
            "min(ts) AS lo, max(ts) AS hi FROM core.gpu_telemetry_samples GROUP BY ALL) AS s "
            "USING (series_id) WHERE c.first_ts <> s.lo OR c.last_ts <> s.hi",
        ) == [(0,)]
    assert states[0] == states[1]
    assert states[1]["series"][0][4:] == (T0, T0 + timedelta(minutes=29))


def test_extents_that_do_not_cover_the_samples_fail_the_collection(wh: Warehouse) -> None:
    def short():
        for table, batch in with_extents(two_gpus(range(5))):
            if table == "telemetry_extents":
                batch = batch.slice(0, 1)  # forgets GPU-b's series
            yield table, batch

    with pytest.raises(CollectionError, match="count 5 samples but 10 were received"):
        load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=short())
    assert query(wh, "SELECT count(*) FROM core.gpu_telemetry_samples") == [(0,)]
    assert query(wh, "SELECT count(*) FROM core.gpu_telemetry_series") == [(0,)]


def test_series_key_is_the_hash_of_the_identity_columns(wh: Warehouse) -> None:
    rows = [
        {"series_index": 0, "gpu_uuid": "GPU-a", "pod": "p", "namespace": "team"},
        {"series_index": 1, "gpu_uuid": "GPU-b"},
    ]
    batch = series_batch(rows)
    mig = pa.array([3, None], pa.int32())  # the collector's type; the warehouse keeps text
    batch = batch.append_column("mig_instance", mig).append_column(
        "mig_profile", pa.array(["1g.10gb", None])
    )

    def collection():
        yield "telemetry_series", batch
        yield "telemetry_samples", samples_batch([0, 1], [0, 0], [0.5, 0.5])

    load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=with_extents(collection()))
    assert query(
        wh,
        "SELECT count(*), count(*) FILTER (WHERE series_key = hash(cluster, gpu_uuid, metric, "
        "node_name, pod, namespace, container, mig_profile, mig_instance)) "
        "FROM core.gpu_telemetry_series",
    ) == [(2, 2)]
    assert query(wh, "SELECT mig_instance FROM core.gpu_telemetry_series ORDER BY series_id") == [
        ("3",),
        (None,),
    ]


def exporters(count: int, minutes: range):
    """Like a scrape: each exporter's new series, then its samples, one exporter after another."""
    for e in range(count):
        yield (
            "telemetry_series",
            series_batch([{"series_index": e, "gpu_uuid": f"GPU-{e}", "hostname": f"node-{e}"}]),
        )
        n = len(minutes)
        yield "telemetry_samples", samples_batch([e] * n, list(minutes), [e / count] * n)


def test_interleaved_series_and_samples_are_mapped_in_few_statements(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    statements = []
    original = AppendStream._start

    def counted(self: AppendStream) -> None:
        statements.append(self.name)
        original(self)

    monkeypatch.setattr(AppendStream, "_start", counted)
    monkeypatch.setattr(staging, "SINK_FLUSH_ROWS", 1000)
    result = load_collection(
        wh, TELEMETRY_MODEL, cluster="c", batches=with_extents(exporters(300, range(10)))
    )
    assert result.row_counts["telemetry_samples"] == 3000
    assert len(statements) == 3  # mapped after 1,000 rows waited, twice; the rest at the end
    assert query(
        wh,
        "SELECT count(DISTINCT series_id), count(*), min(value), max(value) "
        "FROM core.gpu_telemetry_samples JOIN core.gpu_telemetry_series USING (series_id) "
        "WHERE value = CAST(regexp_extract(gpu_uuid, '\\d+') AS INTEGER) / 300",
    ) == [(300, 3000, 0.0, 299 / 300)]


@pytest.mark.parametrize("failure", [RuntimeError, KeyboardInterrupt])
def test_a_collection_failing_mid_stream_keeps_nothing(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch, failure: type[BaseException]
) -> None:
    monkeypatch.setattr(staging, "SINK_FLUSH_ROWS", 20)
    load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=with_extents(two_gpus(range(10))))
    before = warehouse_state(wh)

    def failing():
        for table, batch in exporters(50, range(100, 110)):
            yield table, batch
            if table == "telemetry_samples" and batch.column("series_index")[0].as_py() == 40:
                raise failure("exporter 40 went away")

    with pytest.raises(failure):
        load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=failing())
    assert warehouse_state(wh) == before
    status = "interrupted" if failure is KeyboardInterrupt else "failed"
    assert query(wh, "SELECT status FROM audit.collections ORDER BY started_at") == [
        ("succeeded",),
        (status,),
    ]


def test_samples_in_flight_stay_bounded(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(staging, "SINK_FLUSH_ROWS", 3000)
    series = series_batch([{"series_index": i, "gpu_uuid": f"GPU-{i}"} for i in range(100)])
    index = list(range(100)) * 10
    batch_bytes = samples_batch(index, [0] * 1000, [0.5] * 1000).nbytes
    baseline = pa.total_allocated_bytes()
    peak = [0]

    def collection():
        yield "telemetry_series", series
        for start in range(0, 2000, 10):
            minutes = [start + m for m in range(10) for _ in range(100)]
            peak[0] = max(peak[0], pa.total_allocated_bytes() - baseline)
            yield "telemetry_samples", samples_batch(index, minutes, [0.5] * 1000)

    result = load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=collection())
    assert result.row_counts["telemetry_samples"] == 200_000
    # 200 batches went through; at most a few are held at once: 3 waiting for their series'
    # ids (3,000 rows), 2 queued, 1 being inserted, and their translated copies
    assert peak[0] < 16 * batch_bytes, (peak[0], batch_bytes)

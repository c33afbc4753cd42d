"""The telemetry model: compact series ids, samples appended once, counters kept as received."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from annex.errors import CollectionError
from annex.settings import WarehouseSettings
from warehouse import Warehouse, load_collection
from warehouse.models.telemetry import TELEMETRY_MODEL

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


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    return Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5))


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

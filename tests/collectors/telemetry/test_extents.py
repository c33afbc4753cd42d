"""The collector's per-series extents (first and last sample time, count) against brute force."""

from __future__ import annotations

from datetime import datetime, timedelta

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.telemetry import schema
from collectors.telemetry.collect import Extents, SeriesTable, build_samples

T0 = datetime(2026, 11, 20)


def samples(index: list[int], minutes: list[int]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "ts": pa.array([T0 + timedelta(minutes=m) for m in minutes], schema.TIMESTAMP),
            "series_index": pa.array(index, pa.uint32()),
            "value": pa.array([0.0] * len(index), pa.float64()),
        },
        schema=schema.SAMPLES,
    )


def brute_force(batches: list[pa.RecordBatch]) -> dict[int, tuple]:
    out: dict[int, tuple] = {}
    for batch in batches:
        for row in batch.to_pylist():
            first, last, n = out.get(row["series_index"], (row["ts"], row["ts"], 0))
            out[row["series_index"]] = (min(first, row["ts"]), max(last, row["ts"]), n + 1)
    return out


def as_dict(batch: pa.RecordBatch | None) -> dict[int, tuple]:
    if batch is None:
        return {}
    assert batch.schema == schema.EXTENTS
    rows = batch.to_pylist()
    assert [r["series_index"] for r in rows] == sorted(r["series_index"] for r in rows)
    return {r["series_index"]: (r["first_ts"], r["last_ts"], r["samples"]) for r in rows}


runs = st.lists(  # (series, first minute, points, ascending?) per run of one series
    st.tuples(st.integers(0, 7), st.integers(0, 500), st.integers(1, 6), st.booleans()),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(runs, max_size=8), st.integers(1, 20))
def test_extents_match_a_brute_force(batches_runs, fold_rows: int) -> None:
    extents = Extents()
    extents.fold_at = fold_rows  # fold often: folding must not change the answer
    batches = []
    for spec in batches_runs:
        index, minutes = [], []
        for series, first, points, ascending in spec:
            times = [first + 3 * k for k in range(points)]
            index += [series] * points
            minutes += times if ascending else times[::-1]
        batch = samples(index, minutes)
        batches.append(batch)
        extents.add(batch)
    assert as_dict(extents.batch()) == brute_force(batches)


def test_one_point_per_series_and_long_runs() -> None:
    extents = Extents()
    scrape = samples([0, 1, 2], [5, 5, 5])  # a scrape: runs of one
    matrix = samples([0] * 4 + [2] * 3, [6, 7, 8, 9, 1, 2, 3])  # a Prometheus matrix
    extents.add(scrape)
    extents.add(matrix)
    assert as_dict(extents.batch()) == {
        0: (T0 + timedelta(minutes=5), T0 + timedelta(minutes=9), 5),
        1: (T0 + timedelta(minutes=5), T0 + timedelta(minutes=5), 1),
        2: (T0 + timedelta(minutes=1), T0 + timedelta(minutes=5), 4),
    }
    assert Extents().batch() is None


def test_build_samples_counts_only_the_samples_it_keeps() -> None:
    table = SeriesTable("query_range")
    labels = [{"UUID": "GPU-a", "Hostname": "n1"}, {"Hostname": "n1"}]  # the second: no UUID
    _, batch, stats = build_samples(
        table,
        "http://prometheus",
        ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL"],
        labels,
        [None, None],
        [3, 2],
        pa.array([60.0, 120.0, 180.0, 60.0, 120.0]),
        pa.array([50.0, float("nan"), 70.0, 10.0, 20.0]),
        [],
    )
    assert batch.num_rows == stats.samples == 2  # the NaN and the rejected series are not kept
    (row,) = table.extents.batch().to_pylist()
    assert row["series_index"] == 0 and row["samples"] == 2
    assert (row["first_ts"].minute, row["last_ts"].minute) == (1, 3)

"""A fetched collection replays its batches in order, and the fetch's error after none."""

from __future__ import annotations

import pyarrow as pa
import pytest

from collectors.fetched import FetchedCollection


def batch(values: list[int]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"v": pa.array(values, pa.int64())})


def test_batches_come_back_in_fetch_order_and_the_folder_goes():
    pairs = [("a", batch([1])), ("b", batch([2, 3])), ("a", batch([4])), ("c", batch([]))]
    with FetchedCollection() as fetched:
        fetched.fetch(iter(pairs))
        folder = fetched.folder
        again = [(table, b.to_pydict()) for table, b in fetched.replay()]
    assert again == [(table, b.to_pydict()) for table, b in pairs]
    assert not folder.exists()


def test_a_failed_fetch_replays_its_error_and_nothing_else():
    def failing():
        yield "a", batch([1])
        raise RuntimeError("the API server went away")

    with FetchedCollection() as fetched:
        fetched.fetch(failing())
        with pytest.raises(RuntimeError, match="went away"):
            list(fetched.replay())

"""The incremental lineage refresh with inputs sent without a version facet, as real producers
send them: each such input is read as the version current when its run started, and a write
that arrives in a later load moves it. After every load the marts equal a full rebuild's, and
the graph equals the one a single load of every event gives."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from annex.settings import WarehouseSettings
from tests.helpers.lineage_warehouse import load, query
from tests.warehouse.models.test_lineage_refresh import _loads, _marts, _random_events, _refresh
from warehouse import Warehouse

EDGES = (
    "SELECT run_id, dataset_version_id, direction, named_version_id, resolution "
    "FROM core.lineage_run_io ORDER BY ALL"
)


def _versionless(events: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """The random history with the version facet dropped from about half of the inputs and a
    third of the outputs (an output without one is its run's version)."""
    rng = random.Random(seed * 7919)
    out = copy.deepcopy(events)
    for event in out:
        for side, share in (("inputs", 0.5), ("outputs", 0.3)):
            for item in event.get(side) or []:
                if "version" in item.get("facets", {}) and rng.random() < share:
                    del item["facets"]["version"]
    return out


@pytest.mark.parametrize("seed", range(8))
def test_incremental_refresh_equals_a_full_rebuild_with_versionless_inputs(tmp_path, seed):
    events = _versionless(_random_events(seed), seed)
    settings = WarehouseSettings(path=tmp_path / "one.duckdb", lock_timeout_seconds=5)
    whole = Warehouse(settings)
    load(whole, events)
    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5))
    for batch in _loads(events, random.Random(seed)):
        load(wh, batch, refresh=False)
        _refresh(wh)
        incremental = _marts(wh)
        _refresh(wh, full=True)
        assert incremental == _marts(wh), f"seed {seed}: the incremental refresh diverged"
    assert query(wh, EDGES) == query(whole, EDGES), f"seed {seed}: the graph depends on the cut"
    assert _marts(wh) == _marts(whole)
    resolved = query(
        whole, "SELECT count(*) FROM core.lineage_run_io WHERE resolution = 'as_of_start'"
    )
    assert resolved[0][0] > 0  # the histories do read versions without naming them

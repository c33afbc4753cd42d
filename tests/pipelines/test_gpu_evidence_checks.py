"""The GPU evidence checks' SQL on a hand-built warehouse: what they flag and what they do not."""

from __future__ import annotations

from pathlib import Path

from annex.settings import WarehouseSettings
from pipelines.defs.gpu_evidence.checks import samples_on_known_gpus
from warehouse import Warehouse

CLUSTER = "c1"


def _node(con, name: str, capacity: int, labels: dict[str, str]) -> None:
    con.execute(
        "INSERT INTO core.nodes (cluster, node_uid, node_name, gpu_capacity, labels, "
        "content_hash, valid_from, collection_id) "
        "VALUES (?, ?, ?, ?, ?, 0, TIMESTAMP '2026-11-01 00:00:00', 'k1')",
        [CLUSTER, "uid-" + name, name, capacity, labels],
    )


def _series(con, series_id: int, host: str, index: int) -> None:
    con.execute(
        "INSERT INTO core.gpu_telemetry_series (cluster, series_id, series_key, gpu_uuid, "
        "metric, node_name, gpu_index, first_collection_id, last_collection_id) "
        "VALUES (?, ?, ?, ?, 'gr_engine_active', ?, ?, 't1', 't1')",
        [CLUSTER, series_id, series_id, f"GPU-{host}-{index}", host, index],
    )


def test_series_on_mixed_mig_gpus_are_known_and_beyond_the_node_are_not(tmp_path: Path) -> None:
    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb"))
    with wh.writer() as con:
        # Mixed MIG: 4 of 8 GPUs partitioned, so nvidia.com/gpu capacity is 4, GFD counts 8.
        _node(con, "mixed", 4, {"nvidia.com/gpu.count": "8", "nvidia.com/mig.strategy": "mixed"})
        _node(con, "plain", 8, {})
        _series(con, 1, "mixed", 6)  # a partitioned GPU: known
        _series(con, 2, "plain", 7)
        outcome = samples_on_known_gpus(con, CLUSTER)
        assert outcome.passed, outcome.metadata
        _series(con, 3, "mixed", 8)  # no ninth GPU on that node
        _series(con, 4, "ghost", 0)  # a node the inventory never saw
        outcome = samples_on_known_gpus(con, CLUSTER)
    assert not outcome.passed
    assert outcome.metadata == {"series_on_unknown_gpus": 2, "series": 4}

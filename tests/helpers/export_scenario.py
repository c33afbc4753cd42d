"""A warehouse collected on simulated days, for the export tests: Kubernetes inventory from the
simulator and DCGM telemetry samples, each collection at a fixed instant of the simulated clock
(``warehouse.load.utc_now``, the time every collection records and stamps its rows with)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

import warehouse.load
from annex.settings import ClusterSettings, Settings, WarehouseSettings
from services.inventory import collect_cluster_inventory
from simulator.kubernetes import SimulatedCluster
from simulator.world import build_world
from warehouse import Warehouse, load_collection
from warehouse.models.telemetry import TELEMETRY_MODEL

CLUSTER = "sim-export"
DAY_ONE = datetime(2026, 11, 20, 10, 0)
GPUS = 4
MINUTES = 90


def new_warehouse(root: Path) -> tuple[Settings, Warehouse]:
    settings = Settings(warehouse=WarehouseSettings(path=root / "annex.duckdb"))
    return settings, Warehouse(settings.warehouse)


def collect_day(settings: Settings, wh: Warehouse, root: Path, at: datetime, seed: int) -> None:
    """One inventory and one telemetry collection at ``at``, then publish."""
    clock = itertools.count()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(warehouse.load, "utc_now", lambda: at + timedelta(seconds=next(clock)))
        with SimulatedCluster(build_world(nodes=12, seed=seed, now=at)) as sim:
            kubeconfig = sim.write_kubeconfig(root / f"kubeconfig-{seed}")
            result = collect_cluster_inventory(
                settings, wh, ClusterSettings(name=CLUSTER, kubeconfig=kubeconfig), publish=False
            )
        assert result.status == "succeeded"
        load_collection(wh, TELEMETRY_MODEL, cluster=CLUSTER, batches=_telemetry(at), publish=False)
    wh.publish()


def _telemetry(at: datetime) -> Iterator[tuple[str, pa.RecordBatch]]:
    """GPUS utilisation series sampled each minute over the first MINUTES of ``at``'s day."""
    yield (
        "telemetry_series",
        pa.RecordBatch.from_pydict(
            {
                "series_index": pa.array(range(GPUS), pa.uint32()),
                "gpu_uuid": [f"GPU-{i}" for i in range(GPUS)],
                "field_id": pa.array([1001] * GPUS, pa.uint16()),
                "metric": ["gr_engine_active"] * GPUS,
                "unit": ["ratio"] * GPUS,
                "kind": ["gauge"] * GPUS,
                "hostname": [f"node-{i // 2}" for i in range(GPUS)],
                "pod": pa.array([None] * GPUS, pa.string()),
                "namespace": pa.array([None] * GPUS, pa.string()),
                "labels": pa.array([[("instance", "x")]] * GPUS, pa.map_(pa.string(), pa.string())),
                "source": ["scrape"] * GPUS,
            }
        ),
    )
    midnight = datetime(at.year, at.month, at.day)
    n = GPUS * MINUTES
    yield (
        "telemetry_samples",
        pa.RecordBatch.from_pydict(
            {
                "ts": pa.array(
                    [midnight + timedelta(minutes=i % MINUTES) for i in range(n)],
                    pa.timestamp("us"),
                ),
                "series_index": pa.array([i // MINUTES for i in range(n)], pa.uint32()),
                "value": [round((i % 7) / 7, 3) for i in range(n)],
            }
        ),
    )

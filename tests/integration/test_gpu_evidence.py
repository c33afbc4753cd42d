"""services.gpu_evidence against the simulator: what the probe-job sensor sees, and a collection
that reads only the probe pods not read before."""

from __future__ import annotations

from pathlib import Path

import pytest

from annex.settings import ClusterSettings, KubernetesSettings, Settings, WarehouseSettings
from services.gpu_evidence import collect_gpu_benchmarks, completed_probe_pods, known_probe_pods
from simulator.kubernetes import SimulatedCluster
from simulator.world import build_world
from warehouse import Warehouse

pytestmark = pytest.mark.integration


def test_sensor_sees_finished_probe_pods_until_they_are_read(tmp_path: Path) -> None:
    world = build_world(20, seed=3)
    expected = {
        pod["metadata"]["uid"]
        for pod in world.pods
        if pod["metadata"]["namespace"] == "annex-probes"
        and pod["status"]["phase"] in ("Succeeded", "Failed")
    }
    assert expected
    settings = Settings(
        warehouse=WarehouseSettings(path=tmp_path / "w.duckdb"),
        kubernetes=KubernetesSettings(page_size=5),
    )
    with SimulatedCluster(world) as cluster:
        target = ClusterSettings(name="sim", kubeconfig=cluster.write_kubeconfig(tmp_path / "k"))
        assert completed_probe_pods(settings, target) == expected

        wh = Warehouse(settings.warehouse)
        result = collect_gpu_benchmarks(settings, wh, target, publish=False)
        assert result.row_counts["gpubench_pods"] == len(expected)
        assert known_probe_pods(wh, "sim") == expected
        again = collect_gpu_benchmarks(settings, wh, target, publish=False)
        assert again.row_counts.get("gpubench_records", 0) == 0

"""Training compute counts GPU-hours in physical GPUs, by one rule with capacity (issue 38 item 3).

A run's GPUs held through DRA claims count exactly like device-plugin ones; a time-sliced or MPS
replica is 1/replicas of its GPU, a HAMi pod nvidia.com/gpucores/100 of it (marts.gpu_held):
a run on 4 shares of one physical GPU is at most 1 GPU-hour per hour, and the physical limit
(GPU-seconds × dense peak) is over physical GPUs. Each case: one node, one run whose Job's pods
hold their GPUs for the whole hour T0..T0+1h.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from annex.model_registry import ModelRegistry, parse_model, registry_rows
from annex.settings import ComputeSettings, WarehouseSettings
from services.compute import PeakTable
from warehouse import Warehouse
from warehouse.models.compute import refresh_compute

T0 = datetime(2026, 11, 1)
NOW = T0 + timedelta(hours=2)
PEAK = 989.4e12  # H100 SXM dense bf16
CONFIG = ComputeSettings(default_mfu=0.35)
GPU = "nvidia.com/gpu"
CORES = "nvidia.com/gpucores"


def node(labels: dict[str, str], advertised: int) -> dict:
    return {"labels": labels, "resources": [(GPU, advertised)] if advertised else []}


# case: node, pods [(gpus, mechanism, extra (resource, amount) rows)], GPU-hours, GPUs touched
CASES = [
    pytest.param(
        node({"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"},
             32),
        [(1.0, "device_plugin", [])] * 4, 1.0, 1, id="4 time-sliced replicas of one GPU",
    ),
    pytest.param(
        node({"nvidia.com/gpu.replicas": "2", "nvidia.com/gpu.sharing-strategy": "mps"}, 16),
        [(1.0, "device_plugin", [])] * 3, 1.5, 2, id="3 MPS replicas, 2 per GPU",
    ),
    pytest.param(
        node({"nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": "1"}, 80),
        [(1.0, "device_plugin", [(CORES, 25)]), (1.0, "device_plugin", [(CORES, 50)])],
        0.75, 1, id="HAMi: gpucores/100 of a GPU",
    ),
    pytest.param(
        node({}, 0), [(2.0, "dra", [])], 2.0, 2, id="DRA-only node: GPUs through a claim",
    ),
    pytest.param(
        node({}, 0), [(0.5, "dra", []), (0.5, "dra", [])], 1.0, 1,
        id="DRA claim shared by two pods of the run",
    ),
    pytest.param(node({}, 8), [(2.0, "device_plugin", [])], 2.0, 2, id="unshared node"),
]  # fmt: skip


def registry() -> ModelRegistry:
    model = parse_model(
        {
            "name": "toy-lm",
            "provider": "Example Labs",
            "parameters": 1_000_000_000,
            "architecture": "dense decoder-only transformer",
            "licence": "LicenseRef-example",
            "modalities": {"input": ["text"], "output": ["text"]},
            "lineage": {"jobs": ["toy-lm.campaign"], "namespaces": ["team"]},
            "training": {"dtype": "bf16"},
        },
        Path("toy-lm.yaml"),
    )
    return ModelRegistry(models=(model,), directory=Path("models"))


def build(tmp_path: Path, the_node: dict, pods: list) -> Warehouse:
    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb"))
    wh.migrate()
    with wh.writer() as con:
        con.execute(
            "INSERT INTO core.nodes (cluster, node_uid, node_name, labels, gfd_product, "
            "gpu_resources, content_hash, valid_from, collection_id) VALUES "
            "('c', 'uid-n', 'n', ?, 'NVIDIA-H100-80GB-HBM3', ?, 0, ?, 'k1')",
            [
                the_node["labels"],
                [{"resource_name": r, "capacity": n, "allocatable": n} for r, n in the_node[
                    "resources"]],
                T0 - timedelta(days=1),
            ],
        )  # fmt: skip
        for i, (gpus, mechanism, extra) in enumerate(pods):
            claim = "claim" if mechanism == "dra" else None
            for resource, amount, claim_uid in [
                (GPU, gpus, claim),
                *((r, a, None) for r, a in extra),
            ]:
                con.execute(
                    "INSERT INTO core.gpu_allocations (cluster, pod_uid, namespace, pod_name, "
                    "job_name, node_name, resource_name, gpus, category, valid_from, "
                    "valid_from_source, valid_to, opened_collection_id, mechanism, claim_uid) "
                    "VALUES ('c', ?, 'team', ?, 'train-1', 'n', ?, ?, 'workload', ?, "
                    "'scheduled', ?, 'k1', ?, ?)",
                    [f"uid-p{i}", f"p{i}", resource, amount, T0, T0 + timedelta(hours=1),
                     mechanism, claim_uid],
                )  # fmt: skip
        for run_id, job, parent, stage, ended in (
            ("camp", "toy-lm.campaign", None, None, None),
            ("R1", "train-1", "camp", "PRETRAINING", T0 + timedelta(hours=1)),
        ):
            con.execute(
                "INSERT INTO core.lineage_runs (run_id, job_name, parent_run_id, state, "
                "started_at, ended_at, state_event_id, cluster, namespace, kubernetes_job_name, "
                "model_name, stage) VALUES (?, ?, ?, ?, ?, ?, ?, 'c', 'team', ?, 'toy-lm', ?)",
                [run_id, job, parent, "COMPLETE" if ended else "START", T0, ended,
                 f"ev-{run_id}", job if parent else None, stage],
            )  # fmt: skip
        refresh_compute(con, CONFIG, registry_rows(registry()), PeakTable(), now=NOW)
    return wh


@pytest.mark.parametrize(("the_node", "pods", "gpu_hours", "gpus"), CASES)
def test_a_runs_gpu_hours_are_physical_gpus_whatever_the_mechanism_or_sharing(
    tmp_path, the_node, pods, gpu_hours, gpus
) -> None:
    wh = build(tmp_path, the_node, pods)
    with duckdb.connect(str(wh.path), read_only=True) as con:
        [(hours, counted_gpus, physical_max, hardware)] = con.execute(
            "SELECT gpu_hours, gpus, physical_max_flop, hardware_flop "
            "FROM marts.training_run_compute WHERE run_id = 'R1'"
        ).fetchall()
        [(group_hours,)] = con.execute(
            "SELECT sum(gpu_hours) FROM marts.training_run_gpus WHERE run_id = 'R1'"
        ).fetchall()
    assert hours == pytest.approx(gpu_hours)
    assert group_hours == pytest.approx(gpu_hours)
    assert counted_gpus == gpus
    # within physics: never more than the physical GPUs' peak over the hour
    assert physical_max == pytest.approx(gpu_hours * 3600 * PEAK)
    assert hardware <= physical_max

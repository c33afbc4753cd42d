"""A DRA training run's lineage plans its tokens on the GPUs its claims really hold (issue 38
item 5): a Job whose pods hold `gpus_per_pod` GPUs each through ResourceClaims counts them as a
device-plugin Job does, never as 1 GPU."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.lineage.catalog import build_catalog
from simulator.lineage.producer import WHOLE_GPU_RESOURCES, _Lineage
from simulator.world import build_world
from simulator.world.dra import GPU_CLASS


@pytest.fixture(scope="module")
def world():
    return build_world(60, seed=7, features={"dra"})


def test_a_dra_runs_tokens_count_every_gpu_its_claims_hold(world) -> None:
    lineage = _Lineage(world, build_catalog(world.seed, world.now), "sim")
    dra_runs = [r for r in world.training_runs if r.gpu_resource == GPU_CLASS and r.started]
    assert dra_runs, "the dra world trains through claims"
    for run in dra_runs:
        model = run.model
        as_device_plugin = dataclasses.replace(run, gpu_resource="nvidia.com/gpu")
        one_gpu = dataclasses.replace(run, gpu_resource="nvidia.com/mig-1g.10gb")
        assert run.pods * run.gpus_per_pod > 1
        assert lineage._job_tokens(run, model) == lineage._job_tokens(as_device_plugin, model)
        assert lineage._job_tokens(run, model) > lineage._job_tokens(one_gpu, model)


def test_whole_gpus_are_named_by_either_mechanism() -> None:
    assert set(WHOLE_GPU_RESOURCES) == {"nvidia.com/gpu", GPU_CLASS}

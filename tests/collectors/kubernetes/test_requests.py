"""PodRequests (upstream component-helpers rule) and quantity parsing, table-driven."""

from __future__ import annotations

from fractions import Fraction

import pytest

from collectors.kubernetes.quantity import (
    parse_bytes,
    parse_count,
    parse_millicores,
    parse_quantity,
)
from collectors.kubernetes.requests import (
    CORES_PERCENT,
    DEVICES,
    ContainerResources,
    container_gpu_requests,
    gpu_resource_kind,
    is_gpu_accounted,
    is_gpu_resource,
    pod_gpu_requests,
)

GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-1g.10gb"


def c(gpus: int | None = None, *, limit: int | None = None, sidecar: bool = False, **extra: str):
    requests = {"cpu": "1", **({GPU: str(gpus)} if gpus is not None else {}), **extra}
    limits = {GPU: str(limit)} if limit is not None else {}
    return ContainerResources(requests, limits, "Always" if sidecar else None)


@pytest.mark.parametrize(
    ("containers", "init", "overhead", "expected"),
    [
        pytest.param([c(8)], [], None, {GPU: 8}, id="one container"),
        pytest.param([c(2), c(3)], [], None, {GPU: 5}, id="containers add up"),
        pytest.param([c()], [], None, {}, id="no gpus"),
        pytest.param([c(limit=4)], [], None, {GPU: 4}, id="limits only: request = limit"),
        pytest.param([c(2)], [c(4)], None, {GPU: 4}, id="init container larger than main"),
        pytest.param([c(4)], [c(2), c(3)], None, {GPU: 4}, id="init containers run one at a time"),
        # sidecar (restartPolicy Always) runs beside the main containers: it adds up.
        pytest.param([c(2)], [c(1, sidecar=True)], None, {GPU: 3}, id="sidecar adds to main"),
        # sidecar BEFORE a regular init container: that init runs beside it (1 + 4 = 5 > 2 + 1).
        pytest.param(
            [c(2)], [c(1, sidecar=True), c(4)], None, {GPU: 5}, id="sidecar before init adds"
        ),
        # sidecar AFTER the init container: the init ran alone (4), main + sidecar = 3.
        pytest.param(
            [c(2)], [c(4), c(1, sidecar=True)], None, {GPU: 4}, id="sidecar after init alone"
        ),
        pytest.param(
            [c(1)],
            [c(2, sidecar=True), c(3, sidecar=True)],
            None,
            {GPU: 6},
            id="two sidecars cumulative",
        ),
        pytest.param([c(8)], [], {GPU: "1"}, {GPU: 9}, id="overhead added"),
        pytest.param([c(8)], [], {"cpu": "250m"}, {GPU: 8}, id="cpu overhead ignored"),
        pytest.param(
            [ContainerResources({MIG: "2"}, {MIG: "2"}), c(1)],
            [],
            None,
            {MIG: 2, GPU: 1},
            id="mig slices separate resource",
        ),
        pytest.param(
            [ContainerResources({}, {"amd.com/gpu": "2"})], [], None, {"amd.com/gpu": 2}, id="amd"
        ),
    ],
)
def test_pod_gpu_requests(containers, init, overhead, expected):
    assert pod_gpu_requests(containers, init, overhead) == expected


def test_request_wins_over_limit_when_both_set():
    assert container_gpu_requests({GPU: "2"}, {GPU: "2"}) == {GPU: 2}
    assert container_gpu_requests(None, {GPU: "3"}) == {GPU: 3}


@pytest.mark.parametrize("bad", ["0.5", "-1", "abc", "1.5", "500m"])
def test_fractional_or_garbage_gpu_quantities_raise(bad):
    with pytest.raises(ValueError, match=GPU):
        pod_gpu_requests([ContainerResources({GPU: bad}, {})])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (GPU, True),
        (MIG, True),
        ("nvidia.com/gpu.shared", True),
        ("amd.com/gpu", True),
        ("gpu.intel.com/i915", True),
        ("nvidia.com/gpucores", False),
        ("nvidia.com/gpumem", False),
        ("nvidia.com/gpumem-percentage", False),
        ("cpu", False),
        ("memory", False),
        ("hugepages-2Mi", False),
        ("example.com/foo", False),
    ],
)
def test_is_gpu_resource(name, expected):
    assert is_gpu_resource(name) is expected


@pytest.mark.parametrize(
    ("name", "kind", "accounted"),
    [
        (GPU, DEVICES, True),
        (MIG, DEVICES, True),
        ("nvidia.com/mig-1g.10gb.shared", DEVICES, True),
        ("nvidia.com/gpu.shared", DEVICES, True),
        ("nvidia.com/gpucores", CORES_PERCENT, True),  # HAMi: a share of the requested GPUs
        ("nvidia.com/gpumem", None, False),  # HAMi: memory in MiB, never a GPU count
        ("nvidia.com/gpumem-percentage", None, False),
        ("nvidia.com/gpux", None, False),
        ("cpu", None, False),
    ],
)
def test_one_rule_says_devices_share_or_not_a_gpu(name, kind, accounted):
    assert gpu_resource_kind(name) == kind
    assert is_gpu_accounted(name) is accounted


def test_a_hami_pod_keeps_its_gpus_and_cores_never_its_memory():
    hami = ContainerResources(
        {GPU: "1", "nvidia.com/gpucores": "25", "nvidia.com/gpumem": "20000"}, {}
    )
    assert pod_gpu_requests([hami]) == {GPU: 1, "nvidia.com/gpucores": 25}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8", Fraction(8)),
        ("500m", Fraction(1, 2)),
        ("1Ki", Fraction(1024)),
        ("2Gi", Fraction(2 * 2**30)),
        ("1.5", Fraction(3, 2)),
        ("1e3", Fraction(1000)),
        ("1E-3", Fraction(1, 1000)),
        ("3k", Fraction(3000)),
        ("100u", Fraction(1, 10_000)),
        (".5", Fraction(1, 2)),
        ("+2", Fraction(2)),
        (4, Fraction(4)),
    ],
)
def test_parse_quantity(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("bad", ["", "1KiB", "Mi", "1 Gi", "--1", "0x10", True])
def test_parse_quantity_rejects(bad):
    with pytest.raises(ValueError):
        parse_quantity(bad)


def test_units():
    assert parse_count("8") == 8
    assert parse_count("2k") == 2000
    assert parse_millicores("191450m") == 191450
    assert parse_millicores("192") == 192_000
    assert parse_millicores("0.0001") == 1  # rounded up, as the kubelet does
    assert parse_bytes("2097152Ki") == 2_147_483_648
    assert parse_bytes("1.5k") == 1500

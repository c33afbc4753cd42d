"""DRA objects (resource.k8s.io/v1): ResourceSlices' devices and ResourceClaims' allocations
decoded into the collector's tables; API servers without DRA are not listed for it, never an
error."""

from __future__ import annotations

import json

import pytest

from annex.settings import TOPOLOGY_PRESETS, KubernetesSettings
from collectors.kubernetes import RESOURCES, collect_cluster
from collectors.kubernetes.collect import DRA_DISCOVERY_PATH
from collectors.kubernetes.decode import DecodeContext, ResourceClaimDecoder, ResourceSliceDecoder
from tests.helpers import kubernetes_api as t
from tests.helpers.dra_objects import GPU, channel, claim, gpu, mig, resource_slice

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"


def page(items: list[dict]) -> bytes:
    return json.dumps({"metadata": {"resourceVersion": "9"}, "items": items}).encode()


DEVICE_CASES = [
    pytest.param(
        gpu("gpu-0", "GPU-aaa"),
        ("gpu-0", "gpu", "GPU-aaa", None, None, "NVIDIA H100 80GB HBM3", 81559 * 2**20),
        id="whole GPU",
    ),
    pytest.param(
        mig("gpu-4-mig-1g10gb-0", "GPU-bbb", "1g.10gb"),
        (
            "gpu-4-mig-1g10gb-0",
            "mig",
            "GPU-bbb",
            "MIG-gpu-4-mig-1g10gb-0",
            "1g.10gb",
            "NVIDIA A100-SXM4-80GB",
            9856 * 2**20,
        ),
        id="MIG device: its physical GPU is the parent",
    ),
    pytest.param(
        channel("channel-0"),
        ("channel-0", "channel", None, None, None, None, None),
        id="IMEX channel: not a GPU",
    ),
    pytest.param(
        gpu("gpu-1", "GPU-ccc", memory="lots"),
        ("gpu-1", "gpu", "GPU-ccc", None, None, "NVIDIA H100 80GB HBM3", None),
        id="unreadable memory loses the figure, not the slice",
    ),
]


@pytest.mark.parametrize(("device", "row"), DEVICE_CASES)
def test_slice_devices_are_decoded_with_their_physical_gpu(device: dict, row: tuple) -> None:
    decoder = ResourceSliceDecoder(DecodeContext())
    batch, rejected = decoder.build(
        decoder.decode(page([resource_slice("s1", "n1", GPU, [device])])), 0
    )
    assert rejected == []
    (got,) = batch.to_pylist()
    assert (got["node_name"], got["driver"], got["dra_pool"]) == ("n1", GPU, "n1")
    (decoded,) = got["devices"]
    assert tuple(decoded.values()) == row


CLAIM_CASES = [
    pytest.param(
        claim("c1", [("gpus", GPU, "n1", "gpu-0"), ("gpus", GPU, "n1", "gpu-1")], ["p1"]),
        (True, 2, ["p1"]),
        id="a pod holding two GPUs through a claim",
    ),
    pytest.param(
        claim("c2", [("gpu", GPU, "n1", "gpu-2")], ["p1", "p2"]),
        (True, 1, ["p1", "p2"]),
        id="a claim shared by two pods",
    ),
    pytest.param(claim("c3", [], []), (False, 0, []), id="pending: not allocated"),
]


@pytest.mark.parametrize(("body", "expected"), CLAIM_CASES)
def test_claims_keep_their_results_and_pods(body: dict, expected: tuple) -> None:
    decoder = ResourceClaimDecoder(DecodeContext())
    batch, rejected = decoder.build(decoder.decode(page([body])), 0)
    assert rejected == []
    (got,) = batch.to_pylist()
    allocated, results, pods = expected
    assert (got["allocated"], len(got["results"]), got["reserved_for_pod_uids"]) == (
        allocated,
        results,
        pods,
    )
    assert all(r["dra_pool"] == "n1" for r in got["results"])


def collect(fake: t.FakeCluster, **settings: int) -> list:
    return list(
        collect_cluster(
            t.FakeApiClient(fake),
            cluster="c",
            settings=KubernetesSettings(**settings),
            topology_levels=TOPOLOGY_PRESETS["generic"],
            in_process=True,
        )
    )


def served(paths: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Every list path plus DRA's discovery document (the fake answers 404 for the rest)."""
    return {DRA_DISCOVERY_PATH: []} | paths


def test_an_api_server_without_resource_k8s_io_v1_is_not_listed_for_dra() -> None:
    fake = t.FakeCluster({r.api_path: [] for r in RESOURCES})  # no discovery: 404
    batches = collect(fake)
    table, lists = batches[-1]
    assert table == "lists"
    listed = {row["resource"] for row in lists.to_pylist()}
    assert "pods" in listed
    assert not listed & {"resource_slices", "resource_claims"}
    assert SLICES not in {path for path, _ in fake.requests}


def test_dra_objects_are_collected_page_by_page() -> None:
    paths: dict[str, list[dict]] = {r.api_path: [] for r in RESOURCES}
    paths[SLICES] = [
        resource_slice(f"s{i}", f"n{i}", GPU, [gpu("gpu-0", f"GPU-{i}")]) for i in range(5)
    ]
    paths[CLAIMS] = [claim(f"c{i}", [("g", GPU, f"n{i}", "gpu-0")], [f"p{i}"]) for i in range(3)]
    fake = t.FakeCluster(served(paths))
    batches = collect(fake, page_size=2)
    pages = {row["resource"]: row["pages"] for row in batches[-1][1].to_pylist()}
    assert (pages["resource_slices"], pages["resource_claims"]) == (3, 2)
    rows = {
        table: sum(b.num_rows for name, b in batches if name == table)
        for table in ("resource_slices", "resource_claims")
    }
    assert rows == {"resource_slices": 5, "resource_claims": 3}

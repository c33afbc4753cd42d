"""Decoding what a pending pod's DRA claims ask for (issue 38): the pod's spec.resourceClaims
with the claims generated from templates, claims' and templates' device requests (count,
allocationMode All, firstAvailable), in the shapes resource.k8s.io/v1 serves."""

from __future__ import annotations

import json

import pytest

from collectors.kubernetes.decode import (
    DecodeContext,
    PodDecoder,
    ResourceClaimDecoder,
    ResourceClaimTemplateDecoder,
)
from tests.helpers import kubernetes_api as t


def page(items: list[dict]) -> bytes:
    return json.dumps({"metadata": {"resourceVersion": "9"}, "items": items}).encode()


def claim_spec(*requests: dict) -> dict:
    return {"devices": {"requests": list(requests)}}


def test_a_pod_names_its_claims_and_the_claim_generated_from_its_template() -> None:
    pod = t.pod("w", uid="p1", node_name=None, phase="Pending", gpus=0)
    pod["spec"]["resourceClaims"] = [
        {"name": "gpus", "resourceClaimTemplateName": "train-gpus"},
        {"name": "shared", "resourceClaimName": "team-gpus"},
        {"name": "later", "resourceClaimTemplateName": "train-gpus"},
    ]
    pod["status"]["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": "w-gpus-x7k"}]
    decoder = PodDecoder(DecodeContext())
    batch, rejected = decoder.build(decoder.decode(page([pod])), 0)
    assert rejected == []
    (row,) = batch.to_pylist()
    assert [tuple(s.values()) for s in row["claim_sources"]] == [
        ("gpus", "w-gpus-x7k", "train-gpus"),
        ("shared", "team-gpus", None),
        ("later", None, "train-gpus"),  # its claim not created yet: the template says
    ]
    assert (row["queued"], row["gpus"]) == (True, 0)


def test_a_pod_without_claims_has_none() -> None:
    decoder = PodDecoder(DecodeContext())
    batch, _ = decoder.build(decoder.decode(page([t.pod("w", uid="p1")])), 0)
    assert batch.to_pylist()[0]["claim_sources"] == []


REQUESTS = [
    pytest.param(
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}},
        ("gpu", "gpu.nvidia.com", "ExactCount", 2),
        id="count 2 (ExactCount by default)",
    ),
    pytest.param(
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}},
        ("gpu", "gpu.nvidia.com", "ExactCount", 1),
        id="no count: one device",
    ),
    pytest.param(
        {"name": "all", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}},
        ("all", "gpu.nvidia.com", "All", None),
        id="allocationMode All: count unknown, never guessed",
    ),
    pytest.param(
        {
            "name": "gpu",
            "firstAvailable": [
                {"name": "big", "deviceClassName": "gpu.nvidia.com", "count": 4},
                {"name": "small", "deviceClassName": "mig.nvidia.com", "count": 1},
            ],
        },
        ("gpu", "gpu.nvidia.com", "ExactCount", 4),
        id="firstAvailable: the first alternative",
    ),
]


@pytest.mark.parametrize(("request_", "expected"), REQUESTS)
def test_claims_keep_their_device_requests(request_: dict, expected: tuple) -> None:
    body = {
        "metadata": {"name": "c", "namespace": "team-a", "uid": "c1"},
        "spec": claim_spec(request_),
    }
    decoder = ResourceClaimDecoder(DecodeContext())
    batch, rejected = decoder.build(decoder.decode(page([body])), 0)
    assert rejected == []
    (row,) = batch.to_pylist()
    assert [tuple(r.values()) for r in row["device_requests"]] == [expected]
    assert row["allocated"] is False


@pytest.mark.parametrize(("request_", "expected"), REQUESTS)
def test_templates_keep_the_requests_their_claims_will_carry(
    request_: dict, expected: tuple
) -> None:
    body = {
        "metadata": {"name": "train-gpus", "namespace": "team-a", "uid": "t1"},
        "spec": {"spec": claim_spec(request_)},
    }
    decoder = ResourceClaimTemplateDecoder(DecodeContext())
    batch, rejected = decoder.build(decoder.decode(page([body])), 0)
    assert rejected == []
    (row,) = batch.to_pylist()
    assert (row["claim_template_uid"], row["namespace"], row["claim_template_name"]) == (
        "t1",
        "team-a",
        "train-gpus",
    )
    assert [tuple(r.values()) for r in row["device_requests"]] == [expected]

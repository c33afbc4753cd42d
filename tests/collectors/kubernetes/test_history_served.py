"""Watch mode follows an optional API group's resources (DRA's resource.k8s.io/v1, Kueue's CRDs)
only where the API server serves it, as the snapshot collector lists them (issue 38)."""

from __future__ import annotations

import pytest

from annex.settings import KubernetesSettings
from collectors.kubernetes import RESOURCES
from collectors.kubernetes.collect import DRA_DISCOVERY_PATH
from collectors.kubernetes.history import WATCHED, served
from collectors.kubernetes.kueue import DISCOVERY_PATH as KUEUE_DISCOVERY_PATH
from tests.helpers import kubernetes_api as t

CORE = ("pods", "nodes", "jobs", "events")
DRA = ("resource_slices", "resource_claims")
KUEUE = tuple(name for name in WATCHED if name.startswith("kueue_"))


@pytest.mark.parametrize(
    ("discovery", "expected"),
    [
        pytest.param((), CORE, id="neither"),
        pytest.param((DRA_DISCOVERY_PATH,), CORE + DRA, id="dra"),
        pytest.param((KUEUE_DISCOVERY_PATH,), CORE + KUEUE, id="kueue"),
        pytest.param((DRA_DISCOVERY_PATH, KUEUE_DISCOVERY_PATH), WATCHED, id="both"),
    ],
)
def test_only_the_groups_the_server_serves_are_watched(discovery, expected) -> None:
    fake = t.FakeCluster({r.api_path: [] for r in RESOURCES} | {path: [] for path in discovery})
    kept = served(t.FakeApiClient(fake), KubernetesSettings())  # type: ignore[arg-type]
    assert set(kept) == set(expected)
    assert kept == tuple(name for name in WATCHED if name in expected)  # in WATCHED's order
    # one discovery request per group, none per resource
    asked = [path for path, _ in fake.requests if path.endswith(("/v1", "/v1beta1"))]
    assert sorted(asked) == sorted({DRA_DISCOVERY_PATH, KUEUE_DISCOVERY_PATH})

"""DRA, ComputeDomain and Kueue resources served by the simulated API server.

Real kubectl (TLS: kubectl sends tokens only over TLS) finds them through discovery and lists
every object with -o json in chunks; the `kubernetes` client pages and watches them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from kubernetes import client, config, watch

from simulator.kubernetes import SimulatedCluster
from simulator.world import build_world

pytestmark = pytest.mark.integration

# kubectl resource name -> (world attribute, kind)
SERVED = {
    "resourceclaims": ("resource_claims", "ResourceClaim"),
    "resourceslices": ("resource_slices", "ResourceSlice"),
    "deviceclasses": ("device_classes", "DeviceClass"),
    "resourceclaimtemplates": ("resource_claim_templates", "ResourceClaimTemplate"),
    "computedomains": ("compute_domains", "ComputeDomain"),
    "resourceflavors": ("resource_flavors", "ResourceFlavor"),
    "clusterqueues": ("cluster_queues", "ClusterQueue"),
    "localqueues": ("local_queues", "LocalQueue"),
    "workloads": ("workloads", "Workload"),
}


@pytest.fixture(scope="module")
def world():
    return build_world(60, seed=7, features={"dra", "sharing", "kueue"})


@pytest.fixture(scope="module")
def cluster(world, tmp_path_factory):
    with SimulatedCluster(world, tls=True, bookmark_interval_seconds=0.2) as running:
        running.home = tmp_path_factory.mktemp("kubectl-home")  # type: ignore[attr-defined]
        running.kubeconfig = running.write_kubeconfig(running.home / "kubeconfig")  # type: ignore[attr-defined]
        yield running


@pytest.fixture(scope="module")
def kubectl(cluster):
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.fail(
            "kubectl is not on PATH: `make test` installs it (Debian package kubernetes-client)"
        )

    def run(*args: str) -> str:
        environment = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        environment["HOME"] = str(cluster.home)
        command = [
            binary,
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--cache-dir",
            str(cluster.home / "cache"),
            "--request-timeout",
            "60s",
            *args,
        ]
        finished = subprocess.run(
            command, capture_output=True, text=True, env=environment, timeout=120, check=False
        )
        assert finished.returncode == 0, finished.stderr
        return finished.stdout

    return run


@pytest.fixture(scope="module")
def api_client(cluster):
    configuration = client.Configuration()
    config.load_kube_config(str(cluster.kubeconfig), client_configuration=configuration)
    api = client.ApiClient(configuration)
    yield api
    api.close()


@pytest.mark.parametrize("resource", sorted(SERVED))
def test_kubectl_lists_every_object_in_chunks(kubectl, cluster, world, resource):
    attribute, kind = SERVED[resource]
    expected = getattr(world, attribute)
    assert expected
    cluster.clear_requests()
    output = json.loads(kubectl("get", resource, "-A", "-o", "json", "--chunk-size=3"))
    assert output["kind"] == "List"
    assert sorted(i["metadata"]["uid"] for i in output["items"]) == sorted(
        o["metadata"]["uid"] for o in expected
    )
    assert {i["kind"] for i in output["items"]} == {kind}
    pages = [r for r in cluster.requests if r.path.endswith(f"/{resource}") and r.status == 200]
    assert len(pages) == -(-len(expected) // 3)


def test_kubectl_prints_resourceslices_and_claims_by_name(kubectl, world):
    names = kubectl("get", "resourceslices,deviceclasses", "-o", "name").split()
    assert len(names) == len(world.resource_slices) + len(world.device_classes)
    assert "deviceclass.resource.k8s.io/gpu.nvidia.com" in names
    table = kubectl("get", "resourceclaims", "-A").splitlines()
    assert table[0].split()[:2] == ["NAMESPACE", "NAME"] and len(table) == 1 + len(
        world.resource_claims
    )
    short = kubectl("get", "cq", "-o", "name").split()
    assert sorted(short) == sorted(
        f"clusterqueue.kueue.x-k8s.io/{q['metadata']['name']}" for q in world.cluster_queues
    )


def test_client_pages_dra_objects(api_client, world):
    resource = client.ResourceV1Api(api_client)
    seen, token = [], None
    while True:
        page = resource.list_resource_claim_for_all_namespaces(limit=4, _continue=token)
        seen += [c.metadata.uid for c in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert sorted(seen) == sorted(c["metadata"]["uid"] for c in world.resource_claims)
    slices = resource.list_resource_slice(field_selector="spec.driver=compute-domain.nvidia.com")
    assert len(slices.items) == sum(
        1 for s in world.resource_slices if s["spec"]["driver"] == "compute-domain.nvidia.com"
    )
    assert {s.spec.pool.name for s in slices.items} == {s.spec.node_name for s in slices.items}
    custom = client.CustomObjectsApi(api_client)
    workloads = custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "workloads")
    assert len(workloads["items"]) == len(world.workloads)


def _watch_claims(resource: client.ResourceV1Api, **options) -> list[dict]:
    """Watch events as JSON lines (the client's Watch cannot name this list's model in
    kubernetes 37: it looks for `V1ResourceClaim`, generated as `ResourceV1ResourceClaim`)."""
    response = resource.list_resource_claim_for_all_namespaces(
        watch=True, timeout_seconds=1, _preload_content=False, **options
    )
    try:
        return [json.loads(line) for line in response.data.splitlines() if line.strip()]
    finally:
        response.release_conn()


def test_watch_sees_claim_changes(api_client, cluster, world):
    resource = client.ResourceV1Api(api_client)
    initial = _watch_claims(resource)
    assert [e["type"] for e in initial] == ["ADDED"] * len(world.resource_claims)
    assert {e["object"]["kind"] for e in initial} == {"ResourceClaim"}
    start = str(cluster.resource_version)
    claim = world.resource_claims[0]["metadata"]
    cluster.mutate(
        "resourceclaims",
        claim["name"],
        lambda c: c["metadata"].setdefault("labels", {}).update(touched="1"),
        claim["namespace"],
    )
    events = [e for e in _watch_claims(resource, resource_version=start) if e["type"] != "BOOKMARK"]
    assert [e["type"] for e in events] == ["MODIFIED"]
    assert events[0]["object"]["metadata"]["labels"]["touched"] == "1"
    slices = list(watch.Watch().stream(resource.list_resource_slice, timeout_seconds=1))
    assert len(slices) == len(world.resource_slices)
    assert slices[0]["object"].spec.pool.name == slices[0]["object"].spec.node_name

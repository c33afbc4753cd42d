"""Real kubectl against the simulated API server (TLS: kubectl sends tokens only over TLS)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from simulator.kubernetes import SimulatedCluster
from simulator.world import build_world

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def world():
    return build_world(40, seed=9)


@pytest.fixture(scope="module")
def kubectl(world, tmp_path_factory):
    """Run kubectl against a fresh simulated cluster, isolated from ~/.kube."""
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.fail(
            "kubectl is not on PATH: `make test` installs it (Debian package kubernetes-client)"
        )
    home = tmp_path_factory.mktemp("kubectl-home")
    with SimulatedCluster(world, tls=True) as cluster:
        kubeconfig = cluster.write_kubeconfig(home / "kubeconfig")

        def run(*args: str) -> str:
            environment = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
            environment["HOME"] = str(home)
            command = [
                binary,
                "--kubeconfig",
                str(kubeconfig),
                "--cache-dir",
                str(home / "cache"),
                "--request-timeout",
                "60s",
                *args,
            ]
            finished = subprocess.run(
                command, capture_output=True, text=True, env=environment, timeout=120, check=False
            )
            assert finished.returncode == 0, finished.stderr
            return finished.stdout

        run.cluster = cluster  # type: ignore[attr-defined]
        yield run


def test_get_nodes_prints_every_node(kubectl, world):
    lines = kubectl("get", "nodes").splitlines()
    assert lines[0].split()[0] == "NAME"
    assert sorted(line.split()[0] for line in lines[1:]) == sorted(
        n["metadata"]["name"] for n in world.nodes
    )


def test_get_pods_json_in_chunks_returns_every_pod(kubectl, world):
    kubectl.cluster.clear_requests()
    output = json.loads(kubectl("get", "pods", "-A", "-o", "json", "--chunk-size=50"))
    assert output["kind"] == "List"
    uids = [item["metadata"]["uid"] for item in output["items"]]
    assert sorted(uids) == sorted(p["metadata"]["uid"] for p in world.pods)
    pages = [r for r in kubectl.cluster.requests if r.path == "/api/v1/pods"]
    assert len(pages) == -(-len(world.pods) // 50)
    assert all(r.query["limit"] == ["50"] for r in pages)
    assert all(r.status == 200 for r in pages)


def test_get_nodes_and_pods_together(kubectl, world):
    output = json.loads(kubectl("get", "nodes,pods", "-A", "-o", "json", "--chunk-size=500"))
    kinds = [item["kind"] for item in output["items"]]
    assert kinds.count("Node") == len(world.nodes)
    assert kinds.count("Pod") == len(world.pods)
    names = {item["metadata"]["name"] for item in output["items"] if item["kind"] == "Node"}
    assert names == {n["metadata"]["name"] for n in world.nodes}


def test_get_other_resources_by_name(kubectl, world):
    names = kubectl("get", "jobs,priorityclasses", "-A", "-o", "name").split()
    assert len(names) == len(world.jobs) + len(world.priority_classes)
    assert "priorityclass.scheduling.k8s.io/placeholder" in names

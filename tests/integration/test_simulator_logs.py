"""The pod log subresource of the simulated API server: raw HTTP, the Python client, kubectl.

Expected answers are upstream's (pkg/registry/core/pod: validateContainer, LogLocation;
ValidatePodLogOptions; the kubelet's validateContainerLogStatus and its log reader).
"""

from __future__ import annotations

import copy
import http.client
import json
import os
import shutil
import subprocess
from datetime import datetime, timedelta
from urllib.parse import quote, urlsplit

import orjson
import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from simulator.kubernetes import Fault, SimulatedCluster
from simulator.world import build_world

pytestmark = pytest.mark.integration

PROBES = "annex-probes"


@pytest.fixture(scope="module")
def world():
    return build_world(30, seed=13)


@pytest.fixture(scope="module")
def cluster(world):
    with SimulatedCluster(world) as running:
        yield running


@pytest.fixture(autouse=True)
def no_faults(cluster):
    cluster.faults.clear()
    yield
    cluster.faults.clear()


@pytest.fixture(scope="module")
def probe(world) -> dict:
    """The probe pod whose log carries the planted faults (it has every kind of line)."""
    name = world.probe_faults["duplicate"].pod
    return next(p for p in world.pods if p["metadata"]["name"] == name)


def raw(cluster: SimulatedCluster, path: str, token: bool = True):
    url = urlsplit(cluster.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    headers = {"Authorization": f"Bearer {cluster.token}"} if token else {}
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, dict(response.headers), body


def log_path(pod: dict, query: str = "") -> str:
    metadata = pod["metadata"]
    path = f"/api/v1/namespaces/{metadata['namespace']}/pods/{metadata['name']}/log"
    return f"{path}?{query}" if query else path


def text_of(world, pod: dict) -> str:
    return world.pod_logs[(pod["metadata"]["namespace"], pod["metadata"]["name"])]


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_log_is_the_worlds_text_as_text_plain(cluster, world, probe):
    status, headers, body = raw(cluster, log_path(probe, "container=gpubench"))
    assert status == 200 and headers["Content-Type"] == "text/plain"
    assert body.decode() == text_of(world, probe)
    # the only container is the default
    assert raw(cluster, log_path(probe))[2] == body
    records = [r for r in cluster.requests if r.path == log_path(probe)]
    assert [(r.status, r.query) for r in records[-2:]] == [
        (200, {"container": ["gpubench"]}),
        (200, {}),
    ]


def test_tail_limit_and_timestamps(cluster, world, probe):
    lines = text_of(world, probe).splitlines()
    assert raw(cluster, log_path(probe, "tailLines=3"))[2].decode().splitlines() == lines[-3:]
    assert raw(cluster, log_path(probe, "tailLines=0"))[2] == b""
    assert (
        raw(cluster, log_path(probe, f"tailLines={len(lines) + 5}"))[2].decode()
        == "\n".join(lines) + "\n"
    )
    assert raw(cluster, log_path(probe, "limitBytes=10"))[2] == lines[0].encode()[:10]
    stamped = raw(cluster, log_path(probe, "timestamps=true"))[2].decode().splitlines()
    state = probe["status"]["containerStatuses"][0]["state"]["terminated"]
    started, finished = epoch(state["startedAt"]), epoch(state["finishedAt"])
    times = []
    repeated = world.probe_faults["duplicate"].line - 1  # a copy keeps the original's ts
    for number, (line, original) in enumerate(zip(stamped, lines, strict=True)):
        stamp, _, rest = line.partition(" ")
        assert rest == original and stamp.endswith("Z")
        moment = epoch(stamp[:19] + "+00:00") + float("0" + stamp[19:-1] if "." in stamp else 0)
        times.append(moment)
        assert started <= moment <= finished
        if original.startswith("{") and original.endswith("}") and number != repeated:
            assert json.loads(original)["ts"] == stamp[:19] + "Z", "records' ts = line time"
    assert times == sorted(times)
    limited = raw(cluster, log_path(probe, "timestamps=1&tailLines=1&limitBytes=40"))[2]
    assert limited == (stamped[-1] + "\n").encode()[:40]


def test_since_filters_by_line_time(cluster, world, probe):
    everything = raw(cluster, log_path(probe))[2]
    now = world.now
    assert raw(cluster, log_path(probe, "sinceSeconds=36000"))[2] == everything
    assert raw(cluster, log_path(probe, "sinceSeconds=60"))[2] == b""  # the probe ran ~2 h ago
    stamped = raw(cluster, log_path(probe, "timestamps=true"))[2].decode().splitlines()
    middle = stamped[len(stamped) // 2].split(" ")[0]
    since = quote(middle[:19] + "Z")
    later = raw(cluster, log_path(probe, f"sinceTime={since}"))[2].decode().splitlines()
    assert 0 < len(later) < len(stamped)
    assert later[-1] == stamped[-1].partition(" ")[2]
    seconds = int((now - datetime.fromisoformat(middle[:19] + "+00:00")).total_seconds())
    assert len(raw(cluster, log_path(probe, f"sinceSeconds={seconds}"))[2].splitlines()) in (
        len(later),
        len(later) + 1,
    )
    assert now - timedelta(hours=3) < datetime.fromisoformat(middle[:19] + "+00:00") < now


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ("tailLines=-1", "tailLines", "Invalid value: -1: must be greater than or equal to 0"),
        ("limitBytes=0", "limitBytes", "Invalid value: 0: must be greater than 0"),
        ("sinceSeconds=0", "sinceSeconds", "Invalid value: 0: must be greater than 0"),
    ],
)
def test_invalid_options_are_422_pod_log_options(cluster, probe, query, field, message):
    status, _headers, body = raw(cluster, log_path(probe, query))
    error = orjson.loads(body)
    name = probe["metadata"]["name"]
    assert status == 422 and error["reason"] == "Invalid" and error["code"] == 422
    assert error["message"] == f'PodLogOptions "{name}" is invalid: {field}: {message}'
    assert error["details"] == {
        "name": name,
        "kind": "PodLogOptions",
        "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field}],
    }


def test_since_seconds_and_since_time_together_are_forbidden(cluster, probe):
    status, _headers, body = raw(
        cluster, log_path(probe, "sinceSeconds=10&sinceTime=2026-11-02T07:00:00Z")
    )
    assert status == 422
    assert orjson.loads(body)["message"].endswith(
        "is invalid: : Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"
    )
    status, _headers, body = raw(cluster, log_path(probe, "tailLines=ten"))
    assert status == 400 and orjson.loads(body)["reason"] == "BadRequest"


def test_discovery_lists_the_subresource(cluster):
    resources = {r["name"]: r for r in orjson.loads(raw(cluster, "/api/v1")[2])["resources"]}
    assert resources["pods/log"] == {
        "name": "pods/log",
        "singularName": "",
        "namespaced": True,
        "kind": "Pod",
        "verbs": ["get"],
    }
    assert raw(cluster, f"/api/v1/namespaces/{PROBES}/pods/x/exec")[0] == 404
    assert raw(cluster, "/api/v1/pods/x/log")[0] == 404


def test_unknown_pod_and_unknown_container(cluster, probe):
    status, _headers, body = raw(cluster, f"/api/v1/namespaces/{PROBES}/pods/nope/log")
    error = orjson.loads(body)
    assert status == 404 and error["kind"] == "Status" and error["reason"] == "NotFound"
    assert error["message"] == 'pods "nope" not found'
    name = probe["metadata"]["name"]
    status, _headers, body = raw(cluster, log_path(probe, "container=other"))
    assert status == 400
    assert orjson.loads(body)["message"] == f"container other is not valid for pod {name}"


def test_multi_container_pod_needs_a_container_name(cluster, world):
    base = next(p for p in world.pods if p["spec"].get("initContainers"))
    pod = copy.deepcopy(base)
    pod["metadata"]["name"] = "two-containers"
    del pod["metadata"]["resourceVersion"]
    second = {**pod["spec"]["containers"][0], "name": "sidecar-b"}
    pod["spec"]["containers"].append(second)
    statuses = pod["status"]["containerStatuses"]
    statuses.append({**statuses[0], "name": "sidecar-b"})
    cluster.put("pods", pod)
    try:
        status, _headers, body = raw(cluster, log_path(pod))
        inits = " ".join(c["name"] for c in pod["spec"]["initContainers"])
        mains = " ".join(c["name"] for c in pod["spec"]["containers"])
        assert status == 400
        assert orjson.loads(body)["message"] == (
            "a container name must be specified for pod two-containers, "
            f"choose one of: [{inits} {mains}]"
        )
        status, _headers, body = raw(cluster, log_path(pod, "container=sidecar-b"))
        assert status == 200 and body == b""  # the world's log belongs to the first container
    finally:
        cluster.delete("pods", "two-containers", pod["metadata"]["namespace"])


def test_kubelet_answers_for_pods_without_logs(cluster, world, probe):
    waiting = next(
        p
        for p in world.pods
        if p["spec"].get("nodeName")
        and p["status"]["phase"] == "Pending"
        and len(p["spec"]["containers"]) == 1
        and not p["spec"].get("initContainers")
    )
    status, _headers, body = raw(cluster, log_path(waiting))
    container = waiting["spec"]["containers"][0]["name"]
    name = waiting["metadata"]["name"]
    assert status == 400 and orjson.loads(body)["message"] == (
        f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'
    )
    queued = next(p for p in world.pods if not p["spec"].get("nodeName"))
    assert raw(cluster, log_path(queued))[:1] == (200,)
    assert raw(cluster, log_path(queued))[2] == b""  # no node: an empty stream
    running = next(p for p in world.pods if p["status"]["phase"] == "Running")
    assert raw(cluster, log_path(running))[:1] == (200,)
    status, _headers, body = raw(cluster, log_path(probe, "previous=true"))
    assert status == 400 and orjson.loads(body)["message"] == (
        f'previous terminated container "gpubench" in pod "{probe["metadata"]["name"]}" not found'
    )


def test_auth_and_faults_apply_to_logs(cluster, probe):
    assert raw(cluster, log_path(probe), token=False)[0] == 401
    cluster.faults.add(Fault("status", status=503, resource="pods/log"))
    status, _headers, body = raw(cluster, log_path(probe))
    assert status == 503 and orjson.loads(body)["reason"] == "ServiceUnavailable"
    assert raw(cluster, log_path(probe))[0] == 200
    assert raw(cluster, f"/api/v1/namespaces/{PROBES}/pods")[0] == 200
    cluster.faults.add(Fault("status", status=429, resource="pods"))
    assert raw(cluster, log_path(probe))[0] == 200, "a pods fault is not a pods/log fault"
    cluster.faults.clear()
    cluster.faults.add(Fault("truncate", resource="pods/log", truncate_fraction=0.25))
    url = urlsplit(cluster.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    connection.request("GET", log_path(probe), headers={"Authorization": f"Bearer {cluster.token}"})
    response = connection.getresponse()
    with pytest.raises(http.client.IncompleteRead):
        response.read()
    connection.close()
    faulted = [r for r in cluster.requests if r.path == log_path(probe) and r.fault]
    assert [r.fault for r in faulted][-2:] == ["status", "truncate"]


def test_python_client_reads_the_log(cluster, world, probe, tmp_path):
    api = config.new_client_from_config(config_file=str(cluster.write_kubeconfig(tmp_path / "k")))
    try:
        core = client.CoreV1Api(api)
        name = probe["metadata"]["name"]
        text = core.read_namespaced_pod_log(name, PROBES, container="gpubench", tail_lines=2)
        assert text.splitlines() == text_of(world, probe).splitlines()[-2:]
        with pytest.raises(ApiException) as caught:
            core.read_namespaced_pod_log("nope", PROBES)
        assert caught.value.status == 404
    finally:
        api.close()


def test_kubectl_logs(world, probe, tmp_path):
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.fail(
            "kubectl is not on PATH: `make test` installs it (Debian package kubernetes-client)"
        )
    environment = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    environment["HOME"] = str(tmp_path)
    with SimulatedCluster(world, tls=True) as cluster:  # kubectl sends tokens only over TLS
        kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")

        def kubectl(*args: str) -> subprocess.CompletedProcess:
            command = [binary, "--kubeconfig", str(kubeconfig), "--cache-dir",
                       str(tmp_path / "cache"), "--request-timeout", "60s", *args]  # fmt: skip
            return subprocess.run(
                command, capture_output=True, text=True, env=environment, timeout=120, check=False
            )

        name = probe["metadata"]["name"]
        done = kubectl("logs", "-n", PROBES, name, "-c", "gpubench")
        assert done.returncode == 0, done.stderr
        assert done.stdout == text_of(world, probe)
        tail = kubectl("logs", "-n", PROBES, name, "-c", "gpubench", "--tail=2", "--timestamps")
        assert tail.returncode == 0, tail.stderr
        assert [line.partition(" ")[2] for line in tail.stdout.splitlines()] == (
            text_of(world, probe).splitlines()[-2:]
        )
        missing = kubectl("logs", "-n", PROBES, name, "--previous")
        assert missing.returncode != 0
        assert f'previous terminated container "gpubench" in pod "{name}"' in missing.stderr
        asked = [r for r in cluster.requests if r.path.endswith(f"/pods/{name}/log")]
        assert asked and asked[0].query["container"] == ["gpubench"]

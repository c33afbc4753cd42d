"""The simulated API server against the real `kubernetes` client and raw HTTP (loopback)."""

from __future__ import annotations

import base64
import gc
import gzip
import http.client
import threading
import time
from urllib.parse import urlsplit

import orjson
import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from simulator.kubernetes import Fault, SimulatedCluster
from simulator.world import build_world

pytestmark = pytest.mark.integration

EXPIRED_MESSAGE = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list."
)


@pytest.fixture(scope="module")
def world():
    return build_world(40, seed=5)


@pytest.fixture
def cluster(world, tmp_path):
    with SimulatedCluster(world, bookmark_interval_seconds=0.2) as running:
        running.write_kubeconfig(tmp_path / "kubeconfig")
        yield running


@pytest.fixture
def core(cluster, tmp_path):
    api_client = config.new_client_from_config(config_file=str(tmp_path / "kubeconfig"))
    yield client.CoreV1Api(api_client)
    api_client.close()


@pytest.fixture
def strict_core(cluster, tmp_path):
    """A client whose urllib3 does not retry, so every injected fault reaches the caller."""
    configuration = client.Configuration()
    config.load_kube_config(str(tmp_path / "kubeconfig"), client_configuration=configuration)
    configuration.retries = False
    api_client = client.ApiClient(configuration)
    yield client.CoreV1Api(api_client)
    api_client.close()


def decode_token(token: str) -> dict:
    return orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))


def raw(cluster: SimulatedCluster, path: str, headers: dict | None = None, token: bool = True):
    """(status, headers, body) of one GET, without any client library in between."""
    url = urlsplit(cluster.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    all_headers = {"Authorization": f"Bearer {cluster.token}"} if token else {}
    all_headers.update(headers or {})
    connection.request("GET", path, headers=all_headers)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, dict(response.headers), body


def list_pages(core, limit: int, **kwargs) -> list[dict]:
    pages, token = [], None
    while True:
        response = core.list_pod_for_all_namespaces(
            limit=limit, _continue=token, _preload_content=False, **kwargs
        )
        page = orjson.loads(response.data)
        pages.append(page)
        token = page["metadata"].get("continue")
        if not token:
            return pages


# ---- lists and paging -------------------------------------------------------------------


def test_paged_list_returns_every_pod_exactly_once(cluster, core, world):
    pages = list_pages(core, limit=50)
    uids = [p["metadata"]["uid"] for page in pages for p in page["items"]]
    assert sorted(uids) == sorted(p["metadata"]["uid"] for p in world.pods)
    assert len(uids) == len(set(uids))
    assert len(pages) == -(-len(world.pods) // 50)
    assert {page["metadata"]["resourceVersion"] for page in pages} == {str(world.resource_version)}
    for number, page in enumerate(pages[:-1]):
        assert page["kind"] == "PodList" and page["apiVersion"] == "v1"
        assert page["metadata"]["remainingItemCount"] == len(world.pods) - 50 * (number + 1)
        token = decode_token(page["metadata"]["continue"])
        assert token["v"] == "meta.k8s.io/v1" and token["rv"] == world.resource_version
        assert token["start"].endswith("\x00")
    assert "continue" not in pages[-1]["metadata"]
    assert "remainingItemCount" not in pages[-1]["metadata"]
    for item in pages[0]["items"]:
        assert "kind" not in item and "apiVersion" not in item
    requests = [r for r in cluster.requests if r.path == "/api/v1/pods"]
    assert requests[0].query == {"limit": ["50"]}
    assert all("continue" in r.query for r in requests[1:])


def test_list_nodes_through_models(core, world):
    nodes = core.list_node()
    assert sorted(n.metadata.name for n in nodes.items) == sorted(
        n["metadata"]["name"] for n in world.nodes
    )
    h100 = next(n for n in nodes.items if "h100-gke" in n.metadata.name)
    assert h100.status.allocatable["nvidia.com/gpu"] == "8"


def test_other_lists_and_get_by_name(cluster, core, world, tmp_path):
    api_client = core.api_client
    jobs = client.BatchV1Api(api_client).list_job_for_all_namespaces(limit=5)
    assert jobs.items and jobs.metadata._continue
    classes = client.SchedulingV1Api(api_client).list_priority_class()
    assert {"placeholder", "system-node-critical"} <= {c.metadata.name for c in classes.items}
    events = core.list_event_for_all_namespaces()
    assert len(events.items) == len(world.events)
    pod = world.pods[0]["metadata"]
    fetched = core.read_namespaced_pod(pod["name"], pod["namespace"])
    assert fetched.metadata.uid == pod["uid"]
    namespaced = core.list_namespaced_pod(pod["namespace"])
    expected = [p for p in world.pods if p["metadata"]["namespace"] == pod["namespace"]]
    assert len(namespaced.items) == len(expected)
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod("no-such-pod", pod["namespace"])
    assert missing.value.status == 404
    assert orjson.loads(missing.value.body)["message"] == 'pods "no-such-pod" not found'


def test_secrets_are_refused_and_recorded(cluster, core):
    with pytest.raises(ApiException) as refused:
        core.list_secret_for_all_namespaces()
    assert refused.value.status == 403
    assert any(r.path == "/api/v1/secrets" for r in cluster.requests)


def test_unauthenticated_requests_get_401(cluster):
    status, _headers, body = raw(cluster, "/api/v1/pods", token=False)
    assert status == 401
    assert orjson.loads(body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }
    configuration = client.Configuration()
    configuration.host = cluster.url
    with client.ApiClient(configuration) as anonymous, pytest.raises(ApiException) as error:
        client.CoreV1Api(anonymous).list_node()
    assert error.value.status == 401


def test_page_at_rv_stays_consistent_while_objects_change(cluster, core, world):
    first = core.list_pod_for_all_namespaces(limit=100, _preload_content=False)
    page = orjson.loads(first.data)
    later = world.pods[-1]["metadata"]
    cluster.delete("pods", later["name"], later["namespace"])
    cluster.put(
        "pods", {**world.pods[-2], "metadata": {**world.pods[-2]["metadata"], "name": "zz-new-pod"}}
    )
    rest, token = [], page["metadata"]["continue"]
    while token:
        response = orjson.loads(
            core.list_pod_for_all_namespaces(
                limit=100, _continue=token, _preload_content=False
            ).data
        )
        rest += response["items"]
        token = response["metadata"].get("continue")
        assert response["metadata"]["resourceVersion"] == page["metadata"]["resourceVersion"]
    names = [p["metadata"]["name"] for p in page["items"] + rest]
    assert later["name"] in names and "zz-new-pod" not in names
    fresh = [p["metadata"]["name"] for page in list_pages(core, 500) for p in page["items"]]
    assert later["name"] not in fresh and "zz-new-pod" in fresh


def test_expired_continue_token_gives_410_with_inconsistent_token(cluster, core, world):
    first = orjson.loads(core.list_pod_for_all_namespaces(limit=50, _preload_content=False).data)
    token = first["metadata"]["continue"]
    cluster.expire_continue_tokens()
    with pytest.raises(ApiException) as error:
        core.list_pod_for_all_namespaces(limit=50, _continue=token, _preload_content=False)
    assert error.value.status == 410
    body = orjson.loads(error.value.body)
    new_token = body["metadata"]["continue"]
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {"continue": new_token},
        "status": "Failure",
        "message": EXPIRED_MESSAGE,
        "reason": "Expired",
        "code": 410,
    }
    decoded = decode_token(new_token)
    assert decoded["rv"] == -1 and decoded["start"] == decode_token(token)["start"]
    rest, cursor = [], new_token
    while cursor:
        page = orjson.loads(
            core.list_pod_for_all_namespaces(
                limit=50, _continue=cursor, _preload_content=False
            ).data
        )
        rest += page["items"]
        cursor = page["metadata"].get("continue")
    uids = [p["metadata"]["uid"] for p in first["items"] + rest]
    assert sorted(uids) == sorted(p["metadata"]["uid"] for p in world.pods)


def test_continue_tokens_age_out_only_once_the_cluster_has_moved_on(world, tmp_path):
    """etcd compacts old revisions but always keeps the latest: an idle cluster's tokens stay
    valid however old; once something is written, the old snapshot ages out after the TTL."""
    with SimulatedCluster(world, continue_ttl_seconds=0.2) as running:
        running.write_kubeconfig(tmp_path / "kubeconfig")
        api_client = config.new_client_from_config(config_file=str(tmp_path / "kubeconfig"))
        core = client.CoreV1Api(api_client)
        first = orjson.loads(core.list_pod_for_all_namespaces(limit=5, _preload_content=False).data)
        time.sleep(0.4)
        idle = core.list_pod_for_all_namespaces(
            limit=5, _continue=first["metadata"]["continue"], _preload_content=False
        )
        assert idle.status == 200  # nothing written: the snapshot is the latest one
        node = world.nodes[0]["metadata"]["name"]
        running.mutate("nodes", node, lambda obj: obj["metadata"]["labels"].update(x="1"))
        time.sleep(0.4)
        with pytest.raises(ApiException) as expired:
            core.list_pod_for_all_namespaces(
                limit=5, _continue=first["metadata"]["continue"], _preload_content=False
            )
        assert expired.value.status == 410
        api_client.close()


def test_expire_fault_on_the_second_page(cluster, core):
    cluster.faults.add(Fault("expire", resource="pods"))
    first = orjson.loads(core.list_pod_for_all_namespaces(limit=50, _preload_content=False).data)
    with pytest.raises(ApiException) as error:
        core.list_pod_for_all_namespaces(
            limit=50, _continue=first["metadata"]["continue"], _preload_content=False
        )
    assert error.value.status == 410
    assert decode_token(orjson.loads(error.value.body)["metadata"]["continue"])["rv"] == -1
    assert cluster.requests[-1].fault == "expire"


# ---- faults -----------------------------------------------------------------------------


def test_429_is_plain_text_with_retry_after_and_apf_headers(cluster, strict_core):
    core = strict_core
    cluster.faults.add(Fault("status", status=429, resource="pods", times=1))
    with pytest.raises(ApiException) as error:
        core.list_pod_for_all_namespaces(limit=10)
    exception = error.value
    assert exception.status == 429
    assert exception.headers["Retry-After"] == "1"
    assert exception.headers["Content-Type"].startswith("text/plain")
    assert exception.body.strip() == b"Too many requests, please try again later." or (
        exception.body.strip() == "Too many requests, please try again later."
    )
    assert exception.headers["X-Kubernetes-PF-FlowSchema-UID"]
    assert exception.headers["X-Kubernetes-PF-PriorityLevel-UID"]
    assert core.list_pod_for_all_namespaces(limit=10).items, "the fault fired once only"


def test_default_client_retries_one_429_by_retry_after(cluster, core):
    """urllib3 (under the kubernetes client) honours Retry-After on 429 by itself."""
    cluster.faults.add(Fault("status", status=429, resource="nodes", times=1))
    cluster.clear_requests()
    assert core.list_node().items
    assert [r.status for r in cluster.requests if r.path == "/api/v1/nodes"] == [429, 200]


@pytest.mark.parametrize(
    ("code", "reason"), [(500, "InternalError"), (503, "ServiceUnavailable"), (504, "Timeout")]
)
def test_server_errors_are_status_json(cluster, strict_core, code, reason):
    core = strict_core
    cluster.faults.add(Fault("status", status=code, path_prefix="/api/v1/nodes"))
    with pytest.raises(ApiException) as error:
        core.list_node()
    assert error.value.status == code
    body = orjson.loads(error.value.body)
    assert body["kind"] == "Status" and body["reason"] == reason and body["code"] == code


def test_skip_then_fail_and_probability(cluster, strict_core):
    core = strict_core
    cluster.faults.add(Fault("status", status=500, resource="nodes", skip=1, times=1))
    core.list_node()
    with pytest.raises(ApiException):
        core.list_node()
    core.list_node()
    cluster.faults.clear()
    cluster.faults.add(Fault("status", status=503, resource="nodes", times=None, probability=0.5))
    outcomes = []
    for _ in range(40):
        try:
            core.list_node(limit=1)
            outcomes.append(True)
        except ApiException:
            outcomes.append(False)
    assert any(outcomes) and not all(outcomes)


def test_truncated_body_raises_in_the_client(cluster, strict_core):
    core = strict_core
    cluster.faults.add(Fault("truncate", resource="pods", times=5))
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.list_pod_for_all_namespaces(limit=200)
    with pytest.raises(urllib3.exceptions.HTTPError):
        response = core.list_pod_for_all_namespaces(limit=200, _preload_content=False)
        response.data  # noqa: B018 - reading the body is what fails


def test_disconnect_and_slow_faults(cluster, strict_core):
    core = strict_core
    cluster.faults.add(Fault("disconnect", resource="nodes", times=10))
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.list_node(_request_timeout=5)
    cluster.faults.clear()
    cluster.faults.add(Fault("slow", resource="nodes", delay_seconds=1.5))
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.list_node(_request_timeout=(2, 0.3))


def test_faults_over_the_admin_endpoint(cluster):
    url = urlsplit(cluster.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    fault = orjson.dumps({"kind": "status", "status": 429, "resource": "nodes"})
    connection.request("POST", "/_simulator/faults", body=fault)
    assert connection.getresponse().status == 401  # the admin endpoint wants the token too
    connection.close()
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    auth = {"Authorization": f"Bearer {cluster.token}"}
    connection.request("POST", "/_simulator/faults", body=fault, headers=auth)
    assert connection.getresponse().read() and cluster.faults.active()
    connection.request("GET", "/api/v1/nodes", headers=auth)
    response = connection.getresponse()
    assert response.status == 429 and response.read().startswith(b"Too many requests")
    connection.request("POST", "/_simulator/compact", headers=auth)
    assert connection.getresponse().read()
    connection.request("GET", "/_simulator/requests", headers=auth)
    records = orjson.loads(connection.getresponse().read())
    assert records[-1]["path"] == "/api/v1/nodes" and records[-1]["status"] == 429
    assert "Authorization" not in records[-1]["headers"]
    connection.close()


# ---- selectors ----------------------------------------------------------------------------


def test_field_selectors(core, world):
    node = next(p["spec"]["nodeName"] for p in world.pods if p["spec"].get("nodeName"))
    on_node = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}")
    expected = {p["metadata"]["uid"] for p in world.pods if p["spec"].get("nodeName") == node}
    assert {p.metadata.uid for p in on_node.items} == expected
    not_running = core.list_pod_for_all_namespaces(
        field_selector="status.phase!=Running,status.phase!=Succeeded"
    )
    assert {p.status.phase for p in not_running.items} == {"Pending", "Failed", "Unknown"}
    queued = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=")
    assert queued.items and all(p.spec.node_name is None for p in queued.items)
    cordoned = core.list_node(field_selector="spec.unschedulable=true")
    assert len(cordoned.items) == sum(1 for n in world.nodes if n["spec"].get("unschedulable"))
    paged = list_pages(core, 7, field_selector="status.phase=Running")
    for page in paged:
        assert "remainingItemCount" not in page["metadata"]
    running = [p for page in paged for p in page["items"]]
    assert len(running) == sum(1 for p in world.pods if p["status"]["phase"] == "Running")


def test_unknown_field_selector_is_400_with_upstream_text(core, cluster):
    with pytest.raises(ApiException) as error:
        core.list_pod_for_all_namespaces(field_selector="foo.bar=1")
    assert error.value.status == 400
    assert orjson.loads(error.value.body)["message"] == "field label not supported: foo.bar"
    status, _headers, body = raw(
        cluster, "/apis/scheduling.k8s.io/v1/priorityclasses?fieldSelector=foo.bar%3D1"
    )
    assert status == 400
    assert orjson.loads(body)["message"] == (
        '"foo.bar" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )


def test_label_selectors(core, world):
    def names(selector: str) -> set[str]:
        return {
            p.metadata.name for p in core.list_pod_for_all_namespaces(label_selector=selector).items
        }

    def expected(predicate) -> set[str]:
        return {p["metadata"]["name"] for p in world.pods if predicate(p["metadata"]["labels"])}

    job = next(
        p["metadata"]["labels"]["job-name"]
        for p in world.pods
        if "job-name" in p["metadata"]["labels"]
    )
    assert names(f"job-name={job}") == expected(lambda x: x.get("job-name") == job)
    assert names(f"job-name=={job}") == expected(lambda x: x.get("job-name") == job)
    assert names(f"job-name!={job}") == expected(lambda x: x.get("job-name") != job)
    assert names(f"job-name in ({job},other)") == expected(lambda x: x.get("job-name") == job)
    assert names(f"job-name notin ({job})") == expected(lambda x: x.get("job-name") != job)
    assert names("training.annex.dev/run") == expected(lambda x: "training.annex.dev/run" in x)
    assert names("!job-name,app") == expected(lambda x: "job-name" not in x and "app" in x)
    with pytest.raises(ApiException) as error:
        names("in in in (")
    assert error.value.status == 400


# ---- resourceVersion semantics (reference §1.3) --------------------------------------------


def test_resource_version_matrix(cluster, core, world):
    rv = str(world.resource_version)
    first = orjson.loads(core.list_pod_for_all_namespaces(limit=10, _preload_content=False).data)
    with pytest.raises(ApiException) as error:
        core.list_pod_for_all_namespaces(
            limit=10, _continue=first["metadata"]["continue"], resource_version=rv
        )
    assert error.value.status == 400
    with pytest.raises(ApiException) as error:
        core.list_pod_for_all_namespaces(resource_version_match="NotOlderThan")
    assert error.value.status == 422
    invalid = orjson.loads(error.value.body)
    assert invalid["reason"] == "Invalid" and invalid["details"]["kind"] == "ListOptions"
    assert invalid["details"]["group"] == "meta.k8s.io"
    assert invalid["details"]["causes"][0]["field"] == "resourceVersionMatch"
    with pytest.raises(ApiException) as error:
        core.list_pod_for_all_namespaces(resource_version="0", resource_version_match="Exact")
    assert error.value.status == 422

    everything = core.list_pod_for_all_namespaces(resource_version="0", limit=5)
    assert len(everything.items) == len(world.pods) and not everything.metadata._continue

    victim = world.pods[3]["metadata"]
    cluster.mutate(
        "pods", victim["name"], lambda p: p["metadata"]["labels"].update(x="y"), victim["namespace"]
    )
    exact = core.list_pod_for_all_namespaces(
        resource_version=rv,
        resource_version_match="Exact",
        field_selector=(f"metadata.name={victim['name']}"),
    )
    assert exact.metadata.resource_version == rv and "x" not in exact.items[0].metadata.labels
    exact_by_limit = core.list_pod_for_all_namespaces(resource_version=rv, limit=10)
    assert exact_by_limit.metadata.resource_version == rv
    newer = core.list_pod_for_all_namespaces(
        resource_version=rv,
        resource_version_match=("NotOlderThan"),
        field_selector=f"metadata.name={victim['name']}",
    )
    assert int(newer.metadata.resource_version) > int(rv)
    assert newer.items[0].metadata.labels["x"] == "y"

    cluster.expire_continue_tokens()
    with pytest.raises(ApiException) as error:
        core.list_pod_for_all_namespaces(resource_version=rv, resource_version_match="Exact")
    assert error.value.status == 410
    assert orjson.loads(error.value.body)["reason"] == "Expired"

    future = str(cluster.resource_version + 1000)
    with pytest.raises(ApiException) as error:
        core.list_node(resource_version=future, resource_version_match="NotOlderThan")
    assert error.value.status == 504
    assert error.value.headers["Retry-After"] == "1"
    assert "Too large resource version" in orjson.loads(error.value.body)["message"]


def test_booleans_parse_like_apimachinery(cluster):
    for value, watches in [
        ("true", True),
        ("True", True),
        ("1", True),
        ("yes", True),
        ("0", False),
        ("false", False),
        ("FALSE", False),
    ]:
        status, headers, _body = raw(
            cluster,
            f"/api/v1/nodes?watch={value}&timeoutSeconds=1&resourceVersion="
            f"{cluster.resource_version}",
        )
        assert status == 200
        assert (headers.get("Transfer-Encoding") == "chunked") is watches, value


# ---- negotiation, discovery, gzip ---------------------------------------------------------


def test_content_negotiation_and_gzip(cluster, world):
    table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    status, _headers, body = raw(cluster, "/api/v1/nodes?limit=3", {"Accept": table})
    assert status == 200 and orjson.loads(body)["kind"] == "NodeList"
    status, _headers, body = raw(
        cluster, "/api/v1/nodes", {"Accept": "application/vnd.kubernetes.protobuf"}
    )
    assert status == 406 and orjson.loads(body)["reason"] == "NotAcceptable"
    status, headers, body = raw(cluster, "/api/v1/pods?limit=200", {"Accept-Encoding": "gzip"})
    assert headers.get("Content-Encoding") == "gzip"
    assert len(orjson.loads(gzip.decompress(body))["items"]) == 200
    status, headers, body = raw(cluster, "/api/v1/pods?limit=2", {"Accept-Encoding": "gzip"})
    assert "Content-Encoding" not in headers and len(orjson.loads(body)["items"]) == 2


def test_discovery_documents(cluster):
    _status, _headers, body = raw(cluster, "/api/v1")
    resources = {r["name"]: r for r in orjson.loads(body)["resources"]}
    assert resources["pods"]["kind"] == "Pod" and resources["pods"]["namespaced"] is True
    assert "po" in resources["pods"]["shortNames"] and "list" in resources["pods"]["verbs"]
    assert resources["nodes"]["namespaced"] is False
    groups = orjson.loads(raw(cluster, "/apis")[2])
    assert groups["kind"] == "APIGroupList"
    assert {"batch", "scheduling.k8s.io"} <= {g["name"] for g in groups["groups"]}
    batch = orjson.loads(raw(cluster, "/apis/batch/v1")[2])
    assert batch["resources"][0]["name"] == "jobs"
    assert orjson.loads(raw(cluster, "/version", token=False)[2])["major"] == "1"
    assert orjson.loads(raw(cluster, "/api")[2])["versions"] == ["v1"]
    status, _headers, body = raw(cluster, "/apis/nothing.example/v1/things")
    assert status == 404 and orjson.loads(body)["kind"] == "Status"


# ---- watch --------------------------------------------------------------------------------


def _collect(stream, events: list, stop_after: int) -> None:
    for event in stream:
        events.append(event)
        if len(events) >= stop_after:
            return


def test_watch_sees_added_modified_deleted_and_bookmarks(cluster, core, world):
    start = str(cluster.resource_version)
    events: list = []
    watcher = watch.Watch()
    stream = watcher.stream(
        core.list_pod_for_all_namespaces,
        resource_version=start,
        allow_watch_bookmarks=True,
        timeout_seconds=10,
    )
    reader = threading.Thread(target=_collect, args=(stream, events, 5))
    reader.start()
    time.sleep(0.5)
    pod = world.pods[0]
    meta = pod["metadata"]
    cluster.mutate(
        "pods",
        meta["name"],
        lambda p: p["metadata"]["labels"].update(touched="1"),
        meta["namespace"],
    )
    cluster.put("pods", {**pod, "metadata": {**meta, "name": "watch-new-pod"}})
    cluster.delete("pods", "watch-new-pod", meta["namespace"])
    deadline = time.time() + 10
    while len(events) < 5 and time.time() < deadline:
        time.sleep(0.1)
    watcher.stop()
    reader.join(timeout=10)
    kinds = [e["type"] for e in events]
    changes = [k for k in kinds if k != "BOOKMARK"]
    assert changes[:3] == ["MODIFIED", "ADDED", "DELETED"]
    assert "BOOKMARK" in kinds
    modified = next(e for e in events if e["type"] == "MODIFIED")
    assert modified["object"].metadata.labels["touched"] == "1"
    assert modified["raw_object"]["kind"] == "Pod"
    assert int(modified["object"].metadata.resource_version) > int(start)
    bookmark = next(e for e in events if e["type"] == "BOOKMARK")
    assert set(bookmark["raw_object"]["metadata"]) == {"resourceVersion"}


def test_watch_without_rv_starts_with_added_for_current_state(cluster, core, world):
    events = list(watch.Watch().stream(core.list_node, timeout_seconds=1))
    assert [e["type"] for e in events] == ["ADDED"] * len(world.nodes)


def test_watch_with_selector_turns_label_changes_into_added_and_deleted(cluster, core, world):
    pod = world.pods[5]["metadata"]
    events: list = []
    stream = watch.Watch().stream(
        core.list_pod_for_all_namespaces,
        label_selector="canary=yes",
        resource_version=str(cluster.resource_version),
        timeout_seconds=3,
    )
    reader = threading.Thread(target=_collect, args=(stream, events, 2))
    reader.start()
    time.sleep(0.3)
    cluster.mutate(
        "pods",
        pod["name"],
        lambda p: p["metadata"]["labels"].update(canary="yes"),
        pod["namespace"],
    )
    cluster.mutate(
        "pods", pod["name"], lambda p: p["metadata"]["labels"].pop("canary"), pod["namespace"]
    )
    reader.join(timeout=10)
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]
    assert all(e["object"].metadata.name == pod["name"] for e in events)


def test_watch_from_a_compacted_rv_gets_410(cluster, core):
    old = str(cluster.resource_version)
    cluster.put("nodes", {**cluster.objects("nodes")[0]})
    cluster.expire_continue_tokens()
    with pytest.raises(ApiException) as error:
        list(watch.Watch().stream(core.list_node, resource_version=old, timeout_seconds=2))
    assert error.value.status == 410
    status, _headers, body = raw(cluster, f"/api/v1/nodes?watch=1&resourceVersion={old}")
    line = orjson.loads(body.splitlines()[0]) if body else {}
    assert status == 200 and line["type"] == "ERROR" and line["object"]["code"] == 410


def test_watch_list_streams_initial_events_then_annotated_bookmark(cluster, world):
    status, _headers, body = raw(cluster, "/api/v1/nodes?watch=1&sendInitialEvents=true")
    assert status == 422
    status, _headers, body = raw(
        cluster,
        "/api/v1/nodes?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
        "&resourceVersionMatch=NotOlderThan&resourceVersion=&timeoutSeconds=1",
    )
    lines = [orjson.loads(line) for line in body.splitlines() if line]
    added = [e for e in lines if e["type"] == "ADDED"]
    assert len(added) == len(world.nodes)
    bookmarks = [e for e in lines if e["type"] == "BOOKMARK"]
    end = bookmarks[0]["object"]["metadata"]
    assert end["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert lines.index(bookmarks[0]) == len(added)


@pytest.mark.slow
def test_full_cluster_of_7500_nodes_serves_a_complete_paged_pod_list(capsys):
    """Scale: 7,500 nodes, ~83,000 pods, pages of 500 (timings printed, never asserted)."""
    started = time.perf_counter()
    big = build_world(7500, seed=0)
    built = time.perf_counter() - started
    # the world's ~10 million objects live in this process too: without this, every GC pass
    # the client's parsing triggers rescans them (20x slower parsing; not the server's cost)
    gc.disable()
    try:
        with SimulatedCluster(big) as cluster:
            loaded = time.perf_counter() - started - built
            raw_seconds, pages = _fetch_all_pods(cluster, parse=False)
            parsed_seconds, items = _fetch_all_pods(cluster, parse=True)
            served = [r for r in cluster.requests if r.path == "/api/v1/pods"]
            server = sum(r.duration_seconds for r in served[: len(served) // 2])
    finally:
        gc.enable()
    assert len(big.nodes) == 7500
    assert items == len(big.pods)
    with capsys.disabled():
        print(
            f"\n7,500 nodes / {len(big.pods)} pods: build_world {built:.1f}s, store load "
            f"{loaded:.1f}s; {pages} pages of 500: raw fetch {raw_seconds:.2f}s (server time "
            f"{server:.2f}s), fetch + orjson.loads {parsed_seconds:.2f}s"
        )


def _fetch_all_pods(cluster: SimulatedCluster, parse: bool) -> tuple[float, int]:
    """(seconds, pages or items): one keep-alive connection following continue tokens."""
    url = urlsplit(cluster.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    headers = {"Authorization": f"Bearer {cluster.token}"}
    token, pages, items, started = "", 0, 0, time.perf_counter()
    while True:
        suffix = f"&continue={token}" if token else ""
        connection.request("GET", "/api/v1/pods?limit=500" + suffix, headers=headers)
        body = connection.getresponse().read()
        pages += 1
        if parse:
            page = orjson.loads(body)
            items += len(page["items"])
            token = page["metadata"].get("continue", "")
        else:  # the token sits in the list metadata, before the items
            at = body.find(b'"continue":"', 0, 400)
            token = body[at + 12 : body.index(b'"', at + 12)].decode() if at >= 0 else ""
        if not token:
            connection.close()
            return time.perf_counter() - started, items if parse else pages


def test_churn_finishes_and_starts_jobs_without_overallocating(world):
    with SimulatedCluster(world, churn_per_second=50) as cluster:
        start = cluster.resource_version
        deadline = time.time() + 10
        while cluster._churn.started_jobs < 1 and time.time() < deadline:
            time.sleep(0.1)
        assert cluster.resource_version > start
        pods = cluster.objects("pods")
        jobs = {j["metadata"]["name"] for j in cluster.objects("jobs")}
    assert any("-churn" in name for name in jobs)
    allocatable = {
        n["metadata"]["name"]: int(n["status"]["allocatable"].get("nvidia.com/gpu", 0))
        for n in world.nodes
    }
    used: dict[str, int] = {}
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if node and pod["status"]["phase"] not in ("Succeeded", "Failed"):
            used[node] = used.get(node, 0) + _effective_gpus(pod)
    assert used and all(amount <= allocatable[node] for node, amount in used.items())


def _effective_gpus(pod: dict) -> int:
    """nvidia.com/gpu by the PodRequests rule (sidecars, init peak, overhead)."""

    def request(container: dict) -> int:
        resources = container.get("resources", {})
        value = resources.get("requests", {}).get(
            "nvidia.com/gpu", resources.get("limits", {}).get("nvidia.com/gpu", 0)
        )
        return int(value)

    spec = pod["spec"]
    sidecars, init_peak = 0, 0
    for container in spec.get("initContainers", []):
        if container.get("restartPolicy") == "Always":
            sidecars += request(container)
            init_peak = max(init_peak, sidecars)
        else:
            init_peak = max(init_peak, sidecars + request(container))
    containers = sum(request(c) for c in spec["containers"]) + sidecars
    return max(containers, init_peak) + int(spec.get("overhead", {}).get("nvidia.com/gpu", 0))

"""Test helpers: realistic Kubernetes objects and an in-process API server stand-in.

``FakeApiClient`` is a real ``kubernetes.client.ApiClient`` whose transport is replaced: the
generated ``list_*`` methods, their query serialisation and their error handling
(``ApiException.from_response``) all run unchanged, but requests are answered by
``FakeCluster`` from in-memory objects, with paging, continue tokens, 410 Expired and injected
faults. The collector's own tests use it (and the hostile-server integration test for its
paging); the other integration tests use the real simulator. It lives under tests/, out of the
wheel.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from kubernetes import client

LIST_KINDS = {
    "/api/v1/nodes": "NodeList",
    "/api/v1/pods": "PodList",
    "/apis/batch/v1/jobs": "JobList",
    "/apis/scheduling.k8s.io/v1/priorityclasses": "PriorityClassList",
    "/api/v1/events": "EventList",
}


@dataclass
class FakeFault:
    """Answer the next ``times`` requests to ``path`` (any page when ``page`` is None) with
    ``status``/``body``/``headers`` instead of the list page. ``truncate`` serves the real page
    cut in half (status 200) instead."""

    path: str
    status: int = 500
    body: bytes = b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}'
    headers: Mapping[str, str] = field(default_factory=dict)
    times: int = 1
    page: int | None = None
    truncate: bool = False


class _Response:
    """The little of ``urllib3.HTTPResponse`` that annex and the client use."""

    def __init__(self, status: int, body: bytes, headers: Mapping[str, str]) -> None:
        self.status = status
        self.reason = {200: "OK", 410: "Gone", 429: "Too Many Requests"}.get(status, "Error")
        self.data = body
        self.headers = dict(headers)
        self.released = False
        self._stream = io.BytesIO(body)

    def read1(self, amt: int = -1, decode_content: bool | None = None) -> bytes:
        return self._stream.read1(amt)

    def read(self, amt: int | None = None, decode_content: bool | None = None) -> bytes:
        return self._stream.read(amt)

    def close(self) -> None:
        self._stream.close()

    def getheaders(self) -> dict[str, str]:
        return self.headers

    def release_conn(self) -> None:
        self.released = True


class FakeCluster:
    """In-memory list endpoints with the API server's paging semantics (reference §1.2–1.4)."""

    def __init__(self, objects: Mapping[str, list[dict[str, Any]]], resource_version: int = 100):
        self.objects = {path: list(items) for path, items in objects.items()}
        self.resource_version = resource_version
        self.faults: list[FakeFault] = []
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.expire_tokens_at_page: dict[str, int] = {}
        """path -> page number whose continue token is answered with 410 (once per entry)."""

    def serve(self, url: str) -> _Response:
        parts = urlsplit(url)
        path = parts.path
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.requests.append((path, query))
        limit = int(query.get("limit", "0")) or 10**9
        token = query.get("continue")
        offset, rv = (0, self.resource_version)
        if token:
            state = json.loads(token)
            offset, rv = state["offset"], state["rv"]
        page_number = offset // limit + 1 if limit else 1
        for fault in self.faults:
            if fault.times > 0 and fault.path == path and fault.page in (None, page_number):
                fault.times -= 1
                if not fault.truncate:
                    return _Response(fault.status, fault.body, fault.headers)
                body = self._page(path, offset, limit, rv)
                return _Response(200, body[: len(body) // 2], {})
        if token and self.expire_tokens_at_page.get(path) == page_number:
            del self.expire_tokens_at_page[path]
            inconsistent = json.dumps({"offset": offset, "rv": -1})
            status = {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {"continue": inconsistent},
                "status": "Failure",
                "message": "The provided continue parameter is too old to display a consistent "
                "list result.",
                "reason": "Expired",
                "code": 410,
            }
            return _Response(410, json.dumps(status).encode(), {})
        if path not in self.objects:
            return _Response(404, b'{"kind":"Status","code":404,"message":"not found"}', {})
        return _Response(200, self._page(path, offset, limit, rv), {})

    def _page(self, path: str, offset: int, limit: int, rv: int) -> bytes:
        items = self.objects[path]
        chunk = items[offset : offset + limit]
        metadata: dict[str, Any] = {"resourceVersion": str(rv if rv > 0 else self.resource_version)}
        remaining = len(items) - offset - len(chunk)
        if remaining > 0:
            metadata["continue"] = json.dumps({"offset": offset + limit, "rv": rv})
            metadata["remainingItemCount"] = remaining
        body = {"kind": LIST_KINDS.get(path, "List"), "apiVersion": "v1", "metadata": metadata}
        body["items"] = chunk
        return json.dumps(body).encode()


class FakeApiClient(client.ApiClient):
    """A real ``ApiClient`` whose HTTP pool is answered by a ``FakeCluster``.

    The fake sits under the client's REST layer (its urllib3 pool manager), so the client's own
    request building and error handling run, whichever client generation is installed.
    """

    def __init__(self, cluster: FakeCluster) -> None:
        configuration = client.Configuration(host="http://fake-apiserver")
        super().__init__(configuration)
        self.cluster = cluster
        self.rest_client.pool_manager = _FakePoolManager(cluster)


class _FakePoolManager:
    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster

    def request(self, method: str, url: str, fields: Any = None, **kwargs: Any) -> _Response:
        assert method == "GET", method
        if fields:  # kubernetes < 37 passes the query as fields; 37+ puts it in the URL
            url += ("&" if "?" in url else "?") + urlencode(fields)
        return self.cluster.serve(url)

    def clear(self) -> None:
        pass


# ---------------------------------------------------------------------------------------------
# Realistic objects (shaped as the API serves list items: no kind/apiVersion)


def node(
    name: str,
    *,
    uid: str | None = None,
    gpus: int = 8,
    allocatable_gpus: int | None = None,
    product: str = "NVIDIA-H100-80GB-HBM3",
    labels: Mapping[str, str] | None = None,
    ready: str = "True",
    unschedulable: bool = False,
    mig: Mapping[str, int] | None = None,
    images: int = 20,
    boot_id: str | None = None,
) -> dict[str, Any]:
    """A GPU node as GPU feature discovery labels it, with a kubelet-sized status.

    ``boot_id`` defaults to ``boot-<name>``; change it to simulate a reboot."""
    base_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "p5.48xlarge",
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": "us-east-1a",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.memory": "81559",
        "nvidia.com/gpu.count": str(gpus),
        "nvidia.com/cuda.driver.major": "550",
        "nvidia.com/cuda.driver.minor": "90",
        "nvidia.com/cuda.driver.rev": "07",
        "nvidia.com/mig.strategy": "mixed" if mig else "none",
    }
    base_labels.update(labels or {})
    capacity: dict[str, str] = {"cpu": "192", "memory": "2097152Ki", "pods": "110"}
    allocatable: dict[str, str] = {"cpu": "191450m", "memory": "2064384Ki", "pods": "110"}
    if gpus:
        capacity["nvidia.com/gpu"] = str(gpus)
        allocatable["nvidia.com/gpu"] = str(gpus if allocatable_gpus is None else allocatable_gpus)
    for profile, count in (mig or {}).items():
        capacity[f"nvidia.com/mig-{profile}"] = str(count)
        allocatable[f"nvidia.com/mig-{profile}"] = str(count)
    spec: dict[str, Any] = {"providerID": f"aws:///us-east-1a/i-{abs(hash(name)) % 10**12:012d}"}
    if unschedulable:
        spec["unschedulable"] = True
        spec["taints"] = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    return {
        "metadata": {
            "name": name,
            "uid": uid or f"uid-node-{name}",
            "resourceVersion": "4711",
            "creationTimestamp": "2026-10-01T08:00:00Z",
            "labels": base_labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/x": "true"},
            "managedFields": [{"manager": "kubelet", "operation": "Update", "fieldsV1": {}}],
        },
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [
                {
                    "type": "MemoryPressure",
                    "status": "False",
                    "lastHeartbeatTime": "2026-11-02T08:59:00Z",
                    "lastTransitionTime": "2026-10-01T08:01:00Z",
                    "reason": "KubeletHasSufficientMemory",
                    "message": "kubelet has sufficient memory available",
                },
                {
                    "type": "Ready",
                    "status": ready,
                    "lastHeartbeatTime": "2026-11-02T08:59:00Z",
                    "lastTransitionTime": "2026-10-01T08:02:00Z",
                    "reason": "KubeletReady" if ready == "True" else "NodeStatusUnknown",
                    "message": "kubelet is posting ready status",
                },
            ],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
            "nodeInfo": {
                "kubeletVersion": "v1.33.2",
                "containerRuntimeVersion": "containerd://1.7.27",
                "bootID": boot_id or f"boot-{name}",
                "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
                "kernelVersion": "6.8.0-1015-aws",
                "osImage": "Ubuntu 22.04.5 LTS",
            },
            "images": [
                {"names": [f"registry.example.com/image-{i}@sha256:{i:064x}"], "sizeBytes": 10**9}
                for i in range(images)
            ],
        },
    }


def container(
    name: str = "main",
    *,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    restart_policy: str | None = None,
    env: int = 20,
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    spec: dict[str, Any] = {
        "name": name,
        "image": "nvcr.io/nvidia/pytorch:24.10-py3",
        "command": ["torchrun", "--nnodes=64", "train.py"],
        "env": [{"name": f"ENV_{i}", "value": f"value-{i}"} for i in range(env)],
        "resources": resources,
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        "terminationMessagePath": "/dev/termination-log",
        "imagePullPolicy": "IfNotPresent",
    }
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    return spec


def pod(
    name: str,
    *,
    namespace: str = "team-a",
    uid: str | None = None,
    node_name: str | None = "node-1",
    phase: str = "Running",
    gpus: int = 8,
    priority: int | None = 0,
    priority_class: str | None = None,
    job: str | None = None,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    overhead: Mapping[str, str] | None = None,
    scheduled_at: str | None = "2026-11-02T08:00:00Z",
    started_at: str | None = "2026-11-02T08:00:05Z",
    finished_at: str | None = None,
    deletion_timestamp: str | None = None,
    nominated_node_name: str | None = None,
) -> dict[str, Any]:
    """A training pod (by default 8 GPUs, bound and running), about 4 KB of JSON."""
    if containers is None:
        gpu = {"nvidia.com/gpu": str(gpus)} if gpus else {}
        containers = [
            container(
                requests={"cpu": "90", "memory": "900Gi", **gpu},
                limits={"memory": "900Gi", **gpu},
            )
        ]
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-pod-{namespace}-{name}",
        "resourceVersion": "5000",
        "creationTimestamp": "2026-11-02T07:59:58Z",
        "labels": {"app": "trainer", "team": namespace},
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{" + "x" * 300 + "}"},
        "managedFields": [{"manager": "kube-controller-manager", "operation": "Update"}],
    }
    if job:
        metadata["labels"]["batch.kubernetes.io/job-name"] = job
        metadata["ownerReferences"] = [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": job,
                "uid": f"uid-job-{job}",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    if deletion_timestamp:
        metadata["deletionTimestamp"] = deletion_timestamp
    spec: dict[str, Any] = {
        "containers": containers,
        "restartPolicy": "Never",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "dataset"}}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    if init_containers is not None:
        spec["initContainers"] = init_containers
    if overhead is not None:
        spec["overhead"] = dict(overhead)
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    conditions: list[dict[str, Any]] = []
    if scheduled_at and node_name:
        conditions.append(
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled_at}
        )
    elif not node_name:
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "lastTransitionTime": "2026-11-02T08:00:00Z",
                "message": "0/64 nodes are available: 64 Insufficient nvidia.com/gpu.",
            }
        )
    status: dict[str, Any] = {"phase": phase, "conditions": conditions, "qosClass": "Burstable"}
    if started_at and node_name:
        status["startTime"] = started_at
    if nominated_node_name:
        status["nominatedNodeName"] = nominated_node_name
    if finished_at:
        status["containerStatuses"] = [
            {
                "name": "main",
                "ready": False,
                "restartCount": 0,
                "image": "nvcr.io/nvidia/pytorch:24.10-py3",
                "state": {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": started_at,
                        "finishedAt": finished_at,
                    }
                },
            }
        ]
    return {"metadata": metadata, "spec": spec, "status": status}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-pc-{name}",
            "resourceVersion": "10",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "value": value,
        "preemptionPolicy": "PreemptLowerPriority",
        "description": f"{name} pods",
    }


def job(name: str, namespace: str = "team-a", *, active: int = 1) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-job-{name}",
            "resourceVersion": "20",
            "creationTimestamp": "2026-11-02T07:59:50Z",
        },
        "spec": {"parallelism": active, "completions": active, "backoffLimit": 6},
        "status": {"active": active, "startTime": "2026-11-02T07:59:51Z"},
    }


def event(name: str, namespace: str = "team-a", *, involved: str = "p1") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-event-{name}",
            "resourceVersion": "30",
            "creationTimestamp": "2026-11-02T08:00:00Z",
        },
        "involvedObject": {
            "kind": "Pod",
            "namespace": namespace,
            "name": involved,
            "uid": f"uid-pod-{namespace}-{involved}",
        },
        "reason": "Scheduled",
        "message": f"Successfully assigned {namespace}/{involved} to node-1",
        "type": "Normal",
        "count": 1,
        "firstTimestamp": "2026-11-02T08:00:00Z",
        "lastTimestamp": "2026-11-02T08:00:00Z",
        "source": {"component": "default-scheduler"},
    }

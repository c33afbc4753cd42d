"""The Kubernetes objects that run the probe suite once on every GPU node.

Pure Python (no torch, no triton, no cluster access): ``annex probe manifest`` calls
``probe_manifest`` and prints ``manifest_yaml`` of the result for ``kubectl apply -f -``.

What it builds, and why:

- **Namespace** ``annex-probes``, enforcing the "restricted" Pod Security Standard: the probe
  needs GPUs from the device plugin, not privileges.
- **PriorityClass** ``annex-probe``: ``preemptionPolicy: Never`` and a low value (default 0).
  The probe measures idle GPUs; it must never evict a workload to get one, and any workload
  of higher priority may preempt it. The value stays at or above 0 because annex's balloon
  rule (``kubernetes.balloons.priority_below``, default 0) counts pods below it as balloons
  (placeholders, -1000 in the upstream overprovisioning example): a probe pod is real work,
  and its priority keeps it ahead of balloons in the scheduling queue.
- **ServiceAccount** without an automounted token: the probe never talks to the API server.
- **Job** (batch/v1, ``completionMode: Indexed``, completions = parallelism = nodes): one
  pod per index, a required pod anti-affinity on ``kubernetes.io/hostname`` against the Job's
  own pods so no two land on one node, the GPU node selector, ``nvidia.com/gpu`` requests =
  limits = GPUs per node (the pod takes the whole node and benchmarks each GPU in turn), a
  toleration for the ``nvidia.com/gpu`` NoSchedule taint, ``backoffLimitPerIndex: 0`` (a
  failed index is reported, not retried on a maybe-different node), an active deadline, a TTL
  so finished Jobs clean themselves up (after the collector has read the logs), and
  ``restartPolicy: Never`` (a crash must stay visible as a failed pod). The downward API gives
  the container its node, pod, namespace and Job name for the records; the root filesystem is
  read-only, with emptyDir volumes for Triton's kernel cache and ``/tmp``.

Labels (the collector's selector): ``app.kubernetes.io/name=annex-gpubench``,
``app.kubernetes.io/component=probe``; the Job controller adds
``batch.kubernetes.io/job-name=<job>`` to every pod, and the anti-affinity selects on it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import yaml

from annex.errors import ConfigError

APP_NAME = "annex-gpubench"
COMPONENT = "probe"
CONTAINER = "gpubench"
SERVICE_ACCOUNT = "annex-gpubench"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_NODE_SELECTOR: Mapping[str, str] = {"nvidia.com/gpu.present": "true"}
"""GPU feature discovery's label on every node with an NVIDIA GPU."""

RUN_AS_USER = 10001
"""Non-root uid (annex's image user, deploy/Dockerfile); the restricted standard requires one."""

COMMAND: tuple[str, ...] = ("python", "-m", "probes.gpubench", "--size", "full")
"""The container's command: the whole suite at full size on every GPU of the node."""

CACHE_MOUNT = "/var/cache/triton"
"""Triton's cache and home (compiled kernels, autotuning results) on a writable emptyDir."""

CPU_REQUEST = "4"
MEMORY_REQUEST = "16Gi"
MEMORY_LIMIT = "64Gi"
"""Host resources: torch + triton + autotuning compile on a few cores; 1-3 GiB streams are
allocated on the GPU, not the host. No CPU limit (throttling would distort launch timing)."""

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_JOB_NAME_MAX = 52
"""An indexed Job's pod hostname is ``<job>-<index>`` and the Job controller appends a
suffix to its pods' names; 52 keeps both within the 63-character label limit (as CronJobs)."""


def default_job_name(now: datetime | None = None) -> str:
    """``annex-gpubench-<YYYYmmddHHMM>`` in UTC: one Job per probe run."""
    return f"{APP_NAME}-{(now or datetime.now(UTC)).astimezone(UTC):%Y%m%d%H%M}"


def probe_manifest(
    *,
    nodes: int,
    gpus_per_node: int,
    image: str,
    namespace: str = "annex-probes",
    node_selector: Mapping[str, str] = DEFAULT_NODE_SELECTOR,
    priority_class: str = "annex-probe",
    priority_value: int = 0,
    deadline_seconds: int = 3600,
    ttl_seconds_after_finished: int = 86400,
    job_name: str | None = None,
    cluster: str | None = None,
    extra_args: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Namespace, PriorityClass, ServiceAccount and the indexed Job, in apply order.

    ``nodes``: how many GPU nodes to probe (one pod each); ``gpus_per_node``: the GPUs each pod
    requests (all of a node's, so the node is idle while it is measured). ``cluster`` is
    passed to the records as ``ANNEX_CLUSTER``; ``extra_args`` are appended to the command
    (e.g. ``["--benchmarks", "gemm,copy"]``). Raises ``ConfigError`` for invalid values.
    """
    job = job_name or default_job_name()
    _check(nodes >= 1, "nodes", nodes, "must be at least 1 (the number of GPU nodes to probe)")
    _check(gpus_per_node >= 1, "gpus_per_node", gpus_per_node, "must be at least 1")
    _check(bool(image.strip()), "image", image, "must name the probe image (with torch+triton)")
    _check(deadline_seconds >= 60, "deadline_seconds", deadline_seconds, "must be ≥ 60")
    _check(ttl_seconds_after_finished >= 0, "ttl_seconds_after_finished",
           ttl_seconds_after_finished, "must be ≥ 0")  # fmt: skip
    _check(priority_value < 1_000_000_000, "priority_value", priority_value,
           "must be below 1000000000 (values above are reserved for system classes)")  # fmt: skip
    for what, name, limit in (
        ("namespace", namespace, 63),
        ("priority_class", priority_class, 253),
        ("job_name", job, _JOB_NAME_MAX),
    ):
        _check(
            len(name) <= limit and bool(_DNS_LABEL.match(name)),
            what,
            name,
            f"must be lowercase letters, digits and '-', at most {limit} characters",
        )
    labels = {"app.kubernetes.io/name": APP_NAME, "app.kubernetes.io/component": COMPONENT}
    part_of = {"app.kubernetes.io/part-of": "annex"}
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": namespace,
                "labels": {
                    **part_of,
                    "pod-security.kubernetes.io/enforce": "restricted",
                    "pod-security.kubernetes.io/enforce-version": "latest",
                },
            },
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": priority_class, "labels": {**labels, **part_of}},
            "value": int(priority_value),
            "preemptionPolicy": "Never",
            "globalDefault": False,
            "description": (
                "annex GPU benchmark probes: run on idle GPUs only, never preempt (Never); "
                "preempted by any higher-priority workload; not below 0, so annex does not "
                "count them as balloons."
            ),
        },
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": namespace, "labels": labels},
            "automountServiceAccountToken": False,
        },
        _job(
            job=job,
            namespace=namespace,
            labels=labels,
            nodes=nodes,
            gpus_per_node=gpus_per_node,
            image=image,
            node_selector=dict(node_selector),
            priority_class=priority_class,
            deadline_seconds=deadline_seconds,
            ttl_seconds_after_finished=ttl_seconds_after_finished,
            cluster=cluster,
            extra_args=list(extra_args),
        ),
    ]


def _job(
    *,
    job: str,
    namespace: str,
    labels: dict[str, str],
    nodes: int,
    gpus_per_node: int,
    image: str,
    node_selector: dict[str, str],
    priority_class: str,
    deadline_seconds: int,
    ttl_seconds_after_finished: int,
    cluster: str | None,
    extra_args: list[str],
) -> dict[str, Any]:
    def field_env(name: str, path: str) -> dict[str, Any]:
        return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}

    env: list[dict[str, Any]] = [
        field_env("NODE_NAME", "spec.nodeName"),
        field_env("POD_NAME", "metadata.name"),
        field_env("POD_NAMESPACE", "metadata.namespace"),
        field_env("JOB_NAME", f"metadata.labels['{JOB_NAME_LABEL}']"),
        # JOB_COMPLETION_INDEX is set by the Job controller for Indexed Jobs.
        {"name": "TRITON_CACHE_DIR", "value": f"{CACHE_MOUNT}/cache"},
        {"name": "TRITON_HOME", "value": CACHE_MOUNT},
        {"name": "HOME", "value": "/tmp"},
        {"name": "PYTHONUNBUFFERED", "value": "1"},
    ]
    if cluster:
        env.append({"name": "ANNEX_CLUSTER", "value": cluster})
    gpus = {GPU_RESOURCE: str(gpus_per_node)}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "completionMode": "Indexed",
            "completions": nodes,
            "parallelism": nodes,
            "backoffLimitPerIndex": 0,
            "activeDeadlineSeconds": deadline_seconds,
            "ttlSecondsAfterFinished": ttl_seconds_after_finished,
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "restartPolicy": "Never",
                    "priorityClassName": priority_class,
                    "serviceAccountName": SERVICE_ACCOUNT,
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "nodeSelector": node_selector,
                    "affinity": {
                        "podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "labelSelector": {
                                        "matchLabels": {
                                            "app.kubernetes.io/name": APP_NAME,
                                            JOB_NAME_LABEL: job,
                                        }
                                    },
                                    "topologyKey": "kubernetes.io/hostname",
                                }
                            ]
                        }
                    },
                    "tolerations": [
                        {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
                    ],
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": RUN_AS_USER,
                        "runAsGroup": RUN_AS_USER,
                        "fsGroup": RUN_AS_USER,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": CONTAINER,
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": [*COMMAND, *extra_args],
                            "env": env,
                            "resources": {
                                "requests": {
                                    "cpu": CPU_REQUEST,
                                    "memory": MEMORY_REQUEST,
                                    **gpus,
                                },
                                "limits": {"memory": MEMORY_LIMIT, **gpus},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "volumeMounts": [
                                {"name": "triton-cache", "mountPath": CACHE_MOUNT},
                                {"name": "tmp", "mountPath": "/tmp"},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "triton-cache", "emptyDir": {"sizeLimit": "2Gi"}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "4Gi"}},
                    ],
                },
            },
        },
    }


def manifest_yaml(objects: Sequence[Mapping[str, Any]]) -> str:
    """Multi-document YAML (``---`` separated), keys in the order built (stable, diffable)."""
    return yaml.safe_dump_all(
        [_plain(obj) for obj in objects],
        sort_keys=False,
        default_flow_style=False,
        explicit_start=True,
        allow_unicode=True,
        width=100,
    )


def _plain(value: Any) -> Any:
    """Mappings and sequences as plain dicts and lists (what safe_dump accepts)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _check(ok: bool, name: str, value: object, rule: str) -> None:
    if not ok:
        raise ConfigError(
            f"probe manifest: {name}={value!r} {rule}",
            hint="fix the value passed to `annex probe manifest`",
        )

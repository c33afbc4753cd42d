"""The probe Job manifest: its structure, its YAML, and the official Kubernetes models.

``kubectl apply --dry-run=client`` still asks the API server for discovery (checked: it fails
with "connection refused" without one), so instead every object is decoded into the
``kubernetes`` client's generated models and encoded back: a misspelt or misplaced field is
dropped by the models and the round trip differs.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import ApiClient

from annex.errors import ConfigError
from annex.settings import BalloonRule
from probes.gpubench.manifest import (
    default_job_name,
    manifest_yaml,
    probe_manifest,
)

ROOT = Path(__file__).resolve().parents[2]
JOB = "annex-gpubench-202611211840"
LABELS = {"app.kubernetes.io/name": "annex-gpubench", "app.kubernetes.io/component": "probe"}


def manifest(**overrides: Any) -> list[dict[str, Any]]:
    arguments: dict[str, Any] = {
        "nodes": 12,
        "gpus_per_node": 8,
        "image": "registry.example.com/annex-probe:1.0",
        "job_name": JOB,
    }
    arguments.update(overrides)
    return probe_manifest(**arguments)


def pod_spec(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return objects[3]["spec"]["template"]["spec"]


def test_objects_in_apply_order() -> None:
    objects = manifest()
    assert [(o["apiVersion"], o["kind"]) for o in objects] == [
        ("v1", "Namespace"),
        ("scheduling.k8s.io/v1", "PriorityClass"),
        ("v1", "ServiceAccount"),
        ("batch/v1", "Job"),
    ]
    namespace, _, account, job = objects
    assert namespace["metadata"]["name"] == "annex-probes"
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert account["metadata"]["namespace"] == job["metadata"]["namespace"] == "annex-probes"
    assert account["automountServiceAccountToken"] is False
    assert job["metadata"]["name"] == JOB
    assert job["metadata"]["labels"] == LABELS


def test_priority_is_low_never_preempts_and_is_not_a_balloon() -> None:
    priority = manifest()[1]
    assert priority["metadata"]["name"] == "annex-probe"
    assert priority["preemptionPolicy"] == "Never"
    assert priority["globalDefault"] is False
    # annex counts pods below this priority as balloons; a probe is real work.
    assert BalloonRule().priority_below <= priority["value"] < 1000
    assert manifest(priority_value=5)[1]["value"] == 5
    assert pod_spec(manifest())["priorityClassName"] == "annex-probe"


def test_indexed_job_one_pod_per_gpu_node() -> None:
    job = manifest(nodes=12)[3]
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == 12
    assert spec["backoffLimitPerIndex"] == 0
    assert spec["activeDeadlineSeconds"] == 3600
    assert spec["ttlSecondsAfterFinished"] == 86400
    assert spec["template"]["metadata"]["labels"] == LABELS
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    # the Job controller labels its pods with batch.kubernetes.io/job-name: this Job's only
    assert term["labelSelector"]["matchLabels"] == {
        "app.kubernetes.io/name": "annex-gpubench",
        "batch.kubernetes.io/job-name": JOB,
    }
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_container_requests_whole_nodes_of_gpus_and_runs_the_suite() -> None:
    (container,) = pod_spec(manifest(gpus_per_node=8))["containers"]
    assert container["name"] == "gpubench"
    assert container["image"] == "registry.example.com/annex-probe:1.0"
    assert container["command"] == ["python", "-m", "probes.gpubench", "--size", "full"]
    resources = container["resources"]
    assert resources["requests"]["nvidia.com/gpu"] == resources["limits"]["nvidia.com/gpu"] == "8"
    assert "cpu" not in resources["limits"]  # no CPU throttling under the timer
    extra = pod_spec(manifest(extra_args=["--benchmarks", "gemm"]))["containers"][0]
    assert extra["command"][-2:] == ["--benchmarks", "gemm"]


def test_downward_api_feeds_the_records() -> None:
    (container,) = pod_spec(manifest(cluster="prod-a"))["containers"]
    env = {item["name"]: item for item in container["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert env["JOB_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.labels['batch.kubernetes.io/job-name']"
    )
    assert env["ANNEX_CLUSTER"]["value"] == "prod-a"
    assert "ANNEX_CLUSTER" not in {e["name"] for e in pod_spec(manifest())["containers"][0]["env"]}


def test_locked_down_with_a_writable_triton_cache() -> None:
    pod = pod_spec(manifest())
    assert pod["automountServiceAccountToken"] is False
    assert pod["serviceAccountName"] == "annex-gpubench"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    env = {e["name"]: e.get("value") for e in container["env"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    cache_dir = env["TRITON_CACHE_DIR"]
    cache_mount = next(path for path in mounts if cache_dir.startswith(path))
    assert "emptyDir" in volumes[mounts[cache_mount]]
    assert "emptyDir" in volumes[mounts["/tmp"]]


def test_yaml_is_multi_document_stable_and_round_trips() -> None:
    objects = manifest(cluster="prod-a")
    text = manifest_yaml(objects)
    assert text.startswith("---\napiVersion: v1\nkind: Namespace\n")
    assert text.count("\n---\n") == 3
    assert list(yaml.safe_load_all(text)) == objects
    assert manifest_yaml(manifest(cluster="prod-a")) == text  # deterministic
    assert "nvidia.com/gpu.present: 'true'" in text  # a string, not a YAML boolean
    assert "nvidia.com/gpu: '8'" in text


def test_every_object_fits_the_official_kubernetes_models() -> None:
    api = ApiClient()
    decode = api._ApiClient__deserialize  # the generated client's model decoder
    for document in yaml.safe_load_all(manifest_yaml(manifest(cluster="prod-a"))):
        model = decode(document, f"V1{document['kind']}")
        assert api.sanitize_for_serialization(model) == document, document["kind"]


def test_default_job_name_is_timestamped() -> None:
    assert default_job_name(datetime(2026, 11, 21, 18, 40, 59, tzinfo=UTC)) == JOB
    generated = probe_manifest(nodes=1, gpus_per_node=1, image="x")[3]["metadata"]["name"]
    assert generated.startswith("annex-gpubench-") and len(generated) == len(JOB)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"nodes": 0}, "nodes"),
        ({"gpus_per_node": 0}, "gpus_per_node"),
        ({"image": " "}, "image"),
        ({"job_name": "Annex_Probe"}, "job_name"),
        ({"job_name": "a" * 60}, "job_name"),
        ({"namespace": "-bad"}, "namespace"),
        ({"deadline_seconds": 10}, "deadline_seconds"),
        ({"priority_value": 2_000_000_000}, "priority_value"),
    ],
)
def test_invalid_values_are_refused(overrides: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        manifest(**overrides)


def test_manifest_module_needs_no_gpu_stack() -> None:
    code = (
        "import sys; import probes.gpubench.manifest as m; "
        "m.manifest_yaml(m.probe_manifest(nodes=1, gpus_per_node=1, image='x')); "
        "heavy = sorted({'torch', 'triton'} & set(sys.modules)); "
        "assert not heavy, heavy"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr

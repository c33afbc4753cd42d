"""The Kubernetes deployment in ``deploy/`` is consistent and loads annex's Definitions.

An instance is built from a ``dagster.yaml`` derived from ``deploy/helm/values.yaml`` (what the
chart renders into its instance ConfigMap), with the ``K8sRunLauncher`` pointed at a dummy
kubeconfig: constructing the launcher reads kube config but never calls a cluster.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml

from pipelines.definitions import defs

# dagster-k8s is not in the project environment (it pins kubernetes<37): `make test` runs
# these with deploy/requirements-k8s.txt on top.
pytestmark = pytest.mark.deploy

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
POOL = "duckdb"

DUMMY_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
  - name: nowhere
    cluster: {server: "https://127.0.0.1:1"}
users:
  - name: nobody
    user: {token: not-a-token}
contexts:
  - name: nowhere
    context: {cluster: nowhere, user: nobody}
current-context: nowhere
"""


@pytest.fixture(scope="module")
def values() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text(encoding="utf-8"))


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def _instance_yaml(values: dict[str, Any], kubeconfig: Path) -> dict[str, Any]:
    """What the chart renders from these values, less what needs a cluster or PostgreSQL."""
    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    run_k8s = launcher["runK8sConfig"]
    daemon = values["dagsterDaemon"]
    return {
        "run_launcher": {
            "module": "dagster_k8s",
            "class": "K8sRunLauncher",
            "config": {
                "load_incluster_config": False,
                "kubeconfig_file": str(kubeconfig),
                "job_namespace": launcher["jobNamespace"],
                "image_pull_policy": launcher["imagePullPolicy"],
                "service_account_name": values["global"]["serviceAccountName"],
                "dagster_home": "/opt/dagster/dagster_home",
                "instance_config_map": "dagster-instance",
                "env_vars": launcher["envVars"],
                "volumes": launcher["volumes"],
                "volume_mounts": launcher["volumeMounts"],
                "labels": launcher["labels"],
                "fail_pod_on_run_failure": launcher["failPodOnRunFailure"],
                "resources": launcher["resources"],
                "run_k8s_config": {
                    "pod_spec_config": run_k8s["podSpecConfig"],
                    "job_spec_config": run_k8s["jobSpecConfig"],
                },
            },
        },
        "run_coordinator": {
            "module": "dagster.core.run_coordinator",
            "class": "QueuedRunCoordinator",
        },
        "run_retries": {
            "enabled": daemon["runRetries"]["enabled"],
            "max_retries": daemon["runRetries"]["maxRetries"],
            "retry_on_asset_or_op_failure": daemon["runRetries"]["retryOnAssetOrOpFailure"],
        },
        "concurrency": {"pools": {"default_limit": values["concurrency"]["pools"]["defaultLimit"]}},
        "telemetry": {"enabled": False},
    }


def test_definitions_load_under_the_k8s_run_launcher(values: dict, tmp_path: Path) -> None:
    from dagster_k8s import K8sRunLauncher

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(DUMMY_KUBECONFIG, encoding="utf-8")
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        yaml.safe_dump(_instance_yaml(values, kubeconfig)), encoding="utf-8"
    )

    with dg.DagsterInstance.from_config(str(home)) as instance:
        launcher = instance.run_launcher
        assert isinstance(launcher, K8sRunLauncher)
        assert launcher.service_account_name == "annex-collector"
        assert [m["mountPath"] for m in launcher.volume_mounts if m["name"] == "warehouse"] == [
            "/data"
        ]
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 1
        assert instance.run_retries_enabled and instance.run_retries_max_retries == 2

    dg.Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    for key in graph.materializable_asset_keys:  # (the warehouse's tables are external)
        node = graph.get(key)
        # reports and the export read only the published copy: no pool, so they never hold up
        # a collection
        expected = set() if node.group_name in ("reports", "export") else {POOL}
        assert set(node.pools or ()) == expected, (
            f"{key.to_user_string()}: the assets that write DuckDB must share the pool the "
            "limit applies to"
        )


def test_helm_values_keep_one_writer_and_mount_the_warehouse(values: dict) -> None:
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    assert values["concurrency"] == {"enabled": True, "pools": {"defaultLimit": 1}}
    assert values["dagsterDaemon"]["runCoordinator"]["type"] == "QueuedRunCoordinator"

    (deployment,) = values["dagster-user-deployments"]["deployments"]
    assert deployment["dagsterApiGrpcArgs"] == ["-m", "pipelines.definitions"]
    assert deployment["includeConfigInLaunchedRuns"] == {"enabled": True}

    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    mount = next(m for m in launcher["volumeMounts"] if m["name"] == "warehouse")
    volume = next(v for v in launcher["volumes"] if v["name"] == "warehouse")
    claim = volume["persistentVolumeClaim"]["claimName"]
    assert f"ANNEX_WAREHOUSE={mount['mountPath']}/annex.duckdb" in launcher["envVars"]
    # The code server and the run pods mount identical volumes (de-duplicated when merged) and
    # land on the one node a ReadWriteOnce volume can attach to.
    assert deployment["volumes"] == launcher["volumes"]
    assert deployment["volumeMounts"] == launcher["volumeMounts"]
    assert deployment["nodeSelector"] == launcher["runK8sConfig"]["podSpecConfig"]["nodeSelector"]

    objects = {(d["kind"], d["metadata"]["name"]): d for d in _documents(DEPLOY / "k8s/annex.yaml")}
    pvc = objects[("PersistentVolumeClaim", claim)]
    assert pvc["spec"]["accessModes"] == ["ReadWriteOnce"]
    settings = objects[("ConfigMap", "annex-settings")]["data"]["annex.toml"]
    assert f'path = "{mount["mountPath"]}/annex.duckdb"' in settings


def test_service_account_is_bound_to_the_read_only_cluster_role(values: dict) -> None:
    rbac = {(d["kind"], d["metadata"]["name"]): d for d in _documents(DEPLOY / "rbac.yaml")}
    account = values["global"]["serviceAccountName"]
    assert values["serviceAccount"] == {"create": False, "name": account, "annotations": {}}
    assert ("ServiceAccount", account) in rbac
    binding = rbac[("ClusterRoleBinding", "annex-reader")]
    assert binding["roleRef"]["name"] == "annex-reader"
    assert {"kind": "ServiceAccount", "name": account, "namespace": "annex"} in binding["subjects"]
    assert values["runLauncher"]["config"]["k8sRunLauncher"]["jobNamespace"] == "annex"


def test_image_is_locked_non_root_and_sets_dagster_home() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert dockerfile.startswith("#") and "FROM python:3.11-slim-bookworm" in dockerfile
    assert "uv sync --locked --no-dev" in dockerfile
    assert re.search(r"^ENV[^\n]*(\n\s+[^\n]*)*DAGSTER_HOME=", dockerfile, re.MULTILINE)
    user = re.findall(r"^USER (\S+)", dockerfile, re.MULTILINE)
    assert user and not user[-1].startswith(("root", "0"))
    for package in ("libpango-1.0-0", "libpangoft2-1.0-0", "libharfbuzz-subset0"):
        assert package in dockerfile

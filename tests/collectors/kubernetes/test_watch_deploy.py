"""deploy/watch-deployment.yaml agrees with annex watch: one replica, read-only, exactly the
resources watch mode follows, and the command the CLI accepts."""

from __future__ import annotations

import yaml

from annex.cli import build_parser
from collectors.kubernetes.collect import RESOURCES
from collectors.kubernetes.history import WATCHED
from tests.helpers.paths import REPO_ROOT

MANIFEST = REPO_ROOT / "deploy" / "watch-deployment.yaml"


def documents() -> dict[str, dict]:
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text(encoding="utf-8")) if d]
    return {d["kind"]: d for d in docs}


def test_one_replica_recreated_and_the_reason_written_down() -> None:
    deployment = documents()["Deployment"]
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"]["type"] == "Recreate"
    text = MANIFEST.read_text(encoding="utf-8")
    assert "no leader election" in text


def test_the_role_grants_list_and_watch_on_exactly_the_watched_resources() -> None:
    role = documents()["ClusterRole"]
    granted: set[tuple[str, str]] = set()
    for rule in role["rules"]:
        assert set(rule["verbs"]) == {"list", "watch"}
        for group in rule["apiGroups"]:
            granted |= {(group, resource) for resource in rule["resources"]}
    wanted = set()
    for resource in RESOURCES:
        if resource.table in WATCHED:
            parts = resource.api_path.strip("/").split("/")
            group = "" if parts[0] == "api" else parts[1]
            wanted.add((group, parts[-1]))
    assert granted == wanted
    assert not any(resource in ("secrets", "configmaps") for _, resource in granted)


def test_the_container_runs_a_command_the_cli_accepts() -> None:
    deployment = documents()["Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert pod["serviceAccountName"] == documents()["ServiceAccount"]["metadata"]["name"]
    command = container["command"]
    assert command[:2] == ["annex", "watch"] and "--once" not in command
    args = build_parser().parse_args(command[1:])
    assert args.cluster_name == "this-cluster"

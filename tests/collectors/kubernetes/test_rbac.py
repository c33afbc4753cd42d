"""deploy/rbac.yaml grants exactly what the collectors request, and never Secrets.

The ClusterRole covers collectors/kubernetes' lists; a namespaced Role covers the one
subresource collectors/gpubench reads: `get` on pods/log in the probe namespace.
"""

from __future__ import annotations

import yaml

from annex.settings import TOPOLOGY_PRESETS, GpubenchSettings, KubernetesSettings
from collectors.kubernetes import RESOURCES, collect_cluster
from tests.helpers import kubernetes_api as t
from tests.helpers.paths import REPO_ROOT

RBAC = REPO_ROOT / "deploy" / "rbac.yaml"


def role_rules() -> list[dict]:
    roles = [d for d in documents() if d["kind"] == "ClusterRole"]
    assert len(roles) == 1
    binding = next(d for d in documents() if d["kind"] == "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == roles[0]["metadata"]["name"]
    return roles[0]["rules"]


def request_attributes(path: str) -> tuple[str, str]:
    """(apiGroup, resource) of a cluster-scope list path, as the RBAC authorizer sees it."""
    parts = path.strip("/").split("/")
    if parts[0] == "api":  # /api/v1/<resource>
        return "", parts[2]
    return parts[1], parts[3]  # /apis/<group>/<version>/<resource>


def allowed(rules: list[dict], group: str, resource: str, verb: str) -> bool:
    return any(
        group in rule["apiGroups"] and resource in rule["resources"] and verb in rule["verbs"]
        for rule in rules
    )


def documents() -> list[dict]:
    return list(yaml.safe_load_all(RBAC.read_text()))


def test_role_is_read_only_and_never_grants_secrets():
    roles = [d for d in documents() if d["kind"] in ("Role", "ClusterRole")]
    assert len(roles) == 2
    for role in roles:
        for rule in role["rules"]:
            assert set(rule["verbs"]) <= {"get", "list", "watch"}
            assert "secrets" not in rule["resources"] and "*" not in rule["resources"]
            assert "*" not in rule["apiGroups"]


def test_probe_logs_are_readable_in_the_probe_namespace_only():
    """GET /api/v1/namespaces/<gpubench.namespace>/pods/<pod>/log: verb get, pods/log."""
    namespace = GpubenchSettings().namespace
    docs = documents()
    (role,) = [d for d in docs if d["kind"] == "Role"]
    assert role["metadata"]["namespace"] == namespace
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}]
    (binding,) = [d for d in docs if d["kind"] == "RoleBinding"]
    assert binding["metadata"]["namespace"] == namespace
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    account = next(d for d in docs if d["kind"] == "ServiceAccount")["metadata"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]
    assert any(d["kind"] == "Namespace" and d["metadata"]["name"] == namespace for d in docs)
    # the cluster-wide role still grants no logs anywhere
    assert not any("pods/log" in rule["resources"] for rule in role_rules())


def test_every_request_the_collector_makes_is_allowed():
    discovery = {r.discovery_path for r in RESOURCES if r.discovery_path}
    fake = t.FakeCluster({path: [] for path in discovery} | {r.api_path: [] for r in RESOURCES})
    list(
        collect_cluster(
            t.FakeApiClient(fake),
            cluster="c",
            settings=KubernetesSettings(),
            topology_levels=TOPOLOGY_PRESETS["generic"],
            in_process=True,
        )
    )
    rules = role_rules()
    # discovery documents are non-resource URLs every authenticated client may read
    requested = {request_attributes(path) for path, _ in fake.requests if path not in discovery}
    assert requested == {request_attributes(r.api_path) for r in RESOURCES}
    for group, resource in requested:
        assert allowed(rules, group, resource, "list"), (group, resource)
        assert resource != "secrets"


def test_role_grants_nothing_the_collector_does_not_read():
    read = {request_attributes(r.api_path) for r in RESOURCES}
    granted = {
        (g, res) for rule in role_rules() for g in rule["apiGroups"] for res in rule["resources"]
    }
    assert granted == read


def test_dra_is_read_with_list_and_watch_on_exactly_slices_and_claims():
    """resource.k8s.io: ResourceSlices and ResourceClaims listed and watched, and
    ResourceClaimTemplates (pending pods' claim demand) listed only; no DeviceClasses or
    DeviceTaintRules (annex decides GPU classes by name), read-only."""
    rules = [r for r in role_rules() if "resource.k8s.io" in r["apiGroups"]]
    assert all(r["apiGroups"] == ["resource.k8s.io"] for r in rules)
    verbs = {res: set(r["verbs"]) for r in rules for res in r["resources"]}
    assert sorted(verbs) == ["resourceclaims", "resourceclaimtemplates", "resourceslices"]
    assert verbs["resourceclaims"] == verbs["resourceslices"] == {"list", "watch"}
    assert verbs["resourceclaimtemplates"] == {"list"}

"""deploy/rbac.yaml's ClusterRole grants, per resource, exactly the verbs annex uses on it, and
deploy/watch-deployment.yaml's watcher no more than what `annex watch` follows.

The rule, derived from the code (never from a list kept here):

* ``list`` on every resource the snapshot collector reads (collectors.kubernetes RESOURCES:
  core lists, Kueue's and DRA's where the API server serves them);
* ``watch`` on what `annex watch` follows: its WATCHED tables, and the Kueue and DRA lists
  (issue 38: watched where discovery says the server serves them);
* ``get`` nowhere in the ClusterRole: annex reads single objects only as pods/log, which the
  probe namespace's Role grants (tests/collectors/kubernetes/test_rbac.py);
* never Secrets, never a wildcard.

One missing grant or one extra fails, naming the resource and verb.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from collectors.kubernetes import RESOURCES
from collectors.kubernetes.history import WATCHED
from tests.helpers.paths import REPO_ROOT

Grant = tuple[str, str, str]  # (apiGroup, resource, verb)


def _documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((REPO_ROOT / "deploy" / name).read_text()) if d]


def _cluster_role(name: str) -> list[dict[str, Any]]:
    (role,) = [d for d in _documents(name) if d["kind"] == "ClusterRole"]
    return role["rules"]


def _attributes(api_path: str) -> tuple[str, str]:
    """(apiGroup, resource) of a cluster-scope list path, as the RBAC authorizer reads it."""
    parts = api_path.strip("/").split("/")
    return ("", parts[2]) if parts[0] == "api" else (parts[1], parts[3])


def _grants(rules: list[dict[str, Any]]) -> set[Grant]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def listed() -> set[tuple[str, str]]:
    return {_attributes(r.api_path) for r in RESOURCES}


def followed() -> set[tuple[str, str]]:
    """What `annex watch` follows: WATCHED (the Kueue and DRA lists in it where served).

    ResourceClaimTemplates are listed by the snapshot only (a pending pod's claim demand
    before its claim exists): list, never watch."""
    return {_attributes(r.api_path) for r in RESOURCES if r.table in WATCHED}


def required() -> set[Grant]:
    return {(g, r, "list") for g, r in listed()} | {(g, r, "watch") for g, r in followed()}


def test_the_rule_covers_the_new_resources() -> None:
    """The derived sets hold what issue 38 added (a guard on the derivation itself)."""
    assert ("resource.k8s.io", "resourceslices", "watch") in required()
    assert ("resource.k8s.io", "resourceclaims", "list") in required()
    assert ("resource.k8s.io", "resourceclaimtemplates", "list") in required()
    assert ("resource.k8s.io", "resourceclaimtemplates", "watch") not in required()
    assert ("kueue.x-k8s.io", "workloads", "watch") in required()
    assert ("", "pods", "watch") in required()
    assert ("scheduling.k8s.io", "priorityclasses", "watch") not in required()


def test_reader_role_grants_exactly_what_annex_uses() -> None:
    granted = _grants(_cluster_role("rbac.yaml"))
    missing = sorted(required() - granted)
    extra = sorted(granted - required())
    assert not missing, f"deploy/rbac.yaml lacks {missing}: annex's requests would get 403"
    assert not extra, f"deploy/rbac.yaml grants {extra}, which annex never uses: remove them"


@pytest.mark.parametrize("name", ["rbac.yaml", "watch-deployment.yaml"])
def test_roles_are_read_only_and_never_name_secrets_or_wildcards(name: str) -> None:
    for role in (d for d in _documents(name) if d["kind"] in ("Role", "ClusterRole")):
        for rule in role["rules"]:
            assert set(rule["verbs"]) <= {"get", "list", "watch"}, (name, rule)
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"], (name, rule)
            assert "secrets" not in rule["resources"], (name, rule)


def test_watcher_role_lists_and_watches_what_the_watch_follows_and_nothing_else() -> None:
    granted = _grants(_cluster_role("watch-deployment.yaml"))
    watched = {_attributes(r.api_path) for r in RESOURCES if r.table in WATCHED}
    needed = {(g, r, v) for g, r in watched for v in ("list", "watch")}
    allowed = {(g, r, v) for g, r in followed() for v in ("list", "watch")}
    assert needed <= granted, f"watch-deployment.yaml lacks {sorted(needed - granted)}"
    assert granted <= allowed, f"watch-deployment.yaml grants {sorted(granted - allowed)}"

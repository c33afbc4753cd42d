"""Legacy (non-aggregated) discovery documents and `/version`.

kubectl asks for aggregated discovery first and accepts these plain documents as the
fallback (reference, "Observed: what kubectl v1.32 asks a server for").
"""

from __future__ import annotations

from simulator.kubernetes.resources import BY_GROUP_VERSION, RESOURCES

SERVER_VERSION = {
    "major": "1",
    "minor": "34",
    "emulationMajor": "1",
    "emulationMinor": "34",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "33",
    "gitVersion": "v1.34.2-annex-simulator",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-10-01T00:00:00Z",
    "goVersion": "go1.24.9",
    "compiler": "gc",
    "platform": "linux/amd64",
}

VERBS = ["get", "list", "watch"]


def api_versions(server_address: str) -> dict:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _groups() -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for resource in RESOURCES:
        if resource.group and resource.version not in groups.setdefault(resource.group, []):
            groups[resource.group].append(resource.version)
    return groups


def api_group(name: str) -> dict | None:
    versions = _groups().get(name)
    if not versions:
        return None
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": name,
        "versions": entries,
        "preferredVersion": entries[0],
    }


def api_group_list() -> dict:
    groups = []
    for name in _groups():
        group = api_group(name)
        assert group is not None
        del group["kind"], group["apiVersion"]
        groups.append(group)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_resource_list(group_version: str) -> dict | None:
    resources = BY_GROUP_VERSION.get(group_version)
    if resources is None:
        return None
    entries = []
    for resource in resources.values():
        entry: dict = {
            "name": resource.plural,
            "singularName": resource.singular,
            "namespaced": resource.namespaced,
            "kind": resource.kind,
            "verbs": VERBS,
        }
        if resource.short_names:
            entry["shortNames"] = list(resource.short_names)
        if resource.categories:
            entry["categories"] = list(resource.categories)
        entries.append(entry)
        if resource.plural == "pods":  # the one subresource served: GET pods/{name}/log
            entries.append(
                {
                    "name": "pods/log",
                    "singularName": "",
                    "namespaced": True,
                    "kind": "Pod",
                    "verbs": ["get"],
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": entries,
    }

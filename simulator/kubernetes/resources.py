"""The resource types the simulated API server serves, with their selectable fields.

Field selectors are per resource (reference §1.7). The error text for an unknown field
depends on whether upstream registers a conversion function for the kind: pods, nodes,
namespaces, events and jobs answer `field label not supported: X`; the rest fall back to
apimachinery's default, `"X" is not a known field selector: only "metadata.name", ...`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

FieldExtractor = Callable[[dict], dict[str, str]]


@dataclass(frozen=True)
class ResourceType:
    plural: str
    singular: str
    kind: str
    group: str  # "" for the core group
    version: str
    namespaced: bool
    fields: FieldExtractor
    field_names: tuple[str, ...]
    custom_field_error: bool  # True: "field label not supported: X"
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    listable: bool = True  # False: the server answers 403 (secrets)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def unknown_field_message(self, field: str) -> str:
        if self.custom_field_error:
            return f"field label not supported: {field}"
        return (
            f'"{field}" is not a known field selector: only "metadata.name", "metadata.namespace"'
        )


def _meta(obj: dict) -> dict[str, str]:
    metadata = obj.get("metadata", {})
    return {
        "metadata.name": metadata.get("name", ""),
        "metadata.namespace": metadata.get("namespace", ""),
    }


def _bool(value: object) -> str:
    return "true" if value else "false"


def _pod_fields(pod: dict) -> dict[str, str]:
    spec = pod.get("spec", {})
    status = pod.get("status", {})
    ips = status.get("podIPs") or []
    fields = _meta(pod)
    fields.update(
        {
            "spec.nodeName": spec.get("nodeName", ""),
            "spec.restartPolicy": spec.get("restartPolicy", ""),
            "spec.schedulerName": spec.get("schedulerName", ""),
            "spec.serviceAccountName": spec.get("serviceAccountName", ""),
            "spec.hostNetwork": _bool(spec.get("hostNetwork")),
            "status.phase": status.get("phase", ""),
            "status.podIP": status.get("podIP", ""),
            "status.podIPs": ips[0]["ip"] if ips else "",
            "status.nominatedNodeName": status.get("nominatedNodeName", ""),
        }
    )
    return fields


def _node_fields(node: dict) -> dict[str, str]:
    return {
        "metadata.name": node["metadata"]["name"],
        "spec.unschedulable": _bool(node.get("spec", {}).get("unschedulable")),
    }


def _namespace_fields(namespace: dict) -> dict[str, str]:
    return {
        "metadata.name": namespace["metadata"]["name"],
        "status.phase": namespace.get("status", {}).get("phase", ""),
    }


def _event_fields(event: dict) -> dict[str, str]:
    involved = event.get("involvedObject", {})
    fields = _meta(event)
    for name in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"):
        fields[f"involvedObject.{name}"] = str(involved.get(name, ""))
    fields["reason"] = event.get("reason", "")
    fields["reportingComponent"] = event.get("reportingComponent", "")
    fields["source"] = event.get("source", {}).get("component", "")
    fields["type"] = event.get("type", "")
    return fields


def _job_fields(job: dict) -> dict[str, str]:
    fields = _meta(job)
    fields["status.successful"] = str(job.get("status", {}).get("succeeded", 0))
    return fields


def _resource_slice_fields(slice_: dict) -> dict[str, str]:
    spec = slice_.get("spec", {})
    fields = _meta(slice_)
    fields["spec.nodeName"] = spec.get("nodeName", "")
    fields["spec.driver"] = spec.get("driver", "")
    return fields


def _custom(plural: str, kind: str, group: str, version: str, namespaced: bool, *short: str):
    """A custom resource (CRD): only metadata.name/namespace field selectors, default error."""
    return ResourceType(
        plural, kind.lower(), kind, group, version, namespaced, _meta, _META_FIELDS, False, short
    )


_EVENT_FIELDS = (
    "metadata.name",
    "metadata.namespace",
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
_META_FIELDS = ("metadata.name", "metadata.namespace")

RESOURCES: tuple[ResourceType, ...] = (
    ResourceType(
        "namespaces",
        "namespace",
        "Namespace",
        "",
        "v1",
        False,
        _namespace_fields,
        ("metadata.name", "status.phase"),
        True,
        ("ns",),
    ),
    ResourceType(
        "nodes",
        "node",
        "Node",
        "",
        "v1",
        False,
        _node_fields,
        ("metadata.name", "spec.unschedulable"),
        True,
        ("no",),
    ),
    ResourceType(
        "pods",
        "pod",
        "Pod",
        "",
        "v1",
        True,
        _pod_fields,
        tuple(_pod_fields({"metadata": {}}).keys()),
        True,
        ("po",),
        ("all",),
    ),
    ResourceType(
        "events",
        "event",
        "Event",
        "",
        "v1",
        True,
        _event_fields,
        _EVENT_FIELDS,
        True,
        ("ev",),
    ),
    ResourceType(
        "secrets",
        "secret",
        "Secret",
        "",
        "v1",
        True,
        _meta,
        _META_FIELDS,
        False,
        listable=False,
    ),
    ResourceType(
        "jobs",
        "job",
        "Job",
        "batch",
        "v1",
        True,
        _job_fields,
        ("metadata.name", "metadata.namespace", "status.successful"),
        True,
        (),
        ("all",),
    ),
    ResourceType(
        "priorityclasses",
        "priorityclass",
        "PriorityClass",
        "scheduling.k8s.io",
        "v1",
        False,
        _meta,
        _META_FIELDS,
        False,
        ("pc",),
    ),
    ResourceType(
        "resourceclaims",
        "resourceclaim",
        "ResourceClaim",
        "resource.k8s.io",
        "v1",
        True,
        _meta,
        _META_FIELDS,
        False,
    ),
    # DRA (resource.k8s.io/v1, GA in 1.34): served always; empty unless the world has them
    ResourceType(
        "deviceclasses",
        "deviceclass",
        "DeviceClass",
        "resource.k8s.io",
        "v1",
        False,
        _meta,
        _META_FIELDS,
        False,
    ),
    ResourceType(
        "resourceslices",
        "resourceslice",
        "ResourceSlice",
        "resource.k8s.io",
        "v1",
        False,
        _resource_slice_fields,
        ("metadata.name", "metadata.namespace", "spec.nodeName", "spec.driver"),
        False,
    ),
    ResourceType(
        "resourceclaimtemplates",
        "resourceclaimtemplate",
        "ResourceClaimTemplate",
        "resource.k8s.io",
        "v1",
        True,
        _meta,
        _META_FIELDS,
        False,
    ),
    # CRDs: NVIDIA's DRA driver (ComputeDomain) and Kueue, with their CRDs' short names
    _custom("computedomains", "ComputeDomain", "resource.nvidia.com", "v1beta1", True),
    _custom(
        "resourceflavors",
        "ResourceFlavor",
        "kueue.x-k8s.io",
        "v1beta1",
        False,
        "flavor",
        "flavors",
        "rf",
    ),
    _custom("clusterqueues", "ClusterQueue", "kueue.x-k8s.io", "v1beta1", False, "cq"),
    _custom(
        "localqueues", "LocalQueue", "kueue.x-k8s.io", "v1beta1", True, "queue", "queues", "lq"
    ),
    _custom("workloads", "Workload", "kueue.x-k8s.io", "v1beta1", True, "wl"),
)

BY_PLURAL: dict[str, ResourceType] = {r.plural: r for r in RESOURCES}
BY_GROUP_VERSION: dict[str, dict[str, ResourceType]] = {}
for _resource in RESOURCES:
    BY_GROUP_VERSION.setdefault(_resource.api_version, {})[_resource.plural] = _resource

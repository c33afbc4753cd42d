"""Whose pod a DCGM series names: the workload's, or the exporter's own (never attributed).

dcgm-exporter's Kubernetes mapping (``internal/pkg/transformation/kubernetes.go``, names in
``const.go``) labels a GPU's line with the workload holding it: ``pod``, ``namespace``,
``container`` -- or ``pod_name``, ``pod_namespace``, ``container_name`` with
``--use-old-namespace``. A line of a GPU nobody holds has none. What Prometheus stores then
depends on how it scrapes the exporter (the target's own labels from Kubernetes service
discovery are ``namespace``/``pod``/``container`` of the *exporter* pod, plus ``service``,
``endpoint``, ``job`` and ``instance``):

* ``honorLabels: false`` (the default): the exporter's colliding labels are renamed
  ``exported_pod``/``exported_namespace``/``exported_container`` (the workload) and
  ``pod``/``namespace``/``container`` are the exporter pod's.
* ``honorLabels: true``: the exporter's ``pod``/``namespace``/``container`` are kept (the
  workload); on a line without them, the target's are added, i.e. the *exporter pod's*.
* ``--use-old-namespace``: ``pod_name``... never collide, so they are kept under either setting.

So the same labels ``pod="x", namespace="y"`` can name the workload or the exporter. annex tells
them apart by asking Prometheus which pod each scrape target is: the target labels are on
``up{job, instance}`` (read once through ``/api/v1/series``; ``ExporterPods.add_target``), and a
line from target ``(job, instance)`` whose ``namespace``/``pod`` are that target's own is the
exporter's (workload NULL; the labels stay in ``labels``). When Prometheus does not say (no
``up`` series for the target), a line carrying ``service`` or ``endpoint`` (scraped through a
ServiceMonitor or PodMonitor) keeps no workload: annex never attributes GPU time to the
exporter's own pod. A direct scrape of ``/metrics`` carries only the exporter's labels, so its
``pod`` is the workload's.
"""

from __future__ import annotations

from collections.abc import Mapping

WORKLOAD = ("pod", "namespace", "container")
EXPORTED = tuple(f"exported_{w}" for w in WORKLOAD)
OLD_NAMESPACE = ("pod_name", "pod_namespace", "container_name")
"""dcgm-exporter ``--use-old-namespace`` names of pod, namespace and container (``const.go``)."""

Workload = tuple[str | None, str | None, str | None]
NOBODY: Workload = (None, None, None)


class ExporterPods:
    """The scrape targets' own pods: ``(namespace, pod)`` per ``(job, instance)``."""

    def __init__(self) -> None:
        self.by_target: dict[tuple[str, str], set[tuple[str, str]]] = {}

    def add_target(self, labels: Mapping[str, str]) -> None:
        """One target's own labels (an ``up`` series, or a line Prometheus renamed)."""
        key = _target(labels)
        pod = labels.get("pod")
        if key is None or not pod:
            return
        self.by_target.setdefault(key, set()).add((labels.get("namespace") or "", pod))

    def knows(self, labels: Mapping[str, str]) -> bool:
        key = _target(labels)
        return key is not None and key in self.by_target

    def is_own(self, labels: Mapping[str, str]) -> bool:
        """Whether the line's ``namespace``/``pod`` are its scrape target's own."""
        key = _target(labels)
        own = self.by_target.get(key) if key is not None else None
        pod = labels.get("pod")
        return bool(own) and bool(pod) and (labels.get("namespace") or "", pod) in own


def _target(labels: Mapping[str, str]) -> tuple[str, str] | None:
    job, instance = labels.get("job"), labels.get("instance")
    if job is None and instance is None:
        return None
    return job or "", instance or ""


def workload(
    labels: Mapping[str, str], source: str, exporters: ExporterPods | None = None
) -> tuple[Workload, tuple[str, ...]]:
    """``((pod, namespace, container), label names consumed)`` of one series.

    The consumed names become columns; the others stay in ``labels`` (an exporter pod's
    ``pod``/``namespace`` among them). Empty values are NULL.
    """
    if any(name in labels for name in EXPORTED):
        return _values(labels, EXPORTED), EXPORTED  # pod/namespace here are the target's
    if any(name in labels for name in OLD_NAMESPACE):
        return _values(labels, OLD_NAMESPACE), OLD_NAMESPACE
    if not any(labels.get(name) for name in WORKLOAD):
        return NOBODY, WORKLOAD
    if source == "scrape":
        return _values(labels, WORKLOAD), WORKLOAD
    if exporters is not None and exporters.knows(labels):
        if exporters.is_own(labels):
            return NOBODY, ()
        return _values(labels, WORKLOAD), WORKLOAD  # honorLabels: true kept the workload's
    if "service" in labels or "endpoint" in labels:
        # scraped through a ServiceMonitor/PodMonitor: the target's own labels, or honorLabels:
        # true kept the workload's -- without up, cannot tell, so never the exporter's pod
        return NOBODY, ()
    return _values(labels, WORKLOAD), WORKLOAD


def _values(labels: Mapping[str, str], names: tuple[str, ...]) -> Workload:
    pod, namespace, container = (labels.get(name) or None for name in names)
    return pod, namespace, container

"""A pod's effective GPU requests: upstream's ``PodRequests`` rule, as pure functions.

Source: ``k8s.io/component-helpers/resource.PodRequests`` (reference §4)::

    containers  = Σ req(c) over spec.containers + Σ req(s) over sidecars
                  (sidecar = an init container with restartPolicy: Always)
    init_use(i) = req(i) + Σ req(sidecars listed before i)     for a regular init container
                = Σ req(sidecars up to and including i)         for a sidecar
    effective   = max(containers, max_i init_use(i)) + spec.overhead

Pod-level ``spec.resources`` only overrides cpu/memory/hugepages, so GPU math always uses the
container specs. For extended resources a container's request falls back to its limit (the API
server defaults requests from limits, and a request without a limit is rejected).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from collectors.kubernetes.quantity import parse_count

GPU_RESOURCE = "nvidia.com/gpu"
"""Whole GPUs (with the MIG ``single`` strategy, also MIG slices: the node says which)."""

_GPU_PREFIXES = ("nvidia.com/gpu", "nvidia.com/mig-", "amd.com/gpu", "gpu.intel.com/")

Quantities = Mapping[str, str | int | float]


def is_gpu_resource(name: str) -> bool:
    """Whether a resource name is a GPU-like extended resource annex accounts for.

    ``nvidia.com/gpu`` and the MIG ``mixed`` strategy's ``nvidia.com/mig-<profile>`` resources,
    plus AMD and Intel GPUs. ``nvidia.com/gpu.shared`` (time-slicing renamed) is counted too:
    it is still a claim on a GPU.
    """
    return name.startswith(_GPU_PREFIXES)


@dataclass(frozen=True)
class ContainerResources:
    """What PodRequests needs of one container: its requests, limits and restart policy."""

    requests: Quantities = field(default_factory=dict)
    limits: Quantities = field(default_factory=dict)
    restart_policy: str | None = None

    @property
    def is_sidecar(self) -> bool:
        """A native sidecar (KEP-753): an init container that keeps running."""
        return self.restart_policy == "Always"


def container_gpu_requests(
    requests: Quantities | None, limits: Quantities | None
) -> dict[str, int]:
    """One container's GPU-like requests, each falling back to the limit; parsed to counts.

    Raises ``ValueError`` (naming the resource) when a quantity is not a whole count.
    """
    result: dict[str, int] = {}
    if limits:
        for name, value in limits.items():
            if is_gpu_resource(name):
                result[name] = _count(name, value)
    if requests:
        for name, value in requests.items():
            if is_gpu_resource(name):
                result[name] = _count(name, value)
    return result


def _count(name: str, value: str | int | float) -> int:
    try:
        return parse_count(value)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _add(total: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, 0) + value


def _maximise(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, value in other.items():
        if value > total.get(name, 0):
            total[name] = value


def effective_requests(
    containers: Iterable[Mapping[str, int]],
    init_containers: Sequence[tuple[Mapping[str, int], bool]] = (),
    overhead: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """The PodRequests rule over already-parsed per-container requests.

    ``init_containers`` are ``(requests, is_sidecar)`` pairs in spec order (order matters: a
    regular init container runs beside the sidecars started before it). Resources whose
    effective request is zero are left out.
    """
    total: dict[str, int] = {}
    for requests in containers:
        _add(total, requests)
    sidecars_so_far: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for requests, is_sidecar in init_containers:
        if is_sidecar:
            _add(total, requests)
            _add(sidecars_so_far, requests)
            use = sidecars_so_far
        else:
            use = dict(requests)
            _add(use, sidecars_so_far)
        _maximise(init_peak, use)
    _maximise(total, init_peak)
    if overhead:
        _add(total, overhead)
    return {name: value for name, value in total.items() if value > 0}


def pod_gpu_requests(
    containers: Iterable[ContainerResources],
    init_containers: Iterable[ContainerResources] = (),
    overhead: Quantities | None = None,
) -> dict[str, int]:
    """A pod's effective GPU-like requests from its container specs (see module docstring).

    Raises ``ValueError`` when a GPU quantity does not parse as a whole count.
    """
    regular = [container_gpu_requests(c.requests, c.limits) for c in containers]
    init = [(container_gpu_requests(c.requests, c.limits), c.is_sidecar) for c in init_containers]
    extra = container_gpu_requests(overhead, None) if overhead else None
    return effective_requests(regular, init, extra)

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

GPU_CORES_RESOURCE = "nvidia.com/gpucores"
"""HAMi: the percent of each requested GPU's cores a pod gets (its share of the GPU)."""

DEVICES = "devices"
"""A resource counted in devices: GPUs, MIG slices, or replicas of a shared GPU."""
CORES_PERCENT = "cores_percent"
"""A resource that is a share of the GPUs a pod requests, in percent (HAMi's gpucores)."""

# One rule, first match wins: exact names before prefixes, so HAMi's nvidia.com/gpucores and
# nvidia.com/gpumem are never read as nvidia.com/gpu. Memory (gpumem in MiB, gpumem-percentage)
# is never a GPU count; gpucores is kept beside the pod's GPUs as their share.
_GPU_RESOURCE_RULES: tuple[tuple[str, str, str | None], ...] = (
    ("exact", "nvidia.com/gpu", DEVICES),
    ("exact", "nvidia.com/gpu.shared", DEVICES),  # time-slicing/MPS renamed (renameByDefault)
    ("exact", GPU_CORES_RESOURCE, CORES_PERCENT),
    ("exact", "nvidia.com/gpumem", None),
    ("exact", "nvidia.com/gpumem-percentage", None),
    ("prefix", "nvidia.com/mig-", DEVICES),  # MIG mixed strategy, <profile>[.shared]
    ("exact", "amd.com/gpu", DEVICES),
    ("prefix", "gpu.intel.com/", DEVICES),
)

Quantities = Mapping[str, str | int | float]


def gpu_resource_kind(name: str) -> str | None:
    """How annex counts a resource: ``DEVICES``, ``CORES_PERCENT`` or ``None`` (not a GPU)."""
    for match, pattern, kind in _GPU_RESOURCE_RULES:
        if name == pattern if match == "exact" else name.startswith(pattern):
            return kind
    return None


def is_gpu_resource(name: str) -> bool:
    """Whether a resource counts GPU devices (what nodes advertise and queues' quotas count).

    ``nvidia.com/gpu`` and the MIG ``mixed`` strategy's ``nvidia.com/mig-<profile>`` resources,
    plus AMD and Intel GPUs. ``nvidia.com/gpu.shared`` (time-slicing renamed) is counted too:
    it is still a claim on a GPU. HAMi's ``nvidia.com/gpucores`` (a share) and
    ``nvidia.com/gpumem`` (memory) are not GPU counts.
    """
    return gpu_resource_kind(name) == DEVICES


def is_gpu_accounted(name: str) -> bool:
    """Whether a pod's request of the resource is kept among its GPU requests.

    GPU devices, and ``nvidia.com/gpucores``: the share of those devices that HAMi gives the
    pod (the capacity and GPU-hour views read it as gpucores/100 of each GPU).
    """
    return gpu_resource_kind(name) is not None


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
    """One container's GPU requests (``is_gpu_accounted``), each falling back to the limit.

    Raises ``ValueError`` (naming the resource) when a quantity is not a whole count.
    """
    result: dict[str, int] = {}
    if limits:
        for name, value in limits.items():
            if is_gpu_accounted(name):
                result[name] = _count(name, value)
    if requests:
        for name, value in requests.items():
            if is_gpu_accounted(name):
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

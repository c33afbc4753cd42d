"""The world: every object the simulated cluster holds, plus ground truth annex cannot see.

The API objects are plain dicts shaped exactly as the Kubernetes API returns them (items of
a list: no `kind`/`apiVersion`). Beside them the world keeps what later simulators need to
agree with the API server: each GPU's UUID, the training runs, the GPU bookkeeping of the
generator. Tests compute their expectations from the objects themselves, not from these.
"""

from __future__ import annotations

import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

DEFAULT_NOW = datetime(2026, 11, 2, 9, 0, 0, tzinfo=UTC)

# resource plural -> (apiVersion, kind, namespaced)
RESOURCE_KINDS: dict[str, tuple[str, str, bool]] = {
    "namespaces": ("v1", "Namespace", False),
    "nodes": ("v1", "Node", False),
    "pods": ("v1", "Pod", True),
    "events": ("v1", "Event", True),
    "jobs": ("batch/v1", "Job", True),
    "priorityclasses": ("scheduling.k8s.io/v1", "PriorityClass", False),
    "resourceclaims": ("resource.k8s.io/v1", "ResourceClaim", True),
    # served always, empty unless build_world(features=...) adds them
    "deviceclasses": ("resource.k8s.io/v1", "DeviceClass", False),
    "resourceslices": ("resource.k8s.io/v1", "ResourceSlice", False),
    "resourceclaimtemplates": ("resource.k8s.io/v1", "ResourceClaimTemplate", True),
    "computedomains": ("resource.nvidia.com/v1beta1", "ComputeDomain", True),
    "resourceflavors": ("kueue.x-k8s.io/v1beta1", "ResourceFlavor", False),
    "clusterqueues": ("kueue.x-k8s.io/v1beta1", "ClusterQueue", False),
    "localqueues": ("kueue.x-k8s.io/v1beta1", "LocalQueue", True),
    "workloads": ("kueue.x-k8s.io/v1beta1", "Workload", True),
}


@dataclass(frozen=True)
class Gpu:
    """One physical GPU: its stable UUID ties the API server to telemetry and attestations."""

    uuid: str
    node: str
    index: int
    product: str
    memory_mib: int
    healthy: bool = True
    # MIG devices carved out of this GPU: (MIG UUID, profile name such as "1g.10gb")
    mig_devices: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class GpuHolding:
    """Ground truth: one pod's hold on (a share of) one physical GPU, and by which mechanism.

    `shares / shares_per_gpu` is the fraction of the GPU the pod holds: 1/1 for a whole GPU
    (device plugin or DRA); one MIG device of a GPU split into k devices is 1/k; a
    time-sliced or MPS replica is 1/replicas; a HAMi request is gpucores/100.
    """

    namespace: str
    pod: str
    node: str
    gpu_uuid: str  # the physical GPU
    mechanism: str  # "device-plugin" | "dra" | "time-slicing" | "mps" | "hami"
    shares: int = 1
    shares_per_gpu: int = 1
    device: str | None = None  # the DRA device name, or the MIG device's UUID
    claim: str | None = None  # DRA: "namespace/name" of the ResourceClaim


@dataclass(frozen=True)
class QueuedWorkload:
    """Ground truth of one Kueue Workload: where it queued and when it waited, ran, ended."""

    namespace: str
    name: str  # the Workload
    job: str
    local_queue: str
    cluster_queue: str
    state: str  # "admitted" | "queued" | "preempted" | "finished"
    created: datetime  # submitted: the first wait starts here
    admitted: datetime | None  # admission (QuotaReserved and Admitted True); for "preempted"
    # the admission that `evicted` cut short: it waits again from `evicted`
    evicted: datetime | None  # preempted at
    finished: datetime | None
    gpus: int  # nvidia.com/gpu the workload asks for (all pods)
    priority_class: str = ""


@dataclass(frozen=True)
class QueueQuota:
    """Ground truth of one ClusterQueue and flavor for nvidia.com/gpu (admitted, unfinished)."""

    cluster_queue: str
    cohort: str
    flavor: str
    nominal: int
    borrowing_limit: int | None
    used: int
    borrowed: int  # max(0, used - nominal)


@dataclass
class TrainingRun:
    """A (possibly multi-node) training job: one batch/v1 Job, one pod per node."""

    run_id: str
    namespace: str
    job_name: str
    model: str
    state: str  # "running" | "starting" | "queued" | "completed" | "failed"
    nodes: list[str]
    pods: int
    gpus_per_pod: int
    gpu_resource: str
    started: datetime | None
    finished: datetime | None


class PodLogs(MutableMapping[tuple[str, str], str]):
    """Container logs by (namespace, pod): plain text, one line per `\n`.

    Behaves like a dict. Text can be stored directly, or registered as a renderer that builds
    it on first read: 6,000 probe pods at 7,500 nodes carry ~50 KB of JSON records each, far
    too much to build (or keep) eagerly. Renderers are deterministic, so a log reads the
    same every time; a small LRU keeps the last few rendered texts.
    """

    CACHED = 32

    def __init__(self) -> None:
        self._texts: dict[tuple[str, str], str] = {}
        self._renderers: dict[tuple[str, str], Callable[[], str]] = {}
        self._rendered: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._lock = threading.Lock()

    def register(self, key: tuple[str, str], renderer: Callable[[], str]) -> None:
        """Build `key`'s text with `renderer()` when it is first read."""
        self._texts.pop(key, None)
        self._renderers[key] = renderer

    def __getitem__(self, key: tuple[str, str]) -> str:
        text = self._texts.get(key)
        if text is not None:
            return text
        renderer = self._renderers[key]  # KeyError: no log for this pod
        with self._lock:
            text = self._rendered.get(key)
            if text is not None:
                self._rendered.move_to_end(key)
                return text
        text = renderer()
        with self._lock:
            self._rendered[key] = text
            while len(self._rendered) > self.CACHED:
                self._rendered.popitem(last=False)
        return text

    def __setitem__(self, key: tuple[str, str], text: str) -> None:
        self._renderers.pop(key, None)
        with self._lock:
            self._rendered.pop(key, None)
        self._texts[key] = text

    def __delitem__(self, key: tuple[str, str]) -> None:
        found = self._texts.pop(key, None) is not None
        found = self._renderers.pop(key, None) is not None or found
        with self._lock:
            self._rendered.pop(key, None)
        if not found:
            raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key in self._texts or key in self._renderers

    def __iter__(self) -> Iterator[tuple[str, str]]:
        yield from self._texts
        yield from (k for k in self._renderers if k not in self._texts)

    def __len__(self) -> int:
        return len(self._texts) + sum(1 for k in self._renderers if k not in self._texts)

    def __repr__(self) -> str:
        return f"PodLogs({len(self)} pods)"


@dataclass(frozen=True)
class ProbeFault:
    """One deliberately bad line planted in a probe pod's log (see simulator.world.gpubench)."""

    kind: str  # "truncated_json" | "above_peak" | "foreign_gpu" | "negative_time" | "duplicate"
    namespace: str
    pod: str
    line: int  # 1-based line number in the log text (for "duplicate": the repeated copy)
    record_id: str  # the record the line carries (the truncated line: before the cut)


@dataclass
class World:
    """A seeded, deterministic GPU cluster: same (nodes, seed, knobs) -> identical objects."""

    seed: int
    now: datetime
    namespaces: list[dict] = field(default_factory=list)
    nodes: list[dict] = field(default_factory=list)
    pods: list[dict] = field(default_factory=list)
    jobs: list[dict] = field(default_factory=list)
    priority_classes: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    resource_claims: list[dict] = field(default_factory=list)
    device_classes: list[dict] = field(default_factory=list)
    resource_slices: list[dict] = field(default_factory=list)
    resource_claim_templates: list[dict] = field(default_factory=list)
    compute_domains: list[dict] = field(default_factory=list)
    resource_flavors: list[dict] = field(default_factory=list)
    cluster_queues: list[dict] = field(default_factory=list)
    local_queues: list[dict] = field(default_factory=list)
    workloads: list[dict] = field(default_factory=list)
    gpus: list[Gpu] = field(default_factory=list)
    training_runs: list[TrainingRun] = field(default_factory=list)
    node_pools: dict[str, str] = field(default_factory=dict)  # node name -> pool name
    # the generator's own bookkeeping: node -> GPU resource -> amount held by counted pods
    gpu_allocated: dict[str, dict[str, int]] = field(default_factory=dict)
    resource_version: int = 0  # highest metadata.resourceVersion in the world
    # build_world(features=...): which were turned on; the ground truth they add (read it
    # through simulator.world.truth); node -> (sharing strategy, shares per GPU) for nodes
    # whose GPUs the device plugin or HAMi shares
    features: frozenset[str] = frozenset()
    feature_holdings: list[GpuHolding] = field(default_factory=list)
    queued_workloads: list[QueuedWorkload] = field(default_factory=list)
    queue_quotas: list[QueueQuota] = field(default_factory=list)
    gpu_sharing: dict[str, tuple[str, int]] = field(default_factory=dict)
    # container logs, (namespace, pod) -> text; probe pods' logs are rendered on first read
    pod_logs: PodLogs = field(default_factory=PodLogs, repr=False, compare=False)
    # the GPU benchmark probe Job (simulator.world.gpubench): its name, node -> pod name,
    # and the bad lines planted in one pod's log, by kind
    probe_job: str | None = None
    probe_pods: dict[str, str] = field(default_factory=dict)
    probe_faults: dict[str, ProbeFault] = field(default_factory=dict)
    # what simulator.world.activity computed from this world, kept so it is computed once
    activity_cache: Any = field(default=None, repr=False, compare=False)
    # its past (simulator.world.history.WorldHistory) once one is built: the telemetry of the
    # past then agrees with the past's pods; None: the world has only its present
    history: Any = field(default=None, repr=False, compare=False)

    def objects(self) -> dict[str, list[dict]]:
        """Objects by resource plural, the way the API server serves them."""
        return {
            "namespaces": self.namespaces,
            "nodes": self.nodes,
            "pods": self.pods,
            "events": self.events,
            "jobs": self.jobs,
            "priorityclasses": self.priority_classes,
            "resourceclaims": self.resource_claims,
            "deviceclasses": self.device_classes,
            "resourceslices": self.resource_slices,
            "resourceclaimtemplates": self.resource_claim_templates,
            "computedomains": self.compute_domains,
            "resourceflavors": self.resource_flavors,
            "clusterqueues": self.cluster_queues,
            "localqueues": self.local_queues,
            "workloads": self.workloads,
        }

    def counts(self) -> dict[str, int]:
        counts = {name: len(items) for name, items in self.objects().items()}
        counts["gpus"] = len(self.gpus)
        return counts

    def gpus_on(self, node_name: str) -> list[Gpu]:
        return [gpu for gpu in self.gpus if gpu.node == node_name]


def timestamp(moment: datetime | float) -> str:
    """RFC 3339 with second precision and a `Z`, as metav1.Time serialises.

    Accepts an aware datetime or epoch seconds; formatting by hand with a per-day cache,
    because a 75,000-pod world formats over half a million timestamps.
    """
    epoch = int(moment if isinstance(moment, int | float) else moment.timestamp())
    day, second = divmod(epoch, 86400)
    prefix = _DAYS.get(day)
    if prefix is None:
        prefix = _DAYS[day] = time.strftime("%Y-%m-%dT", time.gmtime(day * 86400))
    hour, rest = divmod(second, 3600)
    minute, second = divmod(rest, 60)
    return f"{prefix}{hour:02d}:{minute:02d}:{second:02d}Z"


_DAYS: dict[int, str] = {}


def log_line_times(started: float, finished: float, count: int) -> list[int]:
    """Epoch nanoseconds of a container log's `count` lines, spread evenly over its run.

    The world keeps log text without times; the API server prints these for
    `timestamps=true` and filters on them for `sinceSeconds`/`sinceTime`, and generators
    that print times inside lines (the probe records' `ts`) use the same instants.
    """
    start = int(started * 1_000_000_000)
    span = max(0, int(finished * 1_000_000_000) - start)
    return [start + span * (i + 1) // (count + 1) for i in range(count)]


def micro_timestamp(moment: datetime) -> str:
    """metav1.MicroTime, used by Event.eventTime."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Ids:
    """Deterministic identifiers drawn from one seeded RNG."""

    ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's rand.String alphabet

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.names: set[str] = set()

    def uid(self) -> str:
        """A version-4 UUID string (formatted by hand: uuid.UUID is slow at 100k objects)."""
        bits = self.rng.getrandbits(128)
        bits = (bits & ~(0xF000 << 64)) | (0x4000 << 64)  # version 4
        bits = (bits & ~(0xC000 << 48)) | (0x8000 << 48)  # RFC 4122 variant
        h = f"{bits:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def randint(self, low: int, high: int) -> int:
        """Like random.randint (inclusive), cheaper."""
        return low + int(self.rng.random() * (high - low + 1))

    def gpu_uuid(self, prefix: str = "GPU") -> str:
        return f"{prefix}-{self.uid()}"

    def suffix(self, length: int = 5) -> str:
        bits = self.rng.getrandbits(5 * length)
        alphabet = self.ALPHABET
        return "".join(alphabet[((bits >> (5 * i)) & 31) % 27] for i in range(length))

    def unique(self, prefix: str, length: int = 5) -> str:
        """`prefix` + a random suffix never handed out before (as generateName guarantees)."""
        name = prefix + self.suffix(length)
        while name in self.names:
            name = prefix + self.suffix(length)
        self.names.add(name)
        return name

    def hex(self, length: int) -> str:
        return f"{self.rng.getrandbits(length * 4):0{length}x}"

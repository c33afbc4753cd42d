"""The GPU benchmark probe Job that ran ~2 h before `world.now`, and its pods' logs.

One completed indexed Job `annex-gpubench-<YYYYmmddHHMM>` in namespace `annex-probes`,
with one Succeeded pod per Ready, schedulable, full-GPU node (MIG-partitioned and cordoned
nodes are not probed). The objects follow what `annex probe manifest`
(probes/gpubench/manifest.py) writes: restricted Pod Security namespace, service account
without a token, non-root read-only container, emptyDir caches, the GPU node selector, a
required pod anti-affinity on the hostname, the `nvidia.com/gpu` toleration,
`backoffLimitPerIndex: 0`, an active deadline and a TTL. Two things differ, because one
Job spans pools of 8- and 4-GPU nodes and nodes with GPUs the device plugin dropped: each
pod requests its node's advertised GPUs and carries a node affinity pinning it to its node
(a real cluster would get that from one Job per pool or per node).

Priority: class `annex-probe`, value 0, `PreemptLowerPriority`. Preemption needs a strictly
higher priority, so a probe can preempt balloons (`placeholder`, -1000) but no workload
(every workload class is above 0, and a class-less pod is 0); and a value not below 0 keeps
annex's balloon rule (`kubernetes.balloons.priority_below`, default 0) from counting a running
probe as a balloon. (-10, the Cluster Autoscaler's expendable cutoff, would be below that
rule.) The manifest uses the same value with `preemptionPolicy: Never`. Succeeded pods hold
no GPUs, so the inventory ignores them.

Each pod's `gpubench` log (`world.pod_logs[("annex-probes", pod)]`, rendered on first
read) holds a few plain text lines and one JSON line per healthy GPU and benchmark in the
record format of reference §5.1 (schema_version 1) with `"simulated": true`: gemm bf16
8192³, gemm fp8 8192³ (compute capability ≥ 9.0 only), copy and triad fp32 N=2^28, softmax
bf16 16384×16384, layernorm bf16 16384×8192. Throughput is the GPU's dense peak × a
per-benchmark efficiency × a degradation factor (`activity.degraded_gpus`: slow 0.62,
hot 0.85, xid 1.0) × seeded noise of ±1.5 %; ms_p50 follows from it and p20/p80 sit
0.2-0.5 % either side. GB200 has no published dense peak in the reference: its records
carry null peaks (timings use NVIDIA's datasheet figures internally). Each line's time
(and a record's `ts`) is spread evenly over the container's run (`log_line_times`), which
is also what the API server prints for `timestamps=true`.

Planted faults, all in ONE pod's log (`world.probe_faults`, by kind; each a `ProbeFault`
with the 1-based line number), after that pod's regular records:
  truncated_json  a record line cut in the middle (no closing brace)
  above_peak      a gemm bf16 record claiming 1.3x the dense peak
  foreign_gpu     a record whose gpu_uuid belongs to a GPU on another probed node
  negative_time   a record with negative ms_p20/ms_p50/ms_p80 (still in order)
  duplicate       the pod's first record printed again, byte for byte
"""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import orjson

from simulator.world.activity import DRIVER_VERSION, dcgm_model_name, degraded_gpus
from simulator.world.catalog import PRIORITY_CLASSES, SIMULATED_ANNOTATION
from simulator.world.model import Gpu, Ids, ProbeFault, World, log_line_times, timestamp
from simulator.world.nodes import NodeSlot
from simulator.world.pods import GPU_TOLERATIONS, container
from simulator.world.workloads import GPU, _pin_to

NAMESPACE = "annex-probes"
APP = "annex-gpubench"
CONTAINER = "gpubench"
PRIORITY_CLASS = "annex-probe"
PREEMPTION_POLICY = "PreemptLowerPriority"
SERVICE_ACCOUNT = "annex-gpubench"
IMAGE = "ghcr.io/annex-sim/gpubench:2026.10.2"
JOB_AGE = timedelta(hours=2, minutes=10)  # the Job was created this long before world.now
ACTIVE_DEADLINE_SECONDS = 3600
TTL_SECONDS_AFTER_FINISHED = 86400
TRITON_VERSION = "3.1.0"
TORCH_VERSION = "2.5.1+cu124"
FAULT_KINDS = ("truncated_json", "above_peak", "foreign_gpu", "negative_time", "duplicate")
DEGRADED_FACTOR = {"slow": 0.62, "hot": 0.85, "xid": 1.0}

_H100_SOURCE = "https://glennklockwood.com/garden/processors/h100"
_A100_SOURCE = "https://glennklockwood.com/garden/processors/A100"


@dataclass(frozen=True)
class _Sku:
    """A GPU's published dense peaks (None: no reference) and the rates the simulation runs at."""

    gpu_sku: str | None
    family: str  # efficiency column
    peak_tflops: dict[str, float]  # published, by dtype (reference §2.2)
    peak_gbps: float | None
    peak_source: str | None
    true_tflops: dict[str, float]  # what the simulated silicon does at 100 %
    true_gbps: float
    compute: tuple[int, int]


_SKUS = {
    "NVIDIA-H100-80GB-HBM3": _Sku(
        "H100-SXM5-80GB",
        "hopper",
        {"bf16": 989.4, "fp8": 1978.9, "fp32": 66.9},
        3350.0,
        _H100_SOURCE,
        {"bf16": 989.4, "fp8": 1978.9, "fp32": 66.9},
        3350.0,
        (9, 0),
    ),
    "NVIDIA-A100-SXM4-80GB": _Sku(
        "A100-SXM4-80GB",
        "ampere",
        {"bf16": 312.0, "fp32": 19.5},
        2039.0,
        _A100_SOURCE,
        {"bf16": 312.0, "fp32": 19.5},
        2039.0,
        (8, 0),
    ),
    "NVIDIA-A100-SXM4-40GB": _Sku(
        "A100-SXM4-40GB",
        "ampere",
        {"bf16": 312.0, "fp32": 19.5},
        1555.0,
        _A100_SOURCE,
        {"bf16": 312.0, "fp32": 19.5},
        1555.0,
        (8, 0),
    ),
    # no dense figure in the reference: records carry null peaks; timings use NVIDIA's GB200
    # datasheet (2.5 PFLOP/s dense bf16, 5 dense fp8, 8 TB/s HBM3e per GPU)
    "NVIDIA-GB200": _Sku(
        None, "blackwell", {}, None, None, {"bf16": 2500.0, "fp8": 5000.0}, 8000.0, (10, 0)
    ),
}


@dataclass(frozen=True)
class _Benchmark:
    name: str
    kernel: str
    dtype: str
    shape: dict[str, int]
    flops: float
    bytes: float
    memory_bound: bool
    efficiency: dict[str, float]  # by GPU family
    config: dict[str, int]
    min_compute: tuple[int, int] = (0, 0)


def _benchmarks() -> tuple[_Benchmark, ...]:
    """Work counted as probes/gpubench/work.py counts it (the simulator must not import it)."""
    g = 8192
    n = 1 << 28
    sm, sn = 16384, 16384
    lm, ln = 16384, 8192
    return (
        _Benchmark(
            "gemm",
            f"matmul_kernel [M={g}, N={g}, K={g}]",
            "bf16",
            {"M": g, "N": g, "K": g},
            2.0 * g * g * g,
            2.0 * (g * g + g * g) + 2.0 * g * g,
            False,
            {"hopper": 0.78, "ampere": 0.85, "blackwell": 0.72},
            {"BM": 128, "BN": 256, "BK": 64, "num_warps": 8, "num_stages": 3},
        ),
        _Benchmark(
            "gemm",
            f"matmul_kernel [M={g}, N={g}, K={g}]",
            "fp8",
            {"M": g, "N": g, "K": g},
            2.0 * g * g * g,
            1.0 * (g * g + g * g) + 2.0 * g * g,
            False,
            {"hopper": 0.65, "ampere": 0.65, "blackwell": 0.62},
            {"BM": 128, "BN": 256, "BK": 128, "num_warps": 8, "num_stages": 3},
            (9, 0),
        ),
        _Benchmark(
            "copy",
            f"copy_kernel [N={n}]",
            "fp32",
            {"N": n},
            0.0,
            2.0 * n * 4,
            True,
            {"hopper": 0.91, "ampere": 0.92, "blackwell": 0.9},
            {"BLOCK": 4096, "num_warps": 8},
        ),
        _Benchmark(
            "triad",
            f"triad_kernel [N={n}]",
            "fp32",
            {"N": n},
            2.0 * n,
            3.0 * n * 4,
            True,
            {"hopper": 0.9, "ampere": 0.91, "blackwell": 0.89},
            {"BLOCK": 4096, "num_warps": 8},
        ),
        _Benchmark(
            "softmax",
            f"softmax_kernel [M={sm}, N={sn}]",
            "bf16",
            {"M": sm, "N": sn},
            5.0 * sm * sn,
            2.0 * sm * sn * 2,
            True,
            {"hopper": 0.86, "ampere": 0.88, "blackwell": 0.85},
            {"BLOCK_SIZE": 16384, "num_warps": 16, "num_stages": 2},
        ),
        _Benchmark(
            "layernorm",
            f"layernorm_kernel [M={lm}, N={ln}]",
            "bf16",
            {"M": lm, "N": ln},
            8.0 * lm * ln,
            2.0 * lm * ln * 2 + 2.0 * ln * 2,
            True,
            {"hopper": 0.85, "ampere": 0.87, "blackwell": 0.84},
            {"BLOCK_SIZE": 8192, "num_warps": 8},
        ),
    )


BENCHMARKS = _benchmarks()


@dataclass(frozen=True)
class _ProbePod:
    """What one probe pod's log is rendered from."""

    seed: int
    job: str
    pod_object: dict
    index: int
    node: str
    gpus: tuple[Gpu, ...]  # the node's healthy GPUs, the ones the pod was given
    foreign: Gpu | None  # a GPU on another probed node (for the foreign_gpu fault)
    faulty: bool

    @property
    def pod(self) -> str:
        return self.pod_object["metadata"]["name"]

    def run(self) -> tuple[float, float]:
        """The container's startedAt and finishedAt, epoch seconds."""
        state = _terminated(self.pod_object)
        return (
            datetime.fromisoformat(state["startedAt"]).timestamp(),
            datetime.fromisoformat(state["finishedAt"]).timestamp(),
        )


def probed(slots: list[NodeSlot]) -> list[NodeSlot]:
    """Nodes the probe Job runs on: Ready, schedulable, full GPUs (no MIG), some healthy."""
    return [
        s
        for s in slots
        if s.is_gpu
        and s.pool.mig_strategy == "none"
        and s.ready == "True"
        and not s.cordoned
        and s.allocatable.get(GPU, 0) > 0
    ]


def add_probe_job(
    world: World,
    slots: list[NodeSlot],
    ids: Ids,
    next_rv: Callable[[], int],
    namespace_object: Callable[[str, int], dict],
    priority_class_object: Callable[[str, int, str, int], dict],
) -> None:
    """Add the probe namespace, priority class, Job, pods, events and logs to `world`."""
    nodes = probed(slots)
    value, text = PRIORITY_CLASSES[PRIORITY_CLASS]
    priority_class = priority_class_object(PRIORITY_CLASS, value, text, next_rv())
    priority_class["preemptionPolicy"] = PREEMPTION_POLICY
    priority_class["metadata"]["labels"] = {**_APP_LABELS, **_PART_OF}
    world.priority_classes.append(priority_class)
    namespace = namespace_object(NAMESPACE, next_rv())
    namespace["metadata"]["labels"].update(_NAMESPACE_LABELS)
    world.namespaces.append(namespace)
    world.namespaces.sort(key=lambda n: n["metadata"]["name"])
    if not nodes:
        return
    rng = random.Random(f"annex-gpubench:{world.seed}")
    created = (world.now - JOB_AGE).replace(second=0, microsecond=0)
    job = f"{APP}-{created:%Y%m%d%H%M}"
    uid = ids.uid()
    labels = {
        **_APP_LABELS,
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": job,
        "controller-uid": uid,
        "job-name": job,
    }
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": job,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    anti_affinity = _anti_affinity(job)
    pod_created = int(created.timestamp()) + 1
    pods = []
    stamps: dict[int, str] = {}  # every probe pod's times fall within a few minutes
    last = pod_created
    for index, slot in enumerate(nodes):
        finished = pod_created + int(rng.uniform(420, 900))  # the suite takes 7-15 minutes
        last = max(last, finished)
        pod = _pod(
            ids, slot, job, index, labels, owner, anti_affinity, pod_created, finished, stamps
        )
        pod["spec"]["priority"] = value
        pod["metadata"]["resourceVersion"] = str(next_rv())
        pods.append(pod)
    finished_last = datetime.fromtimestamp(last, created.tzinfo)
    world.pods.extend(pods)
    world.probe_job = job
    world.probe_pods = {
        slot.name: pod["metadata"]["name"] for slot, pod in zip(nodes, pods, strict=True)
    }
    world.jobs.append(_job(job, uid, labels, created, finished_last, len(pods), next_rv()))
    world.events.extend(
        _event(ids, job, uid, reason, message, when, next_rv())
        for reason, message, when in (
            ("SuccessfulCreate", "Created pods for job", created),
            ("Completed", "Job completed", finished_last),
        )
    )

    healthy = {s.name: tuple(g for g in s.gpus if g.healthy) for s in nodes}
    faulty, foreign = _faulty_pod(nodes, healthy, rng)
    for index, (pod, slot) in enumerate(zip(pods, nodes, strict=True)):
        spec = _ProbePod(
            world.seed,
            job,
            pod,
            index,
            slot.name,
            healthy[slot.name],
            foreign if index == faulty else None,
            index == faulty,
        )
        key = (NAMESPACE, pod["metadata"]["name"])
        if spec.faulty:
            text, faults = render_log(world, spec)
            world.pod_logs[key] = text
            world.probe_faults = {f.kind: f for f in faults}
        else:
            world.pod_logs.register(key, _renderer(world, spec))


def _renderer(world: World, spec: _ProbePod) -> Callable[[], str]:
    return lambda: render_log(world, spec)[0]


def _faulty_pod(
    nodes: list[NodeSlot], healthy: dict[str, tuple[Gpu, ...]], rng: random.Random
) -> tuple[int, Gpu | None]:
    """Which pod's log gets the planted faults, and the other node's GPU it names."""
    known = [  # the faults need a published peak (above_peak) and GPUs to measure
        i
        for i, s in enumerate(nodes)
        if s.pool.gpu_model and _SKUS[s.pool.gpu_model.product].gpu_sku and healthy[s.name]
    ]
    if not known:
        return -1, None
    faulty = rng.choice(known)
    slot = nodes[faulty]
    others = [s for s in nodes if s is not slot and healthy[s.name]]
    same = [s for s in others if s.pool.gpu_model == slot.pool.gpu_model] or others
    return faulty, (rng.choice(healthy[rng.choice(same).name]) if same else None)


# ---- the log -----------------------------------------------------------------------------


def render_log(world: World, spec: _ProbePod) -> tuple[str, list[ProbeFault]]:
    """The pod's log text and, for the faulty pod, where its planted faults are."""
    rng = random.Random(f"annex-gpubench:{spec.seed}:{spec.pod}")
    ids = Ids(rng)
    degraded = degraded_gpus(world)
    first = spec.gpus[0]
    sku = _SKUS[first.product]
    model = dcgm_model_name(first)
    benchmarks = [b for b in BENCHMARKS if sku.compute >= b.min_compute]
    lines: list[str | dict] = [
        f"[gpubench] annex gpubench on node {spec.node} (job {spec.job}, index {spec.index})",
        f"[gpubench] torch {TORCH_VERSION}, triton {TRITON_VERSION}, driver {DRIVER_VERSION}",
        f"[gpubench] {len(spec.gpus)} visible GPU(s): {model}, compute capability "
        f"{sku.compute[0]}.{sku.compute[1]}",
        "[gpubench] timer triton.testing.do_bench warmup=25ms rep=100ms, L2 flushed, "
        "quantiles 0.2/0.5/0.8",
    ]
    records: list[dict] = []
    for bench in benchmarks:
        lines.append(f"[gpubench] compiling {bench.kernel.split(' ')[0]} ({bench.dtype}) ...")
        error = rng.uniform(0.5, 4.0) * (1e-2 if bench.dtype != "fp32" else 1e-7)
        lines.append(
            f"[gpubench] {bench.name} {bench.dtype}: reference check vs torch passed "
            f"(max abs err {error:.2e})"
        )
        for gpu in spec.gpus:
            factor = DEGRADED_FACTOR.get(degraded.get(gpu.uuid, ""), 1.0)
            record = _record(spec, gpu, sku, model, bench, factor, ids, rng)
            records.append(record)
            lines.append(record)
    faults: list[tuple[str, str | dict, str | None]] = []
    if spec.faulty:
        faults = _faults(spec, sku, model, records, ids, rng)
        lines.extend(line for _kind, line, _id in faults)
    lines.append(
        f"[gpubench] done: {len(records)} records from {len(spec.gpus)} GPU(s), 0 failures"
    )

    times = log_line_times(*spec.run(), len(lines))
    text_lines = []
    serialised: dict[int, str] = {}
    for line, ns in zip(lines, times, strict=True):
        if isinstance(line, dict):
            if id(line) not in serialised:  # the duplicate repeats the original exactly
                line["ts"] = timestamp(ns // 1_000_000_000)
                serialised[id(line)] = orjson.dumps(line).decode()
            text_lines.append(serialised[id(line)])
        else:
            text_lines.append(line)
    planted = []
    if faults:
        start = len(lines) - 1 - len(faults)  # 0-based index of the first bad line
        for offset, (kind, _line, record_id) in enumerate(faults):
            number = start + offset
            if kind == "truncated_json":
                text_lines[number] = text_lines[number][: len(text_lines[number]) * 3 // 5]
            planted.append(ProbeFault(kind, NAMESPACE, spec.pod, number + 1, record_id))
    return "\n".join(text_lines) + "\n", planted


def _record(
    spec: _ProbePod,
    gpu: Gpu,
    sku: _Sku,
    model: str,
    bench: _Benchmark,
    factor: float,
    ids: Ids,
    rng: random.Random,
    *,
    scale: float = 1.0,
) -> dict:
    """One measurement; `scale` multiplies the throughput (the above-peak fault uses 1.3)."""
    efficiency = bench.efficiency[sku.family] * factor * rng.uniform(0.985, 1.015) * scale
    if bench.memory_bound:
        seconds = bench.bytes / (sku.true_gbps * efficiency * 1e9)
    else:
        seconds = bench.flops / (sku.true_tflops[bench.dtype] * efficiency * 1e12)
    if scale != 1.0:  # a claim measured against the published peak, not the silicon
        seconds = bench.flops / (sku.peak_tflops[bench.dtype] * scale * 1e12)
    p50 = round(seconds * 1e3, 5)
    p20 = round(p50 * (1 - rng.uniform(0.002, 0.005)), 5)
    p80 = round(p50 * (1 + rng.uniform(0.002, 0.005)), 5)
    peak_tflops = sku.peak_tflops.get(bench.dtype)
    achieved_tflops = bench.flops / (p50 * 1e-3) / 1e12
    return {
        "schema_version": 1,
        "record_id": ids.uid(),
        "ts": None,  # the line's time, filled in when the log is laid out
        "cluster": "simulated",
        "namespace": NAMESPACE,
        "job": spec.job,
        "pod": spec.pod,
        "node": spec.node,
        "gpu_index": gpu.index,
        "gpu_uuid": gpu.uuid,
        "gpu_model": model,
        "gpu_sku": sku.gpu_sku,
        "driver_version": DRIVER_VERSION,
        "backend": "cuda",
        "triton_version": TRITON_VERSION,
        "torch_version": TORCH_VERSION,
        "benchmark": bench.name,
        "kernel": bench.kernel,
        "kernel_config": bench.config,
        "shape": bench.shape,
        "dtype": bench.dtype,
        "timer": "triton.testing.do_bench",
        "warmup_ms": 25,
        "rep_ms": 100,
        "l2_flush": True,
        "n_samples": max(1, int(100 / p50)),
        "ms_p20": p20,
        "ms_p50": p50,
        "ms_p80": p80,
        "flops": bench.flops,
        "bytes": bench.bytes,
        "achieved_tflops": _significant(achieved_tflops),
        "achieved_gbps": _significant(bench.bytes / (p50 * 1e-3) / 1e9),
        "peak_tflops": peak_tflops,
        "peak_gbps": sku.peak_gbps,
        "peak_source": sku.peak_source,
        "frac_peak_flops": _significant(achieved_tflops / peak_tflops) if peak_tflops else None,
        "correct": True,
        "simulated": True,
    }


def _significant(value: float) -> float:
    """Six significant digits, as a harness printing a measurement would."""
    return float(f"{value:.6g}")


def _faults(
    spec: _ProbePod,
    sku: _Sku,
    model: str,
    records: list[dict],
    ids: Ids,
    rng: random.Random,
) -> list[tuple[str, str | dict, str | None]]:
    """(kind, line, record_id) of each planted bad line, in FAULT_KINDS order."""
    gpu = spec.gpus[0]
    gemm, copy = BENCHMARKS[0], BENCHMARKS[2]
    truncated = _record(spec, gpu, sku, model, copy, 1.0, ids, rng)
    above = _record(spec, gpu, sku, model, gemm, 1.0, ids, rng, scale=1.3)
    foreign_gpu = spec.foreign or gpu
    foreign = _record(spec, gpu, sku, model, gemm, 1.0, ids, rng)
    foreign["gpu_uuid"] = foreign_gpu.uuid
    negative = _record(spec, gpu, sku, model, copy, 1.0, ids, rng)
    for key in ("ms_p20", "ms_p50", "ms_p80"):
        negative[key] = -negative[key]
    negative["ms_p20"], negative["ms_p80"] = negative["ms_p80"], negative["ms_p20"]
    negative["achieved_tflops"] = -negative["achieved_tflops"]
    negative["achieved_gbps"] = -negative["achieved_gbps"]
    original = records[0]
    return [
        ("truncated_json", truncated, truncated["record_id"]),
        ("above_peak", above, above["record_id"]),
        ("foreign_gpu", foreign, foreign["record_id"]),
        ("negative_time", negative, negative["record_id"]),
        ("duplicate", original, original["record_id"]),
    ]


# ---- API objects (as `annex probe manifest` writes them; see the module docstring) -----

_APP_LABELS = {"app.kubernetes.io/name": APP, "app.kubernetes.io/component": "probe"}
_PART_OF = {"app.kubernetes.io/part-of": "annex"}
_NAMESPACE_LABELS = {
    **_PART_OF,
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
}
_CACHE_MOUNT = "/var/cache/triton"
_VOLUMES = [
    {"name": "triton-cache", "emptyDir": {"sizeLimit": "2Gi"}},
    {"name": "tmp", "emptyDir": {"sizeLimit": "4Gi"}},
]
_POD_SECURITY = {
    "runAsUser": 10001,
    "runAsGroup": 10001,
    "runAsNonRoot": True,
    "fsGroup": 10001,
    "seccompProfile": {"type": "RuntimeDefault"},
}
_NODE_SELECTOR = {"nvidia.com/gpu.present": "true"}
_IMAGE_ID = f"{IMAGE.split(':')[0]}@sha256:{hashlib.sha256(IMAGE.encode()).hexdigest()}"


@functools.cache
def _container(gpus: int) -> dict:
    """Shared between the pods asking for as many GPUs (see simulator.world.pods)."""

    def field_ref(name: str, path: str) -> dict:
        return {"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}}

    spec = container(
        CONTAINER,
        IMAGE,
        command=["python", "-m", "probes.gpubench", "--size", "full"],
        requests={"cpu": "4", "memory": "16Gi", GPU: str(gpus)},
        limits={"memory": "64Gi", GPU: str(gpus)},
        env=[
            field_ref("NODE_NAME", "spec.nodeName"),
            field_ref("POD_NAME", "metadata.name"),
            field_ref("POD_NAMESPACE", "metadata.namespace"),
            field_ref("JOB_NAME", "metadata.labels['batch.kubernetes.io/job-name']"),
            {"name": "TRITON_CACHE_DIR", "value": f"{_CACHE_MOUNT}/cache"},
            {"name": "TRITON_HOME", "value": _CACHE_MOUNT},
            {"name": "HOME", "value": "/tmp"},
            {"name": "PYTHONUNBUFFERED", "value": "1"},
            {"name": "ANNEX_CLUSTER", "value": "simulated"},
            # added by the Job controller to every container of an Indexed Job's pods
            field_ref(
                "JOB_COMPLETION_INDEX",
                "metadata.labels['batch.kubernetes.io/job-completion-index']",
            ),
        ],
        mounts=[
            {"name": "triton-cache", "mountPath": _CACHE_MOUNT},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    )
    spec["securityContext"] = {
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
    }
    return spec


def _anti_affinity(job: str) -> dict:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {
                        "matchLabels": {
                            "app.kubernetes.io/name": APP,
                            "batch.kubernetes.io/job-name": job,
                        }
                    },
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }


def _pod(
    ids: Ids,
    node: NodeSlot,
    job: str,
    index: int,
    labels: dict[str, str],
    owner: dict,
    anti_affinity: dict,
    created: int,
    finished: int,
    stamps: dict[int, str],
) -> dict:
    """A probe pod: the Job template, bound to its node; no service account token mounted.

    Rendered here rather than by PodFactory (same shape as its Succeeded pods): one per GPU
    node, so the few microseconds saved per pod keep build_world(7500) close to its old time.
    """
    name = ids.unique(f"{job}-{index}-")
    metadata = {
        "name": name,
        "generateName": f"{job}-{index}-",
        "namespace": NAMESPACE,
        "uid": ids.uid(),
        "resourceVersion": "",
        "creationTimestamp": _stamp(stamps, created),
        "labels": {**labels, "batch.kubernetes.io/job-completion-index": str(index)},
        "annotations": {
            "batch.kubernetes.io/job-completion-index": str(index),
            SIMULATED_ANNOTATION: "true",
        },
        "ownerReferences": [owner],
    }
    container_spec = _container(node.allocatable[GPU])
    spec = {
        "volumes": _VOLUMES,
        "containers": [container_spec],
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "nodeSelector": _NODE_SELECTOR,
        "serviceAccountName": SERVICE_ACCOUNT,
        "serviceAccount": SERVICE_ACCOUNT,
        "automountServiceAccountToken": False,
        "nodeName": node.name,
        "securityContext": _POD_SECURITY,
        "hostname": f"{job}-{index}",  # set by the Job controller for Indexed Jobs
        "affinity": {**_pin_to(node.name), **anti_affinity},
        "schedulerName": "default-scheduler",
        "tolerations": GPU_TOLERATIONS,
        "priorityClassName": PRIORITY_CLASS,
        "priority": 0,  # the class's value, set by the caller
        "enableServiceLinks": False,
        "preemptionPolicy": PREEMPTION_POLICY,
    }
    scheduled = created + ids.randint(1, 20)
    started = scheduled + ids.randint(5, 240)  # image pull
    started_at = _stamp(stamps, started)
    scheduled_at = _stamp(stamps, scheduled)
    done = _stamp(stamps, started + ids.randint(2, 30))
    container_id = f"containerd://{ids.hex(64)}"
    pod_ip = node.next_pod_ip()
    status = {
        "phase": "Succeeded",
        "conditions": [
            _condition("PodReadyToStartContainers", "False", started_at),
            _condition("Initialized", "True", started_at, "PodCompleted"),
            _condition("Ready", "False", done, "PodCompleted"),
            _condition("ContainersReady", "False", done, "PodCompleted"),
            _condition("PodScheduled", "True", scheduled_at),
        ],
        "hostIP": node.internal_ip,
        "hostIPs": [{"ip": node.internal_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": scheduled_at,
        "containerStatuses": [
            {
                "name": CONTAINER,
                "state": {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": started_at,
                        "finishedAt": _stamp(stamps, finished),
                        "containerID": container_id,
                    }
                },
                "lastState": {},
                "ready": False,
                "restartCount": 0,
                "image": IMAGE,
                "imageID": _IMAGE_ID,
                "containerID": container_id,
                "started": False,
            }
        ],
        "qosClass": "Burstable",
    }
    return {"metadata": metadata, "spec": spec, "status": status}


def _stamp(stamps: dict[int, str], moment: int) -> str:
    text = stamps.get(moment)
    if text is None:
        text = stamps[moment] = timestamp(moment)
    return text


def _condition(kind: str, status: str, since: str, reason: str | None = None) -> dict:
    condition = {"type": kind, "status": status, "lastTransitionTime": since}
    if reason:
        condition["reason"] = reason
    return condition


def _terminated(pod: dict) -> dict:
    return pod["status"]["containerStatuses"][0]["state"]["terminated"]


def _job(
    name: str,
    uid: str,
    labels: dict[str, str],
    created: datetime,
    finished: datetime,
    size: int,
    rv: int,
) -> dict:
    done = timestamp(finished + timedelta(seconds=1))
    message = "Reached expected number of succeeded pods"
    return {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": uid,
            "resourceVersion": str(rv),
            "generation": 1,
            "creationTimestamp": timestamp(created),
            "labels": dict(_APP_LABELS),
            "annotations": {SIMULATED_ANNOTATION: "true"},
        },
        "spec": {
            "parallelism": size,
            "completions": size,
            "activeDeadlineSeconds": ACTIVE_DEADLINE_SECONDS,
            "backoffLimit": 2147483647,  # defaulted so when backoffLimitPerIndex is set
            "backoffLimitPerIndex": 0,  # a node failing its probe fails only its index
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
            "manualSelector": False,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "volumes": _VOLUMES,
                    "containers": [_container(8)],
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "nodeSelector": _NODE_SELECTOR,
                    "serviceAccountName": SERVICE_ACCOUNT,
                    "serviceAccount": SERVICE_ACCOUNT,
                    "automountServiceAccountToken": False,
                    "securityContext": _POD_SECURITY,
                    "affinity": _anti_affinity(name),
                    "schedulerName": "default-scheduler",
                    "tolerations": GPU_TOLERATIONS[:1],
                    "priorityClassName": PRIORITY_CLASS,
                    "enableServiceLinks": False,
                },
            },
            "completionMode": "Indexed",
            "suspend": False,
            "podReplacementPolicy": "Failed",  # required with backoffLimitPerIndex
            "ttlSecondsAfterFinished": TTL_SECONDS_AFTER_FINISHED,
        },
        "status": {
            "startTime": timestamp(created + timedelta(seconds=1)),
            "completionTime": done,
            "succeeded": size,
            "completedIndexes": "0" if size == 1 else f"0-{size - 1}",
            "failedIndexes": "",
            "conditions": [
                {
                    "type": kind,
                    "status": "True",
                    "lastProbeTime": done,
                    "lastTransitionTime": done,
                    "reason": "CompletionsReached",
                    "message": message,
                }
                for kind in ("SuccessCriteriaMet", "Complete")
            ],
            "ready": 0,
            "terminating": 0,
            "uncountedTerminatedPods": {},
        },
    }


def _event(
    ids: Ids, job: str, uid: str, reason: str, message: str, when: datetime, rv: int
) -> dict:
    moment = timestamp(when)
    return {
        "metadata": {
            "name": f"{job}.{ids.hex(16)}",
            "namespace": NAMESPACE,
            "uid": ids.uid(),
            "resourceVersion": str(rv),
            "creationTimestamp": moment,
            "annotations": {SIMULATED_ANNOTATION: "true"},
        },
        "involvedObject": {
            "kind": "Job",
            "namespace": NAMESPACE,
            "name": job,
            "uid": uid,
            "apiVersion": "batch/v1",
        },
        "reason": reason,
        "message": message,
        "source": {"component": "job-controller"},
        "firstTimestamp": moment,
        "lastTimestamp": moment,
        "count": 1,
        "type": "Normal",
        "reportingComponent": "job-controller",
        "reportingInstance": "",
    }


__all__ = [
    "APP",
    "BENCHMARKS",
    "CONTAINER",
    "DEGRADED_FACTOR",
    "FAULT_KINDS",
    "NAMESPACE",
    "PRIORITY_CLASS",
    "add_probe_job",
    "probed",
    "render_log",
]

"""Static facts the world generator draws from: GPU models, node pools, images, DaemonSets.

Kept apart from the generator so that the numbers a reader may want to check (memory sizes,
MIG profiles, instance types) sit in one place, each close to what the real hardware and
GPU-feature-discovery report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SIMULATED_ANNOTATION = "simulator.annex.dev/simulated"
POOL_LABEL = "annex.dev/pool"
# confidential-computing node labels: the GPU Operator's, and NFD's CPU TEE features
CC_CAPABLE_LABEL = "nvidia.com/cc.capable"
CC_MODE_LABEL = "nvidia.com/cc.mode"
CPU_TEE_LABELS = {
    "tdx": "feature.node.kubernetes.io/cpu-security.tdx.enabled",
    "sevsnp": "feature.node.kubernetes.io/cpu-security.sev.snp.enabled",
}


@dataclass(frozen=True)
class GpuModel:
    """One GPU product as GPU-feature-discovery labels it."""

    product: str  # nvidia.com/gpu.product
    memory_mib: int  # nvidia.com/gpu.memory (GFD reports MiB)
    family: str
    compute: tuple[int, int]
    multiprocessors: int


H100_80GB = GpuModel("NVIDIA-H100-80GB-HBM3", 81559, "hopper", (9, 0), 132)
A100_80GB = GpuModel("NVIDIA-A100-SXM4-80GB", 81920, "ampere", (8, 0), 108)
A100_40GB = GpuModel("NVIDIA-A100-SXM4-40GB", 40960, "ampere", (8, 0), 108)
GB200 = GpuModel("NVIDIA-GB200", 189471, "blackwell", (10, 0), 152)


@dataclass(frozen=True)
class MigProfile:
    """A MIG profile: `nvidia.com/mig-<name>` resource, its memory and slices."""

    name: str  # e.g. "1g.10gb"
    memory_mib: int
    gi_slices: int
    multiprocessors: int

    @property
    def resource(self) -> str:
        return f"nvidia.com/mig-{self.name}"


MIG_1G_10GB = MigProfile("1g.10gb", 9728, 1, 14)
MIG_2G_20GB = MigProfile("2g.20gb", 19968, 2, 28)
MIG_3G_40GB = MigProfile("3g.40gb", 40192, 3, 42)


@dataclass(frozen=True)
class PoolProfile:
    """A node pool: hardware, cloud, topology labels and its share of the cluster."""

    name: str
    weight: float
    cloud: str  # "gke" | "eks" | "topograph" | "generic"
    instance_type: str
    cpu: int
    memory_gib: int
    gpu_model: GpuModel | None = None
    gpus_per_node: int = 0
    mig_strategy: str = "none"  # "none" | "single" | "mixed"
    # mixed strategy: how many of the node's GPUs are split, and into which profiles each
    mig_layout: tuple[tuple[MigProfile, int], ...] = field(default_factory=tuple)
    mig_gpus: int = 0
    architecture: str = "amd64"
    region: str = "us-central1"
    zones: tuple[str, ...] = ("a", "b", "c")
    # confidential computing: the CPU TEE its VMs run in ("tdx" | "sevsnp"), with the GPUs in
    # CC mode; None for pools that cannot attest (MIG pools: H100 CC mode excludes MIG)
    cpu_tee: str | None = None


POOLS: tuple[PoolProfile, ...] = (
    PoolProfile("system", 0.03, "generic", "n2-standard-32", 32, 128),
    PoolProfile(
        "h100-gke",
        0.31,
        "gke",
        "a3-highgpu-8g",
        208,
        1872,
        H100_80GB,
        8,
        region="us-central1",
        cpu_tee="tdx",
    ),
    PoolProfile(
        "h100-eks",
        0.24,
        "eks",
        "p5.48xlarge",
        192,
        2048,
        H100_80GB,
        8,
        region="us-east-2",
        zones=("a", "b"),
        cpu_tee="sevsnp",
    ),
    PoolProfile(
        "a100-80-dgx",
        0.14,
        "topograph",
        "dgx-a100-80g",
        256,
        2048,
        A100_80GB,
        8,
        region="eu-west",
        zones=("1",),
    ),
    PoolProfile(
        "a100-40", 0.12, "generic", "a2-highgpu-8g", 96, 680, A100_40GB, 8, region="europe-west4"
    ),
    PoolProfile(
        "a100-mig-mixed",
        0.06,
        "generic",
        "a2-ultragpu-8g",
        96,
        1360,
        A100_80GB,
        8,
        mig_strategy="mixed",
        mig_gpus=4,
        mig_layout=((MIG_1G_10GB, 7), (MIG_3G_40GB, 2)),
        region="europe-west4",
    ),
    PoolProfile(
        "h100-mig-single",
        0.05,
        "gke",
        "a3-highgpu-8g",
        208,
        1872,
        H100_80GB,
        8,
        mig_strategy="single",
        mig_layout=((MIG_1G_10GB, 7),),
        region="us-central1",
    ),
    PoolProfile(
        "gb200-nvl",
        0.05,
        "topograph",
        "gb200-nvl72-tray",
        144,
        960,
        GB200,
        4,
        architecture="arm64",
        region="eu-west",
        zones=("1",),
    ),
)

DRIVER = (550, 90, "07")  # nvidia.com/cuda.driver.{major,minor,rev}
CUDA_RUNTIME = (12, 4)
KUBELET_VERSION = "v1.34.2"


def _image(repo: str, tag: str, digest_seed: int, size: int) -> dict:
    digest = f"{digest_seed:064x}"[-64:]
    return {"names": [f"{repo}@sha256:{digest}", f"{repo}:{tag}"], "sizeBytes": size}


def _images(*specs: tuple[str, str, int]) -> list[dict]:
    return [
        _image(repo, tag, 0x9E3779B97F4A7C15 * (i + 1) * (len(repo) + 7), size)
        for i, (repo, tag, size) in enumerate(specs)
    ]


BASE_IMAGES = (
    ("registry.k8s.io/kube-proxy", KUBELET_VERSION, 31_000_000),
    ("quay.io/cilium/cilium", "v1.16.4", 196_000_000),
    ("cr.fluentbit.io/fluent/fluent-bit", "3.1.9", 38_000_000),
    ("quay.io/prometheus/node-exporter", "v1.8.2", 11_500_000),
    ("registry.k8s.io/pause", "3.10", 320_000),
    ("registry.k8s.io/coredns/coredns", "v1.11.3", 18_500_000),
    ("registry.k8s.io/metrics-server/metrics-server", "v0.7.2", 19_400_000),
)
GPU_IMAGES = (
    ("nvcr.io/nvidia/driver", "550.90.07-ubuntu22.04", 1_370_000_000),
    ("nvcr.io/nvidia/k8s/container-toolkit", "v1.16.2-ubuntu20.04", 139_000_000),
    ("nvcr.io/nvidia/k8s-device-plugin", "v0.16.2", 126_000_000),
    ("nvcr.io/nvidia/k8s/dcgm-exporter", "3.3.8-3.6.0-ubuntu22.04", 389_000_000),
    ("nvcr.io/nvidia/cloud-native/k8s-mig-manager", "v0.9.0-ubuntu20.04", 151_000_000),
    ("nvcr.io/nvidia/pytorch", "24.09-py3", 9_840_000_000),
    ("nvcr.io/nvidia/tritonserver", "24.09-py3", 7_250_000_000),
    ("nvcr.io/nvidia/nemo", "24.07", 15_700_000_000),
    ("ghcr.io/annex-sim/trainer", "2026.10.3", 11_200_000_000),
    ("ghcr.io/annex-sim/evaluator", "2026.10.1", 6_100_000_000),
    ("nvcr.io/nvidia/cuda", "12.4.1-base-ubuntu22.04", 88_000_000),
    ("docker.io/vllm/vllm-openai", "v0.6.3", 8_900_000_000),
    ("registry.k8s.io/scheduling/placeholder", "3.10", 320_000),
)

CPU_NODE_IMAGES = _images(*BASE_IMAGES)
GPU_NODE_IMAGES = _images(*BASE_IMAGES, *GPU_IMAGES)


@dataclass(frozen=True)
class DaemonSetSpec:
    """A DaemonSet that puts one pod on every node it selects."""

    name: str
    namespace: str
    image: str
    gpu_only: bool = False
    mig_only: bool = False
    host_network: bool = False
    priority_class: str = "system-node-critical"
    cpu: str = "100m"
    memory: str = "128Mi"
    port: int | None = None


DAEMONSETS: tuple[DaemonSetSpec, ...] = (
    DaemonSetSpec(
        "kube-proxy",
        "kube-system",
        f"registry.k8s.io/kube-proxy:{KUBELET_VERSION}",
        host_network=True,
    ),
    DaemonSetSpec(
        "cilium",
        "kube-system",
        "quay.io/cilium/cilium:v1.16.4",
        host_network=True,
        cpu="200m",
        memory="512Mi",
        port=9962,
    ),
    DaemonSetSpec(
        "fluent-bit",
        "logging",
        "cr.fluentbit.io/fluent/fluent-bit:3.1.9",
        priority_class="system-cluster-critical",
        memory="256Mi",
        port=2020,
    ),
    DaemonSetSpec(
        "node-exporter",
        "monitoring",
        "quay.io/prometheus/node-exporter:v1.8.2",
        host_network=True,
        priority_class="system-cluster-critical",
        cpu="50m",
        memory="64Mi",
        port=9100,
    ),
    DaemonSetSpec(
        "nvidia-driver-daemonset",
        "gpu-operator",
        "nvcr.io/nvidia/driver:550.90.07-ubuntu22.04",
        gpu_only=True,
        cpu="250m",
        memory="512Mi",
    ),
    DaemonSetSpec(
        "nvidia-container-toolkit-daemonset",
        "gpu-operator",
        "nvcr.io/nvidia/k8s/container-toolkit:v1.16.2-ubuntu20.04",
        gpu_only=True,
    ),
    DaemonSetSpec(
        "nvidia-device-plugin-daemonset",
        "gpu-operator",
        "nvcr.io/nvidia/k8s-device-plugin:v0.16.2",
        gpu_only=True,
    ),
    DaemonSetSpec(
        "gpu-feature-discovery",
        "gpu-operator",
        "nvcr.io/nvidia/k8s-device-plugin:v0.16.2",
        gpu_only=True,
        cpu="50m",
        memory="64Mi",
    ),
    DaemonSetSpec(
        "nvidia-dcgm-exporter",
        "gpu-operator",
        "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.8-3.6.0-ubuntu22.04",
        gpu_only=True,
        memory="512Mi",
        port=9400,
    ),
    DaemonSetSpec(
        "nvidia-mig-manager",
        "gpu-operator",
        "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.9.0-ubuntu20.04",
        gpu_only=True,
        mig_only=True,
    ),
)

# name -> (value, description); values follow upstream's reserved ranges and the
# overprovisioning example's `placeholder` class at -1000.
PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "system-cluster-critical": (
        2000000000,
        "Used for system critical pods that must run in the cluster, but can be moved to "
        "another node if necessary.",
    ),
    "system-node-critical": (
        2000001000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    "training-high": (100000, "Production training runs; may preempt inference and batch."),
    "training-standard": (50000, "Default class for multi-node training jobs."),
    "inference": (75000, "Online inference serving."),
    "batch-low": (1000, "Evaluation sweeps and other preemptible batch work."),
    "default": (0, "Cluster default priority."),
    "annex-probe": (
        0,
        "annex GPU benchmark probes: may preempt balloons (below 0), never a workload; not "
        "below 0, so annex does not count them as balloons.",
    ),
    "placeholder": (
        -1000,
        "Balloon pods that hold capacity for incoming jobs and are preempted first.",
    ),
}

TEAM_NAMESPACES = ("team-llm", "team-vision", "team-speech", "research")
SYSTEM_NAMESPACES = (
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "gpu-operator",
    "monitoring",
    "logging",
    "inference",
    "capacity",
)

# ---- opt-in pools (build_world(features=...)): never part of the default world -------------
# Nodes whose GPUs are allocated only through DRA (NVIDIA's gpu.nvidia.com driver; the device
# plugin is not deployed, so they advertise no nvidia.com/gpu), GPUs shared by the device
# plugin (time-slicing, MPS) or by HAMi, and GPUs behind Kueue queues.
H100_DRA = PoolProfile(
    "h100-dra", 0.02, "generic", "a3-highgpu-8g", 208, 1872, H100_80GB, 8, region="us-west1"
)
A100_DRA_MIG = PoolProfile(
    "a100-dra-mig",
    0.005,
    "generic",
    "a2-ultragpu-8g",
    96,
    1360,
    A100_80GB,
    8,
    mig_strategy="mixed",
    mig_gpus=4,
    mig_layout=((MIG_1G_10GB, 7), (MIG_3G_40GB, 2)),
    region="us-west1",
)
GB200_DRA = PoolProfile(
    "gb200-dra",
    0.01,
    "topograph",
    "gb200-nvl72-tray",
    144,
    960,
    GB200,
    4,
    architecture="arm64",
    region="us-west2",
    zones=("1",),
)
H100_TIME_SLICED = PoolProfile(
    "h100-timeslice", 0.005, "generic", "a3-highgpu-8g", 208, 1872, H100_80GB, 8, region="us-west1"
)
H100_MPS = PoolProfile(
    "h100-mps", 0.005, "generic", "a3-highgpu-8g", 208, 1872, H100_80GB, 8, region="us-west1"
)
H100_HAMI = PoolProfile(
    "h100-hami", 0.002, "generic", "a3-highgpu-8g", 208, 1872, H100_80GB, 8, region="us-west1"
)
H100_KUEUE = PoolProfile(
    "h100-kueue", 0.02, "generic", "a3-highgpu-8g", 208, 1872, H100_80GB, 8, region="us-west1"
)
# feature -> (pool, minimum nodes): a pool gets max(minimum, round(weight * nodes)) nodes
FEATURE_POOLS: dict[str, tuple[tuple[PoolProfile, int], ...]] = {
    "dra": ((H100_DRA, 3), (A100_DRA_MIG, 1), (GB200_DRA, 2)),
    "sharing": ((H100_TIME_SLICED, 1), (H100_MPS, 1), (H100_HAMI, 1)),
    "kueue": ((H100_KUEUE, 4),),
}
# device plugin sharing per pool: (GFD nvidia.com/gpu.sharing-strategy, replicas per GPU)
SHARED_POOLS = {"h100-timeslice": ("time-slicing", 4), "h100-mps": ("mps", 2)}
HAMI_SPLIT_COUNT = 10  # HAMi's deviceSplitCount: nvidia.com/gpu advertised per physical GPU

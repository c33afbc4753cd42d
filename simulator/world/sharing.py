"""Shared GPUs: the device plugin's time-slicing and MPS, and HAMi's fractional requests.

- h100-timeslice: 8 GPUs, `replicas: 4` -> the node advertises 32 `nvidia.com/gpu`; GFD
  labels `nvidia.com/gpu.replicas=4`, `nvidia.com/gpu.sharing-strategy=time-slicing` and
  the product label gains `-SHARED` (renameByDefault false). Notebook and research pods ask
  for 1-2 replicas each.
- h100-mps: the same with `mps` and 2 replicas (16 advertised); inference pods, 1 replica.
- h100-hami: HAMi splits each GPU into 10 (80 advertised); pods ask `nvidia.com/gpu: 1`
  with `nvidia.com/gpucores` (percent of the GPU's cores) and `nvidia.com/gpumem` (MiB);
  two pods share GPU 0 (25 % and 50 %).
Ground truth (which replica sits on which GPU is the device plugin's choice; here replicas
fill GPUs in index order, a pod's replicas consecutive): one `GpuHolding` per pod and
physical GPU, with `shares` replicas of `shares_per_gpu` (`replicas`; 100 for HAMi cores).
"""

from __future__ import annotations

from datetime import timedelta

from simulator.world.catalog import HAMI_SPLIT_COUNT, SHARED_POOLS
from simulator.world.features import FeatureBuild
from simulator.world.model import GpuHolding
from simulator.world.nodes import NodeSlot
from simulator.world.pods import GPU_TOLERATIONS, PodPlan, container

GPU = "nvidia.com/gpu"
GPU_CORES = "nvidia.com/gpucores"
GPU_MEMORY = "nvidia.com/gpumem"


def add_sharing(build: FeatureBuild) -> None:
    for pool, (strategy, replicas) in SHARED_POOLS.items():
        for slot in build.slots.get(pool, []):
            build.world.gpu_sharing[slot.name] = (strategy, replicas)
            _replica_pods(build, slot, strategy, replicas)
    for slot in build.slots.get("h100-hami", []):
        build.world.gpu_sharing[slot.name] = ("hami", HAMI_SPLIT_COUNT)
        _hami_pods(build, slot)


def _replica_pods(build: FeatureBuild, slot: NodeSlot, strategy: str, replicas: int) -> None:
    ids = build.ids
    healthy = [gpu for gpu in slot.gpus if gpu.healthy]
    used = 0
    limit = len(healthy) * replicas * 3 // 4  # leave a quarter of the replicas free
    app, image = (
        ("notebook", "quay.io/jupyter/pytorch-notebook:cuda12-2024-10-07")
        if strategy == "time-slicing"
        else ("mps-inference", "nvcr.io/nvidia/tritonserver:24.09-py3")
    )
    namespace = "research" if strategy == "time-slicing" else "inference"
    owner = build.placement._replicaset(f"{app}-{slot.pool.name}", namespace)
    while True:
        want = 1 if strategy == "mps" else ids.randint(1, 2)
        if used + want > limit or not slot.take({GPU: want}):
            break
        plan = PodPlan(
            namespace=namespace,
            name=ids.unique(f"{owner['name']}-"),
            generate_name=f"{owner['name']}-",
            containers=[
                container(
                    "main",
                    image,
                    requests={"cpu": "4", "memory": "32Gi", GPU: str(want)},
                    limits={"memory": "32Gi", GPU: str(want)},
                )
            ],
            created=build.now - timedelta(hours=ids.rng.uniform(0.5, 100)),
            node=slot,
            labels={"app": app, "pod-template-hash": owner["name"].rsplit("-", 1)[1]},
            owner=owner,
            priority_class="batch-low" if strategy == "time-slicing" else "inference",
            tolerations=GPU_TOLERATIONS,
            node_selector={"nvidia.com/gpu.sharing-strategy": strategy},
        )
        pod = build.add_pod(plan)
        for position in range(used, used + want):
            gpu = healthy[position // replicas]
            _hold(build, pod, slot, gpu.uuid, strategy, 1, replicas)
        used += want


def _hami_pods(build: FeatureBuild, slot: NodeSlot) -> None:
    gpu = next((g for g in slot.gpus if g.healthy), None)
    if gpu is None:
        return
    owner = build.placement._replicaset("hami-inference", "inference")
    for cores, memory in ((25, 20000), (50, 40000)):
        if not slot.take({GPU: 1}):
            return
        quantities = {GPU: "1", GPU_CORES: str(cores), GPU_MEMORY: str(memory)}
        created = build.now - timedelta(hours=build.ids.rng.uniform(1, 60))
        plan = PodPlan(
            namespace="inference",
            name=build.ids.unique(f"{owner['name']}-"),
            generate_name=f"{owner['name']}-",
            containers=[
                container(
                    "server",
                    "docker.io/vllm/vllm-openai:v0.6.3",
                    requests={"cpu": "4", "memory": "32Gi"} | quantities,
                    limits={"memory": "32Gi"} | quantities,
                )
            ],
            created=created,
            node=slot,
            labels={"app": "hami-inference", "pod-template-hash": owner["name"].rsplit("-", 1)[1]},
            # what HAMi's scheduler writes when it binds the pod to a GPU
            annotations={
                "hami.io/vgpu-node": slot.name,
                "hami.io/vgpu-time": str(int(created.timestamp()) + 2),
                "hami.io/bind-phase": "success",
                "hami.io/bind-time": str(int(created.timestamp()) + 2),
                "hami.io/vgpu-devices-allocated": f"{gpu.uuid},NVIDIA,{memory},{cores}:;",
                "hami.io/vgpu-devices-to-allocate": ";",
            },
            owner=owner,
            priority_class="inference",
            tolerations=GPU_TOLERATIONS,
        )
        pod = build.add_pod(plan)
        pod["spec"]["schedulerName"] = "hami-scheduler"
        _hold(build, pod, slot, gpu.uuid, "hami", cores, 100)


def _hold(
    build: FeatureBuild,
    pod: dict,
    slot: NodeSlot,
    gpu_uuid: str,
    mechanism: str,
    shares: int,
    per_gpu: int,
) -> None:
    holdings = build.world.feature_holdings
    metadata = pod["metadata"]
    last = holdings[-1] if holdings else None
    if (
        last is not None
        and last.pod == metadata["name"]
        and last.namespace == metadata["namespace"]
        and last.gpu_uuid == gpu_uuid
    ):
        holdings[-1] = GpuHolding(
            last.namespace,
            last.pod,
            last.node,
            gpu_uuid,
            mechanism,
            last.shares + shares,
            per_gpu,
        )
        return
    holdings.append(
        GpuHolding(
            metadata["namespace"], metadata["name"], slot.name, gpu_uuid, mechanism, shares, per_gpu
        )
    )

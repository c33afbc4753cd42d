"""Nodes: names, labels (GFD, topology, pool), capacity, conditions, the GPUs inside.

A node is first a `NodeSlot` (what the placement needs: pool, GPU resources, health) and
becomes a Node object at the end, once placement has decided which nodes are NotReady.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from simulator.world.catalog import (
    CC_CAPABLE_LABEL,
    CC_MODE_LABEL,
    CPU_NODE_IMAGES,
    CPU_TEE_LABELS,
    CUDA_RUNTIME,
    DRIVER,
    GPU_NODE_IMAGES,
    KUBELET_VERSION,
    POOL_LABEL,
    POOLS,
    SIMULATED_ANNOTATION,
    PoolProfile,
)
from simulator.world.model import Gpu, Ids, timestamp


@dataclass(eq=False)
class NodeSlot:
    """A node while the world is being built."""

    index: int
    name: str
    pool: PoolProfile
    internal_ip: str
    pod_cidr: str
    created: datetime
    topology: dict[str, str]
    capacity: dict[str, int]  # GPU resources only
    allocatable: dict[str, int]  # GPU resources only; may be below capacity (unhealthy GPUs)
    gpus: list[Gpu] = field(default_factory=list)
    ready: str = "True"  # "True" | "False" | "Unknown"
    cordoned: bool = False
    free: dict[str, int] = field(default_factory=dict)
    pod_count: int = 0  # pods created so far, for pod IPs

    @property
    def is_gpu(self) -> bool:
        return self.pool.gpu_model is not None

    def take(self, request: dict[str, int]) -> bool:
        """Reserve GPU resources for a counted pod if they fit, as the scheduler would."""
        if any(self.free.get(resource, 0) < amount for resource, amount in request.items()):
            return False
        for resource, amount in request.items():
            self.free[resource] -= amount
        return True

    def next_pod_ip(self) -> str:
        self.pod_count += 1
        base = self.pod_cidr.rsplit(".", 1)[0]
        return f"{base}.{(self.pod_count % 250) + 2}"


def pool_sizes(nodes: int) -> list[tuple[PoolProfile, int]]:
    """Split `nodes` among the pools by weight (largest remainder), biggest pool first."""
    raw = [(pool, pool.weight * nodes) for pool in POOLS]
    sizes = {pool.name: int(share) for pool, share in raw}
    left = nodes - sum(sizes.values())
    for pool, _share in sorted(raw, key=lambda item: item[1] - int(item[1]), reverse=True):
        if left <= 0:
            break
        sizes[pool.name] += 1
        left -= 1
    return [(pool, sizes[pool.name]) for pool in POOLS]


class NodeFactory:
    """Creates node slots pool by pool, then renders them as Node objects."""

    def __init__(self, ids: Ids, now: datetime) -> None:
        self.ids = ids
        self.rng = ids.rng
        self.now = now
        self.index = 0
        self.names: set[str] = set()

    def slots(self, nodes: int) -> list[NodeSlot]:
        slots: list[NodeSlot] = []
        for pool, count in pool_sizes(nodes):
            group = self.ids.hex(8)
            topology_ids = _TopologyIds(self.ids)
            for position in range(count):
                slots.append(self._slot(pool, position, group, topology_ids))
        return slots

    def pool_slots(self, pool: PoolProfile, count: int) -> list[NodeSlot]:
        """`count` slots of one pool, outside the weighted split (the opt-in feature pools)."""
        group = self.ids.hex(8)
        topology_ids = _TopologyIds(self.ids)
        return [self._slot(pool, position, group, topology_ids) for position in range(count)]

    def _slot(self, pool: PoolProfile, position: int, group: str, topo: _TopologyIds) -> NodeSlot:
        i = self.index
        self.index += 1
        internal_ip = f"10.{(i // 250) % 250}.{i % 250 + 2}.{(i // 62500) + 10}"
        pod_cidr = f"10.{64 + i // 256}.{i % 256}.0/24"
        name = self._name(pool, position, group, internal_ip)
        while name in self.names:  # random GKE suffixes can collide in big pools
            name = self._name(pool, position, group, internal_ip)
        self.names.add(name)
        created = self.now - timedelta(days=self.rng.uniform(20, 240))
        capacity, allocatable = _gpu_resources(pool)
        slot = NodeSlot(
            index=i,
            name=name,
            pool=pool,
            internal_ip=internal_ip,
            pod_cidr=pod_cidr,
            created=created,
            topology=self._topology(pool, position, name, topo),
            capacity=capacity,
            allocatable=allocatable,
        )
        slot.gpus = self._gpus(slot)
        slot.free = dict(slot.allocatable)
        return slot

    def _name(self, pool: PoolProfile, position: int, group: str, ip: str) -> str:
        if pool.cloud == "gke":
            return f"gke-annex-{pool.name}-{group}-{self.ids.suffix(4)}"
        if pool.cloud == "eks":
            return f"ip-{ip.replace('.', '-')}.{pool.region}.compute.internal"
        if pool.cloud == "topograph":
            per_rack = 18 if pool.gpu_model and pool.gpus_per_node == 4 else 8
            return f"{pool.name}-r{position // per_rack:03d}-n{position % per_rack:02d}"
        return f"{pool.name}-{position:04d}"

    def _topology(
        self, pool: PoolProfile, position: int, name: str, topo: _TopologyIds
    ) -> dict[str, str]:
        zone = pool.zones[(position // 64) % len(pool.zones)]
        labels = {
            "topology.kubernetes.io/region": pool.region,
            "topology.kubernetes.io/zone": f"{pool.region}-{zone}",
        }
        missing = self.rng.random() < 0.03  # some nodes lack the fine-grained labels
        if pool.cloud == "gke" and not missing:
            labels["cloud.google.com/gce-topology-block"] = topo.get("block", position // 64, 32)
            labels["cloud.google.com/gce-topology-subblock"] = topo.get(
                "subblock", position // 16, 32
            )
            labels["cloud.google.com/gce-topology-host"] = topo.get("host", position // 2, 32)
        elif pool.cloud == "eks" and not missing:
            for layer, width in ((1, 256), (2, 32), (3, 8)):
                value = "nn-" + topo.get(f"layer{layer}", position // width, 17)
                labels[f"topology.k8s.aws/network-node-layer-{layer}"] = value
        elif pool.cloud == "topograph" and not missing:
            rack = position // (18 if pool.gpus_per_node == 4 else 8)
            if pool.gpus_per_node == 4:  # NVL72: the rack is one NVLink domain
                labels["network.topology.nvidia.com/accelerator"] = f"nvl72-{rack:03d}"
            labels["network.topology.nvidia.com/leaf"] = f"leaf-{rack:03d}"
            labels["network.topology.nvidia.com/spine"] = f"spine-{rack // 4:02d}"
            labels["network.topology.nvidia.com/core"] = "core-0"
        elif pool.cloud == "generic" and missing:
            del labels["topology.kubernetes.io/zone"]
        return labels

    def _gpus(self, slot: NodeSlot) -> list[Gpu]:
        pool = slot.pool
        model = pool.gpu_model
        if model is None:
            return []
        split_from = 0 if pool.mig_strategy == "single" else pool.gpus_per_node - pool.mig_gpus
        gpus = []
        for index in range(pool.gpus_per_node):
            mig: tuple[tuple[str, str], ...] = ()
            if pool.mig_strategy != "none" and index >= split_from:
                profile, count = _layout_for(pool, index - split_from)
                mig = tuple((self.ids.gpu_uuid("MIG"), profile.name) for _ in range(count))
            gpus.append(
                Gpu(
                    uuid=self.ids.gpu_uuid(),
                    node=slot.name,
                    index=index,
                    product=model.product,
                    memory_mib=model.memory_mib,
                    mig_devices=mig,
                )
            )
        return gpus

    def mark_unhealthy(self, slot: NodeSlot, broken: int) -> None:
        """Some GPUs failed health checks: the device plugin stops advertising them."""
        resource = "nvidia.com/gpu"
        per_gpu = 1 if slot.pool.mig_strategy != "single" else 7
        slot.allocatable[resource] = max(0, slot.capacity[resource] - broken * per_gpu)
        slot.free[resource] = slot.allocatable[resource]
        slot.gpus = [
            Gpu(g.uuid, g.node, g.index, g.product, g.memory_mib, g.index >= broken, g.mig_devices)
            for g in slot.gpus
        ]

    def render(self, slot: NodeSlot, rv: int) -> dict:
        """The Node object as the API serves it."""
        pool = slot.pool
        labels = self._labels(slot)
        annotations = {
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            SIMULATED_ANNOTATION: "true",
        }
        if slot.is_gpu:
            features = _NFD_FEATURES
            if pool.cpu_tee:
                features += "," + CPU_TEE_LABELS[pool.cpu_tee].split("/", 1)[1]
            annotations["nfd.node.kubernetes.io/feature-labels"] = features
            annotations["nfd.node.kubernetes.io/worker.version"] = "v0.16.4"
        if pool.cloud == "gke":
            annotations["container.googleapis.com/instance_id"] = str(self.rng.getrandbits(62))
        spec: dict = {
            "podCIDR": slot.pod_cidr,
            "podCIDRs": [slot.pod_cidr],
            "providerID": self._provider_id(slot),
        }
        taints = []
        if slot.is_gpu:
            taints.append({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"})
        if slot.cordoned:
            spec["unschedulable"] = True
            taints.append(
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "effect": "NoSchedule",
                    "timeAdded": timestamp(self.now - timedelta(hours=self.rng.uniform(1, 48))),
                }
            )
        if slot.ready != "True":
            added = timestamp(self.now - timedelta(minutes=self.rng.uniform(5, 600)))
            key = "unreachable" if slot.ready == "Unknown" else "not-ready"
            taints.append(
                {"key": f"node.kubernetes.io/{key}", "effect": "NoSchedule", "timeAdded": added}
            )
            taints.append(
                {"key": f"node.kubernetes.io/{key}", "effect": "NoExecute", "timeAdded": added}
            )
        if taints:
            spec["taints"] = taints
        return {
            "metadata": {
                "name": slot.name,
                "uid": self.ids.uid(),
                "resourceVersion": str(rv),
                "creationTimestamp": timestamp(slot.created),
                "labels": labels,
                "annotations": annotations,
            },
            "spec": spec,
            "status": {
                "capacity": self._resources(slot, allocatable=False),
                "allocatable": self._resources(slot, allocatable=True),
                "conditions": self._conditions(slot),
                "addresses": [
                    {"type": "InternalIP", "address": slot.internal_ip},
                    {"type": "Hostname", "address": slot.name},
                ],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": self._node_info(slot),
                "images": GPU_NODE_IMAGES if slot.is_gpu else CPU_NODE_IMAGES,
                "runtimeHandlers": _RUNTIME_HANDLERS if slot.is_gpu else _RUNTIME_HANDLERS[-1:],
            },
        }

    def _labels(self, slot: NodeSlot) -> dict[str, str]:
        pool = slot.pool
        labels = {
            "beta.kubernetes.io/arch": pool.architecture,
            "beta.kubernetes.io/instance-type": pool.instance_type,
            "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": pool.architecture,
            "kubernetes.io/hostname": slot.name,
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": pool.instance_type,
            POOL_LABEL: pool.name,
        }
        labels.update(slot.topology)
        if "topology.kubernetes.io/zone" in slot.topology:
            labels["failure-domain.beta.kubernetes.io/region"] = pool.region
            labels["failure-domain.beta.kubernetes.io/zone"] = slot.topology[
                "topology.kubernetes.io/zone"
            ]
        if pool.cloud == "gke":
            labels["cloud.google.com/gke-nodepool"] = pool.name
            labels["cloud.google.com/gke-os-distribution"] = "cos"
            labels["cloud.google.com/machine-family"] = pool.instance_type.split("-")[0]
            if slot.is_gpu:
                labels["cloud.google.com/gke-accelerator"] = "nvidia-h100-80gb"
                labels["cloud.google.com/gke-gpu"] = "true"
        elif pool.cloud == "eks":
            labels["eks.amazonaws.com/nodegroup"] = pool.name
            labels["eks.amazonaws.com/capacityType"] = "ON_DEMAND"
            labels["k8s.io/cloud-provider-aws"] = self._aws_cluster_hash
        if slot.is_gpu:
            labels.update(self._gfd_labels(slot))
        else:
            labels["node-role.annex.dev/system"] = "true"
        return labels

    @property
    def _aws_cluster_hash(self) -> str:
        return "6f1d3c0c2b1e4a7f9a2b6c1d8e4f0a3b"

    def _gfd_labels(self, slot: NodeSlot) -> dict[str, str]:
        pool = slot.pool
        model = pool.gpu_model
        assert model is not None
        labels = {
            "feature.node.kubernetes.io/pci-10de.present": "true",
            "feature.node.kubernetes.io/kernel-version.major": "5",
            "feature.node.kubernetes.io/cpu-model.vendor_id": (
                "ARM" if pool.architecture == "arm64" else "AMD"
            ),
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.deploy.driver": "true",
            "nvidia.com/gpu.deploy.container-toolkit": "true",
            "nvidia.com/gpu.deploy.device-plugin": "true",
            "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
            "nvidia.com/gpu.deploy.dcgm-exporter": "true",
            "nvidia.com/cuda.driver.major": str(DRIVER[0]),
            "nvidia.com/cuda.driver.minor": str(DRIVER[1]),
            "nvidia.com/cuda.driver.rev": DRIVER[2],
            "nvidia.com/cuda.driver-version.full": f"{DRIVER[0]}.{DRIVER[1]}.{DRIVER[2]}",
            "nvidia.com/cuda.runtime.major": str(CUDA_RUNTIME[0]),
            "nvidia.com/cuda.runtime.minor": str(CUDA_RUNTIME[1]),
            "nvidia.com/gfd.timestamp": str(int(slot.created.timestamp()) + 600),
            "nvidia.com/gpu.compute.major": str(model.compute[0]),
            "nvidia.com/gpu.compute.minor": str(model.compute[1]),
            "nvidia.com/gpu.family": model.family,
            "nvidia.com/gpu.machine": _MACHINES.get(pool.cloud, "PowerEdge-XE9680"),
            "nvidia.com/gpu.mode": "compute",
            "nvidia.com/gpu.replicas": "1",
            "nvidia.com/gpu.sharing-strategy": "none",
            "nvidia.com/mig.capable": "true",
            "nvidia.com/mig.strategy": pool.mig_strategy,
            "nvidia.com/gpu.count": str(pool.gpus_per_node),
            "nvidia.com/gpu.product": model.product,
            "nvidia.com/gpu.memory": str(model.memory_mib),
        }
        if pool.gpus_per_node == 4:  # GB200 NVL72: NVLink fabric clique and IMEX domain
            rack = slot.topology.get("network.topology.nvidia.com/accelerator", "nvl72-000")
            clique = f"{_FABRIC_UUID}.{int(rack.rsplit('-', 1)[1]) % 32767}"
            labels["nvidia.com/gpu.clique"] = clique
            labels["nvidia.com/gpu.imex-domain"] = clique
            labels["nvidia.com/mig.capable"] = "false"
        if pool.cpu_tee:  # a confidential VM with its GPUs in CC mode
            labels[CPU_TEE_LABELS[pool.cpu_tee]] = "true"
            labels[CC_CAPABLE_LABEL] = "true"
            labels[CC_MODE_LABEL] = "on"
        if pool.mig_strategy != "none":
            labels["nvidia.com/gpu.deploy.mig-manager"] = "true"
            labels["nvidia.com/mig.config.state"] = "success"
        if pool.mig_strategy == "single":
            profile = pool.mig_layout[0][0]
            labels["nvidia.com/mig.config"] = f"all-{profile.name}"
            labels["nvidia.com/gpu.product"] = f"{model.product}-MIG-{profile.name}"
            labels["nvidia.com/gpu.count"] = str(slot.capacity["nvidia.com/gpu"])
            labels["nvidia.com/gpu.memory"] = str(profile.memory_mib)
            labels["nvidia.com/gpu.multiprocessors"] = str(profile.multiprocessors)
            labels["nvidia.com/gpu.slices.gi"] = str(profile.gi_slices)
            labels["nvidia.com/gpu.slices.ci"] = str(profile.gi_slices)
            labels.update(_engine_labels("nvidia.com/gpu"))
        elif pool.mig_strategy == "mixed":
            labels["nvidia.com/mig.config"] = "custom-mixed"
            for profile, _count in pool.mig_layout:
                prefix = f"nvidia.com/mig-{profile.name}"
                labels[f"{prefix}.count"] = str(slot.capacity[profile.resource])
                labels[f"{prefix}.memory"] = str(profile.memory_mib)
                labels[f"{prefix}.multiprocessors"] = str(profile.multiprocessors)
                labels[f"{prefix}.slices.gi"] = str(profile.gi_slices)
                labels[f"{prefix}.slices.ci"] = str(profile.gi_slices)
                labels.update(_engine_labels(prefix))
        return labels

    def _provider_id(self, slot: NodeSlot) -> str:
        pool = slot.pool
        zone = slot.topology.get("topology.kubernetes.io/zone", pool.region)
        if pool.cloud == "gke":
            return f"gce://annex-sim-project/{zone}/{slot.name}"
        if pool.cloud == "eks":
            return f"aws:///{zone}/i-0{self.ids.hex(16)}"
        return f"annex-sim://{pool.name}/{slot.name}"

    def _resources(self, slot: NodeSlot, allocatable: bool) -> dict[str, str]:
        pool = slot.pool
        memory_ki = pool.memory_gib * 1024 * 1024
        resources = {
            "cpu": f"{pool.cpu * 1000 - 310}m" if allocatable else str(pool.cpu),
            "ephemeral-storage": "3596229136Ki" if not allocatable else "3314302024402",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": f"{memory_ki - (18_000_000 if allocatable else 0)}Ki",
            "pods": "110",
        }
        gpus = slot.allocatable if allocatable else slot.capacity
        for resource, amount in sorted(gpus.items()):
            resources[resource] = str(amount)
        return resources

    def _conditions(self, slot: NodeSlot) -> list[dict]:
        heartbeat = timestamp(self.now - timedelta(seconds=self.rng.uniform(1, 50)))
        since = timestamp(slot.created + timedelta(minutes=3))
        conditions = [
            _condition(
                "MemoryPressure",
                "False",
                heartbeat,
                since,
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            _condition(
                "DiskPressure",
                "False",
                heartbeat,
                since,
                "KubeletHasNoDiskPressure",
                "kubelet has no disk pressure",
            ),
            _condition(
                "PIDPressure",
                "False",
                heartbeat,
                since,
                "KubeletHasSufficientPID",
                "kubelet has sufficient PID available",
            ),
        ]
        if slot.ready == "True":
            ready = _condition(
                "Ready", "True", heartbeat, since, "KubeletReady", "kubelet is posting ready status"
            )
        elif slot.ready == "Unknown":
            stale = timestamp(self.now - timedelta(minutes=self.rng.uniform(10, 600)))
            ready = _condition(
                "Ready",
                "Unknown",
                stale,
                stale,
                "NodeStatusUnknown",
                "Kubelet stopped posting node status.",
            )
            for condition in conditions:
                condition.update(
                    status="Unknown",
                    reason="NodeStatusUnknown",
                    message="Kubelet stopped posting node status.",
                    lastHeartbeatTime=stale,
                    lastTransitionTime=stale,
                )
        else:
            ready = _condition(
                "Ready",
                "False",
                heartbeat,
                heartbeat,
                "KubeletNotReady",
                "container runtime network not ready: NetworkReady=false "
                "reason:NetworkPluginNotReady message:Network plugin returns error: "
                "cni plugin not initialized",
            )
        conditions.append(ready)
        return conditions

    def _node_info(self, slot: NodeSlot) -> dict[str, str]:
        pool = slot.pool
        kernel, os_image = _OS.get(pool.cloud, _OS["generic"])
        return {
            "machineID": self.ids.hex(32),
            "systemUUID": self.ids.uid(),
            "bootID": self.ids.uid(),
            "kernelVersion": kernel,
            "osImage": os_image,
            "containerRuntimeVersion": "containerd://1.7.23",
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": KUBELET_VERSION,
            "operatingSystem": "linux",
            "architecture": pool.architecture,
        }


class _TopologyIds:
    """Opaque, stable topology values per (level, group) within one pool."""

    def __init__(self, ids: Ids) -> None:
        self.ids = ids
        self.values: dict[tuple[str, int], str] = {}

    def get(self, level: str, group: int, length: int) -> str:
        key = (level, group)
        if key not in self.values:
            self.values[key] = self.ids.hex(length)
        return self.values[key]


def _layout_for(pool: PoolProfile, split_index: int):
    return pool.mig_layout[(split_index // 2) % len(pool.mig_layout)]


def _gpu_resources(pool: PoolProfile) -> tuple[dict[str, int], dict[str, int]]:
    if pool.gpu_model is None:
        return {}, {}
    resources: dict[str, int] = {}
    if pool.mig_strategy == "single":
        profile, per_gpu = pool.mig_layout[0]
        resources["nvidia.com/gpu"] = pool.gpus_per_node * per_gpu
    elif pool.mig_strategy == "mixed":
        resources["nvidia.com/gpu"] = pool.gpus_per_node - pool.mig_gpus
        for split in range(pool.mig_gpus):
            profile, per_gpu = _layout_for(pool, split)
            resources[profile.resource] = resources.get(profile.resource, 0) + per_gpu
    else:
        resources["nvidia.com/gpu"] = pool.gpus_per_node
    return dict(resources), dict(resources)


def _condition(kind: str, status: str, heartbeat: str, since: str, reason: str, message: str):
    return {
        "type": kind,
        "status": status,
        "lastHeartbeatTime": heartbeat,
        "lastTransitionTime": since,
        "reason": reason,
        "message": message,
    }


def _engine_labels(prefix: str) -> dict[str, str]:
    return {
        f"{prefix}.engines.copy": "1",
        f"{prefix}.engines.decoder": "1",
        f"{prefix}.engines.encoder": "0",
        f"{prefix}.engines.jpeg": "1",
        f"{prefix}.engines.ofa": "0",
    }


_FABRIC_UUID = "8c3a1f2e-5b7d-4e9a-b1c6-2d4f6a8b0c1e"
_MACHINES = {"gke": "Google-Compute-Engine", "eks": "p5.48xlarge", "topograph": "DGX-Server"}
_OS = {
    "gke": ("6.1.100+", "Container-Optimized OS from Google"),
    "eks": ("5.10.227-219.884.amzn2.x86_64", "Amazon Linux 2"),
    "topograph": ("5.15.0-1063-nvidia", "Ubuntu 22.04.5 LTS"),
    "generic": ("5.15.0-122-generic", "Ubuntu 22.04.5 LTS"),
}
_NFD_FEATURES = (
    "cpu-cpuid.AVX512F,cpu-cpuid.AMXBF16,cpu-hardware_multithreading,"
    "kernel-version.full,kernel-version.major,pci-10de.present,system-os_release.ID"
)
_RUNTIME_HANDLERS = [
    {"name": "nvidia", "features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}},
    {"name": "", "features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}},
]

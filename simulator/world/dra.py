"""DRA (resource.k8s.io/v1): GPUs, MIG devices and ComputeDomains allocated through claims.

Shapes follow Kubernetes 1.34 (`resource.k8s.io/v1`) and NVIDIA's DRA driver
(k8s-dra-driver-gpu): DeviceClasses `gpu.nvidia.com` and `mig.nvidia.com` select devices by
the driver's `type` attribute; one ResourceSlice per node and driver, its pool named after
the node; GPU devices `gpu-<index>` with attributes (uuid, productName, architecture,
cudaComputeCapability, driverVersion, index, pcieBusID) and `memory` capacity; MIG devices
`gpu-<parent>-mig-<profile>-<n>` with `parentUUID` and `profile`. On GB200 nodes the
`compute-domain.nvidia.com` driver publishes an IMEX `channel-0` and `daemon-0`; a
ComputeDomain (resource.nvidia.com/v1beta1) spans a run's nodes, and the claim template it
names gives each pod its channel.

What it builds (pools from `catalog.FEATURE_POOLS["dra"]`; none advertises nvidia.com/gpu):
- h100-dra: training Jobs of up to 8 nodes, each pod claiming its node's 8 GPUs from a
  ResourceClaimTemplate; on the last node an inference pod with a 1-GPU claim and two pods
  sharing one direct ResourceClaim (reservedFor both); one pod Pending with an unallocated
  claim.
- a100-dra-mig: GPUs 0-3 whole (`gpu.nvidia.com`), GPUs 4-7 MIG-split and published as MIG
  devices; pods claiming 2 whole GPUs, 1g.10gb and 3g.40gb devices (`mig.nvidia.com`).
- gb200-dra: one training Job per NVL72 rack (18 trays) with a ComputeDomain spanning its
  nodes; each pod claims its node's 4 GPUs and the domain's IMEX channel.
- pending DRA demand (where h100-dra has nodes): a pod naming a template whose claim the
  resourceclaim controller has not created yet (2 GPUs), two pods sharing one unallocated
  direct claim (2 GPUs, one demand), and a pod whose claim asks for All GPUs of its class
  (`simulator.world.truth.pending_dra_demand`). Built last, from their own random stream, so
  the rest of the world is what it was without them.
Ground truth: one `GpuHolding(mechanism="dra")` per pod and GPU device of its claims; a claim
reserved for k pods gives each 1/k of its devices.
"""

from __future__ import annotations

import copy
import random
from datetime import timedelta

from simulator.world.activity import dcgm_model_name
from simulator.world.catalog import CUDA_RUNTIME, DRIVER, SIMULATED_ANNOTATION, MigProfile
from simulator.world.features import FeatureBuild
from simulator.world.model import Gpu, GpuHolding, timestamp
from simulator.world.nodes import NodeSlot
from simulator.world.pods import GPU_TOLERATIONS, PodPlan, container

GPU_DRIVER = "gpu.nvidia.com"
CD_DRIVER = "compute-domain.nvidia.com"
CD_API = "resource.nvidia.com/v1beta1"
GPU_CLASS = "gpu.nvidia.com"
MIG_CLASS = "mig.nvidia.com"
CHANNEL_CLASS = "compute-domain-default-channel.nvidia.com"
DAEMON_CLASS = "compute-domain-daemon.nvidia.com"
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
RUN_NODES = 8  # h100-dra training runs span at most this many nodes
RACK = 18  # GB200 NVL72: trays per NVLink domain
VLLM = ("worker", "docker.io/vllm/vllm-openai:v0.6.3", "4", "32Gi")
TRITON = ("server", "nvcr.io/nvidia/tritonserver:24.09-py3", "8", "64Gi")
"""Inference servers' containers: name, image, CPU and memory requests."""
_SEMVER_DRIVER = f"{DRIVER[0]}.{DRIVER[1]}.{int(DRIVER[2])}"
_ARCHITECTURE = {"hopper": "Hopper", "ampere": "Ampere", "blackwell": "Blackwell"}


def add_dra(build: FeatureBuild) -> None:
    world = build.world
    world.device_classes.extend(
        _device_class(build, name, expression)
        for name, expression in (
            (
                GPU_CLASS,
                f"device.driver == '{GPU_DRIVER}' && "
                f"device.attributes['{GPU_DRIVER}'].type == 'gpu'",
            ),
            (
                MIG_CLASS,
                f"device.driver == '{GPU_DRIVER}' && "
                f"device.attributes['{GPU_DRIVER}'].type == 'mig'",
            ),
            (
                CHANNEL_CLASS,
                f"device.driver == '{CD_DRIVER}' && "
                f"device.attributes['{CD_DRIVER}'].type == 'channel' && "
                f"device.attributes['{CD_DRIVER}'].id == 0",
            ),
            (
                DAEMON_CLASS,
                f"device.driver == '{CD_DRIVER}' && "
                f"device.attributes['{CD_DRIVER}'].type == 'daemon'",
            ),
        )
    )
    dra = _Dra(build)
    for pool in ("h100-dra", "a100-dra-mig", "gb200-dra"):
        for slot in build.slots.get(pool, []):
            dra.publish(slot)
    dra.h100(build.slots.get("h100-dra", []))
    dra.mig(build.slots.get("a100-dra-mig", []))
    dra.gb200(build.slots.get("gb200-dra", []))
    if build.slots.get("h100-dra"):
        dra.pending()


class _Dra:
    def __init__(self, build: FeatureBuild) -> None:
        self.build = build
        self.world = build.world
        self.ids = build.ids
        self.now = build.now
        # node -> device name -> (physical GPU, MIG device UUID or None, devices on that GPU)
        self.devices: dict[str, dict[str, tuple[Gpu, str | None, int]]] = {}

    # ---- ResourceSlices ---------------------------------------------------------------

    def publish(self, slot: NodeSlot) -> None:
        devices: list[dict] = []
        table: dict[str, tuple[Gpu, str | None, int]] = {}
        for gpu in slot.gpus:
            if not gpu.healthy:
                continue  # the driver does not publish a GPU that failed its health check
            if not gpu.mig_devices:
                name = f"gpu-{gpu.index}"
                devices.append(self._gpu_device(name, gpu))
                table[name] = (gpu, None, 1)
                continue
            profiles = {p.name: p for p, _count in slot.pool.mig_layout}
            seen: dict[str, int] = {}
            for mig_uuid, profile_name in gpu.mig_devices:
                n = seen[profile_name] = seen.get(profile_name, -1) + 1
                name = f"gpu-{gpu.index}-mig-{profile_name.replace('.', '')}-{n}"
                devices.append(self._mig_device(name, gpu, mig_uuid, profiles[profile_name]))
                table[name] = (gpu, mig_uuid, len(gpu.mig_devices))
        self.devices[slot.name] = table
        self.world.resource_slices.append(self._slice(slot, GPU_DRIVER, devices))
        if slot.pool.gpus_per_node == 4:  # GB200: IMEX channel and daemon devices
            channel = [
                {
                    "name": "channel-0",
                    "attributes": {"type": {"string": "channel"}, "id": {"int": 0}},
                },
                {
                    "name": "daemon-0",
                    "attributes": {"type": {"string": "daemon"}, "id": {"int": 0}},
                },
            ]
            self.world.resource_slices.append(self._slice(slot, CD_DRIVER, channel))

    def _slice(self, slot: NodeSlot, driver: str, devices: list[dict]) -> dict:
        return {
            "metadata": {
                "name": self.ids.unique(f"{slot.name}-{driver}-"),
                "generateName": f"{slot.name}-{driver}-",
                "uid": self.ids.uid(),
                "resourceVersion": str(self.build.next_rv()),
                "creationTimestamp": timestamp(slot.created + timedelta(minutes=12)),
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Node",
                        "name": slot.name,
                        "uid": self.build.nodes[slot.name]["metadata"]["uid"],
                        "controller": True,
                    }
                ],
                "annotations": {SIMULATED_ANNOTATION: "true"},
            },
            "spec": {
                "driver": driver,
                "nodeName": slot.name,
                "pool": {"name": slot.name, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        }

    def _common(self, gpu: Gpu, index: int) -> dict:
        model = gpu.product
        return {
            "productName": {"string": dcgm_model_name(gpu)},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": _ARCHITECTURE.get(_family(model), "Hopper")},
            "cudaComputeCapability": {"version": _compute(model)},
            "driverVersion": {"version": _SEMVER_DRIVER},
            "cudaDriverVersion": {"version": f"{CUDA_RUNTIME[0]}.{CUDA_RUNTIME[1]}.0"},
            "pcieBusID": {"string": f"0000:{0x18 + 0x10 * index:02x}:00.0"},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{0x10 + 0x10 * index:02x}"},
        }

    def _gpu_device(self, name: str, gpu: Gpu) -> dict:
        attributes = {
            "type": {"string": "gpu"},
            "uuid": {"string": gpu.uuid},
            "index": {"int": gpu.index},
            "minor": {"int": gpu.index},
            **self._common(gpu, gpu.index),
        }
        return {
            "name": name,
            "attributes": attributes,
            "capacity": {"memory": {"value": f"{gpu.memory_mib}Mi"}},
        }

    def _mig_device(self, name: str, gpu: Gpu, mig_uuid: str, profile: MigProfile) -> dict:
        attributes = {
            "type": {"string": "mig"},
            "uuid": {"string": mig_uuid},
            "parentUUID": {"string": gpu.uuid},
            "parentIndex": {"int": gpu.index},
            "profile": {"string": profile.name},
            **self._common(gpu, gpu.index),
        }
        return {
            "name": name,
            "attributes": attributes,
            "capacity": {
                "memory": {"value": f"{profile.memory_mib}Mi"},
                "multiprocessors": {"value": str(profile.multiprocessors)},
                "copyEngines": {"value": str(profile.gi_slices)},
                "decoders": {"value": str(profile.gi_slices)},
                "encoders": {"value": "0"},
                "jpegEngines": {"value": "1" if profile.gi_slices >= 3 else "0"},
                "ofaEngines": {"value": "1" if profile.gi_slices >= 3 else "0"},
            },
        }

    # ---- workloads ----------------------------------------------------------------------

    def h100(self, slots: list[NodeSlot]) -> None:
        if not slots:
            return
        training = slots[:-1] if len(slots) > 1 else []
        for start in range(0, len(training), RUN_NODES):
            self._training(training[start : start + RUN_NODES], 8, channel=False)
        last = slots[-1]
        free = sorted(self.devices[last.name], key=_device_order)
        # an inference pod with a 1-GPU claim from a template
        self._serving(last, "embed-dra", [free[0]])
        # two pods sharing one claim (and its GPU): a direct ResourceClaim, reserved for both
        shared = self._direct_claim("inference", "shared-gpu", GPU_CLASS, 1)
        pods = [self._shared_pod(last, shared) for _ in range(2)]
        self._allocate(shared, last, [("gpu", GPU_DRIVER, free[1])], pods)
        # one pod waiting: its claim exists, unallocated
        self._serving(None, "rerank-dra", [])

    def mig(self, slots: list[NodeSlot]) -> None:
        for slot in slots:
            names = sorted(self.devices[slot.name], key=_device_order)
            whole = [n for n in names if "-mig-" not in n]
            small = [n for n in names if "-mig-1g10gb-" in n]
            large = [n for n in names if "-mig-3g40gb-" in n]
            if len(whole) >= 2:
                self._serving(slot, "llm-2gpu-dra", whole[:2], count=2)
            for name in small[:3]:
                self._serving(slot, "notebook-mig-dra", [name], mig="1g.10gb")
            if large:
                self._serving(slot, "eval-mig-dra", [large[0]], mig="3g.40gb")

    def gb200(self, slots: list[NodeSlot]) -> None:
        for start in range(0, len(slots), RACK):
            self._training(slots[start : start + RACK], 4, channel=True)

    def pending(self) -> None:
        """Pods waiting for GPUs they ask for only through DRA claims (none is allocated)."""
        ids = self.ids
        main = ids.rng
        ids.rng = random.Random(f"pending-dra-{len(self.world.nodes)}")
        try:
            template = self._template("inference", "train-queued-gpus", GPU_CLASS, 2)
            # the controller has not created its claim yet: no resourceClaimStatuses
            self._pending_pod(
                "train-queued", [{"name": "gpus", "resourceClaimTemplateName": template}]
            )
            shared = self._direct_claim("inference", "shared-queued-gpus", GPU_CLASS, 2)
            shared["metadata"]["resourceVersion"] = str(self.build.next_rv())
            for _ in range(2):
                self._pending_pod(
                    "shared-queued",
                    [{"name": "shared", "resourceClaimName": shared["metadata"]["name"]}],
                )
            every = self._direct_claim("inference", "all-gpus-queued", GPU_CLASS, 0)
            exactly = every["spec"]["devices"]["requests"][0]["exactly"]
            exactly["allocationMode"] = "All"
            del exactly["count"]
            every["metadata"]["resourceVersion"] = str(self.build.next_rv())
            self._pending_pod(
                "all-gpus-queued",
                [{"name": "all", "resourceClaimName": every["metadata"]["name"]}],
            )
        finally:
            ids.rng = main

    def _pending_pod(self, app: str, claims: list[dict]) -> dict:
        owner = self.build.placement._replicaset(app, "inference")
        claiming = [c["name"] for c in claims]
        return self._inference_pod(owner, app, VLLM, claiming, claims, (5 / 60, 90 / 60), None)

    def _inference_pod(
        self,
        owner: dict,
        app: str,
        server: tuple[str, str, str, str],
        claiming: list[str],
        claims: list[dict],
        age_hours: tuple[float, float],
        slot: NodeSlot | None,
    ) -> dict:
        """One inference pod of ``owner`` (a ReplicaSet) labelled ``app``, whose container
        ``server`` (name, image, cpu, memory) claims ``claiming`` of its ``claims``; created
        ``age_hours`` ago (drawn after its name); pending when ``slot`` is None."""
        name, image, cpu, memory = server
        plan = PodPlan(
            namespace="inference",
            name=self.ids.unique(f"{owner['name']}-"),
            generate_name=f"{owner['name']}-",
            containers=[
                _claiming(
                    container(
                        name,
                        image,
                        requests={"cpu": cpu, "memory": memory},
                        limits={"memory": memory},
                    ),
                    claiming,
                )
            ],
            created=self.now - timedelta(hours=self.ids.rng.uniform(*age_hours)),
            node=slot,
            labels={"app": app, "app.kubernetes.io/component": "inference"},
            owner=owner,
            priority_class="inference",
            tolerations=GPU_TOLERATIONS,
            resource_claims=claims,
            unschedulable_message=(
                None
                if slot
                else f"0/{len(self.world.nodes)} nodes are available: cannot allocate all claims."
            ),
        )
        return self.build.add_pod(plan)

    # ---- objects ------------------------------------------------------------------------

    def _training(self, slots: list[NodeSlot], gpus: int, channel: bool) -> None:
        placement = self.build.placement
        started = self.now - timedelta(hours=self.build.ids.rng.uniform(1, 120))
        job = placement._new_job("running", len(slots), gpus, started, slots[0].pool.name)
        job.run.gpu_resource = GPU_CLASS
        namespace = job.run.namespace
        template = self._template(namespace, f"{job.run.job_name}-gpus", GPU_CLASS, gpus)
        claims = [{"name": "gpus", "resourceClaimTemplateName": template}]
        domain: dict | None = None
        if channel:
            domain = self._compute_domain(namespace, job.run.job_name, slots)
            claims.append(
                {
                    "name": "imex",
                    "resourceClaimTemplateName": domain["spec"]["channel"]["resourceClaimTemplate"][
                        "name"
                    ],
                }
            )
        spec = job.template_spec
        spec["containers"] = [
            _claiming(c, [c["name"] == "trainer" and "gpus"]) for c in spec["containers"]
        ]
        if channel:
            spec["containers"] = [_claiming(c, ["imex"]) for c in spec["containers"]]
        spec["resourceClaims"] = claims
        for index, slot in enumerate(slots):
            plan = placement._job_pod(job, index, slot, "Running")
            plan.resource_claims = claims
            job.run.nodes.append(slot.name)
            pod = self.build.add_pod(plan)
            names = sorted(self.devices[slot.name], key=_device_order)[:gpus]
            claim = self._pod_claim(pod, "gpus", template, GPU_CLASS, gpus)
            self._allocate(claim, slot, [("gpu", GPU_DRIVER, n) for n in names], [pod])
            if domain is not None:
                channel_claim = self._pod_claim(
                    pod, "imex", claims[1]["resourceClaimTemplateName"], CHANNEL_CLASS, 1
                )
                config = [
                    {
                        "source": "FromClaim",
                        "requests": ["channel"],
                        "opaque": {
                            "driver": CD_DRIVER,
                            "parameters": {
                                "apiVersion": CD_API,
                                "kind": "ComputeDomainChannelConfig",
                                "domainID": domain["metadata"]["uid"],
                            },
                        },
                    }
                ]
                self._allocate(
                    channel_claim, slot, [("channel", CD_DRIVER, "channel-0")], [pod], config
                )
        self.build.add_job(job)

    def _template(
        self, namespace: str, name: str, device_class: str, count: int, mig: str | None = None
    ) -> str:
        spec = _claim_spec(
            "channel" if device_class == CHANNEL_CLASS else "gpu", device_class, count, mig
        )
        self.world.resource_claim_templates.append(
            {
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "uid": self.ids.uid(),
                    "resourceVersion": str(self.build.next_rv()),
                    "creationTimestamp": timestamp(self.now - timedelta(days=2)),
                    "annotations": {SIMULATED_ANNOTATION: "true"},
                },
                "spec": {"spec": spec},
            }
        )
        return name

    def _compute_domain(self, namespace: str, job_name: str, slots: list[NodeSlot]) -> dict:
        name = f"{job_name}-cd"
        uid = self.ids.uid()
        channel_template = f"{name}-channel"
        created = self.now - timedelta(hours=130)
        domain = {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": uid,
                "resourceVersion": str(self.build.next_rv()),
                "generation": 1,
                "creationTimestamp": timestamp(created),
                "finalizers": ["resource.nvidia.com/computeDomain"],
                "annotations": {SIMULATED_ANNOTATION: "true"},
            },
            "spec": {
                "numNodes": len(slots),
                "channel": {
                    "resourceClaimTemplate": {"name": channel_template},
                    "allocationMode": "Single",
                },
            },
            "status": {
                "status": "Ready",
                "nodes": [
                    {
                        "name": slot.name,
                        "ipAddress": slot.internal_ip,
                        "cliqueID": self.build.nodes[slot.name]["metadata"]["labels"].get(
                            "nvidia.com/gpu.clique", ""
                        ),
                        "index": index,
                        "status": "Ready",
                    }
                    for index, slot in enumerate(slots)
                ],
            },
        }
        self.world.compute_domains.append(domain)
        # the ComputeDomain controller creates the channel template in the domain's namespace
        spec = _claim_spec("channel", CHANNEL_CLASS, 1)
        spec["devices"]["config"] = [
            {
                "requests": ["channel"],
                "opaque": {
                    "driver": CD_DRIVER,
                    "parameters": {
                        "apiVersion": CD_API,
                        "kind": "ComputeDomainChannelConfig",
                        "domainID": uid,
                    },
                },
            }
        ]
        self.world.resource_claim_templates.append(
            {
                "metadata": {
                    "name": channel_template,
                    "namespace": namespace,
                    "uid": self.ids.uid(),
                    "resourceVersion": str(self.build.next_rv()),
                    "creationTimestamp": timestamp(created + timedelta(seconds=2)),
                    "labels": {"resource.nvidia.com/computeDomain": uid},
                    "ownerReferences": [
                        {
                            "apiVersion": CD_API,
                            "kind": "ComputeDomain",
                            "name": name,
                            "uid": uid,
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                    "annotations": {SIMULATED_ANNOTATION: "true"},
                },
                "spec": {"spec": spec},
            }
        )
        return domain

    def _serving(
        self,
        slot: NodeSlot | None,
        app: str,
        devices: list[str],
        count: int = 1,
        mig: str | None = None,
    ) -> None:
        device_class = MIG_CLASS if mig else GPU_CLASS
        owner = self.build.placement._replicaset(app, "inference")
        template = f"{app}-claim"
        if not any(
            t["metadata"]["name"] == template and t["metadata"]["namespace"] == "inference"
            for t in self.world.resource_claim_templates
        ):
            self._template("inference", template, device_class, count, mig)
        claims = [{"name": "gpu", "resourceClaimTemplateName": template}]
        pod = self._inference_pod(owner, app, TRITON, ["gpu"], claims, (0.5, 200), slot)
        claim = self._pod_claim(pod, "gpu", template, device_class, count, mig)
        if slot is not None:
            self._allocate(claim, slot, [("gpu", GPU_DRIVER, d) for d in devices], [pod])

    def _shared_pod(self, slot: NodeSlot, claim: dict) -> dict:
        app = "shared-gpu-workers"
        owner = self.build.placement._replicaset(app, "inference")
        claims = [{"name": "shared", "resourceClaimName": claim["metadata"]["name"]}]
        return self._inference_pod(owner, app, VLLM, ["shared"], claims, (1, 100), slot)

    def _direct_claim(self, namespace: str, name: str, device_class: str, count: int) -> dict:
        claim = {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": self.ids.uid(),
                "resourceVersion": "0",
                "creationTimestamp": timestamp(self.now - timedelta(hours=150)),
                "annotations": {SIMULATED_ANNOTATION: "true"},
            },
            "spec": _claim_spec("gpu", device_class, count),
        }
        self.world.resource_claims.append(claim)
        return claim

    def _pod_claim(
        self,
        pod: dict,
        claim_name: str,
        template: str,
        device_class: str,
        count: int,
        mig: str | None = None,
    ) -> dict:
        """The claim the resourceclaim controller makes from a template for one pod."""
        metadata = pod["metadata"]
        name = self.ids.unique(f"{metadata['name']}-{claim_name}-")
        request = "channel" if device_class == CHANNEL_CLASS else "gpu"
        claim = {
            "metadata": {
                "name": name,
                "generateName": f"{metadata['name']}-{claim_name}-",
                "namespace": metadata["namespace"],
                "uid": self.ids.uid(),
                "resourceVersion": "0",
                "creationTimestamp": metadata["creationTimestamp"],
                "annotations": {POD_CLAIM_NAME: claim_name, SIMULATED_ANNOTATION: "true"},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": metadata["name"],
                        "uid": metadata["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": _claim_spec(request, device_class, count, mig),
        }
        template_obj = next(
            (
                t
                for t in self.world.resource_claim_templates
                if t["metadata"]["name"] == template
                and t["metadata"]["namespace"] == metadata["namespace"]
            ),
            None,
        )
        if template_obj is not None:
            claim["spec"] = copy.deepcopy(template_obj["spec"]["spec"])
        claim["metadata"]["resourceVersion"] = str(self.build.next_rv())
        self.world.resource_claims.append(claim)
        statuses = pod["status"].setdefault("resourceClaimStatuses", [])
        statuses.append({"name": claim_name, "resourceClaimName": name})
        return claim

    def _allocate(
        self,
        claim: dict,
        slot: NodeSlot,
        results: list[tuple[str, str, str]],
        pods: list[dict],
        config: list[dict] | None = None,
    ) -> None:
        """Allocation results and reservedFor, and the ground truth they imply."""
        devices: dict = {
            "results": [
                {"request": request, "driver": driver, "pool": slot.name, "device": device}
                for request, driver, device in results
            ]
        }
        if config:
            devices["config"] = config
        claim["status"] = {
            "allocation": {
                "devices": devices,
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [slot.name]}
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [
                {"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}
                for p in pods
            ],
        }
        claim["metadata"]["resourceVersion"] = str(self.build.next_rv())
        key = f"{claim['metadata']['namespace']}/{claim['metadata']['name']}"
        for _request, driver, device in results:
            if driver != GPU_DRIVER:
                continue
            gpu, _mig_uuid, per_gpu = self.devices[slot.name][device]
            for pod in pods:
                self.world.feature_holdings.append(
                    GpuHolding(
                        namespace=pod["metadata"]["namespace"],
                        pod=pod["metadata"]["name"],
                        node=slot.name,
                        gpu_uuid=gpu.uuid,
                        mechanism="dra",
                        shares=1,
                        shares_per_gpu=per_gpu * len(pods),
                        device=device,
                        claim=key,
                    )
                )


def _device_class(build: FeatureBuild, name: str, expression: str) -> dict:
    return {
        "metadata": {
            "name": name,
            "uid": build.ids.uid(),
            "resourceVersion": str(build.next_rv()),
            "generation": 1,
            "creationTimestamp": timestamp(build.now - timedelta(days=90)),
            "labels": {"app.kubernetes.io/name": "nvidia-dra-driver-gpu"},
            "annotations": {SIMULATED_ANNOTATION: "true"},
        },
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def _claim_spec(request: str, device_class: str, count: int, mig: str | None = None) -> dict:
    exactly: dict = {
        "deviceClassName": device_class,
        "allocationMode": "ExactCount",
        "count": count,
    }
    if mig:
        exactly["selectors"] = [
            {"cel": {"expression": f"device.attributes['{GPU_DRIVER}'].profile == '{mig}'"}}
        ]
    return {"devices": {"requests": [{"name": request, "exactly": exactly}]}}


def _claiming(spec: dict, claims: list) -> dict:
    """A container that gets its GPUs from claims: no nvidia.com/ resources, `claims` named."""
    names = [c for c in claims if c]
    copied = dict(spec)
    resources = {
        kind: {k: v for k, v in values.items() if not k.startswith("nvidia.com/")}
        for kind, values in (spec.get("resources") or {}).items()
        if kind != "claims"
    }
    resources = {kind: values for kind, values in resources.items() if values}
    existing = list((spec.get("resources") or {}).get("claims", []))
    if names or existing:
        resources["claims"] = existing + [{"name": n} for n in names]
    copied["resources"] = resources
    return copied


def _device_order(name: str) -> tuple[int, str]:
    return int(name.split("-")[1]), name


def _family(product: str) -> str:
    return {"H100": "hopper", "A100": "ampere", "GB200": "blackwell"}.get(
        next((k for k in ("GB200", "H100", "A100") if k in product), "H100"), "hopper"
    )


def _compute(product: str) -> str:
    return {"hopper": "9.0.0", "ampere": "8.0.0", "blackwell": "10.0.0"}[_family(product)]

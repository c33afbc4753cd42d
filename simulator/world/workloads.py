"""Workload placement: which pods run where, within each node's allocatable GPUs.

Every pod that the scheduler counts (bound to a node, phase not Succeeded/Failed) is placed
through `NodeSlot.take`, which refuses a pod whose effective GPU request (the upstream
PodRequests rule, `gpu_need`) does not fit. Succeeded and Failed pods are placed anywhere:
they hold nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from simulator.world.catalog import DAEMONSETS, POOL_LABEL, TEAM_NAMESPACES, DaemonSetSpec
from simulator.world.model import Ids, TrainingRun
from simulator.world.nodes import NodeSlot
from simulator.world.pods import DAEMONSET_TOLERATIONS, GPU_TOLERATIONS, PodPlan, container

GPU = "nvidia.com/gpu"
MIG_1G = "nvidia.com/mig-1g.10gb"
MIG_3G = "nvidia.com/mig-3g.40gb"

MODELS = (
    ("annex-lm-400b", "team-llm"),
    ("llama-70b", "team-llm"),
    ("mixtral-8x22b", "team-llm"),
    ("codegen-34b", "team-llm"),
    ("vit-h14", "team-vision"),
    ("dit-xl", "team-vision"),
    ("clip-l14", "team-vision"),
    ("whisper-large", "team-speech"),
    ("protein-fold", "research"),
)
STAGES = ("pretrain", "sft", "rlhf", "finetune", "ablation")
RUN_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
RUN_SIZE_WEIGHTS = (3, 3, 4, 4, 3, 2, 1.5, 1, 0.6, 0.3)
DEPLOYMENTS = (  # name, GPUs per pod, image, variant
    ("llama-70b-chat", 2, "docker.io/vllm/vllm-openai:v0.6.3", "plain"),
    ("mixtral-router", 2, "docker.io/vllm/vllm-openai:v0.6.3", "limits-only"),
    ("whisper-asr", 1, "nvcr.io/nvidia/tritonserver:24.09-py3", "overhead"),
    ("clip-embed", 1, "nvcr.io/nvidia/tritonserver:24.09-py3", "plain"),
    ("codegen-complete", 1, "docker.io/vllm/vllm-openai:v0.6.3", "limits-only"),
    ("safety-classifier", 1, "nvcr.io/nvidia/tritonserver:24.09-py3", "overhead"),
)


def gpu_need(
    containers: list[dict], init_containers: list[dict], overhead: dict[str, str] | None
) -> dict[str, int]:
    """Effective GPU request of a pod by the upstream PodRequests rule (reference §4)."""

    def request(spec: dict) -> dict[str, int]:
        resources = spec.get("resources", {})
        merged = {**resources.get("limits", {}), **resources.get("requests", {})}
        return {k: int(v) for k, v in merged.items() if k.startswith("nvidia.com/")}

    def add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
        return {k: a.get(k, 0) + b.get(k, 0) for k in a.keys() | b.keys()}

    def maximum(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
        return {k: max(a.get(k, 0), b.get(k, 0)) for k in a.keys() | b.keys()}

    total: dict[str, int] = {}
    for spec in containers:
        total = add(total, request(spec))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for spec in init_containers:
        if spec.get("restartPolicy") == "Always":
            sidecars = add(sidecars, request(spec))
            init_peak = maximum(init_peak, sidecars)
        else:
            init_peak = maximum(init_peak, add(request(spec), sidecars))
    effective = maximum(add(total, sidecars), init_peak)
    if overhead:
        effective = add(effective, request({"resources": {"requests": overhead}}))
    return {k: v for k, v in effective.items() if v}


@dataclass(eq=False)
class JobPlan:
    """A batch/v1 Job for one training run, rendered after its pods."""

    run: TrainingRun
    uid: str
    created: datetime
    labels: dict[str, str]
    template_spec: dict
    pods: list[PodPlan] = field(default_factory=list)


@dataclass(eq=False)
class EventPlan:
    """A core/v1 Event about a pod, node or job, rendered once UIDs exist."""

    target: object  # PodPlan | NodeSlot | JobPlan
    reason: str
    message: str
    kind: str  # "Normal" | "Warning"
    component: str
    when: datetime
    count: int = 1


class Placement:
    """Fills the node slots with pods and records the plans to render."""

    def __init__(self, ids: Ids, now: datetime, slots: list[NodeSlot]) -> None:
        self.ids = ids
        self.rng = ids.rng
        self.now = now
        self.slots = slots
        self.pods: list[PodPlan] = []
        self.jobs: list[JobPlan] = []
        self.events: list[EventPlan] = []
        self.runs: list[TrainingRun] = []
        self.owners: dict[str, dict] = {}  # owner key -> ownerReference (stable per workload)

    # ---- GPU node roles -------------------------------------------------------------

    def place_all(self) -> None:
        by_pool: dict[str, list[NodeSlot]] = {}
        for slot in self.slots:
            if slot.is_gpu:
                by_pool.setdefault(slot.pool.name, []).append(slot)
        for slots in by_pool.values():
            if slots[0].pool.mig_strategy == "none":
                self._place_full_gpu_pool(slots)
            else:
                self._place_mig_pool(slots)
        self._system_pods()
        for slot in self.slots:
            self._daemonset_pods(slot)
        gpu_slots = [s for s in self.slots if s.is_gpu and s.pool.mig_strategy == "none"]
        self._queued_runs(gpu_slots)
        self._finished_runs(gpu_slots)
        self._evicted_pods()
        self._ensure_variety()

    def _ensure_variety(self) -> None:
        """Small worlds still show a terminating pod, a bound Pending pod and a nomination."""
        workload = [
            p
            for p in self.pods
            if p.node is not None
            and p.phase == "Running"
            and p.owner is not None
            and p.owner["kind"] == "ReplicaSet"
        ]
        if workload and not any(p.terminating for p in self.pods):
            workload[-1].terminating = True
        if workload and not any(p.node is not None and p.phase == "Pending" for p in self.pods):
            workload[0].phase = "Pending"
        queued = [p for p in self.pods if p.node is None]
        gpu_nodes = [s.name for s in self.slots if s.is_gpu]
        if queued and gpu_nodes and not any(p.nominated_node for p in queued):
            queued[0].nominated_node = gpu_nodes[0]

    def _place_full_gpu_pool(self, slots: list[NodeSlot]) -> None:
        roles = ["training", "inference", "balloon", "misc", "free"]
        weights = [0.60, 0.17, 0.06, 0.08, 0.09]
        training: list[NodeSlot] = []
        for slot in slots:
            role = self.rng.choices(roles, weights)[0]
            full = slot.free.get(GPU, 0) == slot.pool.gpus_per_node
            if role == "training" and full:
                training.append(slot)
                continue
            self._flush_training(training)
            training = []
            if role == "training":
                role = "inference"
            if role == "inference":
                self._inference_node(slot)
            elif role == "balloon":
                self._balloon_node(slot)
            elif role == "misc":
                self._misc_node(slot)
        self._flush_training(training)

    def _flush_training(self, slots: list[NodeSlot]) -> None:
        while slots:
            size = self.rng.choices(RUN_SIZES, RUN_SIZE_WEIGHTS)[0]
            size = min(size, len(slots))
            group, slots = slots[:size], slots[size:]
            state = "starting" if self.rng.random() < 0.08 else "running"
            self._training_run(group, state)

    def _training_run(self, slots: list[NodeSlot], state: str) -> None:
        gpus = slots[0].pool.gpus_per_node
        started = self.now - timedelta(
            hours=self.rng.uniform(
                0.05 if state == "starting" else 1, 0.2 if state == "starting" else 300
            )
        )
        job = self._new_job(state, len(slots), gpus, started, pool=slots[0].pool.name)
        for index, slot in enumerate(slots):
            plan = self._job_pod(job, index, slot, "Pending" if state == "starting" else "Running")
            assert slot.take(gpu_need(plan.containers, plan.init_containers, plan.overhead))
            job.run.nodes.append(slot.name)

    def _new_job(
        self,
        state: str,
        pods: int,
        gpus: int,
        started: datetime,
        pool: str | None,
        namespace: str | None = None,
    ) -> JobPlan:
        """A training Job and its run; `namespace` limits the model to that team's."""
        models = MODELS if namespace is None else [m for m in MODELS if m[1] == namespace]
        model, namespace = self.rng.choice(models)
        stage = self.rng.choice(STAGES)
        job_name = self.ids.unique(f"{model}-{stage}-")
        run = TrainingRun(
            run_id=self.ids.uid(),
            namespace=namespace,
            job_name=job_name,
            model=model,
            state=state,
            nodes=[],
            pods=pods,
            gpus_per_pod=gpus,
            gpu_resource=GPU,
            started=started,
            finished=None,
        )
        uid = self.ids.uid()
        labels = {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": job_name,
            "controller-uid": uid,
            "job-name": job_name,
            "training.annex.dev/run": run.run_id,
            "training.annex.dev/model": model,
        }
        limits_only = self.rng.random() < 0.2
        containers = [_trainer(run, gpus, limits_only)]
        volumes = _training_volumes(job_name)
        template_spec: dict = {
            "volumes": volumes,
            "containers": containers,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": GPU_TOLERATIONS,
            "priorityClassName": "training-high"
            if model == "annex-lm-400b"
            else "training-standard",
        }
        if pool:
            template_spec["nodeSelector"] = {POOL_LABEL: pool}
        plan = JobPlan(run, uid, started - timedelta(seconds=30), labels, template_spec)
        self.jobs.append(plan)
        self.runs.append(run)
        self.events.append(
            EventPlan(
                plan,
                "SuccessfulCreate",
                "Created pods for job",
                "Normal",
                "job-controller",
                plan.created,
            )
        )
        return plan

    def _job_pod(
        self, job: JobPlan, index: int, slot: NodeSlot | None, phase: str, **extra
    ) -> PodPlan:
        spec = job.template_spec
        plan = PodPlan(
            namespace=job.run.namespace,
            name=self.ids.unique(f"{job.run.job_name}-{index}-"),
            generate_name=f"{job.run.job_name}-{index}-",
            containers=spec["containers"],
            created=job.created + timedelta(seconds=2),
            phase=phase,
            node=slot,
            labels={**job.labels, "batch.kubernetes.io/job-completion-index": str(index)},
            annotations={"batch.kubernetes.io/job-completion-index": str(index)},
            owner={
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": job.run.job_name,
                "uid": job.uid,
                "controller": True,
                "blockOwnerDeletion": True,
            },
            volumes=spec["volumes"],
            priority_class=spec["priorityClassName"],
            restart_policy="Never",
            tolerations=GPU_TOLERATIONS,
            node_selector=spec.get("nodeSelector"),
            **extra,
        )
        job.pods.append(plan)
        self.pods.append(plan)
        return plan

    def _inference_node(self, slot: NodeSlot) -> None:
        for _ in range(self.ids.randint(1, 6)):
            name, gpus, image, variant = self.rng.choice(DEPLOYMENTS)
            owner = self._replicaset(name, "inference")
            limits_only = variant == "limits-only"
            gpu_quantity = {GPU: str(gpus)}
            main = container(
                "server",
                image,
                requests={"cpu": "8", "memory": "64Gi"} | ({} if limits_only else gpu_quantity),
                limits={"memory": "64Gi"} | gpu_quantity,
                args=["--model", f"/models/{name}", "--port", "8000"],
                env=_INFERENCE_ENV,
                mounts=[{"name": "model-cache", "mountPath": "/models"}],
                ports=[{"name": "http", "containerPort": 8000, "protocol": "TCP"}],
            )
            overhead = {"cpu": "250m", "memory": "160Mi"} if variant == "overhead" else None
            plan = PodPlan(
                namespace="inference",
                name=self.ids.unique(f"{owner['name']}-"),
                generate_name=f"{owner['name']}-",
                containers=[main],
                created=self.now - timedelta(hours=self.rng.uniform(0.2, 400)),
                node=slot,
                labels={
                    "app": name,
                    "pod-template-hash": owner["name"].rsplit("-", 1)[1],
                    "app.kubernetes.io/component": "inference",
                },
                owner=owner,
                volumes=_MODEL_CACHE_VOLUMES,
                priority_class="inference",
                tolerations=GPU_TOLERATIONS,
                runtime_class="nvidia" if overhead else None,
                overhead=overhead,
            )
            if not slot.take(gpu_need(plan.containers, plan.init_containers, plan.overhead)):
                break
            roll = self.rng.random()
            if roll < 0.04:
                plan.phase = "Pending"
            elif roll < 0.08:
                plan.terminating = True
            self.pods.append(plan)

    def _balloon_node(self, slot: NodeSlot) -> None:
        free = slot.free.get(GPU, 0)
        sizes = [free] if free < 8 or self.rng.random() < 0.7 else [free // 2, free - free // 2]
        owner = self._replicaset(f"gpu-balloon-{slot.pool.name}", "capacity")
        for gpus in sizes:
            if gpus <= 0:
                continue
            plan = PodPlan(
                namespace="capacity",
                name=self.ids.unique(f"{owner['name']}-"),
                generate_name=f"{owner['name']}-",
                containers=[
                    container(
                        "reserve",
                        "registry.k8s.io/scheduling/placeholder:3.10",
                        requests={"cpu": "100m", "memory": "64Mi", GPU: str(gpus)},
                        limits={GPU: str(gpus)},
                    )
                ],
                created=self.now - timedelta(hours=self.rng.uniform(1, 200)),
                node=slot,
                labels={
                    "app": "gpu-balloon",
                    "annex.dev/balloon": "true",
                    "pod-template-hash": owner["name"].rsplit("-", 1)[1],
                },
                owner=owner,
                priority_class="placeholder",
                tolerations=GPU_TOLERATIONS,
                node_selector={POOL_LABEL: slot.pool.name},
            )
            assert slot.take(gpu_need(plan.containers, [], None))
            self.pods.append(plan)

    def _misc_node(self, slot: NodeSlot) -> None:
        """Notebooks and evaluations: init containers, sidecars, overhead, limits-only."""
        patterns = [self._preflight_pod, self._sidecar_pod, self._eval_pod, self._notebook_pod]
        for _ in range(4):
            plan = self.rng.choice(patterns)(slot)
            if slot.take(gpu_need(plan.containers, plan.init_containers, plan.overhead)):
                self.pods.append(plan)

    def _research_pod(self, slot: NodeSlot, stem: str, **fields) -> PodPlan:
        user = self.rng.choice(("ada", "grace", "alan", "barbara", "edsger", "ken", "frances"))
        return PodPlan(
            namespace="research",
            name=self.ids.unique(f"{stem}-{user}-"),
            created=self.now - timedelta(hours=self.rng.uniform(0.1, 72)),
            node=slot,
            labels={"app": stem, "annex.dev/user": user},
            priority_class="batch-low",
            tolerations=GPU_TOLERATIONS,
            restart_policy="Never",
            **fields,
        )

    def _preflight_pod(self, slot: NodeSlot) -> PodPlan:
        """Regular init container needing 2 GPUs before a 1-GPU notebook: effective 2."""
        return self._research_pod(
            slot,
            "notebook",
            init_containers=[
                container(
                    "nccl-preflight",
                    "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                    requests={GPU: "2"},
                    limits={GPU: "2"},
                    command=["/usr/local/bin/all_reduce_perf", "-g", "2"],
                )
            ],
            containers=[
                container(
                    "jupyter",
                    "nvcr.io/nvidia/pytorch:24.09-py3",
                    requests={"cpu": "4", "memory": "32Gi", GPU: "1"},
                    limits={GPU: "1"},
                    ports=[{"containerPort": 8888, "protocol": "TCP"}],
                )
            ],
        )

    def _sidecar_pod(self, slot: NodeSlot) -> PodPlan:
        """Sidecar (1 GPU) + init (2 GPUs) + main (1 GPU): effective max(1+1, 1+2) = 3."""
        return self._research_pod(
            slot,
            "eval-sidecar",
            init_containers=[
                container(
                    "gpu-profiler",
                    "ghcr.io/annex-sim/evaluator:2026.10.1",
                    requests={GPU: "1"},
                    limits={GPU: "1"},
                    restart_policy="Always",
                ),
                container(
                    "warmup",
                    "ghcr.io/annex-sim/evaluator:2026.10.1",
                    requests={GPU: "2"},
                    limits={GPU: "2"},
                    args=["--warmup"],
                ),
            ],
            containers=[
                container(
                    "evaluator",
                    "ghcr.io/annex-sim/evaluator:2026.10.1",
                    requests={"cpu": "8", "memory": "64Gi", GPU: "1"},
                    limits={GPU: "1"},
                    args=["--suite", "mmlu"],
                )
            ],
        )

    def _eval_pod(self, slot: NodeSlot) -> PodPlan:
        """GPUs given only as limits: requests default to the limits."""
        return self._research_pod(
            slot,
            "eval-sweep",
            containers=[
                container(
                    "evaluator",
                    "ghcr.io/annex-sim/evaluator:2026.10.1",
                    requests={"cpu": "16", "memory": "128Gi"},
                    limits={GPU: "4"},
                    args=["--suite", "helm-lite"],
                )
            ],
        )

    def _notebook_pod(self, slot: NodeSlot) -> PodPlan:
        """A RuntimeClass with pod overhead (cpu/memory) on top of one GPU."""
        return self._research_pod(
            slot,
            "sandbox",
            containers=[
                container(
                    "jupyter",
                    "nvcr.io/nvidia/pytorch:24.09-py3",
                    requests={"cpu": "4", "memory": "32Gi", GPU: "1"},
                    limits={GPU: "1"},
                )
            ],
            runtime_class="kata-nvidia-gpu",
            overhead={"cpu": "250m", "memory": "350Mi"},
        )

    def _place_mig_pool(self, slots: list[NodeSlot]) -> None:
        for slot in slots:
            if self.rng.random() < 0.15:
                continue  # an idle MIG node
            for _ in range(self.ids.randint(2, 10)):
                options = [r for r, free in slot.free.items() if free > 0]
                if not options:
                    break
                resource = self.rng.choice(options)
                amount = (
                    1
                    if resource != GPU or slot.pool.mig_strategy == "mixed"
                    else (self.rng.choice((1, 1, 2)))
                )
                profile = resource.removeprefix("nvidia.com/")
                stem = f"mig-{profile.replace('.', '-')}" if resource != GPU else "slice"
                plan = self._research_pod(
                    slot,
                    stem,
                    containers=[
                        container(
                            "worker",
                            "nvcr.io/nvidia/pytorch:24.09-py3",
                            requests={"cpu": "2", "memory": "16Gi", resource: str(amount)},
                            limits={resource: str(amount)},
                        )
                    ],
                )
                plan.restart_policy = "Always"
                if slot.take({resource: amount}):
                    self.pods.append(plan)

    # ---- pods that hold no GPUs or hold none any more -------------------------------

    def _system_pods(self) -> None:
        hosts = [s for s in self.slots if not s.is_gpu] or self.slots[:1]
        specs = [
            ("coredns", "kube-system", "registry.k8s.io/coredns/coredns:v1.11.3", 2),
            (
                "metrics-server",
                "kube-system",
                "registry.k8s.io/metrics-server/metrics-server:v0.7.2",
                1,
            ),
            (
                "kube-state-metrics",
                "monitoring",
                "registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.13.0",
                1,
            ),
            ("prometheus", "monitoring", "quay.io/prometheus/prometheus:v2.54.1", 2),
            ("gpu-operator", "gpu-operator", "nvcr.io/nvidia/gpu-operator:v24.9.0", 1),
        ]
        i = 0
        for name, namespace, image, replicas in specs:
            owner = self._replicaset(name, namespace)
            for _ in range(replicas):
                slot = hosts[i % len(hosts)]
                i += 1
                self.pods.append(
                    PodPlan(
                        namespace=namespace,
                        name=self.ids.unique(f"{owner['name']}-"),
                        generate_name=f"{owner['name']}-",
                        containers=[
                            container(
                                name,
                                image,
                                requests={"cpu": "100m", "memory": "256Mi"},
                                limits={"memory": "512Mi"},
                            )
                        ],
                        created=slot.created + timedelta(minutes=5),
                        node=slot,
                        labels={
                            "k8s-app": name,
                            "pod-template-hash": owner["name"].rsplit("-", 1)[1],
                        },
                        owner=owner,
                        priority_class="system-cluster-critical",
                        service_account=name,
                    )
                )

    def _daemonset_pods(self, slot: NodeSlot) -> None:
        for ds in DAEMONSETS:
            if (ds.gpu_only and not slot.is_gpu) or (
                ds.mig_only and slot.pool.mig_strategy == "none"
            ):
                continue
            owner, containers, volumes = self._daemonset_template(ds)
            self.pods.append(
                PodPlan(
                    namespace=ds.namespace,
                    name=self.ids.unique(f"{ds.name}-"),
                    generate_name=f"{ds.name}-",
                    containers=containers,
                    created=slot.created + timedelta(seconds=self.ids.randint(30, 600)),
                    node=slot,
                    labels={
                        "app.kubernetes.io/name": ds.name,
                        "controller-revision-hash": owner["revision"],
                        "pod-template-generation": "1",
                    },
                    owner=owner["ref"],
                    volumes=volumes,
                    priority_class=ds.priority_class,
                    service_account=ds.name,
                    tolerations=DAEMONSET_TOLERATIONS,
                    host_network=ds.host_network,
                    affinity=_pin_to(slot.name),
                )
            )

    def _daemonset_template(self, ds: DaemonSetSpec) -> tuple[dict, list[dict], list[dict]]:
        key = f"ds/{ds.namespace}/{ds.name}"
        if key not in self.owners:
            ref = {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "name": ds.name,
                "uid": self.ids.uid(),
                "controller": True,
                "blockOwnerDeletion": True,
            }
            env = [
                {
                    "name": "NODE_NAME",
                    "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
                },
                {
                    "name": "POD_NAMESPACE",
                    "valueFrom": {
                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}
                    },
                },
            ]
            mounts = [
                {"name": "host-sys", "readOnly": True, "mountPath": "/host/sys"},
                {"name": "host-run", "mountPath": "/run/nvidia"},
            ]
            ports = (
                [{"name": "metrics", "containerPort": ds.port, "protocol": "TCP"}]
                if ds.port
                else None
            )
            containers = [
                container(
                    ds.name,
                    ds.image,
                    requests={"cpu": ds.cpu, "memory": ds.memory},
                    limits={"memory": ds.memory},
                    env=env,
                    mounts=mounts,
                    ports=ports,
                )
            ]
            volumes = [
                {"name": "host-sys", "hostPath": {"path": "/sys", "type": "Directory"}},
                {
                    "name": "host-run",
                    "hostPath": {"path": "/run/nvidia", "type": "DirectoryOrCreate"},
                },
            ]
            self.owners[key] = {
                "ref": ref,
                "revision": self.ids.hex(10),
                "containers": containers,
                "volumes": volumes,
            }
        entry = self.owners[key]
        return entry, entry["containers"], entry["volumes"]

    def _replicaset(self, deployment: str, namespace: str) -> dict:
        key = f"rs/{namespace}/{deployment}"
        if key not in self.owners:
            self.owners[key] = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": f"{deployment}-{self.ids.hex(10)[:9].replace('0', 'c')}",
                "uid": self.ids.uid(),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        return self.owners[key]

    def _queued_runs(self, gpu_slots: list[NodeSlot]) -> None:
        """Jobs waiting for GPUs: Pending pods with no node; some nominated for preemption."""
        total = len(self.slots)
        balloon_nodes = [
            p.node.name
            for p in self.pods
            if p.priority_class == "placeholder" and p.node is not None
        ]
        for i in range(max(1, total // 150)):
            size = self.rng.choice((1, 2, 4, 8, 16))
            gpus = 8
            job = self._new_job("queued", size, gpus, self.now - timedelta(minutes=20), None)
            busy = sum(1 for s in gpu_slots if s.free.get(GPU, 0) < gpus)
            message = (
                f"0/{total} nodes are available: {busy} Insufficient nvidia.com/gpu, "
                f"{total - busy} node(s) didn't match pod topology spread constraints. "
                f"preemption: 0/{total} nodes are available: {total} No preemption victims "
                "found for incoming pod."
            )
            for index in range(size):
                nominated = (
                    balloon_nodes[i % len(balloon_nodes)]
                    if (balloon_nodes and i % 3 == 0 and index == 0)
                    else None
                )
                plan = self._job_pod(
                    job,
                    index,
                    None,
                    "Pending",
                    nominated_node=nominated,
                    unschedulable_message=message,
                )
                self.events.append(
                    EventPlan(
                        plan, "FailedScheduling", message, "Warning", "default-scheduler", self.now
                    )
                )

    def _finished_runs(self, gpu_slots: list[NodeSlot]) -> None:
        """Jobs that completed or failed today: their pods stay, holding nothing."""
        if not gpu_slots:
            return
        total = len(self.slots)
        plans = [("completed", max(1, total // 40)), ("failed", max(1, total // 150))]
        for state, count in plans:
            for _ in range(count):
                size = min(self.rng.choice((1, 1, 2, 4, 8, 16)), len(gpu_slots))
                start = self.rng.randrange(len(gpu_slots))
                group = [gpu_slots[(start + k) % len(gpu_slots)] for k in range(size)]
                gpus = group[0].pool.gpus_per_node
                finished = self.now - timedelta(hours=self.rng.uniform(1, 20))
                started = finished - timedelta(hours=self.rng.uniform(0.5, 30))
                job = self._new_job(state, size, gpus, started, group[0].pool.name)
                job.run.finished = finished
                phase = "Succeeded" if state == "completed" else "Failed"
                for index, slot in enumerate(group):
                    failure = None
                    if phase == "Failed":
                        failure = "OOMKilled" if index == 0 and size > 1 else "Error"
                    self._job_pod(job, index, slot, phase, finished=finished, failure=failure)
                    job.run.nodes.append(slot.name)
                reason, message, kind = (
                    ("Completed", "Job completed", "Normal")
                    if state == "completed"
                    else (
                        "BackoffLimitExceeded",
                        "Job has reached the specified backoff limit",
                        "Warning",
                    )
                )
                self.events.append(
                    EventPlan(job, reason, message, kind, "job-controller", finished)
                )

    def _evicted_pods(self) -> None:
        gpu_slots = [s for s in self.slots if s.is_gpu] or self.slots
        for _ in range(max(1, len(self.slots) // 60)):
            slot = self.rng.choice(gpu_slots)
            name, gpus, image, _variant = self.rng.choice(DEPLOYMENTS)
            owner = self._replicaset(name, "inference")
            plan = PodPlan(
                namespace="inference",
                name=self.ids.unique(f"{owner['name']}-"),
                generate_name=f"{owner['name']}-",
                containers=[
                    container(
                        "server",
                        image,
                        requests={"cpu": "8", "memory": "64Gi", GPU: str(gpus)},
                        limits={GPU: str(gpus)},
                    )
                ],
                created=self.now - timedelta(hours=self.rng.uniform(5, 50)),
                phase="Failed",
                node=slot,
                labels={"app": name, "pod-template-hash": owner["name"].rsplit("-", 1)[1]},
                owner=owner,
                priority_class="inference",
                tolerations=GPU_TOLERATIONS,
                failure="Evicted",
                finished=self.now - timedelta(hours=self.rng.uniform(1, 4)),
            )
            self.pods.append(plan)
            self.events.append(
                EventPlan(
                    plan,
                    "Evicted",
                    "The node was low on resource: ephemeral-storage.",
                    "Warning",
                    "kubelet",
                    plan.finished or self.now,
                )
            )


def _pin_to(node: str) -> dict:
    """The node affinity the DaemonSet controller writes into each of its pods."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            }
        }
    }


def _trainer(run: TrainingRun, gpus: int, limits_only: bool) -> dict:
    gpu = {GPU: str(gpus)}
    cpu = "96" if gpus == 8 else "64"
    memory = "1600Gi" if gpus == 8 else "800Gi"

    def value(name: str, text: str) -> dict:
        return {"name": name, "value": text}

    def field_ref(name: str, path: str) -> dict:
        return {"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}}

    env = [
        value("RUN_ID", run.run_id),
        value("MODEL_NAME", run.model),
        value("MASTER_ADDR", f"{run.job_name}-0.{run.job_name}.{run.namespace}.svc"),
        value("MASTER_PORT", "29500"),
        value("WORLD_SIZE", str(run.pods * gpus)),
        value("NNODES", str(run.pods)),
        value("NPROC_PER_NODE", str(gpus)),
        value("NCCL_DEBUG", "WARN"),
        value("NCCL_IB_HCA", "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7"),
        value("NCCL_SOCKET_IFNAME", "eth0"),
        value("NCCL_CROSS_NIC", "0"),
        value("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
        value("CUDA_DEVICE_MAX_CONNECTIONS", "1"),
        value("OMP_NUM_THREADS", "12"),
        value("CHECKPOINT_DIR", f"/checkpoints/{run.model}/{run.job_name}"),
        value("DATASET_URI", f"s3://annex-sim-datasets/{run.model}/shards/"),
        value("HF_HOME", "/cache/huggingface"),
        value("WANDB_PROJECT", run.model),
        value("OPENLINEAGE_URL", "http://annex-lineage.annex.svc:5000"),
        value("OPENLINEAGE_NAMESPACE", f"annex-sim://{run.namespace}"),
        field_ref(
            "JOB_COMPLETION_INDEX",
            "metadata.annotations['batch.kubernetes.io/job-completion-index']",
        ),
        field_ref("POD_NAME", "metadata.name"),
        field_ref("POD_IP", "status.podIP"),
        field_ref("NODE_NAME", "spec.nodeName"),
    ]
    requests = {"cpu": cpu, "memory": memory} | ({} if limits_only else gpu)
    return container(
        "trainer",
        "ghcr.io/annex-sim/trainer:2026.10.3",
        command=["torchrun"],
        args=[
            "--nnodes",
            str(run.pods),
            "--nproc-per-node",
            str(gpus),
            "--rdzv-backend",
            "c10d",
            "--rdzv-endpoint",
            "$(MASTER_ADDR):$(MASTER_PORT)",
            "-m",
            "annex_trainer",
            "--config",
            f"/etc/trainer/{run.model}.yaml",
        ],
        requests=requests,
        limits={"memory": memory} | gpu,
        env=env,
        mounts=[
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "checkpoints", "mountPath": "/checkpoints"},
            {"name": "trainer-config", "readOnly": True, "mountPath": "/etc/trainer"},
        ],
        ports=[{"name": "rdzv", "containerPort": 29500, "protocol": "TCP"}],
    )


def _training_volumes(job_name: str) -> list[dict]:
    return [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "256Gi"}},
        {"name": "checkpoints", "persistentVolumeClaim": {"claimName": "checkpoints"}},
        {"name": "trainer-config", "configMap": {"name": f"{job_name}-config", "defaultMode": 420}},
    ]


_INFERENCE_ENV = [
    {"name": "HF_HOME", "value": "/models/.cache"},
    {"name": "VLLM_WORKER_MULTIPROC_METHOD", "value": "spawn"},
    {"name": "CUDA_MODULE_LOADING", "value": "LAZY"},
]
_MODEL_CACHE_VOLUMES = [
    {
        "name": "model-cache",
        "persistentVolumeClaim": {"claimName": "model-cache", "readOnly": True},
    },
]

__all__ = ["TEAM_NAMESPACES", "EventPlan", "JobPlan", "Placement", "gpu_need"]

"""Kueue (kueue.x-k8s.io/v1beta1): queues with quota and borrowing, Workloads in every state.

One ResourceFlavor for the h100-kueue pool; two ClusterQueues in cohort `gpu-cohort`,
`team-llm` and `team-vision`, splitting the pool's GPUs as nominal quota (half each);
`team-llm` may borrow (borrowingLimit) and does: it runs one node's worth (8 GPUs) above its
nominal quota, lent by `team-vision`, which runs one node below (so the pool is full). One
LocalQueue per team namespace. Workloads own their batch/v1 Jobs (label
`kueue.x-k8s.io/queue-name`) and agree with the pods:
- admitted: QuotaReserved and Admitted True, the Job unsuspended, its pods Running on the
  pool; the first `team-llm` workload queued 3 h before admission (created 5 h ago);
- queued: QuotaReserved False (Pending, insufficient unused quota), Job suspended, no pods;
- preempted: a low-priority `team-vision` workload evicted 40 min ago by a higher-priority
  one in its ClusterQueue (Evicted and Preempted True, Requeued), Job suspended, no pods;
- finished: Finished True, its pods Succeeded (holding nothing), its quota released.
ClusterQueue and LocalQueue status (flavorsReservation, flavorsUsage with `borrowed`, workload
counts) add up the admitted unfinished workloads. Ground truth: `world.queued_workloads`,
`world.queue_quotas` (read them through `simulator.world.truth`).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from simulator.world.catalog import POOL_LABEL, PRIORITY_CLASSES, SIMULATED_ANNOTATION
from simulator.world.features import FeatureBuild
from simulator.world.model import QueuedWorkload, QueueQuota, timestamp
from simulator.world.nodes import NodeSlot

API = "kueue.x-k8s.io/v1beta1"
FLAVOR = "h100-kueue"
COHORT = "gpu-cohort"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GPU = "nvidia.com/gpu"
GPUS_PER_NODE = 8
CPU_PER_POD = 96  # the trainer container's request with 8 GPUs (workloads._trainer)
MEMORY_GI_PER_POD = 1600
TEAMS = (("team-llm", "llm-queue"), ("team-vision", "vision-queue"))
WAITED = timedelta(hours=3)  # the workload that queued 3 h before admission


def add_kueue(build: FeatureBuild) -> None:
    slots = build.slots.get("h100-kueue", [])
    if not slots:
        return
    Kueue(build, slots).fill()


class Kueue:
    def __init__(self, build: FeatureBuild, slots: list[NodeSlot]) -> None:
        self.build = build
        self.world = build.world
        self.ids = build.ids
        self.now = build.now
        self.slots = slots
        total = len(slots)
        llm_nodes = total // 2
        self.nominal_nodes = {"team-llm": llm_nodes, "team-vision": total - llm_nodes}
        self.borrowing_limit = {"team-llm": GPUS_PER_NODE * max(1, total // 4)}
        self.used_nodes = {"team-llm": llm_nodes + 1, "team-vision": total - llm_nodes - 1}
        self.free_slots = list(slots)
        self.entries: list[tuple[QueuedWorkload, dict]] = []

    def fill(self) -> None:
        world = self.world
        world.resource_flavors.append(self._flavor())
        for namespace, queue in TEAMS:
            cq = namespace
            sizes = _chunks(self.used_nodes[cq])
            for number, size in enumerate(sizes):
                if cq == "team-llm" and number == 0:
                    created = self.now - timedelta(hours=5)
                    self._workload(namespace, queue, size, "admitted", created, created + WAITED)
                else:
                    created = self.now - timedelta(seconds=self.ids.randint(3600, 60 * 3600))
                    admitted = created + timedelta(seconds=self.ids.randint(5, 300))
                    if cq == "team-vision" and number == 0:
                        # the preemptor: admitted when the low-priority workload was evicted
                        admitted = self.now - timedelta(minutes=40)
                        created = admitted - timedelta(minutes=self.ids.randint(2, 20))
                    self._workload(
                        namespace,
                        queue,
                        size,
                        "admitted",
                        created,
                        admitted,
                        priority="training-high" if cq == "team-vision" else "training-standard",
                    )
            self._workload(
                namespace,
                queue,
                2 if cq == "team-llm" else 1,
                "queued",
                self.now - timedelta(minutes=self.ids.randint(20, 150)),
                None,
            )
            if cq == "team-vision":
                created = self.now - timedelta(hours=9)
                self._workload(
                    namespace,
                    queue,
                    1,
                    "preempted",
                    created,
                    created + timedelta(minutes=3),
                    evicted=self.now - timedelta(minutes=40),
                    priority="batch-low",
                )
            else:
                created = self.now - timedelta(hours=14)
                admitted = created + timedelta(minutes=1)
                self._workload(
                    namespace,
                    queue,
                    1,
                    "finished",
                    created,
                    admitted,
                    finished=self.now - timedelta(hours=2),
                )
        for namespace, queue in TEAMS:
            world.cluster_queues.append(self._cluster_queue(namespace))
            world.local_queues.append(self._local_queue(namespace, queue))

    # ---- workloads ---------------------------------------------------------------------

    def _workload(
        self,
        namespace: str,
        queue: str,
        size: int,
        state: str,
        created: datetime,
        admitted: datetime | None,
        *,
        evicted: datetime | None = None,
        finished: datetime | None = None,
        priority: str = "training-standard",
    ) -> None:
        placement = self.build.placement
        run_state = {"admitted": "running", "finished": "completed"}.get(state, "queued")
        job = placement._new_job(
            run_state, size, GPUS_PER_NODE, created + timedelta(seconds=30), FLAVOR, namespace
        )
        run = job.run
        job.template_spec["priorityClassName"] = priority
        job.labels[QUEUE_LABEL] = queue
        running = state in ("admitted", "finished")
        if running:
            assert admitted is not None
            run.started = admitted
            run.finished = finished
            for index in range(size):
                if state == "admitted":
                    slot = self.free_slots.pop(0)
                    assert slot.take({GPU: GPUS_PER_NODE})
                    phase = "Running"
                else:
                    slot = self.slots[index % len(self.slots)]
                    phase = "Succeeded"
                plan = placement._job_pod(job, index, slot, phase, finished=finished)
                plan.created = admitted + timedelta(seconds=2)
                run.nodes.append(slot.name)
                self.build.add_pod(plan)
        else:
            run.started = None
        job_obj = self.build.add_job(job)
        job_obj["metadata"]["labels"][QUEUE_LABEL] = queue
        if state == "admitted":
            job_obj["status"]["startTime"] = timestamp(admitted + timedelta(seconds=1))
        if not running:
            job_obj["spec"]["suspend"] = True
            since = timestamp(evicted or created)
            job_obj["status"] = {
                "conditions": [
                    {
                        "type": "Suspended",
                        "status": "True",
                        "lastProbeTime": since,
                        "lastTransitionTime": since,
                        "reason": "JobSuspended",
                        "message": "Job suspended",
                    }
                ]
            }
        name = f"job-{run.job_name}-{self.ids.hex(5)}"
        truth = QueuedWorkload(
            namespace=namespace,
            name=name,
            job=run.job_name,
            local_queue=queue,
            cluster_queue=namespace,
            state=state,
            created=created,
            admitted=admitted,
            evicted=evicted,
            finished=finished,
            gpus=size * GPUS_PER_NODE,
            priority_class=priority,
        )
        obj = self._workload_object(truth, job_obj, size)
        self.world.workloads.append(obj)
        self.world.queued_workloads.append(truth)
        self.entries.append((truth, obj))

    def _workload_object(self, truth: QueuedWorkload, job: dict, size: int) -> dict:
        template = job["spec"]["template"]
        priority_class = truth.priority_class
        metadata: dict = {
            "name": truth.name,
            "namespace": truth.namespace,
            "uid": self.ids.uid(),
            "resourceVersion": str(self.build.next_rv()),
            "generation": 1,
            "creationTimestamp": timestamp(truth.created),
            "labels": {"kueue.x-k8s.io/job-uid": job["metadata"]["uid"]},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": truth.job,
                    "uid": job["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "annotations": {SIMULATED_ANNOTATION: "true"},
        }
        if truth.state == "admitted":
            metadata["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
        spec = {
            "active": True,
            "podSets": [
                {
                    "name": "main",
                    "count": size,
                    "template": {
                        "metadata": {"labels": template["metadata"]["labels"]},
                        "spec": {**template["spec"], "priorityClassName": priority_class},
                    },
                }
            ],
            "priority": PRIORITY_CLASSES[priority_class][0],
            "priorityClassName": priority_class,
            "priorityClassSource": "kubernetes.io/priorityclass",
            "queueName": truth.local_queue,
        }
        status: dict = {"conditions": self._conditions(truth)}
        if truth.state in ("admitted", "finished"):
            status["admission"] = {
                "clusterQueue": truth.cluster_queue,
                "podSetAssignments": [
                    {
                        "name": "main",
                        "flavors": {"cpu": FLAVOR, "memory": FLAVOR, GPU: FLAVOR},
                        "resourceUsage": {
                            "cpu": str(CPU_PER_POD * size),
                            "memory": f"{MEMORY_GI_PER_POD * size}Gi",
                            GPU: str(GPUS_PER_NODE * size),
                        },
                        "count": size,
                    }
                ],
            }
        if truth.state == "preempted":
            status["requeueState"] = {"count": 1}
        return {"metadata": metadata, "spec": spec, "status": status}

    def _conditions(self, truth: QueuedWorkload) -> list[dict]:
        def condition(kind: str, status: str, when: datetime, reason: str, message: str) -> dict:
            return {
                "type": kind,
                "status": status,
                "lastTransitionTime": timestamp(when),
                "observedGeneration": 1,
                "reason": reason,
                "message": message,
            }

        reserved = f"Quota reserved in ClusterQueue {truth.cluster_queue}"
        pending = (
            "couldn't assign flavors to pod set main: insufficient unused quota for "
            f"{GPU} in flavor {FLAVOR}, {truth.gpus} more needed"
        )
        if truth.state == "queued":
            return [condition("QuotaReserved", "False", truth.created, "Pending", pending)]
        assert truth.admitted is not None
        admitted = [
            condition("QuotaReserved", "True", truth.admitted, "QuotaReserved", reserved),
            condition("Admitted", "True", truth.admitted, "Admitted", "The workload is admitted"),
        ]
        if truth.state == "admitted":
            return admitted
        if truth.state == "finished":
            assert truth.finished is not None
            return [
                *admitted,
                condition(
                    "Finished", "True", truth.finished, "Succeeded", "Job finished successfully"
                ),
            ]
        assert truth.evicted is not None
        preempted = "Preempted to accommodate a workload due to prioritization in the ClusterQueue"
        return [
            condition("QuotaReserved", "False", truth.evicted, "Pending", pending),
            condition(
                "Admitted",
                "False",
                truth.evicted,
                "NoReservation",
                "The workload has no reservation",
            ),
            condition("Evicted", "True", truth.evicted, "Preempted", preempted),
            condition("Preempted", "True", truth.evicted, "InClusterQueue", preempted),
            condition("Requeued", "True", truth.evicted, "Preempted", preempted),
        ]

    # ---- queues ------------------------------------------------------------------------

    def _flavor(self) -> dict:
        return {
            "metadata": self._metadata(FLAVOR, None, finalizers=["kueue.x-k8s.io/resource-in-use"]),
            "spec": {
                "nodeLabels": {POOL_LABEL: FLAVOR},
                "tolerations": [
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                ],
            },
        }

    def _usage(self, cluster_queue: str) -> tuple[int, int, int, int]:
        """GPUs, CPUs, memory (Gi) of admitted unfinished workloads; and their count."""
        admitted = [
            truth
            for truth, _obj in self.entries
            if truth.cluster_queue == cluster_queue and truth.state == "admitted"
        ]
        pods = sum(t.gpus for t in admitted) // GPUS_PER_NODE
        return pods * GPUS_PER_NODE, pods * CPU_PER_POD, pods * MEMORY_GI_PER_POD, len(admitted)

    def _cluster_queue(self, name: str) -> dict:
        nodes = self.nominal_nodes[name]
        nominal = {
            "cpu": nodes * 2 * CPU_PER_POD,
            "memory": nodes * 2 * MEMORY_GI_PER_POD,
            GPU: nodes * GPUS_PER_NODE,
        }
        limit = self.borrowing_limit.get(name)
        resources = []
        for resource in ("cpu", "memory", GPU):
            quota = nominal[resource]
            entry: dict = {
                "name": resource,
                "nominalQuota": f"{quota}Gi" if resource == "memory" else str(quota),
            }
            if limit is not None and resource == GPU:
                entry["borrowingLimit"] = str(limit)
            resources.append(entry)
        gpus, cpus, memory, admitted = self._usage(name)
        used = {"cpu": cpus, "memory": memory, GPU: gpus}
        usage = [
            {
                "name": FLAVOR,
                "resources": [
                    {
                        "name": resource,
                        "total": f"{used[resource]}Gi"
                        if resource == "memory"
                        else str(used[resource]),
                        "borrowed": (
                            f"{max(0, used[resource] - nominal[resource])}Gi"
                            if resource == "memory"
                            else str(max(0, used[resource] - nominal[resource]))
                        ),
                    }
                    for resource in ("cpu", "memory", GPU)
                ],
            }
        ]
        pending = sum(
            1
            for truth, _obj in self.entries
            if truth.cluster_queue == name and truth.state in ("queued", "preempted")
        )
        self.world.queue_quotas.append(
            QueueQuota(name, COHORT, FLAVOR, nominal[GPU], limit, gpus, max(0, gpus - nominal[GPU]))
        )
        since = timestamp(self.now - timedelta(days=60))
        return {
            "metadata": self._metadata(name, None, finalizers=["kueue.x-k8s.io/resource-in-use"]),
            "spec": {
                "cohort": COHORT,
                "namespaceSelector": {},
                "queueingStrategy": "BestEffortFIFO",
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", GPU],
                        "flavors": [{"name": FLAVOR, "resources": resources}],
                    }
                ],
                "preemption": {
                    "reclaimWithinCohort": "Never",
                    "borrowWithinCohort": {"policy": "Never"},
                    "withinClusterQueue": "LowerPriority",
                },
                "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "TryNextFlavor"},
                "stopPolicy": "None",
            },
            "status": {
                "pendingWorkloads": pending,
                "reservingWorkloads": admitted,
                "admittedWorkloads": admitted,
                "flavorsReservation": usage,
                "flavorsUsage": usage,
                "conditions": [
                    {
                        "type": "Active",
                        "status": "True",
                        "lastTransitionTime": since,
                        "observedGeneration": 1,
                        "reason": "Ready",
                        "message": "Can admit new workloads",
                    }
                ],
            },
        }

    def _local_queue(self, namespace: str, name: str) -> dict:
        gpus, cpus, memory, admitted = self._usage(namespace)
        usage = [
            {
                "name": FLAVOR,
                "resources": [
                    {"name": "cpu", "total": str(cpus)},
                    {"name": "memory", "total": f"{memory}Gi"},
                    {"name": GPU, "total": str(gpus)},
                ],
            }
        ]
        pending = sum(
            1
            for truth, _obj in self.entries
            if truth.local_queue == name and truth.state in ("queued", "preempted")
        )
        since = timestamp(self.now - timedelta(days=60))
        return {
            "metadata": self._metadata(name, namespace),
            "spec": {"clusterQueue": namespace, "stopPolicy": "None"},
            "status": {
                "pendingWorkloads": pending,
                "reservingWorkloads": admitted,
                "admittedWorkloads": admitted,
                "flavorsReservation": usage,
                "flavorUsage": usage,
                "conditions": [
                    {
                        "type": "Active",
                        "status": "True",
                        "lastTransitionTime": since,
                        "observedGeneration": 1,
                        "reason": "Ready",
                        "message": "Can submit new workloads to localQueue",
                    }
                ],
            },
        }

    def _metadata(
        self, name: str, namespace: str | None, finalizers: list[str] | None = None
    ) -> dict:
        metadata: dict = {"name": name}
        if namespace:
            metadata["namespace"] = namespace
        metadata["uid"] = self.ids.uid()
        metadata["resourceVersion"] = str(self.build.next_rv())
        metadata["generation"] = 1
        metadata["creationTimestamp"] = timestamp(self.now - timedelta(days=60))
        if finalizers:
            metadata["finalizers"] = finalizers
        metadata["annotations"] = {SIMULATED_ANNOTATION: "true"}
        return metadata


def _chunks(nodes: int) -> list[int]:
    """Workload sizes (in 8-GPU pods) that add up to `nodes`: the first 1, then 2s."""
    if nodes <= 0:
        return []
    sizes = [1]
    left = nodes - 1
    while left > 0:
        sizes.append(min(2, left))
        left -= sizes[-1]
    return sizes

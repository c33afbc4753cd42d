"""A present that keeps changing: training jobs finish and new ones start on the freed nodes.

Each tick makes one change through the store, so lists and watches see it with a new RV:
  - a running training job finishes: its pods become Succeeded, the Job Complete, an Event;
  - a new job starts on the nodes a finished job freed (so no node is ever over-allocated);
  - a running pod's status is refreshed (MODIFIED without a phase change).

``ShortJobs`` (below) is a second, opt-in mode: a sweep of sub-minute jobs whose pods are
deleted right after they finish, with a ground-truth ledger of each pod's GPU-seconds.
"""

from __future__ import annotations

import calendar
import copy
import random
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simulator.world.model import timestamp

if TYPE_CHECKING:
    from simulator.kubernetes.cluster import SimulatedCluster


class Churn:
    def __init__(self, cluster: SimulatedCluster, per_second: float) -> None:
        self.cluster = cluster
        self.interval = 1.0 / per_second
        self.rng = random.Random(f"churn:{cluster.world.seed}")
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="simulator-churn", daemon=True)
        self.freed: list[list[dict]] = []  # pods of finished jobs, as templates for new ones
        self.started_jobs = 0

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)

    def _run(self) -> None:
        while not self.stopping.wait(self.interval):
            roll = self.rng.random()
            if self.freed and roll < 0.4:
                self._start_job()
            elif roll < 0.7:
                self._finish_job()
            else:
                self._refresh_pod()

    def _running_job_pods(self) -> dict[tuple[str, str], list[dict]]:
        jobs: dict[tuple[str, str], list[dict]] = {}
        for pod in self.cluster.objects("pods"):
            owner = (pod["metadata"].get("ownerReferences") or [{}])[0]
            if pod["spec"].get("resourceClaims"):
                continue  # DRA pods: their claims would need releasing too; left running
            if owner.get("kind") == "Job" and pod["status"]["phase"] == "Running":
                jobs.setdefault((pod["metadata"]["namespace"], owner["name"]), []).append(pod)
        return jobs

    def _finish_job(self) -> None:
        jobs = self._running_job_pods()
        if not jobs:
            return
        (namespace, name), pods = self.rng.choice(sorted(jobs.items(), key=lambda kv: kv[0]))
        now = timestamp(time.time())
        for pod in pods:

            def succeed(p: dict) -> None:
                p["status"]["phase"] = "Succeeded"
                for status in p["status"].get("containerStatuses", []):
                    started = status["state"].get("running", {}).get("startedAt", now)
                    status["state"] = {
                        "terminated": {
                            "exitCode": 0,
                            "reason": "Completed",
                            "startedAt": started,
                            "finishedAt": now,
                            "containerID": status.get("containerID", ""),
                        }
                    }
                    status["ready"] = False
                    status["started"] = False
                for condition in p["status"]["conditions"]:
                    if condition["type"] in ("Ready", "ContainersReady"):
                        condition.update(
                            status="False", reason="PodCompleted", lastTransitionTime=now
                        )

            self.cluster.mutate("pods", pod["metadata"]["name"], succeed, namespace)
        job = self.cluster.get("jobs", name, namespace)
        if job is not None:
            status = job["status"]
            status.pop("active", None)
            status.update(succeeded=len(pods), ready=0, completionTime=now)
            status["conditions"] = [
                {
                    "type": kind,
                    "status": "True",
                    "lastProbeTime": now,
                    "lastTransitionTime": now,
                    "reason": "CompletionsReached",
                    "message": "Reached expected number of succeeded pods",
                }
                for kind in ("SuccessCriteriaMet", "Complete")
            ]
            self.cluster.put("jobs", job)
        self.freed.append(pods)

    def _start_job(self) -> None:
        pods = self.freed.pop(0)
        self.started_jobs += 1
        now = timestamp(time.time())
        first = pods[0]["metadata"]
        namespace = first["namespace"]
        old_name = first["ownerReferences"][0]["name"]
        job_name = f"{old_name[:40]}-churn{self.started_jobs:05d}"
        job = self.cluster.get("jobs", old_name, namespace)
        if job is None:
            return
        job["metadata"] = {**job["metadata"], "name": job_name, "creationTimestamp": now}
        job["metadata"].pop("uid")
        job["status"] = {
            "startTime": now,
            "active": len(pods),
            "ready": len(pods),
            "terminating": 0,
            "uncountedTerminatedPods": {},
        }
        job_uid = self.cluster.put("jobs", job)["metadata"]["uid"]
        for index, template in enumerate(pods):
            pod = copy.deepcopy(template)
            metadata = pod["metadata"]
            metadata["name"] = f"{job_name}-{index}-{self.rng.randrange(36**5):05x}"
            metadata["creationTimestamp"] = now
            metadata.pop("uid", None)
            metadata["labels"] = {
                **metadata["labels"],
                "job-name": job_name,
                "batch.kubernetes.io/job-name": job_name,
                "controller-uid": job_uid,
                "batch.kubernetes.io/controller-uid": job_uid,
            }
            metadata["ownerReferences"] = [
                {**metadata["ownerReferences"][0], "name": job_name, "uid": job_uid}
            ]
            pod["status"]["startTime"] = now
            for status in pod["status"].get("containerStatuses", []):
                status["state"] = {"running": {"startedAt": now}}
            self.cluster.put("pods", pod)

    def _refresh_pod(self) -> None:
        jobs = self._running_job_pods()
        if not jobs:
            return
        pods = self.rng.choice(sorted(jobs.items(), key=lambda kv: kv[0]))[1]
        pod = self.rng.choice(pods)

        def touch(p: dict) -> None:
            p["metadata"].setdefault("annotations", {})["simulator.annex.dev/heartbeat"] = (
                timestamp(time.time())
            )

        self.cluster.mutate("pods", pod["metadata"]["name"], touch, pod["metadata"]["namespace"])


# ---- short jobs: a sweep of sub-minute runs whose pods are deleted right after -------------

SHORT_JOB_NAMESPACE = "team-sweep"
GPU = "nvidia.com/gpu"
SWEEP_IMAGE = "ghcr.io/annex-sim/sweep:1"
MIG_STRATEGY = "nvidia.com/mig.strategy"
SHARING_STRATEGY = "nvidia.com/gpu.sharing-strategy"


@dataclass(frozen=True)
class ShortJobRecord:
    """Ground truth of one short job's pod: what really happened, in the world's own times.

    ``gpu_seconds`` is ``gpus`` x (finish - scheduling), from the very timestamps the pod
    carries (second precision, as metav1.Time serialises), so a client that reads them exactly
    can match it exactly.
    """

    pod_uid: str
    namespace: str
    pod_name: str
    job_name: str
    node_name: str
    gpus: int
    scheduled_at: str
    finished_at: str
    deleted: bool
    gpu_seconds: int


class ShortJobs:
    """A running sweep: jobs of a few (virtual) seconds start and finish continuously.

    Each job is one pod on a GPU node with free GPUs, and goes through the changes a real
    cluster makes, each its own write (so watches see every step): Job and pod created
    (Pending), pod bound (PodScheduled), Running, Succeeded (containers' finishedAt), then the
    pod and its Job deleted right after (TTL-after-finished / a sweep controller cleaning up).

    Times come from a virtual clock that runs ``time_scale`` times faster than wall time from
    ``start`` (epoch seconds; default now), so hundreds of "30-second" jobs run in a few real
    seconds. ``ledger`` holds a ``ShortJobRecord`` per finished pod: the ground truth a test
    compares with. ``compact_keep`` (if set) compacts the store's history to the newest
    ``compact_keep`` resourceVersions after every tick: old watch positions expire (410).
    ``step()`` does one tick synchronously (for deterministic tests); ``start()`` runs ticks in
    a thread every ``tick_seconds``. The default ``Churn`` is unchanged by this class.
    """

    def __init__(
        self,
        cluster: SimulatedCluster,
        *,
        jobs_per_tick: int = 4,
        tick_seconds: float = 0.02,
        time_scale: float = 60.0,
        duration_seconds: tuple[int, int] = (5, 55),
        gpus_per_pod: tuple[int, ...] = (1, 2),
        max_jobs: int | None = None,
        start: float | None = None,
        compact_keep: int | None = None,
        seed: int = 0,
    ) -> None:
        self.cluster = cluster
        self.jobs_per_tick = jobs_per_tick
        self.tick_seconds = tick_seconds
        self.time_scale = time_scale
        self.duration_seconds = duration_seconds
        self.gpus_per_pod = gpus_per_pod
        self.max_jobs = max_jobs
        self.compact_keep = compact_keep
        self.rng = random.Random(f"short-jobs:{cluster.world.seed}:{seed}")
        self._origin = time.monotonic()
        self._start = float(start if start is not None else time.time())
        self._virtual_offset = 0.0
        self.free = self._free_gpus()
        self.running: list[dict] = []  # {"pod", "job", "node", "gpus", "due", "scheduled"}
        self.ledger: dict[str, ShortJobRecord] = {}
        self.started = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="simulator-short-jobs", daemon=True)

    # -- clock ---------------------------------------------------------------------------------

    def now(self) -> float:
        """The virtual clock (epoch seconds)."""
        real = time.monotonic() - self._origin
        return self._start + real * self.time_scale + self._virtual_offset

    def advance(self, seconds: float) -> None:
        """Move the virtual clock forward (tests that step by hand)."""
        self._virtual_offset += seconds

    # -- running -------------------------------------------------------------------------------

    def start(self) -> ShortJobs:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(timeout=5)

    def drain(self, timeout: float = 30.0) -> None:
        """Wait until ``max_jobs`` jobs (or, without a limit, those started so far) have run,
        finished and been deleted. Without the thread running, steps by hand."""
        if self.max_jobs is None:
            self.max_jobs = self.started
        deadline = time.monotonic() + timeout
        while not self.done and time.monotonic() < deadline:
            if not self.thread.is_alive():
                self.advance(max(self.duration_seconds) + 1)
                self.step()
            else:
                time.sleep(0.02)
        if not self.done:
            raise TimeoutError(
                f"short jobs: {self.started} of {self.max_jobs} started, "
                f"{len(self.running)} still running"
            )

    @property
    def done(self) -> bool:
        return self.max_jobs is not None and self.started >= self.max_jobs and not self.running

    def _run(self) -> None:
        while not self.stopping.wait(self.tick_seconds):
            self.step()
            if self.done:
                return

    def step(self) -> None:
        """One tick: finish (and delete) due jobs, start new ones, compact if asked."""
        with self.lock:
            now = self.now()
            for entry in [e for e in self.running if e["due"] <= now]:
                self._finish(entry)
            for _ in range(self.jobs_per_tick):
                if self.max_jobs is not None and self.started >= self.max_jobs:
                    break
                if not self._start_job(now):
                    break
            if self.compact_keep is not None:
                store = self.cluster.store
                store.compact(store.rv - self.compact_keep)

    # -- the world -----------------------------------------------------------------------------

    def _free_gpus(self) -> dict[str, int]:
        """Whole GPUs free per schedulable node, after the pods that hold some."""
        free: dict[str, int] = {}
        for node in self.cluster.objects("nodes"):
            if node.get("spec", {}).get("unschedulable"):
                continue
            labels = node["metadata"].get("labels") or {}
            if labels.get(MIG_STRATEGY) == "single":
                continue  # its nvidia.com/gpu are MIG slices, not whole GPUs
            if labels.get(SHARING_STRATEGY, "none") != "none" or labels.get("gpu") == "on":
                continue  # replicas of shared GPUs (time-slicing, MPS, HAMi), not whole GPUs
            allocatable = (node.get("status") or {}).get("allocatable") or {}
            if GPU in allocatable:
                free[node["metadata"]["name"]] = int(allocatable[GPU])
        for pod in self.cluster.objects("pods"):
            node = pod.get("spec", {}).get("nodeName")
            if node not in free or pod["status"].get("phase") in ("Succeeded", "Failed"):
                continue
            for container in pod["spec"].get("containers", []):
                requests = (container.get("resources") or {}).get("requests") or {}
                limits = (container.get("resources") or {}).get("limits") or {}
                free[node] -= int(requests.get(GPU, limits.get(GPU, 0)))
        return {name: count for name, count in sorted(free.items()) if count > 0}

    def _start_job(self, now: float) -> bool:
        gpus = self.rng.choice(self.gpus_per_pod)
        nodes = [name for name, count in self.free.items() if count >= gpus]
        if not nodes:
            return False
        node = self.rng.choice(nodes)
        self.free[node] -= gpus
        self.started += 1
        job_name = f"sweep-lr-{self.started:05d}"
        created = timestamp(now)
        job = self.cluster.put(
            "jobs",
            {
                "metadata": {
                    "name": job_name,
                    "namespace": SHORT_JOB_NAMESPACE,
                    "creationTimestamp": created,
                    "labels": {"app.kubernetes.io/part-of": "lr-sweep"},
                    "annotations": {"simulator.annex.dev/simulated": "true"},
                },
                "spec": {"parallelism": 1, "completions": 1, "ttlSecondsAfterFinished": 0},
                "status": {"startTime": created, "active": 1},
            },
        )
        job_uid = job["metadata"]["uid"]
        owner = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": job_name,
            "uid": job_uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
        pod_name = f"{job_name}-{self.rng.randrange(36**5):05x}"
        resources = {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}}
        pod = self.cluster.put(
            "pods",
            {
                "metadata": {
                    "name": pod_name,
                    "namespace": SHORT_JOB_NAMESPACE,
                    "creationTimestamp": created,
                    "labels": {"job-name": job_name, "batch.kubernetes.io/job-name": job_name},
                    "annotations": {"simulator.annex.dev/simulated": "true"},
                    "ownerReferences": [owner],
                },
                "spec": {
                    "containers": [{"name": "trial", "image": SWEEP_IMAGE, "resources": resources}],
                    "restartPolicy": "Never",
                    "schedulerName": "default-scheduler",
                },
                "status": {"phase": "Pending", "qosClass": "BestEffort"},
            },
        )
        # Bound a (virtual) second later, running right after: each a write of its own.
        scheduled = timestamp(now + 1)
        pod["spec"]["nodeName"] = node
        pod["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled}
        ]
        pod = self.cluster.put("pods", pod)
        pod["status"].update(phase="Running", startTime=scheduled)
        pod["status"]["containerStatuses"] = [
            {"name": "trial", "ready": True, "state": {"running": {"startedAt": scheduled}}}
        ]
        pod = self.cluster.put("pods", pod)
        duration = self.rng.randint(*self.duration_seconds)
        self.running.append(
            {
                "pod": pod,
                "job": job_name,
                "node": node,
                "gpus": gpus,
                "scheduled": scheduled,
                "due": now + 1 + duration,
            }
        )
        return True

    def _finish(self, entry: dict) -> None:
        pod = entry["pod"]
        finished = timestamp(max(entry["due"], self._parse(entry["scheduled"])))
        status = pod["status"]
        status["phase"] = "Succeeded"
        status["containerStatuses"] = [
            {
                "name": "trial",
                "ready": False,
                "state": {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": entry["scheduled"],
                        "finishedAt": finished,
                    }
                },
            }
        ]
        meta = pod["metadata"]
        self.cluster.put("pods", pod)
        self.cluster.delete("pods", meta["name"], SHORT_JOB_NAMESPACE)
        self.cluster.delete("jobs", entry["job"], SHORT_JOB_NAMESPACE)
        self.running.remove(entry)
        self.free[entry["node"]] += entry["gpus"]
        seconds = int(self._parse(finished) - self._parse(entry["scheduled"]))
        self.ledger[meta["uid"]] = ShortJobRecord(
            pod_uid=meta["uid"],
            namespace=SHORT_JOB_NAMESPACE,
            pod_name=meta["name"],
            job_name=entry["job"],
            node_name=entry["node"],
            gpus=entry["gpus"],
            scheduled_at=entry["scheduled"],
            finished_at=finished,
            deleted=True,
            gpu_seconds=entry["gpus"] * seconds,
        )

    @staticmethod
    def _parse(value: str) -> float:
        return calendar.timegm(time.strptime(value, "%Y-%m-%dT%H:%M:%SZ"))

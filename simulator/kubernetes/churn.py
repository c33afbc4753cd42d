"""A present that keeps changing: training jobs finish and new ones start on the freed nodes.

Each tick makes one change through the store, so lists and watches see it with a new RV:
  - a running training job finishes: its pods become Succeeded, the Job Complete, an Event;
  - a new job starts on the nodes a finished job freed (so no node is ever over-allocated);
  - a running pod's status is refreshed (MODIFIED without a phase change).
"""

from __future__ import annotations

import copy
import random
import threading
import time
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

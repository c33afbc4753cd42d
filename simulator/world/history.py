"""The world's past: every object as the API server would have served it at an earlier moment.

`build_world` makes one present: nodes, pods and Jobs with their own timestamps, counted back
from `world.now`. A deployment of annex would not have met that present first; it would have
collected the cluster every hour for weeks. `WorldHistory` derives a seeded past of
`history_days` from the present (which stays exactly as built, so every test of the present
holds) and answers `objects_at(t)`: what a list would have returned at `t`.

What the past holds:
- objects exist from their `creationTimestamp` (nodes that joined during the month appear
  then; pods, Jobs and events too) and until they are deleted;
- the present's cordoned and NotReady nodes were schedulable and Ready before their taints'
  `timeAdded`; other nodes had cordon and NotReady episodes that ended before now;
- the present's finished pods were Running before their `finishedAt`, finished Jobs active;
- GPU nodes were busy before their present pods started: earlier pods of the same kinds
  (research and inference pods that came and went, balloons that grew and shrank) held their
  GPUs, each deleted a while after it ended. Earlier training Jobs are not invented: a training
  run needs its lineage and Job to agree (`simulator.lineage`), so an earlier one would be a
  research pod here.

Every object's states are computed once (`Lifecycle`); `objects_at` is a bisect per object.
"""

from __future__ import annotations

import bisect
import calendar
import random
import time
from dataclasses import dataclass, field
from datetime import datetime

import orjson

from simulator.world.model import World, timestamp

HISTORY_DAYS = 30
"""Days of past the demo replays by default."""

HOUR = 3600.0
DAY = 86400.0

_GPU_PREFIXES = ("nvidia.com/",)
_CORDON_TAINT = "node.kubernetes.io/unschedulable"
_NOT_READY_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
_JOB_LABELS = ("batch.kubernetes.io/", "job-name", "controller-uid", "training.")


def epoch(text: str | None) -> float | None:
    """An RFC 3339 `...Z` timestamp (second precision, as the world writes them) as epoch
    seconds; None for None."""
    if not text:
        return None
    return float(calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")))


@dataclass
class Lifecycle:
    """One object over time: from `appears` until `gone` (None: still there at the present),
    served as `states[i][1]` from `states[i][0]` on (ascending; the first from `appears`)."""

    plural: str
    appears: float
    gone: float | None
    states: list[tuple[float, dict]] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)

    def at(self, moment: float) -> dict | None:
        if moment < self.appears or (self.gone is not None and moment >= self.gone):
            return None
        index = bisect.bisect_right(self.starts, moment) - 1
        return self.states[max(0, index)][1]


class WorldHistory:
    """The seeded past of `world` over `days` before `world.now` (see the module's doc)."""

    def __init__(self, world: World, days: int = HISTORY_DAYS) -> None:
        if days < 0:
            raise ValueError(f"history days must be >= 0, got {days}")
        self.world = world
        self.days = days
        self.now = world.now.timestamp()
        self.start = self.now - days * DAY
        self.rng = random.Random(f"annex-simulator-history:{world.seed}:{days}")
        self.lifecycles: list[Lifecycle] = []
        # (node, the pod as it ran, started, ended, template): every GPU pod of the past that
        # ran on a node and no longer runs at the present (earlier pods, the present's
        # finished ones); the template (namespace, name) names the present pod it copies (the
        # same spec and labels: the activity computes its devices once per template); what
        # the GPUs' past activity is computed from (simulator.world.activity)
        self.past_gpu_pods: list[tuple[str, dict, float, float, tuple[str, str]]] = []
        self._build()
        # the world's telemetry reads its past from here: attach it, and let the activity
        # (cached per world) be computed again with it
        world.history = self
        if world.activity_cache:
            world.activity_cache.pop("activity", None)

    # ---- reads --------------------------------------------------------------------

    def objects_at(self, moment: datetime | float) -> dict[str, list[dict]]:
        """Every object, by resource plural, as a list at `moment` would have returned it
        (the present objects themselves from `world.now` on)."""
        t = moment if isinstance(moment, int | float) else moment.timestamp()
        out: dict[str, list[dict]] = {plural: [] for plural in self.world.objects()}
        for lifecycle in self.lifecycles:
            obj = lifecycle.at(t)
            if obj is not None:
                out[lifecycle.plural].append(obj)
        return out

    def moments(self, step_hours: float) -> list[datetime]:
        """The scheduled collections of the past: every `step_hours` from `days` before now,
        the present excluded (it is the demo's own collection)."""
        step = step_hours * HOUR
        count = int((self.now - self.start) // step)
        moments = [self.start + i * step for i in range(count + 1)]
        return [
            datetime.fromtimestamp(m, tz=self.world.now.tzinfo) for m in moments if m < self.now
        ]

    # ---- building -----------------------------------------------------------------

    def _build(self) -> None:
        for plural, items in self.world.objects().items():
            for obj in items:
                appears = epoch(obj["metadata"].get("creationTimestamp")) or float("-inf")
                if plural == "nodes":
                    lifecycle = self._node(obj, appears)
                elif plural == "pods":
                    lifecycle = self._pod(obj, appears)
                elif plural == "jobs":
                    lifecycle = self._job(obj, appears)
                else:
                    lifecycle = Lifecycle(plural, appears, None, [(appears, obj)])
                self._add(lifecycle)
        self._earlier_pods()

    def _add(self, lifecycle: Lifecycle) -> None:
        lifecycle.states.sort(key=lambda state: state[0])
        lifecycle.starts = [state[0] for state in lifecycle.states]
        self.lifecycles.append(lifecycle)

    def _node(self, node: dict, appears: float) -> Lifecycle:
        """The present node, and before it the node without its present cordon or NotReady
        taints; some nodes had a cordon or NotReady episode earlier that ended."""
        taints = node["spec"].get("taints") or []
        cordoned = bool(node["spec"].get("unschedulable"))
        cordon_since = _taint_added(taints, (_CORDON_TAINT,)) if cordoned else None
        down_since = _taint_added(taints, _NOT_READY_TAINTS)
        if cordoned and cordon_since is None:
            cordon_since = appears  # cordoned as far back as the API can tell
        present = sorted(m for m in (cordon_since, down_since) if m is not None)
        present_from = max(appears, present[0]) if present else self.now
        states: list[tuple[float, dict]] = []
        first = max(appears, self.start)
        roll = self.rng.random()
        if roll < 0.06 and present_from - first > 3 * DAY:
            cordon = roll < 0.04
            length = self.rng.uniform(4, 48) * HOUR if cordon else self.rng.uniform(1, 8) * HOUR
            begin = self.rng.uniform(first, present_from - length - HOUR)
            states.append((begin, _node_state(node, cordon, not cordon, begin)))
            states.append((begin + length, _node_state(node, False, False, None)))
        if not states and not present:
            return Lifecycle("nodes", appears, None, [(appears, node)])
        states.insert(0, (appears, _node_state(node, False, False, None)))
        for moment in present:
            if moment > appears:
                states.append(
                    (
                        moment,
                        _node_state(
                            node,
                            cordon_since is not None and cordon_since <= moment,
                            down_since is not None and down_since <= moment,
                            moment,
                        ),
                    )
                )
            else:
                states[0] = (appears, node)
        states.append((max(appears, self.now), node))
        return Lifecycle("nodes", appears, None, states)

    def _pod(self, pod: dict, appears: float) -> Lifecycle:
        """The present pod; a finished one ran until its `finishedAt`."""
        status = pod.get("status") or {}
        phase = status.get("phase")
        states: list[tuple[float, dict]] = [(appears, pod)]
        if phase in ("Succeeded", "Failed"):
            finished = _finished(pod)
            started = epoch(status.get("startTime"))
            if finished is not None and started is not None and finished > appears:
                running = _pod_running(pod)
                states = [(appears, running), (finished, pod)]
                node = pod["spec"].get("nodeName")
                if node and finished > started and _gpu_pod(pod):
                    key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
                    self.past_gpu_pods.append((node, running, started, finished, key))
        return Lifecycle("pods", appears, None, states)

    def _job(self, job: dict, appears: float) -> Lifecycle:
        """The present Job; a finished one was active until it finished."""
        status = job.get("status") or {}
        done = status.get("completionTime") or next(
            (
                c.get("lastTransitionTime")
                for c in status.get("conditions") or ()
                if c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
            ),
            None,
        )
        finished = epoch(done)
        if finished is None or finished <= appears:
            return Lifecycle("jobs", appears, None, [(appears, job)])
        active = _copy(job)
        active_status = active["status"]
        for key in ("completionTime", "conditions", "succeeded", "failed", "completedIndexes"):
            active_status.pop(key, None)
        active_status["active"] = int(job["spec"].get("parallelism") or 1)
        active_status["ready"] = active_status["active"]
        return Lifecycle("jobs", appears, None, [(appears, active), (finished, job)])

    def _earlier_pods(self) -> None:
        """GPU pods before each GPU node's present ones: copies of one of the node's present
        GPU pods (same resources, same owner kind), one after another with idle gaps."""
        by_node: dict[str, list[dict]] = {}
        for pod in self.world.pods:
            node = pod["spec"].get("nodeName")
            if node and _gpu_pod(pod) and (pod.get("status") or {}).get("startTime"):
                by_node.setdefault(node, []).append(pod)
        created = {
            n["metadata"]["name"]: epoch(n["metadata"]["creationTimestamp"]) or 0.0
            for n in self.world.nodes
        }
        for node in sorted(by_node):
            pods = by_node[node]
            busy_from = min(epoch(p["status"]["startTime"]) or self.now for p in pods)
            template = self.rng.choice(sorted(pods, key=lambda p: p["metadata"]["name"]))
            clock = max(self.start - self.rng.uniform(0, 2) * DAY, (created[node] or 0.0) + 600)
            number = 0
            while clock < busy_from - 2 * HOUR:
                length = self.rng.uniform(6, 72) * HOUR
                end = min(clock + length, busy_from - HOUR)
                if end - clock < HOUR:
                    break
                number += 1
                self._add(self._earlier_pod(template, node, number, clock, end))
                clock = end + self.rng.uniform(1, 12) * HOUR

    def _earlier_pod(
        self, template: dict, node: str, number: int, begin: float, end: float
    ) -> Lifecycle:
        """One earlier pod on `node` from `begin` to `end`: a balloon (ReplicaSet in the
        capacity namespace) is scaled away at `end`; any other pod finishes then and is deleted
        a day or two later. A Job's pod becomes a research pod (see the module's doc)."""
        begin, end = float(int(begin)), float(int(end))  # the API's timestamps are seconds
        pod = _copy(template)
        metadata = pod["metadata"]
        owner = (metadata.get("ownerReferences") or [{}])[0].get("kind")
        if owner == "Job":
            metadata["namespace"] = "research"
            metadata.pop("ownerReferences", None)
            metadata.pop("generateName", None)
            metadata["labels"] = {
                k: v
                for k, v in (metadata.get("labels") or {}).items()
                if not any(k.startswith(prefix) for prefix in _JOB_LABELS)
            }
            metadata["labels"]["app.kubernetes.io/name"] = "experiment"
            name = f"experiment-{node[-12:].strip('-')}-{number}"
        else:
            name = f"{metadata['name'][:40]}-h{number}"
        metadata["name"] = name
        metadata["uid"] = _uid(self.rng)
        metadata["creationTimestamp"] = timestamp(begin)
        metadata.pop("deletionTimestamp", None)
        metadata.pop("deletionGracePeriodSeconds", None)
        pod["spec"]["nodeName"] = node
        started = begin + self.rng.randint(5, 120)
        running = _pod_running(pod, started)
        key = (template["metadata"]["namespace"], template["metadata"]["name"])
        self.past_gpu_pods.append((node, running, float(int(started)), end, key))
        balloon = metadata["namespace"].startswith("capacity")
        if balloon:
            return Lifecycle("pods", begin, end, [(begin, running)])
        failed = self.rng.random() < 0.1
        finished = _pod_finished(pod, started, end, failed)
        # finished pods stay listed a while (a Job's TTL in this world is a day), so that
        # a scheduled snapshot sees them with their own timestamps
        gone = min(float(int(end + self.rng.uniform(24, 48) * HOUR)), self.now)
        return Lifecycle("pods", begin, gone, [(begin, running), (end, finished)])


# ---- patches ---------------------------------------------------------------------------


def _taint_added(taints: list[dict], keys: tuple[str, ...]) -> float | None:
    added = [epoch(t.get("timeAdded")) for t in taints if t.get("key") in keys]
    found = [a for a in added if a is not None]
    return min(found) if found else None


def _node_state(node: dict, cordoned: bool, down: bool, since: float | None) -> dict:
    """`node` schedulable or cordoned, Ready or not (its kubelet silent) as of `since`."""
    state = _copy(node)
    spec = state["spec"]
    taints = [
        t
        for t in spec.get("taints") or ()
        if t.get("key") != _CORDON_TAINT and t.get("key") not in _NOT_READY_TAINTS
    ]
    spec.pop("unschedulable", None)
    added = timestamp(since) if since is not None else None
    if cordoned:
        spec["unschedulable"] = True
        taints.append({"key": _CORDON_TAINT, "effect": "NoSchedule", "timeAdded": added})
    if down:
        for effect in ("NoSchedule", "NoExecute"):
            taints.append(
                {"key": "node.kubernetes.io/unreachable", "effect": effect, "timeAdded": added}
            )
    if taints:
        spec["taints"] = taints
    else:
        spec.pop("taints", None)
    for condition in state["status"].get("conditions") or ():
        if down:
            condition.update(
                status="Unknown",
                reason="NodeStatusUnknown",
                message="Kubelet stopped posting node status.",
                lastTransitionTime=added,
            )
        elif condition["type"] == "Ready":
            condition.update(
                status="True", reason="KubeletReady", message="kubelet is posting ready status"
            )
        else:
            condition["status"] = "False"
            condition["reason"] = {
                "MemoryPressure": "KubeletHasSufficientMemory",
                "DiskPressure": "KubeletHasNoDiskPressure",
                "PIDPressure": "KubeletHasSufficientPID",
            }.get(condition["type"], condition.get("reason"))
    return state


def _gpu_pod(pod: dict) -> bool:
    return any(
        name.startswith(_GPU_PREFIXES)
        for container in pod["spec"].get("containers") or ()
        for name in ((container.get("resources") or {}).get("requests") or {})
    )


def _finished(pod: dict) -> float | None:
    ends = [
        epoch(((s.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        for s in (pod.get("status") or {}).get("containerStatuses") or ()
    ]
    found = [e for e in ends if e is not None]
    return max(found) if found else None


def _pod_running(pod: dict, started: float | None = None) -> dict:
    """`pod` Running with its containers started (at `started`, or its own start)."""
    state = _copy(pod)
    status = state.setdefault("status", {})
    if started is not None:
        status["startTime"] = timestamp(started)
    since = status.get("startTime")
    status["phase"] = "Running"
    status.pop("reason", None)
    status.pop("message", None)
    for condition in status.get("conditions") or ():
        if condition["type"] in ("Ready", "ContainersReady", "PodReadyToStartContainers"):
            condition["status"] = "True"
            condition.pop("reason", None)
            condition.pop("message", None)
        if since:
            condition["lastTransitionTime"] = since
    for container in status.get("containerStatuses") or ():
        container["state"] = {"running": {"startedAt": since}}
        container["ready"] = True
        container["started"] = True
    return state


def _pod_finished(pod: dict, started: float, finished: float, failed: bool) -> dict:
    """`pod` Succeeded (or Failed) at `finished`, having run since `started`."""
    state = _pod_running(pod, started)
    status = state["status"]
    status["phase"] = "Failed" if failed else "Succeeded"
    for condition in status.get("conditions") or ():
        if condition["type"] in ("Ready", "ContainersReady", "PodReadyToStartContainers"):
            condition["status"] = "False"
            condition["reason"] = "PodCompleted"
            condition["lastTransitionTime"] = timestamp(finished)
    for container in status.get("containerStatuses") or ():
        container["state"] = {
            "terminated": {
                "exitCode": 1 if failed else 0,
                "reason": "Error" if failed else "Completed",
                "startedAt": timestamp(started),
                "finishedAt": timestamp(finished),
                "containerID": container.get("containerID", ""),
            }
        }
        container["ready"] = False
        container["started"] = False
    return state


def _copy(obj: dict) -> dict:
    """A deep copy of a JSON object (through orjson: far cheaper than copy.deepcopy)."""
    return orjson.loads(orjson.dumps(obj))  # type: ignore[no-any-return]


def _uid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"

"""The pod log subresource, `GET /api/v1/namespaces/{ns}/pods/{name}/log`, as upstream answers.

The API server validates `PodLogOptions` (422 Invalid), resolves the container
(`validateContainer` in pkg/registry/core/pod/strategy.go: 400 BadRequest), answers an
unscheduled pod with an empty body, and otherwise proxies to the kubelet, whose errors
(`validateContainerLogStatus`) come back as 400 BadRequest with the kubelet's text. The
kubelet applies `tailLines` first, then the since-filter, then prefixes RFC 3339 nano
timestamps, and stops after `limitBytes` bytes (mid-line if need be). The body is
`text/plain`.

Log text lives in the world (`World.pod_logs[(namespace, pod)]`) and belongs to the pod's
first container; other containers have empty logs. Line times are not stored: they are
spread evenly over the container's run (`simulator.world.model.log_line_times`), ending at
`finishedAt` or, for a running container, at the world's clock.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from simulator.kubernetes import errors
from simulator.kubernetes.lists import parse_bool
from simulator.world.model import log_line_times

CONTENT_TYPE = "text/plain"


@dataclass(frozen=True)
class LogOptions:
    """core/v1 PodLogOptions, from the query string."""

    container: str = ""
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    since_seconds: int | None = None
    since_time: float | None = None  # epoch seconds
    tail_lines: int | None = None
    limit_bytes: int | None = None

    @classmethod
    def from_query(cls, query: dict[str, list[str]], pod: str) -> LogOptions:
        """Parse (400 on a malformed value) and validate (422 Invalid, kind PodLogOptions)."""
        options = cls(
            container=_first(query, "container") or "",
            follow=parse_bool(query.get("follow")),
            previous=parse_bool(query.get("previous")),
            timestamps=parse_bool(query.get("timestamps")),
            since_seconds=_integer(query, "sinceSeconds"),
            since_time=_time(query, "sinceTime"),
            tail_lines=_integer(query, "tailLines"),
            limit_bytes=_integer(query, "limitBytes"),
        )
        options.validate(pod)
        return options

    def validate(self, pod: str) -> None:
        """ValidatePodLogOptions (pkg/apis/core/validation)."""
        causes: list[tuple[str, str, str]] = []
        if self.tail_lines is not None and self.tail_lines < 0:
            causes.append(
                (
                    "tailLines",
                    "FieldValueInvalid",
                    f"Invalid value: {self.tail_lines}: must be greater than or equal to 0",
                )
            )
        if self.limit_bytes is not None and self.limit_bytes < 1:
            causes.append(
                (
                    "limitBytes",
                    "FieldValueInvalid",
                    f"Invalid value: {self.limit_bytes}: must be greater than 0",
                )
            )
        if self.since_seconds is not None and self.since_time is not None:
            causes.append(
                (
                    "",
                    "FieldValueForbidden",
                    "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
                )
            )
        elif self.since_seconds is not None and self.since_seconds < 1:
            causes.append(
                (
                    "sinceSeconds",
                    "FieldValueInvalid",
                    f"Invalid value: {self.since_seconds}: must be greater than 0",
                )
            )
        if causes:
            raise errors.invalid("PodLogOptions", "", pod, causes)


def pod_log(
    pod: dict, options: LogOptions, logs: Mapping[tuple[str, str], str], now: float
) -> bytes:
    """The body the API server streams for this pod and these options, or an ApiError."""
    metadata, spec = pod["metadata"], pod["spec"]
    name = metadata["name"]
    container = _resolve_container(spec, name, options.container)
    if not spec.get("nodeName"):
        return b""  # LogLocation: no node, no location, an empty stream
    status = _container_status(pod, container)
    if status is None:
        raise errors.bad_request(
            f'container "{container}" in pod "{name}" is waiting to start - no logs yet'
        )
    state = status.get("state") or {}
    if options.previous:
        previous = (status.get("lastState") or {}).get("terminated")
        if not previous or not previous.get("containerID"):
            raise errors.bad_request(
                f'previous terminated container "{container}" in pod "{name}" not found'
            )
        return b""  # the simulated world keeps no logs of earlier instances
    running, terminated, waiting = (
        state.get("running"),
        state.get("terminated"),
        state.get("waiting"),
    )
    if running:
        started, finished = _epoch(running["startedAt"]), now
    elif terminated:
        started, finished = _epoch(terminated["startedAt"]), _epoch(terminated["finishedAt"])
    elif waiting:
        reason = waiting.get("reason", "")
        raise errors.bad_request(
            f'container "{container}" in pod "{name}" is waiting to start: {reason}'
        )
    else:
        raise errors.bad_request(
            f'container "{container}" in pod "{name}" is waiting to start - no logs yet'
        )
    first = spec["containers"][0]["name"]
    text = logs.get((metadata["namespace"], name), "") if container == first else ""
    return render(text, started, finished, options, now)


def render(text: str, started: float, finished: float, options: LogOptions, now: float) -> bytes:
    """What the kubelet writes: tail, since-filter, timestamps, byte limit, in that order."""
    lines = text.splitlines()
    times = log_line_times(started, finished, len(lines))
    pairs = list(zip(times, lines, strict=True))
    if options.tail_lines is not None:
        pairs = pairs[max(0, len(pairs) - options.tail_lines) :] if options.tail_lines else []
    since = options.since_time
    if options.since_seconds is not None:
        since = now - options.since_seconds
    if since is not None:
        cutoff = int(since * 1_000_000_000)
        pairs = [(t, line) for t, line in pairs if t >= cutoff]
    if options.timestamps:
        body = "".join(f"{rfc3339_nano(t)} {line}\n" for t, line in pairs)
    else:
        body = "".join(f"{line}\n" for _t, line in pairs)
    data = body.encode()
    if options.limit_bytes is not None:
        data = data[: options.limit_bytes]
    return data


def rfc3339_nano(nanoseconds: int) -> str:
    """Go's time.RFC3339Nano in UTC: trailing zeros of the fraction dropped, `Z`."""
    seconds, fraction = divmod(nanoseconds, 1_000_000_000)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    digits = f"{fraction:09d}".rstrip("0")
    return f"{text}.{digits}Z" if digits else f"{text}Z"


def _resolve_container(spec: dict, pod: str, wanted: str) -> str:
    """validateContainer: the only container by default, else the caller must name one."""
    containers = spec.get("containers") or []
    every = [
        c["name"]
        for c in (
            *(spec.get("initContainers") or ()),
            *containers,
            *(spec.get("ephemeralContainers") or ()),
        )
    ]
    if not wanted:
        if len(containers) == 1:
            return containers[0]["name"]
        if not containers:
            raise errors.bad_request(f"a container name must be specified for pod {pod}")
        raise errors.bad_request(
            f"a container name must be specified for pod {pod}, choose one of: [{' '.join(every)}]"
        )
    if wanted not in every:
        raise errors.bad_request(f"container {wanted} is not valid for pod {pod}")
    return wanted


def _container_status(pod: dict, container: str) -> dict | None:
    status = pod.get("status") or {}
    for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for entry in status.get(key) or ():
            if entry.get("name") == container:
                return entry
    return None


def _first(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values else None


def _integer(query: dict[str, list[str]], name: str) -> int | None:
    text = _first(query, name)
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise errors.bad_request(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None


def _time(query: dict[str, list[str]], name: str) -> float | None:
    text = _first(query, name)
    if not text:
        return None
    try:
        return _epoch(text)
    except ValueError:
        raise errors.bad_request(
            f'parsing time "{text}" as "2006-01-02T15:04:05Z07:00": cannot parse "{text}" as "2006"'
        ) from None


def _epoch(text: str) -> float:
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(text)
    return moment.timestamp()

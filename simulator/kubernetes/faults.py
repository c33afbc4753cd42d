"""Injected faults: what a real API server or network does to a client on a bad day.

A `Fault` matches requests by path prefix, resource (a plural such as "pods"; the pod log
subresource is "pods/log"), method and whether they watch; it
fires on the next `times` matching requests (after letting `skip` pass; `times=None` means
without end), each time with `probability` under the cluster's seeded RNG.

kinds:
  status      answer `status` instead: 429 is text/plain with `Retry-After: 1` and the APF
              headers; 5xx and others are `kind: Status` JSON
  expire      the continue token of this list request is expired: 410 Expired with an
              inconsistent continue token (rv=-1); requests without `continue` do not match
  truncate    send the headers (full Content-Length) and `truncate_fraction` of the body,
              then close the connection
  slow        sleep `delay_seconds` before the response (`slow_phase="before"`) or after
              half of the body (`slow_phase="body"`)
  disconnect  close the connection without answering
"""

from __future__ import annotations

import random
import threading
from dataclasses import asdict, dataclass, fields

KINDS = ("status", "expire", "truncate", "slow", "disconnect")


@dataclass
class Fault:
    kind: str
    status: int = 429
    path_prefix: str = ""
    resource: str | None = None  # plural, e.g. "pods", or "pods/log"
    method: str | None = "GET"
    watch: bool | None = None  # None: watches and non-watches alike
    times: int | None = 1  # None: every match, subject to probability
    skip: int = 0  # let this many matching requests through first
    probability: float = 1.0
    delay_seconds: float = 1.0
    slow_phase: str = "before"  # "before" | "body"
    truncate_fraction: float = 0.5

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {KINDS}")
        if self.slow_phase not in ("before", "body"):
            raise ValueError("slow_phase must be 'before' or 'body'")

    @classmethod
    def from_dict(cls, data: dict) -> Fault:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown fault fields: {sorted(unknown)}")
        return cls(**data)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RequestFacts:
    """What a fault may match on."""

    method: str
    path: str
    resource: str | None
    watch: bool
    has_continue: bool


class FaultSet:
    """The active faults of one cluster; thread-safe; consumes counts as faults fire."""

    def __init__(self, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self._faults: list[list] = []  # [fault, skipped, fired]
        self._rng = random.Random(f"faults:{seed}")

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append([fault, 0, 0])
        return fault

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def active(self) -> list[Fault]:
        with self._lock:
            return [entry[0] for entry in self._faults]

    def match(self, request: RequestFacts) -> Fault | None:
        with self._lock:
            for entry in self._faults:
                fault: Fault = entry[0]
                if not _applies(fault, request):
                    continue
                if entry[1] < fault.skip:
                    entry[1] += 1
                    continue
                if fault.times is not None and entry[2] >= fault.times:
                    continue
                if fault.probability < 1.0 and self._rng.random() >= fault.probability:
                    continue
                entry[2] += 1
                return fault
            return None


def _applies(fault: Fault, request: RequestFacts) -> bool:
    if fault.method and fault.method.upper() != request.method:
        return False
    if fault.path_prefix and not request.path.startswith(fault.path_prefix):
        return False
    if fault.resource and fault.resource != request.resource:
        return False
    if fault.watch is not None and fault.watch != request.watch:
        return False
    return not (fault.kind == "expire" and not request.has_continue)

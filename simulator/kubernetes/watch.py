"""Watch streams: chunked NDJSON of ADDED/MODIFIED/DELETED/BOOKMARK/ERROR (reference §1.5–1.6).

Start point: rv unset or "0" sends synthetic ADDED events for the current state first; rv=X
sends only changes after X, or one in-stream 410 ERROR when X is older than the compacted
history. `sendInitialEvents=true` (WatchList) sends the initial ADDEDs and then a BOOKMARK
annotated `k8s.io/initial-events-end: "true"`. With selectors, an object that starts or
stops matching arrives as ADDED or DELETED, as the watch cache does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from simulator.kubernetes.lists import ListOptions, parse_resource_version
from simulator.kubernetes.resources import ResourceType
from simulator.kubernetes.selectors import Selection
from simulator.kubernetes.store import Store, Version

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@dataclass
class WatchSettings:
    bookmark_interval_seconds: float = 1.0
    default_timeout_seconds: float = 1800.0
    initial_batch_bytes: int = 1 << 20


class WatchStream:
    """Writes one watch to `send` (a chunk writer) until timeout, stop, or client gone."""

    def __init__(
        self,
        store: Store,
        resource: ResourceType,
        namespace: str | None,
        options: ListOptions,
        selection: Selection,
        settings: WatchSettings,
        stopping: threading.Event,
    ) -> None:
        self.store = store
        self.resource = resource
        self.namespace = namespace
        self.options = options
        self.selection = selection
        self.settings = settings
        self.stopping = stopping
        self.prefix = f'{{"kind":"{resource.kind}","apiVersion":"{resource.api_version}",'.encode()

    def run(self, send: Callable[[bytes], None]) -> None:
        options = self.options
        timeout = options.timeout_seconds or self.settings.default_timeout_seconds
        deadline = time.monotonic() + timeout
        rv_text = options.resource_version
        initial = rv_text in ("", "0") and options.send_initial_events is not False
        if initial:
            snapshot = self.store.snapshot(self.resource.plural)
            last = snapshot.rv
            self._send_initial(send, snapshot.versions)
            if options.send_initial_events:
                send(self._bookmark(last, initial_end=True))
        elif rv_text in ("", "0"):
            last = self.store.rv
        else:
            last = parse_resource_version(rv_text)
            if options.send_initial_events:  # NotOlderThan X: state at >= X, then bookmark
                snapshot = self.store.snapshot(self.resource.plural)
                last = snapshot.rv
                self._send_initial(send, snapshot.versions)
                send(self._bookmark(last, initial_end=True))
            elif last < self.store.compacted_rv:
                send(self._too_old(last))
                return
        next_bookmark = time.monotonic() + self.settings.bookmark_interval_seconds
        while not self.stopping.is_set():
            now = time.monotonic()
            if now >= deadline:
                return
            if last < self.store.compacted_rv:
                send(self._too_old(last))
                return
            changes = self.store.changes_after(self.resource.plural, last)
            if changes:
                lines = [line for change in changes if (line := self._event(change))]
                last = changes[-1].rv
                if lines:
                    send(b"".join(lines))
                continue
            if options.allow_bookmarks and now >= next_bookmark:
                last = max(last, self.store.rv)
                send(self._bookmark(last))
                next_bookmark = now + self.settings.bookmark_interval_seconds
            wait = min(deadline, next_bookmark if options.allow_bookmarks else deadline) - now
            self.store.wait_for_change(max(0.01, min(wait, 0.5)))

    def _send_initial(self, send: Callable[[bytes], None], versions: list[Version]) -> None:
        batch: list[bytes] = []
        size = 0
        for version in versions:
            if not self._in_scope(version):
                continue
            line = self._line("ADDED", version.data)
            batch.append(line)
            size += len(line)
            if size >= self.settings.initial_batch_bytes:
                send(b"".join(batch))
                batch, size = [], 0
        if batch:
            send(b"".join(batch))

    def _in_scope(self, version: Version) -> bool:
        if self.namespace is not None and version.obj["metadata"].get("namespace") != (
            self.namespace
        ):
            return False
        return self.selection.empty or self.selection.matches(version.labels, version.fields)

    def _event(self, change) -> bytes | None:
        now_in = self._in_scope(change.version) if change.type != "DELETED" else False
        before = change.previous is not None and self._in_scope(change.previous)
        if change.type == "DELETED":
            return self._line("DELETED", change.version.data) if before else None
        if now_in and before:
            return self._line("MODIFIED", change.version.data)
        if now_in:
            return self._line("ADDED", change.version.data)
        if before:  # left the selection: the previous state at this event's RV
            last = dict(change.previous.obj)
            last["metadata"] = {**last["metadata"], "resourceVersion": str(change.rv)}
            return self._line("DELETED", orjson.dumps(last))
        return None

    def _line(self, kind: str, data: bytes) -> bytes:
        return b'{"type":"' + kind.encode() + b'","object":' + self.prefix + data[1:] + b"}\n"

    def _bookmark(self, rv: int, initial_end: bool = False) -> bytes:
        metadata: dict = {"resourceVersion": str(rv)}
        if initial_end:
            metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
        body = {
            "kind": self.resource.kind,
            "apiVersion": self.resource.api_version,
            "metadata": metadata,
        }
        return orjson.dumps({"type": "BOOKMARK", "object": body}) + b"\n"

    def _too_old(self, rv: int) -> bytes:
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f"too old resource version: {rv} ({self.store.compacted_rv})",
            "reason": "Expired",
            "code": 410,
        }
        return orjson.dumps({"type": "ERROR", "object": status}) + b"\n"

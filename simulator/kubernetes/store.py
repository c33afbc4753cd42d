"""An MVCC object store with one global resourceVersion, like etcd behind the API server.

Every change bumps the global RV and appends a version to the object's history, so a paged
list at RV X stays consistent while objects change between pages. Each version is
serialised once (orjson) when written; lists are built by joining those bytes. Compaction
drops history older than an RV: lists and continue tokens at older RVs then answer 410.
"""

from __future__ import annotations

import bisect
import copy
import gc
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

import orjson

from simulator.kubernetes.resources import BY_PLURAL, ResourceType


@dataclass(slots=True, eq=False)
class Version:
    """One state of one object: its bytes (item form, no kind/apiVersion) and selector data."""

    key: str
    rv: int
    obj: dict
    data: bytes
    labels: dict[str, str]
    fields: dict[str, str]
    deleted: bool = False


@dataclass(slots=True, eq=False)
class Change:
    """A watch event: what changed at `rv`, with the state before it (None for ADDED)."""

    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    version: Version
    previous: Version | None


@dataclass(eq=False)
class Snapshot:
    """The live objects of one resource at one RV, sorted by key (etcd order)."""

    rv: int
    keys: list[str]
    versions: list[Version]


@dataclass(eq=False)
class ResourceStore:
    resource: ResourceType
    history: dict[str, list[Version]] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)  # every key with history, sorted
    changes: list[Change] = field(default_factory=list)
    change_rvs: list[int] = field(default_factory=list)
    last_change_rv: int = 0
    current: Snapshot | None = None
    snapshots: OrderedDict[int, Snapshot] = field(default_factory=OrderedDict)


def object_key(resource: ResourceType, obj: dict) -> str:
    metadata = obj["metadata"]
    if resource.namespaced:
        return f"{metadata['namespace']}/{metadata['name']}"
    return metadata["name"]


class Store:
    """All resources; one lock, one condition that wakes watchers on every change."""

    SNAPSHOTS_KEPT = 8

    def __init__(self, objects: dict[str, list[dict]], resource_version: int) -> None:
        self.changed = threading.Condition(threading.RLock())
        self.rv = resource_version
        self.compacted_rv = resource_version  # history before the initial state is gone
        self.resources: dict[str, ResourceStore] = {
            plural: ResourceStore(resource) for plural, resource in BY_PLURAL.items()
        }
        collecting = gc.isenabled()
        gc.disable()  # as in build_world: ~100k versions, no cycles
        try:
            for plural, items in objects.items():
                store = self.resources[plural]
                for obj in items:
                    rv = int(obj["metadata"]["resourceVersion"])
                    version = self._version(store.resource, obj, rv)
                    store.history[version.key] = [version]
                    store.last_change_rv = max(store.last_change_rv, version.rv)
                store.keys = sorted(store.history)
                self.rv = max(self.rv, store.last_change_rv)
        finally:
            if collecting:
                gc.enable()
        self.compacted_rv = self.rv

    @staticmethod
    def _version(resource: ResourceType, obj: dict, rv: int, deleted: bool = False) -> Version:
        return Version(
            key=object_key(resource, obj),
            rv=rv,
            obj=obj,
            data=orjson.dumps(obj),
            labels=obj["metadata"].get("labels") or {},
            fields=resource.fields(obj),
            deleted=deleted,
        )

    # ---- reads --------------------------------------------------------------------

    def snapshot(self, plural: str, rv: int | None = None) -> Snapshot:
        """Live objects at `rv` (default: now). Callers check `rv >= compacted_rv` first."""
        with self.changed:
            store = self.resources[plural]
            if rv is None or rv >= store.last_change_rv:
                # unchanged since last_change_rv: the same objects, labelled with the RV asked
                rv = self.rv if rv is None else rv
                if store.current is None:
                    store.current = self._build(store, rv)
                if rv != store.current.rv:
                    store.current = Snapshot(rv, store.current.keys, store.current.versions)
                return store.current
            cached = store.snapshots.get(rv)
            if cached is not None:
                store.snapshots.move_to_end(rv)
                return cached
            snapshot = self._build(store, rv)
            store.snapshots[rv] = snapshot
            while len(store.snapshots) > self.SNAPSHOTS_KEPT:
                store.snapshots.popitem(last=False)
            return snapshot

    @staticmethod
    def _build(store: ResourceStore, rv: int) -> Snapshot:
        keys: list[str] = []
        versions: list[Version] = []
        history = store.history
        for key in store.keys:
            chain = history[key]
            version = chain[-1]
            if version.rv > rv:
                version = next((v for v in reversed(chain) if v.rv <= rv), None)
                if version is None:
                    continue
            if version.deleted:
                continue
            keys.append(key)
            versions.append(version)
        return Snapshot(rv, keys, versions)

    def get(self, plural: str, key: str) -> Version | None:
        with self.changed:
            chain = self.resources[plural].history.get(key)
            if not chain or chain[-1].deleted:
                return None
            return chain[-1]

    def changes_after(self, plural: str, rv: int) -> list[Change]:
        with self.changed:
            store = self.resources[plural]
            start = bisect.bisect_right(store.change_rvs, rv)
            return store.changes[start:]

    def wait_for_change(self, timeout: float) -> None:
        with self.changed:
            self.changed.wait(timeout)

    def wait_for_rv(self, rv: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self.changed:
            while self.rv < rv:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(left)
            return True

    # ---- writes -------------------------------------------------------------------

    def put(self, plural: str, obj: dict) -> dict:
        """Create or replace an object; returns the stored copy with its new RV."""
        resource = self.resources[plural].resource
        obj = copy.deepcopy(obj)
        obj.pop("kind", None)
        obj.pop("apiVersion", None)
        metadata = obj.setdefault("metadata", {})
        if resource.namespaced:
            metadata.setdefault("namespace", "default")
        with self.changed:
            store = self.resources[plural]
            key = object_key(resource, obj)
            chain = store.history.get(key)
            previous = chain[-1] if chain and not chain[-1].deleted else None
            if previous is None:
                metadata.setdefault("uid", str(uuid.uuid4()))
                metadata.setdefault(
                    "creationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                )
            else:
                metadata["uid"] = previous.obj["metadata"]["uid"]
                metadata.setdefault(
                    "creationTimestamp", previous.obj["metadata"].get("creationTimestamp")
                )
            self.rv += 1
            metadata["resourceVersion"] = str(self.rv)
            version = self._version(resource, obj, self.rv)
            self._append(store, version, "MODIFIED" if previous else "ADDED", previous)
            return obj

    def delete(self, plural: str, key: str) -> dict | None:
        """Delete an object; watchers get DELETED with its last state at the deletion RV."""
        with self.changed:
            store = self.resources[plural]
            chain = store.history.get(key)
            if not chain or chain[-1].deleted:
                return None
            previous = chain[-1]
            self.rv += 1
            last = copy.deepcopy(previous.obj)
            last["metadata"]["resourceVersion"] = str(self.rv)
            tombstone = self._version(store.resource, last, self.rv, deleted=True)
            self._append(store, tombstone, "DELETED", previous)
            return last

    def _append(self, store: ResourceStore, version: Version, kind: str, previous) -> None:
        chain = store.history.get(version.key)
        if chain is None:
            store.history[version.key] = [version]
            bisect.insort(store.keys, version.key)
        else:
            chain.append(version)
        store.changes.append(Change(version.rv, kind, version, previous))
        store.change_rvs.append(version.rv)
        store.last_change_rv = version.rv
        store.current = None
        self.changed.notify_all()

    def bump(self) -> int:
        """Advance the RV without changing any served object (a Lease renewal, say)."""
        with self.changed:
            self.rv += 1
            self.changed.notify_all()
            return self.rv

    def compact(self, rv: int) -> None:
        """Forget history before `rv`: older lists, continue tokens and watches get 410."""
        with self.changed:
            rv = min(rv, self.rv)
            if rv <= self.compacted_rv:
                return
            self.compacted_rv = rv
            for store in self.resources.values():
                dropped_keys = False
                for key, chain in list(store.history.items()):
                    if len(chain) == 1 and not chain[0].deleted:
                        continue
                    keep_from = 0
                    for i, version in enumerate(chain):
                        if version.rv <= rv:
                            keep_from = i
                    del chain[:keep_from]
                    if len(chain) == 1 and chain[0].deleted and chain[0].rv <= rv:
                        del store.history[key]
                        dropped_keys = True
                if dropped_keys:
                    store.keys = sorted(store.history)
                start = bisect.bisect_right(store.change_rvs, rv)
                del store.changes[:start]
                del store.change_rvs[:start]
                for old in [r for r in store.snapshots if r < rv]:
                    del store.snapshots[old]
            self.changed.notify_all()

    def live_objects(self, plural: str) -> list[dict]:
        return [v.obj for v in self.snapshot(plural).versions]

    def counts(self) -> dict[str, int]:
        return {
            plural: len(self.snapshot(plural).versions)
            for plural, store in self.resources.items()
            if store.resource.listable
        }

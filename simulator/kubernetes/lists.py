"""List semantics: ListOptions parsing and validation, the resourceVersion matrix, paging.

Reference §1.2–1.4 and §1.7: which snapshot a list reads (most recent, any, exact, not
older than, continue token), how `limit`/`continue`/`remainingItemCount` behave, and the
400/410/422/504 answers for the cases the API server rejects.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import threading
import time
from dataclasses import dataclass

import orjson

from simulator.kubernetes import errors
from simulator.kubernetes.resources import ResourceType
from simulator.kubernetes.selectors import Selection
from simulator.kubernetes.store import Snapshot, Store

TOKEN_VERSION = "meta.k8s.io/v1"
EXACT = "Exact"
NOT_OLDER_THAN = "NotOlderThan"


def parse_bool(values: list[str] | None) -> bool:
    """apimachinery's rule: only a missing value, `0` or `false` (any case) are false."""
    if not values:
        return False
    return not (values[0] == "0" or values[0].lower() == "false")


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
        raise errors.bad_request(
            f'unable to parse quantity\'s suffix: strconv.ParseInt: parsing "{text}": '
            "invalid syntax"
        ) from None


@dataclass(frozen=True)
class ListOptions:
    resource_version: str  # "" when unset
    match: str  # "" when unset
    limit: int  # 0: no limit
    continue_token: str
    label_selector: str
    field_selector: str
    watch: bool
    allow_bookmarks: bool
    send_initial_events: bool | None
    timeout_seconds: int | None

    @classmethod
    def from_query(cls, query: dict[str, list[str]], watch_path: bool = False) -> ListOptions:
        send = query.get("sendInitialEvents")
        return cls(
            resource_version=_first(query, "resourceVersion") or "",
            match=_first(query, "resourceVersionMatch") or "",
            limit=max(0, _integer(query, "limit") or 0),
            continue_token=_first(query, "continue") or "",
            label_selector=_first(query, "labelSelector") or "",
            field_selector=_first(query, "fieldSelector") or "",
            watch=watch_path or parse_bool(query.get("watch")),
            allow_bookmarks=parse_bool(query.get("allowWatchBookmarks")),
            send_initial_events=None if send is None else parse_bool(send),
            timeout_seconds=_integer(query, "timeoutSeconds"),
        )

    def validate(self) -> None:
        """ListOptions validation: 422 Invalid, kind ListOptions (apimachinery)."""
        causes: list[tuple[str, str, str]] = []
        field = "resourceVersionMatch"
        if self.watch:
            if self.send_initial_events is not None and self.match != NOT_OLDER_THAN:
                causes.append(
                    (
                        field,
                        "FieldValueForbidden",
                        "Forbidden: sendInitialEvents "
                        f"requires setting resourceVersionMatch to {NOT_OLDER_THAN}",
                    )
                )
            if self.match:
                if self.send_initial_events is None:
                    causes.append(
                        (
                            field,
                            "FieldValueForbidden",
                            "Forbidden: "
                            "resourceVersionMatch is forbidden for watch unless "
                            "sendInitialEvents is provided",
                        )
                    )
                if self.match != NOT_OLDER_THAN:
                    causes.append(
                        (
                            field,
                            "FieldValueNotSupported",
                            f'Unsupported value: "{self.match}": supported values: '
                            f'"{NOT_OLDER_THAN}"',
                        )
                    )
                if self.continue_token:
                    causes.append(
                        (
                            field,
                            "FieldValueForbidden",
                            "Forbidden: "
                            "resourceVersionMatch is forbidden when continue is "
                            "provided",
                        )
                    )
        else:
            if self.send_initial_events is not None:
                causes.append(
                    (
                        "sendInitialEvents",
                        "FieldValueForbidden",
                        "Forbidden: sendInitialEvents is forbidden for list",
                    )
                )
            if self.match:
                if not self.resource_version:
                    causes.append(
                        (
                            field,
                            "FieldValueForbidden",
                            "Forbidden: "
                            "resourceVersionMatch is forbidden unless resourceVersion "
                            "is provided",
                        )
                    )
                if self.continue_token:
                    causes.append(
                        (
                            field,
                            "FieldValueForbidden",
                            "Forbidden: "
                            "resourceVersionMatch is forbidden when continue is "
                            "provided",
                        )
                    )
                if self.match not in (EXACT, NOT_OLDER_THAN):
                    causes.append(
                        (
                            field,
                            "FieldValueNotSupported",
                            f'Unsupported value: "{self.match}": supported values: '
                            f'"{EXACT}", "{NOT_OLDER_THAN}"',
                        )
                    )
                if self.match == EXACT and self.resource_version == "0":
                    causes.append(
                        (
                            field,
                            "FieldValueForbidden",
                            "Forbidden: "
                            'resourceVersionMatch "exact" is forbidden for '
                            'resourceVersion "0"',
                        )
                    )
        if causes:
            raise errors.invalid_list_options(causes)


def parse_resource_version(text: str) -> int:
    try:
        value = int(text)
        if value < 0:
            raise ValueError
        return value
    except ValueError:
        raise errors.bad_request(
            f'resourceVersion: Invalid value: "{text}": strconv.ParseUint: parsing '
            f'"{text}": invalid syntax'
        ) from None


def encode_continue(rv: int, start: str) -> str:
    raw = orjson.dumps({"v": TOKEN_VERSION, "rv": rv, "start": start})
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_continue(token: str) -> tuple[int, str]:
    """(rv, start key); rv -1 means "continue from the latest state"."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
    except (binascii.Error, ValueError, orjson.JSONDecodeError) as error:
        raise errors.bad_request(f"continue key is not valid: {error}") from None
    if not isinstance(data, dict) or data.get("v") != TOKEN_VERSION:
        raise errors.bad_request(
            f"continue key is not valid: server does not recognize this encoded key "
            f"(version {TOKEN_VERSION})"
        )
    rv = data.get("rv")
    start = data.get("start")
    if not isinstance(rv, int) or rv == 0:
        raise errors.bad_request(
            "continue key is not valid: incorrect encoded start "
            "resourceVersion (version meta.k8s.io/v1)"
        )
    if not isinstance(start, str) or not start:
        raise errors.bad_request("continue key is not valid: encoded start key empty")
    if start.startswith("/") or ".." in start.split("/"):
        raise errors.bad_request("continue key is not valid: invalid start key")
    return rv, start


@dataclass
class Page:
    body: bytes
    snapshot_rv: int
    cache_key: tuple | None  # identical key -> identical body (for the gzip cache)


@dataclass
class ListSettings:
    continue_ttl_seconds: float = 300.0
    rv0_ignores_limit: bool = True  # the watch cache before 1.34 (KEP-4988)
    too_large_wait_seconds: float = 1.0


class Lister:
    """Answers list requests from the store, and remembers when continue tokens were issued."""

    def __init__(self, store: Store, settings: ListSettings) -> None:
        self.store = store
        self.settings = settings
        self._issued: dict[int, float] = {}  # token RV -> first issue (monotonic)
        self._lock = threading.Lock()

    def expire_tokens(self) -> None:
        """Compaction: every continue token issued so far now answers 410."""
        self.store.compact(self.store.bump())
        with self._lock:
            self._issued.clear()

    def list(
        self,
        resource: ResourceType,
        namespace: str | None,
        options: ListOptions,
        selection: Selection,
        force_expire: bool = False,
    ) -> Page:
        limit = options.limit
        start = ""
        rv_text = options.resource_version
        if options.continue_token:
            if rv_text not in ("", "0"):
                raise errors.bad_request(
                    "specifying resource version is not allowed when using continue"
                )
            token_rv, start = decode_continue(options.continue_token)
            if force_expire or self._expired(token_rv):
                raise errors.expired(errors.INCONSISTENT_CONTINUE, encode_continue(-1, start))
            if token_rv == -1:
                snapshot = self.store.snapshot(resource.plural)
            else:
                self._wait_for(token_rv)
                snapshot = self.store.snapshot(resource.plural, token_rv)
        elif rv_text == "0":
            snapshot = self.store.snapshot(resource.plural)
            if self.settings.rv0_ignores_limit:
                limit = 0
        elif rv_text == "":
            snapshot = self.store.snapshot(resource.plural)
        else:
            wanted = parse_resource_version(rv_text)
            exact = options.match == EXACT or (not options.match and limit > 0)
            self._wait_for(wanted)
            if exact:
                if wanted < self.store.compacted_rv:
                    raise errors.expired(errors.LIST_TOO_OLD)
                snapshot = self.store.snapshot(resource.plural, wanted)
            else:
                snapshot = self.store.snapshot(resource.plural)
        return self._page(resource, namespace, snapshot, start, limit, selection, options)

    def _expired(self, token_rv: int) -> bool:
        if token_rv == -1:
            return False
        if token_rv < self.store.compacted_rv:
            return True
        if token_rv >= self.store.rv:
            # Nothing was written since: etcd's compaction always keeps the latest revision,
            # so a snapshot at the current resourceVersion cannot expire, however old.
            return False
        with self._lock:
            issued = self._issued.get(token_rv)
        return issued is not None and time.monotonic() - issued > self.settings.continue_ttl_seconds

    def _wait_for(self, rv: int) -> None:
        if rv > self.store.rv and not self.store.wait_for_rv(
            rv, self.settings.too_large_wait_seconds
        ):
            raise errors.too_large_resource_version(rv, self.store.rv)

    def _page(
        self,
        resource: ResourceType,
        namespace: str | None,
        snapshot: Snapshot,
        start: str,
        limit: int,
        selection: Selection,
        options: ListOptions,
    ) -> Page:
        keys = snapshot.keys
        prefix = f"{namespace}/" if namespace is not None and resource.namespaced else ""
        low, high = 0, len(keys)
        if prefix:
            low = bisect.bisect_left(keys, prefix)
            high = bisect.bisect_left(keys, prefix[:-1] + "0", low)  # "0" sorts after "/"
        begin = bisect.bisect_left(keys, prefix + start, low, high) if start else low
        versions = snapshot.versions
        if selection.empty:
            end = high if limit <= 0 else min(high, begin + limit)
            chosen = versions[begin:end]
        else:
            chosen = []
            end = begin
            while end < high and (limit <= 0 or len(chosen) < limit):
                version = versions[end]
                if selection.matches(version.labels, version.fields):
                    chosen.append(version)
                end += 1
        metadata: dict = {"resourceVersion": str(snapshot.rv)}
        if limit > 0 and end < high:
            metadata["continue"] = encode_continue(snapshot.rv, keys[end - 1][len(prefix) :] + "\0")
            with self._lock:
                self._issued.setdefault(snapshot.rv, time.monotonic())
            if selection.empty:
                metadata["remainingItemCount"] = high - end
        head = (
            b'{"kind":"'
            + resource.list_kind.encode()
            + b'","apiVersion":"'
            + resource.api_version.encode()
            + b'","metadata":'
            + orjson.dumps(metadata)
            + b',"items":['
        )
        # one join, one copy: [head, item, ",", item, ..., "]}"]
        parts = [head]
        for version in chosen:
            parts.append(version.data)
            parts.append(b",")
        if chosen:
            parts.pop()
        parts.append(b"]}")
        body = b"".join(parts)
        cache_key = (
            resource.plural,
            snapshot.rv,
            prefix,
            begin,
            limit,
            options.label_selector,
            options.field_selector,
        )
        return Page(body, snapshot.rv, cache_key)

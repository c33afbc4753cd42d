"""The HTTP layer: routing, auth, content negotiation, gzip, faults, the request log.

`http.server.ThreadingHTTPServer` with HTTP/1.1 keep-alive: one thread per connection,
which suits both clients (urllib3 pools, Go's transport) and long watch streams. Response
bodies are assembled from pre-serialised bytes and written with one `sendall`.
"""

from __future__ import annotations

import hmac
import http
import socket
import ssl
import threading
import time
import uuid
import zlib
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import orjson

from simulator.http import TrackingHTTPServer, hang_up, read_body
from simulator.kubernetes import discovery, errors, logs
from simulator.kubernetes.faults import Fault, FaultSet, RequestFacts
from simulator.kubernetes.lists import Lister, ListOptions
from simulator.kubernetes.resources import BY_GROUP_VERSION, BY_PLURAL, ResourceType
from simulator.kubernetes.selectors import FieldRequirement, Selection, parse_selection
from simulator.kubernetes.store import Store, object_key
from simulator.kubernetes.watch import WatchSettings, WatchStream

GZIP_THRESHOLD = 128 * 1024  # the API server compresses responses above 128 KiB
ADMIN_PREFIX = "/_simulator/"
FLOW_SCHEMA_UID = "5a3c1e1e-7d0f-4a5e-9a51-0a11e5000001"
PRIORITY_LEVEL_UID = "9b2d4f6a-1c3e-4b5d-8e7f-0a11e5000002"
USER = "system:serviceaccount:annex:collector"


@dataclass
class RequestRecord:
    """One request the server answered (admin requests under /_simulator/ are not logged)."""

    method: str
    path: str
    query: dict[str, list[str]]
    status: int
    started: float  # epoch seconds
    duration_seconds: float
    user_agent: str
    headers: dict[str, str] = field(default_factory=dict)  # without Authorization
    fault: str | None = None
    bytes_sent: int = 0


@dataclass
class _Route:
    kind: str  # "discovery" | "list" | "get" | "log" | "forbidden"
    document: dict | None = None
    resource: ResourceType | None = None
    namespace: str | None = None
    name: str | None = None
    watch_path: bool = False


class _GzipCache:
    """Compressed list pages by identity: the same page at the same RV is the same bytes."""

    def __init__(self, budget_bytes: int = 256 << 20) -> None:
        self.budget = budget_bytes
        self.used = 0
        self.items: OrderedDict[tuple, bytes] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple | None, body: bytes) -> bytes:
        if key is not None:
            with self.lock:
                hit = self.items.get(key)
                if hit is not None:
                    self.items.move_to_end(key)
                    return hit
        compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
        packed = compressor.compress(body) + compressor.flush()
        if key is not None:
            with self.lock:
                self.items[key] = packed
                self.used += len(packed)
                while self.used > self.budget and self.items:
                    _, old = self.items.popitem(last=False)
                    self.used -= len(old)
        return packed


class _Exchange:
    """Writes one response on the handler's socket, applying an injected fault if any."""

    def __init__(
        self,
        handler: BaseHTTPRequestHandler,
        fault: Fault | None,
        on_answer: Callable[[_Exchange], None] | None = None,
        date: str | None = None,
    ) -> None:
        self.handler = handler
        self.fault = fault
        self.date = date  # the HTTP Date header: the server's clock when the request came
        self.status = 0
        self.bytes_sent = 0
        self.on_answer = on_answer  # called once, just before the first byte goes out

    def _answering(self, status: int) -> None:
        self.status = status
        if self.on_answer is not None:
            self.on_answer(self)
            self.on_answer = None

    def _head(self, status: int, headers: dict[str, str]) -> bytes:
        phrase = http.HTTPStatus(status).phrase
        lines = [f"HTTP/1.1 {status} {phrase}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def send(
        self,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self._answering(status)
        all_headers = {
            **({"Date": self.date} if self.date else {}),
            "Audit-Id": str(uuid.uuid4()),
            "Cache-Control": "no-cache, private",
            "Content-Type": content_type,
            "X-Kubernetes-Pf-Flowschema-Uid": FLOW_SCHEMA_UID,
            "X-Kubernetes-Pf-Prioritylevel-Uid": PRIORITY_LEVEL_UID,
            **(headers or {}),
            "Content-Length": str(len(body)),
        }
        head = self._head(status, all_headers)
        sock = self.handler.connection
        fault = self.fault
        if fault and fault.kind == "slow" and fault.slow_phase == "before":
            time.sleep(fault.delay_seconds)
        if fault and fault.kind == "truncate":
            cut = int(len(body) * fault.truncate_fraction)
            sock.sendall(head + body[:cut])
            self.bytes_sent = cut
            self.handler.close_connection = True
            hang_up(sock)
            return
        if fault and fault.kind == "slow" and fault.slow_phase == "body":
            half = len(body) // 2
            sock.sendall(head + body[:half])
            time.sleep(fault.delay_seconds)
            sock.sendall(body[half:])
        elif len(body) < 65536:
            sock.sendall(head + body)
        else:
            sock.sendall(head)
            sock.sendall(body)
        self.bytes_sent = len(body)

    def start_stream(self, headers: dict[str, str]) -> None:
        self._answering(200)
        head = self._head(
            200,
            {
                **({"Date": self.date} if self.date else {}),
                "Audit-Id": str(uuid.uuid4()),
                "Cache-Control": "no-cache, private",
                "Content-Type": "application/json",
                "X-Kubernetes-Pf-Flowschema-Uid": FLOW_SCHEMA_UID,
                "X-Kubernetes-Pf-Prioritylevel-Uid": PRIORITY_LEVEL_UID,
                **headers,
                "Transfer-Encoding": "chunked",
            },
        )
        if self.fault and self.fault.kind == "slow":
            time.sleep(self.fault.delay_seconds)
        self.handler.connection.sendall(head)

    def chunk(self, data: bytes) -> None:
        if not data:
            return
        self.handler.connection.sendall(b"%x\r\n" % len(data) + data + b"\r\n")
        self.bytes_sent += len(data)
        if self.fault and self.fault.kind == "truncate":
            self.handler.close_connection = True
            hang_up(self.handler.connection)
            raise ConnectionAbortedError("truncated by fault")

    def end_stream(self) -> None:
        self.handler.connection.sendall(b"0\r\n\r\n")


def acceptable(accept: str | None) -> bool:
    """JSON is acceptable unless every media range asks for something else (Table, protobuf)."""
    if not accept:
        return True
    for media_range in accept.split(","):
        parts = [p.strip() for p in media_range.split(";")]
        media = parts[0].lower()
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        if media in ("*/*", "application/*"):
            return True
        if media == "application/json" and "as" not in params:
            return True
    return False


class ApiServer:
    """The simulated API server's request handling, independent of the socket server."""

    def __init__(
        self,
        store: Store,
        lister: Lister,
        faults: FaultSet,
        token: str,
        watch_settings: WatchSettings,
        max_records: int = 200_000,
        pod_logs: Mapping[tuple[str, str], str] | None = None,
        clock: Callable[[], float] = time.time,
        date_clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        # the clock of the HTTP Date header (a real API server's wall clock; the simulated
        # cluster's settable clock when it replays the world's past)
        self.date_clock = date_clock
        self.pod_logs: Mapping[tuple[str, str], str] = pod_logs if pod_logs is not None else {}
        self.clock = clock  # "now" for sinceSeconds and running containers' logs
        self.lister = lister
        self.faults = faults
        self.token = token
        self.watch_settings = watch_settings
        self.records: deque[RequestRecord] = deque(maxlen=max_records)
        self.records_lock = threading.Lock()
        self.stopping = threading.Event()
        self.gzip_cache = _GzipCache()
        self.address = "127.0.0.1:0"

    # ---- entry point ------------------------------------------------------------------

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        started = time.time()
        clock = time.perf_counter()
        url = urlsplit(handler.path)
        path = url.path
        query = parse_qs(url.query, keep_blank_values=True)
        body = read_body(handler)
        if path.startswith(ADMIN_PREFIX):
            self._admin(handler, path, body)
            return
        headers = {k: v for k, v in handler.headers.items() if k.lower() != "authorization"}
        record = RequestRecord(
            method=handler.command,
            path=path,
            query=query,
            status=0,
            started=started,
            duration_seconds=0.0,
            user_agent=handler.headers.get("User-Agent", ""),
            headers=headers,
        )

        def log(exchange: _Exchange) -> None:
            # logged before the answer leaves, so a client that has its answer finds the record
            record.status = exchange.status
            record.fault = exchange.fault.kind if exchange.fault else None
            record.duration_seconds = time.perf_counter() - clock
            with self.records_lock:
                self.records.append(record)

        exchange = _Exchange(handler, None, log, formatdate(self.date_clock(), usegmt=True))
        try:
            self._serve(handler, exchange, path, query)
        except errors.ApiError as error:
            exchange.send(error.code, error.body(), headers=error.headers)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            handler.close_connection = True
        finally:
            if exchange.on_answer is not None:  # nothing was sent (a disconnect fault)
                exchange.on_answer(exchange)
            record.duration_seconds = time.perf_counter() - clock
            record.bytes_sent = exchange.bytes_sent

    def _authorised(self, handler: BaseHTTPRequestHandler) -> bool:
        given = handler.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode())

    def _serve(
        self, handler: BaseHTTPRequestHandler, exchange: _Exchange, path: str, query: dict
    ) -> None:
        if path in ("/healthz", "/livez", "/readyz"):
            exchange.send(200, b"ok", "text/plain; charset=utf-8")
            return
        if path == "/version":  # public, as system:public-info-viewer allows
            exchange.send(200, orjson.dumps(discovery.SERVER_VERSION))
            return
        if not self._authorised(handler):
            raise errors.unauthorized()
        route = self._route(path)
        if route is not None and route.kind == "log":  # PodLogOptions, not ListOptions
            options = ListOptions.from_query({})
            resource = "pods/log"
        else:
            options = ListOptions.from_query(query, route.watch_path if route else False)
            resource = route.resource.plural if route and route.resource else None
        fault = self.faults.match(
            RequestFacts(
                method=handler.command,
                path=path,
                resource=resource,
                watch=options.watch,
                has_continue=bool(options.continue_token),
            )
        )
        exchange.fault = fault
        if fault is not None:
            if fault.kind == "disconnect":
                handler.close_connection = True
                hang_up(handler.connection)
                return
            if fault.kind == "status":
                self._injected_status(exchange, fault.status)
                return
        if route is not None and route.kind == "log":  # a text stream: no media negotiation
            if handler.command != "GET":
                raise errors.method_not_allowed()
            self._log(exchange, route, query)
            return
        if not acceptable(handler.headers.get("Accept")):
            raise errors.not_acceptable()
        if route is None:
            raise errors.path_not_found()
        if handler.command != "GET":
            raise errors.method_not_allowed()
        if route.kind == "discovery":
            self._send_json(handler, exchange, orjson.dumps(route.document), None)
        elif route.kind == "forbidden":
            assert route.resource is not None
            raise errors.forbidden(route.resource.plural, route.namespace, USER)
        elif route.kind == "get" and not options.watch:
            self._get(handler, exchange, route)
        else:
            self._list_or_watch(handler, exchange, route, options, fault)

    def _injected_status(self, exchange: _Exchange, code: int) -> None:
        if code == 429:
            exchange.send(
                429,
                errors.TOO_MANY_REQUESTS.encode(),
                "text/plain; charset=utf-8",
                {"Retry-After": "1", "X-Content-Type-Options": "nosniff"},
            )
            return
        error = errors.server_error(code)
        exchange.send(error.code, error.body(), headers=error.headers)

    # ---- routing ----------------------------------------------------------------------

    def _route(self, path: str) -> _Route | None:
        parts = [p for p in path.split("/") if p]
        if path == "/version":
            return _Route("discovery", discovery.SERVER_VERSION)
        if not parts:
            return None
        if parts[0] == "api":
            if len(parts) == 1:
                return _Route("discovery", discovery.api_versions(self.address))
            group_version, rest = parts[1], parts[2:]
        elif parts[0] == "apis":
            if len(parts) == 1:
                return _Route("discovery", discovery.api_group_list())
            if len(parts) == 2:
                group = discovery.api_group(parts[1])
                return _Route("discovery", group) if group else None
            group_version, rest = f"{parts[1]}/{parts[2]}", parts[3:]
        else:
            return None
        resources = BY_GROUP_VERSION.get(group_version)
        if resources is None:
            return None
        if not rest:
            return _Route("discovery", discovery.api_resource_list(group_version))
        watch_path = rest[0] == "watch"
        if watch_path:
            rest = rest[1:]
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if (
            len(rest) == 3
            and rest[0] == "pods"
            and rest[2] == "log"
            and namespace is not None
            and not watch_path
            and "pods" in resources
        ):
            return _Route("log", None, resources["pods"], namespace, rest[1])
        if not rest or len(rest) > 2 or rest[0] not in resources:
            return None
        resource = resources[rest[0]]
        if namespace is not None and not resource.namespaced:
            return None
        name = rest[1] if len(rest) == 2 else None
        if name is not None and resource.namespaced and namespace is None:
            return None
        if not resource.listable:
            return _Route("forbidden", resource=resource, namespace=namespace)
        return _Route("get" if name else "list", None, resource, namespace, name, watch_path)

    # ---- serving ----------------------------------------------------------------------

    def _send_json(
        self,
        handler: BaseHTTPRequestHandler,
        exchange: _Exchange,
        body: bytes,
        cache_key: tuple | None,
    ) -> None:
        headers: dict[str, str] = {}
        if len(body) > GZIP_THRESHOLD and "gzip" in handler.headers.get("Accept-Encoding", ""):
            body = self.gzip_cache.get(cache_key, body)
            headers["Content-Encoding"] = "gzip"
        exchange.send(200, body, headers=headers)

    def _get(self, handler: BaseHTTPRequestHandler, exchange: _Exchange, route: _Route) -> None:
        resource = route.resource
        assert resource is not None and route.name is not None
        key = f"{route.namespace}/{route.name}" if resource.namespaced else route.name
        version = self.store.get(resource.plural, key)
        if version is None:
            raise errors.not_found(resource.plural, route.name, resource.group)
        body = (
            f'{{"kind":"{resource.kind}","apiVersion":"{resource.api_version}",'.encode()
            + version.data[1:]
        )
        self._send_json(handler, exchange, body, None)

    def _log(self, exchange: _Exchange, route: _Route, query: dict) -> None:
        """GET pods/{name}/log: options first (as LogREST.Get), then the pod, then its log."""
        assert route.name is not None and route.namespace is not None
        options = logs.LogOptions.from_query(query, route.name)
        version = self.store.get("pods", f"{route.namespace}/{route.name}")
        if version is None:
            raise errors.not_found("pods", route.name)
        body = logs.pod_log(version.obj, options, self.pod_logs, self.clock())
        exchange.send(200, body, logs.CONTENT_TYPE)

    def _list_or_watch(
        self,
        handler: BaseHTTPRequestHandler,
        exchange: _Exchange,
        route: _Route,
        options: ListOptions,
        fault: Fault | None,
    ) -> None:
        resource = route.resource
        assert resource is not None
        options.validate()
        selection = parse_selection(options.label_selector, options.field_selector, resource)
        if route.name is not None:
            selection = Selection(
                selection.labels,
                (*selection.fields, FieldRequirement("metadata.name", "=", route.name)),
            )
        if options.watch:
            stream = WatchStream(
                self.store,
                resource,
                route.namespace,
                options,
                selection,
                self.watch_settings,
                self.stopping,
            )
            exchange.start_stream({})
            try:
                stream.run(exchange.chunk)
                exchange.end_stream()
            except OSError:
                handler.close_connection = True
            return
        expire = fault is not None and fault.kind == "expire"
        page = self.lister.list(resource, route.namespace, options, selection, expire)
        self._send_json(handler, exchange, page.body, page.cache_key)

    # ---- admin ------------------------------------------------------------------------

    def _admin(self, handler: BaseHTTPRequestHandler, path: str, body: bytes) -> None:
        exchange = _Exchange(handler, None)
        try:
            if not self._authorised(handler):
                raise errors.unauthorized()
            result = self._admin_action(handler.command, path[len(ADMIN_PREFIX) :], body)
            exchange.send(200, orjson.dumps(result))
        except errors.ApiError as error:
            exchange.send(error.code, error.body())
        except (ValueError, TypeError, KeyError) as error:
            exchange.send(400, errors.bad_request(f"simulator admin: {error}").body())

    def _admin_action(self, method: str, action: str, body: bytes) -> object:
        parts = [p for p in action.split("/") if p]
        if parts == ["requests"]:
            if method == "DELETE":
                self.clear_requests()
                return {"cleared": True}
            return [asdict(r) for r in self.requests()]
        if parts == ["faults"]:
            if method == "POST":
                data = orjson.loads(body)
                items = data if isinstance(data, list) else [data]
                added = [self.faults.add(Fault.from_dict(item)).to_dict() for item in items]
                return {"added": added}
            if method == "DELETE":
                self.faults.clear()
                return {"cleared": True}
            return [f.to_dict() for f in self.faults.active()]
        if parts == ["compact"] and method == "POST":
            self.lister.expire_tokens()
            return {"compactedResourceVersion": str(self.store.compacted_rv)}
        if parts == ["counts"]:
            return self.store.counts()
        if parts and parts[0] == "objects" and len(parts) >= 2 and parts[1] in BY_PLURAL:
            plural = parts[1]
            if method in ("POST", "PUT"):
                return self.store.put(plural, orjson.loads(body))
            if method == "DELETE" and len(parts) in (3, 4):
                key = "/".join(parts[2:])
                deleted = self.store.delete(plural, key)
                if deleted is None:
                    raise errors.not_found(plural, parts[-1])
                return deleted
        raise errors.path_not_found()

    def requests(self) -> list[RequestRecord]:
        with self.records_lock:
            return list(self.records)

    def clear_requests(self) -> None:
        with self.records_lock:
            self.records.clear()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "annex-simulator"
    server: _HttpServer

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()  # here, in the connection's thread, not in accept()
        super().setup()
        self.server.track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, add=False)

    def _dispatch(self) -> None:
        self.server.api.handle(self)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the request log is `ApiServer.records`."""


class _HttpServer(TrackingHTTPServer):
    def __init__(
        self, address: tuple[str, int], api: ApiServer, tls: ssl.SSLContext | None = None
    ) -> None:
        self.api = api
        self.tls = tls
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, object]:
        connection, address = self.socket.accept()
        if self.tls is not None:
            connection = self.tls.wrap_socket(
                connection, server_side=True, do_handshake_on_connect=False
            )
        return connection, address


def object_key_for(plural: str, obj: dict) -> str:
    return object_key(BY_PLURAL[plural], obj)

"""The telemetry HTTP server: one dcgm-exporter per GPU node, and the Prometheus behind them.

::

    with TelemetryServer(world) as telemetry:
        telemetry.exporter_url("gpu-node-1")   # {url}/exporters/gpu-node-1/metrics
        telemetry.prometheus_url               # {url}/prometheus (api/v1/query_range, ...)

Endpoints:

* ``GET /exporters/{node}/metrics``: text format 0.0.4, as that node's exporter writes it
  (``exporter``); 404 ``404 page not found`` for a node without GPUs.
* ``GET|POST /prometheus/api/v1/query_range``, ``GET|POST /prometheus/api/v1/query``,
  ``GET /prometheus/api/v1/status/buildinfo`` (``prometheus``). POST takes the parameters as an
  urlencoded form (Prometheus merges form and URL parameters, the form winning).
* Admin, like the Kubernetes simulator's: ``/_simulator/faults`` (GET, POST a fault or a list,
  DELETE) and ``/_simulator/requests`` (GET, DELETE). Faults are
  ``simulator.kubernetes.faults.Fault``: ``status`` (any code; Prometheus paths answer the
  Prometheus error JSON), ``truncate``, ``slow``, ``disconnect``; match them by
  ``path_prefix`` (``/exporters/<node>/``, ``/prometheus/api/v1/query_range``) and ``method``.

With ``token`` every request (admin included) must carry ``Authorization: Bearer <token>``
or gets 401. The clock is ``time.time`` unless a test passes its own.
"""

from __future__ import annotations

import gzip
import hmac
import http
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import orjson

from simulator.http import BackgroundServer, TrackingHTTPServer, hang_up, read_body
from simulator.kubernetes.faults import Fault, FaultSet, RequestFacts
from simulator.telemetry import exporter, prometheus
from simulator.world.activity import GpuActivity, gpu_activity
from simulator.world.model import World

ADMIN_PREFIX = "/_simulator/"
GZIP_THRESHOLD = 1024
BUILD_INFO = {
    "version": "2.53.1",
    "revision": "simulated",
    "branch": "HEAD",
    "buildUser": "annex-simulator",
    "buildDate": "20240710-00:00:00",
    "goVersion": "go1.22.5",
}
_ERROR_TYPES = {400: "bad_data", 422: "execution", 503: "unavailable", 504: "timeout"}


@dataclass
class RequestRecord:
    """One request the server answered (admin requests are not logged)."""

    method: str
    path: str
    query: dict[str, list[str]]  # URL query merged with an urlencoded POST form
    status: int
    started: float
    duration_seconds: float
    user_agent: str
    headers: dict[str, str] = field(default_factory=dict)  # without Authorization
    fault: str | None = None
    bytes_sent: int = 0


class TelemetryServer(BackgroundServer["RequestRecord"]):
    """Serves the world's DCGM exporters and their Prometheus on one loopback port."""

    thread_name = "telemetry-server"

    def __init__(
        self,
        world: World,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        *,
        clock: Callable[[], float] = time.time,
        seed: int = 0,
        max_records: int = 100_000,
    ) -> None:
        self.world = world
        self.host = host
        self.token = token
        self.clock = clock
        self.faults = FaultSet(seed)
        self.activities: list[GpuActivity] = gpu_activity(world)
        self.by_node: dict[str, list[GpuActivity]] = {}
        for activity in self.activities:
            self.by_node.setdefault(activity.gpu.node, []).append(activity)
        self.node_ips = _node_ips(world)
        self._catalog: dict[str, list[prometheus.StoredSeries]] | None = None
        self._catalog_lock = threading.Lock()
        self._init_background(max_records)
        self._server = _HttpServer((host, port), self)

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def prometheus_url(self) -> str:
        return f"{self.url}/prometheus"

    def exporter_url(self, node: str) -> str:
        return f"{self.url}/exporters/{node}/metrics"

    def nodes(self) -> list[str]:
        """Nodes that run an exporter (every node with GPUs), sorted."""
        return sorted(self.by_node)

    def catalog(self) -> dict[str, list[prometheus.StoredSeries]]:
        with self._catalog_lock:
            if self._catalog is None:
                self._catalog = prometheus.build_catalog(
                    self.activities, self.node_ips, self.world.node_pools
                )
            return self._catalog

    # -- handling -----------------------------------------------------------------------

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        started, clock = time.time(), time.perf_counter()
        url = urlsplit(handler.path)
        path = url.path
        query = parse_qs(url.query, keep_blank_values=True)
        body = read_body(handler)
        content_type = handler.headers.get("Content-Type", "")
        if handler.command == "POST" and "application/x-www-form-urlencoded" in content_type:
            form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
            query = {**query, **form}
        reply = _Reply(handler)
        if path.startswith(ADMIN_PREFIX):
            self._admin(handler, reply, path[len(ADMIN_PREFIX) :], body)
            return
        record = RequestRecord(
            method=handler.command,
            path=path,
            query=query,
            status=0,
            started=started,
            duration_seconds=0.0,
            user_agent=handler.headers.get("User-Agent", ""),
            headers={k: v for k, v in handler.headers.items() if k.lower() != "authorization"},
        )

        def log(r: _Reply) -> None:  # logged before the answer leaves
            record.status = r.status
            record.fault = r.fault.kind if r.fault else None
            record.duration_seconds = time.perf_counter() - clock
            self.record(record)

        reply.on_answer = log
        try:
            self._serve(handler, reply, path, query)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            handler.close_connection = True
        finally:
            if reply.on_answer is not None:
                reply.on_answer(reply)
            record.bytes_sent = reply.bytes_sent

    def _serve(
        self, handler: BaseHTTPRequestHandler, reply: _Reply, path: str, query: dict
    ) -> None:
        if not self._authorised(handler):
            reply.send(401, b"Unauthorized\n", "text/plain; charset=utf-8")
            return
        reply.fault = self.faults.match(RequestFacts(handler.command, path, None, False, False))
        fault = reply.fault
        is_prometheus = path.startswith("/prometheus/")
        if fault is not None and fault.kind == "disconnect":
            handler.close_connection = True
            hang_up(handler.connection)
            return
        if fault is not None and fault.kind == "status":
            if is_prometheus:
                self._prom_error(reply, fault.status, f"simulated fault {fault.status}")
            else:
                phrase = http.HTTPStatus(fault.status).phrase
                reply.send(fault.status, f"{phrase}\n".encode(), "text/plain; charset=utf-8")
            return
        parts = [p for p in path.split("/") if p]
        if len(parts) == 3 and parts[0] == "exporters" and parts[2] == "metrics":
            self._metrics(handler, reply, parts[1])
        elif is_prometheus:
            self._prometheus(handler, reply, "/" + "/".join(parts[1:]), query)
        else:
            reply.send(404, b"404 page not found\n", "text/plain; charset=utf-8")

    def _authorised(self, handler: BaseHTTPRequestHandler) -> bool:
        if self.token is None:
            return True
        given = handler.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode())

    def _metrics(self, handler: BaseHTTPRequestHandler, reply: _Reply, node: str) -> None:
        if handler.command != "GET":
            reply.send(405, b"Method Not Allowed\n", "text/plain; charset=utf-8")
            return
        activities = self.by_node.get(node)
        if not activities:
            reply.send(404, b"404 page not found\n", "text/plain; charset=utf-8")
            return
        text = exporter.render(activities, self.clock(), pool=self.world.node_pools.get(node))
        reply.send(
            200,
            text.encode(),
            "text/plain; version=0.0.4; charset=utf-8",
            gzip_ok="gzip" in handler.headers.get("Accept-Encoding", ""),
        )

    def _prometheus(
        self, handler: BaseHTTPRequestHandler, reply: _Reply, path: str, query: dict
    ) -> None:
        def param(name: str) -> str:
            values = query.get(name)
            return values[0] if values else ""

        gzip_ok = "gzip" in handler.headers.get("Accept-Encoding", "")
        if path == "/api/v1/status/buildinfo" and handler.command == "GET":
            reply.send(200, orjson.dumps({"status": "success", "data": BUILD_INFO}))
            return
        if path not in ("/api/v1/query_range", "/api/v1/query"):
            reply.send(404, b"404 page not found\n", "text/plain; charset=utf-8")
            return
        if handler.command not in ("GET", "POST"):
            reply.send(405, b"Method Not Allowed\n", "text/plain; charset=utf-8")
            return
        try:
            if path == "/api/v1/query_range":
                start = prometheus.parse_time("start", param("start"))
                end = prometheus.parse_time("end", param("end"))
                step = prometheus.parse_duration("step", param("step"))
                prometheus.check_range(start, end, step)
                selector = prometheus.parse_selector(param("query"))
                # like a real Prometheus, no samples after its present (the clock)
                end = min(end, self.clock())
                series = prometheus.select(self.catalog(), selector, start, end)
                data = {
                    "resultType": "matrix",
                    "result": prometheus.evaluate_range(series, start, end, step)
                    if end >= start
                    else [],
                }
            else:
                at = param("time")
                t = prometheus.parse_time("time", at) if at else self.clock()
                selector = prometheus.parse_selector(param("query"))
                series = prometheus.select(self.catalog(), selector, t, t)
                data = {"resultType": "vector", "result": prometheus.evaluate_instant(series, t)}
        except prometheus.BadData as error:
            self._prom_error(reply, 400, str(error))
            return
        reply.send(200, orjson.dumps({"status": "success", "data": data}), gzip_ok=gzip_ok)

    def _prom_error(self, reply: _Reply, status: int, message: str) -> None:
        error_type = _ERROR_TYPES.get(status, "internal" if status >= 500 else "bad_data")
        body = orjson.dumps({"status": "error", "errorType": error_type, "error": message})
        reply.send(status, body)

    # -- admin --------------------------------------------------------------------------

    def _admin(
        self, handler: BaseHTTPRequestHandler, reply: _Reply, action: str, body: bytes
    ) -> None:
        if not self._authorised(handler):
            reply.send(401, b"Unauthorized\n", "text/plain; charset=utf-8")
            return
        method = handler.command
        try:
            if action == "faults":
                if method == "POST":
                    data = orjson.loads(body)
                    items = data if isinstance(data, list) else [data]
                    added = [self.faults.add(Fault.from_dict(i)).to_dict() for i in items]
                    result: object = {"added": added}
                elif method == "DELETE":
                    self.faults.clear()
                    result = {"cleared": True}
                else:
                    result = [f.to_dict() for f in self.faults.active()]
            elif action == "requests":
                if method == "DELETE":
                    self.clear_requests()
                    result = {"cleared": True}
                else:
                    result = [asdict(r) for r in self.requests()]
            else:
                reply.send(404, b"404 page not found\n", "text/plain; charset=utf-8")
                return
        except (ValueError, TypeError, KeyError) as error:
            reply.send(400, orjson.dumps({"error": f"simulator admin: {error}"}))
            return
        reply.send(200, orjson.dumps(result))


class _Reply:
    """Writes one response, applying the request's injected fault (truncate, slow) if any."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self.handler = handler
        self.fault: Fault | None = None
        self.status = 0
        self.bytes_sent = 0
        self.on_answer: Callable[[_Reply], None] | None = None

    def send(
        self,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        *,
        gzip_ok: bool = False,
    ) -> None:
        self.status = status
        if self.on_answer is not None:
            self.on_answer(self)
            self.on_answer = None
        headers = {"Content-Type": content_type, "Date": _http_date()}
        if gzip_ok and len(body) > GZIP_THRESHOLD:
            body = gzip.compress(body, compresslevel=1)
            headers["Content-Encoding"] = "gzip"
        headers["Content-Length"] = str(len(body))
        lines = [f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        sock, fault = self.handler.connection, self.fault
        if fault is not None and fault.kind == "slow" and fault.slow_phase == "before":
            time.sleep(fault.delay_seconds)
        if fault is not None and fault.kind == "truncate":
            cut = int(len(body) * fault.truncate_fraction)
            sock.sendall(head + body[:cut])
            self.bytes_sent = cut
            self.handler.close_connection = True
            hang_up(sock)
            return
        if fault is not None and fault.kind == "slow" and fault.slow_phase == "body":
            half = len(body) // 2
            sock.sendall(head + body[:half])
            time.sleep(fault.delay_seconds)
            sock.sendall(body[half:])
        else:
            sock.sendall(head + body)
        self.bytes_sent = len(body)


def _http_date() -> str:
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime())


def _node_ips(world: World) -> dict[str, str]:
    ips: dict[str, str] = {}
    for node in world.nodes:
        for address in node.get("status", {}).get("addresses", []):
            if address.get("type") == "InternalIP":
                ips[node["metadata"]["name"]] = address["address"]
                break
    return ips


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "annex-simulator-telemetry"
    server: _HttpServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, add=False)

    def _dispatch(self) -> None:
        self.server.telemetry.handle(self)

    do_GET = do_POST = do_PUT = do_DELETE = _dispatch

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the request log is ``TelemetryServer.records``."""


class _HttpServer(TrackingHTTPServer):
    def __init__(self, address: tuple[str, int], telemetry: TelemetryServer) -> None:
        self.telemetry = telemetry
        super().__init__(address, _Handler)


__all__ = ["RequestRecord", "TelemetryServer"]

"""``annex serve``: the HTTP(S) intake that evidence producers push to.

Sources register ``Route``s (``annex.attestation.attestation_routes``, the OpenLineage
``annex.lineage.lineage_routes``); ``IntakeServer`` does what every route needs, so no route
can forget it:

* **TLS** when ``serve.tls_cert_file``/``tls_key_file`` are set (TLS 1.2 or newer). The
  handshake runs in the connection's thread, never in the accept loop, so a client that stalls
  mid-handshake cannot stop others from connecting.
* **Bearer token** compared with ``hmac.compare_digest`` against the variable that
  ``serve.token_env`` names. There is no unauthenticated mode: without a token the server
  refuses to start (``ConfigError``). Only ``GET /healthz`` (for Kubernetes probes) is open.
* **Limits before reading**: ``Content-Length`` is required (411; chunked bodies are refused,
  since their size is unknown up front), a body above the route's limit gets 413 without one
  byte of it being read, and the connection is then closed. Sockets time out
  (``SOCKET_TIMEOUT_SECONDS``), so a slow sender holds one thread for a bounded time, and at
  most ``MAX_CONNECTIONS`` connections are served at once.
* **Errors** are JSON ``{"error": ..., "hint": ...}`` with the HTTP status that says who must
  act (4xx the client, 5xx annex).
* **Logging**: one structured access line per request (method, path without query, status,
  sizes, duration, peer), never a header value, a token or a body.

Handlers are plain functions ``handler(Request) -> Response``: a unit test can call them
without sockets, and a handler stays unaware of TLS, auth and limits.
"""

from __future__ import annotations

import hmac
import logging
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from annex.errors import ConfigError
from annex.settings import ServeSettings, Settings

log = logging.getLogger("annex.serve")

SOCKET_TIMEOUT_SECONDS = 30.0
"""Per-socket read/write timeout, handshake included."""
HEALTH_PATH = "/healthz"
MAX_CONNECTIONS = 512
"""Connections served at once (one thread each); more are closed at once, and agents retry."""
MIN_TOKEN_CHARS = 16
"""A shorter bearer token is refused at start: it could be guessed."""


@dataclass(frozen=True)
class Request:
    """What a handler sees of one request: already authenticated, body fully read."""

    method: str
    path: str
    """Without the query string."""
    query: str
    body: bytes
    remote: str
    """The peer's IP address (the connecting socket; proxies' headers are not trusted)."""
    received_at: datetime
    """When the body had been read, UTC (aware)."""
    content_type: str | None = None
    content_encoding: str | None = None
    """The ``Content-Encoding`` header as sent (the body is passed still encoded: a handler
    that accepts gzip inflates it under its own limit)."""


@dataclass(frozen=True)
class Response:
    """A handler's answer; ``payload`` is sent as JSON."""

    status: int
    payload: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def error(cls, status: int, error: str, hint: str | None = None) -> Response:
        payload: dict[str, Any] = {"error": error}
        if hint:
            payload["hint"] = hint
        return cls(status, payload)


@dataclass(frozen=True)
class Route:
    """One endpoint: exact ``method`` and ``path``, a handler, and its own body limit.

    ``max_body_bytes`` (None: the server's ``serve.max_body_bytes``) can only lower the
    server's limit, never raise it.
    """

    method: str
    path: str
    handler: Callable[[Request], Response]
    max_body_bytes: int | None = None


class RequestRejected(Exception):
    """Raised by a handler to answer with a JSON error (status, error, hint)."""

    def __init__(self, status: int, error: str, hint: str | None = None) -> None:
        super().__init__(error)
        self.status = status
        self.error = error
        self.hint = hint


def intake_token(serve: ServeSettings, env: Mapping[str, str] | None = None) -> str:
    """The bearer token clients must send, from the variable ``serve.token_env`` names."""
    env = os.environ if env is None else env
    token = env.get(serve.token_env, "")
    if not token.strip():
        raise ConfigError(
            f"environment variable {serve.token_env} (serve.token_env) is not set or empty: "
            "annex serve never accepts unauthenticated evidence",
            hint=f"export {serve.token_env} with a long random value, e.g. "
            f"`export {serve.token_env}=$(openssl rand -hex 32)`, and give the same value to "
            "the agents (a Kubernetes Secret, see deploy/ATTESTATION_AGENT.md)",
        )
    if len(token.strip()) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"the token in {serve.token_env} (serve.token_env) is shorter than "
            f"{MIN_TOKEN_CHARS} characters",
            hint="use a long random value, e.g. `openssl rand -hex 32`",
        )
    return token.strip()


def tls_context(serve: ServeSettings) -> ssl.SSLContext | None:
    """A server context (TLS 1.2+) when a certificate and key are configured, else None."""
    cert, key = serve.tls_cert_file, serve.tls_key_file
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise ConfigError(
            "serve.tls_cert_file and serve.tls_key_file must be set together "
            f"(tls_cert_file={cert}, tls_key_file={key})",
            hint="set both (PEM files) for HTTPS, or neither for plain HTTP behind a "
            "TLS-terminating proxy",
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(str(cert), str(key))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"cannot load the TLS certificate {cert} with key {key}: {exc}",
            hint="serve.tls_cert_file must be a PEM certificate (chain) and serve.tls_key_file "
            "its unencrypted PEM private key, both readable by annex",
        ) from None
    return context


class IntakeServer:
    """A threaded HTTP(S) server for ``routes``; ``start()`` in a thread or ``serve_forever()``.

    ``token`` and ``tls`` default to what ``settings.serve`` names (a test may pass them);
    ``clock`` stamps ``Request.received_at``. Port 0 picks a free port (see ``url``).
    """

    def __init__(
        self,
        settings: Settings,
        routes: Sequence[Route],
        *,
        token: str | None = None,
        tls: ssl.SSLContext | None = None,
        host: str | None = None,
        port: int | None = None,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        serve = settings.serve
        self.settings = serve
        self.token = token if token is not None else intake_token(serve, env)
        self.tls = tls if tls is not None else tls_context(serve)
        self.clock = clock or (lambda: datetime.now(UTC))
        self.routes: dict[tuple[str, str], Route] = {}
        for route in routes:
            key = (route.method.upper(), route.path)
            if key in self.routes or route.path == HEALTH_PATH:
                raise ConfigError(f"route {route.method} {route.path} is registered twice")
            self.routes[key] = route
        self._http = _HttpServer(
            (host if host is not None else serve.host, port if port is not None else serve.port),
            self,
        )
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        if ":" in str(host):
            host = f"[{host}]"
        return f"{'https' if self.tls else 'http'}://{host}:{port}"

    def describe_routes(self) -> list[str]:
        return [f"{method} {path}" for method, path in sorted(self.routes)]

    def serve_forever(self) -> None:
        """Serve in this thread until ``stop()`` or KeyboardInterrupt; then close the socket."""
        try:
            self._http.serve_forever(poll_interval=0.5)
        finally:
            self._http.server_close()

    def start(self) -> IntakeServer:
        self._thread = threading.Thread(
            target=self._http.serve_forever, args=(0.1,), name="annex-intake", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._http.shutdown()
            self._thread.join()
            self._thread = None
        self._http.server_close()

    def __enter__(self) -> IntakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- one request -------------------------------------------------------------------------

    def authorised(self, header: str | None) -> bool:
        if not header:
            return False
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(credentials.strip().encode(), self.token.encode())

    def body_limit(self, route: Route) -> int:
        limit = self.settings.max_body_bytes
        return min(limit, route.max_body_bytes) if route.max_body_bytes is not None else limit


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "annex"
    sys_version = ""
    timeout = SOCKET_TIMEOUT_SECONDS
    server: _HttpServer

    def setup(self) -> None:
        self.request.settimeout(SOCKET_TIMEOUT_SECONDS)
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()  # here, in the connection's thread, not in accept()
        super().setup()

    def handle_expect_100(self) -> bool:
        """Send ``100 Continue`` only once the request passed auth and limits (``_dispatch``)."""
        return True

    def _dispatch(self) -> None:
        started = time.perf_counter()
        self._bytes_in = 0
        path, _, query = self.path.partition("?")
        self._log_path = path
        try:
            response = self._respond_to(path, query)
        except (TimeoutError, ConnectionError, ssl.SSLError):
            self.close_connection = True
            self._access_log(0, started)
            return
        self._send(response)
        self._access_log(response.status, started)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch

    def _respond_to(self, path: str, query: str) -> Response:
        intake = self.server.intake
        if path == HEALTH_PATH and self.command == "GET":
            self._discard_body_or_close()
            return Response(200, {"status": "ok"})
        route = intake.routes.get((self.command, path))
        if route is None:
            self.close_connection = True  # the body (if any) is left unread
            allowed = sorted(method for method, p in intake.routes if p == path)
            if allowed:
                return Response(
                    405,
                    {
                        "error": f"{self.command} is not allowed on {path}",
                        "hint": "use " + " or ".join(allowed),
                    },
                    {"Allow": ", ".join(allowed)},
                )
            return Response.error(
                404,
                f"no endpoint {path}",
                "endpoints: " + ", ".join(intake.describe_routes()),
            )
        if not intake.authorised(self.headers.get("Authorization")):
            self.close_connection = True
            return Response(
                401,
                {
                    "error": "missing or wrong bearer token",
                    "hint": "send `Authorization: Bearer <token>` with the token annex serve "
                    f"was given in {intake.settings.token_env}",
                },
                {"WWW-Authenticate": 'Bearer realm="annex"'},
            )
        length = self._content_length(intake.body_limit(route))
        if isinstance(length, Response):
            self.close_connection = True
            return length
        if self.headers.get("Expect", "").lower() == "100-continue":
            self.send_response_only(100)
            self.end_headers()
            self.wfile.flush()
        body = self.rfile.read(length) if length else b""
        self._bytes_in = len(body)
        if len(body) != length:
            self.close_connection = True
            return Response.error(
                400, f"the body ended after {len(body)} of {length} bytes (Content-Length)"
            )
        request = Request(
            method=self.command,
            path=path,
            query=query,
            body=body,
            remote=str(self.client_address[0]),
            received_at=intake.clock(),
            content_type=self.headers.get("Content-Type"),
            content_encoding=self.headers.get("Content-Encoding"),
        )
        try:
            return route.handler(request)
        except RequestRejected as exc:
            return Response.error(exc.status, exc.error, exc.hint)
        except Exception as exc:
            # The message may quote the body: log the type and where, the traceback at debug.
            log.error("handler of %s %s failed: %s", self.command, path, type(exc).__name__)
            log.debug("handler failure", exc_info=True)
            return Response.error(
                500,
                "annex could not handle this request",
                "retry later; if it persists, the annex serve log names the failure",
            )

    def _content_length(self, limit: int) -> int | Response:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return Response.error(
                411,
                "chunked request bodies are not accepted",
                f"send the body with a Content-Length header (at most {limit:,} bytes)",
            )
        header = self.headers.get("Content-Length")
        if header is None:
            return Response.error(
                411,
                "Content-Length is required",
                f"send the body with a Content-Length header (at most {limit:,} bytes)",
            )
        try:
            length = int(header.strip())
        except ValueError:
            length = -1
        if length < 0 or not header.strip().isdigit():
            return Response.error(400, "Content-Length is not a non-negative integer")
        if length > limit:
            return Response.error(
                413,
                f"the body of {length:,} bytes is larger than this endpoint's limit of "
                f"{limit:,} bytes",
                "send less per request; the limit is serve.max_body_bytes (and, for "
                "attestations, attestation.max_submission_bytes; for OpenLineage events, "
                "lineage.max_body_bytes)",
            )
        return length

    def _discard_body_or_close(self) -> None:
        if self.headers.get("Content-Length", "0").strip() not in ("", "0"):
            self.close_connection = True

    def _send(self, response: Response) -> None:
        body = orjson.dumps(dict(response.payload)) + b"\n"
        self._bytes_out = len(body)
        try:
            self.send_response(response.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            for name, value in response.headers.items():
                self.send_header(name, value)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
        except (TimeoutError, ConnectionError, ssl.SSLError):
            self.close_connection = True

    def _access_log(self, status: int, started: float) -> None:
        log.info(
            "method=%s path=%s status=%d bytes_in=%d bytes_out=%d duration_ms=%.1f remote=%s",
            self.command,
            self._log_path,
            status,
            self._bytes_in,
            getattr(self, "_bytes_out", 0),
            (time.perf_counter() - started) * 1000,
            self.client_address[0],
        )

    def log_request(self, code: object = "-", size: object = "-") -> None:
        """Replaced by ``_access_log`` (the default line would include the query string)."""

    def log_message(self, format: str, *args: object) -> None:
        """Protocol errors (bad request line...), at debug; never headers or bodies."""
        log.debug("remote=%s %s", self.client_address[0], (format % args)[:200])


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, address: tuple[str, int], intake: IntakeServer) -> None:
        self.intake = intake
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        try:
            super().__init__(address, _Handler)
        except OSError as exc:
            raise ConfigError(
                f"annex serve cannot listen on {address[0]}:{address[1]}: {exc.strerror or exc}",
                hint="pick another serve.port / serve.host (or --port / --host), or stop the "
                "process using it",
            ) from None

    def get_request(self) -> tuple[socket.socket, Any]:
        connection, address = self.socket.accept()
        tls = self.intake.tls
        if tls is not None:
            connection = tls.wrap_socket(
                connection, server_side=True, do_handshake_on_connect=False
            )
        return connection, address

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            log.warning(
                "connection from %s closed: %d already open", client_address[0], MAX_CONNECTIONS
            )
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: object, client_address: Any) -> None:
        """A client that hangs up or fails the handshake is not a server error."""
        log.debug("connection from %s ended with an error", client_address[0], exc_info=True)

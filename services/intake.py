"""``annex serve``: the HTTP(S) intake that evidence producers push to.

Sources register ``Route``s (``services.attestation.attestation_routes``, the OpenLineage
``services.lineage.lineage_routes``); ``IntakeServer`` does what every route needs, so no route
can forget it:

* **TLS** when ``serve.tls_cert_file``/``tls_key_file`` are set (TLS 1.2 or newer). The
  handshake runs in the connection's thread, never in the accept loop, so a client that stalls
  mid-handshake cannot stop others from connecting.
* **Bearer token** compared with ``hmac.compare_digest`` against the variable that
  ``serve.token_env`` names. There is no unauthenticated mode: without a token the server
  refuses to start (``ConfigError``). Only ``GET /healthz`` (for Kubernetes probes) is open.
* **Admission before authentication** (``services.admission``). Until one of its requests passes
  the token check a connection is *pending*: at most ``serve.max_pending_per_client`` (32) per
  client (an IPv4 address or an IPv6 /64; more are closed at accept), at most
  ``serve.max_pending_connections`` (256) in all (a new one then closes the one pending
  longest), and each must finish its TLS
  handshake and request head within ``serve.head_timeout_seconds`` (10 s) of accept, however
  slowly its bytes trickle in (then 408 and close). An authenticated connection leaves the pool
  and takes one of ``serve.max_connections`` (512) slots of its own (none left: 503 with
  ``Retry-After``), so slow or abusive unauthenticated clients never take the capacity that
  authenticated producers use. Unauthenticated connections are closed after their answer
  (``/healthz`` included); authenticated ones are kept alive (the next head within 30 s).
* **Strict HTTP/1.1 framing** (``services.http_framing``, RFC 9112), enforced before
  authentication: the head is at most ``serve.max_header_bytes`` (32 KiB) and
  ``serve.max_header_fields`` (100) fields (431); obs-fold, whitespace before a colon, bare CR
  or LF, duplicate or non-numeric ``Content-Length``, ``Content-Length`` with
  ``Transfer-Encoding``, and any transfer coding but a single ``chunked`` are 400. Each such
  answer closes the connection, so no byte after it is ever read as another request.
* **Body limits**: a body needs ``Content-Length`` or ``Transfer-Encoding: chunked`` (411
  otherwise). A ``Content-Length`` above the route's limit gets 413 without one byte of the
  body being read; a chunked body (Java producers: openlineage-java's HttpTransport with
  ``compression: gzip``) is decoded as it arrives and gets 413 as soon as a chunk would pass
  the limit, before that chunk is read. The body is passed on still encoded (a handler that
  accepts ``Content-Encoding: gzip`` inflates it under its own cap) and must arrive within
  ``serve.body_timeout_seconds`` (300 s; no single wait on a socket is longer than 30 s).
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
import socketserver
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import formatdate
from http import HTTPStatus
from typing import Any

import orjson

from annex.errors import ConfigError
from annex.settings import ServeSettings, Settings
from services.admission import PendingPool, client_of
from services.http_framing import (
    BodyFraming,
    BodyTooLarge,
    DeadlinePassed,
    FramingError,
    PeerClosed,
    RequestHead,
    Wire,
    body_framing,
    parse_head,
    read_chunked,
)

log = logging.getLogger("annex.serve")

SOCKET_TIMEOUT_SECONDS = 30.0
"""The longest single wait on a socket (read or write); overall deadlines are shorter."""
KEEP_ALIVE_SECONDS = 30.0
"""An authenticated connection's next request head must arrive within this after an answer."""
LINGER_SECONDS = 1.0
LINGER_BYTES = 256 << 10
"""Before closing after an error, unread input is drained for at most this long and this much,
so the client reads the answer instead of a connection reset."""
REFUSAL_LOG_SECONDS = 10.0
HEALTH_PATH = "/healthz"
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
        self._http = _TcpServer(
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
        self._http.pending.start()
        try:
            self._http.serve_forever(poll_interval=0.5)
        finally:
            self._http.pending.stop()
            self._http.server_close()

    def start(self) -> IntakeServer:
        self._http.pending.start()
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
        self._http.pending.stop()
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


class _Connection:
    """One accepted connection, served in its own thread: TLS handshake, then requests until
    the client or an error closes it (see the module docstring for the order of checks)."""

    def __init__(self, server: _TcpServer, sock: socket.socket, peer: str, deadline: float):
        self.server = server
        self.intake = server.intake
        self.sock = sock
        self.peer = peer
        self.deadline = deadline
        self.authenticated = False
        self.wire = Wire(sock, SOCKET_TIMEOUT_SECONDS)

    def run(self) -> None:
        try:
            if isinstance(self.sock, ssl.SSLSocket):
                # here, in the connection's thread, not in accept(); the pool cuts it at the
                # head deadline however slowly the client handshakes
                self.sock.settimeout(_wait(self.deadline))
                self.sock.do_handshake()
            while self._exchange():
                self.deadline = time.monotonic() + KEEP_ALIVE_SECONDS
        except (OSError, DeadlinePassed, PeerClosed):
            pass  # a client that hangs up, stalls or fails the handshake: not a server error
        except Exception:
            log.exception("connection from %s failed", self.peer)
        finally:
            self.server.pending.leave(self.sock)
            if self.authenticated:
                self.server.slots.release()
            self.server.shutdown_request(self.sock)

    # --- one request ---------------------------------------------------------------------------

    def _exchange(self) -> bool:
        """Read and answer one request; whether the connection stays open for another."""
        started = time.perf_counter()
        received = self.wire.received - len(self.wire.buffer)
        self.method = self.path = "-"
        self.body_bytes = 0
        serve = self.intake.settings
        try:
            head = parse_head(
                self.wire.read_head(serve.max_header_bytes, self.deadline),
                serve.max_header_fields,
            )
            self.method = head.method
            self.path, _, query = head.target.partition("?")
            framing = body_framing(head)
            response, keep_alive = self._respond_to(head, query, framing)
        except FramingError as exc:
            response, keep_alive = Response.error(exc.status, exc.error, exc.hint), False
        except PeerClosed:
            if self.wire.received - len(self.wire.buffer) > received or self.wire.buffer:
                self._access_log(0, started)
            return False
        except DeadlinePassed:
            if not self.wire.buffer and self.authenticated:
                return False  # an idle keep-alive connection: close quietly
            response, keep_alive = (
                Response.error(
                    408,
                    "the request was not received in time",
                    f"send the request head within {serve.head_timeout_seconds:g} s "
                    "(serve.head_timeout_seconds)",
                ),
                False,
            )
        self._send(response, keep_alive)
        self._access_log(response.status, started)
        if not keep_alive:
            self._linger()
        return keep_alive

    def _respond_to(
        self, head: RequestHead, query: str, framing: BodyFraming
    ) -> tuple[Response, bool]:
        intake, path, method = self.intake, self.path, head.method
        has_body = framing.chunked or framing.length > 0
        if path == HEALTH_PATH and method == "GET":
            ok = Response(200, {"status": "ok"})
            return ok, self.authenticated and head.keep_alive and not has_body
        route = intake.routes.get((method, path))
        if route is None:  # the body (if any) is left unread and the connection closed
            allowed = sorted(m for m, p in intake.routes if p == path)
            if allowed:
                return Response(
                    405,
                    {
                        "error": f"{method} is not allowed on {path}",
                        "hint": "use " + " or ".join(allowed),
                    },
                    {"Allow": ", ".join(allowed)},
                ), False
            return Response.error(
                404, f"no endpoint {path}", "endpoints: " + ", ".join(intake.describe_routes())
            ), False
        if not intake.authorised(head.get("authorization")):
            return Response(
                401,
                {
                    "error": "missing or wrong bearer token",
                    "hint": "send `Authorization: Bearer <token>` with the token annex serve "
                    f"was given in {intake.settings.token_env}",
                },
                {"WWW-Authenticate": 'Bearer realm="annex"'},
            ), False
        if not self.authenticated:
            self.server.pending.leave(self.sock)
            if not self.server.slots.acquire(blocking=False):
                self.server.note_refusal(self.peer, "serve.max_connections authenticated")
                return Response(
                    503,
                    {
                        "error": f"annex serve is serving {intake.settings.max_connections} "
                        "authenticated connections already",
                        "hint": "retry in a moment (serve.max_connections)",
                    },
                    {"Retry-After": "1"},
                ), False
            self.authenticated = True
        limit = intake.body_limit(route)
        if not framing.declared and method in ("POST", "PUT", "PATCH"):
            return Response.error(
                411,
                "Content-Length is required",
                f"send the body with a Content-Length header or Transfer-Encoding: chunked "
                f"(at most {limit:,} bytes)",
            ), False
        if not framing.chunked and framing.length > limit:
            return _too_large(framing.length, limit), False
        if (head.get("expect") or "").lower() == "100-continue":
            self._write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body_deadline = time.monotonic() + intake.settings.body_timeout_seconds
        try:
            if framing.chunked:
                body = read_chunked(
                    self.wire, limit, body_deadline, intake.settings.max_header_bytes
                )
            else:
                body = self.wire.read_exact(framing.length, body_deadline)
        except BodyTooLarge as exc:
            return _too_large(exc.received, limit, chunked=True), False
        except PeerClosed:
            if framing.chunked:
                return Response.error(400, "the chunked body ended before its last chunk"), False
            got = len(self.wire.buffer)
            return Response.error(
                400, f"the body ended after {got} of {framing.length} bytes (Content-Length)"
            ), False
        except DeadlinePassed:
            return Response.error(
                408,
                "the body was not received in time",
                f"send it within {intake.settings.body_timeout_seconds:g} s "
                "(serve.body_timeout_seconds)",
            ), False
        self.body_bytes = len(body)
        request = Request(
            method=method,
            path=path,
            query=query,
            body=body,
            remote=self.peer,
            received_at=intake.clock(),
            content_type=head.get("content-type"),
            content_encoding=head.get("content-encoding"),
        )
        try:
            response = route.handler(request)
        except RequestRejected as exc:
            response = Response.error(exc.status, exc.error, exc.hint)
        except Exception as exc:
            # The message may quote the body: log the type and where, the traceback at debug.
            log.error("handler of %s %s failed: %s", method, path, type(exc).__name__)
            log.debug("handler failure", exc_info=True)
            response = Response.error(
                500,
                "annex could not handle this request",
                "retry later; if it persists, the annex serve log names the failure",
            )
        return response, head.keep_alive

    # --- answering -----------------------------------------------------------------------------

    def _send(self, response: Response, keep_alive: bool) -> None:
        body = orjson.dumps(dict(response.payload)) + b"\n"
        self.bytes_out = len(body)
        try:
            reason = HTTPStatus(response.status).phrase
        except ValueError:
            reason = ""
        lines = [
            f"HTTP/1.1 {response.status} {reason}",
            "Server: annex",
            f"Date: {formatdate(usegmt=True)}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            "Cache-Control: no-store",
            *(f"{name}: {value}" for name, value in response.headers.items()),
        ]
        if not keep_alive:
            lines.append("Connection: close")
        self._write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

    def _write(self, data: bytes) -> None:
        try:
            self.sock.settimeout(SOCKET_TIMEOUT_SECONDS)
            self.sock.sendall(data)
        except OSError:
            pass  # the client left; the connection is closed after this request

    def _linger(self) -> None:
        """Before closing: stop sending and read (and drop) what the client still sends, for
        a bounded time and size, so it reads the answer instead of a reset."""
        try:
            socket.socket.shutdown(self.sock, socket.SHUT_WR)
            until = time.monotonic() + LINGER_SECONDS
            drained = 0
            while drained < LINGER_BYTES and (left := until - time.monotonic()) > 0:
                self.sock.settimeout(left)
                data = socket.socket.recv(self.sock, 65536)
                if not data:
                    break
                drained += len(data)
        except OSError:
            pass

    def _access_log(self, status: int, started: float) -> None:
        log.info(
            "method=%s path=%s status=%d bytes_in=%d bytes_out=%d duration_ms=%.1f remote=%s",
            self.method,
            self.path,
            status,
            self.body_bytes,
            getattr(self, "bytes_out", 0),
            (time.perf_counter() - started) * 1000,
            self.peer,
        )


def _wait(deadline: float) -> float:
    """A socket timeout for what is left until ``deadline`` (at least a moment)."""
    return max(0.01, min(deadline - time.monotonic(), SOCKET_TIMEOUT_SECONDS))


def _too_large(size: int, limit: int, *, chunked: bool = False) -> Response:
    error = (
        f"the chunked body passed this endpoint's limit of {limit:,} bytes (at {size:,})"
        if chunked
        else f"the body of {size:,} bytes is larger than this endpoint's limit of {limit:,} bytes"
    )
    return Response.error(
        413,
        error,
        "send less per request; the limit is serve.max_body_bytes (and, for "
        "attestations, attestation.max_submission_bytes; for OpenLineage events, "
        "lineage.max_body_bytes)",
    )


class _TcpServer(socketserver.TCPServer):
    allow_reuse_address = True
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], intake: IntakeServer) -> None:
        self.intake = intake
        serve = intake.settings
        self.slots = threading.BoundedSemaphore(serve.max_connections)
        self.pending = PendingPool(
            serve.max_pending_connections,
            serve.max_pending_per_client,
            serve.head_timeout_seconds,
        )
        self._refusals = 0
        self._refusal_logged = 0.0
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        try:
            super().__init__(address, None)  # type: ignore[arg-type]  # no handler class
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
        peer = str(client_address[0])
        deadline = self.pending.admit(request, client_of(peer))
        if deadline is None:
            self.note_refusal(peer, "serve.max_pending_per_client connections in their head")
            self.shutdown_request(request)
            return
        connection = _Connection(self, request, peer, deadline)
        try:
            threading.Thread(target=connection.run, name="annex-intake-conn", daemon=True).start()
        except RuntimeError:  # no thread to be had: refuse this one, keep serving
            self.pending.leave(request)
            self.note_refusal(peer, "no thread available")
            self.shutdown_request(request)

    def note_refusal(self, peer: str, why: str) -> None:
        """A warning for refused connections, at most one per ``REFUSAL_LOG_SECONDS`` (a
        flood must not flood the log too)."""
        self._refusals += 1
        now = time.monotonic()
        if now - self._refusal_logged >= REFUSAL_LOG_SECONDS:
            log.warning(
                "refused %d connection(s) since the last warning, the latest from %s: %s",
                self._refusals,
                peer,
                why,
            )
            self._refusals = 0
            self._refusal_logged = now

    def handle_error(self, request: object, client_address: Any) -> None:
        log.debug("connection from %s ended with an error", client_address[0], exc_info=True)

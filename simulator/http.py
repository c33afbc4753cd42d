"""HTTP plumbing the simulated services share (the Kubernetes API server, the telemetry
exporters and Prometheus, the attestation issuers).

Their test clients hold keep-alive connections and long watch streams; a server that only
stopped accepting would leave those threads blocked on their sockets. So the server tracks
every open connection, and ``stop()`` hangs up on them after ``shutdown()``.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, TypeVar

Record = TypeVar("Record")


def hang_up(sock: socket.socket) -> None:
    """Shut a connection down both ways (the simulated 'disconnect' fault, and stop())."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def read_body(handler: BaseHTTPRequestHandler) -> bytes:
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


class TrackingHTTPServer(ThreadingHTTPServer):
    """A thread per connection, reusable port, a deep accept queue (benchmarks open hundreds
    of connections at once), and the set of open connections for ``close_connections``.
    Handlers call ``track(connection, add=...)`` in their ``setup``/``finish``."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, handler)

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hangs up mid-request (or mid-handshake) is not a server error."""

    def track(self, connection: socket.socket, add: bool) -> None:
        with self.connections_lock:
            if add:
                self.connections.add(connection)
            else:
                self.connections.discard(connection)

    def close_connections(self) -> None:
        with self.connections_lock:
            connections = list(self.connections)
        for connection in connections:
            hang_up(connection)


class BackgroundServer(Generic[Record]):
    """Serves ``self._server`` on a daemon thread (``start``/``stop``, or ``with``), and keeps
    the last requests it answered (``requests()``) for tests and benchmarks to inspect.

    Subclasses set ``_server`` (a ``TrackingHTTPServer``) and call ``_init_background``."""

    thread_name = "simulated-service"
    _server: TrackingHTTPServer

    def _init_background(self, max_records: int) -> None:
        self.records: deque[Record] = deque(maxlen=max_records)
        self._records_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> Any:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, name=self.thread_name, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self._server.close_connections()
        self._server.server_close()

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, entry: Record) -> None:
        with self._records_lock:
            self.records.append(entry)

    def requests(self) -> list[Record]:
        with self._records_lock:
            return list(self.records)

    def clear_requests(self) -> None:
        with self._records_lock:
            self.records.clear()


__all__ = ["BackgroundServer", "TrackingHTTPServer", "hang_up", "read_body"]

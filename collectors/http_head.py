"""Opening an HTTP request with an overall deadline on everything before the body.

A socket timeout bounds each read, not the wait: a server (or whatever answers in its place)
that sends its status line and headers a byte at a time, each byte inside the timeout, holds
the caller for as long as it likes. ``collectors/http_body.py`` bounds the body the same way
(a deadline checked after every read); this module bounds what comes first (the TCP connect,
the TLS handshake, sending the request, the response head) by one deadline for all of it.

How: the connection's socket is handed to a watchdog timer when it is created, and the timer
shuts the socket down when the deadline passes; the blocked read then returns and
``urllib``/``http.client`` raise, and ``HeadDeadline.expired`` says why. No thread waits on
the network but the caller's; the timer only closes a socket.
"""

from __future__ import annotations

import contextlib
import contextvars
import http.client
import socket
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class HeadDeadline:
    """One request's deadline: the sockets created under it are shut down when it passes."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            expired = self.expired
        if expired:  # created after the deadline passed: no wait on it either
            _shut(sock)

    def start(self) -> None:
        self._timer.start()

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    # already closed or never connected: nothing waits on it
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


_CURRENT: contextvars.ContextVar[HeadDeadline | None] = contextvars.ContextVar(
    "annex_http_head_deadline", default=None
)


def _create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
    sock = socket.create_connection(address, *args, **kwargs)
    deadline = _CURRENT.get()
    if deadline is not None:
        deadline.watch(sock)
    return sock


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _create_connection


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _create_connection


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPSConnection, req)


def build_opener() -> urllib.request.OpenerDirector:
    """``urllib.request.build_opener()`` whose connections obey ``head_deadline``."""
    return urllib.request.build_opener(_HTTPHandler, _HTTPSHandler)


@contextmanager
def head_deadline(seconds: float) -> Iterator[HeadDeadline]:
    """Within the block, connections opened by ``build_opener()``'s opener in this thread are
    shut down ``seconds`` after it began; ``deadline.expired`` tells that this happened."""
    deadline = HeadDeadline(seconds)
    token = _CURRENT.set(deadline)
    deadline.start()
    try:
        yield deadline
    finally:
        deadline.cancel()
        _CURRENT.reset(token)

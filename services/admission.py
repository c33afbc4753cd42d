"""Connection admission for ``annex serve``: who may hold a thread before authenticating.

A connection is *pending* from accept until one of its requests passes the bearer check.
Pending connections are what unauthenticated clients can open at will, so they live in a
bounded ``PendingPool`` that no slow client can fill for long:

* each client may hold at most ``per_client`` pending connections; more are closed at accept,
  before a thread starts. A client is a peer's IPv4 address, or its IPv6 /64 (one host is
  usually given a whole /64, so its single addresses are no limit);
* the pool holds at most ``capacity``; a new connection then cuts the one that has been pending
  longest (a valid client sends its head in milliseconds, a slow one is the oldest);
* each pending connection has an overall deadline (``timeout``). Its own thread answers 408
  at the deadline; should the thread be blocked elsewhere (a TLS handshake), a reaper thread
  cuts the connection ``grace`` seconds later.

"Cut" is ``shutdown(SHUT_RDWR)`` on the socket: its thread's blocked read returns at once and
the thread closes the connection. Authenticated connections leave the pool and take a slot of
the server's own capacity (``serve.max_connections``), so a flood of slow heads never takes
the capacity that authenticated clients use.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable

log = logging.getLogger("annex.serve")

REAP_INTERVAL_SECONDS = 0.25
"""The reaper looks for passed deadlines this often (at most this late)."""
REAP_GRACE_SECONDS = 1.0
"""The reaper leaves a connection this long past its deadline to its own thread (which answers
408 then); it cuts only what is still pending after that."""


def client_of(address: str) -> str:
    """The key a peer's pending connections are counted under (see the module docstring)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def cut(sock: socket.socket) -> None:
    """Wake whatever blocks on ``sock`` (its own thread closes it). The base class's
    ``shutdown`` also works on a TLS socket mid-handshake."""
    with contextlib.suppress(OSError):  # already closed by its thread
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class PendingPool:
    """Pending connections with their deadlines, oldest first (see the module docstring)."""

    def __init__(
        self,
        capacity: int,
        per_client: int,
        timeout: float,
        clock: Callable[[], float] = time.monotonic,
        grace: float = REAP_GRACE_SECONDS,
    ) -> None:
        self.capacity = capacity
        self.per_client = per_client
        self.timeout = timeout
        self.grace = grace
        self.clock = clock
        self._lock = threading.Lock()
        self._pending: dict[socket.socket, tuple[str, float]] = {}
        """Insertion-ordered: the deadline is admission time + timeout, so oldest first."""
        self._per_client: Counter[str] = Counter()
        self._stop = threading.Event()
        self._reaper: threading.Thread | None = None
        self.refused = 0
        self.evicted = 0
        self.expired = 0

    def admit(self, sock: socket.socket, client: str) -> float | None:
        """Register ``sock``; its deadline, or None when ``client`` holds its share already."""
        victims = []
        with self._lock:
            if self._per_client[client] >= self.per_client:
                self.refused += 1
                return None
            while len(self._pending) >= self.capacity:
                oldest = next(iter(self._pending))
                self._forget(oldest)
                victims.append(oldest)
                self.evicted += 1
            deadline = self.clock() + self.timeout
            self._pending[sock] = (client, deadline)
            self._per_client[client] += 1
        for victim in victims:
            cut(victim)
        return deadline

    def leave(self, sock: socket.socket) -> None:
        """``sock`` authenticated or closed: it no longer counts."""
        with self._lock:
            self._forget(sock)

    def _forget(self, sock: socket.socket) -> None:
        entry = self._pending.pop(sock, None)
        if entry is not None:
            client = entry[0]
            self._per_client[client] -= 1
            if self._per_client[client] <= 0:
                del self._per_client[client]

    def __len__(self) -> int:
        return len(self._pending)

    def start(self) -> None:
        self._stop.clear()
        self._reaper = threading.Thread(target=self._reap, name="annex-intake-reaper", daemon=True)
        self._reaper.start()

    def stop(self) -> None:
        self._stop.set()
        if self._reaper is not None:
            self._reaper.join()
            self._reaper = None

    def _reap(self) -> None:
        while not self._stop.wait(REAP_INTERVAL_SECONDS):
            self.reap_once()

    def reap_once(self) -> int:
        """Cut every pending connection whose deadline passed ``grace`` ago; how many."""
        now = self.clock() - self.grace
        expired = []
        with self._lock:
            for sock, (_, deadline) in self._pending.items():
                if deadline > now:
                    break
                expired.append(sock)
            for sock in expired:
                self._forget(sock)
            self.expired += len(expired)
        for sock in expired:
            cut(sock)
        return len(expired)

"""``annex serve`` while unauthenticated clients flood it (issue 35): slow request heads
(slowloris) and huge headers must not stop valid, authenticated requests nor grow memory.

Distinct clients are distinct loopback addresses (Linux routes 127.0.0.0/8 to ``lo``): the
flood comes from 127.0.0.2 and 127.0.1.x, valid requests from 127.0.0.1. The scaled-down tests
use small limits and short deadlines; the issue's scale (520 slow connections sending a byte
every 5 s, 150 connections of 6 MB headers) runs against the defaults."""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from annex.settings import ServeSettings, Settings
from bench.serve_flood import (
    SlowFlood,
    annex_serve,
    header_lines,
    header_round,
    many_sources,
    run_valid,
)
from services.intake import IntakeServer, Request, Response, Route

pytestmark = pytest.mark.integration

TOKEN = "flood-test-token-0123456789abcdef"
SLOWEST = 3.0
"""Seconds a valid request may take under a flood (typically tens of ms; 2 shared cores)."""
SMALL = ServeSettings(
    host="127.0.0.1",
    port=0,
    head_timeout_seconds=1.0,
    max_pending_connections=16,
    max_pending_per_client=4,
)


def ok(request: Request) -> Response:
    return Response(200, {"ok": True})


def start(serve: ServeSettings) -> IntakeServer:
    return IntakeServer(Settings(serve=serve), [Route("POST", "/ping", ok)], token=TOKEN)


def host_port(server: IntakeServer) -> tuple[str, int]:
    host, port = server.url.rsplit("//", 1)[1].rsplit(":", 1)
    return host, int(port)


def ping(connection: http.client.HTTPConnection) -> int:
    connection.request("POST", "/ping", body=b"{}", headers={"Authorization": f"Bearer {TOKEN}"})
    response = connection.getresponse()
    response.read()
    return response.status


def valid_requests(server: IntakeServer, count: int, seconds: float) -> tuple[int, float]:
    """(how many of ``count`` new-connection requests from 127.0.0.1 got 200, slowest s)."""
    host, port = host_port(server)
    results = []
    for index in range(count):
        time.sleep(seconds / count)
        started = time.perf_counter()
        try:
            connection = http.client.HTTPConnection(
                host, port, timeout=5, source_address=("127.0.0.1", 0)
            )
            results.append((ping(connection) == 200, time.perf_counter() - started))
            connection.close()
        except OSError:
            results.append((False, time.perf_counter() - started))
        del index
    return sum(good for good, _ in results), max(s for _, s in results)


@pytest.fixture
def server() -> Iterator[IntakeServer]:
    with start(SMALL) as intake:
        yield intake


def test_a_slow_head_is_cut_at_the_overall_deadline_with_408(server: IntakeServer) -> None:
    """A byte every 0.2 s: no single read waits long, the head deadline (1 s) still ends it."""
    host, port = host_port(server)
    head = b"POST /ping HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
    started = time.monotonic()
    reply = b""
    with socket.create_connection((host, port), timeout=5) as sock:
        for byte in head:
            try:
                sock.send(bytes([byte]))
            except OSError:
                break
            sock.settimeout(0.2)
            try:
                reply = sock.recv(4096)
                break
            except TimeoutError:
                continue
    elapsed = time.monotonic() - started
    assert reply.startswith(b"HTTP/1.1 408 ") and b"Connection: close" in reply
    assert 0.9 < elapsed < 3.0


def test_slow_heads_from_one_client_are_refused_beyond_its_share(server: IntakeServer) -> None:
    host, port = host_port(server)
    with SlowFlood(host, port, 40, ["127.0.0.2"], interval=0.3, reconnect=0.2) as flood:
        flood.wait_open(40, timeout=5)
        good, slowest = valid_requests(server, 20, 1.5)
    assert good == 20 and slowest < SLOWEST
    assert server._http.pending.refused >= 36  # 40 - its share of 4, then each reconnection


def test_slow_heads_from_many_clients_cannot_starve_valid_requests(server: IntakeServer) -> None:
    """60 slow connections from 10 clients, together far beyond
    the pool of 16, reconnecting as soon as they are cut: valid requests still all pass, and
    a keep-alive connection authenticated before the flood keeps being served."""
    host, port = host_port(server)
    keep_alive = http.client.HTTPConnection(host, port, timeout=5, source_address=("127.0.0.1", 0))
    assert ping(keep_alive) == 200
    with SlowFlood(host, port, 60, many_sources(10), interval=0.3, reconnect=0.1) as flood:
        flood.wait_open(60, timeout=5)
        good, slowest = valid_requests(server, 30, 2.5)  # beyond the 1 s head deadline
        assert ping(keep_alive) == 200
        cut = flood.cut
    keep_alive.close()
    assert good == 30 and slowest < SLOWEST
    pool = server._http.pending
    assert cut > 0 and pool.evicted > 0  # the pool overflowed: the oldest heads were cut


def test_authenticated_capacity_is_apart_from_the_pending_pool() -> None:
    """With the pool full of slow heads, authenticated connections still get their slots."""
    with start(replace(SMALL, max_pending_connections=4, max_connections=8)) as server:
        host, port = host_port(server)
        with SlowFlood(host, port, 16, many_sources(4), interval=0.3, reconnect=0.1):
            time.sleep(0.5)
            held = []
            for _ in range(6):  # more than the pool holds, fewer than max_connections
                connection = http.client.HTTPConnection(
                    host, port, timeout=5, source_address=("127.0.0.1", 0)
                )
                assert ping(connection) == 200
                held.append(connection)
            assert all(ping(connection) == 200 for connection in held)
            for connection in held:
                connection.close()


@pytest.mark.slow
def test_issue_scale_520_slow_connections_against_the_defaults() -> None:
    """520 connections sending a head byte every 5 s (65 clients, 8 each, reconnecting 1 s
    after a cut), default limits: every valid request is answered."""
    with start(ServeSettings(host="127.0.0.1", port=0)) as server:
        host, port = host_port(server)
        with SlowFlood(host, port, 520, many_sources(65), interval=5.0) as flood:
            flood.wait_open(520, timeout=20)
            assert flood.opened >= 520
            good, slowest = valid_requests(server, 60, 6.0)
        assert good == 60 and slowest < SLOWEST
        assert server._http.pending.evicted > 0  # 520 > max_pending_connections (256)


@pytest.mark.slow
def test_header_flood_does_not_grow_memory(tmp_path: Path) -> None:
    """150 connections (distinct clients) each sending 6 MB of 63 KiB header fields, against the
    real command: its peak resident memory grows by a few MiB, not by a GiB; valid requests
    meanwhile all pass."""
    with annex_serve(tmp_path) as child:
        before = child.memory()
        done: list[int] = []
        flood = threading.Thread(
            target=lambda: done.append(
                header_round(child.host, child.port, 150, header_lines(6 << 20))
            )
        )
        flood.start()
        outcome = run_valid(child.host, child.port, 40, 4, 10.0, seconds=2.0)
        flood.join(60)
        assert done and not flood.is_alive()
        after = child.memory()
    assert outcome.succeeded == 40
    growth_mib = (after["VmHWM"] - before["VmRSS"]) / 1024
    assert growth_mib < 64, (before, after)


def test_a_stalled_tls_handshake_is_cut_at_the_head_deadline() -> None:
    """A client that sends half a ClientHello byte by byte: the pool cuts it at the deadline
    whatever the handshake waits for, and TLS clients meanwhile are served."""
    tls_dir = Path(__file__).resolve().parents[2] / "simulator" / "kubernetes" / "tls"
    serve = replace(
        SMALL, tls_cert_file=tls_dir / "simulator.crt", tls_key_file=tls_dir / "simulator.key"
    )
    with start(serve) as server:
        host, port = host_port(server)
        started = time.monotonic()
        with socket.create_connection((host, port), timeout=5) as stalled:
            stalled.sendall(b"\x16\x03\x01\x02\x00\x01")  # a record header promising 512 bytes
            context = ssl.create_default_context(cafile=str(tls_dir / "simulator.crt"))
            good = http.client.HTTPSConnection(host, port, context=context, timeout=5)
            assert ping(good) == 200
            good.close()
            try:
                while stalled.recv(4096):
                    pass
            except ConnectionResetError:
                pass
        elapsed = time.monotonic() - started
    assert 0.9 < elapsed < 3.5

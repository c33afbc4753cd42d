"""Prometheus and exporter answers are read under an overall deadline and an inflation cap
(issue 35: every network wait has an overall deadline): a server that trickles its response
head or its body, each read arriving within the socket timeout, cannot hold a collection, and a
gzip bomb is refused before it is inflated whole."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from collectors.telemetry.query_range import FetchError, TooLarge, fetch


def _serve_once(answer: bytes, trickle: bytes = b"", every: float = 0.0) -> Iterator[str]:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    stop = threading.Event()

    def run() -> None:
        connection, _ = server.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(answer)
            for byte in trickle:
                if stop.wait(every):
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/api/v1/query_range"
    finally:
        stop.set()
        server.close()
        thread.join(timeout=5)


@pytest.fixture()
def trickling() -> Iterator[str]:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
    yield from _serve_once(head, trickle=b"x" * 100_000, every=0.2)


def test_a_trickled_body_fails_at_the_deadline(trickling: str) -> None:
    started = time.monotonic()
    with pytest.raises(FetchError) as failure:
        fetch(trickling, timeout=1.0, max_bytes=1 << 20)
    elapsed = time.monotonic() - started
    assert elapsed < 3.0  # each byte came within the socket timeout; the deadline ended it
    assert "deadline" in failure.value.args[0]
    assert "request_timeout_seconds" in failure.value.args[0]


@pytest.fixture()
def trickled_head() -> Iterator[str]:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"X-Slow: " + b"y" * 10_000
    yield from _serve_once(b"", trickle=head, every=0.2)


def test_a_trickled_response_head_fails_at_the_deadline(trickled_head: str) -> None:
    """The status line and headers a byte every 0.2 s (inside the 1 s socket timeout, so no
    read ever times out): the request fails one deadline after it began, saying so."""
    started = time.monotonic()
    with pytest.raises(FetchError) as failure:
        fetch(trickled_head, timeout=1.0, max_bytes=1 << 20)
    assert time.monotonic() - started < 3.0
    assert "no response head within 1 s" in failure.value.args[0]
    assert "request_timeout_seconds" in failure.value.args[0]


def test_a_server_that_never_answers_fails_at_the_deadline() -> None:
    """The same bound when nothing at all comes (the socket timeout alone would do here too:
    the message is the same either way)."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(FetchError):
            fetch(f"http://127.0.0.1:{port}/api/v1/query_range", timeout=1.0, max_bytes=1024)
        assert time.monotonic() - started < 3.0


@pytest.fixture()
def bomb() -> Iterator[str]:
    body = gzip.compress(b"0" * (64 << 20))  # 64 MiB of zeros in about 64 KB
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
    )
    yield from _serve_once(head + body)


def test_a_gzip_bomb_is_refused_at_the_cap(bomb: str) -> None:
    with pytest.raises(TooLarge) as failure:
        fetch(bomb, timeout=5.0, max_bytes=1 << 20)
    assert str(1 << 20) in failure.value.args[0]

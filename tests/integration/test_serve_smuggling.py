"""``annex serve`` against request smuggling (RFC 9112 §6.3, §11.2): every ambiguous framing is
answered 400 with ``Connection: close`` and the connection is closed, so bytes that a lenient
reader (or a proxy in front) would take for a second request never reach a handler."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from annex.settings import ServeSettings, Settings
from services.intake import IntakeServer, Request, Response, Route

pytestmark = pytest.mark.integration

TOKEN = "smuggling-test-token-0123456789"
AUTH = f"Authorization: Bearer {TOKEN}\r\n"
SMUGGLED = "GET /smuggled HTTP/1.1\r\nHost: x\r\n" + AUTH + "\r\n"


@dataclass
class Recorder:
    seen: list[tuple[str, bytes]] = field(default_factory=list)

    def __call__(self, request: Request) -> Response:
        self.seen.append((request.path, request.body))
        return Response(200, {"got": len(request.body)})


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def server(recorder: Recorder) -> Iterator[IntakeServer]:
    routes = [Route("POST", "/echo", recorder), Route("GET", "/smuggled", recorder)]
    settings = Settings(serve=ServeSettings(host="127.0.0.1", port=0))
    with IntakeServer(settings, routes, token=TOKEN) as intake:
        yield intake


def exchange(server: IntakeServer, data: bytes) -> bytes:
    """Send ``data`` in one go and read until the server closes (5 s at most)."""
    host, port = server.url.rsplit("//", 1)[1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(data)
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except (TimeoutError, ConnectionResetError):
            pass
    return b"".join(chunks)


def post(headers: str, body: str) -> bytes:
    return f"POST /echo HTTP/1.1\r\nHost: x\r\n{AUTH}{headers}\r\n{body}".encode()


CASES = {
    # CL.TE / TE.CL: a front end reading one framing, annex the other
    "cl-and-te": post(
        "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n" + SMUGGLED
    ),
    "te-and-cl": post(
        "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", "0\r\n\r\n" + SMUGGLED
    ),
    "duplicate-cl": post("Content-Length: 0\r\nContent-Length: 0\r\n", SMUGGLED),
    "conflicting-cl": post("Content-Length: 0\r\nContent-Length: 90\r\n", SMUGGLED),
    "cl-list": post("Content-Length: 0, 90\r\n", SMUGGLED),
    "signed-cl": post("Content-Length: +0\r\n", SMUGGLED),
    "gzip-te": post("Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n" + SMUGGLED),
    "chunked-then-identity": post("Transfer-Encoding: chunked, identity\r\n", SMUGGLED),
    "te-twice": post(
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n" + SMUGGLED
    ),
    "te-space-before-colon": post("Transfer-Encoding : chunked\r\n", "0\r\n\r\n" + SMUGGLED),
    "cl-tab-before-colon": post("Content-Length\t: 0\r\n", SMUGGLED),
    "te-obs-fold": post("X-A: 1\r\nTransfer-Encoding:\r\n chunked\r\n", "0\r\n\r\n" + SMUGGLED),
    "te-bare-lf": post("X-A: 1\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n" + SMUGGLED),
    "chunk-size-hex-prefix": post("Transfer-Encoding: chunked\r\n", "0x0\r\n\r\n" + SMUGGLED),
    "chunk-size-negative": post("Transfer-Encoding: chunked\r\n", "-1\r\n\r\n" + SMUGGLED),
    "chunk-size-lf-only": post("Transfer-Encoding: chunked\r\n", "0\n\r\n" + SMUGGLED),
    "chunk-data-overruns": post(
        "Transfer-Encoding: chunked\r\n", "2\r\n{}XX\r\n0\r\n\r\n" + SMUGGLED
    ),
    "chunk-size-overflow": post(
        "Transfer-Encoding: chunked\r\n", "10000000000000001\r\n{}\r\n0\r\n\r\n" + SMUGGLED
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_ambiguous_framing_is_400_and_close_and_nothing_runs(
    server: IntakeServer, recorder: Recorder, case: str
) -> None:
    reply = exchange(server, CASES[case])
    assert reply.startswith(b"HTTP/1.1 400 "), reply[:200]
    head, _, body = reply.partition(b"\r\n\r\n")
    assert b"Connection: close" in head and body.startswith(b'{"error":')
    assert reply.count(b"HTTP/1.1 ") == 1  # one answer: the connection closed after it
    assert recorder.seen == []  # neither the request nor the smuggled one ran


def test_a_well_framed_pipeline_runs_both_requests(
    server: IntakeServer, recorder: Recorder
) -> None:
    """The control: the same bytes with unambiguous framing are two requests, both answered."""
    reply = exchange(
        server,
        post("Transfer-Encoding: chunked\r\n", "2\r\n{}\r\n0\r\n\r\n")
        + (SMUGGLED.replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n")).encode(),
    )
    assert reply.count(b"HTTP/1.1 200 ") == 2
    assert recorder.seen == [("/echo", b"{}"), ("/smuggled", b"")]


def test_an_unauthenticated_request_with_a_body_is_answered_and_closed(
    server: IntakeServer, recorder: Recorder
) -> None:
    head = f"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {len(SMUGGLED)}\r\n\r\n"
    reply = exchange(server, (head + SMUGGLED).encode())
    assert reply.startswith(b"HTTP/1.1 401 ") and reply.count(b"HTTP/1.1 ") == 1
    assert recorder.seen == []


def test_header_caps_answer_431_and_close(server: IntakeServer, recorder: Recorder) -> None:
    big = exchange(server, post(f"X-Pad: {'a' * (40 << 10)}\r\n", ""))
    many = exchange(server, post("".join(f"X-{i}: v\r\n" for i in range(120)), ""))
    for reply in (big, many):
        assert reply.startswith(b"HTTP/1.1 431 ") and b"Connection: close" in reply
    assert recorder.seen == []


def test_a_body_cut_short_is_400_and_nothing_runs(server: IntakeServer, recorder: Recorder) -> None:
    host, port = server.url.rsplit("//", 1)[1].rsplit(":", 1)
    for headers, body, words in (
        ("Content-Length: 10\r\n", "{}", b"after 2 of 10 bytes"),
        ("Transfer-Encoding: chunked\r\n", "5\r\n{}", b"before its last chunk"),
    ):
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(post(headers, body))
            sock.shutdown(socket.SHUT_WR)
            reply = sock.recv(65536)
        assert reply.startswith(b"HTTP/1.1 400 ") and words in reply
    assert recorder.seen == []

"""``services.http_framing``: the strict HTTP/1.1 head parser, body framing and chunked decoding
(RFC 9112), over a socket pair: no server, no network."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from services.http_framing import (
    BodyTooLarge,
    DeadlinePassed,
    FramingError,
    PeerClosed,
    Wire,
    body_framing,
    parse_head,
    read_chunked,
)

HEAD = b"POST /api/v1/lineage?x=1 HTTP/1.1\r\nHost: annex\r\n"


def parsed(fields: bytes, request: bytes = HEAD) -> object:
    return parse_head(request + fields + b"\r\n", max_fields=100)


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


def wire_with(pair: tuple[socket.socket, socket.socket], data: bytes) -> Wire:
    pair[1].sendall(data)
    pair[1].shutdown(socket.SHUT_WR)
    return Wire(pair[0], idle=5)


# --- the head --------------------------------------------------------------------------------


def test_a_plain_head_parses_with_fields_in_order() -> None:
    head = parsed(b"Content-Type:application/json\r\nX-Two: a\r\nx-two:  b \r\n")
    assert (head.method, head.target, head.version) == ("POST", "/api/v1/lineage?x=1", (1, 1))
    assert head.get("content-type") == "application/json"
    assert head.get("X-Two") == "a, b" and head.values("x-two") == ["a", "b"]
    assert head.keep_alive


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        (b"X-A: 1\r\n folded\r\n", "obsolete line folding"),
        (b"X-A: 1\r\n\tfolded\r\n", "obsolete line folding"),
        (b"Content-Length : 5\r\n", "token"),
        (b"Content-Length\t: 5\r\n", "token"),
        (b": 5\r\n", "token"),
        (b"no colon\r\n", "token"),
        (b"X-A: a\x00b\r\n", "control character"),
        (b"X-A: a\nContent-Length: 5\r\n", "bare CR or LF"),
        (b"X-A: a\rb\r\n", "bare CR or LF"),
    ],
)
def test_ambiguous_header_syntax_is_400(fields: bytes, words: str) -> None:
    with pytest.raises(FramingError) as caught:
        parsed(fields)
    assert caught.value.status == 400 and words in caught.value.error


@pytest.mark.parametrize(
    ("line", "status"),
    [
        (b"POST  /x HTTP/1.1\r\n", 400),
        (b"POST /x  HTTP/1.1\r\n", 400),
        (b"POST http://evil/x HTTP/1.1\r\n", 400),
        (b"POST /x HTTP/1.1 \r\n", 400),
        (b"P(ST /x HTTP/1.1\r\n", 400),
        (b"POST /x HTTP/2.0\r\n", 505),
        (b"POST /x\r\n", 400),
    ],
)
def test_a_malformed_request_line_is_refused(line: bytes, status: int) -> None:
    with pytest.raises(FramingError) as caught:
        parsed(b"", request=line)
    assert caught.value.status == status


def test_too_many_fields_is_431() -> None:
    raw = HEAD + b"".join(b"X-%d: v\r\n" % i for i in range(12)) + b"\r\n"
    with pytest.raises(FramingError) as caught:
        parse_head(raw, max_fields=10)
    assert caught.value.status == 431


def test_leading_empty_lines_are_ignored_and_http_1_0_closes() -> None:
    head = parse_head(b"\r\n\r\nGET /healthz HTTP/1.0\r\n\r\n", max_fields=10)
    assert head.target == "/healthz" and not head.keep_alive
    assert not parsed(b"Connection: keep-alive, Close\r\n").keep_alive


# --- body framing ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        b"Content-Length: 5\r\nContent-Length: 5\r\n",
        b"Content-Length: 5\r\nContent-Length: 6\r\n",
        b"Content-Length: 5, 5\r\n",
        b"Content-Length: +5\r\n",
        b"Content-Length: -1\r\n",
        b"Content-Length: 0x10\r\n",
        b"Content-Length: 99999999999999999999\r\n",
        b"Content-Length: \xd9\xa5\r\n",
        b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
        b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
        b"Transfer-Encoding: gzip, chunked\r\n",
        b"Transfer-Encoding: chunked, gzip\r\n",
        b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        b"Transfer-Encoding: identity\r\n",
        b"Transfer-Encoding: xchunked\r\n",
        b"Transfer-Encoding: \r\n",
    ],
)
def test_conflicting_or_unknown_framing_is_400(fields: bytes) -> None:
    with pytest.raises(FramingError) as caught:
        body_framing(parsed(fields))
    assert caught.value.status == 400


def test_transfer_encoding_in_http_1_0_is_400() -> None:
    with pytest.raises(FramingError):
        body_framing(parse_head(b"POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 10))


def test_accepted_framings() -> None:
    assert body_framing(parsed(b"Transfer-Encoding: Chunked\r\n")).chunked
    length = body_framing(parsed(b"Content-Length: 0042\r\n"))
    assert (length.chunked, length.length, length.declared) == (False, 42, True)
    assert not body_framing(parsed(b"")).declared


# --- reading from the socket ----------------------------------------------------------------


def test_read_head_keeps_what_follows_for_the_body(pair: tuple) -> None:
    wire = wire_with(pair, HEAD + b"\r\nBODY")
    assert wire.read_head(1024, time.monotonic() + 5) == HEAD + b"\r\n"
    assert wire.read_exact(4, time.monotonic() + 5) == b"BODY"
    with pytest.raises(PeerClosed):
        wire.read_exact(1, time.monotonic() + 5)


def test_read_head_stops_at_the_cap_without_reading_on(pair: tuple) -> None:
    left, right = pair

    def send() -> None:
        with contextlib.suppress(OSError):  # the reader closes once it has seen enough
            right.sendall(HEAD + b"X: " + b"a" * (1 << 20))

    sender = threading.Thread(target=send)
    sender.start()
    wire = Wire(left, idle=5)
    with pytest.raises(FramingError) as caught:
        wire.read_head(8192, time.monotonic() + 5)
    assert caught.value.status == 431
    assert wire.received < 8192 + 65536  # at most one read beyond the cap
    left.close()  # the sender's sendall fails and its thread ends
    sender.join(5)


def test_the_head_deadline_is_overall_not_per_read(pair: tuple) -> None:
    """A byte every 0.1 s never lets a single read time out; the overall deadline still ends it."""
    left, right = pair
    stop = threading.Event()

    def drip() -> None:
        for byte in HEAD:
            if stop.wait(0.1):
                return
            right.send(bytes([byte]))

    threading.Thread(target=drip, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(DeadlinePassed):
        Wire(left, idle=5).read_head(8192, started + 0.5)
    stop.set()
    assert time.monotonic() - started < 1.0


def chunks(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def test_chunked_body_is_decoded_with_extensions_and_trailers(pair: tuple) -> None:
    body = b"5;name=value\r\nhello\r\n6 ; x\r\n world\r\n0\r\nX-Trailer: t\r\n\r\nNEXT"
    wire = wire_with(pair, body)
    assert read_chunked(wire, 100, time.monotonic() + 5, 1024) == b"hello world"
    assert bytes(wire.buffer) == b"NEXT"


def test_chunked_body_over_the_cap_stops_before_reading_the_chunk(pair: tuple) -> None:
    wire = wire_with(pair, b"8\r\n12345678\r\n" + b"ffffff\r\n")  # the big chunk is never sent
    with pytest.raises(BodyTooLarge) as caught:
        read_chunked(wire, 100, time.monotonic() + 5, 1024)
    assert caught.value.received == 8 + 0xFFFFFF


@pytest.mark.parametrize(
    "body",
    [
        b"0x5\r\nhello\r\n0\r\n\r\n",
        b"-5\r\nhello\r\n0\r\n\r\n",
        b" 5\r\nhello\r\n0\r\n\r\n",
        b"\r\nhello\r\n0\r\n\r\n",
        b"5\nhello\r\n0\r\n\r\n",
        b"5\r\nhelloXX0\r\n\r\n",
        b"1000000000000000\r\n",
        b"5\r\nhello\r\n0\r\n folded\r\n\r\n",
    ],
)
def test_malformed_chunks_are_400(pair: tuple, body: bytes) -> None:
    wire = wire_with(pair, body)
    with pytest.raises(FramingError) as caught:
        read_chunked(wire, 1 << 20, time.monotonic() + 5, 1024)
    assert caught.value.status == 400


def test_a_huge_trailer_section_is_431(pair: tuple) -> None:
    wire = wire_with(pair, b"0\r\n" + b"X-T: aaaaaaaaaaaaaaaaaaaaaaaa\r\n" * 100 + b"\r\n")
    with pytest.raises(FramingError) as caught:
        read_chunked(wire, 1 << 20, time.monotonic() + 5, 1024)
    assert caught.value.status == 431


def test_many_small_chunks_decode_to_the_body(pair: tuple) -> None:
    parts = [bytes([65 + i % 26]) * (i % 7 + 1) for i in range(500)]
    wire = wire_with(pair, chunks(*parts))
    assert read_chunked(wire, 1 << 20, time.monotonic() + 5, 1024) == b"".join(parts)

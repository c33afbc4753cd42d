"""Bounded body reading: the inflate cap, gzip members, the deadline, Content-Length."""

from __future__ import annotations

import gzip
import io
import zlib

import pytest

from collectors.http_body import (
    BodyError,
    BodyTooLarge,
    BodyTooSlow,
    CappedInflater,
    inflated_pieces,
    read_body,
)

DATA = b'{"items":[' + b'"hello world",' * 50_000 + b'"end"]}'


class Response:
    """A urllib3-like response: ``read1`` returns at most ``step`` bytes per call."""

    def __init__(self, body: bytes, step: int = 1000, **headers: str) -> None:
        self.body = io.BytesIO(body)
        self.step = step
        self.headers = {k.replace("_", "-"): v for k, v in headers.items()}
        self.reads = 0

    def read1(self, amt: int, decode_content: bool = False) -> bytes:
        assert decode_content is False
        self.reads += 1
        return self.body.read1(min(amt, self.step))


@pytest.mark.parametrize("step", [1, 7, 777, 1 << 20])
def test_gzip_in_any_chunking_and_in_several_members_inflates_whole(step):
    body = gzip.compress(DATA[:300_000]) + gzip.compress(DATA[300_000:])
    assert (
        read_body(Response(body, step, Content_Encoding="gzip"), max_bytes=len(DATA), deadline=None)
        == DATA
    )


def test_inflating_stops_at_the_cap_not_at_the_bomb_size():
    bomb = gzip.compress(b" " * (32 << 20))
    inflater = CappedInflater("gzip", 1 << 20)
    with pytest.raises(BodyTooLarge, match="more than 1048576 bytes"):
        for start in range(0, len(bomb), 4096):
            inflater.feed(bomb[start : start + 4096])
    assert inflater.size <= (1 << 20) + 1  # never more than the cap was produced


def test_a_plain_body_announcing_more_than_the_cap_is_refused_before_reading():
    response = Response(b"x" * 10, Content_Length="999999")
    with pytest.raises(BodyTooLarge, match="announces 999999 bytes"):
        read_body(response, max_bytes=1000, deadline=None)
    assert response.reads == 0


def test_a_plain_body_over_the_cap_is_refused():
    with pytest.raises(BodyTooLarge):
        read_body(Response(b"x" * 5000), max_bytes=1000, deadline=None)


def test_a_body_still_arriving_at_the_deadline_fails():
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0  # each read takes a second
        return now[0]

    with pytest.raises(BodyTooSlow, match="still arriving at the deadline"):
        read_body(Response(DATA, step=100), max_bytes=len(DATA), deadline=5.0, clock=clock)


def test_truncated_or_corrupt_compressed_bodies_are_errors():
    body = gzip.compress(DATA)
    with pytest.raises(BodyError, match="ends early"):
        read_body(Response(body[:-5], Content_Encoding="gzip"), max_bytes=len(DATA), deadline=None)
    with pytest.raises(BodyError, match="corrupt"):
        read_body(
            Response(b"\x1f\x8b" + b"\x00" * 50, Content_Encoding="gzip"),
            max_bytes=10**6,
            deadline=None,
        )
    with pytest.raises(BodyError, match="unsupported Content-Encoding"):
        read_body(Response(b"x", Content_Encoding="br"), max_bytes=10, deadline=None)


def test_deflate_is_inflated_too():
    body = zlib.compress(DATA)
    assert (
        read_body(Response(body, Content_Encoding="deflate"), max_bytes=len(DATA), deadline=None)
        == DATA
    )


def test_a_stream_is_inflated_in_bounded_pieces():
    body = gzip.compress(b" " * (8 << 20))
    pieces = list(inflated_pieces(Response(body, Content_Encoding="gzip"), piece_bytes=65536))
    assert sum(map(len, pieces)) == 8 << 20
    assert max(map(len, pieces)) <= 65536

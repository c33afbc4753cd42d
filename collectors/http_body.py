"""Reading an HTTP response body with a deadline and a cap on its inflated size.

A server (or whatever answers in its place) decides how fast and how much it sends. Two bodies
must not be able to stall or sink a collector: one trickled a byte at a time (every socket read
succeeds, so a read timeout never fires, and the writer waits forever), and a small gzip body
that inflates a thousandfold (0.5 MB on the wire, half a GiB or more in memory). So the body is
read raw, a bounded chunk at a time (``read1``: at most one socket read per call), the deadline
is checked after every read, and gzip is inflated as a stream with ``max_length``, so that no
more than the cap (plus one chunk) is ever produced before the cap is noticed.

Shared by collectors that read bodies through urllib3 (the Kubernetes client's transport);
``collectors/telemetry/query_range.py`` reads through ``urllib`` with the same inflating rule.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

CHUNK_BYTES = 1 << 16
"""Raw bytes asked for per read (a socket read returns what has arrived, up to this)."""


class BodyError(Exception):
    """A body that could not be read whole (the message says why)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BodyTooLarge(BodyError):
    """The body is, inflates to, or announces more than the cap."""


class BodyTooSlow(BodyError):
    """The body did not arrive in full before the deadline."""


class CappedInflater:
    """Inflates a ``Content-Encoding`` (gzip, deflate or none) incrementally, refusing to
    produce more than ``max_bytes`` in all."""

    def __init__(self, encoding: str | None, max_bytes: int) -> None:
        encoding = (encoding or "").strip().lower()
        if encoding in ("", "identity"):
            self._inflate = None
        elif encoding in ("gzip", "x-gzip"):
            self._inflate = zlib.decompressobj(wbits=31)
        elif encoding == "deflate":
            self._inflate = zlib.decompressobj()
        else:
            raise BodyError(f"unsupported Content-Encoding {encoding!r}")
        self.max_bytes = max_bytes
        self.size = 0
        """Bytes produced so far (inflated)."""
        self.wire_bytes = 0

    def feed(self, chunk: bytes) -> bytes:
        """The inflated bytes of ``chunk``; raises ``BodyTooLarge`` past the cap."""
        self.wire_bytes += len(chunk)
        if self._inflate is None:
            out = chunk
        else:
            try:
                out = self._inflate.decompress(chunk, self.max_bytes - self.size + 1)
            except zlib.error as error:
                raise BodyError(f"corrupt compressed body: {error}") from None
            if self._inflate.unconsumed_tail:
                self._too_large()
        self.size += len(out)
        if self.size > self.max_bytes:
            self._too_large()
        return out

    def finish(self) -> None:
        """Raises ``BodyError`` when a compressed body ended before its end marker."""
        if self._inflate is not None and not self._inflate.eof:
            raise BodyError("compressed body ends early (the connection dropped?)")

    def _too_large(self) -> None:
        raise BodyTooLarge(
            f"the body inflates to more than {self.max_bytes} bytes "
            f"(from {self.wire_bytes} bytes received)"
        )


def raw_chunks(response: Any, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The body as sent (still compressed), a socket read at a time, until its end."""
    read1 = getattr(response, "read1", None)
    while True:
        if read1 is not None:
            chunk = read1(chunk_bytes, decode_content=False)
        else:
            chunk = response.read(chunk_bytes, decode_content=False)
        if not chunk:
            return
        yield chunk


def header(response: Any, name: str) -> str | None:
    headers = getattr(response, "headers", None) or {}
    value = headers.get(name) if hasattr(headers, "get") else None
    return str(value) if value is not None else None


def read_body(
    response: Any,
    *,
    max_bytes: int,
    deadline: float | None,
    clock: Callable[[], float] = time.monotonic,
) -> bytes:
    """The whole body of a urllib3-like ``response``, inflated, within ``deadline`` (on
    ``clock``) and at most ``max_bytes`` inflated.

    Raises ``BodyTooSlow``, ``BodyTooLarge`` or ``BodyError``; the caller then closes the
    response (a body left mid-way cannot go back to the connection pool). A single read waits
    at most the connection's read timeout, so the deadline can be overrun by that much.
    """
    encoding = header(response, "Content-Encoding")
    length = header(response, "Content-Length")
    if not encoding and length is not None and length.isdigit() and int(length) > max_bytes:
        raise BodyTooLarge(f"the body announces {int(length)} bytes, more than {max_bytes}")
    inflater = CappedInflater(encoding, max_bytes)
    parts: list[bytes] = []
    for chunk in raw_chunks(response):
        parts.append(inflater.feed(chunk))
        if deadline is not None and clock() > deadline:
            raise BodyTooSlow(
                f"the body was still arriving at the deadline ({inflater.wire_bytes} bytes "
                "received)"
            )
    inflater.finish()
    return b"".join(parts)


def inflated_pieces(
    response: Any, *, piece_bytes: int = CHUNK_BYTES, deadline: float | None = None
) -> Iterator[bytes]:
    """A long-lived body (a watch stream) inflated into pieces of at most ``piece_bytes``,
    however much a compressed chunk inflates to; no cap on the total (the consumer bounds
    what it keeps). Raises ``BodyTooSlow`` once ``deadline`` (``time.monotonic``) passes."""
    encoding = (header(response, "Content-Encoding") or "").strip().lower()
    if encoding in ("", "identity"):
        inflate = None
    elif encoding in ("gzip", "x-gzip"):
        inflate = zlib.decompressobj(wbits=31)
    elif encoding == "deflate":
        inflate = zlib.decompressobj()
    else:
        raise BodyError(f"unsupported Content-Encoding {encoding!r}")
    for chunk in raw_chunks(response):
        if inflate is None:
            yield chunk
        else:
            data = chunk
            while data:
                try:
                    piece = inflate.decompress(data, piece_bytes)
                except zlib.error as error:
                    raise BodyError(f"corrupt compressed body: {error}") from None
                data = inflate.unconsumed_tail
                if piece:
                    yield piece
        if deadline is not None and time.monotonic() > deadline:
            raise BodyTooSlow("the response was still open at its deadline")

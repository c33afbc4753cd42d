"""Reading an HTTP response body with a deadline and a cap on its inflated size.

A server (or whatever answers in its place) decides how fast and how much it sends. Two bodies
must not be able to stall or sink a collector: one trickled a byte at a time (every socket read
succeeds, so a read timeout never fires, and the writer waits forever), and a small gzip body
that inflates a thousandfold (0.5 MB on the wire, half a GiB or more in memory). So the body is
read raw, a bounded chunk at a time (``read1``: at most one socket read per call), the deadline
is checked after every read, and gzip is inflated as a stream with ``max_length``, so that no
more than the cap (plus one chunk) is ever produced before the cap is noticed.

Shared by the collectors that read bodies over HTTP: through urllib3 (the Kubernetes client's
transport) and through ``urllib`` (``collectors/telemetry/query_range.py``, Prometheus and the
exporters).
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


class _Inflate:
    """A ``Content-Encoding`` (gzip, deflate or none) inflated incrementally, ``limit`` bytes
    of output per call at most; gzip may come as several members, one after the other."""

    def __init__(self, encoding: str | None) -> None:
        encoding = (encoding or "").strip().lower()
        if encoding in ("", "identity"):
            self.wbits: int | None = None
        elif encoding in ("gzip", "x-gzip"):
            self.wbits = 31
        elif encoding == "deflate":
            self.wbits = 15
        else:
            raise BodyError(f"unsupported Content-Encoding {encoding!r}")
        self._z = zlib.decompressobj(wbits=self.wbits) if self.wbits is not None else None
        self.pending = b""
        """Input not inflated yet (the caller asked for less output than it holds)."""

    def take(self, data: bytes, limit: int) -> bytes:
        """Inflate ``pending + data`` into at most ``limit`` bytes; the rest stays pending."""
        if self._z is None:
            return data
        data = self.pending + data if self.pending else data
        self.pending = b""
        parts: list[bytes] = []
        size = 0
        try:
            while data and size < limit:
                out = self._z.decompress(data, limit - size)
                parts.append(out)
                size += len(out)
                if self._z.eof:
                    # Whatever follows the end of a gzip member is the next member (at the
                    # end, ``unused_data`` holds the rest of the input; ``unconsumed_tail``
                    # repeats it).
                    data = self._z.unused_data
                    if data and self.wbits != 31:
                        raise BodyError("data after the end of the compressed body")
                    if data:
                        self._z = zlib.decompressobj(wbits=31)
                else:
                    data = self._z.unconsumed_tail
                    if not out:
                        break
        except zlib.error as error:
            raise BodyError(f"corrupt compressed body: {error}") from None
        self.pending = data
        return b"".join(parts) if len(parts) != 1 else parts[0]

    def finish(self) -> None:
        if self._z is not None and (not self._z.eof or self.pending):
            raise BodyError("compressed body ends early (the connection dropped?)")


class CappedInflater:
    """Inflates a ``Content-Encoding`` (gzip, deflate or none) incrementally, refusing to
    produce more than ``max_bytes`` in all."""

    def __init__(self, encoding: str | None, max_bytes: int) -> None:
        self._inflate = _Inflate(encoding)
        self.max_bytes = max_bytes
        self.size = 0
        """Bytes produced so far (inflated)."""
        self.wire_bytes = 0

    def feed(self, chunk: bytes) -> bytes:
        """The inflated bytes of ``chunk``; raises ``BodyTooLarge`` past the cap."""
        self.wire_bytes += len(chunk)
        out = self._inflate.take(chunk, self.max_bytes - self.size + 1)
        self.size += len(out)
        if self.size > self.max_bytes or self._inflate.pending:
            self._too_large()  # the output stopped at the cap with input left over
        return out

    def finish(self) -> None:
        """Raises ``BodyError`` when a compressed body ended before its end marker."""
        self._inflate.finish()

    def _too_large(self) -> None:
        raise BodyTooLarge(
            f"the body inflates to more than {self.max_bytes} bytes "
            f"(from {self.wire_bytes} bytes received)"
        )


def raw_chunks(response: Any, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The body as sent (still compressed), a socket read at a time, until its end."""
    read1 = getattr(response, "read1", None)
    # urllib3 would inflate unless told not to; http.client (urllib) never inflates
    raw = {"decode_content": False} if hasattr(response, "decode_content") else {}
    while True:
        if read1 is not None:
            chunk = read1(chunk_bytes, **raw)
        else:
            chunk = response.read(chunk_bytes, **raw)
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
    inflate = _Inflate(header(response, "Content-Encoding"))
    for chunk in raw_chunks(response):
        piece = inflate.take(chunk, piece_bytes)
        while piece:
            yield piece
            piece = inflate.take(b"", piece_bytes) if inflate.pending else b""
        if deadline is not None and time.monotonic() > deadline:
            raise BodyTooSlow("the response was still open at its deadline")

"""HTTP/1.1 message framing for ``annex serve`` (RFC 9112), strict where leniency lets a
request be read two ways.

The intake faces unauthenticated networks, so this module reads the request head and body
itself instead of ``http.server``'s lenient parser (which folds obs-fold lines, accepts
whitespace before the colon, reads 100 header lines of 64 KiB each and lets a body's bytes be
read as the next request when framing headers disagree). Everything here is bounded:

* ``Wire`` reads from a socket against an *overall* deadline (each ``recv`` waits at most what
  is left of it), so a client sending one byte every few seconds cannot stretch a read.
* ``parse_head`` refuses what a proxy in front of annex might read differently (request
  smuggling): obs-fold, whitespace or any non-token character before the colon, control
  characters in values, a bare CR or LF, duplicate or non-numeric ``Content-Length``,
  ``Content-Length`` together with ``Transfer-Encoding``, and any transfer coding but a single
  final ``chunked``. Each is ``FramingError`` (400), after which the connection is closed
  without reading on.
* ``read_chunked`` decodes a chunked body as it arrives and stops with 413 as soon as the
  decoded size passes the cap (nothing above the cap is buffered).
"""

from __future__ import annotations

import re
import socket
import time
from dataclasses import dataclass

TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
REQUEST_LINE = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+) (/[^\x00-\x20\x7f]*) HTTP/(\d)\.(\d)")
FIELD_VALUE_FORBIDDEN = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,15})[ \t]*(;[^\r\n]*)?")
MAX_LEADING_EMPTY_LINES = 4
"""RFC 9112 §2.2: ignore a few empty lines before the request line (after a previous body)."""
MAX_CHUNK_LINE_BYTES = 4096
"""A chunk-size line, extensions included (extensions are ignored)."""


class FramingError(Exception):
    """The request cannot be read unambiguously: answer ``status`` and close the connection."""

    def __init__(self, status: int, error: str, hint: str | None = None) -> None:
        super().__init__(error)
        self.status = status
        self.error = error
        self.hint = hint


class DeadlinePassed(Exception):
    """The overall deadline of a read passed (or the per-read idle limit)."""


class PeerClosed(Exception):
    """The client closed the connection (or it was cut by admission)."""


@dataclass(frozen=True)
class RequestHead:
    method: str
    target: str
    version: tuple[int, int]
    fields: tuple[tuple[str, str], ...]
    """(lower-cased name, value) in the order sent."""
    size: int
    """Bytes of the head on the wire."""

    def values(self, name: str) -> list[str]:
        return [value for field_name, value in self.fields if field_name == name]

    def get(self, name: str, default: str | None = None) -> str | None:
        """The field's value; several lines of one field are joined with ", " (RFC 9110 §5.3)."""
        found = self.values(name.lower())
        return ", ".join(found) if found else default

    @property
    def keep_alive(self) -> bool:
        tokens = {t.strip().lower() for t in (self.get("connection") or "").split(",")}
        if self.version >= (1, 1):
            return "close" not in tokens
        return False  # HTTP/1.0: one request per connection


@dataclass(frozen=True)
class BodyFraming:
    """How the body is delimited: ``chunked``, or ``length`` bytes (0: no body)."""

    chunked: bool
    length: int
    declared: bool = True
    """False when neither Content-Length nor Transfer-Encoding was sent."""


class Wire:
    """A socket read through a buffer, every read against an overall deadline
    (``time.monotonic()`` seconds); ``idle`` bounds each single wait as well."""

    def __init__(self, sock: socket.socket, idle: float) -> None:
        self.sock = sock
        self.idle = idle
        self.buffer = bytearray()
        self.received = 0

    def _fill(self, deadline: float, want: int = 65536) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DeadlinePassed
        self.sock.settimeout(min(remaining, self.idle))
        try:
            data = self.sock.recv(want)
        except TimeoutError:
            raise DeadlinePassed from None
        if not data:
            raise PeerClosed
        self.received += len(data)
        self.buffer += data

    def read_head(self, max_bytes: int, deadline: float) -> bytes:
        """Bytes up to and including the empty line that ends the head; ``FramingError`` 431
        once ``max_bytes`` pass without one. ``PeerClosed`` if the client leaves first."""
        start = 0
        while True:
            end = self.buffer.find(b"\r\n\r\n", start)
            if end >= 0:
                if end + 4 > max_bytes:
                    break
                head = bytes(self.buffer[: end + 4])
                del self.buffer[: end + 4]
                return head
            if len(self.buffer) > max_bytes:
                break
            start = max(0, len(self.buffer) - 3)
            self._fill(deadline, min(65536, max_bytes + 4 - len(self.buffer)))
        raise FramingError(
            431,
            f"the request head is larger than {max_bytes:,} bytes",
            "send fewer or shorter header fields (serve.max_header_bytes)",
        )

    def read_line(self, max_bytes: int, deadline: float) -> bytes:
        """One CRLF-terminated line without its CRLF; 400 if longer than ``max_bytes``."""
        start = 0
        while True:
            end = self.buffer.find(b"\r\n", start)
            if end >= 0 and end <= max_bytes:
                line = bytes(self.buffer[:end])
                del self.buffer[: end + 2]
                return line
            if end > max_bytes or len(self.buffer) > max_bytes + 1:
                raise FramingError(400, "a line of the chunked body is too long")
            start = max(0, len(self.buffer) - 1)
            self._fill(deadline, 4096)

    def read_exact(self, count: int, deadline: float) -> bytes:
        while len(self.buffer) < count:
            self._fill(deadline, min(1 << 20, count - len(self.buffer)))
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data


def parse_head(raw: bytes, max_fields: int) -> RequestHead:
    """The request line and fields of ``raw`` (as ``Wire.read_head`` returns it), strictly."""
    lines = raw[:-4].split(b"\r\n")
    skipped = 0
    while lines and lines[0] == b"" and skipped < MAX_LEADING_EMPTY_LINES:
        lines.pop(0)
        skipped += 1
    if not lines or not lines[0]:
        raise FramingError(400, "the request has no request line")
    for line in lines:
        if b"\r" in line or b"\n" in line:
            raise FramingError(400, "a bare CR or LF in the request head", "end lines with CRLF")
    match = REQUEST_LINE.fullmatch(lines[0])
    if match is None:
        raise FramingError(
            400,
            "the request line is not `METHOD /path HTTP/1.1`",
            "one space between method, origin-form target and version",
        )
    method, target, major, minor = match.groups()
    version = (int(major), int(minor))
    if version not in ((1, 0), (1, 1)):
        raise FramingError(505, f"HTTP/{version[0]}.{version[1]} is not supported", "use HTTP/1.1")
    if len(lines) - 1 > max_fields:
        raise FramingError(
            431,
            f"the request has more than {max_fields} header fields",
            "send fewer header fields (serve.max_header_fields)",
        )
    fields = []
    for line in lines[1:]:
        if line[:1] in (b" ", b"\t"):
            raise FramingError(400, "obsolete line folding in a header field", "one line per field")
        name, colon, value = line.partition(b":")
        if not colon or TOKEN.fullmatch(name) is None:
            raise FramingError(
                400,
                "a header field name is empty or has characters outside a token "
                "(whitespace before the colon?)",
            )
        value = value.strip(b" \t")
        if FIELD_VALUE_FORBIDDEN.search(value):
            raise FramingError(400, "a control character in a header field value")
        fields.append((name.decode("ascii").lower(), value.decode("latin-1")))
    return RequestHead(
        method=method.decode("ascii"),
        target=target.decode("latin-1"),
        version=version,
        fields=tuple(fields),
        size=len(raw),
    )


def body_framing(head: RequestHead) -> BodyFraming:
    """How ``head``'s body is delimited (RFC 9112 §6.3), refusing every ambiguous combination
    with ``FramingError`` 400."""
    codings = head.values("transfer-encoding")
    lengths = head.values("content-length")
    if codings and lengths:
        raise FramingError(
            400,
            "both Transfer-Encoding and Content-Length are set",
            "send one of them: Content-Length, or Transfer-Encoding: chunked",
        )
    if codings:
        if head.version < (1, 1):
            raise FramingError(400, "Transfer-Encoding in an HTTP/1.0 request")
        listed = [c.strip().lower() for value in codings for c in value.split(",")]
        if listed != ["chunked"]:
            raise FramingError(
                400,
                f"transfer coding {', '.join(listed)!r} is not accepted",
                "send Transfer-Encoding: chunked alone (compress with Content-Encoding: gzip)",
            )
        return BodyFraming(chunked=True, length=0)
    if lengths:
        if len(lengths) > 1 or "," in lengths[0]:
            raise FramingError(400, "Content-Length is given more than once")
        value = lengths[0]
        if not value.isascii() or not value.isdigit() or len(value) > 18:
            raise FramingError(400, "Content-Length is not a non-negative integer")
        return BodyFraming(chunked=False, length=int(value))
    return BodyFraming(chunked=False, length=0, declared=False)


class BodyTooLarge(Exception):
    """The decoded body passed the cap (after ``received`` bytes)."""

    def __init__(self, received: int) -> None:
        super().__init__(received)
        self.received = received


def read_chunked(wire: Wire, limit: int, deadline: float, max_trailer_bytes: int) -> bytes:
    """The decoded chunked body; ``BodyTooLarge`` as soon as a chunk would pass ``limit``
    (before its data is read), ``FramingError`` 400 for a malformed chunk. The trailer
    section is read (bounded) and dropped."""
    parts: list[bytes] = []
    total = 0
    while True:
        line = wire.read_line(MAX_CHUNK_LINE_BYTES, deadline)
        match = CHUNK_SIZE.fullmatch(line)
        if match is None:
            raise FramingError(400, "a chunk size is not a hexadecimal number")
        size = int(match.group(1), 16)
        if size == 0:
            break
        if total + size > limit:
            raise BodyTooLarge(total + size)
        parts.append(wire.read_exact(size, deadline))
        total += size
        if wire.read_exact(2, deadline) != b"\r\n":
            raise FramingError(400, "a chunk's data is not followed by CRLF")
    trailer = 0
    while line := wire.read_line(MAX_CHUNK_LINE_BYTES, deadline):
        trailer += len(line) + 2
        if trailer > max_trailer_bytes:
            raise FramingError(431, "the chunked body's trailer section is too large")
        if line[:1] in (b" ", b"\t") or TOKEN.fullmatch(line.partition(b":")[0]) is None:
            raise FramingError(400, "a malformed trailer field")
    return b"".join(parts)

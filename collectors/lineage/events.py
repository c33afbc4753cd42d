"""Decode, check and identify the OpenLineage events of one POST body. Pure: no I/O, no clock.

``parse_events(body, content_encoding=..., now=...)`` takes the raw body of ``POST /lineage``
or ``POST /lineage/batch`` and returns a ``ParsedBatch``: every event either accepted (with
its ``event_id``) or rejected with a reason from ``REASONS`` and a message naming the field.

Body rules (the whole body is refused; one ``Rejected`` with ``index=None``):

* ``Content-Encoding`` ``gzip``/``x-gzip``/``deflate`` is inflated as a stream and stops as soon
  as more than ``max_bytes`` would come out (``too_large``): a compressed bomb is never
  inflated, at most ``max_bytes + 1`` bytes are held. An unsupported encoding or a corrupt or
  truncated stream is ``invalid_json`` (the body cannot be read as JSON);
* a plain body over ``max_bytes`` is ``too_large``; so is a batch of more than ``max_events``;
* not JSON (orjson: strict RFC 8259, no NaN/Infinity, valid UTF-8 and surrogates, at most
  1024 levels deep, numbers within the IEEE-754 double range) is ``invalid_json``.

A JSON object is one event; a JSON array is a batch (the request body of ``/lineage/batch``
in OpenLineage.yml is an array of events). Anything else is one event that fails the schema.

Event rules, in this order (the first that applies is the reason; the message lists up to
five violations):

* ``too_large``: nested more than 254 levels deep (orjson's serialisation limit);
* ``too_many_datasets``: more than ``max_datasets`` inputs + outputs;
* ``facet_too_large``: a facet whose compact JSON is over ``max_facet_bytes`` is dropped from
  the event, which is kept; a ``Finding`` records it (reference §4);
* schema violations (collectors.lineage.validate: ``screen_event``'s fast verdict, then
  ``check_event`` to name the reason of an invalid event), mapped to ``unknown_event_type``
  (``eventType`` not in the enum), ``bad_run_id`` (``run.runId`` missing, not a string or not
  a UUID), ``missing_timezone`` (``eventTime`` a date-time without offset) or
  ``schema_violation`` (all other, and an event only the fast validator refuses);
* ``bad_run_id`` also for a ``runId`` the schema's ``format: uuid`` lets through in a
  non-canonical spelling (``{...}``, ``urn:uuid:``, ``+``, ``_``): annex stores runIds as UUID;
* ``future_event_time``: ``eventTime`` more than ``future_tolerance`` (24 h) after ``now``.

A standard facet (``dataSource``, ``schema``, ``parent``, ...) that breaks its own official
schema does not reject the event: it is kept as sent, with a ``facet_schema_violation``
``Finding`` naming the facet and the reason (``collectors.lineage.standard_facets``).

``event_id`` is the SHA-256 (hex) of the event's RFC 8785 (JCS) canonical JSON, computed over
the event as received, before any facet is dropped, so a resent event gets the same id
whatever its key order or whitespace. That canonical text is also the payload stored
(``Accepted.text``), so an event_id can be checked against its payload with ``sha256sum``;
except where a facet was dropped (the payload lacks it) or where the event has an integer
beyond 2**53 (the payload keeps orjson's exact text). Limits of ``canonical_json``: a number
is taken as an IEEE-754 double, as RFC 8785 says, so integers beyond 2**53 lose precision
(orjson already decodes integers beyond 64 bits as doubles); duplicate object keys are not
detected (the last one wins, as in orjson) although RFC 8785 requires I-JSON input.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import re
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, timezone
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any, Literal

import orjson

from collectors.lineage import native
from collectors.lineage.standard_facets import facet_violations
from collectors.lineage.validate import (
    DISAGREEMENT,
    Violation,
    check_event,
    fast_violation,
    format_path,
    screen_event,
)

log = logging.getLogger(__name__)

__all__ = [
    "MAX_BYTES",
    "MAX_DATASETS",
    "MAX_EVENTS",
    "MAX_FACET_BYTES",
    "REASONS",
    "Accepted",
    "Finding",
    "ParsedBatch",
    "Reason",
    "Rejected",
    "canonical_json",
    "event_id",
    "parse_event_time",
    "parse_events",
]

Reason = Literal[
    "invalid_json",
    "schema_violation",
    "unknown_event_type",
    "bad_run_id",
    "missing_timezone",
    "future_event_time",
    "too_large",
    "too_many_datasets",
    "facet_too_large",
    "facet_schema_violation",
]
REASONS: tuple[str, ...] = Reason.__args__  # type: ignore[attr-defined]

MAX_BYTES = 5 * 1024 * 1024
MAX_EVENTS = 1000
MAX_DATASETS = 1000
MAX_FACET_BYTES = 256 * 1024
FUTURE_TOLERANCE = timedelta(hours=24)
RAW_KEEP = 64 * 1024  # bytes of a refused body kept for audit.rejected
_MAX_DEPTH = 254  # deepest nesting orjson serialises; a deeper event is too_large


@dataclass(frozen=True, slots=True)
class Finding:
    """Something the ingester changed or noticed in an accepted event (``facet_too_large``,
    ``facet_schema_violation``)."""

    index: int
    code: Reason
    path: str
    message: str
    detail: str = ""  # what is stored after the path (a facet violation's reason)

    @property
    def record(self) -> str:
        """The text stored with the event (``core.lineage_events.findings``)."""
        return (
            f"{self.code}: {self.path}: {self.detail}"
            if self.detail
            else f"{self.code}: {self.path}"
        )


@dataclass(frozen=True, slots=True)
class Accepted:
    index: int  # position in the batch (0 for a single event)
    event_id: str  # sha256 hex of the RFC 8785 canonical JSON of the event as received
    kind: str  # RunEvent | JobEvent | DatasetEvent
    event_time: datetime  # eventTime, timezone-aware, offset as sent
    event: dict[str, Any]  # the event, less any facet dropped as too large
    findings: tuple[Finding, ...] = ()
    duplicate: bool = False  # same event_id as an earlier event of this batch
    text: bytes | None = None  # the payload to store (see _check_one; None: write ``event``)


@dataclass(frozen=True, slots=True)
class Rejected:
    index: int | None  # position in the batch; None when the whole body is refused
    reason: Reason
    message: str
    path: str = ""  # the offending field ("" for the body)
    raw: bytes = b""  # the event's JSON, or the first RAW_KEEP bytes of a refused body
    retriable: bool = False
    event_id: str | None = None  # as for Accepted, when the event could be canonicalised


@dataclass(frozen=True, slots=True)
class ParsedBatch:
    accepted: tuple[Accepted, ...]
    rejected: tuple[Rejected, ...]
    received: int  # events in the body (0 when the body itself is refused)
    body_bytes: int  # bytes of (decompressed) body read; at most max_bytes + 1
    batch: bool  # the body was a JSON array
    findings: tuple[Finding, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.rejected

    def response(self) -> dict[str, Any]:
        """The ``/lineage/batch`` 200 response body of OpenLineage.yml.

        A refused body (``index`` None) appears as index -1; the HTTP layer should rather
        answer it with 400 (``invalid_json``) or 413 (``too_large``).
        """
        retriable = sum(r.retriable for r in self.rejected)
        return {
            "status": "success" if not self.rejected else "partial_success",
            "summary": {
                "received": self.received,
                "successful": len(self.accepted),
                "failed": len(self.rejected),
                "retriable": retriable,
                "non_retriable": len(self.rejected) - retriable,
            },
            "failed_events": [
                {
                    "index": r.index if r.index is not None else -1,
                    "reason": r.reason,
                    "retriable": r.retriable,
                }
                for r in self.rejected
            ],
        }


# ---------------------------------------------------------------------------------------------
# RFC 8785 canonical JSON


def _utf16_key(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")


def es_number(value: float | int) -> str:
    """ECMAScript ``Number.prototype.toString`` of the double nearest ``value``.

    RFC 8785 section 3.2.2.3; integers within 2**53 are printed exactly.
    """
    if isinstance(value, int) and -(2**53) <= value <= 2**53:
        return str(value)
    v = float(value)  # OverflowError for integers beyond the double range
    if v != v or v in (float("inf"), float("-inf")):
        raise ValueError("NaN and Infinity are not JSON numbers")
    if v == 0:
        return "0"
    sign = "-" if v < 0 else ""
    text = repr(abs(v))  # shortest round-trip digits, as ECMAScript picks them
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    n = len(whole) + (int(exp) if exp else 0)  # value = 0.<digits> * 10**n
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * -n + digits
    else:
        e = n - 1
        exp_text = f"e{'+' if e >= 0 else '-'}{abs(e)}"
        out = (digits if k == 1 else digits[0] + "." + digits[1:]) + exp_text
    return sign + out


def _canon(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(encode_basestring(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int | float):
        out.append(es_number(value))
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for key in sorted(value, key=_utf16_key):
            if not first:
                out.append(",")
            first = False
            out.append(encode_basestring(key))
            out.append(":")
            _canon(value[key], out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _canon(item, out)
        out.append("]")
    else:
        raise TypeError(f"not a JSON value: {type(value).__name__}")


# orjson's sorted output is already RFC 8785 for the strings (it escapes exactly what
# ECMAScript's JSON.stringify escapes, in the same spelling: a test compares every code point
# below U+0100 and the line separators), for integers up to 2**53 and for keys of the Basic
# Multilingual Plane (UTF-8 byte order is UTF-16 code-unit order there). Floats are where they
# differ: an integral float (``1.0``) is spelled as an integer by ECMAScript, and outside
# [1e-4, 1e16) the two switch to exponents at different points.
_BELOW_ASTRAL = bytes(range(0xF0))  # every byte but the lead bytes of 4-byte UTF-8 sequences
_ORJSON_CANONICAL = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER
_DIGITS = frozenset(b"0123456789")
_NUMBER_CHARS = frozenset(b"0123456789.-")
_BEFORE_NUMBER = frozenset(b":,[")
_INTEGRAL_FLOAT_END = re.compile(rb"\.0[,}\]]")
_EXPONENT_MINUS = re.compile(rb"e-[0-9]+[,}\]]")
_EXPONENT_PLUS = re.compile(rb"e\+[0-9]+[,}\]]")
_MINUS = ord("-")


def _has_astral(out: bytes) -> bool:
    """Whether orjson's UTF-8 holds a character outside the Basic Multilingual Plane (a lead
    byte 0xF0-0xF4; valid UTF-8 has no byte above). ``translate`` keeps only such bytes in
    one C pass, several times faster than a regular expression over a non-ASCII text."""
    return not out.isascii() and bool(out.translate(None, _BELOW_ASTRAL))


def _integral_floats_as_integers(out: bytes) -> bytes:
    r"""orjson's compact output with every integral float spelled as ECMAScript spells it:
    ``1.0`` as ``1``, ``-0.0`` as ``0``.

    Such a number token is ``-?[0-9]+.0`` after ``:``, ``,`` or ``[`` and before ``,``, ``}``
    or ``]``; the same text inside a string (``"v1.0,"``) must stay. A position is inside a
    string when an odd number of string delimiters come before it. Escapes are read left to
    right, as a decoder does: each escaped backslash ``\\`` is overwritten with ``__``, then
    each escaped quote ``\"`` (no other escape holds a backslash or a quote); the copy has the
    same length and its every ``"`` is a delimiter, so counting them is exact. This replaces
    a blind text replacement checked by decoding the result again (decoding 5 KB costs more
    than writing it). The candidates, ``.0`` before a closing character, are found by one
    regular expression (a literal prefix: ``re`` skips to each ``.0`` as ``find`` does), not
    by visiting every ``.0`` (``0.05``, ``v1.0.3``) from Python: 7-9 against 12-14 µs an event.
    """
    first = _INTEGRAL_FLOAT_END.search(out)
    if first is None:
        return out
    plain = out.replace(b"\\\\", b"__").replace(b'\\"', b"__") if b"\\" in out else out
    pieces: list[bytes] = []
    last = quotes = counted = 0
    for match in _INTEGRAL_FLOAT_END.finditer(out, first.start()):
        at = match.start()
        start = at
        while start and out[start - 1] in _DIGITS:
            start -= 1
        token = start - 1 if start and out[start - 1] == _MINUS else start
        if start < at and token and out[token - 1] in _BEFORE_NUMBER:
            quotes += plain.count(b'"', counted, token)
            counted = token
            if not quotes & 1:  # a number token, not text in a string
                pieces.append(out[last:token])
                pieces.append(b"0" if out[token:at] == b"-0" else out[token:at])
                last = at + 2
    if not pieces:
        return out
    pieces.append(out[last:])
    return b"".join(pieces)


def _has_exponent(out: bytes) -> bool:
    """Whether a number token of compact JSON may have an exponent (``1e+16``, ``2.5e-7``):
    ECMAScript switches to exponents at other magnitudes than orjson. Text in strings that
    looks like one (``9a2e-5d1f`` of a UUID does not) only costs the slower path.

    In compact JSON an exponent's digits end the token, before ``,``, ``}`` or ``]``: the
    candidates are found by a regular expression with a literal prefix (``e-``, and ``e+``
    only in a text holding a ``+``, one ``memchr``), so the sign of a UUID's group (``2e-4f``)
    is passed over in C; each candidate is confirmed by walking back to the token's start
    (6 against 10 µs an event with a ``find`` loop visiting every ``e-``)."""
    searches = (_EXPONENT_MINUS, _EXPONENT_PLUS) if b"+" in out else (_EXPONENT_MINUS,)
    for search in searches:  # orjson writes a lower-case e and always a sign
        for match in search.finditer(out):
            at = match.start()
            start = at
            while start > 0 and out[start - 1] in _NUMBER_CHARS:
                start -= 1
            if start < at and start > 0 and out[start - 1] in _BEFORE_NUMBER:
                return True
    return False


class _NotOrjsonCanonical(Exception):
    """A value orjson would not spell as RFC 8785 does, even with integral floats as ints."""


def canonical_json(value: Any) -> bytes:
    """RFC 8785 canonical JSON (UTF-8) of a decoded JSON value; limits in the module doc.

    orjson writes it (an order of magnitude faster than walking the value in Python), and its
    integral floats are respelled in the text (``_integral_floats_as_integers``); where a
    number may have an exponent, it writes it again with integral floats swapped for ints in
    the value (and put back after). Values it would spell differently (integers beyond 2**53,
    floats outside [1e-4, 1e16) where the spellings differ) and keys outside the Basic
    Multilingual Plane (sorted by UTF-16 code units, not code points) take the reference walk,
    ``canonical_json_reference``.
    """
    if type(value) is not float:
        try:
            out = orjson.dumps(value, option=_ORJSON_CANONICAL)
        except (orjson.JSONEncodeError, TypeError):
            return canonical_json_reference(value)
        return _canonical_from_sorted(value, out)
    return _canonical_swapped(value)


def _canonical_from_sorted(value: Any, out: bytes) -> bytes:
    """``canonical_json`` of ``value`` given ``out``, orjson's ``_ORJSON_CANONICAL`` text of it
    (the caller may need that text too: it is written once). The text's numbers are respelled
    in C (``canonical.c``) where it was built, else by the regular expressions below."""
    respell = respell_in_c()
    if respell is not None:
        written = respell(out)
        if type(written) is bytes:
            return written
        if written == _RESPELL_EXPONENT:
            return _canonical_swapped(value)
        if written == _RESPELL_ASTRAL:
            return canonical_json_reference(value)
        # else not orjson's text (a string left open): the rule below decides
    if _has_astral(out):
        return canonical_json_reference(value)
    if not _has_exponent(out):
        return _integral_floats_as_integers(out)
    return _canonical_swapped(value)


_CANONICAL_SOURCE = Path(__file__).with_name("canonical.c")
_RESPELL_EXPONENT = -1  # canonical.c's codes
_RESPELL_ASTRAL = -2
_respell: Callable[[bytes], bytes | int] | None = None
_respell_loaded = False
_respell_buffers = threading.local()


def respell_in_c() -> Callable[[bytes], bytes | int] | None:
    """``canonical.c``'s respelling as a function of orjson's text: the canonical text, or the
    C's code where the value must be written again or walked (``_RESPELL_EXPONENT``,
    ``_RESPELL_ASTRAL``). None where the C cannot be built, with one warning a process: the
    regular expressions give the same texts, about 4-10 µs an event slower.

    PyPI's RFC 8785 libraries are far slower (issue 36, ``python -m bench.lineage_readers``:
    ``rfc8785``, pure Python, 27x this path's time; ``canonicaljson`` 5x, and not RFC 8785 for
    floats), so the C stays, with a coverage-guided fuzz target (``tests/fuzz/
    fuzz_canonical.py``) holding it equal to the Python path and the RFC 8785 walk."""
    global _respell, _respell_loaded
    if _respell_loaded:
        return _respell
    try:
        library = native.library(_CANONICAL_SOURCE, "annex's canonical JSON numbers")
    except native.NativeCodeUnavailable as exc:
        log.warning("%s", exc)
        _respell_loaded = True
        return None
    numbers = library.annex_canonical_numbers
    numbers.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_void_p]
    numbers.restype = ctypes.c_int64

    def respell(out: bytes) -> bytes | int:
        buffer = getattr(_respell_buffers, "buffer", None)  # one per thread: C writes in it
        if buffer is None or len(buffer) < len(out):
            buffer = _respell_buffers.buffer = ctypes.create_string_buffer(max(len(out), 65536))
        written: int = numbers(out, len(out), buffer)
        if written == len(out):
            return out  # nothing respelled (it only shortens)
        return ctypes.string_at(buffer, written) if written >= 0 else written

    _respell, _respell_loaded = respell, True
    return respell


def _canonical_swapped(value: Any) -> bytes:
    """``canonical_json`` where a number may have an exponent: orjson writes the value with
    integral floats swapped for ints (put back after), or the reference walk does."""
    swapped: list[tuple[Any, Any, float]] = []
    try:
        _swap_integral_floats(value, swapped)
        out = orjson.dumps(value, option=_ORJSON_CANONICAL)
    except (_NotOrjsonCanonical, orjson.JSONEncodeError, TypeError):
        return canonical_json_reference(value)
    finally:
        for container, key, number in swapped:
            container[key] = number
    if _has_astral(out):
        return canonical_json_reference(value)
    return out


def _swap_integral_floats(value: Any, swapped: list[tuple[Any, Any, float]]) -> None:
    """Replace each integral float below 2**53 by its int, recording it in ``swapped``; raise
    _NotOrjsonCanonical at a float orjson spells unlike ECMAScript."""
    stack = [value] if type(value) in (dict, list) else []
    if type(value) is float:
        raise _NotOrjsonCanonical  # a bare number: rare, the reference walk is fine
    while stack:
        container = stack.pop()
        pairs = container.items() if type(container) is dict else enumerate(container)
        for key, item in pairs:
            kind = type(item)
            if kind is dict or kind is list:
                stack.append(item)
            elif kind is float:
                if item.is_integer():
                    if abs(item) >= 2**53:
                        raise _NotOrjsonCanonical  # ECMAScript pads its shortest digits
                    swapped.append((container, key, item))
                elif not 1e-4 <= abs(item) < 1e16 and orjson.dumps(item) != es_number(item).encode(
                    "ascii"
                ):
                    raise _NotOrjsonCanonical
    for container, key, number in swapped:
        container[key] = int(number)


def canonical_json_reference(value: Any) -> bytes:
    """RFC 8785 canonical JSON by walking the value: the definition ``canonical_json``
    follows, and its path for what orjson cannot write."""
    out: list[str] = []
    _canon(value, out)
    return "".join(out).encode("utf-8")


def event_id(event: Any) -> str:
    """SHA-256 (hex) of the RFC 8785 canonical JSON of the event."""
    return hashlib.sha256(canonical_json(event)).hexdigest()


# ---------------------------------------------------------------------------------------------
# times

_DT = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))?\n?",
    re.ASCII,
)
_NAIVE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?", re.ASCII)


def parse_event_time(text: str) -> datetime | None:
    """An RFC 3339 date-time (as the schema accepts it) as an aware datetime, else None.

    The common spellings (``2026-11-26T18:22:00.123Z``, ``...+01:00``: upper-case ``T`` and
    ``Z``, a ``.`` fraction, an offset with a colon) go to ``datetime.fromisoformat``, in C,
    a tenth of the regular expression's time; the shape is checked first, because that parser
    also takes spellings RFC 3339 does not (a space for the ``T``, ``20261126T1822Z``, a
    ``,`` fraction, ``+0100``). Any other text, or one it refuses, takes the rule below. Both
    truncate a fraction to microseconds (``fromisoformat`` ignores what follows its sixth digit
    and takes an empty fraction: the fraction is checked to be digits, one at least)."""
    size = len(text)
    if (
        size >= 20
        and text[10] == "T"
        and text[4] == text[7] == "-"
        and text[13] == text[16] == ":"
        and text.isascii()
    ):
        zone = 1 if text[-1] == "Z" else 6 if text[-3] == ":" and text[-6] in "+-" else 0
        if zone and (size - zone == 19 or (text[19] == "." and text[20 : size - zone].isdigit())):
            try:
                return datetime.fromisoformat(text)
            except ValueError:
                pass  # a day or second out of range: the rule decides
    return _event_time_by_rule(text)


def _event_time_by_rule(text: str) -> datetime | None:
    """``parse_event_time`` by the RFC 3339 rule (``_DT``), for any spelling."""
    m = _DT.fullmatch(text)
    if m is None:
        return None
    year, month, day, hour, minute, second, fraction, zulu, sign, hours, minutes = m.groups()
    if not zulu and not sign:
        return None
    micro = int(fraction[:6].ljust(6, "0")) if fraction else 0
    try:  # (a day, hour or second out of range, or an offset of 24 h or more: None)
        if zulu:
            tz = UTC
        else:
            offset = timedelta(hours=int(hours), minutes=int(minutes))
            tz = timezone(-offset if sign == "-" else offset)
        return datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tz
        )
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------
# the body


class _TooLarge(Exception):
    pass


class _Unreadable(Exception):
    pass


def _inflate(body: bytes, wbits: int, max_bytes: int, *, members: bool) -> bytes:
    """Inflate that never produces more than ``max_bytes + 1`` bytes.

    zlib stops writing at ``max_length`` and keeps the rest of the input, so one call per
    gzip member inflates the body with no copy through Python (feeding it in chunks into a
    growing ``bytearray`` cost twice zlib's own time)."""
    pieces: list[bytes] = []
    size = 0
    d = zlib.decompressobj(wbits)
    data = body
    while True:
        try:
            piece = d.decompress(data, max_bytes + 1 - size)
        except zlib.error as exc:
            raise _Unreadable(f"corrupt compressed body: {exc}") from None
        size += len(piece)
        pieces.append(piece)
        if size > max_bytes:
            raise _TooLarge(size)
        if not d.eof:
            break  # all the input taken and the stream not ended: truncated (below)
        rest = d.unused_data
        if not rest.strip(b"\0\r\n\t "):
            break
        if not members:
            raise _Unreadable("data after the end of the compressed stream")
        d = zlib.decompressobj(wbits)  # another gzip member
        data = rest
    if not d.eof:
        raise _Unreadable("truncated compressed body")
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _decode_body(body: bytes, content_encoding: str | None, max_bytes: int) -> bytes:
    encodings = [e.strip().lower() for e in (content_encoding or "").split(",") if e.strip()]
    encodings = [e for e in encodings if e != "identity"]
    if not encodings:
        if len(body) > max_bytes:
            raise _TooLarge(len(body))
        return body
    if len(encodings) > 1:
        raise _Unreadable(f"unsupported Content-Encoding {content_encoding!r}")
    if encodings[0] in ("gzip", "x-gzip"):
        return _inflate(body, 16 + zlib.MAX_WBITS, max_bytes, members=True)
    if encodings[0] == "deflate":  # RFC 9110: zlib-wrapped; tolerate raw deflate too
        wbits = zlib.MAX_WBITS if body[:1] and (body[0] & 0x0F) == 8 else -zlib.MAX_WBITS
        return _inflate(body, wbits, max_bytes, members=False)
    raise _Unreadable(f"unsupported Content-Encoding {content_encoding!r}")


# ---------------------------------------------------------------------------------------------
# one event

_PRIORITY: tuple[Reason, ...] = ("unknown_event_type", "bad_run_id", "missing_timezone")
_CANONICAL_UUID = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


def _reason_of(v: Violation, event: Any) -> Reason:
    if v.keyword == DISAGREEMENT:
        return "schema_violation"
    p = v.path
    if p == ("eventType",) and v.keyword == "enum":
        return "unknown_event_type"
    if p == ("run", "runId"):
        return "bad_run_id"
    if p == ("eventTime",) and v.keyword == "format":
        value = event.get("eventTime") if isinstance(event, dict) else None
        if isinstance(value, str) and _NAIVE.fullmatch(value.strip()):
            return "missing_timezone"
    return "schema_violation"


def _summary(violations: list[Violation]) -> str:
    text = "; ".join(str(v) for v in violations[:5])
    if len(violations) > 5:
        text += f"; and {len(violations) - 5} more"
    return text


def _drop_large_facets(
    event: dict[str, Any], index: int, limit: int
) -> tuple[dict[str, Any], list[Finding]]:
    """A copy of the event less the facets whose compact JSON exceeds ``limit`` bytes."""
    findings: list[Finding] = []

    def prune(holder: Any, key: str, path: tuple[str | int, ...]) -> Any:
        facets = holder.get(key) if isinstance(holder, dict) else None
        if not isinstance(facets, dict):
            return holder
        kept = {}
        for name, facet in facets.items():
            size = len(orjson.dumps(facet))
            if size > limit:
                where = format_path((*path, key, name))
                findings.append(
                    Finding(
                        index,
                        "facet_too_large",
                        where,
                        f"{where}: facet of {size} bytes dropped (limit {limit})",
                    )
                )
            else:
                kept[name] = facet
        if len(kept) == len(facets):
            return holder
        return {**holder, key: kept}

    out = dict(event)
    for top in ("run", "job", "dataset"):
        if top in out:
            out[top] = prune(out[top], "facets", (top,))
    for side in ("inputs", "outputs"):
        datasets = out.get(side)
        if isinstance(datasets, list):
            new = []
            for i, ds in enumerate(datasets):
                ds = prune(ds, "facets", (side, i))
                ds = prune(ds, "inputFacets" if side == "inputs" else "outputFacets", (side, i))
                new.append(ds)
            out[side] = new
    return (out if findings else event), findings


def _check_one(
    event: Any,
    index: int,
    *,
    now: datetime,
    max_datasets: int,
    max_facet_bytes: int,
) -> Accepted | Rejected:
    # The text stored for the event is its canonical JSON, written once for the hash too (so
    # event_id is the SHA-256 of the payload); an integer beyond 2**53, which RFC 8785 takes as
    # a double, keeps orjson's exact text instead.
    try:
        written = orjson.dumps(event, option=_ORJSON_CANONICAL)
    except orjson.JSONEncodeError:  # nested too deep, or an integer beyond 2**53
        try:
            written = raw = orjson.dumps(event)
        except orjson.JSONEncodeError:  # orjson writes at most 254 levels; it reads 1024
            return Rejected(index, "too_large", f"nested more than {_MAX_DEPTH} levels deep")
        eid = event_id(event)
    else:
        raw = _canonical_from_sorted(event, written)
        eid = hashlib.sha256(raw).hexdigest()

    def reject(reason: Reason, message: str, path: str = "") -> Rejected:
        return Rejected(index, reason, message, path, raw, event_id=eid)

    findings: list[Finding] = []
    if isinstance(event, dict):
        inputs, outputs = event.get("inputs"), event.get("outputs")
        n = (len(inputs) if isinstance(inputs, list) else 0) + (
            len(outputs) if isinstance(outputs, list) else 0
        )
        if n > max_datasets:
            return reject(
                "too_many_datasets", f"{n} inputs+outputs, more than {max_datasets}", "inputs"
            )
        if len(written) > max_facet_bytes:  # else no facet can be over the limit (orjson's sizes)
            event, findings = _drop_large_facets(event, index, max_facet_bytes)
    kind = screen_event(event)  # the fast verdict; the Python validator names the reason
    violations = [] if kind is not None else check_event(event)[1]
    if kind is None and not violations:  # the validators disagree: never accept
        violations = [fast_violation(event)]
    if violations:
        reasons = [_reason_of(v, event) for v in violations]
        reason: Reason = next((r for r in _PRIORITY if r in reasons), "schema_violation")
        first = violations[reasons.index(reason)]
        return reject(reason, _summary(violations), first.location)
    if kind == "RunEvent" and not _CANONICAL_UUID.fullmatch(event["run"]["runId"]):
        return reject(
            "bad_run_id",
            f"run.runId: {event['run']['runId']!r} is not a canonical UUID",
            "run.runId",
        )
    when = parse_event_time(event["eventTime"])
    if when is None:  # unreachable: the schema checked the format
        return reject("schema_violation", "eventTime: not a date-time", "eventTime")
    if when - now > FUTURE_TOLERANCE:
        return reject(
            "future_event_time",
            f"eventTime: {event['eventTime']} is more than 24 h after {now.isoformat()}",
            "eventTime",
        )
    dropped = bool(findings)
    for violation in facet_violations(event, kind):  # recorded; the event is kept whole
        findings.append(
            Finding(
                index,
                "facet_schema_violation",
                violation.path,
                f"{violation.path}: {violation.reason}",
                violation.reason,
            )
        )
    return Accepted(index, eid, kind, when, event, tuple(findings), text=None if dropped else raw)


def parse_events(
    body: bytes,
    *,
    content_encoding: str | None,
    now: datetime,
    max_bytes: int = MAX_BYTES,
    max_events: int = MAX_EVENTS,
    max_datasets: int = MAX_DATASETS,
    max_facet_bytes: int = MAX_FACET_BYTES,
) -> ParsedBatch:
    """Decode one POST body into accepted and rejected events; see the module docstring."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")

    def refuse(reason: Reason, message: str, read: int) -> ParsedBatch:
        rejected = Rejected(None, reason, message, "", bytes(body[:RAW_KEEP]))
        return ParsedBatch((), (rejected,), 0, read, False)

    try:
        data = _decode_body(body, content_encoding, max_bytes)
    except _TooLarge as exc:
        return refuse("too_large", f"body over {max_bytes} bytes (decompressed)", exc.args[0])
    except _Unreadable as exc:
        return refuse("invalid_json", str(exc), 0)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return refuse("invalid_json", f"not JSON: {exc}", len(data))
    is_batch = isinstance(doc, list)
    events = doc if is_batch else [doc]
    if len(events) > max_events:
        return refuse("too_large", f"{len(events)} events, more than {max_events}", len(data))
    accepted: list[Accepted] = []
    rejected: list[Rejected] = []
    seen: set[str] = set()
    for i, event in enumerate(events):
        result = _check_one(
            event, i, now=now, max_datasets=max_datasets, max_facet_bytes=max_facet_bytes
        )
        if isinstance(result, Rejected):
            rejected.append(result)
            continue
        if result.event_id in seen:
            result = replace(result, duplicate=True)
        seen.add(result.event_id)
        accepted.append(result)
    findings = tuple(f for a in accepted for f in a.findings)
    return ParsedBatch(tuple(accepted), tuple(rejected), len(events), len(data), is_batch, findings)

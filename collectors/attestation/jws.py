"""Compact JWS parsing that refuses everything a verifier should never interpret.

Limits and shape come before any decoding (reference attestation.md §4, N10/N11): a size cap,
exactly three segments (five is a JWE, refused outright, never decrypted or inflated), strict
base64url (the URL-safe alphabet, no padding, no stray bits in the last character: two
spellings of one byte string would let an altered token verify), UTF-8 JSON objects without
duplicate member names (two ``alg`` or two ``iss`` members are read differently by different
libraries), and no NaN/Infinity. Nothing here checks a signature: ``ParsedJWS`` carries the
exact signing input for ``keys``/``verify`` to do so.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

_SEGMENT = re.compile(r"[A-Za-z0-9_-]*")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_BITS = {char: index for index, char in enumerate(_B64URL)}


class JWSError(ValueError):
    """A token that is not a well-formed compact JWS; ``reason`` is a verifier reason code."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class ParsedJWS:
    header: dict[str, Any]
    payload: dict[str, Any]
    signing_input: bytes
    """``<header segment>.<payload segment>`` as ASCII bytes: what the signature covers."""
    signature: bytes


class DuplicateKeyError(ValueError):
    pass


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise DuplicateKeyError(f"duplicate member name {name!r}")
            seen.add(name)
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object_without_duplicates, parse_constant=_reject_constant
)


def loads_strict(text: str | bytes) -> Any:
    """JSON (RFC 8259) from UTF-8 text: duplicate member names and NaN/Infinity are errors.

    Raises ``ValueError`` (``json.JSONDecodeError``, ``UnicodeDecodeError`` or
    ``DuplicateKeyError`` are all subclasses) on anything else.
    """
    if isinstance(text, bytes | bytearray | memoryview):
        text = bytes(text).decode("utf-8")
    value, end = _DECODER.raw_decode(text, _skip_space(text, 0))
    if _skip_space(text, end) != len(text):
        raise ValueError("extra data after the JSON value")
    if _SURROGATE_ESCAPE.search(text):
        _refuse_lone_surrogates(value)
    return value


def _refuse_lone_surrogates(value: Any) -> None:
    """A ``\\ud800`` escape decodes to a string that is not Unicode text: no UTF-8 encoder
    (Arrow's included) can write it, so it is refused here rather than crash a later stage."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("a string holds a lone UTF-16 surrogate") from None
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\n\r":
        index += 1
    return index


def b64url_decode(segment: str, what: str) -> bytes:
    """Strict base64url (RFC 7515 §2): URL-safe alphabet, no padding, canonical last char."""
    if not _SEGMENT.fullmatch(segment):
        raise JWSError("malformed", f"the {what} is not base64url (bad character or padding)")
    remainder = len(segment) % 4
    if remainder == 1:
        raise JWSError("malformed", f"the {what} has an impossible base64url length")
    if remainder and _BITS[segment[-1]] & (0x0F if remainder == 2 else 0x03):
        raise JWSError("malformed", f"the {what} is not canonical base64url (stray bits)")
    try:
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):  # unreachable after the checks, kept for safety
        raise JWSError("malformed", f"the {what} is not base64url") from None


def _json_object(raw: bytes, what: str) -> dict[str, Any]:
    try:
        value = loads_strict(raw)
    except DuplicateKeyError as exc:
        raise JWSError("malformed", f"the {what} has a {exc}") from None
    except (ValueError, RecursionError):
        raise JWSError("malformed", f"the {what} is not UTF-8 JSON") from None
    if not isinstance(value, dict):
        raise JWSError("malformed", f"the {what} is not a JSON object")
    return value


def parse_compact(token: Any, *, max_bytes: int) -> ParsedJWS:
    """Split and decode a compact JWS, or raise ``JWSError`` with the reason code.

    Order matters: the size is checked before anything is split or decoded, a JWE is named as
    such before it could be mistaken for malformed input.
    """
    if not isinstance(token, str):
        raise JWSError("malformed", "the token is not a string")
    if len(token) > max_bytes:
        raise JWSError("too_large", f"the token is {len(token)} characters (limit {max_bytes})")
    if not token.isascii():
        raise JWSError("malformed", "the token has non-ASCII characters")
    parts = token.split(".")
    if len(parts) == 5:
        raise JWSError("jwe_rejected", "the token has five segments: a JWE, which annex refuses")
    if len(parts) != 3:
        raise JWSError("malformed", f"the token has {len(parts)} segments, a JWS has 3")
    head_segment, payload_segment, signature_segment = parts
    header = _json_object(b64url_decode(head_segment, "header"), "header")
    payload = _json_object(b64url_decode(payload_segment, "payload"), "payload")
    signature = b64url_decode(signature_segment, "signature")
    signing_input = token[: len(head_segment) + 1 + len(payload_segment)].encode("ascii")
    return ParsedJWS(header, payload, signing_input, signature)

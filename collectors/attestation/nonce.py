"""Stateless nonces: issued by the intake, checked by the verifier, sharing nothing but a key.

A nonce is 32 bytes written as 64 hex characters (the shape of NRAS's ``eat_nonce``)::

    expiry (8 bytes, big-endian unix seconds) || random (8 bytes) ||
    HMAC-SHA256(key, b"annex-nonce/v1|" + node_name + b"|" + expiry + random)[:16]

so the verifier can tell, without a database, that annex issued a nonce *for this node* and until
when it was usable. A nonce of another shape was chosen by the attester: it is not a failure by
itself, but it proves no freshness (``nonce_source = 'attester'``).
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from annex.errors import ConfigError

NONCE_DOMAIN = b"annex-nonce/v1|"
MIN_KEY_BYTES = 32
PLAUSIBLE_EXPIRY_SECONDS = 400 * 86_400
"""How far an annex nonce's expiry can be from the time it is checked (see ``check_nonce``)."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_HEX = frozenset("0123456789abcdefABCDEF")


class NonceCheck(enum.StrEnum):
    VALID = "valid"
    """Issued by annex for this node and not expired at the time asked."""
    EXPIRED = "expired"
    """Issued by annex for this node, but its expiry is before the time asked."""
    FORGED = "forged"
    """Has the shape of an annex nonce but the MAC does not match (other node, other key)."""
    NOT_OURS = "not_ours"
    """Another shape (or no key configured): the attester chose it."""


def _unix(at: datetime) -> int:
    """Whole unix seconds of ``at``; a naive datetime is read as UTC (annex's convention)."""
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return int((at - _EPOCH).total_seconds())


def _mac(key: bytes, node_name: str, head: bytes) -> bytes:
    message = NONCE_DOMAIN + node_name.encode("utf-8") + b"|" + head
    return hmac.new(key, message, hashlib.sha256).digest()[:16]


def issue_nonce(
    key: bytes, node_name: str, *, now: datetime, ttl_seconds: int
) -> tuple[str, datetime]:
    """A fresh nonce for ``node_name`` usable for ``ttl_seconds``, and its expiry (aware UTC)."""
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"the nonce key must be at least {MIN_KEY_BYTES} bytes")
    expiry = _unix(now) + int(ttl_seconds)
    head = expiry.to_bytes(8, "big") + secrets.token_bytes(8)
    nonce = (head + _mac(key, node_name, head)).hex()
    return nonce, _EPOCH + timedelta(seconds=expiry)


def nonce_expiry(nonce: str) -> datetime | None:
    """The expiry encoded in an annex-shaped nonce (naive UTC), or None for another shape.

    Unauthenticated: call ``check_nonce`` first; this only says *when* a valid nonce expires.
    """
    if len(nonce) != 64 or not _HEX.issuperset(nonce):
        return None
    seconds = int(nonce[:16], 16)
    try:
        return datetime(1970, 1, 1) + timedelta(seconds=seconds)
    except OverflowError:
        return datetime.max


def check_nonce(key: bytes | None, node_name: str, nonce: str, *, at: datetime) -> NonceCheck:
    """Whether annex issued ``nonce`` to ``node_name`` and it was still usable at ``at``.

    A 64-hex nonce whose MAC does not match is ``forged`` only when its expiry is plausible
    (within ``PLAUSIBLE_EXPIRY_SECONDS`` of ``at``): attesters legitimately choose 64-hex nonces
    of their own (NRAS's ``eat_nonce`` shape, e.g. a SHA-256), whose first 8 bytes read as an
    expiry are random and almost never land in that window. A nonce annex issued to another node,
    or one altered after issue, does land there and is reported as forged. Nothing is lost by
    the rule: a nonce read as the attester's never proves freshness.
    """
    if not key or not isinstance(nonce, str) or len(nonce) != 64 or not _HEX.issuperset(nonce):
        return NonceCheck.NOT_OURS
    raw = bytes.fromhex(nonce)
    expiry = int.from_bytes(raw[:8], "big")
    moment = _unix(at)
    if not hmac.compare_digest(raw[16:], _mac(key, node_name, raw[:16])):
        if abs(expiry - moment) <= PLAUSIBLE_EXPIRY_SECONDS:
            return NonceCheck.FORGED
        return NonceCheck.NOT_OURS
    if expiry < moment:
        return NonceCheck.EXPIRED
    return NonceCheck.VALID


def nonce_key_from_env(env_name: str, env: Mapping[str, str] | None = None) -> bytes | None:
    """The nonce HMAC key from the variable ``env_name``: hex-decoded when it is hex, else its
    UTF-8 bytes; None when unset (annex then issues no nonces and every nonce is the attester's).
    """
    env = os.environ if env is None else env
    value = env.get(env_name, "") if env_name else ""
    if not value:
        return None
    if len(value) % 2 == 0 and _HEX.issuperset(value):
        key = bytes.fromhex(value)
    else:
        key = value.encode("utf-8")
    if len(key) < MIN_KEY_BYTES:
        raise ConfigError(
            f"environment variable {env_name} holds a {len(key)}-byte nonce key; "
            f"at least {MIN_KEY_BYTES} bytes are required",
            hint=f"set it to 64 random hex characters, e.g. `export {env_name}=$(openssl rand "
            "-hex 32)`, or unset it to accept only attester-chosen nonces",
        )
    return key

"""Stateless nonces (issue/check round trips, forgeries, expiry, attester-chosen nonces) and the
strict compact-JWS parser (segments, base64url, JSON objects without duplicate names)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from annex.errors import ConfigError
from collectors.attestation.jws import JWSError, b64url_decode, loads_strict, parse_compact
from collectors.attestation.nonce import (
    NonceCheck,
    check_nonce,
    issue_nonce,
    nonce_expiry,
    nonce_key_from_env,
)

KEY = b"k" * 32
NOW = datetime(2026, 11, 2, 8, 0, 0)


def test_nonce_round_trip() -> None:
    nonce, expires = issue_nonce(KEY, "gpu-node-1", now=NOW, ttl_seconds=600)
    assert len(nonce) == 64 and int(nonce, 16) >= 0
    assert expires == datetime(2026, 11, 2, 8, 10, tzinfo=UTC)
    assert nonce_expiry(nonce) == datetime(2026, 11, 2, 8, 10)
    assert check_nonce(KEY, "gpu-node-1", nonce, at=NOW) is NonceCheck.VALID
    assert check_nonce(KEY, "gpu-node-1", nonce, at=NOW + timedelta(seconds=600)) == "valid"
    assert check_nonce(KEY, "gpu-node-1", nonce, at=NOW + timedelta(seconds=601)) == "expired"
    # aware datetimes mean the same instant
    assert check_nonce(KEY, "gpu-node-1", nonce, at=NOW.replace(tzinfo=UTC)) == "valid"


def test_nonces_are_unique() -> None:
    nonces = {issue_nonce(KEY, "n", now=NOW, ttl_seconds=60)[0] for _ in range(100)}
    assert len(nonces) == 100


def test_nonce_for_another_node_or_key_is_forged() -> None:
    nonce, _ = issue_nonce(KEY, "gpu-node-1", now=NOW, ttl_seconds=600)
    assert check_nonce(KEY, "gpu-node-2", nonce, at=NOW) == "forged"
    assert check_nonce(b"j" * 32, "gpu-node-1", nonce, at=NOW) == "forged"
    tampered_mac = nonce[:-1] + ("0" if nonce[-1] != "0" else "1")
    assert check_nonce(KEY, "gpu-node-1", tampered_mac, at=NOW) == "forged"
    later_expiry = f"{int(nonce[:16], 16) + 3600:016x}" + nonce[16:]
    assert check_nonce(KEY, "gpu-node-1", later_expiry, at=NOW) == "forged"


@pytest.mark.parametrize(
    "nonce",
    [
        "abc",
        "z" * 64,
        "a" * 63,
        "a" * 65,
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",  # a SHA-256
    ],
)
def test_attester_chosen_nonces_are_not_ours(nonce: str) -> None:
    assert check_nonce(KEY, "gpu-node-1", nonce, at=NOW) == "not_ours"


def test_without_a_key_every_nonce_is_the_attesters() -> None:
    nonce, _ = issue_nonce(KEY, "gpu-node-1", now=NOW, ttl_seconds=600)
    assert check_nonce(None, "gpu-node-1", nonce, at=NOW) == "not_ours"


def test_issue_refuses_a_short_key() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        issue_nonce(b"short", "n", now=NOW, ttl_seconds=60)


def test_nonce_key_from_environment() -> None:
    assert nonce_key_from_env("K", {}) is None
    assert nonce_key_from_env("K", {"K": "ab" * 32}) == bytes([0xAB]) * 32
    assert nonce_key_from_env("K", {"K": "x" * 40}) == b"x" * 40
    with pytest.raises(ConfigError, match="at least 32 bytes") as info:
        nonce_key_from_env("K", {"K": "ab" * 8})
    assert "openssl rand" in str(info.value)


# ---------------------------------------------------------------------------------------------
# JWS parsing


def b64(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


GOOD = ".".join((b64(b'{"alg":"ES384"}'), b64(b'{"iss":"x"}'), b64(b"sig")))


def test_parse_compact_gives_header_payload_and_signing_input() -> None:
    parsed = parse_compact(GOOD, max_bytes=1000)
    assert parsed.header == {"alg": "ES384"} and parsed.payload == {"iss": "x"}
    assert parsed.signature == b"sig"
    assert parsed.signing_input == GOOD.rsplit(".", 1)[0].encode()


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (GOOD, "too_large"),
        ("a.b.c.d.e", "jwe_rejected"),
        ("a.b", "malformed"),
        (GOOD + "=", "malformed"),
        (GOOD.replace("e", "+", 1), "malformed"),
        (b64(b"{}") + "." + b64(b"[]") + ".", "malformed"),
        (3, "malformed"),
        ("é.é.é", "malformed"),
        ("a.b.c", "malformed"),  # "a" is an impossible base64url length
    ],
)
def test_parse_compact_refusals(token: object, reason: str) -> None:
    limit = 10 if token is GOOD else 1000
    with pytest.raises(JWSError) as info:
        parse_compact(token, max_bytes=limit)
    assert info.value.reason == reason


def test_b64url_refuses_stray_bits() -> None:
    assert b64url_decode("QQ", "x") == b"A"
    with pytest.raises(JWSError, match="canonical"):
        b64url_decode("QR", "x")
    assert b64url_decode("QUI", "x") == b"AB"
    with pytest.raises(JWSError, match="canonical"):
        b64url_decode("QUJ", "x")


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',
        '{"a": [{"b": 1, "b": 1}]}',
        '{"a": NaN}',
        '{"a": Infinity}',
        '{"a": 1} x',
        '{"a": "\\udc00"}',
    ],
)
def test_loads_strict_refusals(text: str) -> None:
    with pytest.raises(ValueError):
        loads_strict(text)


def test_loads_strict_accepts_what_json_means() -> None:
    text = ' {"a": [1, 2.5, "\\ud83d\\ude00", null, true], "b": {"c": "d"}} \n'
    assert loads_strict(text) == json.loads(text)
    assert loads_strict(text.encode()) == json.loads(text)

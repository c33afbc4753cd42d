"""Pinned keys: never fetched from a token, fetched from configuration once and cached; x5c
chains checked against configured roots (signatures, CA flags, path length, CRLs, time)."""

from __future__ import annotations

import hashlib
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from collectors.attestation.keys import KeySets, check_chain, parse_key_set
from collectors.attestation.verify import Verifier
from simulator.attestation import tokens
from tests.helpers.attestation_trust import (
    NONCE,
    RECEIVED,
    Trust,
    body,
    ita_evidence,
    maa_evidence,
    make_trust,
    nras_evidence,
    segments,
    submit,
)


@pytest.fixture(scope="module")
def trust(tmp_path_factory: pytest.TempPathFactory) -> Trust:
    return make_trust(tmp_path_factory.mktemp("trust"))


class RecordingServer:
    """A loopback HTTP server that records every request and serves fixed bodies."""

    def __init__(self, routes: dict[str, bytes] | None = None) -> None:
        self.requests: list[str] = []
        self.routes = routes or {}
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                recorder.requests.append(self.path)
                payload = recorder.routes.get(self.path)
                self.send_response(200 if payload is not None else 404)
                self.send_header("Content-Length", str(len(payload or b"")))
                self.end_headers()
                self.wfile.write(payload or b"")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> RecordingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    with RecordingServer() as running:
        yield running


# ---------------------------------------------------------------------------------------------
# No key is ever fetched from an address a token names


def test_no_network_request_for_a_key_a_token_names(trust: Trust, server: RecordingServer) -> None:
    """jku/x5u point at a live loopback server; the kid is not pinned: unknown_kid, 0 requests."""
    verifier = Verifier.from_settings(trust.settings, env=trust.env)  # the real urllib fetch
    claims = segments(nras_evidence(trust, count=1)["result"][0][1])[1]
    attack_header = {
        "kid": "attacker-kid",
        "jku": f"{server.url}/jwks.json",
        "x5u": f"{server.url}/cert.pem",
    }
    hostile = trust.issuers.attacker.sign(claims, header=attack_header)
    evidence = nras_evidence(trust, count=1, prefix="net")
    evidence["result"][0][1] = hostile
    # a genuine, pinned token that also names the server must not make it fetch either
    named = trust.issuers.ita.sign(
        segments(ita_evidence(trust)["token"])[1],
        header={"jku": f"{server.url}/certs", "x5u": f"{server.url}/x5u"},
    )
    raw = body([evidence, tokens.cvm_evidence("intel-ita", named)], node="net")
    result = verifier.verify(submit(raw))
    records = result.records
    assert records[0]["reasons"] == ["unknown_kid"] and records[0]["kid"] == "attacker-kid"
    assert records[-1]["verdict"] == "pass"
    assert server.requests == []
    # the server did work: a request made on purpose is recorded
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(f"{server.url}/probe", timeout=5)
    assert server.requests == ["/probe"]


# ---------------------------------------------------------------------------------------------
# Key sets from a configured URL: fetched once, cached on disk, reused


def _url_settings(trust: Trust, url: str, cache: Path, seconds: int = 3600):
    issuers = tuple(
        replace(i, jwks_file=None, jwks_url=url) if i.name == "nras" else i
        for i in trust.settings.issuers
    )
    return replace(
        trust.settings, issuers=issuers, jwks_cache_dir=cache, jwks_cache_seconds=seconds
    )


def test_configured_jwks_url_is_fetched_once_and_cached(trust: Trust, tmp_path: Path) -> None:
    jwks = trust.issuers.nras.jwks_bytes()
    with RecordingServer({"/nras/.well-known/jwks.json": jwks}) as server:
        settings = _url_settings(trust, f"{server.url}/nras/.well-known/jwks.json", tmp_path)
        verifier = Verifier.from_settings(settings, env=trust.env)
        assert server.requests == ["/nras/.well-known/jwks.json"]
        for node in ("a", "b"):
            raw = body([nras_evidence(trust, count=2, prefix=node)], node=node)
            result = verifier.verify(submit(raw))
            assert {r["verdict"] for r in result.records} == {"pass"}
            assert result.records[0]["jwks_sha256"] == hashlib.sha256(jwks).hexdigest()
        assert len(server.requests) == 1  # once per verifier, not per token
        Verifier.from_settings(settings, env=trust.env)
        assert len(server.requests) == 1  # the disk cache is fresh
        (cached,) = tmp_path.glob("nras.*.jwks.json")
        assert cached.read_bytes() == jwks
        Verifier.from_settings(replace(settings, jwks_cache_seconds=0), env=trust.env)
        assert len(server.requests) == 2  # expired cache: fetched again


def test_unreachable_jwks_url_uses_a_stale_cache_or_reports_keys_unavailable(
    trust: Trust, tmp_path: Path
) -> None:
    calls: list[str] = []

    def failing(url: str, timeout: float) -> bytes:
        calls.append(url)
        raise OSError("connection refused")

    settings = _url_settings(trust, "https://nras.example/jwks.json", tmp_path, seconds=0)
    verifier = Verifier.from_settings(settings, env=trust.env, fetch=failing)
    raw = body([nras_evidence(trust, count=1, prefix="u")], node="u")
    records = verifier.verify(submit(raw)).records
    assert calls == ["https://nras.example/jwks.json"]
    assert records[0]["verdict"] == "error" and records[0]["reasons"] == ["keys_unavailable"]
    assert "connection refused" in records[0]["detail"]
    assert records[1]["verdict"] == "error"
    # with a (stale) cached copy the issuer is still judged
    key_sets = KeySets.load(settings, fetch=lambda u, t: trust.issuers.nras.jwks_bytes())
    assert key_sets.get("nras").error is None
    stale = Verifier.from_settings(settings, env=trust.env, fetch=failing)
    raw = body([nras_evidence(trust, count=1, prefix="s")], node="s")
    assert {r["verdict"] for r in stale.verify(submit(raw)).records} == {"pass"}


def test_fetched_document_that_is_not_a_key_set_is_never_cached(
    trust: Trust, tmp_path: Path
) -> None:
    settings = _url_settings(trust, "https://nras.example/jwks.json", tmp_path)
    key_sets = KeySets.load(settings, fetch=lambda url, timeout: b"<html>login</html>")
    assert "unavailable" in key_sets.get("nras").error
    assert list(tmp_path.glob("*.json")) == []


# ---------------------------------------------------------------------------------------------
# Key set parsing


def test_parse_key_set_keeps_only_keys_usable_with_the_issuers_algorithm(trust: Trust) -> None:
    nras_key = trust.issuers.nras.jwks()["keys"][0]
    maa_key = trust.issuers.maa.jwks()["keys"][0]
    document = {
        "keys": [
            nras_key,
            {**nras_key, "kid": "other-alg", "alg": "ES256"},
            {**nras_key, "kid": "enc", "use": "enc"},
            {k: v for k, v in nras_key.items() if k != "kid"},
            {**maa_key, "kid": "rsa-in-ec-set"},
            "not a key",
        ]
    }
    keys = parse_key_set(orjson.dumps(document), "ES384")
    assert list(keys) == [nras_key["kid"]]
    assert len(keys[nras_key["kid"]].x5c) == 2


def test_key_from_x5c_only_like_azure_certs(trust: Trust) -> None:
    """Azure Attestation's /certs lists keys by certificate only (no n/e)."""
    maa_key = trust.issuers.maa.jwks()["keys"][0]
    bare = {k: v for k, v in maa_key.items() if k in ("kid", "kty", "x5c")}
    keys = parse_key_set(orjson.dumps({"keys": [bare]}), "RS256")
    expected = trust.issuers.maa.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert keys[maa_key["kid"]].spki == expected


@pytest.mark.parametrize(
    "document", [b"[]", b'{"keys": 3}', b"not json", b'{"keys": [], "keys": []}']
)
def test_parse_key_set_refuses_documents_that_are_not_key_sets(document: bytes) -> None:
    with pytest.raises(ValueError):
        parse_key_set(document, "ES384")


def test_key_set_with_only_foreign_keys_is_unavailable(trust: Trust, tmp_path: Path) -> None:
    (tmp_path / "wrong.json").write_bytes(trust.issuers.maa.jwks_bytes())  # RSA keys for NRAS
    issuers = tuple(
        replace(i, jwks_file=tmp_path / "wrong.json") if i.name == "nras" else i
        for i in trust.settings.issuers
    )
    key_sets = KeySets.load(replace(trust.settings, issuers=issuers))
    assert "no key usable with ES384" in key_sets.get("nras").error


def test_unreadable_roots_file_gives_error_not_pass(trust: Trust, tmp_path: Path) -> None:
    (tmp_path / "roots.pem").write_text("not a certificate")
    issuers = tuple(
        replace(i, roots_file=tmp_path / "roots.pem") if i.name == "maa" else i
        for i in trust.settings.issuers
    )
    verifier = trust.verifier(issuers=issuers)
    record = verifier.verify(submit(body([maa_evidence(trust)], node="r"))).records[0]
    assert record["verdict"] == "error" and record["reasons"] == ["keys_unavailable"]
    assert record["signature_valid"] is True


def test_chain_verdicts_are_cached_by_chain_bytes(trust: Trust) -> None:
    verifier = trust.verifier()
    for node in ("c1", "c2", "c3"):
        verifier.verify(submit(body([nras_evidence(trust, count=4, prefix=node)], node=node)))
    assert len(verifier.key_sets._chains) == 1


# ---------------------------------------------------------------------------------------------
# check_chain on a hand-built PKI


NOW = datetime(2026, 11, 2, 8, 0)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject, key, issuer, issuer_key, *, ca, path_length=None, serial=1, days=(-10, 10),
          key_cert_sign=True):  # fmt: skip
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(serial)
        .not_valid_before(datetime(2026, 11, 2, tzinfo=UTC) + timedelta(days=days[0]))
        .not_valid_after(datetime(2026, 11, 2, tzinfo=UTC) + timedelta(days=days[1]))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=path_length), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, key_cert_sign, True, False, False),
            critical=True,
        )
    return builder.sign(issuer_key, hashes.SHA384())


def _der(*certs: x509.Certificate) -> tuple[bytes, ...]:
    return tuple(c.public_bytes(serialization.Encoding.DER) for c in certs)


@pytest.fixture(scope="module")
def pki() -> dict:
    keys = {name: ec.generate_private_key(ec.SECP384R1()) for name in ("root", "i1", "i2", "leaf")}
    root = _cert("root", keys["root"], "root", keys["root"], ca=True, path_length=1)
    i1 = _cert("i1", keys["i1"], "root", keys["root"], ca=True, path_length=0, serial=11)
    leaf = _cert("leaf", keys["leaf"], "i1", keys["i1"], ca=False, serial=21)
    return {"keys": keys, "root": root, "i1": i1, "leaf": leaf}


def _check(chain, roots, crls=()):
    return check_chain(chain, roots, frozenset(_der(*roots)), crls)


def test_chain_to_a_configured_root(pki: dict) -> None:
    verdict = _check(_der(pki["leaf"], pki["i1"]), [pki["root"]])
    assert verdict.ok, verdict.detail
    spki = (
        pki["leaf"]
        .public_key()
        .public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    assert verdict.problem_at(NOW, spki) is None
    assert "expired" in verdict.problem_at(NOW + timedelta(days=30), spki)
    assert "not valid before" in verdict.problem_at(NOW - timedelta(days=30), spki)
    assert "does not certify" in verdict.problem_at(NOW, b"another key")
    # the root itself may be in the chain
    assert _check(_der(pki["leaf"], pki["i1"], pki["root"]), [pki["root"]]).ok


def test_chain_problems(pki: dict) -> None:
    keys = pki["keys"]
    other_root = _cert("root", keys["i2"], "root", keys["i2"], ca=True)
    assert "configured root" in _check(_der(pki["leaf"], pki["i1"]), [other_root]).detail
    not_ca = _cert("i1", keys["i1"], "root", keys["root"], ca=False, serial=12)
    assert "not a CA" in _check(_der(pki["leaf"], not_ca), [pki["root"]]).detail
    no_sign = _cert("i1", keys["i1"], "root", keys["root"], ca=True, key_cert_sign=False)
    assert "key usage" in _check(_der(pki["leaf"], no_sign), [pki["root"]]).detail
    # i2 under i1 (path length 0): one intermediate too many
    i2 = _cert("i2", keys["i2"], "i1", keys["i1"], ca=True, serial=13)
    leaf2 = _cert("leaf", keys["leaf"], "i2", keys["i2"], ca=False, serial=22)
    assert "path length" in _check(_der(leaf2, i2, pki["i1"]), [pki["root"]]).detail
    # a leaf that is not signed by the next certificate
    stray = _cert("leaf", keys["leaf"], "i1", keys["i2"], ca=False, serial=23)
    assert "not signed" in _check(_der(stray, pki["i1"]), [pki["root"]]).detail
    assert "not DER" in _check((b"junk",), [pki["root"]]).detail
    assert "no roots_file" in _check(_der(pki["leaf"]), []).detail


def test_intermediate_revoked_by_a_bundled_crl(pki: dict, tmp_path: Path) -> None:
    revoked = (
        x509.RevokedCertificateBuilder()
        .serial_number(pki["i1"].serial_number)
        .revocation_date(datetime(2026, 1, 1, tzinfo=UTC))
        .build()
    )
    crl = (
        x509.CertificateRevocationListBuilder()
        .issuer_name(pki["root"].subject)
        .last_update(datetime(2026, 1, 1, tzinfo=UTC))
        .next_update(datetime(2027, 1, 1, tzinfo=UTC))
        .add_revoked_certificate(revoked)
        .sign(pki["keys"]["root"], hashes.SHA384())
    )
    verdict = _check(_der(pki["leaf"], pki["i1"]), [pki["root"]], [crl])
    assert not verdict.ok and "revoked" in verdict.detail
    # a CRL not signed by the issuer is ignored
    forged = (
        x509.CertificateRevocationListBuilder()
        .issuer_name(pki["root"].subject)
        .last_update(datetime(2026, 1, 1, tzinfo=UTC))
        .next_update(datetime(2027, 1, 1, tzinfo=UTC))
        .add_revoked_certificate(revoked)
        .sign(pki["keys"]["i2"], hashes.SHA384())
    )
    assert _check(_der(pki["leaf"], pki["i1"]), [pki["root"]], [forged]).ok
    # roots_file may bundle CRLs after the certificates
    from collectors.attestation.keys import _load_roots

    bundle = tmp_path / "roots.pem"
    bundle.write_bytes(
        pki["root"].public_bytes(serialization.Encoding.PEM)
        + crl.public_bytes(serialization.Encoding.PEM)
    )
    roots, crls = _load_roots(bundle)
    assert len(roots) == 1 and len(crls) == 1


def test_token_nonce_is_what_the_simulator_put_in_every_provider(trust: Trust) -> None:
    """A guard on the claim locations the verifier reads (NRAS, MAA, ITA)."""
    raw = body([nras_evidence(trust, count=1, prefix="z"), maa_evidence(trust)], node="z")
    records = trust.verifier().verify(submit(raw, received_at=RECEIVED)).records
    assert {r["nonce"] for r in records} == {NONCE}

"""Pinned keys of the trusted issuers, their certificate chains, and signature checks.

Keys come only from configuration: an issuer's ``jwks_file``, or its ``jwks_url`` fetched by
annex (with an injected ``fetch`` so tests and air-gapped sites control the network) and cached
on disk. A URL inside a token (``jku``, ``x5u``) is never fetched. Key sets are loaded once per
``KeySets``; an issuer whose set cannot be loaded is remembered with the reason, so its tokens
get verdict ``error`` / ``keys_unavailable`` instead of crashing the collection.

``x5c`` chains (from the JWK, or a token header) are checked with ``cryptography`` against the
issuer's ``roots_file``: every link's signature, CA basic constraints and path length, key
usage, and revocation by any CRL bundled in ``roots_file``. NVIDIA's SDK stops at the leaf
(reference attestation.md §1.2, nvtrust#107); annex does not. A verdict is cached by the chain
bytes, because thousands of tokens share one chain; only the validity window is compared per
token, against the time annex received it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from annex.settings import AttestationIssuer, AttestationSettings
from collectors.attestation.jws import loads_strict
from collectors.spool import write_atomically

Fetch = Callable[[str, float], bytes]
"""``fetch(url, timeout_seconds) -> body``: how annex reads a configured ``jwks_url``."""

MAX_KEY_SET_BYTES = 1 << 20
MAX_ROOTS_BYTES = 4 << 20
FETCH_TIMEOUT_SECONDS = 15.0
_CHAIN_CACHE_LIMIT = 4096
_SPKI = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def fetch_url(url: str, timeout: float) -> bytes:
    """Read a configured key-set URL with urllib, refusing bodies over ``MAX_KEY_SET_BYTES``."""
    from annex import __version__

    request = urllib.request.Request(
        url, headers={"Accept": "application/json", "User-Agent": f"annex/{__version__}"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        body = response.read(MAX_KEY_SET_BYTES + 1)
    if len(body) > MAX_KEY_SET_BYTES:
        raise ValueError(f"the key set at {url} is larger than {MAX_KEY_SET_BYTES} bytes")
    return body


# ---------------------------------------------------------------------------------------------
# Signatures


def verify_signature(algorithm: str, key: Any, signing_input: bytes, signature: bytes) -> bool:
    """Whether ``signature`` is ``algorithm``'s signature of ``signing_input`` under ``key``.

    ``algorithm`` is the issuer's configured one, never the token's ``alg`` (that has already
    been required to equal it). ES384 signatures are JWS's raw ``r || s`` (96 bytes); HS256 takes
    the secret as ``bytes``.
    """
    try:
        if algorithm == "ES384":
            if len(signature) != 96 or not isinstance(key, ec.EllipticCurvePublicKey):
                return False
            der = encode_dss_signature(
                int.from_bytes(signature[:48], "big"), int.from_bytes(signature[48:], "big")
            )
            key.verify(der, signing_input, ec.ECDSA(hashes.SHA384()))
        elif algorithm == "RS256":
            if not isinstance(key, rsa.RSAPublicKey):
                return False
            key.verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())
        elif algorithm == "PS384":
            if not isinstance(key, rsa.RSAPublicKey):
                return False
            pss = padding.PSS(mgf=padding.MGF1(hashes.SHA384()), salt_length=48)
            key.verify(signature, signing_input, pss, hashes.SHA384())
        elif algorithm == "HS256":
            if not isinstance(key, bytes):
                return False
            expected = hmac.new(key, signing_input, hashlib.sha256).digest()
            return hmac.compare_digest(expected, signature)
        else:
            return False
    except (InvalidSignature, ValueError):
        return False
    return True


# ---------------------------------------------------------------------------------------------
# Key sets


@dataclass(frozen=True, slots=True)
class PinnedKey:
    kid: str
    public_key: Any
    spki: bytes
    """DER SubjectPublicKeyInfo: compared with an x5c leaf's key."""
    x5c: tuple[bytes, ...] = ()
    """The JWK's certificate chain (DER, leaf first), or empty."""


@dataclass(frozen=True)
class ChainVerdict:
    """What does not depend on the time: the structure, signatures and anchoring of a chain."""

    ok: bool
    detail: str | None
    leaf_spki: bytes | None
    not_before: datetime | None
    """The latest notBefore of the chain and its anchor (naive UTC)."""
    not_after: datetime | None
    """The earliest notAfter of the chain and its anchor (naive UTC)."""

    def problem_at(self, at: datetime, spki: bytes) -> str | None:
        """None when the chain is trusted at ``at`` and certifies ``spki``; else why not."""
        if not self.ok:
            return self.detail
        if self.leaf_spki != spki:
            return "the x5c leaf certificate does not certify the pinned key"
        if self.not_before is not None and at < self.not_before:
            return f"an x5c certificate is not valid before {self.not_before:%Y-%m-%dT%H:%M:%SZ}"
        if self.not_after is not None and at > self.not_after:
            return f"an x5c certificate expired at {self.not_after:%Y-%m-%dT%H:%M:%SZ}"
        return None


@dataclass
class IssuerKeys:
    """One issuer's pinned keys, trust anchors and CRLs, or why they are unavailable."""

    issuer: AttestationIssuer
    keys: dict[str, PinnedKey] = field(default_factory=dict)
    jwks_sha256: str | None = None
    error: str | None = None
    roots: tuple[x509.Certificate, ...] = ()
    roots_der: frozenset[bytes] = frozenset()
    crls: tuple[x509.CertificateRevocationList, ...] = ()
    roots_error: str | None = None
    secret: bytes | None = None
    """nvidia-local only: the HS256 secret from ``secret_env`` (decoding, never trust)."""


class KeySets:
    """Every configured issuer's keys, loaded once, plus a cache of chain verdicts."""

    def __init__(self, issuers: Sequence[IssuerKeys]) -> None:
        self._by_name = {keys.issuer.name: keys for keys in issuers}
        self._chains: dict[tuple[str, tuple[bytes, ...]], ChainVerdict] = {}

    @classmethod
    def load(
        cls,
        settings: AttestationSettings,
        *,
        fetch: Fetch = fetch_url,
        env: Any = None,
        now: Callable[[], float] = time.time,
    ) -> KeySets:
        """Load every issuer's key set and roots; failures are recorded per issuer, not raised."""
        env = os.environ if env is None else env
        loaded = []
        for issuer in settings.issuers:
            keys = IssuerKeys(issuer)
            if issuer.provider == "nvidia-local":
                secret = env.get(issuer.secret_env) if issuer.secret_env else None
                keys.secret = secret.encode("utf-8") if secret else None
            else:
                try:
                    body = _key_set_bytes(issuer, settings, fetch, now)
                    keys.jwks_sha256 = hashlib.sha256(body).hexdigest()
                    keys.keys = parse_key_set(body, issuer.algorithm)
                    if not keys.keys:
                        raise ValueError(f"it holds no key usable with {issuer.algorithm}")
                except Exception as exc:
                    keys.error = f"the key set of issuer {issuer.name!r} is unavailable: {exc}"
                if issuer.roots_file is not None:
                    try:
                        keys.roots, keys.crls = _load_roots(issuer.roots_file)
                        keys.roots_der = frozenset(
                            root.public_bytes(serialization.Encoding.DER) for root in keys.roots
                        )
                    except Exception as exc:
                        keys.roots_error = (
                            f"the roots_file {issuer.roots_file} of issuer {issuer.name!r} "
                            f"cannot be read: {exc}"
                        )
            loaded.append(keys)
        return cls(loaded)

    def get(self, name: str) -> IssuerKeys | None:
        return self._by_name.get(name)

    def __iter__(self) -> Iterator[IssuerKeys]:
        return iter(self._by_name.values())

    def chain_verdict(self, keys: IssuerKeys, chain: tuple[bytes, ...]) -> ChainVerdict:
        """The cached verdict on ``chain`` (DER, leaf first) against the issuer's anchors."""
        cache_key = (keys.issuer.name, chain)
        verdict = self._chains.get(cache_key)
        if verdict is None:
            verdict = check_chain(chain, keys.roots, keys.roots_der, keys.crls)
            if len(self._chains) >= _CHAIN_CACHE_LIMIT:
                self._chains.clear()
            self._chains[cache_key] = verdict
        return verdict


def _key_set_bytes(
    issuer: AttestationIssuer, settings: AttestationSettings, fetch: Fetch, now: Callable
) -> bytes:
    if issuer.jwks_file is not None:
        with open(issuer.jwks_file, "rb") as handle:
            body = handle.read(MAX_KEY_SET_BYTES + 1)
        if len(body) > MAX_KEY_SET_BYTES:
            raise ValueError(f"{issuer.jwks_file} is larger than {MAX_KEY_SET_BYTES} bytes")
        return body
    assert issuer.jwks_url is not None
    url_hash = hashlib.sha256(issuer.jwks_url.encode("utf-8")).hexdigest()[:16]
    cached = settings.jwks_cache_dir / f"{issuer.name}.{url_hash}.jwks.json"
    try:
        age = now() - cached.stat().st_mtime
    except OSError:
        age = None
    if age is not None and 0 <= age < settings.jwks_cache_seconds:
        return cached.read_bytes()
    try:
        body = fetch(issuer.jwks_url, FETCH_TIMEOUT_SECONDS)
        parse_key_set(body, issuer.algorithm)  # never cache what cannot be used
    except Exception as exc:
        if age is not None:
            # The configured issuer is unreachable: its last pinned set (keys rotate rarely)
            # beats refusing every token; a set never fetched is never guessed.
            return cached.read_bytes()
        raise ValueError(f"fetching {issuer.jwks_url} failed: {exc}") from None
    _write_atomically(cached, body)
    return body


def _write_atomically(path: Path, body: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, body)
    except OSError:
        pass  # a cache that cannot be written costs a fetch next time, nothing else


def parse_key_set(body: bytes, algorithm: str) -> dict[str, PinnedKey]:
    """The keys of a JWKS usable with ``algorithm``, by ``kid``. Raises ValueError if not a JWKS.

    A JWK is skipped when it has no ``kid``, says another ``alg`` or a ``use`` other than
    ``sig``, or is of the wrong key type or curve. Its key comes from its own members, or from
    its ``x5c`` leaf when it carries only a certificate (as Azure Attestation's ``/certs`` does).
    """
    document = loads_strict(body)
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError('it is not a JWKS (a JSON object with a "keys" list)')
    keys: dict[str, PinnedKey] = {}
    for jwk in document["keys"]:
        if not isinstance(jwk, dict):
            continue
        kid = jwk.get("kid")
        if not isinstance(kid, str) or not kid or kid in keys:
            continue
        if jwk.get("alg", algorithm) != algorithm or jwk.get("use", "sig") != "sig":
            continue
        try:
            chain = _x5c_der(jwk.get("x5c"))
            public_key = _jwk_public_key(jwk, algorithm, chain)
        except Exception:
            continue
        if public_key is None:
            continue
        keys[kid] = PinnedKey(kid, public_key, public_key.public_bytes(*_SPKI), chain)
    return keys


def _x5c_der(value: Any) -> tuple[bytes, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("x5c is not a list of strings")
    return tuple(base64.b64decode(item, validate=True) for item in value)


def x5c_header_chain(value: Any) -> tuple[bytes, ...]:
    """A token header's ``x5c`` as DER certificates (standard base64, RFC 7515 §4.1.6)."""
    return _x5c_der(value)


def _jwk_public_key(jwk: dict[str, Any], algorithm: str, chain: tuple[bytes, ...]) -> Any:
    if algorithm == "ES384":
        if jwk.get("kty") != "EC":
            return None
        if "x" in jwk or "y" in jwk:
            key = ECAlgorithm.from_jwk(jwk)
        elif chain:
            key = x509.load_der_x509_certificate(chain[0]).public_key()
        else:
            return None
        if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp384r1":
            return None
        return key
    if algorithm in ("RS256", "PS384"):
        if jwk.get("kty") != "RSA":
            return None
        if "n" in jwk or "e" in jwk:
            key = RSAAlgorithm.from_jwk({k: v for k, v in jwk.items() if k in ("kty", "n", "e")})
        elif chain:
            key = x509.load_der_x509_certificate(chain[0]).public_key()
        else:
            return None
        if not isinstance(key, rsa.RSAPublicKey) or key.key_size < 2048:
            return None
        return key
    return None


def _load_roots(
    path: Path,
) -> tuple[tuple[x509.Certificate, ...], tuple[x509.CertificateRevocationList, ...]]:
    with open(path, "rb") as handle:
        pem = handle.read(MAX_ROOTS_BYTES + 1)
    if len(pem) > MAX_ROOTS_BYTES:
        raise ValueError(f"larger than {MAX_ROOTS_BYTES} bytes")
    roots = tuple(x509.load_pem_x509_certificates(pem))
    crls = []
    marker = b"-----BEGIN X509 CRL-----"
    start = pem.find(marker)
    while start != -1:
        end = pem.find(b"-----END X509 CRL-----", start)
        if end == -1:
            raise ValueError("an X509 CRL block is not terminated")
        end += len(b"-----END X509 CRL-----")
        crls.append(x509.load_pem_x509_crl(pem[start:end]))
        start = pem.find(marker, end)
    return roots, tuple(crls)


# ---------------------------------------------------------------------------------------------
# Chains


def _naive(moment: datetime) -> datetime:
    return moment.replace(tzinfo=None)


def check_chain(
    chain: tuple[bytes, ...],
    roots: Sequence[x509.Certificate],
    roots_der: frozenset[bytes],
    crls: Sequence[x509.CertificateRevocationList] = (),
) -> ChainVerdict:
    """Whether ``chain`` (DER, leaf first) is a certification path to one of ``roots``.

    Checked: each certificate is signed by the next one, every issuer is a CA (basic
    constraints, ``keyCertSign`` when key usage is present) within its path length, the last one
    is a configured root or signed by one, and no certificate is revoked by a bundled CRL of its
    issuer. Validity periods are gathered into one window for ``problem_at``.
    """

    def fail(detail: str) -> ChainVerdict:
        return ChainVerdict(False, detail, None, None, None)

    if not chain:
        return fail("the x5c chain is empty")
    if not roots:
        return fail("an x5c chain is present but the issuer has no roots_file configured")
    try:
        certs = [x509.load_der_x509_certificate(der) for der in chain]
    except ValueError:
        return fail("a certificate of the x5c chain is not DER X.509")
    anchor: x509.Certificate | None = None
    if chain[-1] in roots_der:
        anchor = certs[-1]
        path = certs
    else:
        for root in roots:
            if root.subject == certs[-1].issuer and _issued_by(certs[-1], root):
                anchor = root
                break
        if anchor is None:
            return fail("the x5c chain does not reach a configured root")
        path = [*certs, anchor]
    for index in range(len(path) - 1):
        child, parent = path[index], path[index + 1]
        if not _issued_by(child, parent):
            return fail(f"x5c certificate {index} is not signed by the next one")
        problem = _ca_problem(parent, intermediates_below=index)
        if problem:
            return fail(problem)
        if _revoked(child, parent, crls):
            return fail(f"x5c certificate {index} ({child.subject.rfc4514_string()}) is revoked")
    leaf_usage = _extension(certs[0], x509.KeyUsage)
    if leaf_usage is not None and not leaf_usage.digital_signature:
        return fail("the x5c leaf certificate may not sign (key usage)")
    return ChainVerdict(
        True,
        None,
        certs[0].public_key().public_bytes(*_SPKI),
        max(_naive(c.not_valid_before_utc) for c in path),
        min(_naive(c.not_valid_after_utc) for c in path),
    )


def _issued_by(child: x509.Certificate, parent: x509.Certificate) -> bool:
    try:
        child.verify_directly_issued_by(parent)
    except Exception:
        return False
    return True


def _extension(cert: x509.Certificate, kind: type) -> Any:
    try:
        return cert.extensions.get_extension_for_class(kind).value
    except x509.ExtensionNotFound:
        return None


def _ca_problem(cert: x509.Certificate, *, intermediates_below: int) -> str | None:
    name = cert.subject.rfc4514_string()
    constraints = _extension(cert, x509.BasicConstraints)
    if constraints is None or not constraints.ca:
        return f"{name} issues a certificate of the x5c chain but is not a CA"
    if constraints.path_length is not None and intermediates_below > constraints.path_length:
        return f"{name} allows a path length of {constraints.path_length} but the chain is longer"
    usage = _extension(cert, x509.KeyUsage)
    if usage is not None and not usage.key_cert_sign:
        return f"{name} may not sign certificates (key usage)"
    return None


def _revoked(
    cert: x509.Certificate,
    issuer: x509.Certificate,
    crls: Sequence[x509.CertificateRevocationList],
) -> bool:
    for crl in crls:
        if crl.issuer != cert.issuer:
            continue
        if not crl.is_signature_valid(issuer.public_key()):
            continue
        if crl.get_revoked_certificate_by_serial_number(cert.serial_number) is not None:
            return True
    return False

"""Simulated attestation issuers: their keys, certificate chains, key sets and JWS signing.

Five issuers, shaped like the real services annex trusts (or must refuse):

=========  =============  ======  ==========================================================
name       provider       alg     keys
=========  =============  ======  ==========================================================
nras       nvidia-nras    ES384   P-384 leaf key; JWKS key carries x5c (leaf, intermediate)
maa        azure-maa      RS256   RSA-2048 leaf key; JWKS at ``<tenant>/certs``, header jku
ita        intel-ita      PS384   RSA-2048 leaf key (PSS, salt length 48), header jku
local      nvidia-local   HS256   the local verifier's constant secret: self-reported only
attacker   nvidia-nras    ES384   its own root, same ``iss`` as nras: forgeries for tests
=========  =============  ======  ==========================================================

Every chain is root -> intermediate -> leaf, the CA certificates P-384. Keys are derived from
the seed (EC via ``ec.derive_private_key``, RSA from seeded primes) and certificates are
signed with deterministic ECDSA (RFC 6979), so the same seed gives byte-identical trust
material in every process: a key set written by one process verifies tokens minted by
another. Tokens themselves use ordinary (randomised) ECDSA, about twice as fast.

Each issuer (local aside) also has a *revoked* signing key: its leaf hangs off an
intermediate whose validity ended in 2020 (the simulated stand-in for a revoked CA; the RSA
issuers re-certify their one key there, the EC issuers have a second key). Its
JWK is published beside the good one under ``<kid>-revoked`` and tokens signed with
``sign(..., revoked=True)`` carry that chain in their header ``x5c`` too: a verifier that
checks chains to the pinned root at the receipt time finds it untrusted either way.

JWS is implemented here directly with ``cryptography`` (no JWT library), so that tests which
decode these tokens with PyJWT check one implementation against another.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import random
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import orjson
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

SIMULATED_DOMAIN = "simulated.annex.invalid"
NRAS_ISSUER = f"https://nras.attestation.{SIMULATED_DOMAIN}"
NRAS_STAGING_ISSUER = f"https://nras.attestation-stg.{SIMULATED_DOMAIN}"
MAA_ISSUER = f"https://sharedweu.weu.attest.{SIMULATED_DOMAIN}"
ITA_ISSUER = f"https://portal.trustauthority.{SIMULATED_DOMAIN}"
LOCAL_ISSUER = "NV-Local-Verifier-simulated"
# NVIDIA's local verifier signs with a constant, public key (reference §1.2): anyone can mint
LOCAL_SECRET = b"secret"
LOCAL_SECRET_ENV = "ANNEX_NVIDIA_LOCAL_SECRET"
ISSUER_NAMES = ("nras", "maa", "ita", "local", "attacker")

# validity of the simulated PKI: wide enough for any world clock and its history
_ROOT_VALID = (datetime(2020, 1, 1, tzinfo=UTC), datetime(2045, 1, 1, tzinfo=UTC))
_INTERMEDIATE_VALID = (datetime(2020, 1, 1, tzinfo=UTC), datetime(2040, 1, 1, tzinfo=UTC))
_LEAF_VALID = (datetime(2020, 1, 2, tzinfo=UTC), datetime(2036, 1, 1, tzinfo=UTC))
_REVOKED_INTERMEDIATE_VALID = (datetime(2020, 1, 1, tzinfo=UTC), datetime(2020, 6, 1, tzinfo=UTC))
_REVOKED_LEAF_VALID = (datetime(2020, 1, 2, tzinfo=UTC), datetime(2036, 1, 1, tzinfo=UTC))

_P384_ORDER = int(
    "ffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973",
    16,
)
_ECDSA = ec.ECDSA(hashes.SHA384())
_PSS_384 = padding.PSS(mgf=padding.MGF1(hashes.SHA384()), salt_length=48)
_PKCS1 = padding.PKCS1v15()


def b64url(data: bytes) -> str:
    """base64url without padding (RFC 7515 §2)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class _Chain:
    """One signing key with its certificates: leaf first, then intermediate, then root."""

    key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
    kid: str
    leaf: x509.Certificate
    intermediate: x509.Certificate
    x5c: tuple[str, ...]  # base64 (standard) DER of leaf and intermediate, precomputed


@dataclass
class SimulatedIssuer:
    """One attestation service: who it claims to be (`iss`), its algorithm, keys and chain."""

    name: str
    provider: str
    iss: str
    alg: str
    kid: str
    jwks_path: str = ""  # where AttestationIssuerServer publishes the key set
    root: x509.Certificate | None = field(default=None, repr=False)
    _chain: _Chain | None = field(default=None, repr=False)
    _revoked: _Chain | None = field(default=None, repr=False)
    _secret: bytes | None = field(default=None, repr=False)
    _header: dict = field(default_factory=dict, repr=False)
    _header_b64: bytes = field(default=b"", repr=False)
    _revoked_header_b64: bytes = field(default=b"", repr=False)

    @property
    def revoked_kid(self) -> str | None:
        """kid of the key whose intermediate is revoked (expired), None for HS256."""
        return self._revoked.kid if self._revoked else None

    def header(self, *, revoked: bool = False) -> dict:
        """The JOSE header `sign` writes by default (a copy)."""
        if revoked:
            if self._revoked is None:
                raise ValueError(f"issuer {self.name!r} has no revoked key")
            return {**self._header, "kid": self._revoked.kid, "x5c": list(self._revoked.x5c)}
        return dict(self._header)

    def jwks(self) -> dict:
        """The published key set: the signing key and its revoked sibling, each with x5c."""
        if self._chain is None:
            return {"keys": []}
        keys = [_jwk(self._chain, self.alg)]
        if self._revoked is not None:
            keys.append(_jwk(self._revoked, self.alg))
        return {"keys": keys}

    def jwks_bytes(self) -> bytes:
        return orjson.dumps(self.jwks(), option=orjson.OPT_INDENT_2)

    def root_pem(self) -> bytes:
        """The trust anchor (self-signed root) in PEM; empty for the HS256 local verifier."""
        if self.root is None:
            return b""
        return self.root.public_bytes(serialization.Encoding.PEM)

    def chain_pem(self, *, revoked: bool = False) -> bytes:
        """Leaf and intermediate in PEM (what `x5c` carries), for chain tests."""
        chain = self._revoked if revoked else self._chain
        if chain is None:
            return b""
        return b"".join(
            c.public_bytes(serialization.Encoding.PEM) for c in (chain.leaf, chain.intermediate)
        )

    def public_key(self, *, revoked: bool = False):
        chain = self._revoked if revoked else self._chain
        return None if chain is None else chain.key.public_key()

    def sign(self, claims: dict, *, header: dict | None = None, revoked: bool = False) -> str:
        """A compact JWS of `claims` with this issuer's key and algorithm.

        `header` entries are merged over the default header; a value of None removes that
        entry (tests use it to drop `kid`). The signature is always made with this issuer's
        own key and algorithm, whatever `header` says, so a header naming another `alg` or
        `kid` gives a token whose header lies. `revoked=True` signs with the key whose
        intermediate is revoked and puts that chain in the header's `x5c`.
        """
        if header is None:
            head = self._revoked_header_b64 if revoked else self._header_b64
        else:
            merged = self.header(revoked=revoked)
            for key, value in header.items():
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            head = b64url(orjson.dumps(merged)).encode("ascii")
        payload = base64.urlsafe_b64encode(orjson.dumps(claims)).rstrip(b"=")
        signing_input = head + b"." + payload
        signature = self._signature(signing_input, revoked)
        return (signing_input + b"." + base64.urlsafe_b64encode(signature).rstrip(b"=")).decode(
            "ascii"
        )

    def _signature(self, signing_input: bytes, revoked: bool) -> bytes:
        if self.alg == "HS256":
            assert self._secret is not None
            return hmac.new(self._secret, signing_input, hashlib.sha256).digest()
        chain = self._revoked if revoked else self._chain
        assert chain is not None
        key = chain.key
        if self.alg == "ES384":
            assert isinstance(key, ec.EllipticCurvePrivateKey)
            r, s = decode_dss_signature(key.sign(signing_input, _ECDSA))
            return r.to_bytes(48, "big") + s.to_bytes(48, "big")  # RFC 7518 §3.4: R || S
        assert isinstance(key, rsa.RSAPrivateKey)
        if self.alg == "RS256":
            return key.sign(signing_input, _PKCS1, hashes.SHA256())
        if self.alg == "PS384":
            return key.sign(signing_input, _PSS_384, hashes.SHA384())
        raise ValueError(f"unsupported alg {self.alg!r}")


@dataclass
class IssuerSet:
    """The simulated issuers of one world: nras, maa, ita, local, plus an attacker."""

    seed: int
    nras: SimulatedIssuer
    maa: SimulatedIssuer
    ita: SimulatedIssuer
    local: SimulatedIssuer
    attacker: SimulatedIssuer

    @classmethod
    def create(cls, seed: int = 0) -> IssuerSet:
        """The issuers for `seed`; built once per process and seed (RSA keys are slow)."""
        with _CACHE_LOCK:
            issuers = _CACHE.get(seed)
            if issuers is None:
                issuers = _CACHE[seed] = _build(seed)
            return issuers

    def all(self) -> tuple[SimulatedIssuer, ...]:
        return (self.nras, self.maa, self.ita, self.local, self.attacker)

    def trusted(self) -> tuple[SimulatedIssuer, ...]:
        """The issuers a relying party configures (not the attacker)."""
        return (self.nras, self.maa, self.ita, self.local)

    def by_name(self, name: str) -> SimulatedIssuer:
        for issuer in self.all():
            if issuer.name == name:
                return issuer
        raise KeyError(f"no simulated issuer {name!r}; expected one of {ISSUER_NAMES}")

    def write_trust(self, folder: Path) -> dict[str, Path]:
        """Write `<name>.jwks.json` and `<name>.root.pem` for each issuer with keys.

        Returns the paths by `<name>.jwks` / `<name>.root` (e.g. "nras.jwks"). The HS256 local
        verifier has no key set or root: its secret is the constant `LOCAL_SECRET`.
        """
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths: dict[str, Path] = {}
        for issuer in self.all():
            if issuer.root is None:
                continue
            jwks = folder / f"{issuer.name}.jwks.json"
            jwks.write_bytes(issuer.jwks_bytes())
            root = folder / f"{issuer.name}.root.pem"
            root.write_bytes(issuer.root_pem())
            paths[f"{issuer.name}.jwks"] = jwks
            paths[f"{issuer.name}.root"] = root
        return paths

    def settings_toml(self, folder: Path, *, jwks_base_url: str | None = None) -> str:
        """The `[[attestation.issuers]]` TOML that makes annex trust these issuers.

        Paths point into `folder` (absolute), as written by `write_trust`. With
        `jwks_base_url` (an AttestationIssuerServer's url) the key sets are configured as
        URLs instead of files. The attacker is never listed. The local verifier's entry names
        the environment variable holding its secret (whose value is `LOCAL_SECRET`).
        """
        folder = Path(folder).resolve()
        blocks = []
        for issuer in self.trusted():
            lines = [
                "[[attestation.issuers]]",
                f"name = {_toml(issuer.name)}",
                f"provider = {_toml(issuer.provider)}",
                f"issuer = {_toml(issuer.iss)}",
                f"algorithm = {_toml(issuer.alg)}",
            ]
            if issuer.root is not None:
                if jwks_base_url:
                    url = jwks_base_url.rstrip("/") + issuer.jwks_path
                    lines.append(f"jwks_url = {_toml(url)}")
                else:
                    lines.append(f"jwks_file = {_toml(str(folder / f'{issuer.name}.jwks.json'))}")
                lines.append(f"roots_file = {_toml(str(folder / f'{issuer.name}.root.pem'))}")
            else:
                lines.append(f"secret_env = {_toml(LOCAL_SECRET_ENV)}")
            lines.append("max_age_seconds = 3600")
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks) + "\n"


# -- construction ------------------------------------------------------------------------

_CACHE: dict[int, IssuerSet] = {}
_CACHE_LOCK = threading.Lock()
_RSA_CACHE: dict[str, rsa.RSAPrivateKey] = {}


def _build(seed: int) -> IssuerSet:
    def pki(name: str, org: str, leaf_key_kind: str, kid_style: str) -> dict:
        label = f"annex-simulator/{seed}/{name}"
        root_key = _derived_ec(f"{label}/root")
        root_name = _name(f"{org} Attestation Root CA (simulated)", org)  # CN <= 64 chars
        root = _certificate(
            root_name, root_key.public_key(), root_name, root_key, f"{label}/root",
            _ROOT_VALID, ca=True, path_length=1,
        )  # fmt: skip
        chains = []
        for variant, inter_valid, leaf_valid in (
            ("", _INTERMEDIATE_VALID, _LEAF_VALID),
            ("revoked", _REVOKED_INTERMEDIATE_VALID, _REVOKED_LEAF_VALID),
        ):
            suffix = f" {variant}" if variant else ""
            inter_key = _derived_ec(f"{label}/intermediate{suffix}")
            inter_name = _name(f"{org} Attestation Intermediate CA{suffix} (simulated)", org)
            inter = _certificate(
                inter_name, inter_key.public_key(), root_name, root_key,
                f"{label}/intermediate{suffix}", inter_valid, ca=True, path_length=0,
            )  # fmt: skip
            if leaf_key_kind == "ec":
                leaf_key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey = _derived_ec(
                    f"{label}/leaf{suffix}"
                )
            else:  # RSA generation is slow: the revoked certificate re-certifies the same key
                leaf_key = _derived_rsa(f"{label}/leaf")
            leaf = _certificate(
                _name(f"{org} Attestation Token Signing{suffix} (simulated)", org),
                leaf_key.public_key(), inter_name, inter_key, f"{label}/leaf{suffix}",
                leaf_valid, ca=False, path_length=None,
            )  # fmt: skip
            kid = _kid(kid_style, leaf_key, seed)
            if variant:
                kid = f"{kid}-revoked"
            x5c = tuple(
                base64.b64encode(c.public_bytes(serialization.Encoding.DER)).decode("ascii")
                for c in (leaf, inter)
            )
            chains.append(_Chain(leaf_key, kid, leaf, inter, x5c))
        return {"root": root, "chain": chains[0], "revoked": chains[1]}

    def issuer(name, provider, iss, alg, jwks_path, header_extra, material) -> SimulatedIssuer:
        chain, revoked = material["chain"], material["revoked"]
        header = {"alg": alg, **header_extra, "kid": chain.kid}
        if alg != "ES384":
            header["typ"] = "JWT"
        made = SimulatedIssuer(
            name=name, provider=provider, iss=iss, alg=alg, kid=chain.kid, jwks_path=jwks_path,
            root=material["root"], _chain=chain, _revoked=revoked, _header=header,
        )  # fmt: skip
        made._header_b64 = b64url(orjson.dumps(header)).encode("ascii")
        made._revoked_header_b64 = b64url(orjson.dumps(made.header(revoked=True))).encode("ascii")
        return made

    nras = issuer(
        "nras", "nvidia-nras", NRAS_ISSUER, "ES384", "/nras/.well-known/jwks.json", {},
        pki("nras", "NVIDIA", "ec", "nras"),
    )  # fmt: skip
    maa = issuer(
        "maa", "azure-maa", MAA_ISSUER, "RS256", "/maa/certs", {"jku": f"{MAA_ISSUER}/certs"},
        pki("maa", "Microsoft Azure", "rsa", "maa"),
    )  # fmt: skip
    ita = issuer(
        "ita", "intel-ita", ITA_ISSUER, "PS384", "/ita/certs", {"jku": f"{ITA_ISSUER}/certs"},
        pki("ita", "Intel", "rsa", "ita"),
    )  # fmt: skip
    attacker = issuer(
        "attacker", "nvidia-nras", NRAS_ISSUER, "ES384", "/attacker/.well-known/jwks.json", {},
        pki("attacker", "Mallory", "ec", "nras"),
    )  # fmt: skip
    local_header = {"alg": "HS256", "typ": "JWT"}
    local = SimulatedIssuer(
        name="local", provider="nvidia-local", iss=LOCAL_ISSUER, alg="HS256", kid="",
        _secret=LOCAL_SECRET, _header=local_header,
    )  # fmt: skip
    local._header_b64 = b64url(orjson.dumps(local_header)).encode("ascii")
    return IssuerSet(seed=seed, nras=nras, maa=maa, ita=ita, local=local, attacker=attacker)


def _name(common_name: str, org: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, f"{org} (simulated by annex)"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _certificate(
    subject: x509.Name,
    public_key,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    label: str,
    valid: tuple[datetime, datetime],
    *,
    ca: bool,
    path_length: int | None,
) -> x509.Certificate:
    serial = int.from_bytes(hashlib.sha256(label.encode()).digest()[:19], "big") | 1
    usage = dict.fromkeys(
        (
            "digital_signature",
            "content_commitment",
            "key_encipherment",
            "data_encipherment",
            "key_agreement",
            "key_cert_sign",
            "crl_sign",
            "encipher_only",
            "decipher_only",
        ),
        False,
    )
    if ca:
        usage.update(key_cert_sign=True, crl_sign=True)
    else:
        usage.update(digital_signature=True)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(serial)
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=ca, path_length=path_length), critical=True)
        .add_extension(x509.KeyUsage(**usage), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
            critical=False,
        )
    )
    return builder.sign(issuer_key, hashes.SHA384(), ecdsa_deterministic=True)


def _derived_ec(label: str) -> ec.EllipticCurvePrivateKey:
    """A P-384 key whose private value is a hash of `label`: same label, same key."""
    digest = hashlib.sha512(label.encode()).digest()
    value = int.from_bytes(digest, "big") % (_P384_ORDER - 1) + 1
    return ec.derive_private_key(value, ec.SECP384R1())


def _derived_rsa(label: str, bits: int = 2048) -> rsa.RSAPrivateKey:
    """An RSA key from primes drawn by an RNG seeded with `label` (about 0.3 s, cached)."""
    with _RSA_LOCK:
        key = _RSA_CACHE.get(label)
        if key is not None:
            return key
        rng = random.Random(hashlib.sha256(label.encode()).digest())
        e = 65537
        while True:
            p, q = _prime(rng, bits // 2), _prime(rng, bits // 2)
            n = p * q
            if p == q or n.bit_length() != bits:
                continue
            lam = math.lcm(p - 1, q - 1)
            if math.gcd(e, lam) != 1:
                continue
            d = pow(e, -1, lam)
            break
        numbers = rsa.RSAPrivateNumbers(
            p=p,
            q=q,
            d=d,
            dmp1=rsa.rsa_crt_dmp1(d, p),
            dmq1=rsa.rsa_crt_dmq1(d, q),
            iqmp=rsa.rsa_crt_iqmp(p, q),
            public_numbers=rsa.RSAPublicNumbers(e, n),
        )
        key = numbers.private_key(unsafe_skip_rsa_key_validation=True)
        _RSA_CACHE[label] = key
        return key


_RSA_LOCK = threading.Lock()
_SMALL_PRIMES = [p for p in range(3, 20000, 2) if all(p % d for d in range(3, int(p**0.5) + 1, 2))]
_SMALL_PRODUCT = math.prod(_SMALL_PRIMES)


def _prime(rng: random.Random, bits: int) -> int:
    while True:
        candidate = rng.getrandbits(bits) | (3 << (bits - 2)) | 1
        if math.gcd(candidate, _SMALL_PRODUCT) != 1:
            continue
        if _probably_prime(candidate, rng):
            return candidate


def _probably_prime(n: int, rng: random.Random, rounds: int = 8) -> bool:
    """Miller-Rabin with bases from `rng` (error below 4**-rounds)."""
    d, r = n - 1, 0
    while d % 2 == 0:
        d //= 2
        r += 1
    for _ in range(rounds):
        a = rng.randrange(2, n - 2)
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _kid(style: str, key, seed: int) -> str:
    spki = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    digest = hashlib.sha256(spki).digest()
    if style == "nras":  # like nv-eat-kid-prod-20240927193937294-<uuid>
        h = digest.hex()
        return f"nv-eat-kid-simulated-{seed}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
    if style == "maa":  # MAA: base64 of the certificate thumbprint
        return base64.b64encode(digest).decode("ascii")
    return digest.hex()  # ITA: hex thumbprint


def _jwk(chain: _Chain, alg: str) -> dict:
    public = chain.key.public_key()
    if isinstance(public, ec.EllipticCurvePublicKey):
        numbers = public.public_numbers()
        material = {
            "kty": "EC",
            "crv": "P-384",
            "x": b64url(numbers.x.to_bytes(48, "big")),
            "y": b64url(numbers.y.to_bytes(48, "big")),
        }
    else:
        assert isinstance(public, rsa.RSAPublicKey)
        numbers = public.public_numbers()
        material = {
            "kty": "RSA",
            "n": b64url(numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")),
            "e": b64url(numbers.e.to_bytes(3, "big")),
        }
    return {**material, "kid": chain.kid, "alg": alg, "use": "sig", "x5c": list(chain.x5c)}


def _toml(value: str) -> str:
    return orjson.dumps(value).decode()  # a JSON string is a valid TOML basic string


__all__ = [
    "ISSUER_NAMES",
    "ITA_ISSUER",
    "LOCAL_ISSUER",
    "LOCAL_SECRET",
    "LOCAL_SECRET_ENV",
    "MAA_ISSUER",
    "NRAS_ISSUER",
    "NRAS_STAGING_ISSUER",
    "IssuerSet",
    "SimulatedIssuer",
    "b64url",
]

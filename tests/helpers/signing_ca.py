"""A throwaway test CA and signing certificate, generated at test time (never committed).

``make_signing_ca(folder)`` writes ``test-ca.pem`` (the CA certificate), ``test-signer.pem``
(a certificate the CA issued for digital signatures) and ``test-signer-key.pem`` (its key,
encrypted with ``PASSPHRASE``) into ``folder``, with a key that belongs to no certificate and
an expired certificate of the signer's key. ``pdfsig`` and ``openssl_verify`` check a signed
PDF with tools independent of annex and pyHanko.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PASSPHRASE = b"test-passphrase-not-a-secret"


@dataclass(frozen=True)
class SigningCa:
    ca_certificate: Path
    certificate: Path
    key: Path
    expired_certificate: Path
    other_key: Path
    tsa_certificate: Path
    tsa_key: Path
    """A timestamping authority's certificate (extended key usage timeStamping) and key."""


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "annex tests"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _issue(
    subject: str,
    key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool,
    start: datetime,
    end: datetime,
    timestamping: bool = False,
) -> x509.Certificate:
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.KeyUsage(
                digital_signature=not ca,
                content_commitment=not ca,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=ca,
                crl_sign=ca,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )
    if timestamping:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True
        )
    if not ca:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
            critical=False,
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def make_signing_ca(folder: Path, signer_valid_for: timedelta = timedelta(days=7)) -> SigningCa:
    folder.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    key = ec.generate_private_key(ec.SECP256R1())
    tsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)  # pyHanko's test TSA
    now = datetime.now(UTC)  # after the (slow) key generation: validity counts from here
    ca_name = _name("annex test CA")
    ca = _issue(
        "annex test CA",
        ca_key,
        ca_name,
        ca_key,
        ca=True,
        start=now - timedelta(days=1),
        end=now + timedelta(days=30),
    )
    signer = _issue(
        "annex test signer",
        key,
        ca_name,
        ca_key,
        ca=False,
        start=now - timedelta(hours=1),
        end=now + signer_valid_for,
    )
    expired = _issue(
        "annex test signer",
        key,
        ca_name,
        ca_key,
        ca=False,
        start=now - timedelta(days=20),
        end=now - timedelta(days=10),
    )
    tsa = _issue(
        "annex test TSA",
        tsa_key,
        ca_name,
        ca_key,
        ca=False,
        start=now - timedelta(hours=1),
        end=now + timedelta(days=7),
        timestamping=True,
    )
    paths = SigningCa(
        folder / "test-ca.pem",
        folder / "test-signer.pem",
        folder / "test-signer-key.pem",
        folder / "test-signer-expired.pem",
        folder / "test-other-key.pem",
        folder / "test-tsa.pem",
        folder / "test-tsa-key.pem",
    )
    paths.tsa_certificate.write_bytes(_pem(tsa))
    paths.tsa_key.write_bytes(
        tsa_key.private_bytes(
            serialization.Encoding.DER,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    paths.ca_certificate.write_bytes(_pem(ca))
    paths.certificate.write_bytes(_pem(signer))
    paths.expired_certificate.write_bytes(_pem(expired))
    paths.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(PASSPHRASE),
        )
    )
    paths.other_key.write_bytes(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


def pdfsig(path: Path) -> subprocess.CompletedProcess[str]:
    """poppler's ``pdfsig``: an independent validator (NSS), no network (``-no-ocsp``)."""
    return subprocess.run(["pdfsig", "-no-ocsp", str(path)], capture_output=True, text=True)


def openssl_verify(path: Path, ca_certificate: Path, work: Path) -> subprocess.CompletedProcess:
    """``openssl cms -verify`` of the PDF's first signature over its ByteRange, trusting only
    ``ca_certificate``: a second independent check, with the test CA as the trust anchor."""
    data = path.read_bytes()
    match = re.search(rb"/ByteRange\s*\[\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\]", data)
    assert match, "no signature"
    a, b, c, d = (int(x) for x in match.groups())
    der = bytes.fromhex(data[a + b : c].strip(b"<>").decode())
    length, header = der[1], 2
    if length & 0x80:  # DER long form: the signature is zero-padded to its reserved size
        count = length & 0x7F
        length, header = int.from_bytes(der[2 : 2 + count], "big"), 2 + count
    work.mkdir(parents=True, exist_ok=True)
    (work / "signature.der").write_bytes(der[: header + length])
    (work / "signed-content.bin").write_bytes(data[a : a + b] + data[c : c + d])
    return subprocess.run(
        [
            "openssl", "cms", "-verify", "-binary", "-inform", "DER",
            "-in", str(work / "signature.der"),
            "-content", str(work / "signed-content.bin"),
            "-CAfile", str(ca_certificate), "-purpose", "any", "-out", os.devnull,
        ],
        capture_output=True,
        text=True,
    )  # fmt: skip


@contextmanager
def timestamp_server(ca: SigningCa) -> Iterator[str]:
    """An RFC 3161 timestamp server on loopback (pyHanko's test TSA behind HTTP), its URL."""
    from asn1crypto import keys as asn1_keys
    from asn1crypto import tsp
    from asn1crypto import x509 as asn1_x509
    from pyhanko.sign.timestamps import DummyTimeStamper

    certificate = x509.load_pem_x509_certificate(ca.tsa_certificate.read_bytes())
    stamper = DummyTimeStamper(
        tsa_cert=asn1_x509.Certificate.load(certificate.public_bytes(serialization.Encoding.DER)),
        tsa_key=asn1_keys.PrivateKeyInfo.load(ca.tsa_key.read_bytes()),
    )

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            reply = stamper.request_tsa_response(tsp.TimeStampReq.load(body)).dump()
            self.send_response(200)
            self.send_header("Content-Type", "application/timestamp-reply")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/tsa"
    finally:
        server.shutdown()
        server.server_close()

"""PAdES signatures on rendered reports: sign with the configured key, check a signed file.

A signed report is the rendered PDF/A-3b plus one incremental update that adds an invisible,
printable signature field (pyHanko; PAdES baseline B-B, or B-T when a timestamp server is
configured). The update only appends, so the rendered revision, its embedded evidence and its
PDF/A-3b declaration stay byte for byte as rendered; the signature's ByteRange covers the whole
file as annex wrote it (its *signed revision*).

The key and certificate are PEM files named in ``[reports]``; the key's passphrase comes from
the environment variable named there and lives only in memory: it is never logged, stored or
put into an error message. Loading checks what would otherwise make a signature that no one
can trust: a wrong or missing passphrase, a certificate outside its validity period, a key that
does not belong to the certificate.

Sources: ETSI EN 319 142-1 (PAdES baseline levels B-B, B-T); ISO 19005-3 (PDF/A-3: incremental
updates and printable, non-hidden widget annotations are allowed).
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from annex.settings import ReportsSettings
from reports.errors import ReportError

SIGNATURE_FIELD = "annex-signature"
BYTE_RANGE = re.compile(rb"/ByteRange\s*\[\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\]")


class SigningError(ReportError):
    """The signing key or certificate cannot be used (exit code of a report error)."""


@dataclass(frozen=True)
class SignerIdentity:
    """Who signs: the certificate's subject and the SHA-256 of its DER encoding."""

    subject: str
    fingerprint: str
    level: str
    """``PAdES-B-B``, or ``PAdES-B-T`` with a timestamp server."""


class DocumentSigner:
    """Signs PDFs with one key and certificate (loaded and checked by ``load_signer``)."""

    def __init__(self, signer: object, identity: SignerIdentity, timestamp_url: str | None):
        self._signer = signer
        self.identity = identity
        self._timestamp_url = timestamp_url

    def sign(self, pdf: bytes) -> bytes:
        """``pdf`` with a PAdES signature appended as an incremental update."""
        from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
        from pyhanko.sign import fields, signers

        timestamper = None
        if self._timestamp_url is not None:
            from pyhanko.sign.timestamps import HTTPTimeStamper

            timestamper = HTTPTimeStamper(self._timestamp_url)
        writer = IncrementalPdfFileWriter(io.BytesIO(pdf), strict=False)
        _producer_as_in_xmp(writer)
        metadata = signers.PdfSignatureMetadata(
            field_name=SIGNATURE_FIELD,
            md_algorithm="sha256",
            subfilter=fields.SigSeedSubFilter.PADES,
            reason="Rendered by annex: this file is unchanged since it was rendered",
        )
        try:
            out = signers.sign_pdf(writer, metadata, signer=self._signer, timestamper=timestamper)
        except Exception as exc:  # pyHanko raises many kinds (timestamp server, PDF structure)
            where = f" (timestamp server {self._timestamp_url})" if timestamper else ""
            raise SigningError(
                f"signing the report failed{where}: {type(exc).__name__}: {exc}",
                hint="check [reports] timestamp_url is reachable, or leave it out for PAdES B-B",
            ) from None
        return out.getvalue()


def _producer_as_in_xmp(writer: object) -> None:
    """PDF/A: the Info dictionary's /Producer must equal the XMP's pdf:Producer. pyHanko sets
    the XMP's to itself and appends itself to the Info's; naming only pyHanko in both keeps
    them equal (the renderer stays named in /Creator and in the embedded manifest)."""
    from pyhanko.pdf_utils import generic
    from pyhanko.pdf_utils.metadata.model import VENDOR

    try:
        info = writer.trailer.raw_get("/Info").get_object()  # type: ignore[attr-defined]
    except KeyError:  # no Info dictionary: the XMP alone names the producer
        return
    info["/Producer"] = generic.TextStringObject(VENDOR)
    writer.update_container(info)  # type: ignore[attr-defined]


def load_signer(
    key_file: Path,
    certificate_file: Path,
    passphrase: bytes | None,
    *,
    timestamp_url: str | None = None,
    now: datetime | None = None,
) -> DocumentSigner:
    """The signer for ``key_file`` and ``certificate_file`` (PEM), checked before first use.

    Raises ``SigningError`` for a wrong or missing passphrase, a certificate that is expired
    or not yet valid, or a key that does not match the certificate."""
    from asn1crypto import keys as asn1_keys
    from asn1crypto import x509 as asn1_x509
    from cryptography.hazmat.primitives import serialization
    from pyhanko.sign import signers
    from pyhanko_certvalidator.registry import SimpleCertificateStore

    now = now or datetime.now(UTC)
    certificate = _certificate(certificate_file)
    try:
        key_pem = key_file.read_bytes()
    except OSError as exc:
        raise SigningError(
            f"cannot read the signing key {key_file}: {exc.strerror}",
            hint="set [reports] signing_key to the PEM file of the signing key",
        ) from None
    try:
        key = serialization.load_pem_private_key(key_pem, password=passphrase)
    except TypeError:  # encrypted without a passphrase, or a passphrase for a plain key
        raise SigningError(
            f"the signing key {key_file} "
            + ("needs a passphrase" if passphrase is None else "is not encrypted"),
            hint="name the environment variable that holds it in [reports] "
            "signing_passphrase_env, and set it"
            if passphrase is None
            else "leave [reports] signing_passphrase_env out for an unencrypted key",
        ) from None
    except ValueError:
        raise SigningError(
            f"cannot decrypt the signing key {key_file}: wrong passphrase, or not a PEM key",
            hint="check the environment variable named by [reports] signing_passphrase_env",
        ) from None
    if certificate.not_valid_after_utc < now:
        raise SigningError(
            f"the signing certificate {certificate_file} expired on "
            f"{certificate.not_valid_after_utc:%Y-%m-%d %H:%M UTC}",
            hint="renew it and point [reports] signing_certificate at the new one",
        )
    if certificate.not_valid_before_utc > now:
        raise SigningError(
            f"the signing certificate {certificate_file} is not valid before "
            f"{certificate.not_valid_before_utc:%Y-%m-%d %H:%M UTC}",
            hint="check the machine's clock, or use a certificate valid now",
        )
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    if key.public_key().public_bytes(der, spki) != certificate.public_key().public_bytes(der, spki):
        raise SigningError(
            f"the signing key {key_file} does not belong to the certificate {certificate_file}",
            hint="set [reports] signing_key and signing_certificate to a matching pair",
        )
    key_der = key.private_bytes(
        der, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    cert_der = certificate.public_bytes(der)
    signer = signers.SimpleSigner(
        signing_cert=asn1_x509.Certificate.load(cert_der),
        signing_key=asn1_keys.PrivateKeyInfo.load(key_der),
        cert_registry=SimpleCertificateStore.from_certs([asn1_x509.Certificate.load(cert_der)]),
    )
    identity = SignerIdentity(
        subject=certificate.subject.rfc4514_string(),
        fingerprint=hashlib.sha256(cert_der).hexdigest(),
        level="PAdES-B-T" if timestamp_url else "PAdES-B-B",
    )
    return DocumentSigner(signer, identity, timestamp_url)


@dataclass(frozen=True)
class SignatureCheck:
    """One signature of a file, checked: who signed, whether it is intact and trusted, and
    the SHA-256 of the revision it signs (the bytes up to the end of its ByteRange)."""

    signer_subject: str
    signer_fingerprint: str
    intact: bool
    """The signed bytes hash to the digest the signature holds, and the signature verifies."""
    trusted: bool | None
    """Signed by the configured certificate (a chain to it validates); None: none configured."""
    covers_whole_file: bool
    revision_sha256: str
    summary: str


def signed_revisions(data: bytes) -> list[str]:
    """The SHA-256 of every revision a signature of ``data`` claims to cover (the bytes up to
    the end of each ByteRange), read from the raw bytes so a damaged file still yields them."""
    digests = []
    for match in BYTE_RANGE.finditer(data):
        _, _, start, length = (int(x) for x in match.groups())
        end = start + length
        if 0 < end <= len(data):
            digests.append(hashlib.sha256(data[:end]).hexdigest())
    return digests


def check_signatures(data: bytes, certificate_file: Path | None) -> list[SignatureCheck]:
    """Validate every signature of ``data`` with pyHanko, trusting only the configured
    certificate (``certificate_file``; none: integrity only) at the signature's own time.
    Revocation is not fetched (the check runs offline); an unreadable file has no signatures
    to check."""
    from pyhanko.pdf_utils.reader import PdfFileReader
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko_certvalidator import ValidationContext

    anchor = _asn1_certificate(certificate_file) if certificate_file is not None else None
    try:
        reader = PdfFileReader(io.BytesIO(data), strict=False)
        embedded = list(reader.embedded_signatures)
    except Exception:  # a damaged file: nothing pyHanko can validate
        return []
    checks = []
    for signature in embedded:
        cert = signature.signer_cert
        fingerprint = hashlib.sha256(cert.dump()).hexdigest()
        # the certificate as it was when the signature was made (the time it states; a B-T
        # signature's timestamp vouches for it): a certificate that expired since, as every
        # certificate does within a ten-year retention, still tells who signed
        context = (
            ValidationContext(
                trust_roots=[anchor],
                allow_fetching=False,
                moment=signature.self_reported_timestamp,
            )
            if anchor is not None
            else None
        )
        try:
            status = validate_pdf_signature(signature, context or ValidationContext())
            intact = bool(status.intact and status.valid)
            trusted = bool(status.trusted) if context is not None else None
            summary = status.summary()
        except Exception as exc:
            intact, trusted, summary = False, False if context else None, f"{type(exc).__name__}"
        _, _, start, length = signature.byte_range
        revision = hashlib.sha256(data[: start + length]).hexdigest()
        checks.append(
            SignatureCheck(
                _subject(cert),
                fingerprint,
                intact,
                trusted,
                signature.coverage is not None and start + length == len(data),
                revision,
                summary,
            )
        )
    return checks


def _certificate(path: Path):
    from cryptography import x509

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SigningError(
            f"cannot read the signing certificate {path}: {exc.strerror}",
            hint="set [reports] signing_certificate to the PEM file of the certificate",
        ) from None
    try:
        return x509.load_pem_x509_certificate(data)
    except ValueError:
        raise SigningError(
            f"{path} is not a PEM certificate",
            hint="set [reports] signing_certificate to a PEM (-----BEGIN CERTIFICATE-----) file",
        ) from None


def _asn1_certificate(path: Path):
    from asn1crypto import x509 as asn1_x509
    from cryptography.hazmat.primitives import serialization

    return asn1_x509.Certificate.load(_certificate(path).public_bytes(serialization.Encoding.DER))


def configured_signer(settings: ReportsSettings, env: Mapping[str, str]) -> DocumentSigner | None:
    """The signer ``[reports]`` configures, checked; None when signing is not configured.
    The passphrase is read from ``env`` under the configured name, here and only here."""
    if settings.signing_key is None or settings.signing_certificate is None:
        return None
    passphrase = None
    name = settings.signing_passphrase_env
    if name is not None:
        value = env.get(name)
        if not value:
            raise SigningError(
                f"the environment variable {name} (reports.signing_passphrase_env) is not set",
                hint=f"export {name} with the signing key's passphrase",
            )
        passphrase = value.encode()
    return load_signer(
        settings.signing_key,
        settings.signing_certificate,
        passphrase,
        timestamp_url=settings.timestamp_url,
    )


def signer_of(data: bytes) -> SignerIdentity | None:
    """Who signed ``data`` (its first signature) and at which PAdES level; None when unsigned
    or unreadable."""
    if b"/ByteRange" not in data:
        return None
    from pyhanko.pdf_utils.reader import PdfFileReader

    try:
        signatures = PdfFileReader(io.BytesIO(data), strict=False).embedded_signatures
        if not signatures:
            return None
        signature = signatures[0]
        cert = signature.signer_cert
        unsigned = signature.signer_info["unsigned_attrs"]
        stamped = unsigned.native is not None and any(
            a["type"].native == "signature_time_stamp_token" for a in unsigned
        )
    except Exception:  # a damaged file: no signer to name
        return None
    return SignerIdentity(
        subject=_subject(cert),
        fingerprint=hashlib.sha256(cert.dump()).hexdigest(),
        level="PAdES-B-T" if stamped else "PAdES-B-B",
    )


def _subject(cert) -> str:
    """The subject in RFC 4514 form, as ``cryptography`` writes it (the one load_signer names)."""
    from cryptography import x509

    return x509.load_der_x509_certificate(cert.dump()).subject.rfc4514_string()

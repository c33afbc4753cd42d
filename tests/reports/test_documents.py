"""Records an auditor trusts (issue 39 item 4): every rendered file is recorded in
audit.documents with the SHA-256 of its bytes; a signed report carries a PAdES signature that
independent validators (poppler's pdfsig, openssl cms with the test CA) accept and that leaves
the rendered PDF/A-3b revision byte for byte as it was; a key or certificate that cannot make a
trustworthy signature is refused with an error that says why."""

from __future__ import annotations

import hashlib
import io
import json
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from pypdf import PdfReader, PdfWriter

from reports.definition import ReportRequest
from reports.documents import keep_until
from reports.generate import generate_report
from reports.period import day_period
from reports.signing import (
    SigningError,
    check_signatures,
    configured_signer,
    load_signer,
    signer_of,
)
from tests.helpers.report_pdf import pdf_attachments, pdf_xmp, qpdf_check
from tests.helpers.report_scenario import build_scenario
from tests.helpers.signing_ca import (
    PASSPHRASE,
    make_signing_ca,
    openssl_verify,
    pdfsig,
    timestamp_server,
)
from warehouse import Warehouse

pytestmark = pytest.mark.slow

WEEK = ReportRequest(period=day_period(date(2026, 10, 5), date(2026, 10, 11)))
RENDERED_AT = datetime(2026, 11, 28, 12, 0)


def documents(wh: Warehouse) -> list[dict]:
    with wh.writer() as con:
        cursor = con.execute("SELECT * FROM audit.documents ORDER BY rendered_at")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def test_a_rendered_document_is_recorded_with_the_hash_of_its_bytes(tmp_path: Path) -> None:
    wh = build_scenario(tmp_path)
    out = tmp_path / "out"
    result = generate_report(wh, "attestation", WEEK, out, generated_at=RENDERED_AT)
    (row,) = documents(wh)
    assert row["file_sha256"] == hashlib.sha256(result.path.read_bytes()).hexdigest()
    assert row["file_sha256"] == result.version.pdf_sha256  # the kept version's own bytes
    assert (row["document"], row["version"], row["report"]) == (
        "attestation/2026-10-05_to_2026-10-11",
        1,
        "attestation",
    )
    assert json.loads(row["parameters"]) == {
        "period": "2026-10-05..2026-10-11",
        "from": "2026-10-05",
        "to": "2026-10-11",
    }
    assert row["file_name"] == result.path.name
    assert row["evidence_digest"] == result.manifest["evidence_digest"]
    assert row["rendered_at"] == RENDERED_AT
    assert row["keep_until"] == datetime(2036, 11, 28, 12, 0)  # the default ten years
    assert row["signed"] is False and row["signer_subject"] is None

    # the same content again: the same bytes, no second row; kept for the configured years
    again = generate_report(
        wh, "attestation", WEEK, out, generated_at=RENDERED_AT, retention_years=3
    )
    assert again.path.read_bytes() == result.path.read_bytes()
    assert len(documents(wh)) == 1


def test_retention_counts_calendar_years() -> None:
    assert keep_until(datetime(2028, 2, 29, 8), 10) == datetime(2038, 2, 28, 8)
    assert keep_until(datetime(2026, 11, 29), 1) == datetime(2027, 11, 29)


def test_a_signed_report_passes_independent_validators_and_keeps_its_pdfa_revision(
    tmp_path: Path,
) -> None:
    ca = make_signing_ca(tmp_path / "ca")
    signer = load_signer(ca.key, ca.certificate, PASSPHRASE)
    plain = generate_report(
        build_scenario(tmp_path / "a"),
        "attestation",
        WEEK,
        tmp_path / "plain",
        generated_at=RENDERED_AT,
    )
    wh = build_scenario(tmp_path / "b")
    signed = generate_report(
        wh, "attestation", WEEK, tmp_path / "signed", generated_at=RENDERED_AT, signer=signer
    )
    unsigned_bytes, signed_bytes = plain.path.read_bytes(), signed.path.read_bytes()
    # an incremental update: the rendered PDF/A-3b revision is the signed file's prefix
    assert signed_bytes.startswith(unsigned_bytes) and len(signed_bytes) > len(unsigned_bytes)
    # pyHanko updates the XMP (producer, modification date) and keeps the PDF/A-3b claim
    assert b'pdfaid:part="3"' in pdf_xmp(signed.path)
    assert b'pdfaid:conformance="B"' in pdf_xmp(signed.path)
    info = PdfReader(signed.path).metadata  # PDF/A: Info and XMP agree
    xmp = pdf_xmp(signed.path).decode()
    assert f'pdf:Producer="{info["/Producer"]}"' in xmp
    assert f'xmp:ModifyDate="{info.modification_date.isoformat()}' in xmp
    assert "manifest.json" in pdf_attachments(signed.path)
    assert qpdf_check(signed.path).returncode == 0

    checked = pdfsig(signed.path)  # poppler: the CMS signature over the whole file
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Signature is Valid." in checked.stdout
    assert "Total document signed" in checked.stdout
    assert "ETSI.CAdES.detached" in checked.stdout  # PAdES baseline
    assert "CN=annex test signer" in checked.stdout
    verified = openssl_verify(signed.path, ca.ca_certificate, tmp_path / "openssl")
    assert verified.returncode == 0, verified.stderr  # chains to the test CA

    (row,) = documents(wh)
    assert row["file_sha256"] == hashlib.sha256(signed_bytes).hexdigest()
    assert row["signed"] is True and row["signature_level"] == "PAdES-B-B"
    assert row["signer_subject"] == "CN=annex test signer,O=annex tests"
    assert row["signer_fingerprint"] == signer.identity.fingerprint
    assert signer_of(signed_bytes) == signer.identity

    # one modified byte in the signed range: both validators refuse it
    damaged = bytearray(signed_bytes)
    damaged[len(unsigned_bytes) // 2] ^= 0x01
    bad = tmp_path / "damaged.pdf"
    bad.write_bytes(bytes(damaged))
    assert "Signature is Valid." not in pdfsig(bad).stdout
    assert openssl_verify(bad, ca.ca_certificate, tmp_path / "openssl-bad").returncode != 0


def test_keys_that_cannot_sign_are_refused_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca = make_signing_ca(tmp_path / "ca")
    secret = PASSPHRASE.decode()
    cases = [
        (lambda: load_signer(ca.key, ca.certificate, b"wrong"), "wrong passphrase"),
        (lambda: load_signer(ca.key, ca.certificate, None), "needs a passphrase"),
        (lambda: load_signer(ca.key, ca.expired_certificate, PASSPHRASE), "expired on"),
        (lambda: load_signer(ca.other_key, ca.certificate, None), "does not belong"),
        (
            lambda: load_signer(
                ca.key, ca.certificate, PASSPHRASE, now=datetime.now(UTC) - timedelta(days=3)
            ),
            "is not valid before",
        ),
        (lambda: load_signer(tmp_path / "none.pem", ca.certificate, None), "cannot read"),
        (lambda: load_signer(ca.key, ca.key, PASSPHRASE), "is not a PEM certificate"),
    ]
    for attempt, reason in cases:
        with pytest.raises(SigningError, match=reason) as caught:
            attempt()
        assert caught.value.exit_code == 7 and caught.value.hint
        assert secret not in str(caught.value)

    from annex.settings import ReportsSettings

    settings = ReportsSettings(
        signing_key=ca.key,
        signing_certificate=ca.certificate,
        signing_passphrase_env="ANNEX_TEST_SIGNING_PASSPHRASE",
    )
    with pytest.raises(SigningError, match=r"ANNEX_TEST_SIGNING_PASSPHRASE .* is not set"):
        configured_signer(settings, {})
    assert configured_signer(settings, {"ANNEX_TEST_SIGNING_PASSPHRASE": secret}) is not None
    assert configured_signer(ReportsSettings(), {}) is None


def test_with_a_timestamp_server_the_signature_is_pades_b_t(tmp_path: Path) -> None:
    ca = make_signing_ca(tmp_path / "ca")
    wh = build_scenario(tmp_path)
    with timestamp_server(ca) as url:
        signer = load_signer(ca.key, ca.certificate, PASSPHRASE, timestamp_url=url)
        signed = generate_report(wh, "attestation", WEEK, tmp_path / "out", signer=signer)
    assert signer.identity.level == "PAdES-B-T"
    (row,) = documents(wh)
    assert row["signature_level"] == "PAdES-B-T"
    assert signer_of(signed.path.read_bytes()).level == "PAdES-B-T"
    checked = pdfsig(signed.path)
    assert "Signature is Valid." in checked.stdout, checked.stdout


def test_a_signature_stays_valid_after_its_certificate_expired(tmp_path: Path) -> None:
    """Records are kept ten years; certificates expire sooner. The signature is checked as of
    the moment it was made, so an expired certificate still says who signed."""
    ca = make_signing_ca(tmp_path / "ca", signer_valid_for=timedelta(seconds=10))
    signer = load_signer(ca.key, ca.certificate, PASSPHRASE)
    blank = io.BytesIO()
    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.write(blank)
    signed = signer.sign(blank.getvalue())
    expiry = x509.load_pem_x509_certificate(ca.certificate.read_bytes()).not_valid_after_utc
    time.sleep(max(0.0, (expiry - datetime.now(UTC)).total_seconds()) + 1.1)
    (check,) = check_signatures(signed, ca.certificate)
    assert check.intact and check.trusted, check.summary
    with pytest.raises(SigningError, match="expired on"):  # but it signs nothing new
        load_signer(ca.key, ca.certificate, PASSPHRASE)

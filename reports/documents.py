"""The record of rendered documents: what annex wrote, to whom it went, and whether a PDF is one
of them, unchanged.

Every file ``generate_report`` writes is recorded in ``audit.documents`` (its SHA-256, the
document and version of ``audit.report_versions``, the request, the evidence digest, its
signature, how long it is kept) and every export for someone (``annex report ... --for
NAME``) in ``audit.document_handovers``. ``verify`` answers an auditor holding a PDF: is it one
annex rendered, which document and version, rendered when, handed to whom, unchanged since,
and is its signature valid against the configured certificate.

How a file is recognised: by the SHA-256 of its bytes; for a signed file also by the SHA-256
of each revision a signature covers (a viewer or a countersignature may append an incremental
update: the signed revision is still annex's, the file as a whole is not). A file that matches
neither but carries the PDF /ID annex gives a document's rendering (the first 16 bytes of
SHA-256 of its evidence digest) is one annex rendered and then changed.

Sources: reference eu-ai-act.md §5 (documentation kept ten years, versioned, immutable).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from reports.errors import ReportError
from reports.signing import SignatureCheck, SignerIdentity, check_signatures, signed_revisions

if TYPE_CHECKING:
    from warehouse import Warehouse

DEFAULT_RETENTION_YEARS = 10
PDF_ID = re.compile(rb"/ID\s*\[\s*<([0-9A-Fa-f]{32})>")


class DocumentChangedError(ReportError):
    """A PDF annex rendered whose bytes changed since (exit code of a report error)."""


class UnknownDocumentError(ReportError):
    """A PDF annex has no record of rendering (exit code of a report error)."""


class SignatureInvalidError(ReportError):
    """An unchanged PDF whose signature does not validate against the configured certificate."""


@dataclass(frozen=True)
class RenderedDocument:
    """One row of ``audit.documents``."""

    file_sha256: str
    document: str
    version: int
    report: str
    parameters: dict[str, Any]
    file_name: str
    evidence_digest: str
    rendered_at: datetime
    keep_until: datetime
    signer: SignerIdentity | None = None


@dataclass(frozen=True)
class Handover:
    recipient: str
    handed_at: datetime
    command: str


def keep_until(rendered_at: datetime, retention_years: int) -> datetime:
    """``rendered_at`` plus ``retention_years`` calendar years (29 February: 28 February)."""
    year = rendered_at.year + retention_years
    try:
        return rendered_at.replace(year=year)
    except ValueError:
        return rendered_at.replace(year=year, day=28)


def record_document(con: duckdb.DuckDBPyConnection, document: RenderedDocument) -> bool:
    """Record ``document`` once; False when those bytes were recorded already (the first
    rendering's row stays as it is)."""
    signer = document.signer
    inserted = con.execute(
        "INSERT INTO audit.documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT DO NOTHING RETURNING file_sha256",
        [
            document.file_sha256,
            document.document,
            document.version,
            document.report,
            json.dumps(document.parameters, sort_keys=True),
            document.file_name,
            document.evidence_digest,
            document.rendered_at,
            signer is not None,
            signer.level if signer else None,
            signer.subject if signer else None,
            signer.fingerprint if signer else None,
            document.keep_until,
        ],
    ).fetchall()
    return bool(inserted)


def record_handover(
    wh: Warehouse, file_sha256: str, recipient: str, *, handed_at: datetime, command: str
) -> Handover:
    """Record that the file of ``file_sha256`` was handed to ``recipient``."""
    if not recipient.strip():
        raise ReportError("--for needs a name", hint="give whom the report is for: --for NAME")
    with wh.writer() as con:
        con.execute(
            "INSERT INTO audit.document_handovers VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [file_sha256, recipient.strip(), handed_at, command],
        )
    return Handover(recipient.strip(), handed_at, command)


@dataclass(frozen=True)
class Verification:
    """What ``annex report verify`` found for one file."""

    path: Path
    file_sha256: str
    status: str
    """``unchanged``: the bytes annex wrote; ``changed``: a file annex rendered, modified since
    (``appended`` when only an incremental update follows annex's signed revision);
    ``unknown``: annex has no record of it."""
    document: RenderedDocument | None
    handovers: tuple[Handover, ...] = ()
    signatures: tuple[SignatureCheck, ...] = ()
    candidates: tuple[RenderedDocument, ...] = field(default=())
    """For a changed file recognised by its /ID: the renderings it may have been."""

    def lines(self) -> list[str]:
        """The answer, one fact a line."""
        out = [f"{self.path}: sha256:{self.file_sha256}"]
        doc = self.document
        if self.status == "unknown":
            out.append("  not a document annex rendered: no record of these bytes")
            return out
        if doc is not None:
            version = f"version {doc.version} of {doc.document}"
            out.append(f"  rendered by annex: {version} (report {doc.report})")
            out.append(f"  parameters: {json.dumps(doc.parameters, sort_keys=True)}")
            out.append(f"  rendered at {doc.rendered_at:%Y-%m-%d %H:%M:%S} UTC as {doc.file_name}")
            out.append(f"  evidence digest sha256:{doc.evidence_digest}")
            out.append(f"  kept until {doc.keep_until:%Y-%m-%d}")
        for candidate in self.candidates:
            out.append(
                f"  annex rendered a file with this PDF /ID: version {candidate.version} of "
                f"{candidate.document}, rendered at {candidate.rendered_at:%Y-%m-%d %H:%M:%S} UTC"
                f" (sha256:{candidate.file_sha256})"
            )
        if self.status == "unchanged":
            out.append("  unchanged since rendering: every byte is as annex wrote it")
        elif self.status == "appended":
            out.append(
                "  changed: bytes were appended after annex's signed revision (an incremental "
                "update); the signed revision itself is unchanged"
            )
        else:
            out.append("  changed: its bytes differ from every file annex rendered")
        if doc is not None:
            if self.handovers:
                for h in self.handovers:
                    out.append(
                        f"  handed to {h.recipient} at {h.handed_at:%Y-%m-%d %H:%M:%S} UTC "
                        f"({h.command})"
                    )
            else:
                out.append("  handed to no one (no `annex report ... --for NAME`)")
        if not self.signatures:
            out.append("  not signed")
        for s in self.signatures:
            trust = {
                True: "by the configured certificate",
                False: "NOT by the configured certificate",
                None: "no certificate configured to check it against ([reports] "
                "signing_certificate)",
            }[s.trusted]
            state = "valid" if s.intact else "INVALID"
            out.append(
                f"  signature {state}, {trust}: {s.signer_subject} "
                f"(certificate sha256:{s.signer_fingerprint}; {s.summary})"
            )
        return out


def verify(wh: Warehouse, path: Path, certificate_file: Path | None = None) -> Verification:
    """Whether ``path`` is a PDF annex rendered, which one, and whether it is unchanged.

    Reads the published copy of the warehouse, then the live file when the published copy does
    not know the file (a report rendered since the last publish)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReportError(f"cannot read {path}: {exc.strerror}", hint="give a PDF file") from None
    sha256 = hashlib.sha256(data).hexdigest()
    revisions = [r for r in signed_revisions(data) if r != sha256]
    match = PDF_ID.search(data[-4096:]) or PDF_ID.search(data)
    pdf_id = match.group(1).decode().lower() if match else None
    found = _lookup(wh, sha256, revisions, pdf_id)
    signatures = tuple(check_signatures(data, certificate_file)) if b"/ByteRange" in data else ()
    exact, appended, by_id, handovers = found
    if exact is not None:
        return Verification(path, sha256, "unchanged", exact, handovers, signatures)
    if appended is not None:
        return Verification(path, sha256, "appended", appended, handovers, signatures)
    if by_id:
        return Verification(path, sha256, "changed", None, (), signatures, tuple(by_id))
    return Verification(path, sha256, "unknown", None, (), signatures)


def raise_for(verification: Verification) -> None:
    """The error (and exit code) ``annex report verify`` ends with when the file is not one
    annex rendered, unchanged and, when signed, validly signed by the configured certificate."""
    name = verification.path.name
    if verification.status == "unknown":
        raise UnknownDocumentError(
            f"{name} is not a document annex rendered (no record of its SHA-256)",
            hint="check that this is the warehouse the report was rendered from ([warehouse] "
            "path); a file annex rendered is listed in audit.documents",
        )
    if verification.status in ("changed", "appended"):
        raise DocumentChangedError(
            f"{name} was changed since annex rendered it",
            hint="ask for the kept copy (audit.report_versions.stored_path) or render it again",
        )
    bad = [s for s in verification.signatures if not s.intact or s.trusted is False]
    if bad:
        raise SignatureInvalidError(
            f"{name} is unchanged but its signature does not validate: {bad[0].summary}",
            hint="check [reports] signing_certificate is the certificate it was signed with",
        )


def _lookup(
    wh: Warehouse, sha256: str, revisions: list[str], pdf_id: str | None
) -> tuple[
    RenderedDocument | None, RenderedDocument | None, list[RenderedDocument], tuple[Handover, ...]
]:
    from annex.errors import WarehouseError

    try:
        with wh.reader() as con:
            found = _find(con, sha256, revisions, pdf_id)
    except WarehouseError:
        found = None
    if (found is None or not any(found[:3])) and wh.path.exists():
        with wh.writer() as con:  # rendered since the last publish: the live file knows it
            found = _find(con, sha256, revisions, pdf_id)
    return found or (None, None, [], ())


def _find(
    con: duckdb.DuckDBPyConnection, sha256: str, revisions: list[str], pdf_id: str | None
) -> tuple[
    RenderedDocument | None, RenderedDocument | None, list[RenderedDocument], tuple[Handover, ...]
]:
    if not _has_documents(con):
        return None, None, [], ()
    exact = _documents(con, "file_sha256 = ?", [sha256])
    appended = _documents(con, "list_contains(?, file_sha256)", [revisions]) if revisions else []
    by_id = (
        _documents(con, "substr(sha256(evidence_digest), 1, 32) = ?", [pdf_id]) if pdf_id else []
    )
    doc = (exact or appended or [None])[0]
    handovers: tuple[Handover, ...] = ()
    if doc is not None:
        handovers = tuple(
            Handover(r, at, c)
            for r, at, c in con.execute(
                "SELECT recipient, handed_at, command FROM audit.document_handovers "
                "WHERE file_sha256 = ? ORDER BY handed_at, recipient",
                [doc.file_sha256],
            ).fetchall()
        )
    return (exact or [None])[0], (appended or [None])[0], by_id, handovers


def _has_documents(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(
        con.execute(
            "SELECT count(*) FROM duckdb_tables() "
            "WHERE schema_name = 'audit' AND table_name = 'documents'"
        ).fetchone()[0]
    )


def _documents(
    con: duckdb.DuckDBPyConnection, where: str, parameters: list[Any]
) -> list[RenderedDocument]:
    rows = con.execute(
        "SELECT file_sha256, document, version, report, parameters, file_name, evidence_digest, "
        "rendered_at, keep_until, signed, signature_level, signer_subject, signer_fingerprint "
        f"FROM audit.documents WHERE {where} ORDER BY rendered_at, file_sha256",
        parameters,
    ).fetchall()
    return [
        RenderedDocument(
            sha,
            document,
            version,
            report,
            json.loads(params),
            file_name,
            evidence,
            rendered,
            kept,
            SignerIdentity(subject, fingerprint, level) if signed else None,
        )
        for (
            sha,
            document,
            version,
            report,
            params,
            file_name,
            evidence,
            rendered,
            kept,
            signed,
            level,
            subject,
            fingerprint,
        ) in rows
    ]

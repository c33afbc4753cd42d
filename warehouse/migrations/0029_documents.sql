-- 0029 records an auditor trusts (issue 39 item 4): every rendered document file, with the
-- SHA-256 of its bytes, the evidence digest its manifest names, whether and by whom it was
-- signed (PAdES), how long it is kept, and to whom it was handed. The document and version
-- are those of audit.report_versions (the figures, stored path and content digest are there,
-- not repeated here); a version rendered again into other bytes (a re-signing, a kept file
-- that was gone) is a second row of the same version. Rows are only ever added; nothing may
-- delete a row before its keep_until (reports/documents.py; reference eu-ai-act.md §5:
-- documentation kept ten years).
-- Never edit this file once applied anywhere: add a new migration instead.

CREATE TABLE audit.documents (
    file_sha256 VARCHAR PRIMARY KEY,
    document VARCHAR NOT NULL,
    version INTEGER NOT NULL,
    report VARCHAR NOT NULL,
    parameters JSON NOT NULL,
    file_name VARCHAR NOT NULL,
    evidence_digest VARCHAR NOT NULL,
    rendered_at TIMESTAMP NOT NULL,
    signed BOOLEAN NOT NULL,
    signature_level VARCHAR,
    signer_subject VARCHAR,
    signer_fingerprint VARCHAR,
    keep_until TIMESTAMP NOT NULL
);

COMMENT ON TABLE audit.documents IS
    'Every rendered document file annex wrote (one row per distinct file: a version rendered again into the same bytes adds nothing): which document and version of audit.report_versions it is, the SHA-256 of its bytes, the evidence digest it embeds, its signature and how long it is kept. `annex report verify FILE` looks a PDF up here. Added to, never changed; never deleted before keep_until.';
COMMENT ON COLUMN audit.documents.file_sha256 IS 'SHA-256 of the file''s bytes as annex wrote it; for a signed file, of its signed revision (the bytes the PAdES signature''s ByteRange ends with), so later incremental updates can be told apart from changes.';
COMMENT ON COLUMN audit.documents.document IS 'The document: report name / request, as audit.report_versions.document (e.g. fleet/2026-11, model_documentation/annex-lm-400b-ai_office).';
COMMENT ON COLUMN audit.documents.version IS 'Its version number in audit.report_versions (the figures and fields behind it are there).';
COMMENT ON COLUMN audit.documents.report IS 'The report (annex report NAME): fleet, attestation, training_compute, ...';
COMMENT ON COLUMN audit.documents.parameters IS 'The request the document answers, as its manifest states it (period, from, to; model and edition of a per-model report), JSON.';
COMMENT ON COLUMN audit.documents.file_name IS 'The file name annex wrote it under in the output folder (e.g. fleet-2026-11.pdf); the kept copy is audit.report_versions.stored_path.';
COMMENT ON COLUMN audit.documents.evidence_digest IS 'The evidence digest of its embedded manifest (sha256 over every evidence table''s hash): what the pages and the attachments rest on.';
COMMENT ON COLUMN audit.documents.rendered_at IS 'When annex rendered (and signed) this file (UTC).';
COMMENT ON COLUMN audit.documents.signed IS 'True when annex signed the file with the key of [reports] signing_key (PAdES, an incremental update that keeps PDF/A-3b).';
COMMENT ON COLUMN audit.documents.signature_level IS 'PAdES baseline level of the signature: PAdES-B-B, or PAdES-B-T with a timestamp from [reports] timestamp_url; NULL when unsigned.';
COMMENT ON COLUMN audit.documents.signer_subject IS 'Subject of the signing certificate (RFC 4514), NULL when unsigned.';
COMMENT ON COLUMN audit.documents.signer_fingerprint IS 'SHA-256 of the signing certificate''s DER encoding (hex), NULL when unsigned.';
COMMENT ON COLUMN audit.documents.keep_until IS 'Kept at least until then (UTC): rendered_at plus [reports] retention_years (default 10). Nothing deletes the row, nor the kept file, before.';

CREATE TABLE audit.document_handovers (
    file_sha256 VARCHAR NOT NULL,
    recipient VARCHAR NOT NULL,
    handed_at TIMESTAMP NOT NULL,
    command VARCHAR NOT NULL,
    PRIMARY KEY (file_sha256, recipient, handed_at)
);

COMMENT ON TABLE audit.document_handovers IS
    'To whom each rendered document file was handed: one row each time `annex report ... --for NAME` exported it. Added to, never changed; kept as long as its document (audit.documents.keep_until).';
COMMENT ON COLUMN audit.document_handovers.file_sha256 IS 'The file handed over (audit.documents.file_sha256).';
COMMENT ON COLUMN audit.document_handovers.recipient IS 'Whom it was handed to, as given to --for (a person, an authority, a customer).';
COMMENT ON COLUMN audit.document_handovers.handed_at IS 'When it was exported for them (UTC).';
COMMENT ON COLUMN audit.document_handovers.command IS 'The annex command that exported it, as typed options (no secrets: annex takes none on its command line).';

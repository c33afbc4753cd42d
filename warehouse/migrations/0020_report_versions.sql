-- 0020 document versions (issue 40, build 8): every rendered document is kept immutably,
-- content-addressed under the reports folder, and recorded here with the figures and fields
-- it showed, so that re-rendering unchanged evidence gives the same version and a new
-- version can say what changed since the previous one (reports/versions.py; reference
-- eu-ai-act.md §5: immutable versioned snapshots kept ten years, the summary's update
-- history). Rows are only ever added.
-- Never edit this file once applied anywhere: add a new migration instead.

CREATE TABLE audit.report_versions (
    document VARCHAR NOT NULL,
    version INTEGER NOT NULL,
    content_digest VARCHAR NOT NULL,
    pdf_sha256 VARCHAR NOT NULL,
    stored_path VARCHAR NOT NULL,
    data_cutoff TIMESTAMP,
    rendered_at TIMESTAMP NOT NULL,
    fields JSON NOT NULL,
    PRIMARY KEY (document, version)
);

COMMENT ON TABLE audit.report_versions IS
    'Every version of every rendered document (a report for one request: report/model-edition or report/period), oldest first: its number, the digest of the content it shows, the PDF kept under the reports folder and the figures and fields behind "what changed since version N". Added to, never changed.';
COMMENT ON COLUMN audit.report_versions.document IS 'The document: report name / request (e.g. training_compute/annex-lm-400b, model_documentation/annex-lm-400b-ai_office).';
COMMENT ON COLUMN audit.report_versions.version IS 'Its version number, from 1; a new one only when the content changed.';
COMMENT ON COLUMN audit.report_versions.content_digest IS 'SHA-256 of fields: the same digest is the same version.';
COMMENT ON COLUMN audit.report_versions.pdf_sha256 IS 'SHA-256 of the PDF kept for this version (the hash earlier versions are listed with).';
COMMENT ON COLUMN audit.report_versions.stored_path IS 'Where that PDF is kept, relative to the reports folder: versions/<report>/<request>/<sha256>.pdf, read-only.';
COMMENT ON COLUMN audit.report_versions.data_cutoff IS 'The data cut-off the version shows (its date of last update); NULL without a successful collection.';
COMMENT ON COLUMN audit.report_versions.rendered_at IS 'When annex rendered it (UTC).';
COMMENT ON COLUMN audit.report_versions.fields IS 'The figures and fields it showed, as text by "<query> / <key> / <column>" (a long table by its row count and hash): what the next version is compared with.';

"""Document versions: every rendered document is kept, numbered, and says what changed.

A *document* is one report for one request (``training_compute/annex-lm-400b``,
``model_documentation/annex-lm-400b-ai_office``). Its *content* is the evidence its pages
show: every evidence query's result except the list of collections (provenance, which grows
with every collection even when no figure changes) and the model's metadata file. Rendering
the same content again gives the same version (the stored PDF, byte for byte); new content
gives the next version number. Every version is kept immutably, content-addressed under the
reports folder (``versions/<report>/<slug>/<sha256>.pdf``), and recorded in
``audit.report_versions`` with its figures, so a new version begins with a page "what changed
since version N" that lists each figure and field whose value changed.

Sources: reference eu-ai-act.md §5 (immutable versioned snapshots, kept ten years; summary
update history) and §3 (the public summary's header lists its earlier versions).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from reports.definition import Evidence
from reports.errors import ReportError
from reports.evidence import COLLECTIONS

if TYPE_CHECKING:
    from warehouse import Warehouse

VERSIONS_FOLDER = "versions"
MAX_FIELD_ROWS = 50
"""A query result of up to this many rows is compared row by row; a longer one by its row
count and hash (its detail is in the attachment)."""


@dataclass(frozen=True)
class DocumentVersion:
    """One rendered version of a document, as ``audit.report_versions`` records it."""

    document: str
    version: int
    content_digest: str
    pdf_sha256: str
    stored_path: str
    """Relative to the reports folder."""
    data_cutoff: datetime | None
    rendered_at: datetime
    fields: Mapping[str, str]

    @property
    def updated(self) -> str:
        """The date of the last update this version carries: its data cut-off."""
        moment = self.data_cutoff or self.rendered_at
        return moment.strftime("%Y-%m-%d")


@dataclass(frozen=True)
class Change:
    """A field whose value differs between two versions."""

    field: str
    before: str | None
    after: str | None


def document_name(report: str, slug: str) -> str:
    return f"{report}/{slug}"


def content_fields(evidence: Evidence, edition_queries: Sequence[str] | None = None) -> dict:
    """The document's figures and fields, as text, keyed ``<query> / <key> / <column>``.

    A short result is compared row by row (a row is keyed by its first column); a long one by
    its row count and hash. The collections are provenance, not content; the model's
    metadata file counts by its hash."""
    fields: dict[str, str] = {}
    for name, result in sorted(evidence.results.items()):
        if name == COLLECTIONS.name or (edition_queries and name not in edition_queries):
            continue
        records = result.records()
        if len(records) > MAX_FIELD_ROWS:
            fields[f"{name} / rows"] = str(len(records))
            fields[f"{name} / sha256"] = result.sha256
            continue
        for index, row in enumerate(records):
            values = list(row.items())
            key = _text(values[0][1]) if values else str(index)
            for column, value in values[1:]:
                fields[f"{name} / {key} / {column}"] = _text(value)
        fields[f"{name} / rows"] = str(len(records))
    if evidence.model is not None:
        metadata = evidence.model.path.read_bytes()
        fields["model metadata file / sha256"] = hashlib.sha256(metadata).hexdigest()
    return fields


def content_digest(fields: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(dict(fields), sort_keys=True).encode()).hexdigest()


def changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[Change]:
    """Every field added, removed or changed, in field order."""
    keys = sorted(set(before) | set(after))
    return [Change(k, before.get(k), after.get(k)) for k in keys if before.get(k) != after.get(k)]


def history(con: duckdb.DuckDBPyConnection, document: str) -> list[DocumentVersion]:
    """The document's versions, oldest first."""
    rows = con.execute(
        "SELECT document, version, content_digest, pdf_sha256, stored_path, data_cutoff, "
        "rendered_at, fields FROM audit.report_versions WHERE document = ? ORDER BY version",
        [document],
    ).fetchall()
    return [
        DocumentVersion(d, v, c, p, s, cut, at, json.loads(f)) for d, v, c, p, s, cut, at, f in rows
    ]


def store(reports_dir: Path, document: str, pdf: bytes) -> tuple[str, str]:
    """Keep ``pdf`` content-addressed under ``reports_dir``; returns (sha256, relative path).
    Written once: an existing file of that hash is left as it is."""
    digest = hashlib.sha256(pdf).hexdigest()
    relative = Path(VERSIONS_FOLDER, *document.split("/"), f"{digest}.pdf")
    path = reports_dir / relative
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        partial.write_bytes(pdf)
        os.chmod(partial, 0o444)
        os.replace(partial, path)
    return digest, relative.as_posix()


def record(con: duckdb.DuckDBPyConnection, version: DocumentVersion) -> None:
    con.execute(
        "INSERT INTO audit.report_versions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            version.document,
            version.version,
            version.content_digest,
            version.pdf_sha256,
            version.stored_path,
            version.data_cutoff,
            version.rendered_at,
            json.dumps(dict(version.fields), sort_keys=True),
        ],
    )


def version_context(
    number: int,
    updated: str,
    earlier: Sequence[DocumentVersion],
    changed: Sequence[Change],
    shown: Sequence[str] | None = None,
) -> dict[str, Any]:
    """What the template shows: this version, its date, the earlier ones and what changed.
    ``shown``: the evidence queries the document may show (a public document's public ones);
    changes of the others are counted, not listed."""
    previous = earlier[-1] if earlier else None
    listed = [c for c in changed if shown is None or c.field.split(" / ")[0] in shown]
    return {
        "number": number,
        "updated": updated,
        "earlier": [
            {"number": v.version, "updated": v.updated, "sha256": v.pdf_sha256} for v in earlier
        ],
        "previous": previous.version if previous else None,
        "changes": [
            {"field": _label(c.field), "before": c.before or "(none)", "after": c.after or "(none)"}
            for c in listed
        ],
        "unlisted_changes": len(changed) - len(listed),
    }


_UNITS = (
    ("_gpu_hours", " GPU-hours"),
    ("_flop", " (FLOP)"),
    ("_mwh", " (MWh)"),
    ("_seconds", " (s)"),
    ("_joules", " (J)"),
    ("_share", " share"),
    ("_at", " (UTC)"),
)


def _label(field: str) -> str:
    """A field's key for a reader: words, not column names (``node_pools / annex-demo /
    allocated_gpu_hours`` -> ``node pools · annex-demo · allocated GPU-hours``)."""
    parts = field.split(" / ")
    column = parts[-1]
    for suffix, words in _UNITS:
        if column.endswith(suffix):
            column = column.removesuffix(suffix) + words
            break
    parts[0], parts[-1] = parts[0].replace("_", " "), column.replace("_", " ")
    return " · ".join(parts)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value)
    return str(value)


def render_versioned(
    wh: Warehouse,
    reports_dir: Path,
    document: str,
    evidence: Evidence,
    render: Callable[[dict[str, Any]], bytes],
    *,
    rendered_at: datetime,
    shown: Sequence[str] | None = None,
) -> tuple[bytes, DocumentVersion]:
    """The document's PDF for ``evidence``: the latest version's own bytes when its content is
    unchanged, else ``render(version context)`` kept and recorded as the next version.

    The history is read, and the new version recorded, under the warehouse's writer lock;
    the rendering in between holds no lock. Two renders of one document racing to record the
    same version number: the second is an error that says to rerun."""
    fields = content_fields(evidence)
    digest = content_digest(fields)
    with wh.writer() as con:
        earlier = history(con, document)
    latest = earlier[-1] if earlier else None
    if latest is not None and latest.content_digest == digest:
        stored = reports_dir / latest.stored_path
        if stored.exists():
            return stored.read_bytes(), latest
        # its file is gone (another reports folder): the same version, rendered again
        earlier, latest = earlier[:-1], (earlier[-2] if len(earlier) > 1 else None)
        pdf = render(
            version_context(
                len(earlier) + 1,
                (evidence.cutoff or rendered_at).strftime("%Y-%m-%d"),
                earlier,
                changes(latest.fields, fields) if latest else [],
                shown,
            )
        )
        store(reports_dir, document, pdf)
        return pdf, history_entry(earlier, document, digest, pdf, evidence, rendered_at, fields)
    number = latest.version + 1 if latest else 1
    updated = (evidence.cutoff or rendered_at).strftime("%Y-%m-%d")
    changed = changes(latest.fields, fields) if latest else []
    pdf = render(version_context(number, updated, earlier, changed, shown))
    sha256, stored_path = store(reports_dir, document, pdf)
    version = DocumentVersion(
        document, number, digest, sha256, stored_path, evidence.cutoff, rendered_at, fields
    )
    try:
        with wh.writer() as con:
            record(con, version)
    except duckdb.ConstraintException:
        raise ReportError(
            f"another rendering of {document} recorded version {number} first",
            hint="render it again: it becomes the next version, or the same one if unchanged",
        ) from None
    return pdf, version


def history_entry(
    earlier: Sequence[DocumentVersion],
    document: str,
    digest: str,
    pdf: bytes,
    evidence: Evidence,
    rendered_at: datetime,
    fields: Mapping[str, str],
) -> DocumentVersion:
    """The version after ``earlier`` for ``pdf`` (not recorded: the caller decides)."""
    sha256 = hashlib.sha256(pdf).hexdigest()
    stored = Path(VERSIONS_FOLDER, *document.split("/"), f"{sha256}.pdf").as_posix()
    return DocumentVersion(
        document, len(earlier) + 1, digest, sha256, stored, evidence.cutoff, rendered_at, fields
    )


def keep_companion(reports_dir: Path, version: DocumentVersion, suffix: str, data: bytes) -> bytes:
    """A file that belongs with a version's PDF (its evidence bundle), kept beside it once:
    the bytes already kept when there are any (the ones the version's pages name), else
    ``data``, which is kept now."""
    path = reports_dir / (version.stored_path.removesuffix(".pdf") + suffix)
    if path.exists():
        return path.read_bytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    os.chmod(partial, 0o444)
    os.replace(partial, path)
    return data

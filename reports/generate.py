"""Build one report: read the evidence, render the HTML, lay out the PDF, write it.

Reads only the published read-only copy of the warehouse (``Warehouse.reader()``), so a
report never blocks a collection and always sees one consistent state. The PDF is written
to a temporary name and renamed into place: a failed render leaves no half-written file.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from annex import __version__
from annex.model_registry import load_registry
from reports.catalog import report_definition
from reports.definition import (
    Evidence,
    ReportDefinition,
    ReportRequest,
    json_value,
    period_parameters,
)
from reports.documents import DEFAULT_RETENTION_YEARS, RenderedDocument, keep_until, record_document
from reports.errors import ReportError
from reports.evidence import (
    BUNDLE_SUFFIX,
    COLLECTIONS,
    build_manifest,
    bundle_manifest,
    data_cutoff,
    evidence_bundle,
    evidence_digest,
    manifest_bytes,
    prepare_connection,
    run_query,
)
from reports.period import Period
from reports.render import EmbeddedFile, FetchRecord, RenderLimits, render_pdf
from reports.signing import DocumentSigner, signer_of
from reports.templating import render_html
from reports.versions import DocumentVersion, document_name, keep_companion, render_versioned
from warehouse import Warehouse

MANIFEST_NAME = "manifest.json"
MODEL_METADATA_NAME = "model-metadata.yaml"
ALL_TIME = {"start_ts": datetime(1970, 1, 1), "end_ts": datetime(9999, 12, 31)}
"""The collection window of a report that covers no period (a per-model report): every
collection of its sources, so its figures rest on all the evidence there is."""


@dataclass(frozen=True)
class GeneratedReport:
    """A written report: where it is, what it rests on, and what the renderer asked for."""

    name: str
    path: Path
    manifest: dict[str, Any]
    evidence: Evidence
    fetches: tuple[FetchRecord, ...]
    evidence_bundle: Path | None = None
    """The non-public evidence bundle written beside a public report (or on request)."""
    evidence_bundle_sha256: str | None = None
    version: DocumentVersion | None = None
    """The document version this PDF is (the same one when the content is unchanged)."""
    document: RenderedDocument | None = None
    """Its row of audit.documents (its SHA-256, signature, retention)."""

    @property
    def refused(self) -> tuple[FetchRecord, ...]:
        return tuple(f for f in self.fetches if not f.served)


def read_evidence(
    wh: Warehouse,
    definition: ReportDefinition,
    request: ReportRequest,
    *,
    today: date,
    models_dir: Path | None = None,
) -> Evidence:
    """Run the report's queries (and the collections it rests on) on the published copy;
    ``today`` bounds the days a running period is judged on. A per-model report also reads
    the model's metadata file from ``models_dir`` (the model registry)."""
    if definition.needs_period and request.period is None:
        raise ReportError(
            f"report {definition.name!r} covers a period",
            hint="give --period YYYY-MM or --from/--to",
        )
    if definition.needs_model and not request.model:
        raise ReportError(
            f"report {definition.name!r} describes one model",
            hint="give --model NAME (a model_name of marts.lineage_models)",
        )
    if definition.editions and request.edition not in definition.editions:
        raise ReportError(
            f"report {definition.name!r} has no edition {request.edition!r}",
            hint="give --edition " + " or ".join(definition.editions),
        )
    if not definition.editions and request.edition is not None:
        raise ReportError(f"report {definition.name!r} has one edition", hint="leave out --edition")
    sources = list(definition.collection_sources)
    parameters: dict[str, Any] = {"sources": sources}
    if request.period is not None:
        parameters |= period_parameters(request.period, today)
    else:
        parameters |= ALL_TIME
    model = None
    if definition.needs_model and models_dir is not None:
        registry = load_registry(models_dir)
        model = next((m for m in registry.models if m.name == request.model), None)
    if request.model is not None:
        parameters["model"] = request.model
        # the registry's facts a query may need: an SME provider lists fewer top domains
        # (template 2.3); not stated reads as not an SME, the general rule
        parameters["provider_sme"] = bool(model is not None and model.sme)
    with wh.reader() as con:
        prepare_connection(con)
        cutoff = data_cutoff(con, sources, parameters["end_ts"])
        results = {
            query.name: run_query(con, query, parameters)
            for query in (COLLECTIONS, *definition.queries_for(request.edition))
        }
    return Evidence(results, request, cutoff, model)


def generate_report(
    wh: Warehouse,
    name: str,
    request: ReportRequest,
    output_dir: Path,
    *,
    generated_at: datetime | None = None,
    limits: RenderLimits | None = None,
    models_dir: Path | None = None,
    evidence_dir: Path | None = None,
    versions_dir: Path | None = None,
    signer: DocumentSigner | None = None,
    retention_years: int = DEFAULT_RETENTION_YEARS,
) -> GeneratedReport:
    """Render report ``name`` for ``request`` into ``output_dir``; return where and what.

    ``generated_at`` (default: now, UTC) goes into the manifest; the pages carry the data
    cut-off, so the same warehouse and request give the same pages (for a period still
    running, its date also bounds the days judged). ``models_dir``: the model registry a
    per-model report reads its human-authored fields from (``settings.models.dir``).
    ``evidence_dir``: where the non-public evidence bundle (manifest, every query's CSV, the
    model metadata file) is written; a public report always writes one (default: the
    ``evidence`` folder of ``output_dir``) and attaches only its public tables.
    ``versions_dir``: where every version is kept (default ``output_dir``): the same content
    is the same version, byte for byte (reports/versions.py); new content the next version,
    which begins with what changed since the one before.
    ``signer``: sign each newly rendered version (PAdES, an incremental update: the kept
    version is the signed file). Every file written is recorded in ``audit.documents``, kept
    ``retention_years`` (reports/documents.py).
    """
    definition = report_definition(name)
    generated_at = generated_at or datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    evidence = read_evidence(
        wh, definition, request, today=generated_at.date(), models_dir=models_dir
    )
    manifest = build_manifest(
        definition,
        evidence,
        generated_at=generated_at,
        renderer=f"WeasyPrint {version('weasyprint')}",
    )
    digest = evidence_digest(evidence)
    dated = _document_date(evidence)
    context = definition.build(evidence)
    attachments = [
        EmbeddedFile(result.file_name, result.csv, result.query.description)
        for result in evidence.results.values()
    ]
    if evidence.model is not None:
        metadata = evidence.model.path.read_bytes()
        attached = (
            not definition.metadata_file_editions
            or request.edition in definition.metadata_file_editions
        )
        manifest["model_metadata"] = {
            "file": MODEL_METADATA_NAME if attached else None,
            "source": evidence.model.file_name,  # relative to [models] dir: no machine path
            "sha256": hashlib.sha256(metadata).hexdigest(),
        }
        if attached:
            attachments.append(
                EmbeddedFile(
                    MODEL_METADATA_NAME,
                    metadata,
                    "The model's metadata file (human-authored fields).",
                )
            )
    bundle_path = bundle = bundle_sha256 = None
    if definition.public or evidence_dir is not None:  # the evidence for auditors, apart
        bundle = evidence_bundle(
            [(a.name, a.data) for a in attachments]
            + [(MANIFEST_NAME, manifest_bytes(bundle_manifest(manifest)))]
        )
        bundle_sha256 = hashlib.sha256(bundle).hexdigest()
        bundle_path = (evidence_dir or output_dir / "evidence") / (
            f"{definition.name}-{_slug(request)}{BUNDLE_SUFFIX}"
        )
    if definition.public:  # the PDF carries only what the public may read
        public = {q.name for q in definition.public_queries(request.edition)}
        attachments = [
            EmbeddedFile(r.file_name, r.csv, r.query.description)
            for r in evidence.results.values()
            if r.query.name in public
        ]
    else:
        attachments.append(
            EmbeddedFile(MANIFEST_NAME, manifest_bytes(manifest), "What this report read and how.")
        )
    context["report"] = _report_context(
        definition, evidence, digest, dated, bundle_sha256
    ) | context.get("report", {})
    fetches: list[FetchRecord] = []

    def render(version: dict[str, Any]) -> bytes:
        context["report"]["version"] = version
        rendered = render_pdf(
            render_html(definition.template, context),
            attachments,
            identifier=hashlib.sha256(digest.encode()).digest()[:16],
            dated=dated,
            limits=limits,
        )
        fetches.extend(rendered.fetches)
        return signer.sign(rendered.pdf) if signer is not None else rendered.pdf

    versions_dir = versions_dir or output_dir
    document = document_name(definition.name, _slug(request))
    shown = (
        [q.name for q in definition.public_queries(request.edition)] if definition.public else None
    )
    pdf, kept = render_versioned(
        wh, versions_dir, document, evidence, render, rendered_at=generated_at, shown=shown
    )
    if bundle is not None:  # the bundle the kept version names, kept beside it
        bundle = keep_companion(versions_dir, kept, BUNDLE_SUFFIX, bundle)
        bundle_sha256 = hashlib.sha256(bundle).hexdigest()
    path = output_dir / f"{definition.name}-{_slug(request)}.pdf"
    if bundle_path is not None and bundle is not None:
        _write_atomically(bundle_path, bundle)
    _write_atomically(path, pdf)
    document = _record_document(
        wh, definition.name, manifest, digest, kept, path, pdf, retention_years
    )
    return GeneratedReport(
        definition.name,
        path,
        manifest,
        evidence,
        tuple(fetches),
        bundle_path,
        bundle_sha256,
        kept,
        document,
    )


def _record_document(
    wh: Warehouse,
    report: str,
    manifest: dict[str, Any],
    digest: str,
    kept: DocumentVersion,
    path: Path,
    pdf: bytes,
    retention_years: int,
) -> RenderedDocument:
    """Record the written file in ``audit.documents`` (once per distinct file); its signer is
    read from the file (a kept version may have been signed when it was first rendered)."""
    sha256 = hashlib.sha256(pdf).hexdigest()
    document = RenderedDocument(
        file_sha256=sha256,
        document=kept.document,
        version=kept.version,
        report=report,
        parameters=manifest.get("parameters") or {},
        file_name=path.name,
        evidence_digest=digest,
        rendered_at=kept.rendered_at,
        keep_until=keep_until(kept.rendered_at, retention_years),
        signer=signer_of(pdf),
    )
    with wh.writer() as con:
        record_document(con, document)
    return document


def generate_reports(
    wh: Warehouse,
    name: str,
    period: Period,
    output_dir: Path,
    *,
    models_dir: Path,
    models: Sequence[str] | None = None,
    evidence_dir: Path | None = None,
    versions_dir: Path | None = None,
    signer: DocumentSigner | None = None,
    retention_years: int = DEFAULT_RETENTION_YEARS,
) -> list[GeneratedReport]:
    """Every rendering of report ``name`` a scheduled run makes (the monthly Dagster assets,
    ``annex demo``): a per-model report once for each of ``models`` (default: every model of
    the registry in ``models_dir``) and each of its editions, any other report once for
    ``period``. The arguments are those of ``generate_report``."""
    definition = report_definition(name)
    if definition.needs_model:
        if models is None:
            models = [model.name for model in load_registry(models_dir).models]
        requests = [
            ReportRequest(model=model, edition=edition)
            for model in models
            for edition in definition.editions or (None,)
        ]
    else:
        requests = [ReportRequest(period=period)]
    return [
        generate_report(
            wh,
            name,
            request,
            output_dir,
            models_dir=models_dir,
            evidence_dir=evidence_dir,
            versions_dir=versions_dir,
            signer=signer,
            retention_years=retention_years,
        )
        for request in requests
    ]


def _write_atomically(path: Path, data: bytes) -> None:
    """Write to a temporary name and rename into place: a failure leaves no half file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    os.replace(partial, path)


def _report_context(
    definition: ReportDefinition,
    evidence: Evidence,
    digest: str,
    dated: datetime,
    bundle_sha256: str | None = None,
) -> dict[str, Any]:
    request = evidence.request
    period = request.period
    scope = f"Period {period.label}" if period else (request.model or "")
    collections = evidence.records(COLLECTIONS.name)
    clusters = sorted({row["cluster"] for row in collections})
    failed = sum(row["status"] != "succeeded" for row in collections)
    facts: list[tuple[str, str]] = []
    if period is not None:
        facts.append(("Period", period.describe()))
    if request.model is not None:
        facts.append(("Model", request.model))
    if request.edition is not None:
        facts.append(("Edition", definition.edition_titles.get(request.edition, request.edition)))
        facts.append(
            (
                "Model metadata",
                f"{evidence.model.file_name} in the model registry ([models] dir)"
                if evidence.model
                else "none: the model registry has no file for this model",
            )
        )
    facts += [
        ("Clusters", ", ".join(clusters) if clusters else "none: no collection in the period"),
        (
            "Data cut-off",
            evidence.cutoff.strftime("%Y-%m-%d %H:%M UTC")
            if evidence.cutoff
            else "none: no successful collection",
        ),
        ("Collections used", f"{len(collections)} ({failed} failed)"),
        ("Evidence digest", f"sha256:{digest}"),
        ("annex version", __version__),
    ]
    if definition.public:  # the public carries no cluster names or collection counts
        facts = [f for f in facts if f[0] not in ("Clusters", "Collections used")]
    if bundle_sha256 is not None:
        facts.append(("Evidence bundle (not public)", f"sha256:{bundle_sha256}"))
    shown = (
        {q.name for q in definition.public_queries(request.edition)}
        if definition.public
        else set(evidence.results)
    )
    return {
        "name": definition.name,
        "title": definition.title,
        "summary": definition.summary,
        "scope": scope,
        "facts": facts,
        "sections": definition.sections,
        "digest": digest,
        "dated": dated.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "annex_version": __version__,
        "simulated": None,
        "public": definition.public,
        "evidence_bundle": bundle_sha256,
        "attachments": [
            {
                "file": r.file_name,
                "rows": r.rows,
                "sha256": r.sha256,
                "description": r.query.description,
                "query": "\n".join(line.strip() for line in r.query.sql.strip().splitlines()),
                "parameters": {k: json_value(v) for k, v in r.parameters.items()},
            }
            for r in evidence.results.values()
            if r.query.name in shown
        ],
    }


def _document_date(evidence: Evidence) -> datetime:
    """The PDF's dates: the data cut-off, else the period's start (never the wall clock)."""
    if evidence.cutoff is not None:
        return evidence.cutoff.replace(microsecond=0)
    if evidence.request.period is None:
        return ALL_TIME["start_ts"]
    return evidence.request.period.start_time()


def _slug(request: ReportRequest) -> str:
    if request.period is not None:
        return request.period.label.replace("..", "_to_")
    slug = (request.model or "report").replace("/", "_")
    return f"{slug}-{request.edition}" if request.edition else slug

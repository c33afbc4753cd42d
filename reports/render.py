"""WeasyPrint in a separate process with a wall-clock and an address-space limit.

Layout is the expensive, memory-hungry part of a report (WeasyPrint lays out about 150 table
rows a second and holds every box in memory: reference/stack.md §3). Running it in a child
process under ``resource.setrlimit`` means a runaway document is killed with a clear error
instead of taking the CLI, a Dagster worker or the machine down with it; the parent reads the
PDF and the fetcher's log back from a private temporary folder.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from reports.errors import ReportError

log = logging.getLogger("annex.reports")

PDF_VARIANT = "pdf/a-3b"
"""PDF/A-3 allows embedded files (the evidence); level b: visual appearance preserved."""


@dataclass(frozen=True)
class FetchRecord:
    """One request WeasyPrint made: the URL (cut to 300 characters), whether it was served,
    and why not when it was refused."""

    url: str
    served: bool
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class RenderLimits:
    """What one rendering may use before it is stopped."""

    timeout_seconds: float = 300.0
    memory_bytes: int = 3 << 30
    """Address-space limit of the renderer process (``RLIMIT_AS``): virtual, so it sits above
    the resident memory a render needs (about 300 MB for an empty page)."""


@dataclass(frozen=True)
class EmbeddedFile:
    """A file embedded in the PDF (PDF/A-3 ``/AFRelationship /Data``)."""

    name: str
    data: bytes
    description: str


@dataclass(frozen=True)
class RenderedPdf:
    pdf: bytes
    fetches: tuple[FetchRecord, ...]

    @property
    def refused(self) -> tuple[FetchRecord, ...]:
        return tuple(f for f in self.fetches if not f.served)


def render_pdf(
    html: str,
    attachments: Sequence[EmbeddedFile],
    *,
    identifier: bytes,
    dated: datetime,
    limits: RenderLimits | None = None,
) -> RenderedPdf:
    """Lay out ``html`` as PDF/A-3b with ``attachments`` embedded.

    ``identifier`` becomes the PDF's /ID and ``dated`` the attachments' dates, so that the same
    input gives the same bytes (the document's own dates come from its ``<meta>`` tags).
    Raises ``ReportError`` when the renderer fails, runs out of time or of memory.
    """
    limits = limits or RenderLimits()
    with tempfile.TemporaryDirectory(prefix="annex-report-") as tmp:
        job_dir = Path(tmp)
        (job_dir / "document.html").write_text(html, encoding="utf-8")
        files = []
        for index, attachment in enumerate(attachments):
            file = f"attachment-{index}"
            (job_dir / file).write_bytes(attachment.data)
            files.append(
                {"file": file, "name": attachment.name, "description": attachment.description}
            )
        job = {
            "attachments": files,
            "identifier": identifier.hex(),
            "dated": dated.isoformat(),
            "pdf_variant": PDF_VARIANT,
        }
        (job_dir / "job.json").write_text(json.dumps(job), encoding="utf-8")
        _run_worker(job_dir, limits)
        fetches = tuple(
            FetchRecord(**record)
            for record in json.loads((job_dir / "fetches.json").read_text(encoding="utf-8"))
        )
        for record in fetches:
            if not record.served:
                log.warning("report renderer refused %s: %s", record.url, record.reason)
        return RenderedPdf((job_dir / "document.pdf").read_bytes(), fetches)


def _run_worker(job_dir: Path, limits: RenderLimits) -> None:
    # The child limits itself before importing WeasyPrint (no preexec_fn: it is unsafe in a
    # threaded parent such as a Dagster worker); the parent enforces the wall clock.
    cpu_seconds = int(limits.timeout_seconds) + 5
    command = [
        sys.executable,
        "-m",
        "reports.render_worker",
        str(job_dir),
        str(limits.memory_bytes),
        str(cpu_seconds),
    ]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=limits.timeout_seconds,
            env=_worker_environment(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ReportError(
            f"the PDF renderer took longer than {limits.timeout_seconds:.0f} s and was stopped",
            hint="shorten the period, or raise the limit (generate_report(limits=...))",
        ) from None
    if done.returncode != 0 or not (job_dir / "document.pdf").exists():
        tail = done.stderr.strip().splitlines()[-3:]
        memory = "MemoryError" in done.stderr or done.returncode in (-9, -24)
        cause = (
            f"it ran out of its {limits.memory_bytes >> 20} MiB memory limit"
            if memory
            else f"it exited with status {done.returncode}"
        )
        raise ReportError(
            f"the PDF renderer failed: {cause}: {' | '.join(tail) or 'no message'}",
            hint="rerun with --debug; a report with very large inline tables needs more memory",
        )
    for line in done.stderr.splitlines():
        if line.strip() and "refused" not in line:
            log.debug("renderer: %s", line)


def _worker_environment() -> dict[str, str]:
    """The parent's environment, with annex's own packages importable whatever the cwd."""
    root = str(Path(__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}

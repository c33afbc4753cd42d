"""``python -m reports.render_worker JOB_DIR MEMORY_BYTES CPU_SECONDS``: lay out one report.

Runs in its own process under the time and memory limits ``reports.render`` sets, so a
pathological document (a huge table, a hostile stylesheet) costs that process, not the CLI or
the Dagster worker. Reads ``JOB_DIR/job.json``, ``document.html`` and the attachment files it
names; writes ``document.pdf`` and ``fetches.json`` (every URL the renderer asked for, served
or refused). Nothing but the fetcher reads on WeasyPrint's behalf.
"""

from __future__ import annotations

import json
import logging
import resource
import sys
from datetime import datetime
from pathlib import Path


def render(job_dir: Path) -> None:
    from weasyprint import HTML, Attachment

    from reports.fetcher import ASSETS_DIR, AssetFetcher

    job = json.loads((job_dir / "job.json").read_text(encoding="utf-8"))
    dated = datetime.fromisoformat(job["dated"])
    fetcher = AssetFetcher()
    try:
        html = HTML(
            string=(job_dir / "document.html").read_text(encoding="utf-8"),
            base_url=ASSETS_DIR.as_uri() + "/",
            url_fetcher=fetcher,
        )
        attachments = [
            Attachment(
                string=(job_dir / item["file"]).read_bytes(),
                name=item["name"],
                description=item["description"],
                created=dated,
                modified=dated,
                relationship="Data",
                url_fetcher=fetcher,
            )
            for item in job["attachments"]
        ]
        html.write_pdf(
            job_dir / "document.pdf",
            pdf_variant=job["pdf_variant"],
            pdf_identifier=bytes.fromhex(job["identifier"]),
            attachments=attachments,
            custom_metadata=True,
        )
    finally:
        records = [record.as_dict() for record in fetcher.records]
        (job_dir / "fetches.json").write_text(json.dumps(records), encoding="utf-8")


def limit(memory_bytes: int, cpu_seconds: int) -> None:
    """Cap this process's address space and CPU time (``resource.setrlimit``)."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))


def main(argv: list[str]) -> int:
    """``JOB_DIR MEMORY_BYTES CPU_SECONDS``: limit, then render."""
    limit(int(argv[2]), int(argv[3]))
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # WeasyPrint's own warnings (unsupported CSS) are noise to a report's reader.
    logging.getLogger("weasyprint").setLevel(logging.ERROR)
    logging.getLogger("fontTools").setLevel(logging.ERROR)
    render(Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

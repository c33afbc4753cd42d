"""Reading back what a report wrote: its text, attachments and XMP (pypdf), and qpdf's check."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from pypdf import PdfReader


def pdf_text(path: Path) -> str:
    """Every page's text, whitespace collapsed so wrapped cells still match."""
    reader = PdfReader(path)
    return re.sub(r"\s+", " ", " ".join(page.extract_text() or "" for page in reader.pages))


def pdf_attachments(path: Path) -> dict[str, bytes]:
    return {name: data[0] for name, data in PdfReader(path).attachments.items()}


def pdf_xmp(path: Path) -> bytes:
    root = PdfReader(path).trailer["/Root"]
    return root["/Metadata"].get_object().get_data()


def qpdf_check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["qpdf", "--check", str(path)], capture_output=True, text=True)


def pdf_file_relationships(path: Path) -> dict[str, str]:
    """Each embedded file's /AFRelationship, from the document's EmbeddedFiles name tree."""
    root = PdfReader(path).trailer["/Root"]
    names = root["/Names"]["/EmbeddedFiles"]["/Names"]
    out = {}
    for index in range(0, len(names), 2):
        spec = names[index + 1].get_object()
        out[str(spec["/F"])] = str(spec.get("/AFRelationship"))
    return out

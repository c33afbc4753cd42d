"""The renderer's fetcher and limits: documents that ask for local files, the network or an
attachment of /etc/passwd get nothing, and each refusal is logged; a renderer over its memory
or time limit is stopped with a clear error."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path

import pytest
from pypdf import PdfReader

from reports.errors import ReportError
from reports.fetcher import ASSETS_DIR, AssetFetcher, RefusedFetch
from reports.render import EmbeddedFile, RenderLimits, render_pdf

DATED = datetime(2026, 10, 31, 22, 5)
HOSTILE_HTML = """<!DOCTYPE html><html><head>
<link rel="stylesheet" href="report.css">
<link rel="stylesheet" href="file:///etc/passwd">
<link rel="attachment" href="file:///etc/passwd">
<style>@import url("http://127.0.0.1:9/x.css"); p { background: url(file:///etc/hostname) }</style>
</head><body>
<p>hello</p>
<img src="file:///etc/passwd">
<img src="http://127.0.0.1:9/pixel.png">
<img src="fonts/../../../../../../etc/passwd">
<a rel="attachment" href="file:///etc/shadow">x</a>
<object data="ftp://127.0.0.1:9/x"></object>
</body></html>"""


def test_hostile_document_reads_only_assets_and_logs_every_refusal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="annex.reports"):
        rendered = render_pdf(
            HOSTILE_HTML,
            [EmbeddedFile("data.csv", b"a,b\n1,2\n", "test")],
            identifier=b"0123456789abcdef",
            dated=DATED,
        )
    refused = {f.url for f in rendered.refused}
    assert "file:///etc/passwd" in refused
    assert "file:///etc/hostname" in refused
    assert "file:///etc/shadow" in refused
    assert "http://127.0.0.1:9/x.css" in refused
    assert "http://127.0.0.1:9/pixel.png" in refused
    assert any(url.endswith("/etc/passwd") and url.startswith("file://") for url in refused)
    served = [f.url for f in rendered.fetches if f.served]
    assert served and all(url.startswith(ASSETS_DIR.as_uri()) for url in served)
    for url in ("file:///etc/passwd", "http://127.0.0.1:9/pixel.png"):
        assert any(url in record.getMessage() for record in caplog.records), url
    reader = PdfReader(__import__("io").BytesIO(rendered.pdf))
    assert set(reader.attachments) == {"data.csv"}
    assert b"root:x:0:0" not in rendered.pdf


def test_fetcher_refuses_paths_escaping_the_assets_folder() -> None:
    fetcher = AssetFetcher()
    outside = (ASSETS_DIR / ".." / ".." / "pyproject.toml").resolve()
    with pytest.raises(RefusedFetch, match="outside"):
        fetcher.fetch(outside.as_uri())
    with pytest.raises(RefusedFetch, match="not served"):
        fetcher.fetch("https://example.org/font.ttf")
    with pytest.raises(RefusedFetch, match="names a host"):
        fetcher.fetch("file://evil.example/etc/passwd")
    served = fetcher.fetch((ASSETS_DIR / "report.css").as_uri())
    assert b"@font-face" in served.read()
    assert [r.served for r in fetcher.records] == [False, False, False, True]


def test_fetcher_refuses_a_symlink_out_of_the_assets(tmp_path: Path) -> None:
    assets = tmp_path / "assets"
    assets.mkdir()
    (assets / "ok.css").write_text("p {}", encoding="utf-8")
    (assets / "link.css").symlink_to("/etc/passwd")
    fetcher = AssetFetcher(assets)
    assert fetcher.fetch((assets / "ok.css").as_uri()).read() == b"p {}"
    with pytest.raises(RefusedFetch, match="outside"):
        fetcher.fetch((assets / "link.css").as_uri())


def test_renderer_over_its_memory_limit_fails_with_a_clear_error() -> None:
    with pytest.raises(ReportError, match="memory limit"):
        render_pdf(
            "<p>x</p>",
            [],
            identifier=b"0" * 16,
            dated=DATED,
            limits=RenderLimits(memory_bytes=64 << 20),
        )


def test_renderer_over_its_time_limit_is_stopped() -> None:
    rows = "".join(f"<tr><td>{i}</td><td>{i * 2}</td></tr>" for i in range(20_000))
    with pytest.raises(ReportError, match="longer than"):
        render_pdf(
            f"<table>{rows}</table>",
            [],
            identifier=b"0" * 16,
            dated=DATED,
            limits=RenderLimits(timeout_seconds=1),
        )

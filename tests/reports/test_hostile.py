"""Hostile cluster strings in a report: HTML, CSS url(), file:///etc/passwd references and
script tags in node, pool, domain, namespace, run and locator names render as text, and the
renderer reads nothing outside annex's report assets (its fetch log proves it)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from reports.definition import ReportRequest
from reports.generate import generate_report
from reports.period import month_period
from tests.helpers.report_pdf import pdf_attachments, pdf_text
from tests.helpers.report_scenario import Names, build_scenario

pytestmark = pytest.mark.slow

HOSTILE = Names(
    pool_h100="<script>alert(1)</script>",
    domain_eu='<img src="file:///etc/passwd">',
    team_a="x\" style='background:url(file:///etc/passwd)'",
    team_b='<link rel="attachment" href="file:///etc/passwd">',
    team_c="<style>@import url(http://127.0.0.1:9/x.css);</style>",
    node_1="<svg onload=alert(1)>",
    locator='<object data="file:///etc/hostname"></object>',
    reason="</td><td>injected",
    run_1='<a rel="attachment" href="file:///etc/passwd">run</a>',
    job_a="<iframe src=http://127.0.0.1:9/>",
    check_detail="</p><img src=http://127.0.0.1:9/pixel.png>",
)


def compact(text: str) -> str:
    return "".join(text.split())


@pytest.mark.parametrize("report", ["fleet", "attestation"])
def test_hostile_names_render_as_text_and_nothing_outside_assets_is_read(
    report: str, tmp_path: Path
) -> None:
    wh = build_scenario(tmp_path / "wh", HOSTILE)
    result = generate_report(
        wh,
        report,
        ReportRequest(period=month_period("2026-10")),
        tmp_path / "out",
        generated_at=datetime(2026, 11, 2),
    )
    assert result.refused == (), result.refused
    for fetch in result.fetches:
        assert fetch.served
        assert fetch.url.startswith("data:") or "/reports/assets/" in fetch.url, fetch.url
    text = "".join(pdf_text(result.path).split())  # line breaks inside cells split words
    if report == "fleet":
        assert compact("<script>alert(1)</script>") in text
        assert compact('<img src="file:///etc/passwd">') in text
        assert compact('<link rel="attachment" href="file:///etc/passwd">') in text
        assert compact("<style>@import url(http://127.0.0.1:9/x.css);</style>") in text
        assert compact("</td><td>injected") in text
        assert compact('<object data="file:///etc/hostname"></object>') in text
        assert compact("</p><img src=http://127.0.0.1:9/pixel.png>") in text
    else:
        assert compact('<a rel="attachment" href="file:///etc/passwd">run</a>') in text
        assert compact("<iframe src=http://127.0.0.1:9/>") in text
        assert compact("<svg onload=alert(1)>") in text
        assert compact("x\" style='background:url(file:///etc/passwd)'") in text
    attachments = pdf_attachments(result.path)
    expected = {t["file"] for t in result.manifest["tables"]} | {"manifest.json"}
    assert set(attachments) == expected
    passwd = Path("/etc/passwd").read_bytes()
    assert all(passwd not in data for data in attachments.values())
    assert b"root:x:0:0" not in result.path.read_bytes()

"""``annex report``: renders from the published copy into --output, prints the path and the
evidence digest; bad periods and unknown reports exit with the report error's code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pypdf import PdfReader

from annex.cli import main
from tests.helpers.report_pdf import pdf_text
from tests.helpers.report_scenario import build_scenario

pytestmark = pytest.mark.slow


def test_report_command_writes_the_pdf(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    wh = build_scenario(tmp_path)
    config = tmp_path / "annex.toml"
    config.write_text(f'[warehouse]\npath = "{wh.path}"\n', encoding="utf-8")
    out = tmp_path / "out"
    argv = ["--config", str(config), "report", "attestation", "--from", "2026-10-05"]
    assert main([*argv, "--to", "2026-10-11", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    path = out / "attestation-2026-10-05_to_2026-10-11.pdf"
    assert f"wrote {path}" in printed
    manifest = json.loads(PdfReader(path).attachments["manifest.json"][0])
    assert manifest["parameters"] == {
        "period": "2026-10-05..2026-10-11",
        "from": "2026-10-05",
        "to": "2026-10-11",
    }
    assert f"evidence digest sha256:{manifest['evidence_digest']}" in printed
    # a week with two days missing: 5 days × 384 allocated GPU-hours, 5 × 216 verified
    text = pdf_text(path)
    assert "1,920.0" in text and "1,080.0" in text
    assert text.count("no workload GPU-hours recorded for this day") == 2
    totals = next(t for t in manifest["tables"] if t["file"] == "totals.csv")
    assert totals["query_parameters"]["previous_start"] == "2026-09-28"

    assert main(["--config", str(config), "report", "fleet", "--period", "2026-13"]) == 7
    assert "month 13 does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--config", str(config), "report", "nosuch"])

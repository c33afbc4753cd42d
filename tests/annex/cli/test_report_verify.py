"""``annex report ... --for NAME`` records the handover; ``annex report verify FILE`` says
whether a PDF is one annex rendered (which version, when, handed to whom), exits 0 only for an
unchanged file, and names any modified byte, appended update or unknown file with a non-zero
exit code (a report error's). Signed files are checked against the configured certificate."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from annex.cli import main
from reports.errors import ReportError
from tests.helpers.report_scenario import build_scenario
from tests.helpers.signing_ca import PASSPHRASE, make_signing_ca
from warehouse import Warehouse

pytestmark = pytest.mark.slow

WEEK = ["attestation", "--from", "2026-10-05", "--to", "2026-10-11"]
FILE = "attestation-2026-10-05_to_2026-10-11.pdf"
CHANGED = ReportError.exit_code


def configure(tmp_path: Path, wh: Warehouse, reports: str = "") -> Path:
    config = tmp_path / "annex.toml"
    config.write_text(f'[warehouse]\npath = "{wh.path}"\n{reports}', encoding="utf-8")
    return config


def test_handover_recorded_and_every_changed_byte_detected(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    wh = build_scenario(tmp_path)
    config = configure(tmp_path, wh)
    out = tmp_path / "out"
    argv = ["--config", str(config), "report", *WEEK, "--output", str(out)]
    assert main([*argv, "--for", "EU AI Office"]) == 0
    printed = capsys.readouterr().out
    assert "handed to EU AI Office" in printed and "version 1 of attestation/" in printed
    with wh.writer() as con:
        (recipient, command) = con.execute(
            "SELECT recipient, command FROM audit.document_handovers"
        ).fetchone()
    assert recipient == "EU AI Office"
    assert command == (
        "annex report attestation --from 2026-10-05 --to 2026-10-11 --for 'EU AI Office'"
    )

    # an auditor's read-only copy, elsewhere
    copy = tmp_path / "auditor" / "received.pdf"
    copy.parent.mkdir()
    shutil.copyfile(out / FILE, copy)
    copy.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    assert main(["--config", str(config), "report", "verify", str(copy)]) == 0
    said = capsys.readouterr().out
    assert "rendered by annex: version 1 of attestation/2026-10-05_to_2026-10-11" in said
    assert "unchanged since rendering" in said
    assert "handed to EU AI Office at" in said and "not signed" in said

    # one flipped bit anywhere (a page, an attachment, the trailer) is a changed document
    data = out.joinpath(FILE).read_bytes()
    for offset in (len(data) // 3, len(data) // 2, len(data) - 40):
        changed = bytearray(data)
        changed[offset] ^= 0x01
        path = tmp_path / f"changed-{offset}.pdf"
        path.write_bytes(bytes(changed))
        code = main(["--config", str(config), "report", "verify", str(path)])
        captured = capsys.readouterr()
        assert code == CHANGED, offset
        assert "changed" in captured.out + captured.err

    # a PDF annex never rendered
    stranger = tmp_path / "stranger.pdf"
    stranger.write_bytes(b"%PDF-1.7\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n")
    assert main(["--config", str(config), "report", "verify", str(stranger)]) == CHANGED
    captured = capsys.readouterr()
    assert "not a document annex rendered" in captured.out + captured.err

    # the published copy answers too, once the warehouse is published
    wh.publish()
    assert main(["--config", str(config), "report", "verify", str(copy)]) == 0
    capsys.readouterr()
    assert main(["--config", str(config), "report", "verify"]) == CHANGED
    assert "verify needs the PDF" in capsys.readouterr().err


def test_a_signed_report_verifies_against_the_configured_certificate(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca = make_signing_ca(tmp_path / "ca")
    monkeypatch.setenv("ANNEX_TEST_SIGNING_PASSPHRASE", PASSPHRASE.decode())
    wh = build_scenario(tmp_path)
    config = configure(
        tmp_path,
        wh,
        "[reports]\n"
        f'signing_key = "{ca.key}"\n'
        f'signing_certificate = "{ca.certificate}"\n'
        'signing_passphrase_env = "ANNEX_TEST_SIGNING_PASSPHRASE"\n',
    )
    out = tmp_path / "out"
    assert main(["--config", str(config), "report", *WEEK, "--output", str(out)]) == 0
    assert "signed PAdES-B-B by CN=annex test signer" in capsys.readouterr().out
    pdf = out / FILE
    assert main(["--config", str(config), "report", "verify", str(pdf)]) == 0
    said = capsys.readouterr().out
    assert "unchanged since rendering" in said
    assert "signature valid, by the configured certificate: CN=annex test signer" in said

    # an incremental update appended after annex's signed revision: changed, still named
    appended = tmp_path / "appended.pdf"
    appended.write_bytes(pdf.read_bytes() + b"\n% a later update\n")
    assert main(["--config", str(config), "report", "verify", str(appended)]) == CHANGED
    said = capsys.readouterr().out
    assert "version 1 of attestation/" in said and "appended after annex's signed" in said

    # a modified byte inside the signed range: changed, and the signature fails
    data = bytearray(pdf.read_bytes())
    data[len(data) // 3] ^= 0x01
    damaged = tmp_path / "damaged.pdf"
    damaged.write_bytes(bytes(data))
    assert main(["--config", str(config), "report", "verify", str(damaged)]) == CHANGED
    assert "signature INVALID" in capsys.readouterr().out

    # checked against another certificate: unchanged, but not signed by the configured one
    other = make_signing_ca(tmp_path / "other-ca")
    monkeypatch.setenv("ANNEX_TEST_OTHER_PASSPHRASE", PASSPHRASE.decode())
    other_config = tmp_path / "other.toml"
    other_config.write_text(
        f'[warehouse]\npath = "{wh.path}"\n[reports]\nsigning_key = "{other.key}"\n'
        f'signing_certificate = "{other.certificate}"\n'
        'signing_passphrase_env = "ANNEX_TEST_OTHER_PASSPHRASE"\n',
        encoding="utf-8",
    )
    assert main(["--config", str(other_config), "report", "verify", str(pdf)]) == CHANGED
    captured = capsys.readouterr()
    assert "NOT by the configured certificate" in captured.out
    assert "signature does not validate" in captured.err

    # a wrong passphrase stops the rendering with the reason, and never shows the secret
    monkeypatch.setenv("ANNEX_TEST_SIGNING_PASSPHRASE", "not-it")
    code = main(["--config", str(config), "report", "fleet", "--period", "2026-10"])
    err = capsys.readouterr().err
    assert code == CHANGED and "wrong passphrase" in err and "not-it" not in err


def test_verify_without_a_warehouse_creates_none(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    config = tmp_path / "annex.toml"
    config.write_text(f'[warehouse]\npath = "{tmp_path / "w.duckdb"}"\n', encoding="utf-8")
    pdf = tmp_path / "some.pdf"
    pdf.write_bytes(b"%PDF-1.7\n%%EOF\n")
    assert main(["--config", str(config), "report", "verify", str(pdf)]) == CHANGED
    assert "not a document annex rendered" in capsys.readouterr().out
    assert not (tmp_path / "w.duckdb").exists()

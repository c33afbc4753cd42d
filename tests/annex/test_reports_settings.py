"""``[reports]``: signing key and certificate (relative to the file), the passphrase's
environment variable name (never the passphrase), the timestamp server, the retention."""

from __future__ import annotations

from pathlib import Path

import pytest

from annex.errors import ConfigError
from annex.settings import ReportsSettings, load_settings


def test_defaults_sign_nothing_and_keep_ten_years() -> None:
    reports = load_settings(env={}).reports
    assert reports == ReportsSettings()
    assert not reports.signs and reports.retention_years == 10


def test_signing_files_are_relative_to_the_configuration(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "annex.toml"
    path.parent.mkdir()
    path.write_text(
        '[reports]\nsigning_key = "keys/annex.key"\nsigning_certificate = "/pki/annex.pem"\n'
        'signing_passphrase_env = "ANNEX_SIGNING_PASSPHRASE"\n'
        'timestamp_url = "https://tsa.example/tsr"\nretention_years = 12\n'
    )
    reports = load_settings(path, env={}).reports
    assert reports.signing_key == tmp_path / "conf" / "keys" / "annex.key"
    assert reports.signing_certificate == Path("/pki/annex.pem")
    assert reports.signing_passphrase_env == "ANNEX_SIGNING_PASSPHRASE"
    assert reports.timestamp_url == "https://tsa.example/tsr"
    assert reports.signs and reports.retention_years == 12


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('signing_key = "k.pem"', "reports.signing_certificate"),
        ('signing_certificate = "c.pem"', "reports.signing_key"),
        ('timestamp_url = "https://tsa.example"', "needs signing_key"),
        ('signing_passphrase_env = "X"', "needs signing_key"),
        (
            'signing_key = "k"\nsigning_certificate = "c"\nsigning_passphrase_env = "a b"',
            "variable",
        ),
        ('signing_key = "k"\nsigning_certificate = "c"\ntimestamp_url = "ftp://t"', "http"),
        ("retention_years = 0", "reports.retention_years"),
        ('signing_passphrase = "secret"', "signing_passphrase"),
    ],
)
def test_incomplete_or_bad_signing_settings_name_the_key(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "annex.toml"
    path.write_text(f"[reports]\n{text}\n")
    with pytest.raises(ConfigError, match=problem) as caught:
        load_settings(path, env={})
    assert "secret" not in str(caught.value)

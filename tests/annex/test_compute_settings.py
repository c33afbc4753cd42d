"""The [models] and [compute] settings: defaults, overrides and errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from annex.errors import ConfigError
from annex.settings import load_settings


def test_defaults_and_file_values(tmp_path: Path) -> None:
    defaults = load_settings(env={})
    assert defaults.models.dir == Path("models")
    assert (defaults.compute.pue, defaults.compute.server_overhead) == (1.2, 1.82)
    assert defaults.compute.disagreement_margin == 0.3
    config = tmp_path / "annex.toml"
    config.write_text(
        '[models]\ndir = "registry"\n[compute]\npue = 1.4\ndefault_mfu = 0.4\n', encoding="utf-8"
    )
    settings = load_settings(config, env={"ANNEX_COMPUTE__SERVER_OVERHEAD": "1.5"})
    assert settings.models.dir == Path("registry")  # a folder: relative to the working dir
    assert settings.compute.pue == 1.4 and settings.compute.default_mfu == 0.4
    assert settings.compute.server_overhead == 1.5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[compute]\npue = 0.8\n", r"compute\.pue = 0\.8 must be between 1\.0 and 3\.0"),
        ("[compute]\ndisagreement_margin = 'wide'\n", r"compute\.disagreement_margin .* number"),
        ("[compute]\npeu = 1.2\n", r"unknown setting compute\.peu"),
        ("[models]\ndir = ''\n", r"models\.dir = '' must not be empty"),
    ],
)
def test_errors_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "annex.toml"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_settings(config, env={})


def test_as_of_is_a_utc_moment_that_round_trips_through_the_dagster_settings_file(
    tmp_path: Path,
) -> None:
    """[compute] as_of: the moment an assessment is reproduced at (the demo's world present)."""
    from datetime import datetime

    from pipelines.execution import write_settings

    config = tmp_path / "annex.toml"
    config.write_text("[compute]\nas_of = 2026-11-28T16:00:00+01:00\n", encoding="utf-8")
    settings = load_settings(config, env={})
    assert settings.compute.as_of == datetime(2026, 11, 28, 15, 0)  # naive UTC
    assert load_settings(env={}).compute.as_of is None
    written = write_settings(settings, [], tmp_path / "dagster.toml")
    assert "as_of = 2026-11-28T15:00:00Z" in written.read_text(encoding="utf-8")
    assert load_settings(written, env={}).compute.as_of == settings.compute.as_of
    config.write_text("[compute]\nas_of = 2026-11-28T16:00:00\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"compute\.as_of .* must carry a UTC offset"):
        load_settings(config, env={})

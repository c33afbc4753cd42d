"""The [lineage] settings: defaults, validation errors that name the key, the example file, and
the round trip through ``orchestration.write_settings``."""

from __future__ import annotations

from pathlib import Path

import pytest

from annex.errors import ConfigError
from annex.settings import LineageSettings, load_settings
from tests.helpers.paths import REPO_ROOT


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "annex.toml"
    path.write_text(text)
    return path


def test_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./annex.toml
    settings = load_settings(None, env={})
    lineage = settings.lineage
    assert lineage == LineageSettings()
    assert lineage.spool_dir == Path("lineage") and lineage.watch_dirs == ()
    assert lineage.max_body_bytes == 5 * 1024 * 1024 and lineage.max_events == 1000
    assert settings.serve.max_body_bytes >= lineage.max_body_bytes  # the server cap admits it


def test_values_and_environment_overrides(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[lineage]\nspool_dir = "ol"\nwatch_dirs = ["/mnt/ol", "~/more"]\n'
        "max_body_bytes = 2048\nmax_events = 10\nintake_workers = 0\n",
    )
    lineage = load_settings(path, env={"ANNEX_LINEAGE__MAX_EVENTS": "20"}).lineage
    assert lineage.spool_dir == Path("ol")
    assert lineage.watch_dirs == (Path("/mnt/ol"), Path("~/more").expanduser())
    assert (lineage.max_body_bytes, lineage.max_events, lineage.intake_workers) == (2048, 20, 0)


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ("[lineage]\nmax_body_bytes = 10", "lineage.max_body_bytes", "between"),
        ("[lineage]\nmax_events = 0", "lineage.max_events", "between"),
        ("[lineage]\nintake_workers = -1", "lineage.intake_workers", "between"),
        ('[lineage]\nmax_events = "many"', "lineage.max_events", "integer"),
        ('[lineage]\nspool_dir = ""', "lineage.spool_dir", "empty"),
        ('[lineage]\nwatch_dirs = [""]', "lineage.watch_dirs", "non-empty"),
        ("[lineage]\nwatch_dirs = 3", "lineage.watch_dirs", "list"),
        ("[lineage]\nmax_bytes = 3", "lineage.max_bytes", "unknown"),
        ('lineage = "x"', "lineage", "table"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, text: str, key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings(write(tmp_path, text), env={})
    message = str(raised.value) + " " + str(getattr(raised.value, "hint", "") or "")
    assert key in message and problem in message


def test_the_example_file_loads_with_its_lineage_section() -> None:
    example = REPO_ROOT / "annex.example.toml"
    assert "[lineage]" in example.read_text()
    assert load_settings(example, env={}).lineage == LineageSettings()


def test_write_settings_round_trips_lineage(tmp_path: Path) -> None:
    from pipelines.execution import write_settings  # imports Dagster: only here

    settings = load_settings(
        write(
            tmp_path,
            '[lineage]\nspool_dir = "ol"\nwatch_dirs = ["w"]\nmax_events = 7\nintake_workers = 1\n',
        ),
        env={},
    )
    path = write_settings(settings, [], tmp_path / "out" / "annex.toml")
    again = load_settings(path, env={}).lineage
    assert again.spool_dir == Path("ol").absolute()
    assert again.watch_dirs == (Path("w").absolute(),)
    assert (again.max_events, again.intake_workers) == (7, 1)
    assert again.max_body_bytes == settings.lineage.max_body_bytes

"""The "next:" hints run as printed: ``uv run annex`` unless the reader has ``annex`` on PATH."""

from __future__ import annotations

import os
from pathlib import Path

from annex.cli.hints import annex_command, annex_prefix, runnable


def _executable(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    annex = folder / "annex"
    annex.write_text("#!/bin/sh\n")
    annex.chmod(0o755)
    return annex


def test_without_annex_on_path_the_hint_says_uv_run(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path / "empty")}
    assert annex_prefix(env) == "uv run annex"
    assert annex_command('sql -c "select 1"', env) == 'uv run annex sql -c "select 1"'


def test_with_annex_on_path_the_hint_says_annex(tmp_path: Path) -> None:
    env = {"PATH": str(_executable(tmp_path / "bin").parent)}
    assert annex_command("demo", env) == "annex demo"


def test_the_venv_uv_run_puts_on_path_for_one_command_does_not_count(tmp_path: Path) -> None:
    venv = tmp_path / ".venv"
    _executable(venv / "bin")
    env = {
        "PATH": os.pathsep.join([str(venv / "bin"), str(tmp_path / "empty")]),
        "VIRTUAL_ENV": str(venv),
        "UV_RUN_RECURSION_DEPTH": "1",
    }
    assert annex_prefix(env) == "uv run annex"
    # the same venv activated by the reader's shell (no uv run): its annex is theirs
    del env["UV_RUN_RECURSION_DEPTH"]
    assert annex_prefix(env) == "annex"


def test_commands_quoted_in_errors_from_below_the_cli_run_as_printed(tmp_path: Path) -> None:
    hint = "run `annex compute` without --no-refresh; see annex.example.toml"
    without = {"PATH": str(tmp_path / "empty")}
    assert runnable(hint, without) == (
        "run `uv run annex compute` without --no-refresh; see annex.example.toml"
    )
    with_annex = {"PATH": str(_executable(tmp_path / "bin").parent)}
    assert runnable(hint, with_annex) == hint


def test_a_failure_printed_by_the_cli_spells_its_hint_runnably(
    capsys, monkeypatch, tmp_path: Path
) -> None:
    from annex.cli import report_failure
    from annex.errors import ConfigError

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)
    report_failure(ConfigError("no clusters", hint="try `annex demo`"))
    assert "hint: try `uv run annex demo`" in capsys.readouterr().err

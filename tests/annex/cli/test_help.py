"""Every command and option of ``annex`` says what it is for in ``--help``.

The test walks the whole argparse tree, so a command or option added without help text fails
here rather than in a newcomer's terminal.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from annex.cli import build_parser


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("annex",)
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str | None]]:
    """Every (sub)command: its path, its parser and the help its parent lists it with."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), sub, helps.get(name)
                yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(build_parser()))


def test_the_tree_holds_every_command_group() -> None:
    names = {" ".join(path) for path, _, _ in COMMANDS}
    assert {"annex demo", "annex sql", "annex probe manifest", "annex report"} <= names


@pytest.mark.parametrize("path,parser,listed", COMMANDS, ids=[" ".join(c[0]) for c in COMMANDS])
def test_every_command_and_option_has_help(
    path: tuple[str, ...], parser: argparse.ArgumentParser, listed: str | None
) -> None:
    assert listed, f"{' '.join(path)} has no help in its parent's list of commands"
    missing = [
        "/".join(action.option_strings) or action.dest
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction)
        and action.help != argparse.SUPPRESS
        and not (action.help or "").strip()
    ]
    assert not missing, f"{' '.join(path)}: no help for {', '.join(missing)}"


def test_every_top_level_option_has_help() -> None:
    parser = build_parser()
    missing = [
        a.dest
        for a in parser._actions
        if not isinstance(a, argparse._SubParsersAction) and not (a.help or "").strip()
    ]
    assert not missing


def test_report_help_lists_each_report_on_its_own_line() -> None:
    from reports.catalog import report_definitions

    report = next(p for path, p, _ in COMMANDS if path == ("annex", "report"))
    text = report.format_help()
    lines = text.splitlines()
    for definition in report_definitions().values():
        own = [line for line in lines if line.strip().startswith(f"{definition.name}:")]
        assert own, f"{definition.name} has no line of its own in:\n{text}"
        assert sum(line.count(":") for line in own) >= 1

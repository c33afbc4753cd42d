"""Commands the CLI suggests ("next: ..."), spelt so that they run as printed.

A newcomer who ran ``uv run annex demo`` in a checkout has no ``annex`` on PATH: a hint that
says ``annex sql ...`` would fail for them. So every suggested command goes through
``annex_command``: ``annex ...`` when an ``annex`` executable is on the reader's PATH, else
``uv run annex ...`` (run from the checkout, as the README's quick start does).

The reader's PATH is not quite this process's: ``uv run`` puts the project's ``.venv/bin`` in
front of it for the one command it runs (and says so in ``UV_RUN_RECURSION_DEPTH``), so an
``annex`` found only there is not one the reader's shell will find afterwards.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping


def annex_prefix(environ: Mapping[str, str] | None = None) -> str:
    """How the reader runs annex: ``annex`` if it is on their PATH, else ``uv run annex``."""
    env = os.environ if environ is None else environ
    directories = env.get("PATH", "").split(os.pathsep)
    if env.get("UV_RUN_RECURSION_DEPTH") and env.get("VIRTUAL_ENV"):
        added = os.path.join(env["VIRTUAL_ENV"], "bin")
        directories = [d for d in directories if os.path.normpath(d) != os.path.normpath(added)]
    found = shutil.which("annex", path=os.pathsep.join(d for d in directories if d))
    return "annex" if found else "uv run annex"


def annex_command(arguments: str, environ: Mapping[str, str] | None = None) -> str:
    """``annex ARGUMENTS`` as the reader can paste it: ``annex_command('sql -c "select 1"')``."""
    return f"{annex_prefix(environ)} {arguments}"


def next_steps(*arguments: str) -> str:
    """The "next:" block that closes a command's output, one runnable command a line."""
    prefix = annex_prefix()
    return "next: " + "\n      ".join(f"{prefix} {a}" for a in arguments)


def runnable(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every command quoted as `` `annex ...` `` spelt as the reader runs it.

    Errors raised below the CLI (services, warehouse) suggest commands in backquotes without
    knowing how annex was started; the CLI passes their messages and hints through this.
    """
    prefix = annex_prefix(environ)
    if prefix == "annex":
        return text
    return text.replace("`annex ", f"`{prefix} ")

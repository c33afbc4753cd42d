"""The ``annex`` command line: an entry point over ``services`` and ``pipelines``.

Every command is a thin layer over the library: parse arguments, load settings, call the
collectors / warehouse / simulator, print results. Errors are ``AnnexError``s, printed without
a traceback (unless ``--debug``) and mapped to the exit codes listed in ``annex.errors``.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence

from annex import __version__
from annex.cli import (
    collect,
    compute,
    demo,
    export,
    probe,
    report,
    run,
    serve,
    simulate,
    spdx,
    sql,
    warehouse,
    watch,
)
from annex.errors import AnnexError, WarehouseError
from annex.settings import load_settings

log = logging.getLogger("annex")

COMMAND_GROUPS = (
    simulate,
    collect,
    serve,
    watch,
    probe,
    demo,
    run,
    sql,
    export,
    spdx,
    compute,
    report,
    warehouse,
)
"""One module per command group, each with ``register(commands)``; this order is ``--help``'s."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="annex",
        description=(
            "GPU-cluster capacity audit and EU AI Act compliance evidence. "
            "Collects Kubernetes cluster state into a DuckDB warehouse that analysts query."
        ),
        epilog="Settings: annex.toml (see annex.example.toml); ANNEX_WAREHOUSE sets the warehouse.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"annex {__version__}",
        help="print annex's version and exit",
    )
    parser.add_argument(
        "--config", metavar="PATH", help="settings file (default: $ANNEX_CONFIG or ./annex.toml)"
    )
    parser.add_argument("--debug", action="store_true", help="verbose logs and full tracebacks")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    for group in COMMAND_GROUPS:
        group.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.debug)
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        settings = load_settings(args.config)
        return int(args.run(args, settings) or 0)
    except (Exception, KeyboardInterrupt) as exc:
        return report_failure(exc, debug=args.debug)


def report_failure(exc: BaseException, *, debug: bool = False) -> int:
    """Print why a command failed, for people, and return its exit code (``annex.errors``).

    With ``debug``, an error annex did not expect is re-raised (its traceback is the report).
    """
    if isinstance(exc, AnnexError):
        if debug:
            log.error("failed", exc_info=exc)
        from annex.cli.hints import runnable

        print(f"annex: error: {runnable(exc.message)}", file=sys.stderr)
        for note in getattr(exc, "__notes__", ()):
            print(f"  note: {runnable(note)}", file=sys.stderr)
        if exc.hint:
            print(f"  hint: {runnable(exc.hint)}", file=sys.stderr)
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        print("annex: interrupted", file=sys.stderr)
        return 130
    if isinstance(exc, BrokenPipeError):
        # The reader of our output went away (`annex sql ... | head`): not a failure of
        # annex's. Point stdout at /dev/null so flushing it at exit raises nothing more.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141  # 128 + SIGPIPE, as a shell reports a command its pipe stopped
    if debug:
        raise exc
    from warehouse.space import out_of_space

    if out_of_space(exc):
        # A full disk met outside the warehouse's own handling (a spool, a report file): no
        # bug, and the warehouse commits whole collections, so nothing is half-kept.
        print(f"annex: error: a disk is full: {exc}", file=sys.stderr)
        print(
            "  hint: free space on the disk of the file named above and rerun; collections "
            "already committed to the warehouse are safe, and none is ever kept in part",
            file=sys.stderr,
        )
        return WarehouseError.exit_code
    print(f"annex: unexpected error: {type(exc).__name__}: {exc}", file=sys.stderr)
    print("  hint: rerun with --debug for the traceback, and report it", file=sys.stderr)
    return 1


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _configure_logging(debug: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(asctime)s level=%(levelname)s logger=%(name)s %(message)s",
    )
    # urllib3 at debug level prints request lines (never headers); keep it quieter anyway.
    logging.getLogger("urllib3").setLevel(logging.INFO if debug else logging.WARNING)
    logging.getLogger("kubernetes").setLevel(logging.INFO if debug else logging.WARNING)


if __name__ == "__main__":  # pragma: no cover - `python -m annex.cli`
    sys.exit(main())

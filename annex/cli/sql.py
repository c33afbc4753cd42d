"""The CLI's command group: read-only SQL over the analysts' copy (``annex sql``); the
output formats are ``annex.cli.sql_output``'s, imported when the command runs."""

from __future__ import annotations

import argparse
from typing import Any

from annex.settings import Settings


def register(commands: Any) -> None:
    sql = commands.add_parser(
        "sql",
        help="query the published warehouse copy (read-only)",
        description=(
            "Query the analysts' read-only copy of the warehouse. Interactive without -c; "
            "'.tables' lists the tables and views with their descriptions; start with "
            "'select * from marts.fleet_summary'."
        ),
    )
    sql.add_argument(
        "-c",
        "--command",
        dest="query",
        metavar="SQL",
        help="run one query or dot-command (.tables, .describe NAME) and exit",
    )
    sql.add_argument(
        "--format",
        choices=("table", "csv", "json"),
        default="table",
        help="table: for reading, sized to the terminal (the default); csv: with a header "
        "line; json: one array of objects. Nested values are JSON text in csv and table",
    )
    sql.set_defaults(run=cmd_sql)


def cmd_sql(args: argparse.Namespace, settings: Settings) -> int:
    from annex.cli.sql_output import run_query, run_shell

    if args.query is not None:
        return run_query(settings, args.query, output_format=args.format)
    return run_shell(settings, output_format=args.format)

"""The CLI's command group: export warehouse tables for analysts (``annex export``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from annex.cli.arguments import iso_day
from annex.cli.counts import plural
from annex.settings import Settings


def register(commands: Any) -> None:
    export = commands.add_parser(
        "export",
        help="write every core and marts table as Parquet partitioned by cluster and day",
        description=(
            "Export the published copy's core and marts tables to DEST/<schema>/<table>/"
            "cluster=<name>/day=<day>/ as Parquet that Spark, Trino or DuckDB read; sync DEST "
            "to object storage afterwards. Reruns are idempotent."
        ),
    )
    export.add_argument(
        "--since",
        metavar="DAY",
        type=iso_day,
        help="rewrite only partitions from DAY (YYYY-MM-DD) on, plus older ones with changes",
    )
    export.add_argument("dest", type=Path, metavar="DEST", help="local or mounted folder")
    export.set_defaults(run=cmd_export)


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from warehouse import Warehouse
    from warehouse.export import export_warehouse

    result = export_warehouse(Warehouse(settings.warehouse), args.dest, since=args.since)
    for table in result.tables:
        print(
            f"{table.name}: {table.rows_written:,} of {plural(table.rows, 'row')} written "
            f"({plural(table.partitions_written, 'partition')}, day: {table.rule})"
        )
    print(f"exported to {result.dest} (manifest: {result.manifest})")
    return 0

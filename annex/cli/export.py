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
        help="write every core and marts table as Parquet that Spark, Trino or DuckDB read",
        description=(
            "Export the published copy's core and marts tables as Parquet that Spark, Trino "
            "or DuckDB read: history tables to DEST/<schema>/<table>/cluster=<name>/day=<day>/ "
            "(the day of each table's own time column), the others as one current snapshot "
            "DEST/<schema>/<table>/data_0.parquet; DEST/_annex_export.json lists each table's "
            "layout. Sync DEST to object storage afterwards. Two exports of one warehouse are "
            "byte-identical."
        ),
    )
    export.add_argument(
        "--since",
        metavar="DAY",
        type=iso_day,
        help=(
            "rewrite only partitions from DAY (YYYY-MM-DD) on, older ones with changed or "
            "late rows, and the snapshots"
        ),
    )
    export.add_argument("dest", type=Path, metavar="DEST", help="local or mounted folder")
    export.set_defaults(run=cmd_export)


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from warehouse import Warehouse
    from warehouse.export import export_warehouse

    result = export_warehouse(Warehouse(settings.warehouse), args.dest, since=args.since)
    for table in result.tables:
        layout = plural(table.partitions_written, "partition")
        if table.kind == "snapshot":
            layout = "snapshot"
        print(
            f"{table.name}: {table.rows_written:,} of {plural(table.rows, 'row')} written "
            f"({layout})"
        )
    cutoff = (
        f" (data up to {result.data_cutoff:%Y-%m-%d %H:%M:%S} UTC)" if result.data_cutoff else ""
    )
    print(f"exported to {result.dest}{cutoff}; manifest: {result.manifest}")
    return 0

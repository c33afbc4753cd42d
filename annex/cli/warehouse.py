"""The CLI's command group: manage the warehouse file (``annex warehouse
migrate|status|publish|compact``)."""

from __future__ import annotations

import argparse
from typing import Any

from annex.settings import Settings


def register(commands: Any) -> None:
    warehouse = commands.add_parser("warehouse", help="manage the warehouse file")
    actions = warehouse.add_subparsers(dest="action", metavar="ACTION", required=True)
    migrate = actions.add_parser("migrate", help="apply pending migrations")
    migrate.set_defaults(run=cmd_warehouse_migrate)
    status = actions.add_parser("status", help="migrations, size and the last collections")
    status.set_defaults(run=cmd_warehouse_status)
    publish = actions.add_parser("publish", help="refresh the analysts' read-only copy")
    publish.set_defaults(run=cmd_warehouse_publish)
    compact = actions.add_parser(
        "compact",
        help="move raw rows past [retention] to Parquet (readable as archive.<table>)",
        description="Move raw rows older than [retention] (telemetry samples, raw.kubernetes_*, "
        "request logs) to Hive-partitioned Parquet under [retention] dir, one atomic step per "
        "partition, and keep them readable in `annex sql` as archive.<table>. Rollups, "
        "intervals, verdicts and report versions are kept forever. Reruns are no-ops.",
    )
    compact.add_argument(
        "--dry-run", action="store_true", help="list what would move (changes nothing)"
    )
    compact.set_defaults(run=cmd_warehouse_compact)


def cmd_warehouse_migrate(args: argparse.Namespace, settings: Settings) -> int:
    from warehouse import Warehouse

    applied = Warehouse(settings.warehouse).migrate()
    if applied:
        for name in applied:
            print(f"applied {name}")
    else:
        print(f"{settings.warehouse.path} is up to date")
    return 0


def cmd_warehouse_status(args: argparse.Namespace, settings: Settings) -> int:
    from warehouse import Warehouse

    print(Warehouse(settings.warehouse).status())
    return 0


def cmd_warehouse_publish(args: argparse.Namespace, settings: Settings) -> int:
    from warehouse import Warehouse

    path = Warehouse(settings.warehouse).publish()
    print(f"published {path}")
    return 0


def cmd_warehouse_compact(args: argparse.Namespace, settings: Settings) -> int:
    from warehouse import Warehouse
    from warehouse.compaction import compact_warehouse

    result = compact_warehouse(
        Warehouse(settings.warehouse), settings.retention, dry_run=args.dry_run
    )
    verb = "would move" if result.dry_run else "moved"
    if not result.partitions:
        cutoff = f"{result.data_cutoff:%Y-%m-%d %H:%M}" if result.data_cutoff else "none yet"
        print(f"nothing past its retention (data cut-off: {cutoff})")
        return 0
    tables: dict[str, list] = {}
    for partition in result.partitions:
        tables.setdefault(partition.table, []).append(partition)
    size = "bytes in DuckDB (estimate)" if result.dry_run else "bytes of Parquet"
    print(f"{'table':<40} {'partitions':>10} {'rows':>12} {size:>28}  days")
    for table, partitions in tables.items():
        days = sorted({p.day for p in partitions})
        span = f"{days[0]}..{days[-1]}" if len(days) > 1 else f"{days[0]}"
        rows, size_bytes = sum(p.rows for p in partitions), sum(p.bytes for p in partitions)
        print(f"{table:<40} {len(partitions):>10} {rows:>12} {size_bytes:>28}  {span}")
    where = settings.retention.resolved_dir(settings.warehouse)
    print(
        f"{verb} {len(result.partitions)} partitions, {result.rows} rows "
        f"({'to' if result.dry_run else 'into'} {where})"
    )
    return 0

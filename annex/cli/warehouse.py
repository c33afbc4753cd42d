"""The CLI's command group: manage the warehouse file (``annex warehouse
migrate|status|publish``)."""

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

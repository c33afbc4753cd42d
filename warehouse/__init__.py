"""annex's DuckDB warehouse: migrations, the writer lock, atomic collection loads, publishing.

Public API::

    wh = Warehouse(settings.warehouse)
    wh.migrate(); wh.status(); wh.publish()
    with wh.writer() as con: ...      # locked, migrated, read-write live file
    with wh.reader() as con: ...      # read-only published copy
    load_collection(wh, model, cluster=..., batches=...)
"""

from warehouse.connection import CollectionSummary, Warehouse, WarehouseStatus
from warehouse.load import (
    RAW_CAP_BYTES,
    REJECTED_TABLE,
    CollectionResult,
    SourceModel,
    load_collection,
)
from warehouse.migrate import AppliedMigration, Migration, discover_migrations

__all__ = [
    "RAW_CAP_BYTES",
    "REJECTED_TABLE",
    "AppliedMigration",
    "CollectionResult",
    "CollectionSummary",
    "Migration",
    "SourceModel",
    "Warehouse",
    "WarehouseStatus",
    "discover_migrations",
    "load_collection",
]

"""One name per concept: no core or marts column is a synonym the glossary (docs/naming.md) lists.

The synonyms are read from the glossary's table itself, so the document and this test cannot
drift: adding a synonym to the table makes every column so named fail here.
"""

from __future__ import annotations

import re
from pathlib import Path

from annex.settings import WarehouseSettings
from warehouse import Warehouse
from warehouse.testing import make_migrations_dir

GLOSSARY = Path(__file__).resolve().parents[2] / "docs" / "naming.md"
HEADER = ["concept", "name", "meaning", "synonyms not to use", "raw source spellings kept, and why"]
_SYNONYM = re.compile(r"`([a-z0-9_]+)`(\s*\(marts\))?")


def glossary_rows(text: str) -> list[list[str]]:
    """The glossary table's rows (header and separator excluded), each a list of its cells."""
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("|")
    ]
    assert rows and rows[0] == HEADER, f"{GLOSSARY} must have one table with columns {HEADER}"
    for row in rows[2:]:  # a cell with a stray "|" would hide the row's synonyms
        assert len(row) == len(HEADER), f"glossary row {row[0]!r} has {len(row)} cells"
    return rows[2:]


def synonyms(text: str) -> dict[str, tuple[str, ...]]:
    """Each synonym -> the schemas where it is refused (``(marts)`` after it: marts only)."""
    found: dict[str, tuple[str, ...]] = {}
    for row in glossary_rows(text):
        for name, marts_only in _SYNONYM.findall(row[3]):
            found[name] = ("marts",) if marts_only else ("core", "marts")
    return found


def synonym_columns(wh: Warehouse, refused: dict[str, tuple[str, ...]]) -> list[str]:
    """``schema.table.column`` of every core or marts column named like a refused synonym."""
    with wh.writer() as con:
        columns = con.execute(
            "SELECT schema_name, table_name, column_name FROM duckdb_columns() "
            "WHERE schema_name IN ('core', 'marts') AND NOT internal "
            "AND database_name = current_database() ORDER BY ALL"
        ).fetchall()
    return [
        f"{schema}.{table}.{column}"
        for schema, table, column in columns
        if schema in refused.get(column, ())
    ]


def test_the_glossary_lists_the_synonyms_the_issue_names() -> None:
    refused = synonyms(GLOSSARY.read_text(encoding="utf-8"))
    for name in ("kubernetes_cluster", "hostname", "node", "pool", "gpu_sku", "gpu_product"):
        assert refused[name] == ("core", "marts"), name
    assert refused["gpus_allocated_workload"] == ("core", "marts")
    assert refused["allocatable"] == ("marts",)  # core.node_gpu_resources keeps the API's name
    kept = {"cluster", "namespace", "node_name", "model_name", "physical_gpus", "energy_mwh"}
    assert not kept & set(refused)


def test_no_core_or_marts_column_is_a_glossary_synonym(tmp_path: Path) -> None:
    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb"))
    refused = synonyms(GLOSSARY.read_text(encoding="utf-8"))
    assert synonym_columns(wh, refused) == [], (
        "rename these columns to the glossary's name (docs/naming.md), by migration"
    )


def test_a_synonym_column_is_found_in_core_and_a_marts_only_one_only_in_marts(
    tmp_path: Path,
) -> None:
    migrations = make_migrations_dir(tmp_path / "migrations")
    (migrations / "0003_synonyms.sql").write_text(
        "CREATE TABLE core.gpus_seen (hostname VARCHAR, allocatable INTEGER, node_name VARCHAR);\n"
        "CREATE TABLE marts.gpus_held (allocatable INTEGER, allocatable_gpus INTEGER);\n",
        encoding="utf-8",
    )
    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb"), migrations_dir=migrations)
    refused = synonyms(
        "| concept | name | meaning | synonyms not to use | raw source spellings kept, and why |\n"
        "|---|---|---|---|---|\n"
        "| node | `node_name` | a node | `hostname` | DCGM |\n"
        "| count | `allocatable_gpus` | GPUs | `allocatable` (marts) | API |\n"
    )
    assert refused == {"hostname": ("core", "marts"), "allocatable": ("marts",)}
    assert synonym_columns(wh, refused) == [
        "core.gpus_seen.hostname",
        "marts.gpus_held.allocatable",
    ]

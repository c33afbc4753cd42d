"""The data dictionary: ``docs/data-dictionary.md``, generated from the warehouse's own comments.

Every table, view, column and macro of ``core``, ``marts`` and ``audit`` carries a ``COMMENT ON`` in
its migration (a ``marts`` view: in its file ``warehouse/marts/<name>.sql``); this module migrates
a fresh temp warehouse and writes those comments out as Markdown, so the dictionary can never
describe a different schema than the migrations and view files build. Every mart also names the
file that defines it: a view its ``warehouse/marts`` file, a table the migration that created it
and the files under ``warehouse/models`` whose SQL writes its rows.

    python -m warehouse.dictionary            # regenerate docs/data-dictionary.md
    python -m warehouse.dictionary --check    # exit 1 if the committed file is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb

from annex.errors import AnnexError
from annex.settings import WarehouseSettings
from warehouse.connection import Warehouse
from warehouse.migrate import discover_mart_views

REPO_ROOT = Path(__file__).resolve().parents[1]
MODELS_DIR = Path(__file__).with_name("models")
"""Where the SQL that fills the ``marts`` tables lives (Python strings and ``.sql`` files)."""

DEFAULT_OUTPUT = REPO_ROOT / "docs" / "data-dictionary.md"

SCHEMAS = ("raw", "core", "marts", "audit", "archive", "meta")
"""In the order analysts meet them; ``raw``, ``archive`` (views over ``raw``/``core``/``audit``
and their compacted Parquet, commented by ``warehouse.compaction``) and ``meta`` are listed but
need no column comments."""

DOCUMENTED_SCHEMAS = ("core", "marts", "audit")
"""Schemas whose every table, view, column and macro must have a comment (tests enforce it)."""


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    comment: str | None


@dataclass(frozen=True)
class Relation:
    schema: str
    name: str
    kind: str
    """``table``, ``view`` or ``macro`` (a SQL function: its parameters are its columns)."""
    comment: str | None
    columns: tuple[Column, ...]


def describe(con: duckdb.DuckDBPyConnection) -> list[Relation]:
    """Every table, view and macro of the annex schemas, with columns, in a stable order."""
    relations = con.execute(
        """
        SELECT schema_name, table_name, 'table', comment FROM duckdb_tables()
        WHERE NOT temporary AND NOT internal AND database_name = current_database()
        UNION ALL
        SELECT schema_name, view_name, 'view', comment FROM duckdb_views()
        WHERE NOT temporary AND NOT internal AND database_name = current_database()
        """
    ).fetchall()
    macros = con.execute(
        """
        SELECT schema_name, function_name, comment, parameters FROM duckdb_functions()
        WHERE function_type = 'macro' AND NOT internal AND database_name = current_database()
        """
    ).fetchall()
    columns = con.execute(
        """
        SELECT schema_name, table_name, column_name, data_type, comment FROM duckdb_columns()
        WHERE NOT internal AND database_name = current_database()
        ORDER BY schema_name, table_name, column_index
        """
    ).fetchall()
    by_relation: dict[tuple[str, str], list[Column]] = {}
    for schema, table, name, data_type, comment in columns:
        by_relation.setdefault((schema, table), []).append(Column(name, data_type, comment))
    result = [
        Relation(schema, name, kind, comment, tuple(by_relation.get((schema, name), [])))
        for schema, name, kind, comment in relations
        if schema in SCHEMAS
    ]
    result += [
        Relation(schema, name, "macro", comment, tuple(Column(p, "", None) for p in parameters))
        for schema, name, comment, parameters in macros
        if schema in SCHEMAS
    ]
    result.sort(key=lambda r: (SCHEMAS.index(r.schema), r.name))
    return result


def missing_comments(relations: list[Relation]) -> list[str]:
    """``schema.table`` / ``schema.table.column`` names in documented schemas lacking a comment."""
    missing: list[str] = []
    for relation in relations:
        if relation.schema not in DOCUMENTED_SCHEMAS:
            continue
        qualified = f"{relation.schema}.{relation.name}"
        if not (relation.comment or "").strip():
            missing.append(qualified)
        if relation.kind != "macro":  # (a macro's parameters are named in its comment)
            missing.extend(
                f"{qualified}.{c.name}" for c in relation.columns if not (c.comment or "").strip()
            )
    return missing


def mart_sources(
    relations: list[Relation], wh: Warehouse, models_dir: Path = MODELS_DIR
) -> dict[str, str]:
    """For every ``marts`` table and view, the sentence naming the files that define it."""
    views = {v.name: v.path for v in discover_mart_views(wh.marts_dir)}
    migrations = wh.migrations()
    writers = sorted(
        p for p in models_dir.rglob("*") if p.suffix in (".py", ".sql") and p.is_file()
    )
    texts = {p: p.read_text(encoding="utf-8") for p in writers}
    sources: dict[str, str] = {}
    for relation in relations:
        if relation.schema != "marts" or relation.kind == "macro":
            continue
        name = re.escape(relation.name)
        if relation.name in views:
            sources[relation.name] = f"Defined in `{_shown(views[relation.name])}`."
            continue
        created = re.compile(
            rf"CREATE\s+(?:OR\s+REPLACE\s+)?(?:TABLE|VIEW)\s+marts\.{name}\b", re.IGNORECASE
        )
        made = [m for m in migrations if created.search(m.sql)]
        parts = [f"Created by `{_shown(made[-1].path)}`" if made else "Created by a migration"]
        # SQL that writes it, or its quoted name handed to a Python writer (compute.py's rows).
        written = re.compile(
            rf"(?:(?:INSERT\s+(?:OR\s+REPLACE\s+)?INTO|UPDATE|MERGE\s+INTO)\s+marts\.{name}\b)"
            rf"|(?:[\"']marts\.{name}[\"'])",
            re.IGNORECASE,
        )
        fillers = [p for p, text in texts.items() if written.search(text)]
        if fillers:
            parts.append("filled by " + ", ".join(f"`{_shown(p)}`" for p in fillers))
        sources[relation.name] = "; ".join(parts) + "."
    return sources


def _shown(path: Path) -> str:
    """A path relative to the repository when it is inside it (stable across checkouts)."""
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return path.name


def render(
    relations: list[Relation], migrations: list[str], sources: dict[str, str] | None = None
) -> str:
    """The Markdown text of the dictionary (deterministic: no dates, no versions).

    ``sources`` (``mart_sources``) adds, under each mart, the files that define it.
    """
    lines = [
        "# annex data dictionary",
        "",
        "<!-- Generated by `python -m warehouse.dictionary` from the COMMENT ON statements of",
        "     warehouse/migrations and warehouse/marts. Do not edit: change a marts view's",
        "     comments in its warehouse/marts file, any other comment in a new migration. -->",
        "",
        "Built from migrations: " + ", ".join(f"`{m}`" for m in migrations) + ".",
        "",
        "Analysts read the published copy (`annex sql`, or `duckdb -readonly` on",
        "`warehouse.published_path`, by default `annex.published.duckdb` beside the live file).",
        "Times are UTC.",
    ]
    for schema in SCHEMAS:
        in_schema = [r for r in relations if r.schema == schema]
        if not in_schema:
            continue
        lines += ["", f"## Schema `{schema}`"]
        for relation in in_schema:
            if relation.kind == "macro":
                parameters = ", ".join(c.name for c in relation.columns)
                lines += [
                    "",
                    f"### Macro `{schema}.{relation.name}({parameters})`",
                    "",
                    _text(relation.comment),
                ]
                continue
            lines += [
                "",
                f"### {relation.kind.capitalize()} `{schema}.{relation.name}`",
                "",
                _text(relation.comment),
            ]
            if schema == "marts" and relation.name in (sources or {}):
                lines += ["", (sources or {})[relation.name]]
            lines += [
                "",
                "| column | type | description |",
                "|---|---|---|",
            ]
            lines += [
                f"| `{c.name}` | `{_cell(c.type)}` | {_cell(_text(c.comment))} |"
                for c in relation.columns
            ]
    return "\n".join(lines) + "\n"


def generate(migrations_dir: Path | None = None) -> str:
    """Migrate a fresh temp warehouse and render its dictionary."""
    with tempfile.TemporaryDirectory(prefix="annex-dictionary-") as tmp:
        wh = Warehouse(
            WarehouseSettings(path=Path(tmp) / "dictionary.duckdb"), migrations_dir=migrations_dir
        )
        with wh.writer() as con:
            relations = describe(con)
        names = [m.name for m in wh.migrations()]
        sources = mart_sources(relations, wh)
    return render(relations, names, sources)


def _text(comment: str | None) -> str:
    text = " ".join((comment or "").split())
    return text or "_(no description)_"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m warehouse.dictionary", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--check", action="store_true", help="fail if the file is out of date")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="Markdown file")
    args = parser.parse_args(argv)
    try:
        text = generate()
    except AnnexError as exc:
        print(f"cannot generate the data dictionary: {exc}", file=sys.stderr)
        return 2
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(
                f"{args.output} is out of date with warehouse/migrations and warehouse/marts: "
                "run `uv run python -m warehouse.dictionary` and commit the result",
                file=sys.stderr,
            )
            return 1
        print(f"{args.output} is up to date")
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

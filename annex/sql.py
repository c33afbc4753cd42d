"""``annex sql``: analysts query the published, read-only copy of the warehouse.

The live file has one writer at a time; an analyst holding it open would block the next
scheduled collection. So queries go to the copy annex publishes after every successful write
(``warehouse.published_path``), which any number of readers may open at once.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TextIO

import duckdb
import orjson
import pyarrow as pa
import pyarrow.csv as pa_csv
from rich.console import Console
from rich.table import Table

from annex.errors import QueryError
from annex.settings import Settings

TABLE_ROW_LIMIT = 1000
"""Rows printed in table format; use --format csv/json for everything."""

HELP = """\
Statements end with ';'. Commands:
  .tables            list tables and views with their descriptions
  .describe NAME     columns of a table or view, with their descriptions
  .format FMT        table | csv | json
  .quit              leave (or Ctrl-D)
Start with: select * from marts.fleet_summary;"""


def run_query(settings: Settings, query: str, *, output_format: str = "table") -> int:
    """Run one query against the published copy and print its result; exit code 0 or raises."""
    from warehouse import Warehouse

    with Warehouse(settings.warehouse).reader() as con:
        _execute_and_print(con, query, output_format, sys.stdout)
    return 0


def run_shell(settings: Settings, *, output_format: str = "table") -> int:
    """A small interactive SQL shell over the published copy."""
    from warehouse import Warehouse

    with contextlib.suppress(ImportError):  # line editing and history for input()
        import readline  # noqa: F401
    with Warehouse(settings.warehouse).reader() as con:
        print(f"annex sql: {settings.warehouse.resolved_published_path} (read-only)")
        print(HELP)
        buffer: list[str] = []
        while True:
            try:
                line = input("annex> " if not buffer else "  ...> ")
            except EOFError:
                print()
                return 0
            except KeyboardInterrupt:
                print()
                buffer.clear()
                continue
            stripped = line.strip()
            if not buffer and stripped.startswith("."):
                if stripped in (".quit", ".exit"):
                    return 0
                output_format = _dot_command(con, stripped, output_format)
                continue
            buffer.append(line)
            if stripped.endswith(";"):
                query = "\n".join(buffer)
                buffer.clear()
                try:
                    _execute_and_print(con, query, output_format, sys.stdout)
                except QueryError as exc:
                    print(f"error: {exc.message}", file=sys.stderr)


def _dot_command(con: duckdb.DuckDBPyConnection, command: str, output_format: str) -> str:
    name, _, argument = command.partition(" ")
    argument = argument.strip()
    try:
        if name == ".tables":
            _execute_and_print(con, TABLES_QUERY, "table", sys.stdout)
        elif name == ".describe" and argument:
            schema, _, table = argument.rpartition(".")
            _execute_and_print(
                con,
                COLUMNS_QUERY,
                "table",
                sys.stdout,
                parameters=[schema or "main", table],
            )
        elif name == ".format" and argument in ("table", "csv", "json"):
            return argument
        else:
            print(HELP)
    except QueryError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
    return output_format


TABLES_QUERY = """
select schema_name || '.' || table_name as name, 'table' as kind, comment as description
from duckdb_tables() where schema_name in ('core', 'marts', 'audit', 'raw')
union all
select schema_name || '.' || view_name, 'view', comment
from duckdb_views() where schema_name in ('core', 'marts', 'audit', 'raw') and not internal
order by name
"""

COLUMNS_QUERY = """
select column_name as column, data_type as type, comment as description
from duckdb_columns() where schema_name = ? and table_name = ?
order by column_index
"""


def _execute_and_print(
    con: duckdb.DuckDBPyConnection,
    query: str,
    output_format: str,
    out: TextIO,
    parameters: list[object] | None = None,
) -> None:
    try:
        relation = con.sql(query, params=parameters)
        if relation is None:  # a statement without a result (SET, PRAGMA, ...)
            return
        reader = relation.to_arrow_reader(batch_size=10_000)
    except duckdb.Error as exc:
        raise QueryError(str(exc).strip(), hint="'.tables' lists what there is to query") from None
    if output_format == "csv":
        _write_csv(reader, out)
    elif output_format == "json":
        _write_json(reader, out)
    else:
        _write_table(reader, out)


def _write_csv(reader: pa.RecordBatchReader, out: TextIO) -> None:
    """CSV with a header row, streamed batch by batch."""
    header = True
    for batch in reader:
        sink = pa.BufferOutputStream()
        pa_csv.write_csv(batch, sink, write_options=pa_csv.WriteOptions(include_header=header))
        out.write(sink.getvalue().to_pybytes().decode("utf-8"))
        header = False
    if header:  # no rows at all: still print the header
        out.write(",".join(f'"{name}"' for name in reader.schema.names) + "\n")
    out.flush()


def _write_json(reader: pa.RecordBatchReader, out: TextIO) -> None:
    """A JSON array of objects, streamed batch by batch (dates and times as ISO 8601)."""
    out.write("[")
    first = True
    for batch in reader:
        for row in batch.to_pylist():
            out.write(("\n  " if first else ",\n  ") + _json_row(row))
            first = False
    out.write("\n]\n" if not first else "]\n")
    out.flush()


def _json_row(row: dict[str, object]) -> str:
    return orjson.dumps(row, default=str, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")


def _write_table(reader: pa.RecordBatchReader, out: TextIO) -> None:
    table = Table(show_lines=False, header_style="bold")
    for field in reader.schema:
        justify = (
            "right"
            if pa.types.is_integer(field.type)
            or pa.types.is_floating(field.type)
            or pa.types.is_decimal(field.type)
            else "left"
        )
        table.add_column(field.name, justify=justify, overflow="fold")
    shown = 0
    total = 0
    for batch in reader:
        total += batch.num_rows
        for row in batch.to_pylist():
            if shown >= TABLE_ROW_LIMIT:
                break
            table.add_row(*(_cell(value) for value in row.values()))
            shown += 1
    console = Console(file=out, width=max(Console(file=out).width, 100))
    console.print(table)
    note = f"{total:,} row{'s' if total != 1 else ''}"
    if shown < total:
        note += f" ({shown:,} shown; use --format csv or json for all)"
    console.print(note, style="dim")


def _cell(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e15 else f"{value:.4e}"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    return str(value)

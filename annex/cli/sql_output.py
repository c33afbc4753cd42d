"""``annex sql``: analysts query the published, read-only copy of the warehouse.

The live file has one writer at a time; an analyst holding it open would block the next
scheduled collection. So queries go to the copy annex publishes after every successful write
(``warehouse.published_path``), which any number of readers may open at once.

``annex sql`` is annex's DuckDB command line: it links the same DuckDB library that wrote the
warehouse, so its storage version always matches the file (a separately installed ``duckdb``
CLI of another version may refuse to open it or, worse, upgrade it).

What it prints is exact, whatever the type:

* **Numbers** as stored: the shortest text that reads back to the same double (``123456.789``,
  never ``1.235e+05``), decimals with their scale, no thousands separators (a figure can be
  pasted back into a query).
* **Nested values** (LIST, STRUCT, MAP, JSON) as JSON text in CSV and in the table, and as JSON
  values in JSON (a MAP with text keys as an object); BLOBs as base64; intervals as ISO 8601
  durations; NaN and infinities as the strings ``NaN``, ``Infinity``, ``-Infinity`` in JSON,
  which has no number for them.
* **Table format** fits the terminal: no header is ever wrapped mid-word; a result too wide for
  the terminal is shown one record at a time (``-[ RECORD n ]-``, as psql's expanded mode).
  Piped output is never wrapped.

Dot-commands (``.tables [schema]``, ``.describe NAME``) work in the shell and with ``-c``.
"""

from __future__ import annotations

import base64
import contextlib
import difflib
import math
import struct
import sys
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any, TextIO

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
FORMATS = ("table", "csv", "json")
SCHEMAS = ("core", "marts", "audit", "raw")
"""The schemas an analyst sees: ``.tables`` lists them; ``.describe`` looks a bare name up in
them, in this order."""

HELP = """\
Statements end with ';'. Commands (also with -c):
  .tables [SCHEMA]   list tables and views with their descriptions
  .describe NAME     columns of a table or view, with their descriptions
  .format FMT        table | csv | json
  .quit              leave (or Ctrl-D)
Start with: select * from marts.fleet_summary;"""


def run_query(settings: Settings, query: str, *, output_format: str = "table") -> int:
    """Run one query or dot-command against the published copy and print its result.

    Returns exit code 0 or raises ``QueryError`` (exit 6)."""
    from warehouse import Warehouse

    with Warehouse(settings.warehouse).reader() as con:
        if query.strip().startswith("."):
            dot_command(con, query.strip(), output_format, sys.stdout)
        else:
            execute_and_print(con, query, output_format, sys.stdout)
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
            try:
                if not buffer and stripped.startswith("."):
                    if stripped in (".quit", ".exit"):
                        return 0
                    output_format = dot_command(con, stripped, output_format, sys.stdout)
                    continue
                buffer.append(line)
                if stripped.endswith(";"):
                    query = "\n".join(buffer)
                    buffer.clear()
                    execute_and_print(con, query, output_format, sys.stdout)
            except QueryError as exc:
                print(f"error: {exc.message}", file=sys.stderr)
                if exc.hint:
                    print(f"hint: {exc.hint}", file=sys.stderr)


def dot_command(
    con: duckdb.DuckDBPyConnection, command: str, output_format: str, out: TextIO
) -> str:
    """Run one dot-command; returns the output format in effect afterwards.

    An unknown command, a missing argument or an unknown table raises ``QueryError``."""
    name, _, argument = command.partition(" ")
    argument = argument.strip().rstrip(";").strip()
    if name == ".tables":
        if argument and argument not in SCHEMAS:
            raise QueryError(
                f"no schema named {argument!r}", hint=f"the schemas are {', '.join(SCHEMAS)}"
            )
        schemas = [argument] if argument else list(SCHEMAS)
        execute_and_print(con, TABLES_QUERY, output_format, out, parameters=[schemas])
    elif name == ".describe":
        if not argument:
            raise QueryError(
                ".describe needs a table or view name", hint="e.g. .describe marts.gpus"
            )
        schema, table = _resolve_relation(con, argument)
        execute_and_print(con, COLUMNS_QUERY, output_format, out, parameters=[schema, table])
    elif name == ".format":
        if argument not in FORMATS:
            raise QueryError(f"unknown format {argument!r}", hint=f"one of {', '.join(FORMATS)}")
        return argument
    elif name == ".help":
        print(HELP, file=out)
    else:
        raise QueryError(f"unknown command {name!r}", hint=HELP.split("\n", 1)[1])
    return output_format


def _resolve_relation(con: duckdb.DuckDBPyConnection, name: str) -> tuple[str, str]:
    """``schema.table`` of a table or view; a bare name is looked up in ``SCHEMAS`` in order.

    An unknown name is an error that suggests the closest names there are."""
    known = [
        (schema, table)
        for schema, table in con.execute(RELATIONS_QUERY, [list(SCHEMAS)]).fetchall()
    ]
    schema, _, table = name.rpartition(".")
    for candidate in known:
        if (schema and candidate == (schema, table)) or (not schema and candidate[1] == table):
            return candidate
    full_names = [f"{s}.{t}" for s, t in known]
    close = difflib.get_close_matches(name, full_names, n=3, cutoff=0.6)
    if not schema:
        close += [f"{s}.{t}" for s, t in known if t in difflib.get_close_matches(table, [t])]
    suggestion = ", ".join(dict.fromkeys(close)) if close else None
    raise QueryError(
        f"no table or view named {name!r}",
        hint=(f"did you mean {suggestion}? " if suggestion else "")
        + "'.tables' lists the tables and views",
    )


RELATIONS_QUERY = """
select schema_name, table_name from duckdb_tables()
where schema_name in (select unnest($1::varchar[]))
union all
select schema_name, view_name from duckdb_views()
where schema_name in (select unnest($1::varchar[])) and not internal
"""

TABLES_QUERY = """
select * from (
  select schema_name || '.' || table_name as name, 'table' as kind, comment as description
  from duckdb_tables() where schema_name in (select unnest($1::varchar[]))
  union all
  select schema_name || '.' || view_name, 'view', comment
  from duckdb_views() where schema_name in (select unnest($1::varchar[])) and not internal
) order by name
"""

COLUMNS_QUERY = """
select column_name as column, data_type as type, comment as description
from duckdb_columns() where schema_name = ? and table_name = ?
order by column_index
"""


def execute_and_print(
    con: duckdb.DuckDBPyConnection,
    query: str,
    output_format: str,
    out: TextIO,
    parameters: list[object] | None = None,
) -> None:
    """Run ``query`` and print its result in ``output_format``; a DuckDB error is a
    ``QueryError`` with its message."""
    try:
        relation = con.sql(query, params=parameters)
        if relation is None:  # a statement without a result (SET, PRAGMA, ...)
            return
        json_columns = {
            name
            for name, kind in zip(relation.columns, relation.types, strict=True)
            if str(kind) == "JSON"
        }
        reader = relation.to_arrow_reader(batch_size=10_000)
    except duckdb.Error as exc:
        raise QueryError(str(exc).strip(), hint="'.tables' lists what there is to query") from None
    writers: dict[str, Callable[[pa.RecordBatchReader, set[str], TextIO], None]] = {
        "csv": _write_csv,
        "json": _write_json,
        "table": _write_table,
    }
    try:
        writers[output_format](reader, json_columns, out)
    except duckdb.Error as exc:  # raised while streaming the result
        raise QueryError(str(exc).strip(), hint="'.tables' lists what there is to query") from None


# -- values -------------------------------------------------------------------------------


def _needs_text(field: pa.Field, json_columns: set[str]) -> bool:
    """Columns Arrow's CSV writer cannot write exactly: nested, JSON, binary, intervals."""
    kind = field.type
    return (
        field.name in json_columns
        or pa.types.is_nested(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_fixed_size_binary(kind)
        or pa.types.is_interval(kind)
        or pa.types.is_duration(kind)
    )


def json_value(value: Any, kind: pa.DataType, *, is_json: bool = False) -> Any:
    """``value`` (from ``to_pylist``) as what ``orjson`` writes exactly.

    Decimals and float32 keep their digits (as raw JSON numbers), MAPs with text keys become
    objects, JSON text is embedded as JSON, BLOBs are base64, intervals ISO 8601 durations."""
    if value is None:
        return None
    if is_json:
        return orjson.Fragment(value.encode("utf-8") if isinstance(value, str) else value)
    if pa.types.is_map(kind):
        entries = [(json_value(k, kind.key_type), json_value(v, kind.item_type)) for k, v in value]
        if all(isinstance(k, str) for k, _ in entries):
            return dict(entries)
        return [[k, v] for k, v in entries]
    if pa.types.is_struct(kind):
        return {
            kind.field(i).name: json_value(value[kind.field(i).name], kind.field(i).type)
            for i in range(kind.num_fields)
        }
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return [json_value(item, kind.value_type) for item in value]
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if pa.types.is_float32(kind) or pa.types.is_float16(kind):
            return orjson.Fragment(_float32_text(value))
        return value
    if isinstance(value, Decimal):
        return orjson.Fragment(str(value).encode())
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, pa.MonthDayNano):
        return _iso_duration(value.months, value.days, value.nanoseconds)
    return value


def _float32_text(value: float) -> bytes:
    """The shortest text that reads back to the same float32 (1.1, not 1.100000023841858)."""
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == value:
            return repr(float(text)).encode()
    return repr(value).encode()


def _iso_duration(months: int, days: int, nanoseconds: int) -> str:
    seconds = Decimal(nanoseconds) / Decimal(1_000_000_000)
    text = "P"
    if months:
        text += f"{months}M"
    if days or (not months and not seconds):
        text += f"{days}D"
    if seconds:
        text += f"T{seconds.normalize():f}S"
    return text


def _json_text(value: Any, kind: pa.DataType, *, is_json: bool) -> str | None:
    if value is None:
        return None
    converted = json_value(value, kind, is_json=is_json)
    if isinstance(converted, str) and not (is_json or pa.types.is_nested(kind)):
        return converted  # base64, durations: text already
    return orjson.dumps(converted, default=str).decode("utf-8")


def _text_batch(batch: pa.RecordBatch, json_columns: set[str]) -> pa.RecordBatch:
    """``batch`` with every column Arrow's CSV writer cannot write exactly as text."""
    columns = []
    fields = []
    for field, column in zip(batch.schema, batch.columns, strict=True):
        if _needs_text(field, json_columns):
            is_json = field.name in json_columns
            column = pa.array(
                [_json_text(v, field.type, is_json=is_json) for v in column.to_pylist()],
                type=pa.string(),
            )
            field = pa.field(field.name, pa.string())
        columns.append(column)
        fields.append(field)
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))


def cell_text(value: Any, kind: pa.DataType, *, is_json: bool = False) -> str:
    """One value as the table shows it: exact, ``NULL`` for null, nested values as JSON."""
    if value is None:
        return "NULL"
    if isinstance(value, float) and not (is_json or pa.types.is_nested(kind)):
        if pa.types.is_float32(kind) or pa.types.is_float16(kind):
            return _plain_number(float(_float32_text(value)))
        return _plain_number(value)
    if isinstance(value, Decimal):
        return f"{value:f}"
    if is_json or pa.types.is_nested(kind) or isinstance(value, bytes | pa.MonthDayNano):
        return _json_text(value, kind, is_json=is_json) or "NULL"
    return str(value)


def _plain_number(value: float) -> str:
    """The shortest round-trip text of ``value``, without an exponent from 1e-6 to 1e21."""
    if math.isnan(value) or math.isinf(value):
        return repr(value)
    text = repr(value)
    if "e" in text and (value == 0 or 1e-6 <= abs(value) < 1e21):
        text = f"{Decimal(text):f}"
    if text.endswith(".0"):
        text = text[:-2]
    return text


# -- writers ------------------------------------------------------------------------------


def _write_csv(reader: pa.RecordBatchReader, json_columns: set[str], out: TextIO) -> None:
    """CSV with a header row, streamed batch by batch."""
    header = True
    for batch in reader:
        sink = pa.BufferOutputStream()
        pa_csv.write_csv(
            _text_batch(batch, json_columns),
            sink,
            write_options=pa_csv.WriteOptions(include_header=header),
        )
        out.write(sink.getvalue().to_pybytes().decode("utf-8"))
        header = False
    if header:  # no rows at all: still print the header
        out.write(",".join(f'"{name}"' for name in reader.schema.names) + "\n")
    out.flush()


def _write_json(reader: pa.RecordBatchReader, json_columns: set[str], out: TextIO) -> None:
    """A JSON array of objects, streamed batch by batch (dates and times as ISO 8601)."""
    fields = list(reader.schema)
    out.write("[")
    first = True
    for batch in reader:
        for row in batch.to_pylist():
            record = {
                field.name: json_value(
                    row[field.name], field.type, is_json=field.name in json_columns
                )
                for field in fields
            }
            text = orjson.dumps(record, default=str, option=orjson.OPT_NON_STR_KEYS)
            out.write(("\n  " if first else ",\n  ") + text.decode("utf-8"))
            first = False
    out.write("\n]\n" if not first else "]\n")
    out.flush()


def _rows(
    reader: pa.RecordBatchReader, json_columns: set[str], limit: int
) -> Iterator[list[str] | int]:
    """The first ``limit`` rows as cell texts, then the total row count."""
    fields = list(reader.schema)
    total = 0
    for batch in reader:
        for row in batch.to_pylist():
            if total < limit:
                yield [
                    cell_text(row[f.name], f.type, is_json=f.name in json_columns) for f in fields
                ]
            total += 1
    yield total


def _write_table(reader: pa.RecordBatchReader, json_columns: set[str], out: TextIO) -> None:
    """A table as wide as the terminal (unbounded when piped); records one by one when the
    columns' names alone do not fit."""
    fields = list(reader.schema)
    rows: list[list[str]] = []
    total = 0
    for item in _rows(reader, json_columns, TABLE_ROW_LIMIT):
        if isinstance(item, int):
            total = item
        else:
            rows.append(item)
    terminal = out.isatty() if hasattr(out, "isatty") else False
    natural = [
        max([len(field.name)] + [len(row[i]) for row in rows]) for i, field in enumerate(fields)
    ]
    frame = 3 * len(fields) + 1  # "│ " + " │ " separators + "│"
    if terminal:
        width = Console(file=out).width
        needed = sum(len(field.name) for field in fields) + frame
        if needed > width:
            _write_records(fields, rows, out)
            _write_note(out, len(rows), total)
            return
    else:
        width = sum(natural) + frame
    table = Table(show_lines=False, header_style="bold")
    for field, size in zip(fields, natural, strict=True):
        numeric = (
            pa.types.is_integer(field.type)
            or pa.types.is_floating(field.type)
            or pa.types.is_decimal(field.type)
        )
        table.add_column(
            field.name,
            justify="right" if numeric else "left",
            overflow="fold",
            min_width=len(field.name),
            no_wrap=not terminal,
            max_width=None if terminal else size,
        )
    for row in rows:
        table.add_row(*row)
    console = Console(
        file=out, width=width, force_terminal=terminal, no_color=not terminal, soft_wrap=False
    )
    console.print(table)
    _write_note(out, len(rows), total)


def _write_records(fields: list[pa.Field], rows: list[list[str]], out: TextIO) -> None:
    """psql's expanded layout: one ``name | value`` line per column, a rule per record."""
    name_width = max(len(field.name) for field in fields)
    for number, row in enumerate(rows, start=1):
        out.write(f"-[ RECORD {number} ]-\n")
        for field, value in zip(fields, row, strict=True):
            out.write(f"{field.name.ljust(name_width)} | {value}\n")
    out.flush()


def _write_note(out: TextIO, shown: int, total: int) -> None:
    note = f"{total} row{'s' if total != 1 else ''}"
    if shown < total:
        note += f" ({shown} shown; use --format csv or json for all)"
    out.write(note + "\n")
    out.flush()

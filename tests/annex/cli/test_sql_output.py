"""``annex sql`` prints every type exactly, fits the terminal, and answers dot-commands
(issue 37 item 2)."""

from __future__ import annotations

import csv
import io
import json
import re

import duckdb
import pytest

from annex.cli.sql_output import dot_command, execute_and_print
from annex.errors import QueryError

EVERY_TYPE = """
select [1, 2] as l, {'a': 1, 'b': [1.5]} as s, map(['k'], [2]) as m, map([1], ['x']) as mi,
  '{"x": [1, {"y": null}]}'::json as j, 123456.789::double as d, 0.1::double as tenth,
  1e-7::double as tiny, 1e300 as huge, 1.50::decimal(10, 2) as dec, 1.1::float as f32,
  'ab'::blob as b, interval 3 day + interval 90 minute as i, 'nan'::double as n,
  timestamptz '2026-01-01 00:00:00+00' as t, date '2026-01-02' as day, null::integer as nothing
"""


@pytest.fixture()
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute("create schema marts")
    connection.execute("create table marts.gpus (gpu_uuid varchar, node_name varchar)")
    connection.execute("comment on table marts.gpus is 'one row per GPU'")
    connection.execute("comment on column marts.gpus.gpu_uuid is 'the GPU'")
    connection.execute("create view marts.gpu_daily as select 1 as one")
    return connection


def output(con: duckdb.DuckDBPyConnection, query: str, fmt: str) -> str:
    out = io.StringIO()
    execute_and_print(con, query, fmt, out)
    return out.getvalue()


def test_csv_writes_nested_json_and_binary_values_exactly(con: duckdb.DuckDBPyConnection) -> None:
    rows = list(csv.DictReader(io.StringIO(output(con, EVERY_TYPE, "csv"))))
    (row,) = rows
    assert json.loads(row["l"]) == [1, 2]
    assert json.loads(row["s"]) == {"a": 1, "b": [1.5]}
    assert json.loads(row["m"]) == {"k": 2}
    assert json.loads(row["mi"]) == [[1, "x"]]
    assert json.loads(row["j"]) == {"x": [1, {"y": None}]}
    assert row["d"] == "123456.789"
    assert row["tenth"] == "0.1"
    assert float(row["tiny"]) == 1e-7
    assert float(row["huge"]) == 1e300
    assert row["dec"] == "1.50"
    assert row["f32"] == "1.1"
    assert row["b"] == "YWI="  # base64 of b"ab"
    assert row["i"] == "P3DT5400S"
    assert row["nothing"] == ""


def test_json_keeps_types_and_digits(con: duckdb.DuckDBPyConnection) -> None:
    (row,) = json.loads(output(con, EVERY_TYPE, "json"))
    assert row["l"] == [1, 2]
    assert row["s"] == {"a": 1, "b": [1.5]}
    assert row["m"] == {"k": 2}
    assert row["j"] == {"x": [1, {"y": None}]}  # JSON embedded, not a string of JSON
    assert row["d"] == 123456.789
    assert row["tiny"] == 1e-7
    assert row["f32"] == 1.1
    assert row["n"] == "NaN"
    assert row["nothing"] is None
    assert '"dec":1.50' in output(con, EVERY_TYPE, "json").replace(" ", "")
    assert row["t"].startswith("2026-01-01T00:00:00")


def test_table_prints_numbers_exactly_and_piped_output_unwrapped(
    con: duckdb.DuckDBPyConnection,
) -> None:
    text = output(con, EVERY_TYPE, "table")
    assert "123456.789" in text
    assert "e+05" not in text
    assert "1e-07" in text  # exact, its exponent kept below 1e-6
    assert "1.50" in text
    lines = text.splitlines()
    # piped: one line per row, every header whole on the header line
    header = lines[1]
    for name in ("l", "s", "m", "j", "dec", "f32", "nothing"):
        assert f" {name} " in header
    assert len([line for line in lines if "123456.789" in line]) == 1
    assert lines[-1] == "1 row"


def test_table_never_wraps_a_header_mid_word(con: duckdb.DuckDBPyConnection) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    import os

    os.environ["COLUMNS"] = "60"
    try:
        narrow = Terminal()
        execute_and_print(
            con,
            "select 1 as gpus_allocated_workload, 2 as capacity_gpu_hours, 3 as a,"
            " 'a long value' as physical_gpus_of_the_node_pool",
            "table",
            narrow,
        )
        wide = Terminal()
        execute_and_print(con, "select 1 as gpus_allocated_workload, 2 as b", "table", wide)
    finally:
        del os.environ["COLUMNS"]
    # too wide for 60 columns: one record at a time, names whole
    assert "-[ RECORD 1 ]-" in narrow.getvalue()
    assert "physical_gpus_of_the_node_pool | a long value" in narrow.getvalue()
    assert "gpus_allocated_workload" in wide.getvalue()
    visible = re.sub(r"\x1b\[[0-9;]*m", "", wide.getvalue())  # the terminal's bold header
    assert all(len(line) <= 60 for line in visible.splitlines())


def test_dot_commands_list_describe_and_suggest(con: duckdb.DuckDBPyConnection) -> None:
    out = io.StringIO()
    dot_command(con, ".tables marts", "csv", out)
    names = [row["name"] for row in csv.DictReader(io.StringIO(out.getvalue()))]
    assert names == ["marts.gpu_daily", "marts.gpus"]
    out = io.StringIO()
    dot_command(con, ".describe gpus", "csv", out)
    columns = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [c["column"] for c in columns] == ["gpu_uuid", "node_name"]
    assert columns[0]["description"] == "the GPU"
    with pytest.raises(QueryError) as unknown:
        dot_command(con, ".describe marts.gpu", "table", io.StringIO())
    assert "marts.gpu" in unknown.value.message
    assert "marts.gpus" in (unknown.value.hint or "")
    with pytest.raises(QueryError):
        dot_command(con, ".tables nope", "table", io.StringIO())
    with pytest.raises(QueryError):
        dot_command(con, ".frobnicate", "table", io.StringIO())
    assert dot_command(con, ".format json", "table", io.StringIO()) == "json"

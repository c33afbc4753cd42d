"""The data dictionary is generated from the migrations' comments and stays in sync."""

from __future__ import annotations

from pathlib import Path

import pytest

from annex.settings import WarehouseSettings
from tests.helpers.warehouse_things import make_migrations_dir
from warehouse import Warehouse
from warehouse.dictionary import (
    DEFAULT_OUTPUT,
    describe,
    generate,
    main,
    missing_comments,
    render,
)


def test_committed_dictionary_matches_the_migrations() -> None:
    committed = DEFAULT_OUTPUT.read_text(encoding="utf-8") if DEFAULT_OUTPUT.exists() else ""
    assert committed == generate(), (
        "docs/data-dictionary.md is out of date: run `uv run python -m warehouse.dictionary`"
    )


def test_every_documented_table_view_and_column_has_a_comment(tmp_path: Path) -> None:
    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb"))
    with wh.writer() as con:
        relations = describe(con)
    assert {r.schema for r in relations} >= {"audit"}
    assert missing_comments(relations) == []


def test_missing_comments_are_found_for_tables_views_columns_and_macros(tmp_path: Path) -> None:
    migrations = make_migrations_dir(tmp_path / "migrations")
    (migrations / "0003_undocumented.sql").write_text(
        "CREATE TABLE marts.bare (a INTEGER, b INTEGER);\n"
        "COMMENT ON COLUMN marts.bare.a IS 'documented';\n"
        "CREATE VIEW marts.v_bare AS SELECT a FROM marts.bare;\n"
        "COMMENT ON VIEW marts.v_bare IS 'a view';\n"
        "CREATE TABLE raw.anything (x INTEGER);\n"
        "CREATE MACRO marts.twice(x) AS 2 * x;\n"
        "CREATE MACRO marts.thrice(x) AS 3 * x;\n"
        "COMMENT ON MACRO marts.thrice IS 'x times 3';\n"
    )
    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb"), migrations_dir=migrations)
    with wh.writer() as con:
        relations = describe(con)
    assert missing_comments(relations) == [
        "marts.bare",
        "marts.bare.b",
        "marts.twice",
        "marts.v_bare.a",
    ]
    thrice = render(relations, ["0003_undocumented.sql"])
    assert "### Macro `marts.thrice(x)`\n\nx times 3\n" in thrice


def test_view_columns_take_comments_and_appear_in_the_dictionary(tmp_path: Path) -> None:
    migrations = make_migrations_dir(tmp_path / "migrations")
    (migrations / "0003_view.sql").write_text(
        "CREATE VIEW marts.v_things AS SELECT thing_key, value FROM core.things;\n"
        "COMMENT ON VIEW marts.v_things IS 'Things for analysts.';\n"
        "COMMENT ON COLUMN marts.v_things.thing_key IS 'Key | with a pipe.';\n"
        "COMMENT ON COLUMN marts.v_things.value IS 'The value.';\n"
    )
    text = generate(migrations)
    assert "### View `marts.v_things`\n\nThings for analysts." in text
    assert "| `thing_key` | `VARCHAR` | Key \\| with a pipe. |" in text
    assert "### Table `core.things`" in text
    assert text.index("## Schema `core`") < text.index("## Schema `marts`")


def test_check_mode_fails_when_the_file_drifts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "dictionary.md"
    assert main(["--output", str(out)]) == 0
    assert main(["--check", "--output", str(out)]) == 0
    out.write_text(out.read_text() + "\nhand edit\n")
    assert main(["--check", "--output", str(out)]) == 1
    assert "out of date" in capsys.readouterr().err

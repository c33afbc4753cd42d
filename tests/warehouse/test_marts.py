"""The ``marts`` views as living SQL: one file each under ``warehouse/marts``, re-created on
migrate, so changing a view needs no migration."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from annex.errors import MigrationError
from annex.settings import WarehouseSettings
from tests.helpers.warehouse_things import make_migrations_dir
from warehouse import Warehouse
from warehouse.dictionary import generate
from warehouse.migrate import default_marts_dir, discover_mart_views

MARTS_DIR = default_marts_dir(None)


def _views(con: duckdb.DuckDBPyConnection) -> dict[str, str | None]:
    rows = con.execute(
        "SELECT view_name, comment FROM duckdb_views() WHERE schema_name = 'marts' AND NOT internal"
    ).fetchall()
    return dict(rows)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    """annex's own warehouse, freshly migrated (shared: these tests only read it or copy it)."""
    wh = Warehouse(WarehouseSettings(path=tmp_path_factory.mktemp("wh") / "w.duckdb"))
    wh.migrate()
    return wh


def test_every_marts_view_of_a_fresh_warehouse_has_its_file(migrated: Warehouse) -> None:
    with duckdb.connect(str(migrated.path), read_only=True) as con:
        views = _views(con)
        recorded = dict(con.execute("SELECT name, checksum FROM meta.marts_views").fetchall())
    files = {v.name: v.checksum for v in discover_mart_views(MARTS_DIR)}
    assert views, "the warehouse has marts views"
    assert set(views) == set(files)
    assert recorded == files
    assert all(comment for comment in views.values())


def test_views_are_created_after_the_marts_views_they_read() -> None:
    order = [v.name for v in discover_mart_views(MARTS_DIR)]
    for position, view in enumerate(discover_mart_views(MARTS_DIR)):
        for dependency in view.depends_on & set(order):
            if dependency != view.name:
                assert order.index(dependency) < position, (view.name, dependency)


def _copy(migrated: Warehouse, tmp_path: Path) -> Path:
    path = tmp_path / "w.duckdb"
    shutil.copy(migrated.path, path)
    return path


def test_an_edited_view_file_changes_the_view_on_migrate_without_a_migration(
    migrated: Warehouse, tmp_path: Path
) -> None:
    marts = shutil.copytree(MARTS_DIR, tmp_path / "marts")
    view = marts / "collections.sql"
    view.write_text(
        view.read_text(encoding="utf-8").replace(
            "CREATE OR REPLACE VIEW marts.collections AS\nSELECT ",
            "CREATE OR REPLACE VIEW marts.collections AS\nSELECT 'edited' AS marker, ",
        )
        + "COMMENT ON COLUMN marts.collections.marker IS 'Added by editing the file.';\n",
        encoding="utf-8",
    )
    wh = Warehouse(WarehouseSettings(path=_copy(migrated, tmp_path)), marts_dir=marts)
    with duckdb.connect(str(wh.path), read_only=True) as con:
        migrations_before = con.execute("SELECT * FROM meta.migrations").fetchall()

    assert wh.migrate() == []  # no migration ran ...

    with duckdb.connect(str(wh.path), read_only=True) as con:
        columns = con.execute(
            "SELECT column_name, comment FROM duckdb_columns()"
            " WHERE schema_name = 'marts' AND table_name = 'collections' ORDER BY column_index"
        ).fetchall()
        assert con.execute("SELECT * FROM meta.migrations").fetchall() == migrations_before
        views = _views(con)
    assert columns[0] == ("marker", "Added by editing the file.")  # ... yet the view changed
    assert all(comment for _, comment in columns)
    assert views["collections"]  # the view's own comment came back with it


def test_an_unchanged_set_of_files_is_not_recreated(migrated: Warehouse, tmp_path: Path) -> None:
    wh = Warehouse(WarehouseSettings(path=_copy(migrated, tmp_path)))
    with duckdb.connect(str(wh.path), read_only=True) as con:
        before = con.execute("SELECT * FROM meta.marts_views ORDER BY name").fetchall()
    wh.migrate()
    with duckdb.connect(str(wh.path), read_only=True) as con:
        assert con.execute("SELECT * FROM meta.marts_views ORDER BY name").fetchall() == before


def test_a_warehouse_migrated_before_living_views_gets_them_from_the_files(
    migrated: Warehouse, tmp_path: Path
) -> None:
    """A file migrated by an older annex has no ``meta.marts_views`` and views as the
    migrations left them: the next migrate re-creates every view from its file."""
    path = _copy(migrated, tmp_path)
    with duckdb.connect(str(path)) as con:
        con.execute("DROP TABLE meta.marts_views")
        con.execute("CREATE OR REPLACE VIEW marts.collections AS SELECT 1 AS stale")
    wh = Warehouse(WarehouseSettings(path=path))
    wh.migrate()
    with duckdb.connect(str(path), read_only=True) as con:
        columns = con.execute(
            "SELECT column_name FROM duckdb_columns()"
            " WHERE schema_name = 'marts' AND table_name = 'collections'"
        ).fetchall()
        assert con.execute("SELECT count(*) FROM meta.marts_views").fetchone() == (
            len(discover_mart_views(MARTS_DIR)),
        )
    assert ("stale",) not in columns and ("collection_id",) in columns


def _things_marts(tmp_path: Path) -> tuple[Path, Path]:
    """A test's migrations folder (core.things) and its views folder beside it."""
    migrations = make_migrations_dir(tmp_path / "migrations")
    marts = tmp_path / "marts"
    marts.mkdir()
    return migrations, marts


def test_views_are_created_in_dependency_order_and_dropped_with_their_file(tmp_path: Path) -> None:
    migrations, marts = _things_marts(tmp_path)
    # a_total reads z_things: alphabetically first, created second.
    (marts / "a_total.sql").write_text(
        "CREATE OR REPLACE VIEW marts.a_total AS SELECT sum(value) AS total FROM marts.z_things;\n"
        "COMMENT ON VIEW marts.a_total IS 'The total.';\n"
    )
    (marts / "z_things.sql").write_text(
        "-- every thing\n"
        "CREATE OR REPLACE VIEW marts.z_things AS SELECT thing_key, value FROM core.things;\n"
    )
    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb"), migrations_dir=migrations)
    assert wh.marts_dir == marts
    assert [v.name for v in discover_mart_views(marts)] == ["z_things", "a_total"]
    wh.migrate()
    with duckdb.connect(str(wh.path), read_only=True) as con:
        assert set(_views(con)) == {"a_total", "z_things"}
    (marts / "a_total.sql").unlink()
    wh.migrate()
    with duckdb.connect(str(wh.path), read_only=True) as con:
        assert set(_views(con)) == {"z_things"}


def test_a_view_file_must_create_the_view_it_is_named_after(tmp_path: Path) -> None:
    _, marts = _things_marts(tmp_path)
    (marts / "things.sql").write_text("CREATE OR REPLACE VIEW marts.other AS SELECT 1 AS a;\n")
    with pytest.raises(MigrationError, match=r"CREATE OR REPLACE VIEW marts\.things"):
        discover_mart_views(marts)


def test_a_failing_view_changes_nothing(tmp_path: Path) -> None:
    migrations, marts = _things_marts(tmp_path)
    (marts / "good.sql").write_text(
        "CREATE OR REPLACE VIEW marts.good AS SELECT thing_key FROM core.things;\n"
    )
    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb"), migrations_dir=migrations)
    wh.migrate()
    (marts / "good.sql").write_text(
        "CREATE OR REPLACE VIEW marts.good AS SELECT value FROM core.things;\n"
    )
    (marts / "bad.sql").write_text(
        "CREATE OR REPLACE VIEW marts.bad AS SELECT nothing FROM core.things;\n"
    )
    with pytest.raises(MigrationError, match=r"bad\.sql"):
        wh.migrate()
    with duckdb.connect(str(wh.path), read_only=True) as con:
        columns = con.execute(
            "SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = 'marts'"
        ).fetchall()
    assert columns == [("good", "thing_key")]


def test_the_dictionary_names_the_file_that_defines_every_mart() -> None:
    text = generate()
    sections = text.split("\n### ")
    marts = [s for s in sections if s.startswith(("Table `marts.", "View `marts."))]
    assert marts
    for section in marts:
        name = section.split("`")[1].removeprefix("marts.")
        if section.startswith("View"):
            assert f"\n\nDefined in `warehouse/marts/{name}.sql`.\n" in section, name
        else:
            assert "\n\nCreated by `warehouse/migrations/" in section, name
            assert "; filled by `warehouse/models/" in section, name


def test_a_shared_rule_is_a_macro_created_before_the_views_that_call_it(tmp_path: Path) -> None:
    """marts/macros/<name>.sql: created before each view calling it; part of its checksum, so
    editing the rule re-creates the views; anything but macros and their comments is refused."""
    migrations, marts = _things_marts(tmp_path)
    (marts / "macros").mkdir()
    rule = marts / "macros" / "doubling.sql"
    rule.write_text(
        "CREATE OR REPLACE MACRO marts.doubled(x) AS x * 2;\n"
        "COMMENT ON MACRO marts.doubled IS 'Twice x.';\n"
    )
    (marts / "things.sql").write_text(
        "CREATE OR REPLACE VIEW marts.things AS SELECT marts.doubled(value) AS value "
        "FROM core.things;\n"
    )
    [view] = discover_mart_views(marts)
    assert view.macros == (rule,)
    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb"), migrations_dir=migrations)
    wh.migrate()
    with duckdb.connect(str(wh.path)) as con:
        con.execute("INSERT INTO core.things VALUES ('t', 21, 'c1', TIMESTAMP '2026-01-01')")
        assert con.execute("SELECT value FROM marts.things").fetchall() == [(42,)]
    rule.write_text("CREATE OR REPLACE MACRO marts.doubled(x) AS x + x + 1;\n")
    assert discover_mart_views(marts)[0].checksum != view.checksum
    wh.migrate()
    with duckdb.connect(str(wh.path), read_only=True) as con:
        assert con.execute("SELECT value FROM marts.things").fetchall() == [(43,)]
    rule.write_text("CREATE OR REPLACE VIEW marts.sneaky AS SELECT 1 AS a;\n")
    with pytest.raises(MigrationError, match=r"doubling\.sql"):
        discover_mart_views(marts)

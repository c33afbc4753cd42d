"""Migrations: order, checksums, refusal of edited files, upgrades, rollback of failures."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import duckdb
import pytest

from annex.errors import MigrationError
from annex.settings import WarehouseSettings
from warehouse import Warehouse, discover_migrations
from warehouse.migrate import DEFAULT_MIGRATIONS_DIR


def _dir_with_foundation(tmp_path: Path) -> Path:
    migrations = tmp_path / "migrations"
    migrations.mkdir()
    shutil.copy(DEFAULT_MIGRATIONS_DIR / "0001_foundation.sql", migrations)
    return migrations


def _dir_before(tmp_path: Path, version: str) -> Path:
    """A migrations folder with annex's migrations older than ``version`` (e.g. "0017"): a
    warehouse as it stood before that one, to add rows the migration must keep."""
    migrations = tmp_path / "migrations"
    migrations.mkdir()
    for path in DEFAULT_MIGRATIONS_DIR.glob("*.sql"):
        if path.name < version:
            shutil.copy(path, migrations)
    return migrations


def _warehouse(tmp_path: Path, migrations: Path) -> Warehouse:
    return Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb"), migrations_dir=migrations)


def _live(wh: Warehouse) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(wh.path), read_only=True)


def test_migrations_apply_in_order_and_record_checksums(tmp_path: Path) -> None:
    migrations = _dir_with_foundation(tmp_path)
    (migrations / "0002_items.sql").write_text("CREATE TABLE core.items (a INTEGER);")
    (migrations / "0003_more.sql").write_text("ALTER TABLE core.items ADD COLUMN b VARCHAR;")
    wh = _warehouse(tmp_path, migrations)

    applied = wh.migrate()

    assert applied == ["0001_foundation.sql", "0002_items.sql", "0003_more.sql"]
    with _live(wh) as con:
        rows = con.execute("SELECT version, name, checksum FROM meta.migrations").fetchall()
        schemas = {r[0] for r in con.execute("SELECT schema_name FROM duckdb_schemas()").fetchall()}
        columns = con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = 'items' "
            "ORDER BY column_index"
        ).fetchall()
    expected = [
        (n, path.name, hashlib.sha256(path.read_bytes()).hexdigest())
        for n, path in enumerate(sorted(migrations.glob("*.sql")), start=1)
    ]
    assert sorted(rows) == expected
    assert {"raw", "core", "marts", "audit", "meta"} <= schemas
    assert columns == [("a",), ("b",)]
    assert wh.migrate() == []


def test_edited_applied_migration_is_refused(tmp_path: Path) -> None:
    migrations = _dir_with_foundation(tmp_path)
    item = migrations / "0002_items.sql"
    item.write_text("CREATE TABLE core.items (a INTEGER);")
    wh = _warehouse(tmp_path, migrations)
    wh.migrate()

    item.write_text("CREATE TABLE core.items (a INTEGER, sneaky VARCHAR);")

    with pytest.raises(MigrationError) as caught:
        wh.migrate()
    assert str(item) in caught.value.message
    assert "new migration" in (caught.value.hint or "")
    with pytest.raises(MigrationError), wh.writer():
        pass


def test_older_warehouse_is_upgraded_on_open(tmp_path: Path) -> None:
    migrations = _dir_with_foundation(tmp_path)
    (migrations / "0002_items.sql").write_text("CREATE TABLE core.items (a INTEGER);")
    wh = _warehouse(tmp_path, migrations)
    with wh.writer() as con:
        con.execute("INSERT INTO core.items VALUES (1), (2)")

    (migrations / "0003_more.sql").write_text(
        "ALTER TABLE core.items ADD COLUMN b VARCHAR DEFAULT 'x';"
    )
    assert wh.status().pending == ("0003_more.sql",)
    with wh.writer() as con:
        rows = con.execute("SELECT a, b FROM core.items ORDER BY a").fetchall()
        versions = con.execute("SELECT version FROM meta.migrations ORDER BY 1").fetchall()

    assert rows == [(1, "x"), (2, "x")]
    assert versions == [(1,), (2,), (3,)]
    assert wh.status().pending == ()


def test_failing_migration_rolls_back_entirely(tmp_path: Path) -> None:
    migrations = _dir_with_foundation(tmp_path)
    (migrations / "0002_items.sql").write_text("CREATE TABLE core.items (a INTEGER);")
    wh = _warehouse(tmp_path, migrations)
    wh.migrate()
    bad = migrations / "0003_bad.sql"
    bad.write_text(
        "CREATE TABLE core.half (a INTEGER);\n"
        "ALTER TABLE core.items ADD COLUMN b INTEGER;\n"
        "INSERT INTO core.items SELECT * FROM no_such_table;\n"
    )

    with pytest.raises(MigrationError) as caught:
        wh.migrate()

    assert str(bad) in caught.value.message
    with _live(wh) as con:
        tables = con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()
        columns = con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = 'items'"
        ).fetchall()
        versions = con.execute("SELECT max(version) FROM meta.migrations").fetchall()
    assert ("half",) not in tables
    assert columns == [("a",)]
    assert versions == [(2,)]
    # Not applied, so it may still be fixed in place.
    bad.write_text("CREATE TABLE core.half (a INTEGER);")
    assert wh.migrate() == ["0003_bad.sql"]


@pytest.mark.parametrize(
    ("names", "problem"),
    [
        (["0001_a.sql", "0003_c.sql"], "expected number 0002"),
        (["0001_a.sql", "0002_b.sql", "0002_c.sql"], "share number 0002"),
        (["0001_a.sql", "2_b.sql"], "not named NNNN_name.sql"),
    ],
)
def test_gaps_duplicates_and_bad_names_are_errors(
    tmp_path: Path, names: list[str], problem: str
) -> None:
    for name in names:
        (tmp_path / name).write_text("SELECT 1;")
    with pytest.raises(MigrationError, match=problem):
        discover_migrations(tmp_path)


def test_transaction_statements_in_a_migration_are_refused(tmp_path: Path) -> None:
    migrations = _dir_with_foundation(tmp_path)
    (migrations / "0002_txn.sql").write_text("BEGIN; CREATE TABLE core.t (a INTEGER); COMMIT;")
    wh = _warehouse(tmp_path, migrations)
    with pytest.raises(MigrationError, match="BEGIN/COMMIT"):
        wh.migrate()
    with _live(wh) as con:
        assert con.execute("SELECT max(version) FROM meta.migrations").fetchall() == [(1,)]


def test_warehouse_newer_than_code_is_refused(tmp_path: Path) -> None:
    migrations = _dir_with_foundation(tmp_path)
    extra = migrations / "0002_items.sql"
    extra.write_text("CREATE TABLE core.items (a INTEGER);")
    wh = _warehouse(tmp_path, migrations)
    wh.migrate()
    extra.unlink()
    with pytest.raises(MigrationError, match="newer annex"):
        wh.migrate()


def test_status_on_missing_file_says_so_and_lists_pending(tmp_path: Path) -> None:
    wh = Warehouse(WarehouseSettings(path=tmp_path / "none.duckdb"))
    status = wh.status()
    assert not status.exists
    assert "no warehouse" in status.read_from
    assert status.pending == tuple(m.name for m in discover_migrations())
    assert "0001_foundation.sql" in status.pending
    assert not (tmp_path / "none.duckdb").exists()
    assert "missing" in status.describe()


def test_default_migrations_apply_cleanly(tmp_path: Path) -> None:
    wh = Warehouse(WarehouseSettings(path=tmp_path / "real.duckdb"))
    applied = wh.migrate()
    assert applied == [m.name for m in discover_migrations()]
    status = wh.status()
    assert status.read_from == "live"
    assert [m.name for m in status.applied] == applied
    assert status.pending == ()
    assert status.problems == ()


def test_migration_that_does_not_parse_names_the_file(tmp_path: Path) -> None:
    migrations = _dir_with_foundation(tmp_path)
    bad = migrations / "0002_typo.sql"
    bad.write_text("CREATE TABLEE core.t (a INTEGER);")
    wh = _warehouse(tmp_path, migrations)
    with pytest.raises(MigrationError, match="not valid SQL") as caught:
        wh.migrate()
    assert str(bad) in caught.value.message


def test_0016_keeps_each_heads_collection_before_dropping_the_facet_history(
    tmp_path: Path,
) -> None:
    """The facet history becomes a view over the payloads; the collection that set each head,
    which the lineage refresh reads, is taken from the old table first."""
    migrations = _dir_before(tmp_path, "0016")
    wh = _warehouse(tmp_path, migrations)
    keys = "'dataset', 'v1', 'datasetType'"
    with wh.writer() as con:
        con.execute(
            f"INSERT INTO core.lineage_facets VALUES ({keys}, 'e2', '2026-01-02', false,"
            " '{}', NULL, 'v1', '2026-01-02', 'c2'),"
            f" ({keys}, 'e1', '2026-01-01', false, '{{}}', NULL, 'v1', '2026-01-01', 'c1')"
        )
        con.execute(
            f"INSERT INTO core.lineage_facet_heads VALUES ({keys}, 'e2', '2026-01-02', false,"
            " '{}', NULL, 'v1')"
        )
    shutil.copy(DEFAULT_MIGRATIONS_DIR / "0016_lineage_facet_history_view.sql", migrations)
    with wh.writer() as con:
        heads = con.execute("SELECT event_id, collection_id FROM core.lineage_facet_heads")
        assert heads.fetchall() == [("e2", "c2")]
        kind = con.execute(
            "SELECT table_type FROM information_schema.tables WHERE table_name = 'lineage_facets'"
        )
        assert kind.fetchall() == [("VIEW",)]


def test_0017_rebuilds_the_lineage_tables_without_key_indexes_keeping_rows_and_comments(
    tmp_path: Path,
) -> None:
    """Events, runs, versions and edges lose their PRIMARY KEY (an ART index held in memory
    whole) and keep their rows, NOT NULL and CHECK constraints, comments and the views over
    them."""
    migrations = _dir_before(tmp_path, "0017")
    wh = _warehouse(tmp_path, migrations)
    tables = ("lineage_events", "lineage_runs", "lineage_dataset_versions", "lineage_run_io")

    def stored(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
        """Each table's rows, and every column's comment."""
        rows = {t: sorted(con.execute(f"SELECT * FROM core.{t}").fetchall()) for t in tables}
        rows["comments"] = con.execute(
            "SELECT table_name, column_name, comment FROM duckdb_columns()"
            " WHERE schema_name = 'core' AND table_name IN ? ORDER BY ALL",
            [list(tables)],
        ).fetchall()
        return rows

    with wh.writer() as con:
        con.execute(
            "INSERT INTO core.lineage_events (event_id, event_time, event_kind, run_id, payload,"
            " day, collection_id, loaded_at) VALUES ('e1', '2026-01-01', 'RunEvent', 'r1',"
            " '{\"eventTime\": \"2026-01-01T00:00:00Z\"}', '2026-01-01', 'c1', '2026-01-02')"
        )
        con.execute(
            "INSERT INTO core.lineage_runs (run_id, state, stage)"
            " VALUES ('r1', 'COMPLETE', 'FINE_TUNING')"
        )
        con.execute(
            "INSERT INTO core.lineage_dataset_versions (dataset_version_id, dataset_id,"
            " namespace, name, version_source) VALUES ('v1', 'd1', 'ns', 'n', 'none')"
        )
        con.execute(
            "INSERT INTO core.lineage_run_io VALUES ('r1', 'v1', 'INPUT', NULL, 'e1', 'c1')"
        )
        before = stored(con)
    shutil.copy(DEFAULT_MIGRATIONS_DIR / "0017_lineage_tables_without_art_indexes.sql", migrations)
    with wh.writer() as con:
        assert stored(con) == before
        assert all(comment for _, _, comment in before["comments"])
        keys = con.execute(
            "SELECT table_name FROM duckdb_constraints() WHERE schema_name = 'core'"
            " AND table_name LIKE 'lineage%' AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')"
            " ORDER BY ALL"
        ).fetchall()
        assert keys == [("lineage_datasets",), ("lineage_jobs",)]
        assert con.execute("SELECT count(*) FROM marts.lineage_run_jobs").fetchall() == [(1,)]
        with pytest.raises(duckdb.ConstraintException):
            con.execute("INSERT INTO core.lineage_runs (run_id) VALUES (NULL)")
    with wh.writer() as con, pytest.raises(duckdb.ConstraintException):
        con.execute(
            "INSERT INTO core.lineage_run_io (run_id, dataset_version_id, direction)"
            " VALUES ('r1', 'v1', 'SIDEWAYS')"
        )


def test_parsed_files_are_cached_only_while_their_bytes_are_unchanged(tmp_path: Path) -> None:
    folder = tmp_path / "migrations"
    folder.mkdir()
    first = folder / "0001_first.sql"
    first.write_text("CREATE TABLE a (x INTEGER);\n")
    before = discover_migrations(folder)
    assert discover_migrations(folder) == before
    first.write_text("CREATE TABLE a (y INTEGER);\n")  # same size, maybe the same mtime
    after = discover_migrations(folder)
    assert after[0].checksum != before[0].checksum
    assert "y INTEGER" in after[0].sql


def test_a_file_edited_while_it_is_read_is_an_error_not_a_cached_parse(
    tmp_path: Path, monkeypatch
) -> None:
    import warehouse.migrate as migrate

    folder = tmp_path / "migrations"
    folder.mkdir()
    (folder / "0001_first.sql").write_text("CREATE TABLE a (x INTEGER);\n")
    real = migrate._files_signature
    reads = iter([real(folder), (("0001_first.sql", "edited meanwhile"),)])
    monkeypatch.setattr(migrate, "_files_signature", lambda *folders: next(reads))
    with pytest.raises(MigrationError, match="changed while annex read the folder"):
        discover_migrations(folder)
    monkeypatch.setattr(migrate, "_files_signature", real)
    assert [m.name for m in discover_migrations(folder)] == ["0001_first.sql"]

"""``annex export`` as a distributed engine needs it (issue 37 item 5): an export after a
collection on a later day holds every row once, integer columns stay integers, and two exports
of one warehouse are byte-identical.

The warehouse is collected on two simulated days (``export_scenario``); the first day's export
is taken before the second day's collection, as a daily export job would.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers.export_scenario import CLUSTER, DAY_ONE, collect_day, new_warehouse
from warehouse import Warehouse
from warehouse.export import AS_OF_VARIABLE, MANIFEST, duckdb_source, export_warehouse

DAY_TWO = DAY_ONE + timedelta(days=1)
MARTS = Path(__file__).resolve().parents[2] / "warehouse" / "marts"
INTEGER_TYPES = re.compile(r"^U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)$")


@dataclass(frozen=True)
class TwoDays:
    root: Path
    wh: Warehouse
    day_one_export: Path
    """The export taken after the first day's collections, before the second day's."""


@pytest.fixture(scope="module")
def two_days(tmp_path_factory: pytest.TempPathFactory) -> TwoDays:
    root = tmp_path_factory.mktemp("export-two-days")
    settings, wh = new_warehouse(root)
    collect_day(settings, wh, root, DAY_ONE, seed=1)
    day_one_export = root / "export-day-one"
    export_warehouse(wh, day_one_export)
    collect_day(settings, wh, root, DAY_TWO, seed=2)
    return TwoDays(root, wh, day_one_export)


def _manifest(dest: Path) -> dict:
    return json.loads((dest / MANIFEST).read_text(encoding="utf-8"))


def _files(dest: Path) -> dict[str, bytes]:
    return {str(p.relative_to(dest)): p.read_bytes() for p in dest.rglob("*") if p.is_file()}


def _assert_each_row_once(wh: Warehouse, dest: Path) -> dict:
    """Every table read back holds the warehouse's rows, each as often as there: no duplicates,
    none missing (EXCEPT ALL both ways), and the manifest's count is the warehouse's."""
    manifest = _manifest(dest)
    with wh.reader() as con:
        for table, entry in manifest["tables"].items():
            (rows,) = con.execute(f"SELECT count(*) FROM {table}").fetchone() or (None,)
            assert entry["rows"] == rows, table
            if rows == 0 and entry["kind"] == "partitioned":
                assert not (dest / entry["path"]).exists(), table
                continue
            source = duckdb_source(dest, entry)
            (exported,) = con.execute(f"SELECT count(*) FROM {source}").fetchone() or (None,)
            assert exported == rows, f"{table}: {exported} rows exported, {rows} in the warehouse"
            columns = ", ".join(
                f'"{c}"'
                for (c,) in con.execute(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema || '.' || table_name = ? ORDER BY ordinal_position",
                    [table],
                ).fetchall()
            )
            (differences,) = con.execute(
                f"SELECT (SELECT count(*) FROM (SELECT {columns} FROM {source} "
                f"EXCEPT ALL SELECT {columns} FROM {table})) + "
                f"(SELECT count(*) FROM (SELECT {columns} FROM {table} "
                f"EXCEPT ALL SELECT {columns} FROM {source}))"
            ).fetchone() or (None,)
            assert differences == 0, table
    return manifest


def test_an_export_after_a_collection_on_a_later_day_holds_each_row_once(
    two_days: TwoDays, tmp_path: Path
) -> None:
    full, incremental = tmp_path / "full", tmp_path / "incremental"
    shutil.copytree(two_days.day_one_export, full)
    shutil.copytree(two_days.day_one_export, incremental)

    export_warehouse(two_days.wh, full)
    export_warehouse(two_days.wh, incremental, since=DAY_TWO.date())

    for dest in (full, incremental):
        manifest = _assert_each_row_once(two_days.wh, dest)
        samples = manifest["tables"]["core.gpu_telemetry_samples"]
        assert samples["kind"] == "partitioned" and samples["day_from"] == "ts"
        assert samples["partition_columns"] == ["day"]
        days = sorted(p.name for p in (dest / samples["path"]).iterdir())
        assert days == [f"day={DAY_ONE.date()}", f"day={DAY_TWO.date()}"]
        pods = manifest["tables"]["core.pods"]
        assert pods["partition_columns"] == ["cluster", "day"]
        assert pods["partition_types"] == {"cluster": "VARCHAR", "day": "DATE"}
        assert (dest / pods["path"] / f"cluster={CLUSTER}" / f"day={DAY_TWO.date()}").is_dir()
        # a dimension is one current snapshot, overwritten, whatever the day
        series = manifest["tables"]["core.gpu_telemetry_series"]
        assert series["kind"] == "snapshot" and series["partition_columns"] == []
        assert sorted(_files(dest / series["path"])) == ["data_0.parquet"]
        assert manifest["data_cutoff"].startswith(DAY_TWO.date().isoformat())
    # the incremental export left the first day's sample partition as it was
    part = f"core/gpu_telemetry_samples/day={DAY_ONE.date()}/data_0.parquet"
    assert (incremental / part).read_bytes() == (two_days.day_one_export / part).read_bytes()


def test_two_exports_of_one_warehouse_are_byte_identical(two_days: TwoDays, tmp_path: Path):
    first, second = tmp_path / "first", tmp_path / "second"
    export_warehouse(two_days.wh, first)
    export_warehouse(two_days.wh, second)

    one, two = _files(first), _files(second)
    assert sorted(one) == sorted(two)
    assert [name for name in one if one[name] != two[name]] == []
    manifest = _manifest(first)
    assert "exported_at" not in manifest
    assert manifest["data_cutoff"] == max(
        row[0].isoformat() for row in _collections_finished(two_days.wh)
    )


def _collections_finished(wh: Warehouse) -> list[tuple]:
    with wh.reader() as con:
        return con.execute(
            "SELECT finished_at FROM audit.collections WHERE status = 'succeeded'"
        ).fetchall()


def test_integer_columns_stay_exact_integers(two_days: TwoDays, tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    root.mkdir()
    for name in ("annex.duckdb", "annex.published.duckdb"):
        shutil.copy2(two_days.root / name, root / name)
    _, wh = new_warehouse(root)
    big, huge = 2**64 - 1, 2**70
    with wh.writer() as con:  # the types DuckDB's sums and hashes produce
        con.execute(
            "CREATE TABLE core.export_integers AS SELECT "
            "CAST(12345678901 AS HUGEINT) AS fits, CAST(? AS HUGEINT) AS too_big, "
            "CAST(? AS UBIGINT) AS hash, CAST(4000000000 AS UINTEGER) AS series, "
            "[CAST(? AS UBIGINT)] AS hashes",
            [str(huge), str(big), str(big)],
        )
    wh.publish()
    dest = tmp_path / "export"
    export_warehouse(wh, dest)

    manifest = _assert_each_row_once(wh, dest)
    probe = manifest["tables"]["core.export_integers"]
    assert probe["columns"] == {
        "fits": "BIGINT",
        "too_big": "DECIMAL(38,0)",
        "hash": "DECIMAL(20,0)",
        "series": "BIGINT",
        "hashes": "DECIMAL(20,0)[]",
    }
    assert pq.read_table(dest / probe["path"] / "data_0.parquet").to_pylist() == [
        {
            "fits": 12345678901,
            "too_big": Decimal(huge),
            "hash": Decimal(big),
            "series": 4000000000,
            "hashes": [Decimal(big)],
        }
    ]
    # no integer column of any table is written as a float or an unsigned type
    with wh.reader() as con:
        integer_columns = con.execute(
            "SELECT table_schema || '.' || table_name, column_name, data_type "
            "FROM information_schema.columns WHERE table_schema IN ('core', 'marts')"
        ).fetchall()
    for table, column, data_type in integer_columns:
        entry = manifest["tables"].get(table)
        if not entry or not INTEGER_TYPES.match(data_type) or column not in entry["columns"]:
            continue
        files = sorted((dest / entry["path"]).rglob("*.parquet"))
        if not files:
            continue
        kind = pq.read_schema(files[0]).field(column).type
        exact = pa.types.is_signed_integer(kind) or (pa.types.is_decimal(kind) and kind.scale == 0)
        assert exact, f"{table}.{column} ({data_type}) is written as {kind}"

    # a table dropped from the warehouse leaves the export with its folder
    with wh.writer() as con:
        con.execute("DROP TABLE core.export_integers")
    wh.publish()
    export_warehouse(wh, dest, since=DAY_TWO.date())
    assert "core.export_integers" not in _manifest(dest)["tables"]
    assert not (dest / probe["path"]).exists()


def test_views_count_up_to_the_data_cutoff_not_the_clock() -> None:
    """A view that reads the clock reads the export's cut-off first, so its figures are the
    same in every export of one warehouse."""
    as_of = f"coalesce(getvariable('{AS_OF_VARIABLE}'), CAST(timezone('UTC', now()) AS TIMESTAMP))"
    clock = re.compile(r"\b(now|current_timestamp|current_date|get_current_\w+|today)\b", re.I)
    readers = []
    for path in sorted(MARTS.glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        code = "\n".join(line.split("--")[0] for line in text.splitlines())
        code = re.sub(r"COMMENT ON .*?;", "", code, flags=re.S)
        if as_of in code:
            readers.append(path.name)
        assert not clock.search(code.replace(as_of, "")), (
            f"{path.name} reads the clock: read it as {as_of} (warehouse/marts/README.md)"
        )
    assert "kubernetes_api_latency.sql" in readers

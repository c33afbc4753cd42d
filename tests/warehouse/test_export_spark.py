"""Spark reads ``annex export`` unchanged (issue 37 item 5): pyspark in local mode, the
machine's Java, the RUNBOOK's recipe. Every table's row count and column types, and one mart
aggregation and one aggregation over a partitioned fact table, equal DuckDB's over the
warehouse.

Starts a JVM (some 20-40 s): marked ``spark`` and ``slow``, run by ``make test``.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.export_scenario import DAY_ONE, collect_day, new_warehouse
from warehouse import Warehouse
from warehouse.export import MANIFEST, export_warehouse

pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.skipif(
        shutil.which("java") is None,
        reason="needs Java 17+ for Spark (apt-get install openjdk-17-jre-headless)",
    ),
]

SCALARS = {
    "BOOLEAN": "boolean",
    "TINYINT": "tinyint",
    "SMALLINT": "smallint",
    "INTEGER": "int",
    "BIGINT": "bigint",
    "FLOAT": "float",
    "DOUBLE": "double",
    "VARCHAR": "string",
    "JSON": "string",
    "DATE": "date",
    "TIMESTAMP": "timestamp_ntz",
    "TIMESTAMP WITH TIME ZONE": "timestamp",
    "BLOB": "binary",
}


def read_table(spark: Any, dest: Path, entry: dict) -> Any:
    """The RUNBOOK's recipe: the table's folder as basePath (partition columns come back as
    columns), partition columns typed as the manifest says (the session turns type inference
    off, so a cluster called ``2024`` stays a string)."""
    path = str(dest / entry["path"])
    frame = spark.read.option("basePath", path).parquet(path)
    for column, kind in entry["partition_types"].items():
        frame = frame.withColumn(column, frame[column].cast("date" if kind == "DATE" else "string"))
    return frame


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Warehouse, Path]:
    root = tmp_path_factory.mktemp("export-spark")
    settings, wh = new_warehouse(root)
    collect_day(settings, wh, root, DAY_ONE, seed=1)
    collect_day(settings, wh, root, DAY_ONE + timedelta(days=1), seed=2)
    dest = root / "export"
    export_warehouse(wh, dest)
    return wh, dest


@pytest.fixture(scope="module")
def spark() -> Any:
    session_builder = pytest.importorskip("pyspark.sql").SparkSession.builder
    session = (
        session_builder.master("local[1]")
        .appName("annex-export-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .getOrCreate()
    )
    yield session
    session.stop()


def _spark_type(duckdb_type: str) -> str | None:
    """Spark's simpleString for a scalar exported type; None for nested ones."""
    decimal = re.fullmatch(r"DECIMAL\((\d+),(\d+)\)", duckdb_type)
    if decimal:
        return f"decimal({decimal[1]},{decimal[2]})"
    return SCALARS.get(duckdb_type)


def test_spark_reads_every_table_with_its_rows_and_types(exported, spark) -> None:
    wh, dest = exported
    manifest = json.loads((dest / MANIFEST).read_text(encoding="utf-8"))
    read = 0
    with wh.reader() as con:
        for table, entry in manifest["tables"].items():
            (rows,) = con.execute(f"SELECT count(*) FROM {table}").fetchone() or (None,)
            if rows == 0 and entry["kind"] == "partitioned":
                assert not (dest / entry["path"]).exists(), table  # the manifest says 0 rows
                continue
            frame = read_table(spark, dest, entry)
            assert frame.count() == rows == entry["rows"], table
            types = dict(frame.dtypes)
            for column, kind in entry["columns"].items():
                expected = _spark_type(kind)
                if expected is not None:
                    assert types[column] == expected, f"{table}.{column}: {kind}"
                elif "DOUBLE" not in kind and "FLOAT" not in kind:
                    assert "double" not in types[column], f"{table}.{column}: {kind}"
            for column, kind in entry["partition_types"].items():
                assert types[column] == ("date" if kind == "DATE" else "string"), table
            read += 1
    assert read > 40


def test_spark_aggregates_equal_duckdb(exported, spark) -> None:
    wh, dest = exported
    manifest = json.loads((dest / MANIFEST).read_text(encoding="utf-8"))
    capacity = (
        "SELECT cluster, resource_name, count(*) AS nodes, sum(capacity_gpus) AS capacity, "
        "sum(allocatable_gpus) AS allocatable FROM {} GROUP BY cluster, resource_name "
        "ORDER BY cluster, resource_name"
    )
    samples = (
        "SELECT day, count(*) AS samples, round(sum(value), 6) AS total, max(ts) AS last "
        "FROM {} GROUP BY day ORDER BY day"
    )
    read_table(spark, dest, manifest["tables"]["marts.node_gpu_capacity"]).createOrReplaceTempView(
        "node_gpu_capacity"
    )
    read_table(
        spark, dest, manifest["tables"]["core.gpu_telemetry_samples"]
    ).createOrReplaceTempView("gpu_telemetry_samples")
    with wh.reader() as con:
        expected_capacity = con.execute(capacity.format("marts.node_gpu_capacity")).fetchall()
        expected_samples = con.execute(
            samples.format("(SELECT CAST(ts AS DATE) AS day, * FROM core.gpu_telemetry_samples)")
        ).fetchall()
    got_capacity = [tuple(r) for r in spark.sql(capacity.format("node_gpu_capacity")).collect()]
    got_samples = [tuple(r) for r in spark.sql(samples.format("gpu_telemetry_samples")).collect()]

    assert expected_capacity and got_capacity == expected_capacity
    assert len(expected_samples) == 2 and got_samples == expected_samples


def test_spark_reads_one_partition_with_its_partition_columns(exported, spark) -> None:
    _, dest = exported
    manifest = json.loads((dest / MANIFEST).read_text(encoding="utf-8"))
    entry = manifest["tables"]["core.pods"]
    part, rows = sorted(entry["partitions"].items())[-1]
    base = str(dest / entry["path"])
    frame = spark.read.option("basePath", base).parquet(f"{base}/{part}")
    cluster, day = (value.split("=", 1)[1] for value in part.split("/"))

    assert frame.count() == rows
    assert {tuple(r) for r in frame.select("cluster", "day").distinct().collect()} == {
        (cluster, day)
    }

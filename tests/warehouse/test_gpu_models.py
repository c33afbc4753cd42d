"""marts.gpu_models (the one GPU model mapping), marts.gpus (the GPU dimension), and migration
0024's renames on a warehouse that already holds rows."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from annex.settings import WarehouseSettings
from probes.gpubench.peaks import PEAKS, sku_for
from warehouse import Warehouse
from warehouse.migrate import DEFAULT_MIGRATIONS_DIR

T0 = datetime(2026, 11, 20, 8, 0)
T1 = datetime(2026, 11, 21, 9, 30)

_DEFAULTS = {
    "VARCHAR": "x",
    "BOOLEAN": False,
    "DATE": T0.date(),
    "TIMESTAMP": T0,
    "VARCHAR[]": [],
}


def insert(con: duckdb.DuckDBPyConnection, table: str, **values: Any) -> None:
    """One row into ``table``: the given values, a placeholder in every other NOT NULL column."""
    schema, name = table.split(".")
    for column, data_type in con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() "
        "WHERE schema_name = ? AND table_name = ? AND NOT is_nullable",
        [schema, name],
    ).fetchall():
        values.setdefault(column, _DEFAULTS.get(data_type, 0))
    columns = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    con.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(values.values()))


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    return Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb"))


def mapping(wh: Warehouse) -> dict[tuple[str, str], str | None]:
    with wh.writer() as con:
        rows = con.execute("SELECT spelling, source, gpu_model FROM marts.gpu_models").fetchall()
    return {(spelling, source): model for spelling, source, model in rows}


def test_every_known_product_name_and_sku_maps_to_the_peak_tables_sku(wh: Warehouse) -> None:
    with wh.writer():
        pass
    seen = mapping(wh)
    for peak in PEAKS:  # probes/gpubench/peaks.py: the view's list must not drift from it
        assert seen[(peak.gpu_sku, "gpu_model")] == peak.gpu_sku
        for name in peak.model_patterns:
            assert seen[(name, "nvml_device_name")] == peak.gpu_sku
    assert {m for m in seen.values()} == {peak.gpu_sku for peak in PEAKS}


def test_gfd_labels_and_nvml_names_seen_map_to_one_model_and_unknown_ones_to_null(
    wh: Warehouse,
) -> None:
    labels = {
        "NVIDIA-H100-80GB-HBM3": "H100-SXM5-80GB",
        "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb": "H100-SXM5-80GB",
        "NVIDIA-H100-80GB-HBM3-SHARED": "H100-SXM5-80GB",
        "NVIDIA-A100-SXM4-80GB": "A100-SXM4-80GB",
        "Tesla-T4": None,
        "NVIDIA-H100-PCIe": None,  # another part, other peaks: never matched to the SXM
    }
    names = {"NVIDIA H100 80GB HBM3": "H100-SXM5-80GB", "NVIDIA H100 PCIe": None}
    with wh.writer() as con:
        for i, label in enumerate(labels):
            insert(con, "core.nodes", node_name=f"n{i}", gfd_product=label)
        for i, name in enumerate(names):
            insert(
                con, "core.gpu_telemetry_series", series_id=i, series_key=i,
                gpu_uuid=f"GPU-{i}", nvml_device_name=name,
            )  # fmt: skip
    seen = mapping(wh)
    for label, model in labels.items():
        assert seen[(label, "gfd_product")] == model, label
        if "-MIG-" not in label and "-SHARED" not in label:
            assert sku_for(label) == model, label  # the same answer as the ingest's matcher
    for name, model in names.items():
        assert seen[(name, "nvml_device_name")] == model, name
        assert sku_for(name) == model, name


def test_gpus_has_one_row_per_gpu_with_every_evidence_that_saw_it(wh: Warehouse) -> None:
    with wh.writer() as con:
        for i, profile in enumerate(["3g.40gb", "1g.10gb", None]):
            insert(
                con, "core.gpu_telemetry_series", series_id=i, series_key=i, gpu_uuid="GPU-a",
                node_name="n1", nvml_device_name="NVIDIA H100 80GB HBM3", mig_profile=profile,
                first_ts=T0, last_ts=T1,
            )  # fmt: skip
        insert(
            con, "core.gpu_benchmarks", record_id="r1", ts=T1, gpu_uuid="GPU-a", node_name="n1",
            nvml_device_name="NVIDIA H100 80GB HBM3", gpu_model="H100-SXM5-80GB",
        )  # fmt: skip
        insert(
            con, "core.gpu_benchmarks", record_id="r2", ts=T0, gpu_uuid="GPU-b", node_name="n2",
            nvml_device_name="NVIDIA H100 PCIe",
        )  # fmt: skip
        insert(
            con, "core.attestation_records", record_id="t1", gpu_uuid="GPU-c", node_name="n3",
            issued_at=T0, assurance_tier="none", verdict="fail",
        )  # fmt: skip
    with wh.writer() as con:
        rows = con.execute(
            "SELECT gpu_uuid, node_name, gpu_model, nvml_device_name, mig_profile, first_seen_at, "
            "last_seen_at, seen_by_telemetry, seen_by_benchmark, seen_by_attestation "
            "FROM marts.gpus ORDER BY gpu_uuid"
        ).fetchall()
    assert rows == [
        ("GPU-a", "n1", "H100-SXM5-80GB", "NVIDIA H100 80GB HBM3", "1g.10gb,3g.40gb", T0, T1,
         True, True, False),
        ("GPU-b", "n2", None, "NVIDIA H100 PCIe", None, T0, T0, False, True, False),
        ("GPU-c", "n3", None, None, None, T0, T0, False, False, True),
    ]  # fmt: skip


def test_a_warehouse_at_0023_keeps_its_rows_under_the_new_names(tmp_path: Path) -> None:
    old = tmp_path / "migrations"
    old.mkdir()
    for path in sorted(DEFAULT_MIGRATIONS_DIR.glob("00*.sql")):
        if int(path.name[:4]) <= 23:
            shutil.copy(path, old)
    settings = WarehouseSettings(path=tmp_path / "w.duckdb")
    h100_label, h100_name = "NVIDIA-H100-80GB-HBM3", "NVIDIA H100 80GB HBM3"
    with Warehouse(settings, migrations_dir=old).writer() as con:
        insert(con, "core.nodes", node_name="n1", gpu_product=h100_label, pool="p1")
        insert(
            con, "core.gpu_telemetry_series", series_id=1, series_key=1, gpu_uuid="GPU-a",
            hostname="n1", model_name=h100_name,
        )  # fmt: skip
        insert(
            con, "core.gpu_benchmarks", record_id="r1", gpu_uuid="GPU-a", node="n1",
            gpu_model=h100_name, gpu_sku="H100-SXM5-80GB",
        )  # fmt: skip
        insert(con, "core.gpu_benchmark_pods", pod_uid="p", node="n1")
        insert(
            con, "core.gpu_attested_devices", node_name="n1", gpu_uuid="GPU-a", device_ueid="u",
            first_seen=T0, last_seen=T1,
        )  # fmt: skip
        insert(con, "core.gpu_peak_reference", gpu_sku="H100-SXM5-80GB", dtype="bf16")
        insert(
            con, "core.lineage_runs", run_id="run-1", kubernetes_cluster="c1",
            kubernetes_namespace="team-a", stage="PRETRAINING",
        )  # fmt: skip
        insert(con, "marts.gpu_hourly", gpu_uuid="GPU-a", gpu_model=h100_name)
        insert(con, "marts.gpu_daily", gpu_uuid="GPU-a", gpu_model=h100_name)
        insert(con, "marts.node_gpu_hours", node_name="n1", gpu_product=h100_label, pool="p1")
        insert(con, "marts.node_gpu_hours", node_name="n2", gpu_product=h100_name, hour=T1)
        insert(
            con, "marts.training_run_compute", run_id="run-1", kubernetes_cluster="c1",
            kubernetes_namespace="team-a", declared_gpu_product=h100_label,
        )  # fmt: skip
        insert(
            con, "marts.training_run_gpus", run_id="run-1", gpu_product=h100_label,
            gpu_sku="H100-SXM5-80GB",
        )  # fmt: skip
        counts = {
            table: con.execute(f"SELECT count(*) FROM {table}").fetchone()
            for table in (
                "core.nodes", "core.gpu_telemetry_series", "core.gpu_benchmarks",
                "core.gpu_benchmark_pods", "core.gpu_attested_devices", "core.gpu_peak_reference",
                "core.lineage_runs",
                "marts.gpu_hourly", "marts.gpu_daily", "marts.node_gpu_hours",
                "marts.training_run_compute", "marts.training_run_gpus",
            )
        }  # fmt: skip

    with Warehouse(settings).writer() as con:
        # migrated through 0024 (and whatever later migrations there are)
        assert con.execute("SELECT max(version) FROM meta.migrations").fetchone()[0] >= 24
        assert {t: con.execute(f"SELECT count(*) FROM {t}").fetchone() for t in counts} == counts

        def one(sql: str) -> tuple[Any, ...]:
            return con.execute(sql).fetchone()

        assert one("SELECT gfd_product, node_pool FROM core.nodes") == (h100_label, "p1")
        assert one("SELECT node_name, nvml_device_name FROM core.gpu_telemetry_series") == (
            "n1",
            h100_name,
        )
        assert one("SELECT node_name, nvml_device_name, gpu_model FROM core.gpu_benchmarks") == (
            "n1",
            h100_name,
            "H100-SXM5-80GB",
        )
        assert one("SELECT node_name FROM core.gpu_benchmark_pods") == ("n1",)
        assert one("SELECT first_seen_at, last_seen_at FROM core.gpu_attested_devices") == (T0, T1)
        assert one("SELECT gpu_model FROM core.gpu_peak_reference") == ("H100-SXM5-80GB",)
        assert one("SELECT cluster, namespace FROM core.lineage_runs") == ("c1", "team-a")
        for table in ("marts.gpu_hourly", "marts.gpu_daily"):
            assert one(f"SELECT nvml_device_name, gpu_model FROM {table}") == (
                h100_name,
                "H100-SXM5-80GB",
            )
        # node_gpu_hours held a GFD label or a DCGM name: both become the one canonical model
        assert con.execute(
            "SELECT node_name, gpu_model, node_pool FROM marts.node_gpu_hours ORDER BY 1"
        ).fetchall() == [("n1", "H100-SXM5-80GB", "p1"), ("n2", "H100-SXM5-80GB", None)]
        assert one(
            "SELECT cluster, namespace, declared_gpu_model FROM marts.training_run_compute"
        ) == ("c1", "team-a", "H100-SXM5-80GB")
        assert one("SELECT gfd_product, gpu_model FROM marts.training_run_gpus") == (
            h100_label,
            "H100-SXM5-80GB",
        )
        assert one("SELECT count(*) FROM marts.lineage_run_jobs WHERE cluster = 'c1'") == (1,)
        assert one("SELECT count(*) FROM marts.lineage_top_domains(0.1)") == (0,)

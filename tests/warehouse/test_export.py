"""``annex export``: DuckDB reads the Parquet export back equal to the warehouse, reruns change
nothing, and ``--since`` rewrites only the partitions it must.

The warehouse comes from a real collection of a small simulated cluster; its timestamps are then
spread over three days (as hourly collections over days would) so that partitioning by day is
actually exercised.
"""

from __future__ import annotations

import json
import shutil
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pytest

from annex import __version__
from annex.cli import main
from annex.errors import ConfigError
from annex.settings import ClusterSettings, Settings, WarehouseSettings
from services.inventory import collect_cluster_inventory
from simulator.kubernetes import SimulatedCluster
from simulator.world import build_world
from warehouse import Warehouse
from warehouse.export import MANIFEST, duckdb_source, export_warehouse, plan_table

CLUSTER = "sim-export"

# The documented choice per table (warehouse/export.py's docstring): the column a table's day
# comes from, or one current snapshot.
EXPECTED_DAYS = {
    "core.nodes": "valid_from",
    "core.node_gpu_resources": "valid_from",
    "core.gpu_allocations": "valid_from",
    "core.pods": "first_seen_at",
    "core.jobs": "first_seen_at",
    "core.events": "first_seen_at",
    "core.priority_classes": "first_seen_at",
    "marts.node_gpu_capacity": "snapshot",
    "marts.fleet_gpu_by_model": "snapshot",
    "marts.fleet_gpu_by_pool": "snapshot",
    "marts.fleet_gpu_by_domain": "snapshot",
    "marts.fleet_gpu_by_namespace": "snapshot",
    "marts.fleet_summary": "snapshot",
}

# Spread rows over today, yesterday and the day before, by a stable hash of their key.
SPREAD = {
    "core.nodes": ("node_uid", ("valid_from",)),
    "core.gpu_allocations": ("pod_uid", ("valid_from",)),
    "core.pods": ("pod_uid", ("first_seen_at", "changed_at")),
    "core.jobs": ("job_uid", ("first_seen_at", "changed_at")),
    "core.events": ("event_uid", ("first_seen_at", "changed_at")),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A published warehouse of a collected 30-node simulated cluster, spread over 3 days."""
    root = tmp_path_factory.mktemp("export-warehouse")
    settings = Settings(warehouse=WarehouseSettings(path=root / "annex.duckdb"))
    wh = Warehouse(settings.warehouse)
    with SimulatedCluster(build_world(nodes=30, seed=3)) as sim:
        kubeconfig = sim.write_kubeconfig(root / "kubeconfig")
        result = collect_cluster_inventory(
            settings, wh, ClusterSettings(name=CLUSTER, kubeconfig=kubeconfig), publish=False
        )
    assert result.status == "succeeded"
    with wh.writer() as con:
        for table, (key, columns) in SPREAD.items():
            shift = ", ".join(
                f"{c} = {c} - to_days(CAST(hash({key}) % 3 AS INTEGER))" for c in columns
            )
            con.execute(f"UPDATE {table} SET {shift}")
    wh.publish()
    return root


@pytest.fixture
def wh(built: Path, tmp_path: Path) -> Warehouse:
    """A private copy of the built warehouse, so a test may change it."""
    for name in ("annex.duckdb", "annex.published.duckdb"):
        shutil.copy2(built / name, tmp_path / name)
    return Warehouse(WarehouseSettings(path=tmp_path / "annex.duckdb"))


def _read_back(con: duckdb.DuckDBPyConnection, dest: Path, table: str) -> str:
    manifest = json.loads((dest / MANIFEST).read_text(encoding="utf-8"))
    return duckdb_source(dest, manifest["tables"][table])


def _differences(con: duckdb.DuckDBPyConnection, left: str, right: str, columns: str) -> int:
    """Rows in one side and not the other, duplicates counted (EXCEPT ALL both ways)."""
    row = con.execute(
        f"SELECT (SELECT count(*) FROM (SELECT {columns} FROM {left} "
        f"EXCEPT ALL SELECT {columns} FROM {right})) + "
        f"(SELECT count(*) FROM (SELECT {columns} FROM {right} "
        f"EXCEPT ALL SELECT {columns} FROM {left}))"
    ).fetchone()
    assert row is not None
    return int(row[0])


def _assert_export_equals_warehouse(wh: Warehouse, dest: Path) -> dict:
    manifest = json.loads((dest / MANIFEST).read_text(encoding="utf-8"))
    with wh.reader() as con:
        for table, entry in manifest["tables"].items():
            columns = ", ".join(
                f'"{c}"'
                for (c,) in con.execute(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema || '.' || table_name = ? ORDER BY ordinal_position",
                    [table],
                ).fetchall()
            )
            source = _read_back(con, dest, table)
            if entry["rows"] == 0 and entry["kind"] == "partitioned":
                assert not list((dest / entry["path"]).glob("**/*.parquet")), table
                continue
            assert _differences(con, source, table, columns) == 0, table
    return manifest


def _files(dest: Path) -> dict[str, int]:
    """Every Parquet file of the export with its inode: a rewritten file gets a new one."""
    return {str(p.relative_to(dest)): p.stat().st_ino for p in dest.glob("*/*/**/*.parquet")}


def test_each_table_gets_the_documented_day(wh: Warehouse) -> None:
    with wh.reader() as con:
        plans = {
            f"{s}.{t}": plan_table(con, s, t, "table").day_from or "snapshot"
            for s, t in con.execute(
                "SELECT table_schema, table_name FROM information_schema.tables "
                "WHERE table_schema IN ('core', 'marts')"
            ).fetchall()
        }
    for table, rule in EXPECTED_DAYS.items():
        assert plans[table] == rule, table


def test_duckdb_reads_the_export_back_equal_to_the_warehouse(wh: Warehouse, tmp_path: Path):
    dest = tmp_path / "export"
    result = export_warehouse(wh, dest)

    manifest = _assert_export_equals_warehouse(wh, dest)
    assert set(EXPECTED_DAYS) <= set(manifest["tables"])
    assert manifest["annex_version"] == __version__
    assert len(manifest["collections"]) == 1
    assert manifest["tables"]["core.nodes"]["rows"] > 0
    assert result.manifest == dest / MANIFEST
    # Partitioned by cluster and day, over the three days the fixture spread rows on.
    days = {p.name for p in (dest / "core" / "nodes" / f"cluster={CLUSTER}").iterdir()}
    assert len(days) == 3
    with duckdb.connect() as con:
        nodes = con.execute(
            f"SELECT count(*) FROM {_read_back(con, dest, 'core.nodes')} WHERE cluster = ?",
            [CLUSTER],
        ).fetchone()
    assert nodes == (manifest["tables"]["core.nodes"]["rows"],)
    assert not (dest / ".annex-export-staging").exists()
    # the facet history view re-parses the payloads: they are exported, not it
    assert {"core.lineage_events", "core.lineage_facet_heads"} <= set(manifest["tables"])
    assert "core.lineage_facets" not in manifest["tables"]
    assert not (dest / "core" / "lineage_facets").exists()


def test_rerun_is_idempotent(wh: Warehouse, tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    export_warehouse(wh, first)
    shutil.copytree(first, second)
    export_warehouse(wh, second)
    export_warehouse(wh, second, since=date(2000, 1, 1))

    assert set(_files(first)) == set(_files(second))
    with duckdb.connect() as con:
        for table in EXPECTED_DAYS:
            if not list((first / table.replace(".", "/")).glob("**/*.parquet")):
                continue
            left, right = _read_back(con, first, table), _read_back(con, second, table)
            assert _differences(con, left, right, "*") == 0, table


def test_since_rewrites_only_later_days_and_changed_partitions(wh: Warehouse, tmp_path: Path):
    dest = tmp_path / "export"
    export_warehouse(wh, dest)
    before = _files(dest)
    with wh.reader() as con:
        latest = con.execute("SELECT max(CAST(first_seen_at AS DATE)) FROM core.pods").fetchone()
        oldest_pod = con.execute(
            "SELECT pod_uid, CAST(first_seen_at AS DATE) FROM core.pods "
            "ORDER BY first_seen_at, pod_uid LIMIT 1"
        ).fetchone()
    assert latest is not None and oldest_pod is not None
    since: date = latest[0]
    pod_uid, pod_day = oldest_pod
    assert pod_day < since

    # A pod first seen two days ago changes now: its old partition must be rewritten too.
    with wh.writer() as con:
        con.execute(
            "UPDATE core.pods SET phase = 'Failed', changed_at = current_timestamp::TIMESTAMP "
            "WHERE pod_uid = ?",
            [pod_uid],
        )
    wh.publish()
    export_warehouse(wh, dest, since=since)
    after = _files(dest)

    _assert_export_equals_warehouse(wh, dest)
    assert set(before) == set(after)
    changed_partition = f"core/pods/cluster={CLUSTER}/day={pod_day.isoformat()}/"
    for path, inode in before.items():
        rewritten = after[path] != inode
        if "day=" not in path:  # a snapshot: always rewritten whole
            assert rewritten, path
            continue
        day = date.fromisoformat(path.split("day=")[1].split("/")[0])
        if day >= since or path.startswith(changed_partition):
            assert rewritten, path
        else:
            assert not rewritten, path


def test_cli_export_with_since(wh: Warehouse, tmp_path: Path, capsys) -> None:
    config = tmp_path / "annex.toml"
    config.write_text(f'[warehouse]\npath = "{wh.path}"\n', encoding="utf-8")
    dest = tmp_path / "cli-export"
    tomorrow = (date.today() + timedelta(days=1)).isoformat()

    assert main(["--config", str(config), "export", str(dest)]) == 0
    assert main(["--config", str(config), "export", "--since", tomorrow, str(dest)]) == 0

    out = capsys.readouterr().out
    assert "core.nodes" in out and str(dest) in out
    manifest = _assert_export_equals_warehouse(wh, dest)
    assert manifest["since"] == tomorrow


def test_object_storage_destination_is_refused_with_a_hint(wh: Warehouse) -> None:
    with pytest.raises(ConfigError, match="local or mounted folder") as caught:
        export_warehouse(wh, "s3://bucket/annex")
    assert caught.value.hint and "sync" in caught.value.hint

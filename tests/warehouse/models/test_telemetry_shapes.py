"""The exporter shapes in the warehouse: a shared GPU's pod shares never add to its own figures,
per-link series keep their own ids, and an XID series shows its latest err_code."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from annex.settings import WarehouseSettings
from collectors.telemetry.collect import SeriesTable, TargetRecord, read_scrape, targets_batch
from tests.helpers.paths import FIXTURES as SHARED_FIXTURES
from warehouse import Warehouse, load_collection
from warehouse.models.telemetry import TELEMETRY_MODEL
from warehouse.models.utilisation import refresh_gpu_hourly

FIXTURES = SHARED_FIXTURES / "telemetry"
T0 = datetime(2026, 11, 20, 10, 0)
TARGET = "http://gpu-node:9400/metrics"


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    return Warehouse(WarehouseSettings(path=tmp_path / "annex.duckdb"))


def scrapes(bodies: list[tuple[str, datetime]]):
    """One collection of fixture bodies scraped at the given times, as the collector yields it."""
    table = SeriesTable("scrape")
    blank = 0
    for name, at in bodies:
        result = read_scrape((FIXTURES / name).read_bytes(), TARGET, at, table)
        blank += result.stats.blank
        if result.series is not None:
            yield "telemetry_series", result.series
        yield "telemetry_samples", result.samples
    yield "telemetry_extents", table.extents.batch()
    yield (
        "telemetry_targets",
        targets_batch([TargetRecord(TARGET, "scrape", T0, blank_values=blank)]),
    )


def query(wh: Warehouse, sql: str) -> list[tuple]:
    with duckdb.connect(str(wh.path), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_shared_gpu_busy_is_the_device_line_not_a_mean_with_shares(wh: Warehouse) -> None:
    minutes = [("dcgm_exporter_4.8_virtual_gpus.prom", T0 + timedelta(minutes=m)) for m in range(3)]
    load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=scrapes(minutes), publish=False)
    assert query(
        wh,
        "SELECT pod, pod_share FROM core.gpu_telemetry_series WHERE metric = 'gpu_util' "
        "ORDER BY pod NULLS FIRST",
    ) == [(None, False), ("chat-a", True), ("chat-b", True)]
    with wh.writer() as con:
        refresh_gpu_hourly(con)
    ((busy, samples, pod, held),) = query(
        wh,
        "SELECT busy, samples, workload_pod, pod_label_fraction FROM marts.gpu_hourly "
        "WHERE gpu_uuid = 'GPU-48000000-0000-4000-8000-000000000000'",
    )
    assert busy == pytest.approx(0.94)  # the GPU's own value; a mean with the shares is 0.627
    assert samples == 3  # the device line's, not 9
    assert pod in {"chat-a", "chat-b"} and held == 1.0  # the shares still say who held it


def test_per_link_series_keep_their_own_ids(wh: Warehouse) -> None:
    bodies = [("dcgm_exporter_nvlink_per_link.prom", T0)]
    load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=scrapes(bodies), publish=False)
    rows = query(
        wh,
        "SELECT metric, link, count(DISTINCT series_id), count(DISTINCT series_key) "
        "FROM core.gpu_telemetry_series GROUP BY ALL ORDER BY ALL",
    )
    assert [(m[-8:], link, n, k) for m, link, n, k in rows] == [
        ("WIDTH_L0", "0", 1, 1),
        ("WIDTH_L1", "1", 1, 1),
        ("TX_BYTES", "0", 1, 1),
        ("TX_BYTES", "1", 1, 1),
        ("TX_BYTES", "17", 1, 1),
    ]
    assert query(wh, "SELECT count(*) FROM core.gpu_telemetry_samples") == [(5,)]


def test_xid_series_shows_its_latest_err_code(wh: Warehouse) -> None:
    before = ("dcgm_exporter_xid_before.prom", T0)
    after = ("dcgm_exporter_xid_after.prom", T0 + timedelta(minutes=1))
    # one collection holding both lines: the later one gives the labels
    load_collection(
        wh, TELEMETRY_MODEL, cluster="c", batches=scrapes([before, after]), publish=False
    )
    latest = "SELECT labels['err_code'], last_ts FROM core.gpu_telemetry_series"
    assert query(wh, latest) == [("79", T0 + timedelta(minutes=1))]
    # an older window read again does not bring the old code back
    load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=scrapes([before]), publish=False)
    assert query(wh, latest) == [("79", T0 + timedelta(minutes=1))]
    # a later collection with a new error moves it on
    later = ("dcgm_exporter_xid_before.prom", T0 + timedelta(minutes=2))
    load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=scrapes([later]), publish=False)
    assert query(wh, latest) == [("0", T0 + timedelta(minutes=2))]


def test_blank_values_reach_the_collection_summary(wh: Warehouse) -> None:
    bodies = [("dcgm_exporter_blank_sentinels.prom", T0)]
    load_collection(wh, TELEMETRY_MODEL, cluster="c", batches=scrapes(bodies), publish=False)
    assert query(wh, "SELECT blank_values FROM audit.telemetry_targets") == [(6,)]
    assert query(
        wh, "SELECT count(*) FROM core.gpu_telemetry_samples WHERE value >= 2147483632"
    ) == [(0,)]

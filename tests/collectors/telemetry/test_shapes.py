"""Each dcgm-exporter shape annex accepts, from the fixtures in ``tests/fixtures/telemetry/``.

Scraped bodies go through ``read_scrape`` (the exporter's own labels); the Prometheus answers
recorded from a real Prometheus 2.42 (honor_labels false and true, and its ``up`` series) go
through ``decode_matrix`` + ``read_matrix`` as ``collect_prometheus`` reads them.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from annex.settings import Settings
from collectors.telemetry import attribution, blanks
from collectors.telemetry.collect import SeriesTable, collect_exporters, read_matrix, read_scrape
from collectors.telemetry.query_range import decode_matrix
from tests.helpers.paths import FIXTURES as SHARED_FIXTURES

FIXTURES = SHARED_FIXTURES / "telemetry"
TARGET = "http://gpu-node:9400/metrics"
SCRAPED = datetime(2026, 11, 2, 9, 0, 0, tzinfo=UTC)
EXPORTER_POD = "nvidia-dcgm-exporter-4b4b4"


def scrape(*names: str) -> tuple[list[dict], list[dict], list[dict]]:
    """``(series, samples, targets-like stats)`` of fixture bodies scraped into one table."""
    table = SeriesTable("scrape")
    series: list[dict] = []
    samples: list[dict] = []
    stats = []
    for name in names:
        result = read_scrape((FIXTURES / name).read_bytes(), TARGET, SCRAPED, table)
        assert result.error is None, result.error
        if result.series is not None:
            series += result.series.to_pylist()
        samples += result.samples.to_pylist()
        stats.append(result.stats)
    return series, samples, stats


def values(series: list[dict], samples: list[dict]) -> dict[tuple, float]:
    rows = {s["series_index"]: s for s in series}
    out = {}
    for sample in samples:
        r = rows[sample["series_index"]]
        out[(r["gpu_uuid"][-2:], r["metric"], r["pod"], r["link"])] = sample["value"]
    return out


def test_3x_default_labels_and_units() -> None:
    series, samples, _ = scrape("dcgm_exporter_3.3_default.prom")
    held = [s for s in series if s["gpu_uuid"].endswith("00")]
    assert {(s["pod"], s["namespace"], s["container"]) for s in held} == {
        ("llm-pretrain-0", "research", "trainer")
    }
    assert {s["hostname"] for s in series} == {"gpu-node-3"}
    assert {s["driver_version"] for s in series} == {"535.129.03"}
    v = values(series, samples)
    assert v[("00", "gpu_util", "llm-pretrain-0", None)] == 0.97
    assert v[("00", "total_energy_consumption", "llm-pretrain-0", None)] == 48213377.56  # mJ->J
    assert v[("01", "power_usage", None, None)] == 61.096


def test_4x_default_labels_direct_scrape() -> None:
    series, samples, _ = scrape("dcgm_exporter_4.2_default.prom")
    assert {s["pod"] for s in series} == {"llm-pretrain-1", None}
    assert {s["pci_bus_id"] for s in series} == {"00000000:18:00.0", "00000000:2A:00.0"}
    assert all(s["pod_share"] is False and s["link"] is None for s in series)
    assert values(series, samples)[("00", "gr_engine_active", "llm-pretrain-1", None)] == 0.912345


def prometheus(name: str, table: SeriesTable) -> list[dict]:
    matrix = decode_matrix((FIXTURES / name).read_bytes())
    series, _samples, _stats = read_matrix(matrix, table, "http://prom:9090", [])
    return series.to_pylist() if series is not None else []


def with_targets(table: SeriesTable) -> SeriesTable:
    for labels in decode_matrix(
        (FIXTURES / "prometheus_2.42_up_targets.json").read_bytes()
    ).metrics:
        table.exporters.add_target(labels)
    return table


@pytest.mark.parametrize("known_targets", [True, False])
def test_honor_labels_false_as_prometheus_stores_it(known_targets: bool) -> None:
    table = SeriesTable("query_range")
    if known_targets:
        with_targets(table)
    rows = {
        r["gpu_uuid"][-2:]: r for r in prometheus("prometheus_2.42_honor_labels_false.json", table)
    }
    assert (rows["00"]["pod"], rows["00"]["namespace"], rows["00"]["container"]) == (
        "llm-pretrain-1",
        "research",
        "trainer",
    )
    assert dict(rows["00"]["labels"])["pod"] == "nvidia-dcgm-exporter-4a4a4"
    assert rows["01"]["pod"] is None  # the exporter's own pod, never the workload
    assert dict(rows["01"]["labels"])["pod"] == "nvidia-dcgm-exporter-4a4a4"


def test_honor_labels_true_as_prometheus_stores_it() -> None:
    table = with_targets(SeriesTable("query_range"))
    rows = {
        r["gpu_uuid"][-2:]: r for r in prometheus("prometheus_2.42_honor_labels_true.json", table)
    }
    held, idle = rows["00"], rows["01"]
    assert (held["pod"], held["namespace"], held["container"]) == (
        "llm-finetune-7",
        "tuning",
        "worker",
    )
    # Prometheus gave the idle GPU's line the target's own pod: not a workload
    assert idle["pod"] is None and dict(idle["labels"])["pod"] == EXPORTER_POD


def test_honor_labels_true_without_up_never_names_the_exporter() -> None:
    """Without Prometheus' word on its targets, a Service-scraped pod label is not trusted."""
    rows = prometheus("prometheus_2.42_honor_labels_true.json", SeriesTable("query_range"))
    assert {r["pod"] for r in rows} == {None}


def test_virtual_gpus_device_line_and_pod_shares() -> None:
    series, samples, _ = scrape("dcgm_exporter_4.8_virtual_gpus.prom")
    v = values(series, samples)
    share = {(s["metric"], s["pod"]): s["pod_share"] for s in series}
    assert share == {
        (metric, pod): pod is not None
        for metric in ("gpu_util", "fb_used", "total_energy_consumption")
        for pod in (None, "chat-a", "chat-b")
    }
    assert v[("00", "gpu_util", None, None)] == 0.94  # the GPU's own value
    assert v[("00", "gpu_util", "chat-a", None)] + v[("00", "gpu_util", "chat-b", None)] == (
        pytest.approx(0.94)
    )
    assert v[("00", "fb_used", None, None)] == 51200.0


def test_virtual_gpus_before_48_copies_are_not_shares() -> None:
    """Pre-4.8 --kubernetes-virtual-gpus: a copy per pod and no device-level line."""
    text = "".join(
        line + "\n"
        for line in (FIXTURES / "dcgm_exporter_4.8_virtual_gpus.prom").read_text().splitlines()
        if line.startswith("#") or "pod=" in line
    )
    table = SeriesTable("scrape")
    result = read_scrape(text.encode(), TARGET, SCRAPED, table)
    rows = result.series.to_pylist()
    assert {r["pod"] for r in rows} == {"chat-a", "chat-b"}
    assert not any(r["pod_share"] for r in rows)


def test_old_namespace_labels() -> None:
    series, _, _ = scrape("dcgm_exporter_old_namespace.prom")
    held = [s for s in series if s["pod"] is not None]
    assert {(s["gpu_uuid"], s["pod"], s["namespace"], s["container"]) for s in held} == {
        ("GPU-0d000000-0000-4000-8000-000000000000", "resnet-train-0", "legacy", "trainer")
    }
    assert all(dict(s["labels"]) == {} for s in series)


def test_old_namespace_through_prometheus_keeps_the_workload() -> None:
    """pod_name... never collide with target labels: kept under either honor_labels."""
    labels = {
        "uuid": "GPU-0d",
        "pod_name": "resnet-train-0",
        "pod_namespace": "legacy",
        "container_name": "trainer",
        "pod": "dcgm-exporter-0d0d0",
        "namespace": "gpu-operator",
        "service": "dcgm-exporter",
        "endpoint": "metrics",
    }
    workload, consumed = attribution.workload(labels, "query_range", attribution.ExporterPods())
    assert workload == ("resnet-train-0", "legacy", "trainer")
    assert "pod" not in consumed  # the exporter's pod stays a plain label


def test_nvlink_per_link_series() -> None:
    series, samples, _ = scrape("dcgm_exporter_nvlink_per_link.prom")
    links = {(s["metric"], s["link"]): s for s in series}
    assert sorted(links) == [
        ("DCGM_FI_DEV_NVLINK_BANDWIDTH_L0", "0"),
        ("DCGM_FI_DEV_NVLINK_BANDWIDTH_L1", "1"),
        ("DCGM_FI_PROF_NVLINK_TX_BYTES", "0"),
        ("DCGM_FI_PROF_NVLINK_TX_BYTES", "1"),
        ("DCGM_FI_PROF_NVLINK_TX_BYTES", "17"),
    ]
    assert {s["gpu_uuid"] for s in series} == {"GPU-1e000000-0000-4000-8000-000000000000"}
    assert {s["model_name"] for s in series} == {"NVIDIA H100 80GB HBM3"}
    assert all(not {"gpu_uuid", "model_name", "link"} & set(dict(s["labels"])) for s in series)
    assert values(series, samples)[("00", "DCGM_FI_PROF_NVLINK_TX_BYTES", None, "1")] == 20401094656


def test_blank_sentinels_are_counted_missing_not_stored() -> None:
    series, samples, (stats,) = scrape("dcgm_exporter_blank_sentinels.prom")
    v = values(series, samples)
    assert v == {
        ("01", "gpu_util", None, None): 0.42,
        ("01", "mem_clock", None, None): 1215.0,
        ("01", "total_energy_consumption", None, None): 2147483.6,
        ("01", "sm_active", None, None): 0.611,
    }
    assert stats.blank == 6 and stats.skipped == 0
    assert len(series) == 10  # the series are known; only their readings are missing


@pytest.mark.parametrize(
    ("value", "blank"),
    [
        (2147483632, True),  # DCGM_INT32_BLANK
        (2147483635, True),  # DCGM_INT32_NOT_PERMISSIONED
        (2147483647, True),  # INT32_MAX (DCGM_INT32_IS_BLANK: >= BLANK)
        (2147483631, False),
        (2147483648, False),  # an INT64 counter passing 2^31 is a reading
        (9223372036854775792, True),  # DCGM_INT64_BLANK (parsed: 9.223372036854776e18)
        (9.22e18, False),
        (float(2**63), True),
        (140737488355328.0, True),  # DCGM_FP64_BLANK
        (140737488355331.0, True),  # DCGM_FP64_NOT_PERMISSIONED
        (140737488355332.0, False),  # a byte counter past 2^47 is a reading
        (0.0, False),
        (-1.0, False),
    ],
)
def test_blank_windows(value: float, blank: bool) -> None:
    assert blanks.is_blank(float(value)) is blank
    assert blanks.blank_mask(pa.array([float(value)])).to_pylist() == [blank]
    for sentinels in blanks.SENTINELS.values():
        assert all(blanks.is_blank(float(s)) for s in sentinels)


def test_nan_and_blank_are_counted_apart() -> None:
    text = (
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-x"} NaN\n'
        'DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-x"} 2147483633\n'
        'DCGM_FI_DEV_MEM_CLOCK{gpu="0",UUID="GPU-x"} 1593\n'
    )
    result = read_scrape(text.encode(), TARGET, SCRAPED, SeriesTable("scrape"))
    assert (result.stats.skipped, result.stats.blank, result.stats.samples) == (1, 1, 1)


def test_xid_err_code_is_a_label_of_one_series_identity() -> None:
    table = SeriesTable("scrape")
    first = read_scrape(
        (FIXTURES / "dcgm_exporter_xid_before.prom").read_bytes(), TARGET, SCRAPED, table
    )
    later = read_scrape(
        (FIXTURES / "dcgm_exporter_xid_after.prom").read_bytes(), TARGET, SCRAPED, table
    )
    (a,), (b,) = first.series.to_pylist(), later.series.to_pylist()
    assert dict(a["labels"]) == {"err_code": "0", "err_msg": "No Error"}
    assert dict(b["labels"]) == {"err_code": "79", "err_msg": "GPU has fallen off the bus"}
    identity = ("gpu_uuid", "metric", "hostname", "pod", "namespace", "container", "link")
    assert all(a[c] == b[c] for c in identity)  # one warehouse series; the merge shows the latest
    assert later.samples.column("value").to_pylist() == [79.0]
    assert not math.isnan(first.samples.column("value")[0].as_py())


def test_blank_values_are_said_in_the_collection_summary(caplog) -> None:
    import http.server
    import threading

    body = (FIXTURES / "dcgm_exporter_blank_sentinels.prom").read_bytes()

    class One(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), One)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        tables = dict(collect_exporters([url], "c", Settings()))
    finally:
        server.shutdown()
        server.server_close()
    (row,) = tables["telemetry_targets"].to_pylist()
    assert (row["blank_values"], row["samples"], row["status"]) == (6, 4, "ok")
    assert "6 samples were DCGM blank sentinels" in caplog.text


@pytest.mark.parametrize("known", [True, False])
def test_podmonitor_honor_labels_true_idle_gpu_is_not_the_exporters(known: bool) -> None:
    """A PodMonitor target has ``endpoint`` but no ``service``; its idle line carries the
    exporter's pod under honorLabels: true."""
    target = {"job": "gpu-operator/dcgm", "instance": "10.1.2.3:9400", "endpoint": "metrics"}
    own = {**target, "namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-zz9"}
    held = {**target, "namespace": "ml", "pod": "train-3", "container": "c", "UUID": "GPU-h"}
    exporters = attribution.ExporterPods()
    if known:
        exporters.add_target(own)
    idle, _ = attribution.workload({**own, "UUID": "GPU-i"}, "query_range", exporters)
    assert idle == attribution.NOBODY
    workload, _ = attribution.workload(held, "query_range", exporters)
    assert workload == (("train-3", "ml", "c") if known else attribution.NOBODY)

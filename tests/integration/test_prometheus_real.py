"""annex's telemetry collection against a REAL Prometheus (Debian's ``prometheus`` package).

The test serves the dcgm-exporter fixtures (``tests/fixtures/telemetry``) from a loopback
HTTP server, writes a ``prometheus.yml`` that scrapes each as its own job every second, with the
target labels Kubernetes service discovery gives an exporter pod (``namespace``, ``pod``,
``container``, ``service``, ``endpoint``) and ``honor_labels`` false or true, starts
``/usr/bin/prometheus`` on a free loopback port behind ``--web.config.file`` basic auth, and runs
annex's collection against it. So the relabelling (``exported_pod``...), the ``up`` series,
staleness and the API's number formatting are Prometheus' own, not a model of them.

Bounded: Prometheus is up within a few seconds and the test waits for at most 30 s of scrapes.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from base64 import b64encode
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pytest

from annex.errors import ConfigError
from annex.settings import ClusterSettings, Settings, TelemetrySettings, WarehouseSettings
from collectors.telemetry import collect_prometheus
from collectors.telemetry.query_range import PrometheusError
from services.gpu_evidence import collect_gpu_telemetry
from tests.helpers.paths import FIXTURES as SHARED_FIXTURES
from warehouse import Warehouse

PROMETHEUS = Path("/usr/bin/prometheus")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not PROMETHEUS.exists(),
        reason="/usr/bin/prometheus is absent: install Debian's prometheus package "
        "(`make setup` does, it is in the Makefile's APT_PACKAGES)",
    ),
]

FIXTURES = SHARED_FIXTURES / "telemetry"
USER = "annex"
PASSWORD = "annex-loopback-test"
PASSWORD_HASH = "$2b$04$HdeIRm6/uDyrrffZg226r.969I.dY5.3UPXKAjpSYuIOzSewpfgYS"
"""bcrypt (cost 4) of PASSWORD, made once with Python's crypt.crypt(PASSWORD, METHOD_BLOWFISH)."""
XID_SWITCH_AFTER = 3
"""The XID exporter serves the "before" body this many times, then the "after" body."""

EXPORTER_NS = "gpu-operator"
JOBS = {
    # job: (metrics path, fixture, honor_labels, exporter pod)
    "dcgm-3x": ("/v3", "dcgm_exporter_3.3_default.prom", False, "nvidia-dcgm-exporter-3a3a3"),
    "dcgm-honor-false": (
        "/v4",
        "dcgm_exporter_4.2_default.prom",
        False,
        "nvidia-dcgm-exporter-4a4a4",
    ),
    "dcgm-honor-true": (
        "/v4b",
        "dcgm_exporter_4.2_default_node_b.prom",
        True,
        "nvidia-dcgm-exporter-4b4b4",
    ),
    "dcgm-virtual": (
        "/v48",
        "dcgm_exporter_4.8_virtual_gpus.prom",
        True,
        "nvidia-dcgm-exporter-48484",
    ),
    "dcgm-old-namespace": (
        "/old",
        "dcgm_exporter_old_namespace.prom",
        False,
        "dcgm-exporter-0d0d0",
    ),
    "dcgm-nvlink": (
        "/nvlink",
        "dcgm_exporter_nvlink_per_link.prom",
        False,
        "nvidia-dcgm-exporter-1e1e1",
    ),
    "dcgm-blanks": (
        "/blanks",
        "dcgm_exporter_blank_sentinels.prom",
        False,
        "nvidia-dcgm-exporter-b1b1b",
    ),
    "dcgm-xid": ("/xid", "dcgm_exporter_xid_before.prom", False, "nvidia-dcgm-exporter-c1c1c"),
}
EXPORTER_PODS = {pod for _path, _fixture, _honor, pod in JOBS.values()}


class _Exporters(BaseHTTPRequestHandler):
    bodies: ClassVar[dict[str, bytes]] = {}
    xid_after = b""
    xid_served = 0
    lock = threading.Lock()

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        body = self.bodies.get(path)
        if path == "/xid":
            with self.lock:
                type(self).xid_served += 1
                if self.xid_served > XID_SWITCH_AFTER:
                    body = self.xid_after
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _config(exporter_port: int) -> str:
    lines = ["global:", "  scrape_interval: 1s", "  scrape_timeout: 1s", "scrape_configs:"]
    for job, (path, _fixture, honor, pod) in JOBS.items():
        lines += [
            f"  - job_name: {job}",
            f"    metrics_path: {path}",
            f"    honor_labels: {'true' if honor else 'false'}",
            "    static_configs:",
            f"      - targets: ['127.0.0.1:{exporter_port}']",
            "        labels:",
            f"          namespace: {EXPORTER_NS}",
            f"          pod: {pod}",
            "          container: nvidia-dcgm-exporter",
            "          service: nvidia-dcgm-exporter",
            "          endpoint: gpu-metrics",
        ]
    return "\n".join(lines) + "\n"


def _get(url: str, auth: bool = True, timeout: float = 2.0) -> bytes:
    request = urllib.request.Request(url)
    if auth:
        pair = b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        request.add_header("Authorization", f"Basic {pair}")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read()


def _wait(what: str, ready, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"Prometheus: {what} not within the test's deadline")


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    """``(url, start)``: a real Prometheus that has scraped every fixture job a few times."""
    folder = tmp_path_factory.mktemp("prometheus")
    _Exporters.bodies = {
        path: (FIXTURES / fixture).read_bytes() for path, fixture, _h, _p in JOBS.values()
    }
    _Exporters.xid_after = (FIXTURES / "dcgm_exporter_xid_after.prom").read_bytes()
    _Exporters.xid_served = 0
    exporters = ThreadingHTTPServer(("127.0.0.1", 0), _Exporters)
    threading.Thread(target=exporters.serve_forever, daemon=True).start()
    port = _free_port()
    (folder / "prometheus.yml").write_text(_config(exporters.server_address[1]))
    (folder / "web.yml").write_text(f'basic_auth_users:\n  {USER}: "{PASSWORD_HASH}"\n')
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=2)
    log = (folder / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            str(PROMETHEUS),
            f"--config.file={folder / 'prometheus.yml'}",
            f"--web.config.file={folder / 'web.yml'}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    try:
        _wait("ready", lambda: _get(f"{url}/-/ready") is not None, deadline)
        # every job scraped at least XID_SWITCH_AFTER + 2 times: the XID body has changed
        query = "min(count_over_time(up[1m]))"
        _wait(
            "enough scrapes",
            lambda: (
                b'"value":[' in (body := _get(f"{url}/api/v1/query?query={query}"))
                and float(body.split(b'"value":[')[1].split(b",")[1].strip(b'"]}'))
                >= XID_SWITCH_AFTER + 3
            ),
            deadline,
        )
        yield url, start
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
        log.close()
        exporters.shutdown()
        exporters.server_close()
        shutil.rmtree(folder / "data", ignore_errors=True)


def _settings(tmp: Path | None = None) -> Settings:
    s = dataclasses.replace(Settings(), telemetry=TelemetrySettings(step_seconds=1))
    if tmp is not None:
        s = dataclasses.replace(s, warehouse=WarehouseSettings(path=tmp / "annex.duckdb"))
    return s


def _window(start: datetime) -> tuple[datetime, datetime]:
    return start, datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)


def _collect(url: str, start: datetime, **auth) -> dict[str, pa.Table]:
    lo, hi = _window(start)
    grouped: dict[str, list[pa.RecordBatch]] = {}
    for name, batch in collect_prometheus(url, "lab", _settings(), start=lo, end=hi, **auth):
        grouped.setdefault(name, []).append(batch)
    return {name: pa.Table.from_batches(bs) for name, bs in grouped.items()}


@pytest.fixture(scope="module")
def collected(prometheus) -> dict[str, pa.Table]:
    url, start = prometheus
    return _collect(url, start, basic_auth=(USER, PASSWORD))


def _series(t: dict[str, pa.Table], uuid: str, metric: str) -> list[dict]:
    return [
        r
        for r in t["telemetry_series"].to_pylist()
        if r["gpu_uuid"] == uuid and r["metric"] == metric
    ]


def _values(t: dict[str, pa.Table], index: int) -> set[float]:
    return {s["value"] for s in t["telemetry_samples"].to_pylist() if s["series_index"] == index}


def test_no_series_is_attributed_to_an_exporter_pod(collected) -> None:
    pods = {r["pod"] for r in collected["telemetry_series"].to_pylist()}
    assert not pods & EXPORTER_PODS
    assert pods - {None} == {
        "llm-pretrain-0",
        "llm-pretrain-1",
        "llm-finetune-7",
        "chat-a",
        "chat-b",
        "resnet-train-0",
    }


@pytest.mark.parametrize(
    ("uuid", "workload", "exporter_pod"),
    [
        # honor_labels false: Prometheus renamed the exporter's labels exported_*
        (
            "GPU-4a000000-0000-4000-8000-000000000000",
            ("llm-pretrain-1", "research", "trainer"),
            True,
        ),
        ("GPU-4a000000-0000-4000-8000-000000000001", (None, None, None), True),
        # honor_labels true: the workload's pod/namespace kept; an idle GPU got the exporter's
        ("GPU-4b000000-0000-4000-8000-000000000000", ("llm-finetune-7", "tuning", "worker"), False),
        ("GPU-4b000000-0000-4000-8000-000000000001", (None, None, None), True),
        # 3.x default labels, honor_labels false
        (
            "GPU-3a000000-0000-4000-8000-000000000000",
            ("llm-pretrain-0", "research", "trainer"),
            True,
        ),
        ("GPU-3a000000-0000-4000-8000-000000000001", (None, None, None), True),
    ],
)
def test_workload_under_honor_labels_false_and_true(
    collected, uuid, workload, exporter_pod
) -> None:
    (row,) = _series(collected, uuid, "gpu_util")
    assert (row["pod"], row["namespace"], row["container"]) == workload
    labels = dict(row["labels"])
    assert ("pod" in labels) == exporter_pod  # the exporter's own pod stays a plain label
    assert labels.get("namespace", EXPORTER_NS) == EXPORTER_NS
    assert not any(name.startswith("exported_") for name in labels)


def test_virtual_gpus_device_line_is_the_gpus_and_pod_lines_are_shares(collected) -> None:
    uuid = "GPU-48000000-0000-4000-8000-000000000000"
    rows = {r["pod"]: r for r in _series(collected, uuid, "gpu_util")}
    assert set(rows) == {None, "chat-a", "chat-b"}
    assert rows[None]["pod_share"] is False
    assert rows["chat-a"]["pod_share"] and rows["chat-b"]["pod_share"]
    assert _values(collected, rows[None]["series_index"]) == {0.94}
    assert _values(collected, rows["chat-a"]["series_index"]) == {0.61}
    assert dict(rows["chat-b"]["labels"])["vgpu"] == "1"
    energy = {
        r["pod"]: r["pod_share"] for r in _series(collected, uuid, "total_energy_consumption")
    }
    assert energy == {None: False, "chat-a": True, "chat-b": True}


def test_old_namespace_labels_attribute_pods(collected) -> None:
    (held,) = _series(collected, "GPU-0d000000-0000-4000-8000-000000000000", "gpu_temp")
    assert (held["pod"], held["namespace"], held["container"]) == (
        "resnet-train-0",
        "legacy",
        "trainer",
    )
    (idle,) = _series(collected, "GPU-0d000000-0000-4000-8000-000000000001", "gpu_temp")
    assert idle["pod"] is None


def test_nvlink_per_link_series_read_gpu_uuid_and_model_name(collected) -> None:
    uuid = "GPU-1e000000-0000-4000-8000-000000000000"
    rows = _series(collected, uuid, "DCGM_FI_PROF_NVLINK_TX_BYTES")
    assert sorted(r["link"] for r in rows) == ["0", "1", "17"]
    assert {r["model_name"] for r in rows} == {"NVIDIA H100 80GB HBM3"}
    assert all("gpu_uuid" not in dict(r["labels"]) for r in rows)
    (l1,) = _series(collected, uuid, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L1")
    assert l1["link"] == "1"


def test_blank_sentinels_are_missing_never_readings(collected) -> None:
    blanks = {
        "GPU-b1000000-0000-4000-8000-000000000000",
        "GPU-b1000000-0000-4000-8000-000000000001",
    }
    series = {
        r["series_index"]: r
        for r in collected["telemetry_series"].to_pylist()
        if r["gpu_uuid"] in blanks
    }
    kept = {}
    for s in collected["telemetry_samples"].to_pylist():
        if s["series_index"] in series:
            row = series[s["series_index"]]
            kept.setdefault((row["gpu_uuid"][-1], row["metric"]), set()).add(s["value"])
    assert kept == {
        ("1", "gpu_util"): {0.42},
        ("1", "mem_clock"): {1215.0},
        ("1", "total_energy_consumption"): {2147483.6},  # 2147483600 mJ: below the INT32 window
        ("1", "sm_active"): {0.611},
    }
    targets = collected["telemetry_targets"].to_pylist()
    assert sum(t["blank_values"] for t in targets) > 0
    assert all(t["blank_values"] % 6 == 0 for t in targets)  # six blank lines per scrape


def test_real_prometheus_end_to_end_into_the_warehouse(prometheus, tmp_path, monkeypatch) -> None:
    url, start = prometheus
    monkeypatch.setenv("ANNEX_TEST_PROMETHEUS_PASSWORD", PASSWORD)
    cluster = ClusterSettings(
        name="lab",
        prometheus_url=url,
        prometheus_username=USER,
        prometheus_password_env="ANNEX_TEST_PROMETHEUS_PASSWORD",
    )
    settings = _settings(tmp_path)
    wh = Warehouse(settings.warehouse)
    lo, hi = _window(start)
    result = collect_gpu_telemetry(settings, wh, cluster, start=lo, end=hi, publish=False)
    assert result.status == "succeeded"
    with wh.writer() as con:
        xid = con.execute(
            "SELECT labels['err_code'], labels['err_msg'] FROM core.gpu_telemetry_series "
            "WHERE gpu_uuid = 'GPU-c1000000-0000-4000-8000-000000000000' AND metric = 'xid_errors'"
        ).fetchall()
        codes = con.execute(
            "SELECT list(DISTINCT value ORDER BY value) FROM core.gpu_telemetry_samples "
            "JOIN core.gpu_telemetry_series USING (series_id) WHERE metric = 'xid_errors'"
        ).fetchone()
        blank = con.execute("SELECT sum(blank_values) FROM audit.telemetry_targets").fetchone()
        secrets = con.execute(
            "SELECT count(*) FROM audit.telemetry_targets WHERE target LIKE ? OR error LIKE ?",
            [f"%{PASSWORD}%", f"%{PASSWORD}%"],
        ).fetchone()
    # one series (the err_code label is not identity): its latest err_code is the one shown
    assert [(str(a).strip("[]'\""), str(b).strip("[]'\"")) for a, b in xid] == [
        ("79", "GPU has fallen off the bus")
    ]
    assert codes == ([0.0, 79.0],)
    assert blank[0] > 0 and secrets == (0,)


def test_wrong_or_missing_basic_auth_is_refused(prometheus) -> None:
    url, start = prometheus
    with pytest.raises(PrometheusError) as info:
        _collect(url, start, basic_auth=(USER, "not-the-password"))
    assert info.value.status == 401
    assert "prometheus_password_env" in (info.value.hint or "")
    assert "not-the-password" not in str(info.value)
    with pytest.raises(PrometheusError) as info:
        _collect(url, start)
    assert info.value.status == 401


def test_password_variable_unset_is_a_config_error(prometheus, tmp_path, monkeypatch) -> None:
    url, _start = prometheus
    monkeypatch.delenv("ANNEX_TEST_PROMETHEUS_PASSWORD", raising=False)
    cluster = ClusterSettings(
        name="lab",
        prometheus_url=url,
        prometheus_username=USER,
        prometheus_password_env="ANNEX_TEST_PROMETHEUS_PASSWORD",
    )
    settings = _settings(tmp_path)
    with pytest.raises(ConfigError, match="ANNEX_TEST_PROMETHEUS_PASSWORD"):
        collect_gpu_telemetry(settings, Warehouse(settings.warehouse), cluster, publish=False)

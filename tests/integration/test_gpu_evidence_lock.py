"""No writer holds the warehouse lock while it waits on the network (issue 35): a telemetry
collection reads Prometheus to a local spool first and takes the writer lock only to load, so
a stalled Prometheus delays no other writer; it fails at its deadline and records why."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time

import duckdb
import pytest

from annex.errors import CollectionError
from annex.settings import ClusterSettings, Settings, TelemetrySettings, WarehouseSettings
from services.gpu_evidence import collect_gpu_telemetry
from warehouse import Warehouse
from warehouse.lock import writer_lock


@pytest.fixture()
def stalled_prometheus():
    """Answers every request's headers at once, then its body a byte every 0.2 s."""
    server = socket.create_server(("127.0.0.1", 0))
    reached = threading.Event()
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            with connection:
                connection.recv(65536)
                reached.set()
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 100000\r\n\r\n{"
                )
                while not stop.wait(0.2):
                    try:
                        connection.sendall(b" ")
                    except OSError:
                        break

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}", reached
    stop.set()
    thread.join(timeout=5)
    server.close()


def test_a_stalled_prometheus_leaves_the_writer_lock_free(tmp_path, stalled_prometheus) -> None:
    url, reached = stalled_prometheus
    settings = dataclasses.replace(
        Settings(),
        warehouse=WarehouseSettings(path=tmp_path / "annex.duckdb"),
        telemetry=TelemetrySettings(request_timeout_seconds=2.0),
    )
    wh = Warehouse(settings.warehouse)
    wh.migrate()
    lock_taken: list[float] = []

    def second_writer() -> None:
        assert reached.wait(20)
        time.sleep(0.3)
        with writer_lock(settings.warehouse.path, timeout_seconds=1.0):
            lock_taken.append(time.monotonic())

    other = threading.Thread(target=second_writer)
    other.start()
    started = time.monotonic()
    with pytest.raises(CollectionError) as failure:
        collect_gpu_telemetry(
            settings, wh, ClusterSettings(name="east", prometheus_url=url), publish=False
        )
    elapsed = time.monotonic() - started
    other.join(timeout=10)
    assert lock_taken and lock_taken[0] - started < 5  # another writer got the lock meanwhile
    assert elapsed < 20  # the body's deadline ended the wait
    assert "deadline" in failure.value.message
    con = duckdb.connect(str(settings.warehouse.path), read_only=True)
    try:
        status, error = con.execute(
            "SELECT status, error FROM audit.collections WHERE source = 'telemetry'"
        ).fetchone()
    finally:
        con.close()
    assert status == "failed"
    assert "deadline" in error

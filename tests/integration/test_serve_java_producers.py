"""OpenLineage events from Java producers (openlineage-spark, openlineage-flink through
openlineage-java's ``HttpTransport`` with ``compression: gzip``) arrive chunked and gzipped;
``annex serve`` takes them end to end over loopback (issue 35, fixtures in
tests/fixtures/openlineage_transport), and keeps its caps on the decoded chunked stream."""

from __future__ import annotations

import hashlib
import json
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from annex.settings import LineageSettings, ServeSettings, Settings
from collectors.lineage.events import event_id
from services.intake import IntakeServer
from services.lineage import lineage_routes
from tests.fixtures.openlineage_transport.apache_httpclient import (
    CHUNK_CACHE,
    FLINK_EVENT,
    SPARK_EVENT,
    chunked,
    gzip_writes,
    jackson_json,
    request,
)
from tests.helpers.lineage_spool import spool_rows

pytestmark = pytest.mark.integration

TOKEN = "java-producer-token-0123456789"
NOW = datetime(2026, 11, 2, 8, 10, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.moment = NOW

    def __call__(self) -> datetime:
        self.moment += timedelta(microseconds=1)
        return self.moment


def make_settings(tmp_path: Path, **lineage: int) -> Settings:
    return Settings(
        serve=ServeSettings(host="127.0.0.1", port=0),
        lineage=LineageSettings(spool_dir=tmp_path / "lineage", intake_workers=0, **lineage),
    )


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture
def server(settings: Settings) -> Iterator[IntakeServer]:
    with IntakeServer(settings, lineage_routes(settings), token=TOKEN, clock=Clock()) as intake:
        yield intake


def host_port(server: IntakeServer) -> tuple[str, int]:
    host, port = server.url.rsplit("//", 1)[1].rsplit(":", 1)
    return host, int(port)


def read_response(sock: socket.socket) -> tuple[bytes, dict]:
    """One HTTP response off a keep-alive connection: (head, JSON payload)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536) or b"!"
        assert not data.endswith(b"!"), data
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(
        next(
            line.split(b":")[1]
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
    )
    while len(rest) < length:
        rest += sock.recv(65536)
    return head, json.loads(rest[:length])


def test_spark_and_flink_events_sent_as_httptransport_does_are_accepted(
    server: IntakeServer, settings: Settings
) -> None:
    """Both on one keep-alive connection, as HttpClient's pool reuses it."""
    host, port = host_port(server)
    with socket.create_connection((host, port), timeout=10) as sock:
        for fixture in (SPARK_EVENT, FLINK_EVENT):
            wire = request(fixture, f"{host}:{port}", TOKEN)
            assert b"Transfer-Encoding: chunked" in wire and b"Content-Length" not in wire
            sock.sendall(wire)
            head, payload = read_response(sock)
            event = json.loads(fixture.read_text())
            assert head.startswith(b"HTTP/1.1 200 "), payload
            assert payload == {"status": "success", "event_id": event_id(event)}
            assert b"Connection: close" not in head
    rows = {row["event_id"]: row for row in spool_rows(settings.lineage.spool_dir / "incoming")}
    assert len(rows) == 2
    for fixture, engine in ((SPARK_EVENT, "spark"), (FLINK_EVENT, "flink")):
        event = json.loads(fixture.read_text())
        row = rows[event_id(event)]
        assert json.loads(row["payload"]) == event and row["findings"] == []
        assert hashlib.sha256(row["payload"].encode()).hexdigest() == event_id(event)
        assert row["producer"].endswith(f"/integration/{engine}")


def wide_spark_event() -> bytes:
    """The Spark fixture with a 600-column schema: a gzip body of several 2,048-byte chunks."""
    event = json.loads(jackson_json(SPARK_EVENT))
    fields = [
        {"name": f"c_{hashlib.sha256(str(i).encode()).hexdigest()[:12]}", "type": "string"}
        for i in range(600)
    ]
    event["outputs"][0]["facets"]["schema"]["fields"] = fields
    return json.dumps(event, separators=(",", ":")).encode()


def test_a_body_of_many_chunks_is_accepted(server: IntakeServer, settings: Settings) -> None:
    body = wide_spark_event()
    framed = chunked(gzip_writes(body))
    assert framed.count(f"\r\n{CHUNK_CACHE:x}\r\n".encode()) >= 2  # several full 0x800 chunks
    host, port = host_port(server)
    head = request(SPARK_EVENT, f"{host}:{port}", TOKEN).partition(b"\r\n\r\n")[0]
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(head + b"\r\n\r\n" + framed)
        status, payload = read_response(sock)
    assert status.startswith(b"HTTP/1.1 200 ") and payload["event_id"] == event_id(json.loads(body))


def test_a_chunked_body_over_the_limit_is_413_as_soon_as_the_cap_is_passed(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path, max_body_bytes=64 << 10)
    with IntakeServer(settings, lineage_routes(settings), token=TOKEN) as server:
        host, port = host_port(server)
        head = request(SPARK_EVENT, f"{host}:{port}", TOKEN).partition(b"\r\n\r\n")[0]
        with socket.create_connection((host, port), timeout=10) as sock:
            # 60 KiB of chunks, then one announcing 8 KiB more: the cap (64 KiB) is passed at
            # that size line, so the answer comes before any of its data is sent
            sock.sendall(head + b"\r\n\r\n" + b"f000\r\n" + b"\0" * 0xF000 + b"\r\n2000\r\n")
            reply = sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413 ") and b"Connection: close" in reply
    assert b"65,536 bytes" in reply
    assert not (settings.lineage.spool_dir / "incoming").exists() or not any(
        (settings.lineage.spool_dir / "incoming").iterdir()
    )


def test_a_gzip_bomb_sent_chunked_is_refused_by_the_inflation_cap(
    server: IntakeServer, settings: Settings
) -> None:
    """The chunked body is small; it inflates past lineage.max_body_bytes: the parser's cap."""
    bomb = b"".join(gzip_writes(b"[" + b" " * (64 << 20) + b"]"))
    host, port = host_port(server)
    head = request(SPARK_EVENT, f"{host}:{port}", TOKEN).partition(b"\r\n\r\n")[0]
    with socket.create_connection((host, port), timeout=20) as sock:
        sock.sendall(head + b"\r\n\r\n" + chunked([bomb]))
        status, payload = read_response(sock)
    assert status.startswith(b"HTTP/1.1 413 "), payload

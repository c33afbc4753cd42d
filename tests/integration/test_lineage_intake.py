"""``annex serve``'s OpenLineage intake over real sockets: bearer auth, gzip, a gzip bomb, every
bad-input rule of reference/openlineage.md §4 answered with its status and kept in the spool
for audit.rejected, the batch endpoint's partial_success answer, duplicates."""

from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from annex.settings import LineageSettings, ServeSettings, Settings
from collectors.lineage.events import event_id
from services.intake import IntakeServer
from services.lineage import lineage_routes
from simulator.lineage.producer import (
    MALFORMED_KINDS,
    build_events,
    malformed_bodies,
    post_malformed,
    to_json,
)
from simulator.world import build_world
from tests.helpers.lineage_spool import spool_rows

pytestmark = pytest.mark.integration

TOKEN = "lineage-intake-token-0123456789"
NOW = datetime(2026, 11, 2, 8, 10, 1, 123456, tzinfo=UTC)


@pytest.fixture(scope="module")
def events() -> list[dict]:
    world = build_world(8, seed=3)
    return [json.loads(to_json(e)) for e in build_events(world)]


def make_settings(tmp_path: Path, **lineage: int) -> Settings:
    lineage.setdefault("intake_workers", 0)  # validated in the request thread (one test: not)
    return Settings(
        serve=ServeSettings(host="127.0.0.1", port=0),
        lineage=LineageSettings(spool_dir=tmp_path / "lineage", **lineage),
    )


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


class Clock:
    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        self.moment += timedelta(microseconds=1)  # one spool file per request
        return self.moment


@pytest.fixture
def server(settings: Settings, events: list[dict]) -> Iterator[IntakeServer]:
    newest = max(datetime.fromisoformat(e["eventTime"].replace("Z", "+00:00")) for e in events)
    clock = Clock(max(NOW, newest + timedelta(minutes=5)))
    with IntakeServer(settings, lineage_routes(settings), token=TOKEN, clock=clock) as intake:
        yield intake


def post(
    server: IntakeServer,
    path: str,
    body: bytes,
    *,
    token: str | None = TOKEN,
    encoding: str | None = None,
) -> tuple[int, dict]:
    host, port = server.url.rsplit("//", 1)[1].rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=20)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if encoding:
        headers["Content-Encoding"] = encoding
    connection.request("POST", path, body=body, headers=headers)
    response = connection.getresponse()
    payload = json.loads(response.read())
    connection.close()
    return response.status, payload


def spool_lines(settings: Settings) -> list[dict]:
    """The rows of every spool file (one Arrow IPC file per request)."""
    return spool_rows(settings.lineage.spool_dir / "incoming")


def spool_files(settings: Settings) -> list[Path]:
    return sorted((settings.lineage.spool_dir / "incoming").iterdir())


def dumps(value: object) -> bytes:
    return json.dumps(value).encode()


# --- accepted events -----------------------------------------------------------------------------


def test_one_gzip_event_is_accepted_with_its_id_and_spooled_once(
    server: IntakeServer, settings: Settings, events: list[dict]
) -> None:
    event = events[0]
    status, payload = post(server, "/api/v1/lineage", gzip.compress(dumps(event)), encoding="gzip")
    assert status == 200, payload
    assert payload == {"status": "success", "event_id": event_id(event)}
    [line] = spool_lines(settings)
    assert line["kind"] == "event" and line["event_id"] == event_id(event)
    assert json.loads(line["payload"]) == event
    # the payload is the canonical text the id hashes: checkable evidence
    assert hashlib.sha256(line["payload"].encode()).hexdigest() == event_id(event)
    assert line["event_kind"] == "RunEvent" and line["event_type"] == event["eventType"]
    assert line["run_id"] == event["run"]["runId"].lower()
    assert (line["job_namespace"], line["job_name"]) == (
        event["job"]["namespace"],
        event["job"]["name"],
    )
    assert (line["producer"], line["schema_url"]) == (event["producer"], event["schemaURL"])
    assert line["findings"] == []
    # written atomically: no temporary file is left behind
    [path] = spool_files(settings)
    assert path.suffix == ".arrow" and not path.name.startswith(".")


def test_the_same_event_twice_gives_the_same_id(
    server: IntakeServer, settings: Settings, events: list[dict]
) -> None:
    event = events[1]
    reordered = json.dumps(dict(reversed(list(event.items()))), indent=2).encode()
    first = post(server, "/api/v1/lineage", dumps(event))
    second = post(server, "/api/v1/lineage", reordered)
    assert first[0] == second[0] == 200
    assert first[1]["event_id"] == second[1]["event_id"] == event_id(event)
    assert {line["event_id"] for line in spool_lines(settings)} == {event_id(event)}


def test_bearer_token_is_required(
    server: IntakeServer, settings: Settings, events: list[dict]
) -> None:
    for token in (None, "wrong-token-0123456789"):
        for path in ("/api/v1/lineage", "/api/v1/lineage/batch"):
            status, payload = post(server, path, dumps(events[0]), token=token)
            assert status == 401 and "bearer" in payload["error"]
    assert not (settings.lineage.spool_dir / "incoming").exists()


def test_batch_partial_success_shape_and_duplicates(
    server: IntakeServer, settings: Settings, events: list[dict]
) -> None:
    bad = dict(events[3], eventType="PAUSED")
    naive = dict(events[4], eventTime=events[4]["eventTime"].removesuffix("Z"))
    batch = [events[0], events[1], bad, events[0], naive, events[2]]
    status, payload = post(
        server, "/api/v1/lineage/batch", gzip.compress(dumps(batch)), encoding="gzip"
    )
    assert status == 200
    assert payload == {
        "status": "partial_success",
        "summary": {
            "received": 6,
            "successful": 4,
            "failed": 2,
            "retriable": 0,
            "non_retriable": 2,
        },
        "failed_events": [
            {"index": 2, "reason": "unknown_event_type", "retriable": False},
            {"index": 4, "reason": "missing_timezone", "retriable": False},
        ],
    }
    lines = spool_lines(settings)
    assert len(spool_files(settings)) == 1  # one request, one file
    assert [(line["kind"], line["index"]) for line in lines] == [
        ("event", 0),
        ("event", 1),
        ("rejected", 2),
        ("rejected", 4),
        ("event", 5),
    ]  # the second copy of events[0] (index 3) is the same event: written once
    rejected = {line["index"]: line for line in lines if line["kind"] == "rejected"}
    assert rejected[2]["reason_code"] == "unknown_event_type"
    assert rejected[2]["path"] == "eventType"
    assert json.loads(rejected[2]["raw"]) == bad
    assert rejected[4]["reason_code"] == "missing_timezone"

    status, payload = post(server, "/api/v1/lineage/batch", dumps(events[:3]))
    assert status == 200
    assert payload["status"] == "success" and payload["summary"]["successful"] == 3
    assert payload["failed_events"] == []


# --- every bad-input rule -------------------------------------------------------------------------


def test_every_malformed_delivery_gets_its_status_and_is_kept(
    server: IntakeServer, settings: Settings, events: list[dict]
) -> None:
    from simulator.lineage.producer import build_events as build

    world_events = build(build_world(8, seed=3))
    statuses = post_malformed(malformed_bodies(world_events), server.url + "/", token=TOKEN)
    assert statuses == {
        "invalid_json": 400,
        "missing_run_id": 422,
        "non_uuid_run_id": 422,
        "unknown_event_type": 422,
        "naive_event_time": 422,
        "future_event_time": 422,
        "truncated_gzip": 400,
    }
    assert set(statuses) == set(MALFORMED_KINDS)
    lines = spool_lines(settings)
    assert all(line["kind"] == "rejected" for line in lines)
    assert sorted(line["reason_code"] for line in lines) == sorted(
        [
            "invalid_json",
            "bad_run_id",
            "bad_run_id",
            "unknown_event_type",
            "missing_timezone",
            "future_event_time",
            "invalid_json",
        ]
    )
    truncated = next(line for line in lines if "compressed" in line["message"])
    assert truncated["index"] == -1  # the gzip bytes, kept
    assert truncated["raw"][:2] == b"\x1f\x8b"


@pytest.mark.parametrize(
    ("change", "status", "reason", "path"),
    [
        (lambda e: e["run"].pop("runId"), 422, "bad_run_id", "run.runId"),
        (lambda e: e["run"].update(runId="not-a-uuid"), 422, "bad_run_id", "run.runId"),
        (lambda e: e.update(eventType="BOGUS"), 422, "unknown_event_type", "eventType"),
        (lambda e: e.pop("producer"), 422, "schema_violation", "producer"),
        (lambda e: e["job"].update(name=5), 422, "schema_violation", "job.name"),
        (
            lambda e: e.update(eventTime="2026-11-02T08:00:00"),
            422,
            "missing_timezone",
            "eventTime",
        ),
        (
            lambda e: e.update(eventTime="2027-01-01T00:00:00Z"),
            422,
            "future_event_time",
            "eventTime",
        ),
        (
            lambda e: e.update(
                inputs=[{"namespace": "s3://b", "name": f"k{i}"} for i in range(1001)]
            ),
            422,
            "too_many_datasets",
            "inputs",
        ),
    ],
)
def test_each_event_rule_answers_422_with_reason_and_field(
    server: IntakeServer,
    settings: Settings,
    events: list[dict],
    change,
    status: int,
    reason: str,
    path: str,
) -> None:
    event = json.loads(json.dumps(events[0]))
    change(event)
    got, payload = post(server, "/api/v1/lineage", dumps(event))
    assert got == status, payload
    assert payload["reason"] == reason
    assert payload["path"].startswith(path)
    assert payload["error"] and payload["hint"]
    [line] = spool_lines(settings)
    assert line["kind"] == "rejected" and line["reason_code"] == reason
    assert json.loads(line["raw"]) == event  # kept as sent, for audit.rejected


def test_invalid_json_and_an_array_on_the_single_endpoint(
    server: IntakeServer, settings: Settings, events: list[dict]
) -> None:
    status, payload = post(server, "/api/v1/lineage", b'{"eventTime": ')
    assert status == 400 and payload["reason"] == "invalid_json"
    status, payload = post(server, "/api/v1/lineage", b"\xff\xfe not utf-8")
    assert status == 400
    status, payload = post(server, "/api/v1/lineage/batch", b"[1, 2")
    assert status == 400 and payload["reason"] == "invalid_json"
    status, payload = post(server, "/api/v1/lineage", dumps(events[:2]))
    assert status == 422 and "/api/v1/lineage/batch" in payload["error"]
    status, payload = post(server, "/api/v1/lineage", b"", encoding="br")
    assert status == 400
    reasons = [line["reason_code"] for line in spool_lines(settings)]
    assert reasons.count("invalid_json") == 4 and "schema_violation" in reasons


def test_a_large_facet_is_dropped_with_a_finding(
    server: IntakeServer, settings: Settings, events: list[dict]
) -> None:
    event = json.loads(json.dumps(events[0]))
    event["run"]["facets"]["huge"] = {
        "_producer": "https://example.com",
        "_schemaURL": "https://example.com/huge.json",
        "blob": "x" * (300 * 1024),
    }
    status, payload = post(server, "/api/v1/lineage", gzip.compress(dumps(event)), encoding="gzip")
    assert status == 200 and payload["event_id"] == event_id(event)
    assert "run.facets.huge" in payload["findings"][0]
    [line] = spool_lines(settings)
    assert "huge" not in json.loads(line["payload"])["run"]["facets"]
    assert line["findings"] == ["facet_too_large: run.facets.huge"]


# --- size limits ---------------------------------------------------------------------------------


def gzip_bomb(inflated_gib: float) -> bytes:
    """Concatenated gzip members of 1 MiB of zeros each (RFC 1952 allows several members)."""
    member = gzip.compress(b"\0" * (1 << 20), compresslevel=9)
    return member * int(inflated_gib * 1024)


def test_a_gzip_bomb_is_refused_413_without_being_inflated(
    server: IntakeServer, settings: Settings
) -> None:
    bomb = gzip_bomb(2)  # ~2 MB on the wire, 2 GiB inflated
    assert len(bomb) < settings.lineage.max_body_bytes
    tracemalloc.start()
    started = time.perf_counter()
    try:
        status, payload = post(server, "/api/v1/lineage/batch", bomb, encoding="gzip")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    elapsed = time.perf_counter() - started
    assert status == 413 and payload["reason"] == "too_large"
    assert "decompressed" in payload["error"]
    assert elapsed < 5  # 2 GiB would take far longer to inflate
    assert peak < 64 << 20  # at most max_body_bytes (5 MiB) + 1 inflated, plus the body
    [line] = spool_lines(settings)
    assert line["reason_code"] == "too_large" and line["index"] == -1
    assert len(line["raw"]) == 64 * 1024  # the first 64 KiB, for audit

    status, payload = post(server, "/api/v1/lineage", bomb, encoding="gzip")
    assert status == 413


def test_a_plain_body_over_the_limit_is_refused_unread(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, max_body_bytes=64 * 1024)
    with IntakeServer(settings, lineage_routes(settings), token=TOKEN) as server:
        status, payload = post(server, "/api/v1/lineage", b" " * (65 * 1024))
        assert status == 413 and "lineage.max_body_bytes" in payload["hint"]
        # under the wire limit, over it once inflated: parse_events counts while inflating
        packed = zlib.compress(b" " * (65 * 1024))
        status, payload = post(server, "/api/v1/lineage", packed, encoding="deflate")
        assert status == 413 and payload["reason"] == "too_large"


def test_too_many_events_in_a_batch_is_413(tmp_path: Path, events: list[dict]) -> None:
    settings = make_settings(tmp_path, max_events=3)
    clock = Clock(NOW + timedelta(days=400))
    with IntakeServer(settings, lineage_routes(settings), token=TOKEN, clock=clock) as server:
        status, payload = post(server, "/api/v1/lineage/batch", dumps(events[:4]))
        assert status == 413 and payload["reason"] == "too_large"
        status, payload = post(server, "/api/v1/lineage/batch", dumps(events[:3]))
        assert status == 200 and payload["status"] == "success"
    lines = spool_lines(settings)
    assert [line["kind"] for line in lines].count("event") == 3
    assert [line["reason_code"] for line in lines if line["kind"] == "rejected"] == ["too_large"]


def test_other_methods_and_paths(server: IntakeServer) -> None:
    host, port = server.url.rsplit("//", 1)[1].rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request("GET", "/api/v1/lineage", headers={"Authorization": f"Bearer {TOKEN}"})
    response = connection.getresponse()
    response.read()
    assert response.status == 405 and response.getheader("Allow") == "POST"
    connection.close()


def test_an_unwritable_spool_answers_503(tmp_path: Path, events: list[dict]) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the spool folder should be")
    settings = Settings(
        serve=ServeSettings(port=0),
        lineage=LineageSettings(spool_dir=blocker / "spool", intake_workers=0),
    )
    clock = Clock(NOW + timedelta(days=400))
    with IntakeServer(settings, lineage_routes(settings), token=TOKEN, clock=clock) as server:
        status, payload = post(server, "/api/v1/lineage/batch", dumps(events[:2]))
    assert status == 503 and "retry" in payload["hint"]


def test_worker_processes_validate_concurrent_requests(tmp_path: Path, events: list[dict]) -> None:
    """With ``intake_workers`` the bodies are decoded and validated in other processes: the
    answers and the spool are the same, a bomb is still refused there, and close() stops them."""
    from concurrent.futures import ThreadPoolExecutor

    from collectors.lineage.intake import LineageIntake

    settings = make_settings(tmp_path, intake_workers=2)
    intake = LineageIntake(settings.lineage)
    at = NOW + timedelta(days=400)
    try:
        bodies = [dumps(events[i : i + 5]) for i in range(0, 20, 5)]
        with ThreadPoolExecutor(4) as threads:
            replies = list(
                threads.map(
                    lambda b: intake.batch(b, content_encoding=None, received_at=at), bodies
                )
            )
        assert [r.status for r in replies] == [200] * 4
        assert all(r.payload["summary"]["successful"] == 5 for r in replies)
        bomb = intake.batch(gzip_bomb(0.1), content_encoding="gzip", received_at=at)
        assert bomb.status == 413
        single = intake.single(
            dumps(dict(events[0], eventType="NOPE")),
            content_encoding=None,
            received_at=at + timedelta(seconds=1),
        )
        assert single.status == 422 and single.payload["reason"] == "unknown_event_type"
    finally:
        intake.close()
    kinds = [line["kind"] for line in spool_lines(settings)]
    assert kinds.count("event") == 20 and kinds.count("rejected") == 2


def test_worker_processes_start_with_their_own_allocator_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The validating processes start with WORKER_ENVIRONMENT (glibc's malloc, which keeps
    its heap between bodies); this process's environment is as it was, a value set before
    included."""
    import os

    from collectors.lineage.intake import WORKER_ENVIRONMENT, LineageIntake

    monkeypatch.setenv("MALLOC_TOP_PAD_", "4096")
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    before = dict(os.environ)
    intake = LineageIntake(make_settings(tmp_path, intake_workers=2).lineage)
    try:
        intake.wait_ready()
        pids = list(intake._start_pool()._processes)
        assert len(pids) == 2
        for pid in pids:
            pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            environment = dict(p.decode().split("=", 1) for p in pairs if b"=" in p)
            assert {k: environment.get(k) for k in WORKER_ENVIRONMENT} == WORKER_ENVIRONMENT
    finally:
        intake.close()
    assert dict(os.environ) == before

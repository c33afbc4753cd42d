"""``annex serve``'s attestation intake over real sockets: TLS, bearer auth, limits, nonces that
the verifier's ``check_nonce`` accepts, and spool files that keep the exact body, once."""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import socket
import ssl
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from annex.errors import ConfigError
from annex.settings import AttestationSettings, ServeSettings, Settings
from collectors.attestation.intake import spool_wrapper
from collectors.attestation.nonce import NonceCheck, check_nonce
from services.attestation import attestation_routes
from services.intake import IntakeServer

pytestmark = pytest.mark.integration

TLS_DIR = Path(__file__).resolve().parents[2] / "simulator" / "kubernetes" / "tls"
TOKEN = "intake-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
KEY = bytes(range(32))
ENV = {"ANNEX_INTAKE_TOKEN": TOKEN, "ANNEX_ATTESTATION_NONCE_KEY": KEY.hex()}
NOW = datetime(2026, 11, 2, 8, 10, 1, 123456, tzinfo=UTC)


def submission_body(node: str = "gpu-node-17", nonce: str = "ab" * 32) -> bytes:
    # Deliberately not orjson's formatting: the spool must keep these exact bytes.
    return (
        f'{{"schema": "annex.attestation/v1", "node_name": "{node}", "boot_id": "b-1",\n'
        f' "nonce": "{nonce}", "collected_at": "2026-11-02T08:10:00Z", "agent": "test/1 ü",'
        ' "evidence": [{"provider": "azure-maa", "token": "a.b.c"}]}'
    ).encode()


def make_settings(tmp_path: Path, *, tls: bool = False, max_body: int = 1 << 20) -> Settings:
    serve = ServeSettings(
        host="127.0.0.1",
        port=0,
        tls_cert_file=TLS_DIR / "simulator.crt" if tls else None,
        tls_key_file=TLS_DIR / "simulator.key" if tls else None,
        max_body_bytes=max_body,
    )
    attestation = AttestationSettings(spool_dir=tmp_path / "spool", max_submission_bytes=64 << 10)
    return Settings(serve=serve, attestation=attestation)


class Clock:
    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        return self.moment


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


def start(settings: Settings, clock: Clock, env: dict[str, str] = ENV) -> IntakeServer:
    return IntakeServer(settings, attestation_routes(settings, env=env), env=env, clock=clock)


def connect(server: IntakeServer) -> http.client.HTTPConnection:
    host, port = server.url.rsplit("//", 1)[1].rsplit(":", 1)
    if server.url.startswith("https"):
        context = ssl.create_default_context(cafile=str(TLS_DIR / "simulator.crt"))
        return http.client.HTTPSConnection(host, int(port), context=context, timeout=10)
    return http.client.HTTPConnection(host, int(port), timeout=10)


def post(
    server: IntakeServer, path: str, body: bytes, *, token: str | None = TOKEN
) -> tuple[int, dict, http.client.HTTPResponse]:
    connection = connect(server)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    connection.request("POST", path, body=body, headers=headers)
    response = connection.getresponse()
    payload = json.loads(response.read())
    connection.close()
    return response.status, payload, response


def raw_exchange(server: IntakeServer, request: bytes) -> bytes:
    """Send ``request`` as is and read until the server closes (or 5 s pass)."""
    host, port = server.url.rsplit("//", 1)[1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(request)
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except TimeoutError:
            pass
    return b"".join(chunks)


def spool_files(settings: Settings) -> list[Path]:
    return sorted((settings.attestation.spool_dir / "incoming").glob("*.json"))


@pytest.fixture
def plain(tmp_path: Path, clock: Clock) -> Iterator[IntakeServer]:
    with start(make_settings(tmp_path), clock) as server:
        yield server


# --- TLS, nonces, spool ------------------------------------------------------------------------


def test_over_tls_a_nonce_round_trip_agrees_with_check_nonce(tmp_path: Path, clock: Clock) -> None:
    settings = make_settings(tmp_path, tls=True)
    with start(settings, clock) as server:
        assert server.url.startswith("https://127.0.0.1:")
        status, payload, _ = post(
            server, "/api/v1/attestations/nonce", b'{"node_name": "gpu-node-17"}'
        )
    assert status == 200
    nonce = payload["nonce"]
    assert len(nonce) == 64 and int(nonce, 16) >= 0
    ttl = settings.attestation.nonce_ttl_seconds
    expires = datetime.fromisoformat(payload["expires_at"].replace("Z", "+00:00"))
    assert expires == (NOW + timedelta(seconds=ttl)).replace(microsecond=0)
    naive_now = NOW.replace(tzinfo=None)
    assert check_nonce(KEY, "gpu-node-17", nonce, at=naive_now) == NonceCheck.VALID
    assert check_nonce(KEY, "gpu-node-18", nonce, at=naive_now) == NonceCheck.FORGED
    later = naive_now + timedelta(seconds=ttl + 1)
    assert check_nonce(KEY, "gpu-node-17", nonce, at=later) == NonceCheck.EXPIRED
    assert check_nonce(b"x" * 32, "gpu-node-17", nonce, at=naive_now) == NonceCheck.FORGED


def test_tls_server_refuses_a_client_that_does_not_speak_tls(tmp_path: Path, clock: Clock) -> None:
    with start(make_settings(tmp_path, tls=True), clock) as server:
        reply = raw_exchange(
            server, b"POST /api/v1/attestations HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
        )
        assert not reply.startswith(b"HTTP/1.1 2")
        # and the server still serves a proper client afterwards
        status, _, _ = post(server, "/api/v1/attestations/nonce", b'{"node_name": "n"}')
        assert status == 200


def test_submission_is_spooled_with_its_exact_bytes(tmp_path: Path, clock: Clock) -> None:
    settings = make_settings(tmp_path, tls=True)
    body = submission_body()
    with start(settings, clock) as server:
        status, payload, _ = post(server, "/api/v1/attestations", body)
    assert status == 202
    digest = hashlib.sha256(body).hexdigest()
    assert payload == {"submission_id": digest}
    [spooled] = spool_files(settings)
    assert spooled.name == f"20261102T081001123456Z-{digest[:16]}.json"
    data = spooled.read_bytes()
    assert data == spool_wrapper(body, received_at=NOW, remote="127.0.0.1")
    wrapper = json.loads(data)
    assert wrapper["submission"].encode("utf-8") == body
    assert wrapper["received_at"] == "2026-11-02T08:10:01.123456Z"
    assert wrapper["source"] == "intake" and wrapper["remote"] == "127.0.0.1"
    assert not [p for p in spooled.parent.iterdir() if p.name.startswith(".")]  # no temp left


def test_the_same_body_twice_is_spooled_once_even_across_a_restart(
    tmp_path: Path, clock: Clock
) -> None:
    settings = make_settings(tmp_path)
    body = submission_body()
    with start(settings, clock) as server:
        first = post(server, "/api/v1/attestations", body)[:2]
        clock.moment = NOW + timedelta(seconds=5)
        again = post(server, "/api/v1/attestations", body)[:2]
        other = post(server, "/api/v1/attestations", submission_body(node="gpu-node-18"))[:2]
    assert first == again and first[0] == 202
    assert other[0] == 202 and other[1] != first[1]
    files = spool_files(settings)
    assert len(files) == 2
    content = {f.name: f.read_bytes() for f in files}
    clock.moment = NOW + timedelta(hours=1)
    with start(settings, clock) as server:  # a fresh process: the index is rebuilt from disk
        assert post(server, "/api/v1/attestations", body)[:2] == first
    assert {f.name: f.read_bytes() for f in spool_files(settings)} == content
    # once the collection has archived the first copy, a resend is spooled again
    (files[0] if "20261102T081001" in files[0].name else files[1]).unlink()
    with start(settings, clock) as server:
        assert post(server, "/api/v1/attestations", body)[:2] == first
    assert len(spool_files(settings)) == 2


def test_keep_alive_connection_serves_several_requests(plain: IntakeServer) -> None:
    connection = connect(plain)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    statuses = []
    for node in ("a", "b", "c"):
        connection.request(
            "POST", "/api/v1/attestations/nonce", b'{"node_name": "%s"}' % node.encode(), headers
        )
        response = connection.getresponse()
        response.read()
        statuses.append(response.status)
    connection.close()
    assert statuses == [200, 200, 200]


# --- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, "wrong-token-0123456789abcdef", TOKEN[:-1], ""])
def test_missing_or_wrong_token_is_401_and_nothing_is_spooled(
    tmp_path: Path, clock: Clock, token: str | None
) -> None:
    settings = make_settings(tmp_path)
    with start(settings, clock) as server:
        status, payload, response = post(
            server, "/api/v1/attestations", submission_body(), token=token
        )
        nonce_status = post(
            server, "/api/v1/attestations/nonce", b'{"node_name":"n"}', token=token
        )[0]
    assert status == 401 and nonce_status == 401
    assert response.getheader("WWW-Authenticate", "").startswith("Bearer")
    assert "bearer token" in payload["error"] and "ANNEX_INTAKE_TOKEN" in payload["hint"]
    assert spool_files(settings) == []


def test_a_basic_auth_header_with_the_token_is_not_accepted(plain: IntakeServer) -> None:
    connection = connect(plain)
    connection.request(
        "POST",
        "/api/v1/attestations/nonce",
        b'{"node_name": "n"}',
        {"Authorization": f"Basic {TOKEN}"},
    )
    assert connection.getresponse().status == 401


def test_no_content_length_is_411(plain: IntakeServer) -> None:
    auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
    reply = raw_exchange(
        plain, b"POST /api/v1/attestations HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n"
    )
    assert reply.startswith(b"HTTP/1.1 411 ")
    assert b'"Content-Length is required"' in reply
    chunked = raw_exchange(
        plain,
        b"POST /api/v1/attestations HTTP/1.1\r\nHost: x\r\n"
        + auth
        + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    )
    # issue 35: chunked bodies are accepted (decoded under the same cap): "hello" reaches the
    # handler, which refuses it as no JSON
    assert chunked.startswith(b"HTTP/1.1 400 ") and b"not UTF-8 JSON" in chunked


def test_oversize_body_is_413_before_the_body_is_sent(plain: IntakeServer) -> None:
    # Only the headers are sent: the 413 comes back without the server waiting for the body.
    limit = 64 << 10  # attestation.max_submission_bytes in these settings
    request = (
        "POST /api/v1/attestations HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Length: {limit + 1}\r\n\r\n"
    ).encode()
    reply = raw_exchange(plain, request)
    assert reply.startswith(b"HTTP/1.1 413 ")
    head, _, body = reply.partition(b"\r\n\r\n")
    assert b"Connection: close" in head
    payload = json.loads(body)
    assert "65,537 bytes" in payload["error"] and "65,536" in payload["error"]
    nonce_reply = raw_exchange(
        plain,
        (
            "POST /api/v1/attestations/nonce HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {TOKEN}\r\nContent-Length: 5000\r\n\r\n"
        ).encode(),
    )
    assert nonce_reply.startswith(b"HTTP/1.1 413 ")  # the nonce route's own, smaller limit


def test_server_limit_caps_every_route(tmp_path: Path, clock: Clock) -> None:
    settings = make_settings(tmp_path, max_body=1000)
    with start(settings, clock) as server:
        status, payload, _ = post(server, "/api/v1/attestations", submission_body() + b" " * 800)
    assert status == 413 and "1,000 bytes" in payload["error"]
    assert spool_files(settings) == []


def test_expect_100_continue_is_answered_only_after_auth(plain: IntakeServer) -> None:
    body = submission_body()
    head = (
        "POST /api/v1/attestations HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
        f"Content-Length: {len(body)}\r\n"
    )
    refused = raw_exchange(plain, (head + "Authorization: Bearer nope\r\n\r\n").encode())
    assert refused.startswith(b"HTTP/1.1 401 ")
    host, port = plain.url.rsplit("//", 1)[1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall((head + f"Authorization: Bearer {TOKEN}\r\n\r\n").encode())
        assert sock.recv(4096).startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(body)
        assert sock.recv(4096).startswith(b"HTTP/1.1 202 ")


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (b"not json", 400, "not UTF-8 JSON"),
        (b'"a string"', 400, "not an object"),
        (b'{"schema": "other/v9", "node_name": "n", "evidence": []}', 422, "schema"),
        (b'{"schema": "annex.attestation/v1", "evidence": []}', 422, "node_name"),
        (b'{"schema": "annex.attestation/v1", "node_name": "n", "evidence": {}}', 422, "evidence"),
        (b'{"schema": "annex.attestation/v1", "node_name": "\xff"}', 400, "UTF-8"),
    ],
)
def test_a_body_that_is_not_a_submission_is_refused_with_a_hint(
    tmp_path: Path, clock: Clock, body: bytes, status: int, words: str
) -> None:
    settings = make_settings(tmp_path)
    with start(settings, clock) as server:
        got, payload, _ = post(server, "/api/v1/attestations", body)
    assert got == status and words in payload["error"]
    assert spool_files(settings) == []


def test_nonce_request_needs_a_node_name(plain: IntakeServer) -> None:
    for body in (b"{}", b'{"node_name": ""}', b'{"node_name": 7}', b"[]"):
        status, payload, _ = post(plain, "/api/v1/attestations/nonce", body)
        assert status in (400, 422) and payload["error"]


def test_without_a_nonce_key_the_nonce_route_answers_503_and_submissions_still_work(
    tmp_path: Path, clock: Clock
) -> None:
    settings = make_settings(tmp_path)
    with start(settings, clock, env={"ANNEX_INTAKE_TOKEN": TOKEN}) as server:
        status, payload, _ = post(server, "/api/v1/attestations/nonce", b'{"node_name": "n"}')
        submitted = post(server, "/api/v1/attestations", submission_body())[0]
    assert status == 503
    assert "ANNEX_ATTESTATION_NONCE_KEY" in payload["hint"]
    assert submitted == 202


def test_unknown_path_is_404_and_wrong_method_405(plain: IntakeServer) -> None:
    connection = connect(plain)
    connection.request("GET", "/api/v1/elsewhere", headers={"Authorization": f"Bearer {TOKEN}"})
    response = connection.getresponse()
    payload = json.loads(response.read())
    assert response.status == 404 and "/api/v1/attestations" in payload["hint"]
    connection = connect(plain)
    connection.request("GET", "/api/v1/attestations", headers={"Authorization": f"Bearer {TOKEN}"})
    response = connection.getresponse()
    assert response.status == 405 and response.getheader("Allow") == "POST"


def test_health_check_needs_no_token(plain: IntakeServer) -> None:
    connection = connect(plain)
    connection.request("GET", "/healthz")
    response = connection.getresponse()
    assert response.status == 200 and json.loads(response.read()) == {"status": "ok"}


def test_the_server_refuses_to_start_without_a_token(tmp_path: Path, clock: Clock) -> None:
    settings = make_settings(tmp_path)
    with pytest.raises(ConfigError) as caught:
        start(settings, clock, env={})
    assert "ANNEX_INTAKE_TOKEN" in caught.value.message and caught.value.hint
    with pytest.raises(ConfigError, match="shorter than"):
        start(settings, clock, env={"ANNEX_INTAKE_TOKEN": "short"})


def test_a_short_nonce_key_is_refused_at_start(tmp_path: Path, clock: Clock) -> None:
    with pytest.raises(ConfigError, match="nonce key"):
        start(make_settings(tmp_path), clock, env={**ENV, "ANNEX_ATTESTATION_NONCE_KEY": "abcd"})


def test_tls_needs_both_files(tmp_path: Path, clock: Clock) -> None:
    settings = make_settings(tmp_path)
    half = Settings(
        serve=ServeSettings(port=0, tls_cert_file=TLS_DIR / "simulator.crt"),
        attestation=settings.attestation,
    )
    with pytest.raises(ConfigError, match="together"):
        start(half, clock)


def test_logs_never_hold_the_token_or_the_body(
    tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(tmp_path)
    body = submission_body(nonce="cd" * 32)
    caplog.set_level(logging.DEBUG)
    with start(settings, clock) as server:
        post(server, "/api/v1/attestations", body)
        post(server, "/api/v1/attestations", b"not json, secret-marker")
        post(server, "/api/v1/attestations/nonce?token=" + TOKEN, b'{"node_name": "n"}')
        post(server, "/api/v1/attestations", body, token="wrong-" + TOKEN)
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "path=/api/v1/attestations status=202" in text
    assert "status=401" in text and "status=400" in text
    for secret in (TOKEN, "cd" * 32, "secret-marker", "gpu-node-17", "a.b.c"):
        assert secret not in text


def test_connections_beyond_the_cap_are_closed_and_slots_come_back(
    tmp_path: Path, clock: Clock
) -> None:
    # issue 35: the cap counts authenticated connections (serve.max_connections); idle,
    # unauthenticated ones are pending and bounded apart (tests/integration/test_serve_flood.py)
    settings = make_settings(tmp_path)
    settings = replace(settings, serve=replace(settings.serve, max_connections=2))
    nonce = b'{"node_name": "n"}'
    with start(settings, clock) as server:
        held = [connect(server) for _ in range(2)]
        for connection in held:  # each keep-alive connection authenticated: a slot each
            connection.request("POST", "/api/v1/attestations/nonce", body=nonce, headers=AUTH)
            assert connection.getresponse().read() and connection.sock is not None
        status, payload, response = post(server, "/api/v1/attestations/nonce", nonce)
        assert status == 503 and response.getheader("Retry-After") == "1"
        assert "serve.max_connections" in payload["hint"]
        for connection in held:
            connection.close()
        time.sleep(0.3)
        status, _, _ = post(server, "/api/v1/attestations/nonce", nonce)
    assert status == 200

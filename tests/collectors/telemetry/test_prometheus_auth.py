"""Credentials for Prometheus: a bearer token or Prometheus' own basic auth, never both.

Settings name environment variables, never the secrets; the secrets travel only in the
``Authorization`` header (checked here on a loopback server) and never reach a message.
"""

from __future__ import annotations

import base64
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from annex.errors import CollectionError, ConfigError
from annex.settings import ClusterSettings, load_settings
from collectors.telemetry.query_range import PrometheusClient, fetch
from services.gpu_evidence import prometheus_basic_auth, prometheus_token


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "annex.toml"
    path.write_text(text)
    return path


def cluster(tmp_path: Path, extra: str) -> ClusterSettings:
    path = write(tmp_path, f"[[clusters]]\nname = 'c'\nprometheus_url = 'http://p:9090'\n{extra}")
    return load_settings(path, env={}).cluster("c")


def test_basic_auth_settings(tmp_path: Path) -> None:
    c = cluster(tmp_path, "prometheus_username = 'annex'\nprometheus_password_env = 'PROM_PW'\n")
    assert (c.prometheus_username, c.prometheus_password_env, c.prometheus_token_env) == (
        "annex",
        "PROM_PW",
        None,
    )


@pytest.mark.parametrize(
    ("extra", "key", "problem"),
    [
        (
            "prometheus_token_env = 'T'\nprometheus_username = 'u'\nprometheus_password_env = 'P'",
            "prometheus_username",
            "either a bearer token or basic auth",
        ),
        ("prometheus_token_env = 'T'\nprometheus_username = 'u'", "prometheus_username", "bearer"),
        ("prometheus_username = 'u'", "prometheus_password_env", "is required"),
        ("prometheus_password_env = 'P'", "prometheus_username", "is required"),
        (
            "prometheus_username = 'u'\nprometheus_password_env = 'not a name'",
            "prometheus_password_env",
            "variable name",
        ),
        ("prometheus_username = 'a:b'\nprometheus_password_env = 'P'", "prometheus_username", ":"),
    ],
)
def test_invalid_credentials_settings(tmp_path: Path, extra: str, key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        cluster(tmp_path, extra)
    assert key in str(info.value) and problem in str(info.value)


def test_password_comes_from_the_named_variable(monkeypatch) -> None:
    c = ClusterSettings(name="c", prometheus_username="annex", prometheus_password_env="PROM_PW")
    monkeypatch.setenv("PROM_PW", "s3cret-pw")
    assert prometheus_basic_auth(c) == ("annex", "s3cret-pw")
    assert prometheus_token(c) is None
    monkeypatch.delenv("PROM_PW")
    with pytest.raises(ConfigError, match="PROM_PW") as info:
        prometheus_basic_auth(c)
    assert "s3cret" not in str(info.value)
    both = ClusterSettings(
        name="c", prometheus_token_env="T", prometheus_username="u", prometheus_password_env="P"
    )
    with pytest.raises(ConfigError, match="either a bearer token or basic auth"):
        prometheus_basic_auth(both)


class _Echo(BaseHTTPRequestHandler):
    seen: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Authorization"))
        body = b'{"status":"success","data":{"resultType":"matrix","result":[]}}'
        if self.path.startswith("/api/v1/series"):
            body = b'{"status":"success","data":[{"__name__":"up","job":"j","pod":"p"}]}'
        status = 401 if self.path.startswith("/deny/") else 200
        if self.path.startswith("/missing/"):
            status = 404
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def echo():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Echo.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_headers_on_the_wire(echo: str) -> None:
    fetch(echo, timeout=5, max_bytes=1 << 20, basic_auth=("annex", "pw:with:colons"))
    fetch(echo, timeout=5, max_bytes=1 << 20, token="tok")
    fetch(echo, timeout=5, max_bytes=1 << 20)
    basic, bearer, none = _Echo.seen
    assert basic == "Basic " + base64.b64encode(b"annex:pw:with:colons").decode()
    assert (bearer, none) == ("Bearer tok", None)
    client = PrometheusClient(
        echo, token=None, timeout=5, max_response_bytes=1 << 20, basic_auth=("annex", "pw")
    )
    client.query_range("up", 0, 60, 60)
    assert _Echo.seen[-1] == "Basic " + base64.b64encode(b"annex:pw").decode()


def test_both_credentials_refused_before_any_request(echo: str) -> None:
    with pytest.raises(CollectionError, match="both a bearer token and basic auth"):
        fetch(echo, timeout=5, max_bytes=1024, token="t", basic_auth=("u", "p"))
    with pytest.raises(CollectionError, match="both a bearer token and basic auth"):
        PrometheusClient(echo, token="t", timeout=5, max_response_bytes=1024, basic_auth=("u", "p"))
    assert _Echo.seen == []


def test_targets_through_the_series_api(echo: str) -> None:
    """``up``'s label sets come from /api/v1/series; a store without it answers none."""
    client = PrometheusClient(echo, token=None, timeout=5, max_response_bytes=1 << 20)
    assert client.series('up{pod!=""}', 0, 60) == [{"__name__": "up", "job": "j", "pod": "p"}]
    missing = PrometheusClient(f"{echo}/missing", token=None, timeout=5, max_response_bytes=1024)
    assert missing.series("up", 0, 60) == []
    denied = PrometheusClient(f"{echo}/deny", token="t", timeout=5, max_response_bytes=1024)
    with pytest.raises(CollectionError) as info:
        denied.series("up", 0, 60)
    assert info.value.status == 401


def test_basic_auth_survives_the_settings_handed_to_dagster(tmp_path: Path) -> None:
    from pipelines.execution import write_settings

    settings = load_settings(
        write(
            tmp_path,
            "[[clusters]]\nname = 'c'\nprometheus_url = 'http://p:9090'\n"
            "prometheus_username = 'annex'\nprometheus_password_env = 'PROM_PW'\n",
        ),
        env={},
    )
    written = write_settings(settings, settings.clusters, tmp_path / "dagster.toml")
    again = load_settings(written, env={}).cluster("c")
    assert (again.prometheus_username, again.prometheus_password_env) == ("annex", "PROM_PW")
    assert "PROM_PW" in written.read_text() and "password =" not in written.read_text()

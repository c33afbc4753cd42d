"""The Kubernetes collector against a hostile API server on a loopback port.

The server (``HostileApiServer``, below) answers the five lists annex reads like an API server
(the paging of ``tests.helpers.kubernetes_api.FakeCluster``), except on the one path a test
makes hostile: a continue token that loops, a body trickled a byte every 2 s, a gzip bomb, an
HTML login page with status 200, objects whose text is not valid Unicode. Every test is
bounded by the collector's own deadlines (seconds), and asserts the error the operator sees.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import duckdb
import pytest

from annex.cli import main
from annex.errors import CollectionError
from annex.settings import (
    TOPOLOGY_PRESETS,
    ClusterSettings,
    KubernetesSettings,
    Settings,
    WarehouseSettings,
)
from collectors.kubernetes import api_client_for, collect_cluster
from tests.helpers import kubernetes_api as t
from warehouse import Warehouse
from warehouse.lock import writer_lock

pytestmark = pytest.mark.integration

NODES, PODS = "/api/v1/nodes", "/api/v1/pods"
Behaviour = Callable[[BaseHTTPRequestHandler, dict[str, str]], None]


def objects() -> dict[str, list[dict]]:
    return {
        NODES: [t.node(f"node-{i}") for i in range(3)],
        PODS: [t.pod(f"p{i}", node_name=f"node-{i % 3}") for i in range(5)],
        "/apis/batch/v1/jobs": [t.job("j1")],
        "/apis/scheduling.k8s.io/v1/priorityclasses": [t.priority_class("placeholder", -1)],
        "/api/v1/events": [t.event("e1")],
    }


class HostileApiServer:
    """A loopback API server; ``hostile[path]`` answers that path instead of the lists."""

    def __init__(self) -> None:
        self.fake = t.FakeCluster(objects())
        self.hostile: dict[str, Behaviour] = {}
        self.requests: list[str] = []
        self.stopping = threading.Event()
        self.reached = threading.Event()
        """Set when a hostile behaviour has started answering."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                server.requests.append(parts.path)
                behaviour = server.hostile.get(parts.path)
                if behaviour is not None:
                    server.reached.set()
                    behaviour(self, query)
                    return
                answer = server.fake.serve(self.path)
                self.send(answer.status, answer.data)

            def send(self, status: int, body: bytes, **headers: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", headers.pop("content_type", "application/json"))
                for name, value in headers.items():
                    self.send_header(name.replace("_", "-"), value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: object, client_address: object) -> None:
                pass  # the collector hanging up on a hostile answer is the point

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def page(self, path: str, items: list[dict], **metadata: str) -> bytes:
        body = {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "100"}}
        body["metadata"].update(metadata)
        body["items"] = items
        return json.dumps(body).encode()

    def write_kubeconfig(self, path: Path) -> Path:
        path.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"clusters:\n- name: hostile\n  cluster:\n    server: {self.url}\n"
            "contexts:\n- name: hostile\n  context:\n    cluster: hostile\n    user: annex\n"
            "current-context: hostile\n"
            "users:\n- name: annex\n  user:\n    token: not-a-secret\n"
        )
        return path


@pytest.fixture
def server() -> Iterator[HostileApiServer]:
    hostile = HostileApiServer()
    hostile.thread.start()
    try:
        yield hostile
    finally:
        hostile.stopping.set()
        hostile.httpd.shutdown()
        hostile.httpd.server_close()


def collect(server: HostileApiServer, tmp_path: Path, *, in_process: bool = True, **overrides):
    overrides.setdefault("page_size", 10)
    overrides.setdefault("max_backoff_seconds", 0.05)
    kubernetes = KubernetesSettings(**overrides)
    api = api_client_for(
        kubeconfig=server.write_kubeconfig(tmp_path / "kubeconfig"),
        context=None,
        in_cluster=False,
        settings=kubernetes,
    )
    try:
        return list(
            collect_cluster(
                api,
                cluster="hostile",
                settings=kubernetes,
                topology_levels=TOPOLOGY_PRESETS["generic"],
                in_process=in_process,
            )
        )
    finally:
        api.close()


def trickle(handler: BaseHTTPRequestHandler, query: dict[str, str]) -> None:
    """A complete page's headers, then its body one byte every 2 s."""
    server: HostileApiServer = handler.server_ref  # type: ignore[attr-defined]
    body = server.page(PODS, [t.pod("p0", node_name="node-0")])
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    for byte in body:
        if server.stopping.wait(2.0):
            return
        try:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
        except OSError:  # the collector gave up and closed the connection
            return


def hostile(server: HostileApiServer, path: str, behaviour: Behaviour) -> None:
    def bound(handler: BaseHTTPRequestHandler, query: dict[str, str]) -> None:
        handler.server_ref = server  # type: ignore[attr-defined]
        behaviour(handler, query)

    server.hostile[path] = bound


# --- a continue token that loops ------------------------------------------------------------


def test_a_continue_token_returned_twice_fails_the_list_instead_of_looping(server, tmp_path):
    def loop(handler, query):
        pods = [t.pod(f"loop-{len(server.requests)}", node_name="node-0")]
        handler.send(200, server.page(PODS, pods, **{"continue": "again"}))

    hostile(server, PODS, loop)
    with pytest.raises(CollectionError) as failed:
        collect(server, tmp_path)
    assert "returned the same continue token twice" in failed.value.message
    assert "listing pods" in failed.value.message
    assert server.requests.count(PODS) == 2  # the first page, then the token's page: stop


# --- a trickled body, through the CLI, with the writer lock free meanwhile --------------------


def test_a_trickled_body_fails_within_the_deadline_and_the_lock_stays_free(
    server, tmp_path, capsys
):
    hostile(server, PODS, trickle)
    config = tmp_path / "annex.toml"
    config.write_text(
        f'[warehouse]\npath = "{tmp_path / "annex.duckdb"}"\n'
        "[kubernetes]\npage_size = 10\nmax_retries = 1\nmax_backoff_seconds = 0.1\n"
        "response_deadline_seconds = 3\nlist_deadline_seconds = 30\n"
    )
    lock_taken: list[float] = []

    def second_writer() -> None:
        # While the collector waits on the stalled server, another writer gets the lock.
        assert server.reached.wait(20)
        time.sleep(0.5)
        with writer_lock(tmp_path / "annex.duckdb", timeout_seconds=1.0):
            lock_taken.append(time.monotonic())

    other = threading.Thread(target=second_writer)
    other.start()
    started = time.monotonic()
    code = main(
        [
            "--config",
            str(config),
            "collect",
            "cluster",
            "--kubeconfig",
            str(server.write_kubeconfig(tmp_path / "kubeconfig")),
            "--quiet",
        ]
    )
    elapsed = time.monotonic() - started
    other.join(timeout=10)
    err = capsys.readouterr().err
    assert code == CollectionError.exit_code == 4
    assert "page 1 did not arrive within kubernetes.response_deadline_seconds = 3 s" in err
    assert "hint:" in err
    assert elapsed < 15, elapsed  # one trickled page: 3 s and a read, not 2 s x body bytes
    assert lock_taken and lock_taken[0] - started < 5  # the lock was free meanwhile
    con = duckdb.connect(str(tmp_path / "annex.duckdb"), read_only=True)
    try:
        status, error = con.execute(
            "SELECT status, error FROM audit.collections WHERE source = 'kubernetes'"
        ).fetchone()
    finally:
        con.close()
    assert status == "failed" and "response_deadline_seconds" in error


def test_the_list_deadline_bounds_a_list_whatever_its_pages_do(server, tmp_path):
    hostile(server, PODS, trickle)
    started = time.monotonic()
    with pytest.raises(CollectionError) as failed:
        collect(server, tmp_path, list_deadline_seconds=2, response_deadline_seconds=60)
    assert time.monotonic() - started < 10
    assert "did not finish within kubernetes.list_deadline_seconds = 2 s" in failed.value.message


def test_annex_watch_fetches_its_list_without_holding_the_writer_lock(server, tmp_path):
    from collectors.kubernetes.history import WatchOptions
    from services.watch import WatchService

    def trickle_lists(handler, query):  # the one-item probe for the resourceVersion answers
        if query.get("limit") == "1":
            handler.send(200, server.page(PODS, []))
        else:
            trickle(handler, query)

    hostile(server, PODS, trickle_lists)
    kubernetes = KubernetesSettings(
        page_size=10, max_retries=0, response_deadline_seconds=3, max_backoff_seconds=0.05
    )
    settings = Settings(
        kubernetes=kubernetes, warehouse=WarehouseSettings(path=tmp_path / "annex.duckdb")
    )
    api = api_client_for(
        kubeconfig=server.write_kubeconfig(tmp_path / "kubeconfig"),
        context=None,
        in_cluster=False,
        settings=kubernetes,
    )
    service = WatchService(
        api,
        Warehouse(settings.warehouse),
        cluster="hostile",
        settings=settings,
        options=WatchOptions(streaming_list="never", timeout_seconds=5),
        resources=["pods"],
    )
    outcome: list[BaseException] = []

    def watch() -> None:
        try:
            service.catch_up(timeout_seconds=30)
        except BaseException as exc:  # handed to the test
            outcome.append(exc)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        assert server.reached.wait(20)
        time.sleep(0.5)
        with writer_lock(tmp_path / "annex.duckdb", timeout_seconds=1.0):
            pass  # free: the watch is downloading its list, not committing it
    finally:
        watcher.join(timeout=20)
        api.close()
    assert len(outcome) == 1 and isinstance(outcome[0], CollectionError)
    assert "response_deadline_seconds" in outcome[0].message


# --- a gzip bomb ------------------------------------------------------------------------------


def test_a_gzip_bomb_is_refused_at_the_cap_with_bounded_memory(server, tmp_path):
    # 64 MiB of JSON whitespace is ~64 KB gzipped; eight such members are half a MB that
    # inflate to 512 MiB (gzip allows members one after another; HTTP clients inflate them all)
    member = gzip.compress(b" " * (64 << 20), compresslevel=9)
    head = gzip.compress(b'{"kind":"PodList","metadata":{"resourceVersion":"1"},"items":[')
    bomb = head + member * 8
    assert len(bomb) < 600_000

    def serve_bomb(handler, query):
        handler.send(200, bomb, Content_Encoding="gzip")

    hostile(server, PODS, serve_bomb)
    cap = 8 << 20
    tracemalloc.start()
    try:
        with pytest.raises(CollectionError) as failed:
            collect(server, tmp_path, max_response_bytes=cap)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = failed.value.message
    assert f"page 1 is larger than kubernetes.max_response_bytes = {cap} bytes" in message
    assert "kubernetes.max_response_bytes" in failed.value.hint
    assert server.requests.count(PODS) == 1  # refused, not retried
    assert peak < 4 * cap, f"peak {peak / 2**20:.0f} MiB"  # not 512 MiB


# --- a proxy's login page ---------------------------------------------------------------------


def test_an_html_page_with_status_200_is_not_a_kubernetes_api_response(server, tmp_path):
    def login(handler, query):
        page = b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>...</body></html>"
        handler.send(200, page, content_type="text/html; charset=utf-8")

    hostile(server, NODES, login)
    with pytest.raises(CollectionError) as failed:
        collect(server, tmp_path)
    message = failed.value.message
    assert "not a Kubernetes API response" in message and "text/html" in message
    assert "<!DOCTYPE html>" in message
    assert "truncat" not in message
    assert "proxy" in failed.value.hint and "kubeconfig" in failed.value.hint
    assert server.requests.count(NODES) == 1  # no retries: it would answer the same


# --- objects of invalid text ------------------------------------------------------------------


def test_objects_of_invalid_text_are_rejected_with_their_reason_and_the_rest_loads(
    server, tmp_path
):
    good = [t.pod(f"p{i}", node_name="node-0") for i in range(3)]
    latin1 = t.pod("latin1", node_name="node-0")
    latin1["metadata"]["annotations"] = {"owner": "MARKER"}
    surrogate = t.pod("surrogate", node_name="node-0")
    surrogate["metadata"]["labels"] = {"team": "SURROGATE"}
    items = [good[0], latin1, good[1], surrogate, good[2]]
    body = server.page(PODS, items)
    body = body.replace(b'"MARKER"', b'"J\xfcrgen"')  # ISO-8859-1, not UTF-8
    body = body.replace(b'"SURROGATE"', b'"x\\udc80y"')  # an escaped lone surrogate

    hostile(server, PODS, lambda handler, query: handler.send(200, body))
    settings = Settings(
        kubernetes=KubernetesSettings(page_size=10),
        warehouse=WarehouseSettings(path=tmp_path / "annex.duckdb"),
    )
    from services.inventory import collect_cluster_inventory

    target = ClusterSettings(name="hostile", kubeconfig=server.write_kubeconfig(tmp_path / "kc"))
    result = collect_cluster_inventory(settings, Warehouse(settings.warehouse), target)
    assert result.status == "succeeded" and result.rejected_count == 2
    con = duckdb.connect(str(tmp_path / "annex.duckdb"), read_only=True)
    try:
        rejected = con.execute(
            "SELECT reason_code, message, raw FROM audit.rejected ORDER BY locator"
        ).fetchall()
        pods = con.execute(
            "SELECT pod_name FROM raw.kubernetes_pods WHERE collection_id = ? ORDER BY 1",
            [result.collection_id],
        ).fetchall()
    finally:
        con.close()
    assert [r[0] for r in rejected] == ["invalid_text", "invalid_text"]
    messages = " | ".join(r[1] for r in rejected)
    assert "not valid UTF-8" in messages and "0xfc" in messages
    assert "lone UTF-16 surrogate" in messages and "\\udc80" in messages
    raws = {bytes(r[2]) for r in rejected}
    assert any(b'"J\xfcrgen"' in raw for raw in raws)  # the original bytes are kept
    assert any(b'"x\\udc80y"' in raw for raw in raws)
    assert [p[0] for p in pods] == ["p0", "p1", "p2"]

"""The simulated attestation agent and issuer key server, over real loopback sockets.

The agent pushes to a stub intake written here with `http.server` (contract §2/§3 read
independently of annex's intake); the key server is read by PyJWT's own JWKS client.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest

from simulator.__main__ import main
from simulator.attestation.agent import AttestingAgent
from simulator.attestation.issuers import IssuerSet
from simulator.attestation.server import AttestationIssuerServer
from simulator.kubernetes.faults import Fault
from simulator.world import build_world
from simulator.world.attestation import attestation_plan

pytestmark = pytest.mark.integration

TOKEN = "intake-secret-token"


@pytest.fixture(scope="module")
def issuers() -> IssuerSet:
    return IssuerSet.create(0)


@pytest.fixture(scope="module")
def world():
    return build_world(40, seed=11)


class StubIntake:
    """Records every request; answers the nonce and submission routes as the contract says."""

    def __init__(self, nonce_status: int = 200, auth: bool = True) -> None:
        self.requests: list[dict] = []
        self.nonces: dict[str, str] = {}
        self.nonce_status = nonce_status
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                stub.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                if auth and self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    self._answer(401, {"error": "unauthorised"})
                elif self.path == "/api/v1/attestations/nonce":
                    if stub.nonce_status != 200:
                        self._answer(stub.nonce_status, {"error": "no nonce key"})
                        return
                    node = json.loads(body)["node_name"]
                    stub.nonces[node] = secrets.token_hex(32)
                    self._answer(
                        200, {"nonce": stub.nonces[node], "expires_at": "2099-01-01T00:00:00Z"}
                    )
                elif self.path == "/api/v1/attestations":
                    self._answer(202, {"submission_id": "x"})
                else:
                    self._answer(404, {"error": "not found"})

            def _answer(self, status: int, data: dict) -> None:
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> StubIntake:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def payload(token: str) -> dict:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def test_agent_asks_for_a_nonce_then_submits_with_it(world, issuers):
    plan = attestation_plan(world)
    chosen = sorted(plan)[:3]
    with StubIntake() as intake:
        agent = AttestingAgent(world, issuers, intake.url + "/", TOKEN, nodes=chosen)
        statuses = agent.run_once()
    attesting = [n for n in chosen if plan[n].fault != "missing"]
    assert statuses == [202] * len(attesting)
    assert [r["path"] for r in intake.requests] == [
        "/api/v1/attestations/nonce",
        "/api/v1/attestations",
    ] * len(attesting)
    nodes = {n["metadata"]["name"]: n for n in world.nodes}
    for ask, send in zip(intake.requests[::2], intake.requests[1::2], strict=True):
        for request in (ask, send):
            assert request["headers"]["Authorization"] == f"Bearer {TOKEN}"
            assert request["headers"]["Content-Type"] == "application/json"
        node = json.loads(ask["body"])["node_name"]
        assert json.loads(ask["body"]) == {"node_name": node}
        body = json.loads(send["body"].decode("utf-8"))
        assert body["schema"] == "annex.attestation/v1" and body["node_name"] == node
        assert body["nonce"] == intake.nonces[node]
        assert body["boot_id"] == nodes[node]["status"]["nodeInfo"]["bootID"]
        providers = [e["provider"] for e in body["evidence"]]
        assert providers[-1] == plan[node].cvm_provider
        gpu = body["evidence"][0]
        overall = payload(gpu["result"][0][1])
        assert overall["eat_nonce"] == intake.nonces[node]
        assert set(gpu["gpus"]) == set(gpu["result"][1]) == {f"GPU-{i}" for i in range(8)}
        for jws in gpu["result"][1].values():
            assert payload(jws)["eat_nonce"] == intake.nonces[node]
        cvm = payload(body["evidence"][-1]["token"])
        cvm_nonce = cvm.get("eat_nonce") or cvm["x-ms-runtime"]["client-payload"]["nonce"]
        assert cvm_nonce == intake.nonces[node]


def test_agent_uses_its_own_nonce_when_the_intake_has_none_and_stops_on_401(world, issuers):
    node = next(n for n, p in attestation_plan(world).items() if p.fault is None)
    with StubIntake(nonce_status=503) as intake:
        assert AttestingAgent(world, issuers, intake.url, TOKEN, nodes=[node]).run_once() == [202]
    body = json.loads(intake.requests[1]["body"])
    assert len(body["nonce"]) == 48  # not the collector's 64-hex format
    assert payload(body["evidence"][0]["result"][0][1])["eat_nonce"] == body["nonce"]
    with StubIntake() as intake:
        agent = AttestingAgent(world, issuers, intake.url, "wrong", nodes=[node])
        assert agent.run_once() == [401]
    assert [r["path"] for r in intake.requests] == ["/api/v1/attestations/nonce"]
    unreachable = AttestingAgent(world, issuers, "http://127.0.0.1:9", TOKEN, nodes=[node])
    assert unreachable.run_once() == [0]


def test_agent_schedule_runs_rounds_until_stopped(world, issuers):
    node = next(n for n, p in attestation_plan(world).items() if p.fault is None)
    with StubIntake() as intake:
        agent = AttestingAgent(
            world, issuers, intake.url, TOKEN, nodes=[node], interval_seconds=0.05
        )
        with agent:
            deadline = threading.Event()
            while agent.rounds < 2 and not deadline.wait(0.05):
                pass
        rounds = agent.rounds
        assert rounds >= 2 and len(intake.requests) == 2 * rounds


def test_key_server_publishes_what_pyjwt_needs(issuers):
    with AttestationIssuerServer(issuers) as keys:
        for name in ("nras", "maa", "ita"):
            issuer = issuers.by_name(name)
            token = issuer.sign({"iss": issuer.iss, "n": name})
            signing_key = jwt.PyJWKClient(keys.jwks_url(name)).get_signing_key_from_jwt(token)
            assert jwt.decode(token, signing_key.key, algorithms=[issuer.alg])["n"] == name
        with urllib.request.urlopen(keys.url + "/maa/.well-known/openid-configuration") as r:
            metadata = json.loads(r.read())
        assert metadata["jwks_uri"] == keys.jwks_url("maa")
        assert metadata["issuer"] == issuers.maa.iss
        assert metadata["id_token_signing_alg_values_supported"] == ["RS256"]
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(keys.url + "/nras/unknown")
        assert missing.value.code == 404
        keys.faults.add(Fault(kind="status", status=503, path_prefix="/ita/"))
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(keys.jwks_url("ita"))
        assert failed.value.code == 503
        paths = [(r.path, r.status) for r in keys.requests()]
        assert ("/ita/certs", 503) in paths and ("/nras/.well-known/jwks.json", 200) in paths


def test_command_line_writes_trust_history_and_pushes_once(tmp_path, monkeypatch, capsys):
    with StubIntake() as intake:
        monkeypatch.setenv("SIM_INTAKE_TOKEN", TOKEN)
        code = main(
            [
                "attestation",
                "--nodes", "12",
                "--trust-dir", str(tmp_path / "trust"),
                "--history-dir", str(tmp_path / "history"),
                "--days", "0.1",
                "--intake", intake.url,
                "--token-env", "SIM_INTAKE_TOKEN",
                "--once",
            ]
        )  # fmt: skip
    assert code == 0
    assert (tmp_path / "trust" / "issuers.toml").read_text().count("[[attestation.issuers]]") == 4
    assert sorted(os.listdir(tmp_path / "history"))
    assert "statuses [202]" in capsys.readouterr().out
    assert len(intake.requests) >= 2

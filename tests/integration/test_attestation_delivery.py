"""Attestation delivery end to end: the simulator's agents push to annex's intake over TLS, a
collection (through the CLI) verifies and loads every token, archives the files, and the
warehouse holds each node's verdicts as the world's plan says they must be."""

from __future__ import annotations

import hashlib
import json
import ssl
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from serve_process import annex_serve

from annex.cli import main
from annex.settings import Settings, load_settings
from services.attestation import attestation_routes, pending_submissions
from services.intake import IntakeServer
from simulator.attestation.agent import AttestingAgent
from simulator.attestation.issuers import LOCAL_SECRET, LOCAL_SECRET_ENV, IssuerSet
from simulator.world import build_world
from simulator.world.attestation import attestation_plan
from simulator.world.model import World
from warehouse import Warehouse

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
TLS_DIR = REPO / "simulator" / "kubernetes" / "tls"
TOKEN = "delivery-test-token-0123456789"
ENV = {
    "ANNEX_INTAKE_TOKEN": TOKEN,
    "ANNEX_ATTESTATION_NONCE_KEY": "5a" * 32,
    LOCAL_SECRET_ENV: LOCAL_SECRET.decode(),
}


def write_config(folder: Path, issuers: IssuerSet) -> Path:
    issuers.write_trust(folder / "trust")
    config = folder / "annex.toml"
    config.write_text(
        f"""
[warehouse]
path = "{folder / "annex.duckdb"}"

[serve]
port = 0
tls_cert_file = "{TLS_DIR / "simulator.crt"}"
tls_key_file = "{TLS_DIR / "simulator.key"}"

[attestation]
spool_dir = "{folder / "spool"}"

"""
        + issuers.settings_toml(folder / "trust"),
        encoding="utf-8",
    )
    return config


@pytest.fixture(scope="module")
def world() -> World:
    return build_world(16, seed=1)


@pytest.fixture(scope="module")
def issuers() -> IssuerSet:
    return IssuerSet.create(0)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    yield ENV


def client_tls() -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(TLS_DIR / "simulator.crt"))


def records(settings: Settings) -> list[dict]:
    with Warehouse(settings.warehouse).writer() as con:
        cursor = con.execute(
            "SELECT node_name, provider, token_role, verdict, reasons, assurance_tier, "
            "nonce_source, freshness_proven, token_sha256, raw_token_uri "
            "FROM core.attestation_records ORDER BY node_name, provider, token_role, submod_key"
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def test_agents_push_collection_loads_verdicts_and_archives(
    tmp_path: Path, world: World, issuers: IssuerSet, env: dict[str, str]
) -> None:
    config = write_config(tmp_path, issuers)
    settings = load_settings(config, env={})
    plans = attestation_plan(world)
    clock = world.now  # the world's present: agents, intake and plan agree on it

    def now() -> datetime:
        return clock

    routes = attestation_routes(settings, env=env)
    with IntakeServer(settings, routes, env=env, clock=now) as server:
        assert server.url.startswith("https://")
        agent = AttestingAgent(
            world, issuers, server.url, TOKEN, verify_tls=client_tls(), clock=now
        )
        statuses = agent.run_once()
    assert statuses == [202] * len(agent.plans) and len(agent.plans) >= 5
    assert pending_submissions(settings) == len(agent.plans)

    assert main(["--config", str(config), "collect", "attestations", "--cluster", "sim"]) == 0

    rows = records(settings)
    expected_tokens = sum(len(plans[p.node_name].gpus) + 2 for p in agent.plans)
    assert len(rows) == expected_tokens
    by_node: dict[str, list[dict]] = {}
    for row in rows:
        by_node.setdefault(row["node_name"], []).append(row)
    assert set(by_node) == {p.node_name for p in agent.plans}
    for plan in agent.plans:
        node_rows = by_node[plan.node_name]
        assert all(r["nonce_source"] == "collector" and r["freshness_proven"] for r in node_rows)
        fault = plan.fault_at(clock)
        gpu_rows = [r for r in node_rows if r["provider"].startswith("nvidia")]
        if fault is None:
            assert {r["verdict"] for r in node_rows} == {"pass"}, plan.node_name
            assert {r["assurance_tier"] for r in node_rows} == {"verified"}
        elif fault == "self_reported":
            assert {r["verdict"] for r in gpu_rows} == {"unverifiable"}
            assert all("self_reported" in r["reasons"] for r in gpu_rows)
        else:
            assert "fail" in {r["verdict"] for r in node_rows}, (plan.node_name, fault)
        assert len(gpu_rows) == len(plan.gpus) + 1

    # Every file was archived after the commit, and the rows point at the exact tokens there.
    assert pending_submissions(settings) == 0
    assert not list((settings.attestation.spool_dir / "incoming").glob("*.json"))
    single = next(r for r in rows if r["token_role"] == "single")
    archived = Path(urlsplit(single["raw_token_uri"]).path)
    assert archived.is_file() and archived.parent.parent.name == "archive"
    submission = json.loads(json.loads(archived.read_bytes())["submission"])
    tokens = [e["token"] for e in submission["evidence"] if "token" in e]
    assert hashlib.sha256(tokens[0].encode()).hexdigest() == single["token_sha256"]

    # A second collection finds nothing new and changes nothing.
    assert main(["--config", str(config), "collect", "attestations", "--cluster", "sim"]) == 0
    assert records(settings) == rows
    with Warehouse(settings.warehouse).writer() as con:
        [(collections,)] = con.execute(
            "SELECT count(*) FROM audit.collections WHERE source = 'attestation' "
            "AND status = 'succeeded'"
        ).fetchall()
    assert collections == 2


def test_a_failed_load_archives_nothing(
    tmp_path: Path,
    world: World,
    issuers: IssuerSet,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from annex.errors import WarehouseError
    from services import attestation as attestation_module
    from warehouse.models import attestation as model_module

    config = write_config(tmp_path, issuers)
    settings = load_settings(config, env={})
    with IntakeServer(settings, attestation_routes(settings, env=env), env=env) as server:
        agent = AttestingAgent(world, issuers, server.url, TOKEN, verify_tls=client_tls())
        agent.run_once()
    waiting = pending_submissions(settings)
    assert waiting == len(agent.plans)
    broken = model_module.ATTESTATION_MODEL.__class__(
        source="attestation",
        staging_sql=model_module.ATTESTATION_MODEL.staging_sql,
        merge_sql="SELECT no_such_column FROM stage_attestation_records",
    )
    with monkeypatch.context() as patch:
        patch.setattr(model_module, "ATTESTATION_MODEL", broken)
        with pytest.raises(WarehouseError):
            attestation_module.collect_attestation_evidence(settings, "sim", publish=False)
    assert pending_submissions(settings) == waiting  # every file still waits
    outcome = attestation_module.collect_attestation_evidence(settings, "sim", publish=False)
    assert outcome.archive.archived == waiting and pending_submissions(settings) == 0


def test_annex_serve_command_serves_until_sigterm(
    tmp_path: Path, issuers: IssuerSet, env: dict[str, str]
) -> None:
    config = write_config(tmp_path, issuers)
    with annex_serve(config, env) as served:
        assert served.url.startswith("https://127.0.0.1:"), served.url
        agent_tls = client_tls()
        request = urllib.request.Request(
            served.url + "/api/v1/attestations/nonce",
            data=b'{"node_name": "gpu-node-1"}',
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, context=agent_tls, timeout=10) as response:
            assert response.status == 200 and len(json.loads(response.read())["nonce"]) == 64
    assert served.process.returncode == 0
    assert "stopped" in served.stderr
    assert "method=POST path=/api/v1/attestations/nonce status=200" in served.stderr
    assert TOKEN not in served.stderr

"""OpenLineage delivery end to end: openlineage-python's HTTP transport (the simulator's
``deliver``) sends a 40-node world's lineage to annex's intake (the routes ``annex serve``
hosts) out of order, gzip-compressed and with duplicates; ``annex collect lineage`` loads it;
the warehouse holds one row per distinct event and each run's state by event time."""

from __future__ import annotations

import json
import urllib.request
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from serve_process import annex_serve

from annex.cli import main
from annex.settings import Settings, load_settings
from collectors.lineage.events import event_id
from services.attestation import attestation_routes
from services.intake import IntakeServer
from services.lineage import collect_lineage_evidence, lineage_routes, pending_lineage
from simulator.lineage.producer import build_events, deliver, to_json
from simulator.world import build_world
from warehouse import Warehouse

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOKEN = "lineage-delivery-token-0123456789"
ENV = {"ANNEX_INTAKE_TOKEN": TOKEN}
TERMINAL = ("COMPLETE", "ABORT", "FAIL")


class Clock:
    """The world's present, one microsecond later at each request (one spool file each)."""

    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        self.moment += timedelta(microseconds=1)
        return self.moment


def write_config(folder: Path) -> Path:
    config = folder / "annex.toml"
    config.write_text(
        f"""
[warehouse]
path = "{folder / "annex.duckdb"}"

[serve]
port = 0

[attestation]
spool_dir = "{folder / "attestations"}"

[lineage]
spool_dir = "{folder / "lineage"}"
""",
        encoding="utf-8",
    )
    return config


def query(settings: Settings, sql: str) -> list[tuple]:
    with Warehouse(settings.warehouse).writer() as con:
        return con.execute(sql).fetchall()


def expected_states(events: list[dict]) -> dict[str, tuple[str, datetime | None]]:
    """run_id -> (state, started_at) by the rules of reference §4, from the events alone."""
    by_run: dict[str, list[dict]] = defaultdict(list)
    for event in events:
        by_run[event["run"]["runId"]].append(event)

    def when(event: dict) -> datetime:
        moment = datetime.fromisoformat(event["eventTime"].replace("Z", "+00:00"))
        return moment.astimezone(UTC).replace(tzinfo=None)

    out = {}
    for run_id, run_events in by_run.items():
        terminal = [e for e in run_events if e.get("eventType") in TERMINAL]
        pool = terminal or [e for e in run_events if e.get("eventType")]
        decisive = max(pool, key=lambda e: (when(e), event_id(e)))
        starts = [when(e) for e in run_events if e.get("eventType") == "START"]
        out[run_id] = (decisive["eventType"], min(starts) if starts else None)
    return out


def test_openlineage_client_delivery_lands_in_the_warehouse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = build_world(40, seed=7)
    events = build_events(world)
    assert len(events) > 50
    config = write_config(tmp_path)
    settings = load_settings(config, env={})
    clock = Clock(world.now + timedelta(minutes=1))
    routes = [*attestation_routes(settings, env=ENV), *lineage_routes(settings)]
    with IntakeServer(settings, routes, env=ENV, clock=clock) as server:
        # one event per request through OpenLineageClient.emit (adds its tags run facet) ...
        single = deliver(events, server.url + "/", token=TOKEN, shuffle_seed=1)
        # ... and the same events again as batches of 25, in another order
        batched = deliver(events, server.url + "/", token=TOKEN, batch_size=25, shuffle_seed=2)
    assert single.duplicates and batched.duplicates  # some events were sent twice
    assert single.order != sorted(single.order)  # out of order
    assert pending_lineage(settings) == single.requests + batched.requests

    assert main(["--config", str(config), "collect", "lineage"]) == 0

    # What the producers sent: each event as the batch transport sends it, and as the client
    # sends it one by one (OpenLineageClient.emit adds its tags run facet): two distinct
    # events per event of the world, each stored once however often and in whatever order
    # it arrived.
    plain = [json.loads(to_json(e)) for e in events]
    stored = {row[0] for row in query(settings, "SELECT event_id FROM core.lineage_events")}
    assert {event_id(e) for e in plain} <= stored
    [(rows,)] = query(settings, "SELECT count(*) FROM core.lineage_events")
    assert rows == len(stored) == 2 * len(events)

    # Runs: state by event time (not arrival order), started_at the earliest START.
    states = expected_states(plain)
    runs = {
        row[0]: (row[1], row[2])
        for row in query(settings, "SELECT run_id, state, started_at FROM core.lineage_runs")
    }
    assert set(runs) >= set(states)
    for run_id, (state, started) in states.items():
        assert runs[run_id][0] == state, run_id
        assert runs[run_id][1] == started, run_id
    completed = sum(1 for state, _ in states.values() if state == "COMPLETE")
    assert completed and any(state == "START" for state, _ in states.values())

    # Training runs are linked to their Kubernetes Job by the annex_trainingRun facet.
    facets = {
        e["run"]["runId"]: e["run"]["facets"]["annex_trainingRun"]["kubernetes"]["jobName"]
        for e in plain
        if "annex_trainingRun" in e["run"].get("facets", {})
    }
    linked = query(
        settings,
        "SELECT run_id, kubernetes_job_name FROM core.lineage_runs "
        "WHERE kubernetes_job_name IS NOT NULL",
    )
    assert dict(linked) == facets and len(facets) > 40
    # The spool was archived after the commit, and a second collection changes nothing.
    assert pending_lineage(settings) == 0
    archived = list((settings.lineage.spool_dir / "archive").rglob("*.arrow"))
    assert len(archived) == single.requests + batched.requests
    assert main(["--config", str(config), "collect", "lineage", "--full-refresh"]) == 0
    [(again,)] = query(settings, "SELECT count(*) FROM core.lineage_events")
    assert again == rows
    # the first refresh rebuilds every closure, as does one asked for with --full-refresh
    modes = query(settings, "SELECT mode FROM audit.lineage_refreshes ORDER BY refreshed_at")
    assert modes == [("full",), ("full",)]
    [(collections,)] = query(
        settings,
        "SELECT count(*) FROM audit.collections WHERE source = 'lineage' "
        "AND cluster = '*' AND status = 'succeeded'",
    )
    assert collections == 2


def test_a_failed_load_archives_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from annex.errors import WarehouseError
    from warehouse.models import lineage as model_module

    world = build_world(8, seed=2)
    events = build_events(world)
    settings = load_settings(write_config(tmp_path), env={})
    clock = Clock(world.now + timedelta(minutes=1))
    with IntakeServer(settings, lineage_routes(settings), token=TOKEN, clock=clock) as server:
        deliver(events, server.url + "/", token=TOKEN, batch_size=10, duplicate_fraction=0)
    waiting = pending_lineage(settings)
    assert waiting == -(-len(events) // 10)
    broken = model_module.LINEAGE_MODEL.__class__(
        source="lineage",
        staging_sql=model_module.LINEAGE_MODEL.staging_sql,
        merge_sql="SELECT no_such_column FROM stage_lineage_events",
    )
    with monkeypatch.context() as patch:
        patch.setattr(model_module, "LINEAGE_MODEL", broken)
        with pytest.raises(WarehouseError):
            collect_lineage_evidence(settings, publish=False)
    assert pending_lineage(settings) == waiting  # every file still waits
    outcome = collect_lineage_evidence(settings, publish=False)
    assert outcome.archive.archived == waiting and pending_lineage(settings) == 0
    assert outcome.stats.events == len(events)
    assert outcome.refresh is not None


def test_collect_lineage_reads_named_files(tmp_path: Path) -> None:
    world = build_world(8, seed=2)
    events = build_events(world)
    settings = load_settings(write_config(tmp_path), env={})
    path = tmp_path / "events.jsonl"
    path.write_text("".join(to_json(e) + "\n" for e in events) + "{not json}\n")
    config = str(tmp_path / "annex.toml")
    assert main(["--config", config, "collect", "lineage", "--file", str(path)]) == 0
    [(rows,)] = query(settings, "SELECT count(*) FROM core.lineage_events")
    assert rows == len(events)
    [(rejected,)] = query(
        settings,
        "SELECT count(*) FROM audit.rejected WHERE source = 'lineage' "
        f"AND reason_code = 'invalid_json' AND locator = '{path}#{len(events) + 1}'",
    )
    assert rejected == 1
    assert path.exists()
    missing = str(tmp_path / "missing.jsonl")
    assert main(["--config", config, "collect", "lineage", "--file", missing]) != 0


def test_annex_spdx_writes_a_model_document(tmp_path: Path, capsys) -> None:
    world = build_world(8, seed=2)
    path = tmp_path / "events.jsonl"
    path.write_text("".join(to_json(e) + "\n" for e in build_events(world)))
    config = str(tmp_path / "annex.toml")
    settings = load_settings(write_config(tmp_path), env={})
    assert main(["--config", config, "collect", "lineage", "--file", str(path)]) == 0
    [(model, checkpoint, leaves)] = query(
        settings,
        "SELECT m.model_name, m.model_version_id, count(*) FILTER (WHERE i.is_leaf "
        "AND i.in_eu_scope AND i.kind = 'DATASET') FROM marts.lineage_models AS m "
        "JOIN marts.lineage_model_inputs AS i USING (model_version_id) "
        "GROUP BY ALL ORDER BY 3 DESC, 1 LIMIT 1",
    )
    out = tmp_path / "model.spdx.json"
    args = ["--config", config, "spdx", "--model", model, "--checkpoint", checkpoint]
    assert main([*args, "-o", str(out)]) == 0
    graph = json.loads(out.read_text())["@graph"]
    types = defaultdict(list)
    for element in graph:
        types[element["type"]].append(element)
    [package] = types["ai_AIPackage"]
    assert package["name"] == model
    assert len(types["dataset_DatasetPackage"]) == leaves > 0
    capsys.readouterr()
    assert main([*args, "-o", "-"]) == 0  # to stdout: the same document
    again = json.loads(capsys.readouterr().out)["@graph"]
    ids = sorted(str(e.get("spdxId", e.get("@id"))) for e in graph)
    assert sorted(str(e.get("spdxId", e.get("@id"))) for e in again) == ids
    missing = tmp_path / "missing.spdx.json"
    assert main(["--config", config, "spdx", "--model", "no-such-model", "-o", str(missing)]) != 0
    assert "annex sql" in capsys.readouterr().err and not missing.exists()


def test_annex_serve_hosts_the_lineage_routes(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with annex_serve(config, ENV) as served:
        assert served.url.startswith("http://127.0.0.1:"), served.url
        listing = "".join(served.process.stdout.readline() for _ in range(4))
        assert "POST /api/v1/lineage\n" in listing and "POST /api/v1/lineage/batch" in listing
        world = build_world(8, seed=2)
        events = build_events(world)[:3]
        deliver(events, served.url + "/", token=TOKEN, batch_size=3, duplicate_fraction=0)
        request = urllib.request.Request(
            served.url + "/api/v1/lineage/batch",
            data=b"[]",
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200 and json.loads(response.read())["status"] == "success"
    assert served.process.returncode == 0
    assert "method=POST path=/api/v1/lineage/batch status=200" in served.stderr
    assert TOKEN not in served.stderr
    assert len(list((tmp_path / "lineage" / "incoming").glob("*.arrow"))) == 1

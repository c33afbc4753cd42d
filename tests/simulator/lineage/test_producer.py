"""The simulator's OpenLineage producer: deterministic, tied to the world's Jobs, valid, delivered.

The official OpenLineage 2-0-2 schemas are the oracle for the events' shape; the annex facets
are checked against the contract's enums here; the graph and the delivery are checked from
what the events and a stub HTTP server actually carry.
"""

from __future__ import annotations

import gzip
import json
import threading
import uuid
from collections import Counter, defaultdict
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource

from simulator.lineage import (
    EU_CATEGORIES,
    MALFORMED_KINDS,
    PRODUCER,
    build_catalog,
    build_events,
    deliver,
    delivery_order,
    malformed_bodies,
    post_malformed,
    run_uuid,
    to_json,
    uuid7,
    write_jsonl,
)
from simulator.world import build_world
from tests.helpers.paths import REPO_ROOT

ROOT = REPO_ROOT
# where the schemas come from, first copy of each $id wins: the repo's vendored official event
# schema and annex's own facet schemas, this test's copy of the standard facets it needs,
# then (outside CI) the reference beside the project
SCHEMA_FILES = (
    ROOT / "collectors" / "lineage" / "spec" / "OpenLineage.json",
    *sorted((ROOT / "collectors" / "lineage" / "facets").glob("*.json")),
    *sorted((Path(__file__).parent / "schemas").glob("**/*.json")),
    Path("/work/shared/reference/openlineage-spec/OpenLineage.json"),
)
ANNEX_SCHEMAS = ROOT / "collectors" / "lineage" / "facets"
RUN_EVENT = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"


@pytest.fixture(scope="module")
def world():
    return build_world(40, seed=7)


@pytest.fixture(scope="module")
def events(world):
    return build_events(world)


@pytest.fixture(scope="module")
def payloads(events):
    return [json.loads(to_json(e)) for e in events]


# ---- determinism -------------------------------------------------------------------------


def test_same_seed_same_events_other_seed_other_events(world, events):
    again = build_events(build_world(40, seed=7))
    assert [to_json(e) for e in again] == [to_json(e) for e in events]
    other = build_events(build_world(40, seed=8))
    assert {e.run.runId for e in other}.isdisjoint({e.run.runId for e in events})
    assert build_catalog(7, world.now) == build_catalog(7, world.now)
    assert build_catalog(7, world.now) != build_catalog(8, world.now)


def test_catalog_does_not_depend_on_cluster_size(world):
    small = {
        _node(d)
        for p in _all(build_events(build_world(5, seed=7)))
        for d in p.get("inputs", [])
        if _leaf_category(d)
    }
    large = {
        _node(d)
        for p in _all(build_events(world))
        for d in p.get("inputs", [])
        if _leaf_category(d)
    }
    assert small == large


def _all(events):
    return [json.loads(to_json(e)) for e in events]


def _leaf_category(dataset: dict) -> str | None:
    source = dataset.get("facets", {}).get("annex_source")
    if source and source["sourceCategory"] != "DERIVED":
        return source["sourceCategory"]
    return None


# ---- the world's Kubernetes Jobs ---------------------------------------------------------


def test_every_started_training_job_has_its_events(world, payloads):
    by_job: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for p in payloads:
        facet = p["run"]["facets"].get("annex_trainingRun")
        if facet:
            k8s = facet["kubernetes"]
            assert k8s["cluster"] == "simulated"
            by_job[(k8s["namespace"], k8s["jobName"])].append(p)
    runs = {r.run_id: r for r in world.training_runs}
    checked = Counter()
    for job in world.jobs:
        meta = job["metadata"]
        if "training.annex.dev/run" not in meta.get("labels", {}):
            continue  # not a training Job (the GPU benchmark probe)
        run = runs[meta["labels"]["training.annex.dev/run"]]
        got = by_job.get((meta["namespace"], meta["name"]), [])
        if run.state == "queued":
            assert got == [], "a queued Job has no trainer yet, so no events"
            checked["queued"] += 1
            continue
        assert got, f"no events for Job {meta['namespace']}/{meta['name']}"
        for p in got:
            assert p["job"] == {**p["job"], "namespace": f"annex-sim://{meta['namespace']}"}
            assert p["job"]["name"] == meta["name"]
            assert (
                p["run"]["facets"]["annex_trainingRun"]["modelName"]
                == (meta["labels"]["training.annex.dev/model"])
            )
            assert p["run"]["facets"]["parent"]["job"]["name"].endswith(".campaign")
        types = [p["eventType"] for p in got]
        status = job["status"]
        if status.get("completionTime"):
            assert types == ["START", "COMPLETE"]
            assert got[1]["outputs"][0]["facets"]["datasetType"]["datasetType"] == "MODEL"
            checked["complete"] += 1
        elif status.get("failed"):
            assert types == ["START", "FAIL"]
            assert got[1]["run"]["facets"]["errorMessage"]["message"]
            checked["fail"] += 1
        else:
            assert types == ["START"]
            checked["running"] += 1
        run_ids = {p["run"]["runId"] for p in got}
        assert run_ids == {run_uuid(world, run)}
        rid = uuid.UUID(run_ids.pop())
        assert rid.version == 7
        assert rid.int >> 80 == int(run.started.timestamp() * 1000)
        assert got[0]["eventTime"].startswith(run.started.strftime("%Y-%m-%dT%H:%M:%S"))
    assert checked["complete"] and checked["fail"] and checked["running"] and checked["queued"]


def test_producer_and_facets_are_marked_simulated(payloads):
    assert "simulator" in PRODUCER
    for p in payloads:
        assert p["producer"] == PRODUCER
        for facet in _facets(p):
            assert facet["_producer"] == PRODUCER


def _facets(p: dict):
    yield from p["run"].get("facets", {}).values()
    yield from p["job"].get("facets", {}).values()
    for d in p.get("inputs", []) + p.get("outputs", []):
        yield from d.get("facets", {}).values()
        yield from d.get("inputFacets", {}).values()
        yield from d.get("outputFacets", {}).values()


# ---- the graph ---------------------------------------------------------------------------


def _graph(payloads):
    """Run -> dataset-version edges: (namespace, name, version) nodes and run ids."""
    edges: dict[object, set] = defaultdict(set)
    kinds: dict[object, str] = {}
    for p in payloads:
        run = ("run", p["run"]["runId"])
        for d in p.get("inputs", []):
            node = _node(d)
            edges[node].add(run)
            kinds[node] = d["facets"].get("datasetType", {}).get("datasetType", "DATASET")
        for d in p.get("outputs", []):
            node = _node(d)
            edges[run].add(node)
            kinds[node] = d["facets"].get("datasetType", {}).get("datasetType", "DATASET")
    return edges, kinds


def _node(d: dict) -> tuple:
    version = d.get("facets", {}).get("version", {}).get("datasetVersion")
    return (d["namespace"], d["name"], version)


def _reach(edges, start) -> set:
    seen, stack = set(), [start]
    while stack:
        for nxt in edges.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def test_graph_is_acyclic_with_a_diamond(payloads):
    edges, kinds = _graph(payloads)
    # Kahn: every node drains, so there is no cycle
    nodes = set(edges) | {n for targets in edges.values() for n in targets}
    indegree = Counter(n for targets in edges.values() for n in targets)
    ready = [n for n in nodes if indegree[n] == 0]
    drained = 0
    while ready:
        node = ready.pop()
        drained += 1
        for nxt in edges.get(node, ()):
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    assert drained == len(nodes)
    # a diamond: one corpus version read by two stages whose outputs both feed one model
    diamonds = []
    for dataset, readers in edges.items():
        if dataset[0] == "run" or len(readers) < 2:
            continue
        readers = sorted(readers)
        for i, a in enumerate(readers):
            below_a = {n for n in _reach(edges, a) if kinds.get(n) == "MODEL"}
            for b in readers[i + 1 :]:
                shared = below_a & {n for n in _reach(edges, b) if kinds.get(n) == "MODEL"}
                if shared:
                    diamonds.append((dataset, a, b, sorted(shared)[0]))
    assert any(d[0][0] == "s3://annex-sim-corpora" for d in diamonds), diamonds[:3]


def test_stages_chain_from_crawl_to_checkpoint(payloads):
    stages = Counter(
        p["run"]["facets"]["annex_trainingRun"]["stage"]
        for p in payloads
        if "annex_trainingRun" in p["run"]["facets"]
    )
    assert {"DATA_PROCESSING", "PRETRAINING", "FINE_TUNING", "SYNTHETIC_GENERATION"} <= set(stages)
    edges, kinds = _graph(payloads)
    crawls = [n for n in edges if n[0].startswith("crawl://")]
    assert crawls
    for crawl in crawls:
        assert any(kinds.get(n) == "MODEL" for n in _reach(edges, crawl)), crawl
    # synthetic generation reads a checkpoint and writes a SYNTHETIC dataset naming its model
    for p in payloads:
        facet = p["run"]["facets"].get("annex_trainingRun", {})
        if facet.get("stage") == "SYNTHETIC_GENERATION" and p["eventType"] == "COMPLETE":
            assert any(d["facets"].get("datasetType") for d in p["inputs"])
            (out,) = p["outputs"]
            source = out["facets"]["annex_source"]
            assert source["sourceCategory"] == "SYNTHETIC"
            assert source["generatorModels"] == [facet["modelName"]]


# ---- sources -----------------------------------------------------------------------------


def test_sources_cover_every_eu_category(payloads):
    produced = {_node(d) for p in payloads for d in p.get("outputs", [])}
    leaves: dict[tuple, dict] = {}
    for p in payloads:
        for d in p.get("inputs", []):
            if _node(d) not in produced:
                leaves[_node(d)] = d["facets"]
    categories = Counter(f["annex_source"]["sourceCategory"] for f in leaves.values())
    assert set(categories) == set(EU_CATEGORIES), categories
    for node, facets in leaves.items():
        category = facets["annex_source"]["sourceCategory"]
        licensing = facets["annex_licensing"]
        size = facets["annex_content"]["size"]
        assert size["tokens"] > 0 and size["bytes"] > 0 and size["items"] > 0
        assert facets["version"]["datasetVersion"]
        if category == "PUBLIC_DATASET":
            assert node[0] == "hf://datasets" and licensing["hfLicenseId"]
            assert facets["annex_source"]["publiclyAvailable"] is True
        if category == "PRIVATE_LICENSED":
            assert licensing["copyrightStatus"] == "LICENSED_BY_AGREEMENT"
            assert licensing["licensor"]
        if category == "CRAWLED":
            assert node[0].startswith("crawl://")
            crawl = facets["annex_crawl"]
            assert crawl["collectionPeriod"]["start"] < crawl["collectionPeriod"]["end"]
            assert crawl["optOut"]["robotsTxt"] == "RESPECTED"
            assert facets["annex_content"]["domainStats"]["topN"]
        if category == "USER_DATA":
            assert facets["annex_personalData"]["present"] == "yes"
            assert facets["annex_personalData"]["measures"]
        if category == "SYNTHETIC":
            assert facets["annex_source"]["generatorModels"]
    spdx = {f["annex_licensing"]["spdxExpression"] for f in leaves.values()}
    assert {"ODC-By-1.0", "CC-BY-SA-4.0", "NOASSERTION"} <= spdx
    assert any(s.startswith("LicenseRef-") for s in spdx)


# ---- schemas -----------------------------------------------------------------------------


def _registry() -> Registry:
    resources: dict[str, Resource] = {}
    for path in SCHEMA_FILES:
        if path.is_file():
            schema = json.loads(path.read_text())
            resources.setdefault(schema["$id"], Resource.from_contents(schema))
    if "https://openlineage.io/spec/2-0-2/OpenLineage.json" not in resources:
        pytest.fail(f"no OpenLineage.json 2-0-2 among {[str(p) for p in SCHEMA_FILES]}")
    return Registry().with_resources(resources.items())


ANNEX_FACETS = {  # the contract's fields and enums (one level deep where it names them)
    "annex_source": {
        "required": ["sourceCategory", "publiclyAvailable"],
        "properties": {
            "sourceCategory": {"enum": [*EU_CATEGORIES, "DERIVED"]},
            "publiclyAvailable": {"type": "boolean"},
            "generatorModels": {"type": "array", "items": {"type": "string"}},
            "description": {"type": "string"},
        },
    },
    "annex_licensing": {
        "required": ["spdxExpression", "copyrightStatus"],
        "properties": {
            "spdxExpression": {"type": "string", "minLength": 1},
            "hfLicenseId": {"type": ["string", "null"]},
            "copyrightStatus": {
                "enum": [
                    "PUBLIC_DOMAIN",
                    "OPEN_LICENSED",
                    "LICENSED_BY_AGREEMENT",
                    "MIXED_THIRD_PARTY",
                    "OWN_CONTENT",
                    "UNKNOWN",
                ]
            },
            "tdmExceptionReliedOn": {"enum": ["EU_DSM_ART3", "EU_DSM_ART4", "NONE", None]},
            "licensor": {"type": ["string", "null"]},
        },
    },
    "annex_crawl": {
        "required": ["crawlerName", "purpose", "collectionPeriod", "optOut", "paywallPolicy"],
        "properties": {
            "collectionPeriod": {
                "required": ["start", "end"],
                "properties": {
                    "start": {"type": "string", "format": "date"},
                    "end": {"type": "string", "format": "date"},
                },
            },
            "optOut": {
                "required": ["robotsTxt", "tdmrep", "ietfAipref", "aiTxt", "checkedAt"],
                "properties": {
                    **{
                        k: {"enum": ["RESPECTED", "NOT_RESPECTED", "NOT_CHECKED"]}
                        for k in ("robotsTxt", "tdmrep", "ietfAipref", "aiTxt")
                    },
                    "checkedAt": {"enum": ["FETCH_TIME", "INGEST_TIME"]},
                    "documentsExcluded": {"type": "integer", "minimum": 0},
                },
            },
            "paywallPolicy": {"enum": ["NO_CIRCUMVENTION", "OTHER"]},
        },
    },
    "annex_content": {
        "required": ["modality", "size"],
        "properties": {
            "modality": {"enum": ["TEXT", "IMAGE", "AUDIO", "VIDEO", "OTHER"]},
            "contentTypes": {"type": "array", "items": {"type": "string"}},
            "languages": {"type": "array", "items": {"type": "string"}},
            "size": {
                "required": ["tokens", "bytes", "items"],
                "additionalProperties": {"type": "integer", "minimum": 0},
            },
            "latestCollectionDate": {"type": "string", "format": "date"},
            "domainStats": {
                "required": ["topN"],
                "properties": {
                    "topN": {
                        "type": "array",
                        "items": {
                            "required": ["domain", "tokens"],
                            "properties": {"tokens": {"type": "integer", "minimum": 0}},
                        },
                    }
                },
            },
        },
    },
    "annex_personalData": {
        "required": ["present", "sensitive", "measures"],
        "properties": {
            "present": {"enum": ["yes", "no", "noAssertion"]},
            "sensitive": {"enum": ["yes", "no", "noAssertion"]},
        },
    },
    "annex_illegalContent": {
        "required": ["measures", "removedItems"],
        "properties": {"removedItems": {"type": "integer", "minimum": 0}},
    },
    "annex_trainingUsage": {
        "required": ["tokensConsumed", "epochs", "samplingWeight"],
        "properties": {
            "tokensConsumed": {"type": "integer", "minimum": 0},
            "epochs": {"type": "number", "minimum": 0},
            "samplingWeight": {"type": "number", "minimum": 0, "maximum": 1},
        },
    },
    "annex_trainingRun": {
        "required": ["stage", "kubernetes"],
        "properties": {
            "stage": {
                "enum": [
                    "PRETRAINING",
                    "FINE_TUNING",
                    "SYNTHETIC_GENERATION",
                    "EVALUATION",
                    "DATA_PROCESSING",
                ]
            },
            "modelName": {"type": "string", "minLength": 1},
            "kubernetes": {"required": ["cluster", "namespace", "jobName"]},
        },
    },
}
CLASSES = {
    "annex_source": "AnnexSourceDatasetFacet",
    "annex_licensing": "AnnexLicensingDatasetFacet",
    "annex_crawl": "AnnexCrawlDatasetFacet",
    "annex_content": "AnnexContentDatasetFacet",
    "annex_personalData": "AnnexPersonalDataDatasetFacet",
    "annex_illegalContent": "AnnexIllegalContentDatasetFacet",
    "annex_trainingUsage": "AnnexTrainingUsageInputDatasetFacet",
    "annex_trainingRun": "AnnexTrainingRunRunFacet",
}


def _keyed_facets(p: dict):
    yield from p["run"].get("facets", {}).items()
    yield from p["job"].get("facets", {}).items()
    for d in p.get("inputs", []) + p.get("outputs", []):
        for group in ("facets", "inputFacets", "outputFacets"):
            yield from d.get(group, {}).items()


def test_events_validate_against_the_official_schemas(payloads):
    registry = _registry()
    checker = FormatChecker()
    validator = Draft202012Validator({"$ref": RUN_EVENT}, registry=registry, format_checker=checker)
    standard: dict[str, Draft202012Validator] = {}
    seen = Counter()
    annex_checked: set[str] = set()
    for p in payloads:
        errors = sorted(validator.iter_errors(p), key=str)
        assert not errors, errors[0].message
        assert p["schemaURL"] == RUN_EVENT
        for key, facet in _keyed_facets(p):
            url = facet["_schemaURL"]
            if key.startswith("annex_"):
                name = CLASSES[key]
                assert url == f"https://annex.dev/spec/facets/1-0-0/{name}.json#/$defs/{name}"
                Draft202012Validator(ANNEX_FACETS[key], format_checker=checker).validate(facet)
                assert (ANNEX_SCHEMAS / f"{name}.json").is_file(), name  # the ingester's schema
                annex_checked.add(key)
                seen[key] += 1
                continue
            if url not in standard:
                registry.resolver().lookup(url)  # vendored, or this fails
                standard[url] = Draft202012Validator(
                    {"$ref": url}, registry=registry, format_checker=checker
                )
            errors = list(standard[url].iter_errors(facet))
            assert not errors, (key, errors[0].message)
            seen[key] += 1
    assert set(CLASSES) <= set(seen)
    assert annex_checked == set(CLASSES)
    assert {"parent", "datasetType", "version", "jobType", "errorMessage"} <= set(seen)


def test_the_validator_would_catch_a_broken_event(payloads):
    registry = _registry()
    validator = Draft202012Validator(
        {"$ref": RUN_EVENT}, registry=registry, format_checker=FormatChecker()
    )
    broken = json.loads(json.dumps(payloads[0]))
    broken["run"]["runId"] = "not-a-uuid"
    broken["eventType"] = "BOGUS"
    assert len(list(validator.iter_errors(broken))) >= 2


# ---- uuid7 and delivery order ----------------------------------------------------------


def test_uuid7_layout():
    moment = datetime.fromisoformat("2026-11-02T09:00:00.123+00:00")
    value = uuid.UUID(uuid7(moment, "k"))
    assert value.version == 7 and value.variant == uuid.RFC_4122
    assert value.int >> 80 == int(moment.timestamp() * 1000)
    assert uuid7(moment, "k") == str(value) != uuid7(moment, "other")


def test_delivery_order_shuffles_and_resends_later():
    order, duplicates = delivery_order(200, shuffle_seed=3, duplicate_fraction=0.1)
    assert len(duplicates) == 20
    assert sorted(order) == sorted([*range(200), *duplicates])
    assert order != sorted(order)
    assert delivery_order(200, shuffle_seed=3, duplicate_fraction=0.1) == (order, duplicates)
    with pytest.raises(ValueError):
        delivery_order(3, duplicate_fraction=1.5)


# ---- delivery over HTTP ------------------------------------------------------------------


class _Stub(BaseHTTPRequestHandler):
    received: list[tuple[str, dict, bytes]]

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, dict(self.headers), body))
        if self.path.endswith("/batch"):
            reply = json.dumps({"status": "success"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)
        else:
            try:  # refuse what is not (gzip-compressed) JSON, as any endpoint would
                raw = body
                if self.headers.get("Content-Encoding") == "gzip":
                    raw = gzip.decompress(body)
                json.loads(raw)
                status = 201
            except (OSError, EOFError, ValueError):
                status = 400
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def stub(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    handler = type("Handler", (_Stub,), {"received": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", handler.received
    server.shutdown()
    server.server_close()


def test_deliver_posts_gzip_with_bearer_out_of_order_and_twice(events, stub):
    url, received = stub
    before = [to_json(e) for e in events]
    sent = deliver(events, url, token="s3cret", shuffle_seed=5, duplicate_fraction=0.1)
    assert [to_json(e) for e in events] == before, "deliver must not change the events"
    assert len(received) == len(events) + len(sent.duplicates) == sent.requests
    bodies = []
    for path, headers, body in received:
        assert path == "/api/v1/lineage"
        assert headers["Authorization"] == "Bearer s3cret"
        assert headers["Content-Encoding"] == "gzip"
        event = json.loads(gzip.decompress(body))
        # openlineage-python's client adds its run tags facet; nothing else differs
        (tag,) = event["run"]["facets"].pop("tags")["tags"]
        assert tag["key"] == "openlineage_client_version"
        bodies.append(json.dumps(event, sort_keys=True))
    expected = Counter(json.dumps(json.loads(to_json(e)), sort_keys=True) for e in events)
    got = Counter(bodies)
    assert set(got) == set(expected)
    twice = [b for b, n in got.items() if n > expected[b]]
    assert len(twice) == len(sent.duplicates) > 0
    times = [json.loads(b)["eventTime"] for b in bodies]
    assert times != sorted(times)


def test_deliver_in_batches(events, stub):
    url, received = stub
    sent = deliver(events, url, token="t", batch_size=16, duplicate_fraction=0.05)
    assert sent.requests == len(received) == -(-len(sent.order) // 16)
    arrived = []
    for path, headers, body in received:
        assert path == "/api/v1/lineage/batch"
        assert headers["Authorization"] == "Bearer t"
        batch = json.loads(gzip.decompress(body))
        assert isinstance(batch, list) and 1 <= len(batch) <= 16
        arrived.extend(json.dumps(e, sort_keys=True) for e in batch)
    expected = Counter(json.dumps(json.loads(to_json(e)), sort_keys=True) for e in events)
    assert set(arrived) == set(expected)
    assert len(arrived) == len(events) + len(sent.duplicates)


def test_write_jsonl_round_trips(events, tmp_path):
    path = tmp_path / "lineage.jsonl"
    assert write_jsonl(events, path) == len(events)
    lines = path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [json.loads(to_json(e)) for e in events]


def test_malformed_bodies_break_one_rule_each(events, payloads, stub):
    registry = _registry()
    validator = Draft202012Validator(
        {"$ref": RUN_EVENT}, registry=registry, format_checker=FormatChecker()
    )
    bad = {m.kind: m for m in malformed_bodies(events, seed=1)}
    assert list(bad) == list(MALFORMED_KINDS)
    assert [m.body for m in malformed_bodies(events, seed=1)] == [m.body for m in bad.values()]
    with pytest.raises(ValueError):
        json.loads(bad["invalid_json"].body)
    with pytest.raises((OSError, EOFError)):
        gzip.decompress(bad["truncated_gzip"].body)
    for kind in ("missing_run_id", "non_uuid_run_id", "unknown_event_type"):
        errors = list(validator.iter_errors(json.loads(bad[kind].body)))
        assert errors, kind
    naive = json.loads(bad["naive_event_time"].body)
    # date-time (RFC 3339) requires an offset: the format checker (rfc3339-validator) sees it.
    [error] = validator.iter_errors(naive)
    assert error.validator == "format" and list(error.path) == ["eventTime"]
    assert datetime.fromisoformat(naive["eventTime"]).tzinfo is None
    future = json.loads(bad["future_event_time"].body)["eventTime"]
    assert future > max(p["eventTime"] for p in payloads)

    url, received = stub
    statuses = post_malformed(bad.values(), url, token="t")
    assert statuses["invalid_json"] == statuses["truncated_gzip"] == 400
    assert statuses["missing_run_id"] == 201  # the stub only parses JSON
    for _, headers, _ in received:
        assert headers["Authorization"] == "Bearer t"
    assert [h.get("Content-Encoding") for _, h, _ in received].count("gzip") == 1


# ---- command line --------------------------------------------------------------------


def test_command_line_writes_jsonl_and_posts(tmp_path, stub, monkeypatch, capsys):
    from simulator.__main__ import main

    path = tmp_path / "events.jsonl"
    assert main(["lineage", "--nodes", "12", "--seed", "2", "--jsonl", str(path)]) == 0
    written = path.read_text().splitlines()
    assert written == [to_json(e) for e in build_events(build_world(12, seed=2))]

    url, received = stub
    monkeypatch.delenv("LINEAGE_TOKEN", raising=False)
    argv = ["lineage", "--nodes", "12", "--seed", "2", "--post", url, "--token-env"]
    assert main([*argv, "LINEAGE_TOKEN"]) == 2
    assert "LINEAGE_TOKEN" in capsys.readouterr().err
    monkeypatch.setenv("LINEAGE_TOKEN", "tok")
    assert main([*argv, "LINEAGE_TOKEN", "--batch-size", "50", "--duplicates", "0.2"]) == 0
    arrived = [e for _, _, body in received for e in json.loads(gzip.decompress(body))]
    assert len(arrived) == len(written) + round(len(written) * 0.2)
    assert {json.dumps(e, sort_keys=True) for e in arrived} == {
        json.dumps(json.loads(line), sort_keys=True) for line in written
    }
    assert "posted" in capsys.readouterr().out

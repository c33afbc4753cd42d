"""The graph parts the intake takes out of each event (collectors/lineage/graph.py), and the
facet text the warehouse cuts back out of the payload with them."""

from __future__ import annotations

import json

import duckdb
import orjson
import pytest

from collectors.lineage.graph import graph_parts

EVENT = {
    "eventType": "COMPLETE",
    "eventTime": "2026-11-02T08:10:00Z",
    "run": {
        "runId": "0190f3c2-8a51-7cc2-9a2e-3f8d2b5c4e11",
        "facets": {"annex_trainingRun": {"stage": "PRETRAINING", "modelName": "m"}},
    },
    "job": {"namespace": "ns", "name": "train", "facets": {"jobType": {"jobType": "JOB"}}},
    "inputs": [
        {
            "namespace": "hf://datasets",
            "name": "wiki — ünïcode ✓",
            "facets": {
                "version": {"datasetVersion": "v1"},
                "annex_licensing": {"licenses": [{"spdxId": "CC-BY-SA-4.0"}], "note": "é"},
            },
            "inputFacets": {"annex_trainingUsage": {"tokensConsumed": 1.0e9}},
        },
        {"namespace": "s3://b", "name": "same", "facets": {"annex_licensing": {"x": 1}}},
        "not an object",
        {"namespace": "s3://b", "name": "twice", "facets": {"annex_licensing": {"x": 1}}},
    ],
    "outputs": [
        {
            "namespace": "models",
            "name": "m",
            "facets": {"datasetType": {"datasetType": "MODEL"}, "gone": {"_deleted": True}},
            "outputFacets": {"outputStatistics": {"rowCount": 3}},
        }
    ],
    "producer": "https://example.com/p",
    "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
}


def _cut(payload: str, facet: dict) -> str:
    if facet["start"] is None:
        return facet["facet"]
    return payload[facet["start"] : facet["start"] + facet["length"]]


def test_datasets_in_order_with_their_versions() -> None:
    payload = orjson.dumps(EVENT).decode()
    datasets, _ = graph_parts(EVENT, payload)
    assert [(d["item"], d["direction"], d["name"], d["version"]) for d in datasets] == [
        (0, "INPUT", "wiki — ünïcode ✓", "v1"),
        (1, "INPUT", "same", None),
        (2, "INPUT", "twice", None),  # the string item is skipped, not numbered
        (3, "OUTPUT", "m", None),
    ]


def test_every_facet_with_its_place_item_and_deletion() -> None:
    payload = orjson.dumps(EVENT).decode()
    _, facets = graph_parts(EVENT, payload)
    assert [(f["place"], f["item"], f["name"], f["deleted"]) for f in facets] == [
        ("run", None, "annex_trainingRun", False),
        ("job", None, "jobType", False),
        ("dataset", 0, "version", False),
        ("dataset", 0, "annex_licensing", False),
        ("input", 0, "annex_trainingUsage", False),
        ("dataset", 1, "annex_licensing", False),
        ("dataset", 2, "annex_licensing", False),
        ("dataset", 3, "datasetType", False),
        ("dataset", 3, "gone", True),
        ("output", 3, "outputStatistics", False),
    ]


def test_each_facet_is_cut_out_of_the_payload_exactly() -> None:
    # non-ASCII before and inside the facets: offsets count characters, as DuckDB's substring
    payload = orjson.dumps(EVENT).decode()
    _, facets = graph_parts(EVENT, payload)
    assert all(f["start"] is not None and f["facet"] is None for f in facets)
    texts = [_cut(payload, f) for f in facets]
    expected = [
        EVENT["run"]["facets"]["annex_trainingRun"],
        EVENT["job"]["facets"]["jobType"],
        {"datasetVersion": "v1"},
        EVENT["inputs"][0]["facets"]["annex_licensing"],
        {"tokensConsumed": 1.0e9},
        {"x": 1},
        {"x": 1},
        {"datasetType": "MODEL"},
        {"_deleted": True},
        {"rowCount": 3},
    ]
    assert [json.loads(t) for t in texts] == expected
    con = duckdb.connect()
    cut = con.execute(
        "SELECT list(substring(?, s + 1, n) ORDER BY k) FROM "
        "(SELECT unnest(?) AS s, unnest(?) AS n, generate_subscripts(?, 1) AS k)",
        [payload, [f["start"] for f in facets], [f["length"] for f in facets], facets],
    ).fetchone()[0]
    assert cut == texts


def test_a_payload_written_otherwise_carries_the_facets_themselves() -> None:
    payload = json.dumps(EVENT, indent=2)  # not orjson's compact text: nothing is found
    _, facets = graph_parts(EVENT, payload)
    assert all(f["start"] is None and f["length"] is None for f in facets)
    assert json.loads(facets[3]["facet"]) == EVENT["inputs"][0]["facets"]["annex_licensing"]


@pytest.mark.parametrize(
    ("event", "datasets", "facets"),
    [
        ({"dataset": {"namespace": "n", "name": "d", "facets": {"a": {}}}}, 1, 1),
        ({"job": {"namespace": "n", "name": "j"}, "inputs": "not a list"}, 0, 0),
        ({"run": {"facets": ["not", "an", "object"]}}, 0, 0),
        ({"inputs": [{"namespace": 7, "name": None}]}, 1, 0),
    ],
)
def test_odd_shapes(event: dict, datasets: int, facets: int) -> None:
    found = graph_parts(event, orjson.dumps(event).decode())
    assert (len(found[0]), len(found[1])) == (datasets, facets)
    if event.get("inputs") and isinstance(event["inputs"], list):
        # as json_extract_string gives non-strings: their JSON text, NULL for null
        assert (found[0][0]["namespace"], found[0][0]["name"]) == ("7", None)

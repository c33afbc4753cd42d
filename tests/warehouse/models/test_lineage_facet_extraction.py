"""The merge parses each new payload once (json_transform) for the datasets it names and its
facets: every facet lands in core.lineage_facets with its place, entity, deletion flag and
JSON text as sent; shapes the schema would refuse (a collector bug) drop out, never abort."""

from __future__ import annotations

import json

import orjson
import pyarrow as pa
import pytest

from annex.settings import WarehouseSettings
from collectors.lineage.graph import graph_tables
from collectors.lineage.schema import LINEAGE_EVENTS
from tests.helpers.lineage_warehouse import event_row, load_rows, query, run_id
from warehouse import Warehouse
from warehouse.models.lineage import dataset_version_id, job_id

RUN = run_id("extraction")
EVENT = {
    "eventType": "COMPLETE",
    "eventTime": "2026-11-02T08:10:00Z",
    "run": {
        "runId": RUN,
        "facets": {"annex_trainingRun": {"stage": "PRETRAINING", "modelName": "m"}},
    },
    "job": {"namespace": "ns", "name": "train", "facets": {"jobType": {"jobType": "JOB"}}},
    "inputs": [
        {
            "namespace": "hf://datasets",
            "name": "wiki — ünïcode ✓",
            "facets": {
                "version": {"datasetVersion": "v1"},
                "annex_licensing": {"licenses": [{"spdxId": "CC-BY-SA-4.0"}], "note": "é\n"},
            },
            # numbers keep their spelling: 1.0e9 as sent, not re-spelled
            "inputFacets": {"annex_trainingUsage": {"tokensConsumed": 1.0e9, "share": 0.1}},
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
            "outputFacets": {"outputStatistics": {"rowCount": 3, "_deleted": "no"}},
        }
    ],
    "producer": "https://example.com/p",
    "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
}


def _facets(wh: Warehouse) -> list[tuple]:
    return query(
        wh,
        "SELECT entity_kind, entity_id, facet_name, deleted, facet, run_id, dataset_version_id "
        "FROM core.lineage_facets ORDER BY entity_kind, entity_id, facet_name",
    )


def test_every_facet_with_its_entity_deletion_and_text(wh: Warehouse) -> None:
    payload = orjson.dumps(EVENT).decode()
    assert load_rows(wh, [event_row(EVENT, text=payload)]).rejected_count == 0
    wiki = dataset_version_id("hf://datasets", "wiki — ünïcode ✓", "v1")
    same = dataset_version_id("s3://b", "same", None)
    twice = dataset_version_id("s3://b", "twice", None)
    model = dataset_version_id("models", "m", RUN)  # a run's output: the run's version
    ins = EVENT["inputs"]
    expected = {
        ("run", RUN, "annex_trainingRun", False, RUN, None),
        ("job", job_id("ns", "train"), "jobType", False, None, None),
        ("dataset", wiki, "version", False, None, wiki),
        ("dataset", wiki, "annex_licensing", False, None, wiki),
        ("input", f"{RUN}/{wiki}", "annex_trainingUsage", False, RUN, wiki),
        ("dataset", same, "annex_licensing", False, None, same),
        ("dataset", twice, "annex_licensing", False, None, twice),
        ("dataset", model, "datasetType", False, None, model),
        ("dataset", model, "gone", True, None, model),
        ("output", f"{RUN}/{model}", "outputStatistics", False, RUN, model),
    }
    rows = _facets(wh)
    assert {(k, e, n, d, r, v) for k, e, n, d, r, v in ((*r[:4], *r[5:]) for r in rows)} == (
        expected
    )
    assert len(rows) == len(expected)
    text = {(r[0], r[1], r[2]): r[4] for r in rows}
    # the JSON text as sent (non-ASCII, escapes, number spelling kept), not re-encoded
    usage = text[("input", f"{RUN}/{wiki}", "annex_trainingUsage")]
    assert usage == orjson.dumps(ins[0]["inputFacets"]["annex_trainingUsage"]).decode()
    assert '"tokensConsumed":1000000000.0' in usage
    assert (
        json.loads(text[("dataset", wiki, "annex_licensing")])
        == ins[0]["facets"]["annex_licensing"]
    )
    assert query(
        wh,
        "SELECT name, version, version_source FROM core.lineage_dataset_versions ORDER BY name",
    ) == [
        ("m", RUN, "run"),
        ("same", None, "none"),
        ("twice", None, "none"),
        ("wiki — ünïcode ✓", "v1", "facet"),
    ]
    assert sorted(query(wh, "SELECT direction, count(*) FROM core.lineage_run_io GROUP BY 1")) == [
        ("INPUT", 3),
        ("OUTPUT", 1),
    ]


def test_a_payload_with_other_whitespace_gives_the_same_facets(wh: Warehouse, tmp_path) -> None:
    other = Warehouse(WarehouseSettings(path=tmp_path / "o.duckdb", lock_timeout_seconds=5))
    load_rows(wh, [event_row(EVENT, text=orjson.dumps(EVENT).decode())])
    load_rows(other, [event_row(EVENT, text=json.dumps(EVENT, indent=2))])
    compact = [(*r[:4], json.loads(r[4]), *r[5:]) for r in _facets(wh)]
    indented = [(*r[:4], json.loads(r[4]), *r[5:]) for r in _facets(other)]
    assert compact == indented and len(compact) == 10


@pytest.mark.parametrize(
    ("shape", "versions", "facets"),
    [
        ({"inputs": "not a list"}, 0, 1),
        ({"run": {"runId": RUN, "facets": ["not", "an", "object"]}}, 0, 1),
        ({"inputs": [{"namespace": "n", "name": None, "facets": {"a": {}}}]}, 0, 1),
        ({"inputs": [{"namespace": 7, "name": "d", "facets": {"a": {}}}]}, 1, 2),
    ],
)
def test_odd_shapes_drop_out_without_aborting(
    wh: Warehouse, shape: dict, versions: int, facets: int
) -> None:
    event = {
        "eventType": "START",
        "eventTime": "2026-11-02T08:10:00Z",
        "run": {"runId": RUN, "facets": {}},
        "job": {"namespace": "ns", "name": "j", "facets": {"jobType": {"jobType": "JOB"}}},
        "producer": "https://example.com/p",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        **shape,
    }
    result = load_rows(wh, [event_row(event, text=json.dumps(event))])
    assert (result.status, result.rejected_count) == ("succeeded", 0)
    assert query(wh, "SELECT count(*) FROM core.lineage_dataset_versions")[0][0] == versions
    assert query(wh, "SELECT count(*) FROM core.lineage_facets")[0][0] == facets
    if versions:  # a number where a string belongs: its JSON text, as the schema never lets in
        assert query(wh, "SELECT namespace FROM core.lineage_datasets") == [("7",)]


def test_a_dataset_listed_twice_keeps_its_first_listing_in_the_view_and_the_heads(
    wh: Warehouse,
) -> None:
    """Both listings name one version: the first one's facets count, in the history view
    and in the heads the merge keeps, whatever order the engine reads the items in."""
    listings = [
        {"namespace": "s3://b", "name": "d", "facets": {"annex_licensing": {"n": i}}}
        for i in range(1, 40)
    ]
    event = {**EVENT, "inputs": listings, "outputs": []}
    load_rows(wh, [event_row(event, text=json.dumps(event))])
    key = dataset_version_id("s3://b", "d", None)
    sql = "SELECT facet FROM {} WHERE entity_id = ? AND facet_name = 'annex_licensing'"
    assert [json.loads(r[0]) for r in query(wh, sql.format("core.lineage_facets"), [key])] == [
        {"n": 1}
    ]
    heads = query(wh, sql.format("core.lineage_facet_heads"), [key])
    assert [json.loads(r[0]) for r in heads] == [{"n": 1}]


def test_the_history_view_gives_the_heads_the_merge_kept(wh: Warehouse) -> None:
    """The merge keeps only the heads; core.lineage_facets derives every event's facets from
    the stored payloads. The latest row of the view per entity and facet name is the head,
    over events of several collections, sent out of order, with a deletion and a tie."""
    later = {**EVENT, "eventTime": "2026-11-02T09:00:00Z"}
    later["run"] = {"runId": RUN, "facets": {"annex_trainingRun": {"stage": "FINE_TUNING"}}}
    later["outputs"] = [
        {**EVENT["outputs"][0], "facets": {"datasetType": {"_deleted": True}, "gone": {"a": 1}}}
    ]
    tie = {**later, "job": {**EVENT["job"], "facets": {"jobType": {"jobType": "TIE"}}}}
    for event in (later, EVENT, tie):  # one collection each, the newest first
        assert load_rows(wh, [event_row(event, text=json.dumps(event))]).rejected_count == 0
    latest = query(
        wh,
        "SELECT entity_kind, entity_id, facet_name, event_id, event_time, deleted, facet::VARCHAR,"
        " run_id, dataset_version_id, collection_id FROM core.lineage_facets"
        " QUALIFY row_number() OVER (PARTITION BY entity_kind, entity_id, facet_name"
        " ORDER BY event_time DESC, event_id DESC) = 1 ORDER BY ALL",
    )
    heads = query(
        wh,
        "SELECT entity_kind, entity_id, facet_name, event_id, event_time, deleted, facet::VARCHAR,"
        " run_id, dataset_version_id, collection_id FROM core.lineage_facet_heads ORDER BY ALL",
    )
    assert heads == latest and len(heads) == 10
    model = dataset_version_id("models", "m", RUN)
    current = query(
        wh,
        "SELECT facet_name FROM core.lineage_current_facets WHERE entity_id = ? ORDER BY 1",
        [model],
    )
    assert current == [("gone",)]  # datasetType deleted later; gone re-sent later
    assert query(wh, "SELECT count(*) FROM core.lineage_facets")[0][0] == 30


def test_read_and_parsed_events_give_the_same_warehouse(tmp_path, monkeypatch) -> None:
    """The graphs the collector reads (collectors/lineage/graph.py) and the warehouse's own
    parse of the payloads (every event, as where no C compiler built the reader) give the same
    core tables and facets, text included: over several collections, out of order, a
    deletion, a tie, odd shapes, indented payloads and escapes in facet values."""
    import tests.helpers.lineage_warehouse as helpers

    clean = {**EVENT, "inputs": [i for i in EVENT["inputs"] if isinstance(i, dict)]}
    later = {**clean, "eventTime": "2026-11-02T09:00:00Z"}
    later["run"] = {"runId": RUN, "facets": {"annex_trainingRun": {"stage": "FINE_TUNING"}}}
    later["outputs"] = [
        {**EVENT["outputs"][0], "facets": {"datasetType": {"_deleted": True}, "gone": {"a": 1}}}
    ]
    tie = {**later, "job": {**EVENT["job"], "facets": {"jobType": {"jobType": "TIE\u001f\u2028"}}}}
    odd = {**EVENT, "eventTime": "2026-11-02T10:00:00Z"}  # an input that is not an object
    spaced = {**clean, "eventTime": "2026-11-02T11:00:00Z"}
    spaced["run"] = {"runId": RUN, "facets": {"spaced": {"a": [1, 2.5, {"b": "x/y"}]}}}
    # indented, a number and an escape as the warehouse would not write them: its text is
    # DuckDB's writing of the value either way
    spaced_text = json.dumps(spaced, indent=2, ensure_ascii=False)
    spaced_text = spaced_text.replace("2.5", "2.50").replace("x/y", "x\\/y")
    tie_text = json.dumps(tie, ensure_ascii=False).replace("TIE", "\\u0054IE")
    collections = [
        [event_row(later, text=json.dumps(later, indent=1, ensure_ascii=False))],
        [event_row(clean, text=orjson.dumps(clean).decode()), event_row(odd)],
        [event_row(tie, text=tie_text)],  # \\u escapes in a value
        [event_row(spaced, text=spaced_text)],
    ]
    rows = [row for rows in collections for row in rows]
    read = graph_tables(pa.Table.from_pylist(rows, schema=LINEAGE_EVENTS), 0)[0]
    assert read.column("graph_read").to_pylist() == [True, True, False, True, True]
    tables = [
        "lineage_events",
        "lineage_jobs",
        "lineage_datasets",
        "lineage_dataset_versions",
        "lineage_run_io",
        "lineage_facet_heads",
        "lineage_runs",
        "lineage_facets",
    ]
    found = []
    for graphs in (True, False):
        monkeypatch.setattr(helpers, "GRAPHS", graphs)
        other = Warehouse(WarehouseSettings(path=tmp_path / f"{graphs}.duckdb"))
        for rows in collections:
            assert load_rows(other, rows).rejected_count == 0
        found.append(
            {
                table: query(
                    other,
                    "SELECT COLUMNS(lambda c: c NOT IN ('collection_id', 'loaded_at'))"
                    f" FROM core.{table} ORDER BY ALL",
                )
                for table in tables
            }
        )
    assert found[0] == found[1]
    heads = found[0]["lineage_facet_heads"]
    assert len(heads) == 11 and len(found[0]["lineage_runs"]) == 1
    assert '{"a":[1,2.5,{"b":"x/y"}]}' in {str(value) for row in heads for value in row}

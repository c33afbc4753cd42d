"""The lineage model: OpenLineage events stored once by content hash, normalised in SQL, run
state and facets by event time whatever the arrival order, the EU summary views on a small
graph checked by hand, and the link from a training run to its Kubernetes Job."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import duckdb
import pyarrow as pa
import pytest

from collectors.lineage.schema import TABLES
from tests.helpers.lineage_warehouse import (
    T0,
    dataset,
    dataset_event,
    dv,
    event_row,
    facet,
    load,
    load_rows,
    minutes,
    model_facet,
    query,
    run_event,
    run_id,
    training_facet,
)
from tests.helpers.paths import REPO_ROOT
from warehouse import Warehouse
from warehouse.models.lineage import LINEAGE_MODEL, refresh_lineage


def test_staging_table_matches_the_collector_schema() -> None:
    con = duckdb.connect()
    for statement in con.extract_statements(LINEAGE_MODEL.staging_sql):
        con.execute(statement)
    for table, schema in TABLES.items():
        if table == "rejected":
            continue
        described = con.execute(f"DESCRIBE stage_{table}").fetchall()
        assert [name for name, *_ in described] == schema.names
        con.register("empty", pa.Table.from_batches([], schema=schema))
        con.execute(f"INSERT INTO stage_{table} BY NAME SELECT * FROM empty")


# ---- duplicates ---------------------------------------------------------------------------


def _simple_events() -> list[dict]:
    r = run_id("dup")
    src = dataset("hf://datasets", "org/src", "v1")
    out = dataset("s3://b", "out", "o1")
    return [
        run_event(r, "START", T0, inputs=[src], outputs=[out]),
        run_event(r, "COMPLETE", T0 + minutes(5), inputs=[src], outputs=[out]),
    ]


def _counts(wh: Warehouse) -> dict[str, int]:
    tables = (
        "lineage_events",
        "lineage_runs",
        "lineage_run_io",
        "lineage_facets",
        "lineage_facet_heads",
        "lineage_dataset_versions",
        "lineage_jobs",
    )
    return {t: query(wh, f"SELECT count(*) FROM core.{t}")[0][0] for t in tables}


def test_duplicates_are_idempotent_in_a_batch_across_collections_and_key_orders(wh):
    events = _simple_events()
    load(wh, events + events)  # twice in one batch
    first = _counts(wh)
    assert first["lineage_events"] == 2
    assert first["lineage_run_io"] == 2
    load(wh, events)  # again, in a later collection
    assert _counts(wh) == first
    # same content, other key order and whitespace: same event_id, nothing new
    reordered = [
        event_row(e, text=json.dumps(dict(reversed(list(e.items()))), indent=2)) for e in events
    ]
    assert [r["event_id"] for r in reordered] == [event_row(e)["event_id"] for e in events]
    result = load_rows(wh, reordered)
    assert result.status == "succeeded"
    assert _counts(wh) == first


_KEYS = {
    "lineage_events": "event_id",
    "lineage_runs": "run_id",
    "lineage_dataset_versions": "dataset_version_id",
    "lineage_run_io": "run_id, dataset_version_id, direction",
}


def test_each_key_is_stored_once_over_overlapping_collections(wh):
    """These tables have no key index (migration 0017): the merge alone keeps each event, run,
    version and edge once, however often later collections name them again."""
    runs = [run_id(f"overlap-{n}") for n in range(3)]
    src = dataset("hf://datasets", "org/src", "v1")
    ckpt = dataset("s3://ckpt", "model", "step-1")
    events = [
        run_event(r, kind, T0 + minutes(10 * n + step), inputs=[src], outputs=[ckpt])
        for n, r in enumerate(runs)
        for step, kind in enumerate(["START", "RUNNING", "COMPLETE"])
    ]
    load(wh, events[:4], refresh=False)
    load(wh, events[2:7], refresh=False)  # overlaps the first
    load(wh, events[::-1], refresh=False)  # everything again, newest first
    for table, key in _KEYS.items():
        total, keys = query(wh, f"SELECT count(*), count(DISTINCT ({key})) FROM core.{table}")[0]
        assert total == keys, table
    assert _counts(wh)["lineage_events"] == 9
    assert _counts(wh)["lineage_runs"] == 3
    assert _counts(wh)["lineage_run_io"] == 6  # each run reads src and writes the checkpoint
    assert query(wh, "SELECT count(*) FROM core.lineage_dataset_versions") == [(2,)]
    assert query(wh, "SELECT DISTINCT state, events FROM core.lineage_runs") == [("COMPLETE", 3)]


def test_a_dataset_listed_twice_in_one_event_counts_once(wh):
    src = dataset(
        "hf://datasets",
        "org/src",
        "v1",
        annex_licensing=facet("AnnexLicensingDatasetFacet", spdxExpression="MIT"),
    )
    load(
        wh,
        [
            run_event(
                run_id("twice"),
                "COMPLETE",
                T0,
                inputs=[src, src],
                outputs=[dataset("s3://b", "o", "1")],
            )
        ],
        refresh=False,
    )
    assert query(wh, "SELECT count(*) FROM core.lineage_run_io WHERE direction = 'INPUT'") == [(1,)]
    assert query(
        wh, "SELECT count(*) FROM core.lineage_facets WHERE facet_name = 'annex_licensing'"
    ) == [(1,)]


# ---- out of order -------------------------------------------------------------------------


def _state(wh: Warehouse, run: str) -> tuple:
    rows = query(
        wh,
        "SELECT state, started_at, ended_at, state_event_time, events FROM core.lineage_runs "
        "WHERE run_id = ?",
        [run],
    )
    assert len(rows) == 1
    return rows[0]


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None)


def test_complete_before_start_and_complete_without_start(wh):
    r = run_id("ooo")
    complete = run_event(r, "COMPLETE", T0 + minutes(10))
    start = run_event(r, "START", T0)
    load(wh, [complete], refresh=False)
    # a COMPLETE without a START still makes the run
    assert _state(wh, r)[:3] == ("COMPLETE", None, _naive(T0 + minutes(10)))
    load(wh, [start], refresh=False)  # the START arrives later
    assert _state(wh, r) == (
        "COMPLETE",
        _naive(T0),
        _naive(T0 + minutes(10)),
        _naive(T0 + minutes(10)),
        2,
    )


@pytest.mark.parametrize("order", ["fail_first", "complete_first", "one_batch"])
def test_two_terminal_events_the_latest_event_time_wins(wh, order):
    r = run_id("terminal")
    start = run_event(r, "START", T0)
    complete = run_event(r, "COMPLETE", T0 + minutes(5))
    fail = run_event(r, "FAIL", T0 + minutes(9))
    running = run_event(r, "RUNNING", T0 + minutes(12))  # later, but not terminal
    if order == "fail_first":
        for e in (fail, running, complete, start):
            load(wh, [e], refresh=False)
    elif order == "complete_first":
        for e in (start, complete, running, fail):
            load(wh, [e], refresh=False)
    else:
        load(wh, [fail, complete, running, start], refresh=False)
    state, started, ended, _, events = _state(wh, r)
    assert (state, started, ended, events) == ("FAIL", _naive(T0), _naive(T0 + minutes(9)), 4)


def test_without_terminal_the_latest_event_decides_and_no_event_type_only_adds(wh):
    r = run_id("latest")
    load(wh, [run_event(r, "RUNNING", T0 + minutes(3))], refresh=False)
    load(wh, [run_event(r, "START", T0)], refresh=False)
    load(
        wh,
        [
            run_event(
                r, None, T0 + minutes(30), run_facets={"annex_trainingRun": training_facet("m")}
            )
        ],
        refresh=False,
    )
    state, started, ended, state_time, events = _state(wh, r)
    assert (state, started, ended, state_time, events) == (
        "RUNNING",
        _naive(T0),
        None,
        _naive(T0 + minutes(3)),
        3,
    )
    assert query(wh, "SELECT model_name FROM core.lineage_runs")[0][0] == "m"


# ---- facets by event time -----------------------------------------------------------------


def _licence(wh: Warehouse, version_id: str) -> str | None:
    rows = query(
        wh,
        "SELECT facet ->> '$.spdxExpression' FROM core.lineage_current_facets "
        "WHERE entity_kind = 'dataset' AND entity_id = ? AND facet_name = 'annex_licensing'",
        [version_id],
    )
    return rows[0][0] if rows else None


def _with_licence(spdx: str | None, when: datetime, *, deleted: bool = False) -> dict:
    lic = (
        {"_deleted": True} if deleted else facet("AnnexLicensingDatasetFacet", spdxExpression=spdx)
    )
    item = dataset("hf://datasets", "org/lic", "v1", annex_licensing=lic)
    return dataset_event(item, when)


def test_facets_merge_by_event_time_not_arrival(wh):
    version = dv("hf://datasets", "org/lic", "v1")
    load(wh, [_with_licence("MIT", T0 + minutes(10))], refresh=False)
    load(wh, [_with_licence("GPL-3.0-only", T0)], refresh=False)  # older, arrives later
    assert _licence(wh, version) == "MIT"
    # both kept in history
    assert (
        query(wh, "SELECT count(*) FROM core.lineage_facets WHERE facet_name = 'annex_licensing'")[
            0
        ][0]
        == 2
    )
    load(wh, [_with_licence("Apache-2.0", T0 + minutes(20))], refresh=False)
    assert _licence(wh, version) == "Apache-2.0"
    # _deleted removes it; an older facet arriving after the deletion does not revive it
    load(wh, [_with_licence(None, T0 + minutes(30), deleted=True)], refresh=False)
    load(wh, [_with_licence("BSD-3-Clause", T0 + minutes(25))], refresh=False)
    assert _licence(wh, version) is None
    load(wh, [_with_licence("CC-BY-4.0", T0 + minutes(40))], refresh=False)
    assert _licence(wh, version) == "CC-BY-4.0"


def _load_in_order(wh, earlier: dict, later: dict, order: str) -> None:
    """``earlier`` and ``later`` (by eventTime, then id: the order the rule under test sorts
    by) in one collection, or in two in either order: the result must not depend on which."""
    if order == "one_batch":
        load(wh, [later, earlier], refresh=False)
    else:
        first, second = (earlier, later) if order == "earlier_first" else (later, earlier)
        load(wh, [first], refresh=False)
        load(wh, [second], refresh=False)


ORDERS = ["one_batch", "earlier_first", "later_first"]


@pytest.mark.parametrize("order", ORDERS)
def test_a_tie_in_event_time_goes_to_the_larger_event_id(wh, order):
    # two events with one eventTime and the same facet: the larger event_id's is current,
    # whether they come in one collection or in two, in either order
    version = dv("hf://datasets", "org/lic", "v1")
    mit, gpl = _with_licence("MIT", T0), _with_licence("GPL-3.0-only", T0)
    smaller, larger = sorted([mit, gpl], key=lambda e: event_row(e)["event_id"])
    _load_in_order(wh, smaller, larger, order)
    expected = "MIT" if larger is mit else "GPL-3.0-only"
    assert _licence(wh, version) == expected


@pytest.mark.parametrize("order", ORDERS)
def test_two_terminal_events_at_one_event_time_the_larger_event_id_wins(wh, order):
    # the run's state, its state event and its job come from one event, whatever the arrival
    r = run_id("terminal-tie")
    fail = run_event(r, "FAIL", T0 + minutes(9), job="job")
    complete = run_event(r, "COMPLETE", T0 + minutes(9), job="job-renamed")
    smaller, larger = sorted([fail, complete], key=lambda e: event_row(e)["event_id"])
    _load_in_order(wh, smaller, larger, order)
    rows = query(
        wh,
        "SELECT state, state_event_id, job_name FROM core.lineage_runs WHERE run_id = ?",
        [r],
    )
    assert rows == [
        (larger["eventType"], event_row(larger)["event_id"], larger["job"]["name"]),
    ]


def _producer(wh, version: str) -> tuple:
    return query(
        wh,
        "SELECT produced_by_run_id, produced_at, created_at FROM core.lineage_dataset_versions "
        "WHERE dataset_version_id = ?",
        [version],
    )[0]


@pytest.mark.parametrize("order", ORDERS)
def test_a_version_s_producer_is_the_run_of_its_earliest_output_event(wh, order):
    # two runs claim one version (the same datasetVersion): the earlier event's run produced it
    ckpt = dataset("s3://ckpt", "model", "step-1000")
    early, late = run_id("early"), run_id("late")
    earlier = run_event(early, "COMPLETE", T0 + minutes(5), outputs=[ckpt])
    later = run_event(late, "COMPLETE", T0 + minutes(10), outputs=[ckpt])
    _load_in_order(wh, earlier, later, order)
    moment = (T0 + minutes(5)).replace(tzinfo=None)
    assert _producer(wh, dv("s3://ckpt", "model", "step-1000")) == (early, moment, moment)


@pytest.mark.parametrize("order", ORDERS)
def test_a_tie_for_a_version_s_producer_goes_to_the_smaller_run_id(wh, order):
    ckpt = dataset("s3://ckpt", "model", "step-2000")
    smaller, larger = sorted([run_id("tie-a"), run_id("tie-b")])
    _load_in_order(
        wh,
        run_event(smaller, "COMPLETE", T0, outputs=[ckpt]),
        run_event(larger, "COMPLETE", T0, outputs=[ckpt]),
        order,
    )
    moment = T0.replace(tzinfo=None)
    assert _producer(wh, dv("s3://ckpt", "model", "step-2000")) == (smaller, moment, moment)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("tie", [False, True])
def test_an_edge_keeps_the_earliest_event_that_names_it(wh, order, tie):
    # a run's input named by two of its events: the edge's first event is the earlier one by
    # eventTime, and on a tie the smaller event_id, whatever the arrival
    r = run_id("edge")
    src = dataset("hf://datasets", "org/src", "v1")
    events = [
        run_event(r, "START", T0 + minutes(1), inputs=[src]),
        run_event(r, "RUNNING", T0 + minutes(1 if tie else 3), inputs=[src]),
    ]
    if tie:
        events.sort(key=lambda e: event_row(e)["event_id"])
    earlier, later = events
    _load_in_order(wh, earlier, later, order)
    rows = query(
        wh,
        "SELECT first_event_time, first_event_id FROM core.lineage_run_io "
        "WHERE run_id = ? AND direction = 'INPUT'",
        [r],
    )
    when = event_row(earlier)["event_time"]
    assert rows == [(when, event_row(earlier)["event_id"])]


@pytest.mark.parametrize("order", ORDERS)
def test_a_version_named_by_its_facet_and_by_its_run_id_is_sourced_from_the_facet(wh, order):
    # a run sends its runId as its output's datasetVersion in one event and no version facet in
    # another: one version (the same id), whose source is the facet whatever the order
    r = run_id("self-versioned")
    with_facet = run_event(r, "START", T0, outputs=[dataset("s3://o", "shard", r)])
    without = run_event(r, "COMPLETE", T0 + minutes(1), outputs=[dataset("s3://o", "shard")])
    _load_in_order(wh, with_facet, without, order)
    rows = query(
        wh,
        "SELECT version, version_source FROM core.lineage_dataset_versions WHERE name = 'shard'",
    )
    assert rows == [(r, "facet")]


def test_unversioned_dataset_facets_apply_to_versions_without_their_own(wh):
    r = run_id("inherit")
    load(
        wh,
        [
            run_event(
                r,
                "COMPLETE",
                T0,
                inputs=[dataset("hf://datasets", "org/card", "sha1")],
                outputs=[dataset("s3://o", "x", "1")],
            ),
            dataset_event(
                dataset(
                    "hf://datasets",
                    "org/card",
                    annex_licensing=facet("AnnexLicensingDatasetFacet", spdxExpression="CC-BY-4.0"),
                ),
                T0,
            ),
        ],
        refresh=False,
    )
    rows = query(
        wh,
        "SELECT facet ->> '$.spdxExpression', inherited FROM "
        "core.lineage_version_facets WHERE dataset_version_id = ? "
        "AND facet_name = 'annex_licensing'",
        [dv("hf://datasets", "org/card", "sha1")],
    )
    assert rows == [("CC-BY-4.0", True)]


# ---- bad input ----------------------------------------------------------------------------


def test_a_run_reading_and_writing_the_same_version_is_rejected(wh):
    r = run_id("self")
    same = dataset("s3://b", "table", "v7")
    ok = run_event(
        run_id("fine"),
        "COMPLETE",
        T0,
        inputs=[dataset("s3://b", "a", "1")],
        outputs=[dataset("s3://b", "b", "1")],
    )
    result = load(wh, [run_event(r, "COMPLETE", T0, inputs=[same], outputs=[same]), ok])
    assert result.rejected_count == 1
    assert query(wh, "SELECT reason_code FROM audit.rejected") == [("reads_own_output",)]
    assert query(wh, "SELECT count(*) FROM core.lineage_events")[0][0] == 1
    assert query(wh, "SELECT count(*) FROM core.lineage_runs WHERE run_id = ?", [r])[0][0] == 0
    [(message,)] = query(wh, "SELECT message FROM audit.rejected")
    assert f"run {r} reads and writes the same dataset version s3://b/table@v7 (event" in message


def test_a_run_with_two_loops_is_rejected_naming_one_of_them(wh):
    r = run_id("two-loops")
    one, other = dataset("s3://a", "x", "1"), dataset("s3://b", "y", "2")
    load(wh, [run_event(r, "COMPLETE", T0, inputs=[other, one], outputs=[one, other])])
    [(message,)] = query(wh, "SELECT message FROM audit.rejected")
    # a real loop, whole (not the namespace of one and the name of the other), the same one
    # at every rerun, and the count of the rest
    assert "the same dataset version s3://a/x@1 and 1 more (event" in message


def test_rows_breaking_the_collector_contract_are_kept_as_rejected(wh):
    good = event_row(_simple_events()[0])
    bad_json = dict(event_row(_simple_events()[1]), payload="{not json")
    no_id = dict(event_row(_simple_events()[1]), event_id=None)
    result = load_rows(wh, [good, bad_json, no_id])
    assert result.status == "succeeded"
    assert result.rejected_count == 2
    messages = [m for (m,) in query(wh, "SELECT message FROM audit.rejected")]
    assert sorted("payload is not JSON" in m for m in messages) == [False, True]
    assert sorted("event_id is missing" in m for m in messages) == [False, True]
    assert query(wh, "SELECT count(*) FROM core.lineage_events")[0][0] == 1


# ---- EU summary ---------------------------------------------------------------------------

BIG_TEXT = 2_000_000_000_000  # 2T tokens: 1B-10T band
CRAWL_DOMAINS = [
    {"domain": f"site{i:02d}.example", "tokens": tokens}
    for i, tokens in enumerate(
        [500, 300, 100, 50, 20, 10, 10, 5, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
    )
]


def _eu_graph() -> list[dict]:
    """crawl (CRAWLED) -> filter -> mixture <- public (PUBLIC_DATASET), licensed
    (PRIVATE_LICENSED), user (USER_DATA); teacher model -> synthgen -> synthetic (SYNTHETIC);
    images (PUBLIC_DATASET, IMAGE); mixture + synthetic + images -> pretrain -> ckpt."""

    def src(name, category, licence, modality="TEXT", tokens=None, items=None, **extra):
        size = {k: v for k, v in (("tokens", tokens), ("items", items)) if v is not None}
        facets = {
            "annex_source": facet(
                "AnnexSourceDatasetFacet",
                sourceCategory=category,
                publiclyAvailable=category == "PUBLIC_DATASET",
                description=name,
                **extra.pop("source", {}),
            ),
            "annex_licensing": facet(
                "AnnexLicensingDatasetFacet", spdxExpression=licence, copyrightStatus="UNKNOWN"
            ),
            "annex_content": facet(
                "AnnexContentDatasetFacet", modality=modality, size=size, **extra.pop("content", {})
            ),
        }
        facets.update(extra)
        return dataset("s3://src", name, "v1", **facets)

    crawl = src(
        "crawl",
        "CRAWLED",
        "NOASSERTION",
        tokens=5_000_000_000_000,
        content={"domainStats": {"topN": CRAWL_DOMAINS}},
        annex_crawl=facet(
            "AnnexCrawlDatasetFacet",
            crawlerName="AnnexBot/1.0",
            purpose="AI_TRAINING",
            collectionPeriod={"start": "2024-01-01", "end": "2024-03-31"},
            optOut={
                "robotsTxt": "RESPECTED",
                "tdmrep": "RESPECTED",
                "ietfAipref": "NOT_CHECKED",
                "aiTxt": "NOT_CHECKED",
                "checkedAt": "FETCH_TIME",
                "documentsExcluded": 42,
            },
            paywallPolicy="NO_CIRCUMVENTION",
        ),
        annex_illegalContent=facet(
            "AnnexIllegalContentDatasetFacet", measures=["CSAM_HASH_MATCH"], removedItems=7
        ),
    )
    public = src("public", "PUBLIC_DATASET", "CC-BY-4.0", tokens=10)
    licensed = src("licensed", "PRIVATE_LICENSED", "LicenseRef-news-agreement", tokens=10)
    user = src(
        "user",
        "USER_DATA",
        "NOASSERTION",
        tokens=10,
        annex_personalData=facet(
            "AnnexPersonalDataDatasetFacet",
            present="yes",
            sensitive="noAssertion",
            measures=["PII_REGEX_REDACTION"],
        ),
    )
    images = src("images", "PUBLIC_DATASET", "CC0-1.0", modality="IMAGE", items=2_000_000)
    synthetic_out = src(
        "synthetic",
        "SYNTHETIC",
        "NOASSERTION",
        tokens=10,
        source={"generatorModels": ["teacher-70b"]},
    )
    filtered = dataset(
        "s3://work",
        "filtered",
        "f1",
        annex_source=facet(
            "AnnexSourceDatasetFacet",
            sourceCategory="DERIVED",
            publiclyAvailable=False,
            description="filtered crawl",
        ),
    )
    mixture = dataset(
        "s3://work",
        "mixture",
        "m1",
        annex_content=facet(
            "AnnexContentDatasetFacet", modality="TEXT", size={"tokens": 3 * BIG_TEXT}
        ),
    )
    teacher = dataset("s3://ck", "teacher/base", "t1", datasetType=model_facet())
    teacher_data = src("teacher-secret", "PRIVATE_THIRD_PARTY", "NOASSERTION", tokens=10)
    ckpt = dataset("s3://ck", "student/base", None, datasetType=model_facet())

    def usage(item, tokens):
        return dict(
            item,
            inputFacets={
                "annex_trainingUsage": facet(
                    "AnnexTrainingUsageInputDatasetFacet",
                    tokensConsumed=tokens,
                    epochs=1.0,
                    samplingWeight=1.0,
                )
            },
        )

    train = training_facet("student", "PRETRAINING", ("eu-1", "team", "student-pretrain"))
    return [
        run_event(
            run_id("teacher"),
            "COMPLETE",
            T0,
            job="teacher",
            inputs=[teacher_data],
            outputs=[teacher],
            run_facets={"annex_trainingRun": training_facet("teacher-70b")},
        ),
        run_event(
            run_id("filter"), "COMPLETE", T0, job="filter", inputs=[crawl], outputs=[filtered]
        ),
        run_event(
            run_id("mix"),
            "COMPLETE",
            T0,
            job="mix",
            inputs=[filtered, public, licensed, user],
            outputs=[mixture],
        ),
        run_event(
            run_id("synth"),
            "COMPLETE",
            T0,
            job="synth",
            inputs=[teacher],
            outputs=[synthetic_out],
            run_facets={"annex_trainingRun": training_facet("teacher-70b", "SYNTHETIC_GENERATION")},
        ),
        run_event(
            run_id("pretrain"),
            "COMPLETE",
            T0 + minutes(60),
            job="pretrain",
            inputs=[usage(mixture, BIG_TEXT), usage(synthetic_out, 10), images],
            outputs=[ckpt],
            run_facets={"annex_trainingRun": train},
        ),
    ]


def test_eu_summary_on_a_hand_checked_graph(wh):
    load(wh, _eu_graph())
    ckpt = dv("s3://ck", "student/base", run_id("pretrain"))
    models = dict(query(wh, "SELECT model_version_id, model_name FROM marts.lineage_models"))
    assert models[ckpt] == "student"
    assert set(models.values()) == {"student", "teacher-70b"}

    size = {
        m: (tokens, items, band)
        for m, tokens, items, band in query(
            wh,
            "SELECT modality, tokens, items, band FROM marts.lineage_eu_summary_size "
            "WHERE model_version_id = ?",
            [ckpt],
        )
    }
    # text: the tokens consumed (usage facets), not the mixture's full size
    assert size["TEXT"][0] == BIG_TEXT + 10
    assert size["TEXT"][2] == "1 billion to 10 trillion tokens"
    assert size["IMAGE"][1:] == (2_000_000, "1 million to 1 billion images")

    sources = {
        name: (section, category, licence)
        for name, section, category, licence in query(
            wh,
            "SELECT name, section, source_category, spdx_expression FROM "
            "marts.lineage_eu_sources WHERE model_version_id = ?",
            [ckpt],
        )
    }
    assert sources == {
        "crawl": ("2.3", "CRAWLED", "NOASSERTION"),
        "public": ("2.1", "PUBLIC_DATASET", "CC-BY-4.0"),
        "licensed": ("2.2.1", "PRIVATE_LICENSED", "LicenseRef-news-agreement"),
        "user": ("2.4", "USER_DATA", "NOASSERTION"),
        "images": ("2.1", "PUBLIC_DATASET", "CC0-1.0"),
        "synthetic": ("2.5", "SYNTHETIC", "NOASSERTION"),
    }  # the teacher's own training data (teacher-secret) is not the student's

    (crawler,) = query(
        wh,
        "SELECT crawler_name, collection_start, collection_end, robots_txt, "
        "documents_excluded, paywall_policy FROM marts.lineage_eu_crawlers "
        "WHERE model_version_id = ?",
        [ckpt],
    )
    assert crawler[0] == "AnnexBot/1.0"
    assert (str(crawler[1]), str(crawler[2])) == ("2024-01-01", "2024-03-31")
    assert crawler[3:] == ("RESPECTED", 42, "NO_CIRCUMVENTION")

    # 20 domains, top 10%: the two largest, shares of all 1,010 tokens
    top = query(
        wh,
        "SELECT web_domain, share, rank FROM marts.lineage_eu_top_domains "
        "WHERE model_version_id = ? ORDER BY rank",
        [ckpt],
    )
    assert [(d, r) for d, _, r in top] == [("site00.example", 1), ("site01.example", 2)]
    assert top[0][1] == pytest.approx(500 / 1010)
    five = query(
        wh,
        "SELECT count(*) FROM marts.lineage_top_domains(0.25) WHERE model_version_id = ?",
        [ckpt],
    )
    assert five == [(5,)]

    (synth,) = query(
        wh,
        "SELECT name, generator_models, generator_checkpoints FROM "
        "marts.lineage_eu_synthetic WHERE model_version_id = ?",
        [ckpt],
    )
    assert synth == ("synthetic", ["teacher-70b"], ["teacher/base"])

    measures = {
        (kind, measure): items
        for kind, measure, items in query(
            wh,
            "SELECT kind, measure, items FROM marts.lineage_eu_measures WHERE model_version_id = ?",
            [ckpt],
        )
    }
    assert measures[("tdm_opt_out", "robotsTxt: RESPECTED")] == 42
    assert measures[("illegal_content", "CSAM_HASH_MATCH")] == 7
    assert ("personal_data", "PII_REGEX_REDACTION") in measures
    assert ("paywall", "paywallPolicy: NO_CIRCUMVENTION") in measures


def test_text_bands() -> None:
    con = duckdb.connect()
    view = _view_sql("marts.lineage_eu_summary_size")
    band = view.split("CASE\n        WHEN modality = 'TEXT' AND tokens IS NULL")[1]
    band = "CASE WHEN modality = 'TEXT' AND tokens IS NULL" + band.split("END AS band")[0] + "END"
    cases = [
        ("TEXT", 999_999_999, None),
        ("TEXT", 1_000_000_000, None),
        ("TEXT", 10_000_000_000_000, None),
        ("TEXT", 10_000_000_000_001, None),
        ("IMAGE", None, 999_999),
        ("IMAGE", None, 1_000_000_001),
        ("AUDIO", 5, 5),
    ]
    got = [
        con.execute(
            f"SELECT {band} FROM (SELECT ? AS modality, ?::HUGEINT AS tokens, ?::HUGEINT AS items)",
            list(c),
        ).fetchone()[0]
        for c in cases
    ]
    assert got == [
        "Less than 1 billion tokens",
        "1 billion to 10 trillion tokens",
        "1 billion to 10 trillion tokens",
        "More than 10 trillion tokens",
        "Less than 1 million images",
        "More than 1 billion images",
        None,
    ]


def _view_sql(name: str) -> str:
    text = (REPO_ROOT / "warehouse" / "migrations" / "0007_lineage.sql").read_text(encoding="utf-8")
    return text.split(f"CREATE VIEW {name} AS")[1].split("COMMENT ON VIEW")[0]


# ---- the run -> Kubernetes Job link -------------------------------------------------------


def _add_job(con, cluster: str, namespace: str, name: str) -> None:
    con.execute(
        "INSERT INTO core.jobs (cluster, job_uid, namespace, job_name, content_hash, "
        "first_seen_at, changed_at, present, collection_id) "
        "VALUES (?, ?, ?, ?, 0, ?, ?, true, 'k8s')",
        [cluster, f"uid-{namespace}-{name}", namespace, name, _naive(T0), _naive(T0)],
    )


def test_training_run_links_to_its_kubernetes_job_with_gpu_hours(wh):
    known = training_facet("m", "PRETRAINING", ("eu-1", "team", "m-pretrain"))
    unknown = training_facet("m", "FINE_TUNING", ("eu-1", "team", "m-sft-gone"))
    load(
        wh,
        [
            run_event(run_id("k1"), "COMPLETE", T0, run_facets={"annex_trainingRun": known}),
            run_event(run_id("k2"), "COMPLETE", T0, run_facets={"annex_trainingRun": unknown}),
            run_event(run_id("k3"), "COMPLETE", T0),  # not a training run
        ],
    )
    with wh.writer() as con:
        _add_job(con, "eu-1", "team", "m-pretrain")
        for pod in range(2):  # two pods, 8 GPUs, 3 hours each: 48 GPU-hours
            con.execute(
                "INSERT INTO core.gpu_allocations (cluster, pod_uid, namespace, pod_name, "
                "job_name, node_name, resource_name, gpus, category, valid_from, "
                "valid_from_source, valid_to, opened_collection_id) VALUES ('eu-1', ?, 'team', "
                "?, 'm-pretrain', 'n1', 'nvidia.com/gpu', 8, 'workload', ?, 'scheduled', ?, "
                "'k8s')",
                [f"pod{pod}", f"p{pod}", _naive(T0), _naive(T0 + timedelta(hours=3))],
            )
    rows = {
        r[0]: r[1:]
        for r in query(
            wh, "SELECT run_id, job_known, job_uid, gpu_hours, stage FROM marts.lineage_run_jobs"
        )
    }
    assert rows == {
        run_id("k1"): (True, "uid-team-m-pretrain", pytest.approx(48.0), "PRETRAINING"),
        run_id("k2"): (False, None, None, "FINE_TUNING"),
    }


def test_simulated_world_training_runs_link_to_its_jobs(wh):
    from simulator.lineage import DEFAULT_CLUSTER, build_events, to_json
    from simulator.world import build_world

    world = build_world(40, seed=7)
    events = [json.loads(to_json(e)) for e in build_events(world)]
    load(wh, events, batch_size=50)
    with wh.writer() as con:
        for job in world.jobs:
            meta = job["metadata"]
            _add_job(con, DEFAULT_CLUSTER, meta["namespace"], meta["name"])
    rows = query(wh, "SELECT run_id, job_known, kubernetes_job_name FROM marts.lineage_run_jobs")
    started = {r.job_name for r in world.training_runs if r.state != "queued"}
    known = {name for _, job_known, name in rows if job_known}
    # every started Job of the world is linked; the other training runs are the simulator's
    # history (base training, releases) whose Jobs are long gone from the inventory
    assert known == started
    assert len(rows) > len(known)
    # every checkpoint has a closure down to leaves, and the graph has no cycle
    assert query(wh, "SELECT count(*) FROM marts.lineage_cycles") == [(0,)]
    (empty,) = query(
        wh, "SELECT count(*) FILTER (WHERE leaf_versions = 0) FROM marts.lineage_models"
    )
    assert empty == (0,)
    sections = {s for (s,) in query(wh, "SELECT DISTINCT section FROM marts.lineage_eu_sources")}
    assert {"2.1", "2.2.1", "2.3", "2.5"} <= sections


def test_refresh_joins_the_callers_transaction(wh):
    load(wh, _eu_graph(), refresh=False)
    with wh.writer() as con:
        con.execute("BEGIN")
        counts = refresh_lineage(con)
        con.execute("ROLLBACK")
        assert counts["models"] == 2
        assert con.execute("SELECT count(*) FROM marts.lineage_models").fetchone() == (0,)


def test_attestation_coverage_rows_learn_their_training_run(wh: Warehouse) -> None:
    # coverage computed before the lineage arrived: the lineage refresh fills run_id, for
    # the days the run was going only, and a reused Job name gets the run of its own day
    day = T0.date()
    rows = [
        (day, "train-a"),  # the run of that day
        (day + timedelta(days=5), "train-a"),  # a later Job of the same name, no run
        (day, "other"),  # a Job no run names
    ]
    with wh.writer() as con:
        for when, job in rows:
            con.execute(
                "INSERT INTO marts.attestation_gpu_hours VALUES ('eu-1', ?, 'node-1', 'team', "
                "?, NULL, 8, 8, 0, 0, 0, now()::TIMESTAMP)",
                [when, job],
            )
    facets = {"annex_trainingRun": training_facet("m", "PRETRAINING", ("eu-1", "team", "train-a"))}
    load(
        wh,
        [
            run_event(run_id("a"), "START", T0, run_facets=facets),
            run_event(run_id("a"), "COMPLETE", T0 + minutes(90), run_facets=facets),
        ],
    )
    linked = query(
        wh, "SELECT day, job_name, run_id FROM marts.attestation_gpu_hours ORDER BY day, job_name"
    )
    assert linked == [
        (day, "other", None),
        (day, "train-a", run_id("a")),
        (day + timedelta(days=5), "train-a", None),
    ]

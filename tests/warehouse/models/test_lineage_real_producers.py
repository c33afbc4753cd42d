"""OpenLineage events as real producers send them (Airflow, Spark, dbt, a training script,
Marquez's seed data: ``tests/fixtures/lineage/real_producers``), loaded into the warehouse.

None of them sends a version facet on its inputs: each such input is read as the version of the
dataset current when the reading run started, so a model's closure crosses the jobs to the
source; an explicit version facet still wins; OTHER events never change a run's state; a
standard facet that breaks its schema is recorded, the event kept. Loading the same events
twice, or in other cuts and orders, gives the same graph and marts as one full rebuild.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from annex.settings import WarehouseSettings
from collectors.lineage.events import parse_events
from tests.helpers.lineage_warehouse import dv, event_row, load_rows, query
from tests.helpers.paths import FIXTURES as SHARED_FIXTURES
from warehouse import Warehouse
from warehouse.models.lineage import refresh_lineage

FIXTURES = SHARED_FIXTURES / "lineage" / "real_producers"
PG = "postgres://warehouse.internal:5432"
RAW = (PG, "analytics.raw.clickstream_events")
FEATURES = (PG, "analytics.features.user_features")
TRAINING = (PG, "analytics.ml.training_set")
DROP = ("s3://clickstream-drop", "events/2026-11-01")
A1 = "0192e4a1-7c05-7a11-8c3e-5b2f9d1e0a01"
S1 = "0192e4b0-1a3c-7f10-b2c4-6d7e8f9a0b12"
D1 = "0192e4c2-3b10-7e55-8f66-7a8b9c0d0e13"
D2 = "0192e9e8-9710-7e55-8f66-7a8b9c0d0e23"
T1 = "0192e4d0-c400-7b21-9c3d-4e5f60718291"
T2 = "0192e9f6-2c00-7b21-9c3d-4e5f607182a2"
CKPT1 = dv("s3://models", "clickstream-ranker/2026-11-01", T1)
CKPT2 = dv("s3://models", "clickstream-ranker/2026-11-02", T2)
NOW = datetime(2026, 11, 28, tzinfo=UTC)

CORE = {
    "run_io": "SELECT run_id, dataset_version_id, direction, named_version_id, resolution, "
    "first_event_time, first_event_id FROM core.lineage_run_io ORDER BY ALL",
    "versions": "SELECT * FROM core.lineage_dataset_versions ORDER BY ALL",
    "runs": "SELECT * FROM core.lineage_runs ORDER BY ALL",
    "heads": "SELECT entity_kind, entity_id, facet_name, event_id, CAST(facet AS VARCHAR) "
    "FROM core.lineage_facet_heads ORDER BY ALL",
    "events": "SELECT count(*) FROM core.lineage_events",
}
MARTS = {
    "model_inputs": "SELECT * FROM marts.lineage_model_inputs ORDER BY ALL",
    "models": "SELECT * EXCLUDE (refreshed_at) FROM marts.lineage_models ORDER BY ALL",
    "cycles": "SELECT * EXCLUDE (refreshed_at) FROM marts.lineage_cycles ORDER BY ALL",
    "eu_size": "SELECT * FROM marts.lineage_eu_summary_size ORDER BY ALL",
}


def fixture(name: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def rows(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The collector's rows of the events, through the intake's checks (its findings kept)."""
    parsed = parse_events(json.dumps(events).encode(), content_encoding=None, now=NOW)
    assert not parsed.rejected, parsed.rejected
    out = []
    for accepted in parsed.accepted:
        row = event_row(accepted.event)
        row["findings"] = [f.record for f in accepted.findings]
        out.append(row)
    return out


def load(wh: Warehouse, events: list[dict[str, Any]], *, refresh: bool = True) -> None:
    load_rows(wh, rows(events))
    if refresh:
        with wh.writer() as con:
            refresh_lineage(con)


def snapshot(wh: Warehouse, tables: dict[str, str]) -> dict[str, list[tuple]]:
    return {name: query(wh, sql) for name, sql in tables.items()}


def full_rebuild(wh: Warehouse) -> None:
    with wh.writer() as con:
        refresh_lineage(con, full=True)


def closure(wh: Warehouse, model_version_id: str) -> dict[tuple[str, str], tuple]:
    found = query(
        wh,
        "SELECT namespace, name, version, depth, is_leaf, in_eu_scope "
        "FROM marts.lineage_model_inputs WHERE model_version_id = ?",
        [model_version_id],
    )
    return {(ns, name): tuple(rest) for ns, name, *rest in found}


def edge(wh: Warehouse, run: str, named: str) -> tuple[str, str]:
    return query(
        wh,
        "SELECT dataset_version_id, resolution FROM core.lineage_run_io "
        "WHERE run_id = ? AND named_version_id = ? AND direction = 'INPUT'",
        [run, named],
    )[0]


def test_the_closure_of_a_model_crosses_airflow_spark_and_dbt_to_the_source(wh):
    load(wh, fixture("chain.json"))
    assert closure(wh, CKPT1) == {
        TRAINING: (D1, 1, False, True),
        FEATURES: (S1, 2, False, True),
        RAW: (A1, 3, False, True),
        DROP: (None, 4, True, True),  # the Airflow task's source: nothing writes it
    }
    # each versionless input is read as the version its upstream run wrote
    assert edge(wh, T1, dv(*TRAINING, None)) == (dv(*TRAINING, D1), "as_of_start")
    assert edge(wh, D1, dv(*FEATURES, None)) == (dv(*FEATURES, S1), "as_of_start")
    assert edge(wh, S1, dv(*RAW, None)) == (dv(*RAW, A1), "as_of_start")
    assert edge(wh, A1, dv(*DROP, None)) == (dv(*DROP, None), "no_prior_write")
    assert query(wh, "SELECT upstream_versions, leaf_versions FROM marts.lineage_models") == [
        (4, 1)
    ]
    # the EU views read the whole closure: the source is the model's one leaf, and the
    # training run's inputFacets (sent with the versionless input) still count its tokens
    sources = query(
        wh,
        "SELECT name, source_category FROM marts.lineage_model_sources "
        "WHERE model_version_id = ? ORDER BY depth",
        [CKPT1],
    )
    assert sources == [
        (TRAINING[1], "DERIVED"),
        (FEATURES[1], "DERIVED"),
        (RAW[1], "DERIVED"),
        (DROP[1], "UNKNOWN"),
    ]
    assert query(
        wh,
        "SELECT tokens, all_from_usage FROM marts.lineage_eu_summary_size WHERE model_name = ?",
        ["clickstream-ranker"],
    ) == [(120_000_000, True)]
    # the macro analysts call walks the same graph
    macro = query(wh, "SELECT name, is_leaf FROM marts.lineage_upstream(?) ORDER BY name", [CKPT1])
    assert macro == sorted(
        [(TRAINING[1], False), (FEATURES[1], False), (RAW[1], False), (DROP[1], True)]
    )


def test_an_explicit_version_facet_wins_over_the_current_version(wh):
    load(wh, fixture("chain.json") + fixture("rerun.json"))
    # day 2: dbt wrote a new training set before the training run started, but the run pinned
    # the first day's version with a version facet on its input
    named = dv(*TRAINING, D1)
    assert edge(wh, T2, named) == (named, "named")
    assert closure(wh, CKPT2) == closure(wh, CKPT1)
    # a versionless reader on day 2 would have read the rerun's version
    reader = fixture("rerun.json")[-4]  # the day-2 training START
    reader = json.loads(json.dumps(reader))
    reader["run"]["runId"] = "0192e9f6-2c00-7b21-9c3d-4e5f607182a3"
    del reader["inputs"][0]["facets"]
    load(wh, [reader])
    assert edge(wh, reader["run"]["runId"], dv(*TRAINING, None)) == (
        dv(*TRAINING, D2),
        "as_of_start",
    )


def test_a_reader_that_starts_before_any_write_stays_on_the_source_node(wh):
    early = json.loads(json.dumps(fixture("chain.json")[2]))  # the Spark START
    early["run"]["runId"] = "0192e4b0-0000-7000-8000-000000000001"
    early["eventTime"] = "2026-11-01T01:00:00Z"  # before the Airflow task wrote the table
    load(wh, [*fixture("chain.json"), early])
    assert edge(wh, early["run"]["runId"], dv(*RAW, None)) == (dv(*RAW, None), "no_prior_write")


def test_a_write_that_arrives_later_moves_the_readers_that_started_after_it(wh):
    chain = fixture("chain.json")
    writers, readers = chain[:2], chain[2:]  # the Airflow task's events come last
    load(wh, readers)
    assert edge(wh, S1, dv(*RAW, None)) == (dv(*RAW, None), "no_prior_write")
    assert closure(wh, CKPT1)[RAW] == (None, 3, True, True)
    load(wh, writers)
    assert edge(wh, S1, dv(*RAW, None)) == (dv(*RAW, A1), "as_of_start")
    assert closure(wh, CKPT1)[DROP] == (None, 4, True, True)


def test_a_failed_or_unfinished_write_is_not_read(wh):
    chain = fixture("chain.json")
    failed = json.loads(json.dumps(chain[1]))  # the Airflow task's COMPLETE
    failed["eventType"] = "FAIL"
    load(wh, [chain[0], failed, *chain[2:]])
    assert edge(wh, S1, dv(*RAW, None)) == (dv(*RAW, None), "no_prior_write")
    load(wh, [chain[0]])  # nothing new: still the FAIL
    assert edge(wh, S1, dv(*RAW, None))[1] == "no_prior_write"


def test_other_events_carry_metadata_not_a_state(wh):
    chain = fixture("chain.json")
    start, during, complete, after = chain[-4:]  # the training run's events
    load(wh, [start, during])
    assert query(wh, "SELECT state, ended_at FROM core.lineage_runs WHERE run_id = ?", [T1]) == [
        ("START", None)
    ]
    load(wh, [complete, after])
    assert query(wh, "SELECT state FROM core.lineage_runs WHERE run_id = ?", [T1]) == [
        ("COMPLETE",)
    ]
    # the facets of both OTHER events are merged into the run's
    facets = query(
        wh,
        "SELECT facet_name FROM core.lineage_current_facets WHERE entity_kind = 'run' "
        "AND entity_id = ? ORDER BY 1",
        [T1],
    )
    assert ("evaluation",) in facets and ("trainingProgress",) in facets


def test_a_run_with_only_other_events_has_no_state(wh):
    other = fixture("chain.json")[-3]
    load(wh, [other])
    assert query(wh, "SELECT state FROM core.lineage_runs WHERE run_id = ?", [T1]) == [(None,)]


def test_a_facet_violation_is_recorded_and_the_event_kept(wh):
    load(wh, fixture("chain.json"))
    assert query(wh, "SELECT count(*) FROM core.lineage_events")[0][0] == 11
    assert query(wh, "SELECT count(*) FROM audit.rejected")[0][0] == 0
    found = query(
        wh,
        "SELECT run_id, facet_path, facet_name, reason, producer "
        "FROM core.lineage_facet_violations",
    )
    assert found == [
        (
            A1,
            "run.facets.nominalTime",
            "nominalTime",
            'not a valid NominalTimeRunFacet 1-0-1: nominalStartTime: "2026-11-01 02:00:00" '
            'is not a "date-time"',
            "https://github.com/apache/airflow/tree/providers-openlineage/1.14.0",
        )
    ]


def test_marquez_seed_jobs_link_through_the_datasets_they_write(wh):
    load(wh, fixture("marquez_seed.json"))
    ns = "food_delivery"
    orders_7_days = dv(ns, "public.orders_7_days", "ffba2c14-4170-48da-bec3-ab5fd4ec9a3f")
    delivery = dv(ns, "public.delivery_7_days", "d5a2a4c4-fc78-428d-ae85-08c942ed8371")
    # every seed run STARTs at 22:42:42 with its outputs: the write is at or before the read
    assert edge(
        wh, "d5a2a4c4-fc78-428d-ae85-08c942ed8371", dv(ns, "public.orders_7_days", None)
    ) == (
        orders_7_days,
        "as_of_start",
    )
    upstream = query(
        wh, "SELECT name, version, is_leaf FROM marts.lineage_upstream(?) ORDER BY name", [delivery]
    )
    assert upstream == [
        ("public.menu_items", "e05901b1-3a06-4b98-8d9c-aaf188c9a28c", False),
        ("public.orders", "a43a8523-349f-4296-807f-3354ac491990", False),
        ("public.orders_7_days", "ffba2c14-4170-48da-bec3-ab5fd4ec9a3f", False),
    ]


def test_the_same_events_twice_change_nothing(wh):
    events = fixture("chain.json") + fixture("rerun.json")
    load(wh, events)
    once = snapshot(wh, CORE) | snapshot(wh, MARTS)
    load(wh, events)
    load(wh, list(reversed(events)))
    assert snapshot(wh, CORE) | snapshot(wh, MARTS) == once


CUTS = {
    "one load": [range(0, 17)],
    "downstream first": [range(11, 17), range(6, 11), range(0, 6)],
    "writers' COMPLETE late": [
        [0, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],
        [1, 4],
    ],
    "one event a load, backwards": [[k] for k in reversed(range(17))],
}


@pytest.mark.parametrize("cut", sorted(CUTS))
def test_incremental_refreshes_equal_a_full_rebuild_on_the_chain(tmp_path, cut):
    events = fixture("chain.json") + fixture("rerun.json")
    reference = Warehouse(_settings(tmp_path / "reference.duckdb"))
    load(reference, events)
    expected = snapshot(reference, MARTS)
    wh = Warehouse(_settings(tmp_path / "w.duckdb"))
    for part in CUTS[cut]:
        load(wh, [events[k] for k in part])
        incremental = snapshot(wh, MARTS)
        full_rebuild(wh)
        assert incremental == snapshot(wh, MARTS), f"{cut}: the incremental refresh diverged"
    assert snapshot(wh, MARTS) == expected
    assert snapshot(wh, CORE)["run_io"] == snapshot(reference, CORE)["run_io"]


def _settings(path: Path) -> WarehouseSettings:
    return WarehouseSettings(path=path, lock_timeout_seconds=5)


def test_edges_stored_before_migration_0021_are_resolved_by_the_next_collection(wh):
    load(wh, fixture("chain.json"))
    resolved = snapshot(wh, CORE)["run_io"]
    marts = snapshot(wh, MARTS)
    with wh.writer() as con:  # as migration 0021 leaves a warehouse's versionless edges
        con.execute(
            "UPDATE core.lineage_run_io SET dataset_version_id = named_version_id, "
            "resolution = NULL WHERE resolution <> 'named'"
        )
    load(wh, fixture("marquez_seed.json"))  # any later collection, about other datasets
    after = snapshot(wh, CORE)["run_io"]
    assert set(resolved) <= set(after)  # the chain's edges resolved again, as before
    assert query(wh, "SELECT count(*) FROM core.lineage_run_io WHERE resolution IS NULL") == [(0,)]
    assert snapshot(wh, MARTS)["model_inputs"] == marts["model_inputs"]


def test_a_run_that_reads_the_table_it_rewrites_reads_the_previous_write(wh):
    # an incremental dbt model: day 2's run reads its own table (no version facet) and writes
    # it; its START names both at the same time, and it must read day 1's version, not its own
    rerun = fixture("rerun.json")
    for e in rerun[:2]:
        e["inputs"].append({"namespace": TRAINING[0], "name": TRAINING[1]})
    load(wh, fixture("chain.json") + rerun)
    assert edge(wh, D2, dv(*TRAINING, None)) == (dv(*TRAINING, D1), "as_of_start")

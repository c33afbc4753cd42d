"""The real producers' events (tests/fixtures/lineage/real_producers) through annex's own
collection (``collect_lineage_evidence`` reading JSON-lines files, as ``annex collect lineage
--file`` does): collected twice, the graph is the same; a model's closure crosses the jobs; a
broken standard facet is a finding on the stored event, queryable in
``core.lineage_facet_violations``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from annex.settings import LineageSettings, Settings, WarehouseSettings
from services.lineage import collect_lineage_evidence
from tests.helpers.paths import FIXTURES as SHARED_FIXTURES

FIXTURES = SHARED_FIXTURES / "lineage" / "real_producers"
NOW = datetime(2026, 11, 28, tzinfo=UTC)
GRAPH = {
    "edges": "SELECT run_id, dataset_version_id, direction, named_version_id, resolution "
    "FROM core.lineage_run_io ORDER BY ALL",
    "inputs": "SELECT * FROM marts.lineage_model_inputs ORDER BY ALL",
    "runs": "SELECT run_id, state, started_at, ended_at FROM core.lineage_runs ORDER BY ALL",
    "events": "SELECT count(*) FROM core.lineage_events",
}


def _lines(tmp_path: Path) -> Path:
    path = tmp_path / "events.jsonl"
    events = [
        e
        for name in ("chain.json", "rerun.json", "marquez_seed.json")
        for e in json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def _graph(db: Path) -> dict[str, list[tuple]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {name: con.execute(sql).fetchall() for name, sql in GRAPH.items()}


def test_collecting_real_producer_events_twice_gives_one_graph(tmp_path):
    db = tmp_path / "w.duckdb"
    settings = Settings(
        warehouse=WarehouseSettings(path=db, lock_timeout_seconds=5),
        lineage=LineageSettings(spool_dir=tmp_path / "lineage", intake_workers=0),
    )
    events = _lines(tmp_path)
    first = collect_lineage_evidence(settings, files=[events], publish=False, now=NOW)
    assert (first.stats.events, first.stats.rejected) == (25, 0)
    once = _graph(db)
    assert once["events"] == [(25,)]
    collect_lineage_evidence(settings, files=[events], publish=False, now=NOW)
    assert _graph(db) == once
    with duckdb.connect(str(db), read_only=True) as con:
        leaves = con.execute(
            "SELECT m.name, i.name, i.depth FROM marts.lineage_model_inputs AS i "
            "JOIN marts.lineage_models AS m USING (model_version_id) WHERE i.is_leaf ORDER BY ALL"
        ).fetchall()
        violations = con.execute(
            "SELECT facet_path, reason FROM core.lineage_facet_violations"
        ).fetchall()
        rejected = con.execute("SELECT count(*) FROM audit.rejected").fetchone()
    # both checkpoints reach the Airflow task's source through dbt, Spark and Airflow
    assert leaves == [
        ("clickstream-ranker/2026-11-01", "events/2026-11-01", 4),
        ("clickstream-ranker/2026-11-02", "events/2026-11-01", 4),
    ]
    assert violations == [
        (
            "run.facets.nominalTime",
            'not a valid NominalTimeRunFacet 1-0-1: nominalStartTime: "2026-11-01 02:00:00" '
            'is not a "date-time"',
        )
    ]
    assert rejected == (0,)

"""docs/analyst-guide.md as an analyst uses it: every query in it runs against the demo's
published copy and returns rows with the columns the guide's paragraph describes; one runs
through `annex sql` itself; and the figures agree with the marts they restate (a model's
attested GPU-hours are its compute's GPU-hours, split once)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.helpers.demo import clean_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "analyst-guide.md"
TAGGED = re.compile(r"<!-- query: (\w+) -->\n```sql\n(.*?)```", re.S)

COLUMNS = {
    "gpus_by_team": [
        "cluster", "namespace", "gpu_pods_counted", "allocated_workload_gpus",
        "allocated_balloon_gpus",
        "mig_slices_allocated", "queued_gpu_pods", "queued_gpus",
    ],
    "gpus_by_pool": [
        "cluster", "node_pool", "nodes", "schedulable_nodes", "capacity_gpus",
        "allocated_workload_gpus", "allocated_balloon_gpus", "free_gpus", "unavailable_gpus",
        "free_share",
    ],
    "idle_allocated_by_team": [
        "cluster", "namespace", "first_day", "last_day", "allocated_gpu_hours",
        "observed_gpu_hours", "idle_gpu_hours", "idle_share", "telemetry_only_gpu_hours",
        "telemetry_only_idle_gpu_hours",
    ],
    "largest_failure_domain": [
        "cluster", "level", "level_label", "failure_domain", "nodes", "blast_radius_gpus",
        "blast_radius_workload_gpus", "blast_radius_share",
    ],
    "degraded_gpus": [
        "cluster", "node_name", "gpu_uuid", "gpu_model", "slow_measurements",
        "worst_ratio_to_median", "worst_benchmark", "verdict", "max_gpu_temp_c",
        "lowest_sm_clock_ratio", "xid_last", "row_remap_failure", "last_measured_at",
    ],
    "model_verified_share": [
        "model_name", "runs", "gpu_hours", "verified_gpu_hours", "self_reported_gpu_hours",
        "unattested_gpu_hours", "unknown_gpu_hours", "verified_share", "unknown_share",
        "declared_gpu_hours",
    ],
    "model_attestation_by_run": [
        "run_id", "lifecycle_stage", "counted", "running", "job_name", "gpu_hours",
        "verified_gpu_hours", "unattested_gpu_hours", "unknown_gpu_hours", "verified_share",
    ],
    "datasets_behind_model": [
        "model_name", "model_version", "dataset_namespace", "dataset_name", "dataset_version",
        "depth", "is_leaf", "source_category", "spdx_expression", "size_tokens",
    ],
    "model_compute_and_thresholds": [
        "model_name", "runs", "gpu_hours", "hardware_days", "wall_clock_days",
        "own_compute_flop", "cumulative_compute_flop", "energy_mwh", "energy_measured_share",
        "threshold", "threshold_flop", "status", "notification_due",
    ],
    "raw_samples_past_retention": ["day", "gpu_uuid", "samples", "mean_value"],
}  # fmt: skip
"""The columns each query of the guide returns, in order: what its paragraph explains."""


def guide_queries() -> dict[str, str]:
    text = GUIDE.read_text(encoding="utf-8")
    tagged = TAGGED.findall(text)
    names = [name for name, _ in tagged]
    assert len(names) == len(set(names)), f"a query name repeats in {GUIDE.name}: {names}"
    assert text.count("```sql") == len(tagged), "every sql block needs a <!-- query: --> tag"
    return dict(tagged)


def _run(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[str], list[tuple]]:
    cursor = con.execute(sql)
    return [d[0] for d in cursor.description], cursor.fetchall()


@pytest.fixture(scope="module")
def published(demo_folder: Path) -> Path:
    return demo_folder / "annex.published.duckdb"


@pytest.fixture
def con(published: Path) -> duckdb.DuckDBPyConnection:
    with duckdb.connect(str(published), read_only=True) as connection:
        yield connection


def test_the_guide_answers_each_question_with_one_tagged_query() -> None:
    assert sorted(guide_queries()) == sorted(COLUMNS)


@pytest.mark.parametrize("name", sorted(COLUMNS))
def test_each_query_returns_rows_with_its_columns(
    name: str, con: duckdb.DuckDBPyConnection
) -> None:
    columns, rows = _run(con, guide_queries()[name])
    assert columns == COLUMNS[name]
    assert rows, f"{name} returned no rows on the demo warehouse"


def test_a_query_runs_as_printed_through_annex_sql(demo_folder: Path) -> None:
    result = subprocess.run(
        [
            sys.executable, "-m", "annex", "sql", "--format", "json",
            "-c", guide_queries()["model_verified_share"],
        ],
        cwd=demo_folder,
        env={**clean_env(), "ANNEX_WAREHOUSE": str(demo_folder / "annex.duckdb")},
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert rows and list(rows[0]) == COLUMNS["model_verified_share"]


def test_a_models_verified_share_splits_its_compute_gpu_hours_once(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Conservation on the demo: every run's four buckets add up to its GPU-hours of record
    (marts.training_run_compute), and every model's to marts.model_compute's and
    marts.model_gpu_hours' GPU-hours."""
    columns, rows = _run(con, guide_queries()["model_verified_share"])
    compute = dict(con.execute("SELECT model_name, gpu_hours FROM marts.model_compute").fetchall())
    by_gpu_model = dict(
        con.execute(
            "SELECT model_name, sum(gpu_hours) FROM marts.model_gpu_hours GROUP BY model_name"
        ).fetchall()
    )
    assert any(dict(zip(columns, row, strict=True))["verified_gpu_hours"] > 0 for row in rows)
    for row in rows:
        model = dict(zip(columns, row, strict=True))
        parts = sum(
            model[b]
            for b in (
                "verified_gpu_hours",
                "self_reported_gpu_hours",
                "unattested_gpu_hours",
                "unknown_gpu_hours",
            )
        )
        assert parts == pytest.approx(model["gpu_hours"], abs=1e-6), model
        assert model["gpu_hours"] == pytest.approx(compute[model["model_name"]], abs=1e-6)
        assert model["gpu_hours"] == pytest.approx(
            by_gpu_model.get(model["model_name"], 0.0), abs=1e-6
        )
    runs = con.execute(
        "SELECT a.run_id, a.gpu_hours, r.gpu_hours, a.verified_gpu_hours "
        "+ a.self_reported_gpu_hours + a.unattested_gpu_hours + a.unknown_gpu_hours "
        "FROM marts.model_attestation AS a JOIN marts.training_run_compute AS r USING (run_id) "
        "WHERE r.gpu_hours IS NOT NULL"
    ).fetchall()
    assert runs
    for run_id, split_hours, run_hours, parts in runs:
        assert split_hours == run_hours, run_id
        assert parts == pytest.approx(run_hours, abs=1e-6), run_id


def test_the_largest_domains_and_degraded_gpus_agree_with_the_fleet(
    con: duckdb.DuckDBPyConnection,
) -> None:
    columns, rows = _run(con, guide_queries()["largest_failure_domain"])
    capacity = con.execute("SELECT sum(capacity_gpus) FROM marts.fleet_summary").fetchone()
    assert capacity and capacity[0] > 0
    top = dict(zip(columns, rows[0], strict=True))
    assert top["level"] == 1
    assert top["blast_radius_share"] == pytest.approx(
        top["blast_radius_gpus"] / capacity[0], abs=5e-4
    )
    _, degraded = _run(con, guide_queries()["degraded_gpus"])
    flagged = con.execute("SELECT count(DISTINCT gpu_uuid) FROM marts.gpu_degraded").fetchone()
    assert flagged and len(degraded) == flagged[0]

"""marts.model_attestation and marts.model_attestation_summary: each training run's GPU-hours
of record split by the attestation coverage of its Job, never a GPU-hour in two runs.

A scenario worked by hand (rows straight into the two marts the views read, as the report
tests do; the marts' own tests cover how collections produce them), then the report tests'
model-documentation scenario, whose compute and coverage the real refreshes build.

Hand-worked: node-1 has 2 GPUs, attested (verified); node-2 has 1 GPU, not attested.

* model m, run A (pre-training, Job job-a): the 3 GPUs for 10 h on day D: 30 GPU-hours,
  20 verified + 10 unattested.
* model m, run B (fine-tuning, Job job-b): node-2's GPU for 4 h on D+1 under self-reported
  evidence, and 2 h on node-x the inventory never knew: 6 GPU-hours, 4 self-reported +
  2 unknown. An older Job of the same name held 5 GPU-hours on D-5, before run B: not B's.
* model m, run C (exploratory, not counted, Job job-c): 2 verified GPU-hours; listed only.
* model m, run D names job-a too, but run A holds the claim (gpu_hours NULL): nothing of
  job-a's coverage goes to D.
* model m, run E: declared 100 GPU-hours the inventory never saw: outside the split.
* model n, run F (running, Job job-f): the compute counts 9 GPU-hours up to its as_of, the
  coverage 10 (6 verified + 4 unattested) up to the last snapshot: scaled, 5.4 + 3.6.
* model n, run G (Job job-g): 5 GPU-hours, the coverage has no rows yet: 5 unknown.

Model m (counted: A, B, E): 36 GPU-hours = 20 verified + 4 self-reported + 10 unattested +
2 unknown; verified share 20/34 of the judged 34. Model n: 14 = 5.4 + 3.6 + 5 unknown.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from annex.settings import WarehouseSettings
from tests.helpers.model_documentation_scenario import GPU_HOURS, build_documentation_scenario
from warehouse import Warehouse

D = date(2026, 10, 1)
BUCKETS = (
    "verified_gpu_hours",
    "self_reported_gpu_hours",
    "unattested_gpu_hours",
    "unknown_gpu_hours",
)


def _at(day: date, hour: int) -> datetime:
    return datetime(day.year, day.month, day.day) + timedelta(hours=hour)


NOW = _at(D, 30)
RUNS = [
    # run_id, model, stage, counted, running, job, first, last, gpu_hours, declared
    ("A", "m", "pretraining", True, False, "job-a", _at(D, 0), _at(D, 10), 30.0, None),
    ("B", "m", "fine_tuning", True, False, "job-b", _at(D, 24), _at(D, 28), 6.0, None),
    ("C", "m", "fine_tuning", False, False, "job-c", _at(D, 12), _at(D, 13), 2.0, None),
    ("D", "m", "fine_tuning", False, False, "job-a", None, None, None, None),
    ("E", "m", "fine_tuning", True, False, None, None, None, None, 100.0),
    ("F", "n", "pretraining", True, True, "job-f", _at(D, 0), _at(D, 9), 9.0, None),
    ("G", "n", "fine_tuning", True, False, "job-g", _at(D, 0), _at(D, 5), 5.0, None),
]
COVERAGE = [
    # day, node, job, allocated, verified, self_reported, unattested, unknown
    (D, "node-1", "job-a", 20.0, 20.0, 0.0, 0.0, 0.0),
    (D, "node-2", "job-a", 10.0, 0.0, 0.0, 10.0, 0.0),
    (D + timedelta(days=1), "node-2", "job-b", 4.0, 0.0, 4.0, 0.0, 0.0),
    (D + timedelta(days=1), "node-x", "job-b", 2.0, 0.0, 0.0, 0.0, 2.0),
    (D - timedelta(days=5), "node-1", "job-b", 5.0, 5.0, 0.0, 0.0, 0.0),
    (D, "node-1", "job-c", 2.0, 2.0, 0.0, 0.0, 0.0),
    (D, "node-1", "job-f", 6.0, 6.0, 0.0, 0.0, 0.0),
    (D, "node-2", "job-f", 4.0, 0.0, 0.0, 4.0, 0.0),
]


@pytest.fixture
def hand_worked(tmp_path: Path) -> Warehouse:
    wh = Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5))
    with wh.writer() as con:
        for run_id, model, stage, counted, running, job, first, last, hours, declared in RUNS:
            con.execute(
                "INSERT INTO marts.training_run_compute (run_id, model_name, attributed_by, "
                "stage, lifecycle_stage, counted, running, cluster, "
                "namespace, kubernetes_job_name, gpus, open_gpus, "
                "first_allocation_at, last_allocation_at, gpu_hours, declared_gpu_hours, "
                "refreshed_at) VALUES (?, ?, 'registry_job', 'PRETRAINING', ?, ?, ?, 'c', "
                "'team', ?, 3, 0, ?, ?, ?, ?, ?)",
                [run_id, model, stage, counted, running, job, first, last, hours, declared, NOW],
            )
        for day, node, job, *hours in COVERAGE:
            con.execute(
                "INSERT INTO marts.attestation_gpu_hours VALUES "
                "('c', ?, ?, 'team', ?, NULL, ?, ?, ?, ?, ?, ?)",
                [day, node, job, *hours, NOW],
            )
    wh.publish()
    return wh


def _rows(wh: Warehouse, sql: str) -> dict[str, dict]:
    with wh.reader() as con:
        cursor = con.execute(sql)
        names = [c[0] for c in cursor.description]
        return {row[0]: dict(zip(names, row, strict=True)) for row in cursor.fetchall()}


def test_each_run_is_split_by_its_jobs_coverage_and_conserved(hand_worked: Warehouse) -> None:
    runs = _rows(hand_worked, "SELECT run_id, * FROM marts.model_attestation")
    expected = {
        "A": (20.0, 0.0, 10.0, 0.0),
        "B": (0.0, 4.0, 0.0, 2.0),
        "C": (2.0, 0.0, 0.0, 0.0),
        "F": (5.4, 0.0, 3.6, 0.0),
        "G": (0.0, 0.0, 0.0, 5.0),
    }
    for run_id, buckets in expected.items():
        row = runs[run_id]
        assert tuple(row[b] for b in BUCKETS) == pytest.approx(buckets), run_id
        assert sum(row[b] for b in BUCKETS) == pytest.approx(row["gpu_hours"]), run_id
    assert runs["A"]["verified_share"] == pytest.approx(2 / 3)
    assert runs["A"]["unattested_share"] == pytest.approx(1 / 3)
    assert runs["B"]["self_reported_share"] == pytest.approx(1.0)
    assert runs["B"]["unknown_share"] == pytest.approx(1 / 3)
    assert runs["F"]["coverage_gpu_hours"] == pytest.approx(10.0)
    assert runs["F"]["verified_share"] == pytest.approx(0.6)
    assert runs["G"]["coverage_gpu_hours"] is None
    assert runs["G"]["verified_share"] is None  # nothing can be judged
    # job-a's coverage went to run A alone; E's declared hours are outside the split
    for run_id in ("D", "E"):
        assert all(runs[run_id][b] is None for b in BUCKETS), run_id
    assert runs["E"]["declared_gpu_hours"] == 100.0
    assert not runs["C"]["counted"]


def test_the_model_total_adds_up_its_counted_runs_only(hand_worked: Warehouse) -> None:
    models = _rows(hand_worked, "SELECT model_name, * FROM marts.model_attestation_summary")
    m, n = models["m"], models["n"]
    assert (m["runs"], m["gpu_hours"], m["declared_gpu_hours"]) == (3, 36.0, 100.0)
    assert tuple(m[b] for b in BUCKETS) == pytest.approx((20.0, 4.0, 10.0, 2.0))
    assert m["verified_share"] == pytest.approx(20 / 34)
    assert m["self_reported_share"] == pytest.approx(4 / 34)
    assert m["unattested_share"] == pytest.approx(10 / 34)
    assert m["unknown_share"] == pytest.approx(2 / 36)
    assert n["gpu_hours"] == pytest.approx(14.0)
    assert tuple(n[b] for b in BUCKETS) == pytest.approx((5.4, 0.0, 3.6, 5.0))


def test_the_documentation_scenario_conserves_its_refreshed_gpu_hours(tmp_path: Path) -> None:
    """The real compute and coverage refreshes: the student's pre-training run, 80 GPU-hours on
    a node without attestation, all unattested; the model's total is marts.model_compute's
    and marts.model_gpu_hours' GPU-hours."""
    wh, _ = build_documentation_scenario(tmp_path)
    runs = _rows(wh, "SELECT model_name, * FROM marts.model_attestation")
    assert runs["student"]["gpu_hours"] == pytest.approx(GPU_HOURS)
    assert tuple(runs["student"][b] for b in BUCKETS) == pytest.approx((0, 0, GPU_HOURS, 0))
    assert runs["student"]["unattested_share"] == pytest.approx(1.0)
    with wh.reader() as con:
        compared = con.execute(
            "SELECT s.gpu_hours, s.verified_gpu_hours + s.self_reported_gpu_hours "
            "+ s.unattested_gpu_hours + s.unknown_gpu_hours, c.gpu_hours, "
            "(SELECT sum(gpu_hours) FROM marts.model_gpu_hours WHERE model_name = 'student') "
            "FROM marts.model_attestation_summary AS s JOIN marts.model_compute AS c "
            "USING (model_name)"
        ).fetchall()
    assert compared == [pytest.approx((GPU_HOURS,) * 4)]

"""The simulated world's models through the real collections: the inventory from the simulated
Kubernetes API, the lineage events of its training runs, the registry files of
simulator/models/, then the compute marts, checked against the world's own truth (GPU counts
and durations, the token counts its lineage producer emitted). In this world (24 nodes, seed
3) the text models cross 10^23 (no notification: Guidelines footnote 7) and none reaches
10^25."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path

import pytest

from annex.cli.compute import render_text
from annex.model_registry import load_registry
from annex.settings import load_settings
from services.compute import model_report, refresh_compute_marts
from services.inventory import collect_cluster_inventory
from services.lineage import collect_lineage_evidence
from simulator.kubernetes import SimulatedCluster
from simulator.lineage.producer import build_events, write_jsonl
from simulator.world import build_world
from warehouse import Warehouse

pytestmark = pytest.mark.integration

NODES, SEED, CLUSTER = 24, 3, "sim-compute"
MODELS = Path(__file__).parents[2] / "simulator" / "models"


def collect_world(tmp: Path, tag: str = "") -> tuple:
    """The simulated world (NODES, SEED) collected into ``tmp``'s warehouse as annex does it:
    the inventory from its API server, the lineage events of its training runs, then the
    compute marts as of the world's present. Collecting again into the same folder (another
    ``tag``) is a rerun on the same warehouse."""
    world = build_world(nodes=NODES, seed=SEED)
    events = tmp / f"events{tag}.jsonl"
    write_jsonl(build_events(world, cluster=CLUSTER), events)
    with SimulatedCluster(world) as sim:
        kubeconfig = sim.write_kubeconfig(tmp / f"kubeconfig{tag}")
        config = tmp / "annex.toml"
        config.write_text(
            f'[warehouse]\npath = "{tmp / "w.duckdb"}"\n[models]\ndir = "{MODELS}"\n'
            f'[lineage]\nspool_dir = "{tmp / "spool"}"\nintake_workers = 0\n'
            f'[[clusters]]\nname = "{CLUSTER}"\nkubeconfig = "{kubeconfig}"\n',
            encoding="utf-8",
        )
        settings = load_settings(config, env={})
        wh = Warehouse(settings.warehouse)
        result = collect_cluster_inventory(settings, wh, settings.cluster(CLUSTER), publish=False)
        assert result.status == "succeeded"
    collect_lineage_evidence(settings, wh=wh, files=[events], publish=False)
    now = world.now.astimezone(UTC).replace(tzinfo=None)
    counts = refresh_compute_marts(settings, wh=wh, now=now)
    assert counts["models"] == 9
    return world, settings, wh, events


@pytest.fixture(scope="module")
def world_marts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    yield collect_world(tmp_path_factory.mktemp("compute-world"))


def _rows(wh: Warehouse, sql: str) -> list[dict]:
    with wh.reader() as con:
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def test_gpu_hours_match_the_worlds_gpu_counts_and_durations(world_marts: tuple) -> None:
    world, _, wh, _ = world_marts
    got = {
        r["kubernetes_job_name"]: r
        for r in _rows(wh, "SELECT * FROM marts.training_run_compute WHERE gpu_hours NOT NULL")
    }
    checked = 0
    for run in world.training_runs:
        if run.started is None or run.state == "queued":
            continue
        end = run.finished or world.now
        gpus = run.pods * run.gpus_per_pod
        truth = gpus * (end - run.started).total_seconds() / 3600
        row = got[run.job_name]
        assert row["gpus"] == gpus
        # pods are bound a few seconds before the trainer starts: at most a minute per GPU
        assert row["gpu_hours"] == pytest.approx(truth, abs=gpus / 60)
        assert row["running"] == (run.state in ("running", "starting"))
        checked += 1
    assert checked >= 8


def test_architecture_compute_is_six_n_d_of_the_emitted_tokens(world_marts: tuple) -> None:
    _, _, wh, events = world_marts
    tokens: dict[str, float] = defaultdict(float)
    models: dict[str, tuple[str, str]] = {}
    for line in events.read_text().splitlines():
        event = json.loads(line)
        if event.get("eventType") != "START":
            continue
        facet = event["run"]["facets"].get("annex_trainingRun")
        if not facet or facet["stage"] not in ("PRETRAINING", "FINE_TUNING"):
            continue
        models[event["run"]["runId"]] = (facet["modelName"], facet["stage"])
        for item in event.get("inputs", []):
            usage = (item.get("inputFacets") or {}).get("annex_trainingUsage")
            if usage:
                tokens[event["run"]["runId"]] += usage["tokensConsumed"]
    runs = {r["run_id"]: r for r in _rows(wh, "SELECT * FROM marts.training_run_compute")}
    registry = load_registry(MODELS)
    assert len(models) >= 20
    for run_id, (model, _) in models.items():
        row = runs[run_id]
        n = registry.get(model).compute_parameters  # active parameters of a MoE
        assert row["architecture_flop"] == pytest.approx(6 * n * tokens[run_id])


def test_text_models_cross_1e23_without_a_notification(world_marts: tuple) -> None:
    """Crossing 10^23 makes a language model a presumed GPAI model and obliges no notification
    (Guidelines point 17, footnote 7); a model that generates no language is outside it. Only
    the counted runs' plans project 10^25, and in this world none reaches it."""
    _, _, wh, _ = world_marts
    status = {
        (t["model_name"], t["threshold"]): t
        for t in _rows(wh, "SELECT * FROM marts.model_compute_thresholds")
    }
    for model in ("annex-lm-400b", "llama-70b"):
        gpai = status[(model, "gpai")]
        assert gpai["status"] == "crossed" and gpai["notification_due"] is None
        assert gpai["learned_at"] is not None and gpai["learned_at"] <= gpai["crossed_at"]
        assert status[(model, "systemic_risk")]["status"] == "below"
    assert status[("vit-h14", "gpai")]["status"] == "not_applicable"  # outputs: other
    (model,) = _rows(wh, "SELECT * FROM marts.model_compute WHERE model_name = 'annex-lm-400b'")
    assert model["cumulative_compute_flop"] < 1e25
    with wh.reader() as con:
        text = render_text(model_report(con, "annex-lm-400b"))
    assert "gpai (1e+23 FLOP" in text and "notify by no notification" in text


def test_every_model_is_within_physics(world_marts: tuple) -> None:
    """No model's compute above what its runs' GPUs could deliver at dense peak, and no energy
    below compute ÷ 2e13 FLOP per joule (no GPU does better): reference eu-ai-act.md §7."""
    _, _, wh, _ = world_marts
    models = _rows(wh, "SELECT * FROM marts.model_compute WHERE runs > 0")
    assert len(models) == 9
    for m in models:
        assert m["energy_mwh"] is not None, m["model_name"]
        assert m["energy_mwh"] * 3.6e9 >= m["own_compute_flop"] / 2e13, m["model_name"]
        assert m["physical_max_flop"] is not None, m["model_name"]
        assert m["own_compute_flop"] <= m["physical_max_flop"], m["model_name"]
    for r in _rows(wh, "SELECT * FROM marts.training_run_compute WHERE counted"):
        if r["compute_flop"] is not None and r["physical_max_flop"] is not None:
            assert r["compute_flop"] <= r["physical_max_flop"] * (1 + 1e-9), r["run_id"]


def test_ablations_are_listed_but_not_counted(world_marts: tuple) -> None:
    _, _, wh, _ = world_marts
    ablations = _rows(
        wh, "SELECT * FROM marts.training_run_compute WHERE kubernetes_job_name LIKE '%ablation%'"
    )
    assert ablations, "the world has ablation Jobs"
    for r in ablations:
        assert r["purpose"] == "ABLATION" and r["counted"] is False
        assert r["exclusion"] == "exploratory" and "para ~122" in r["exclusion_basis"]
    counted = {
        r["run_id"] for r in _rows(wh, "SELECT unnest(evidence_run_ids) AS run_id "
                                        "FROM marts.model_compute")
    }  # fmt: skip
    assert not counted & {r["run_id"] for r in ablations}


def test_collecting_the_same_world_twice_changes_no_figure(tmp_path: Path) -> None:
    """The simulated pipeline twice on one warehouse, as a rerun of `annex demo` does: the same
    seed gives the same run ids, Job uids and event ids, so every figure stays as it was."""
    snapshots = []
    for attempt in range(2):
        _, _, wh, _ = collect_world(tmp_path, tag=f"-{attempt}")
        snapshots.append(
            {
                table: _rows(wh, f"SELECT * EXCLUDE (refreshed_at) FROM {table} ORDER BY ALL")
                for table in (
                    "marts.model_compute",
                    "marts.model_compute_thresholds",
                    "marts.model_compute_stages",
                    "marts.training_run_compute",
                    "marts.compute_findings",
                )
            }
        )
    first, second = snapshots
    assert first["marts.model_compute"] and first["marts.model_compute_thresholds"]
    for table, rows in first.items():
        assert second[table] == rows, table
    assert not [f for f in second["marts.compute_findings"] if f["kind"] == "job_claimed_twice"]

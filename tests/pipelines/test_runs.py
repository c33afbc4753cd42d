"""``annex run``: Dagster runs in-process, and two runs at once serialise on the one writer.

Two processes each run the inventory job for the same cluster into the same warehouse. Each
must succeed: the second waits (on the ``duckdb`` pool when they share a Dagster instance, on
annex's writer lock when each has its own, saying it waits) instead of failing on DuckDB's
file lock. The runs' steps may interleave, but their collections never overlap.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from simulated import Setup, simulated_setup

from annex.settings import ClusterSettings, load_settings
from pipelines.execution import write_settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CLUSTER = "sim-west"
NODES = 60
WAITING = "waiting for the warehouse writer lock"


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    with simulated_setup(tmp_path, cluster=CLUSTER, nodes=NODES, seed=4) as prepared:
        yield prepared


def _env(dagster_home: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANNEX_", "DAGSTER_"))}
    if dagster_home is not None:
        env["DAGSTER_HOME"] = str(dagster_home)
    return env


def _annex_run(setup: Setup, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "annex", "--config", str(setup.config_path), "run", *args],
        cwd=setup.tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("shared_instance", [False, True], ids=["own-instances", "dagster-home"])
def test_two_runs_at_once_serialise(setup: Setup, shared_instance: bool) -> None:
    home: Path | None = None
    if shared_instance:
        home = setup.tmp / "dagster_home"
        home.mkdir()
        shutil.copy(REPO / ".dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = _env(home)

    runs = [_annex_run(setup, env, "--cluster", CLUSTER) for _ in range(2)]
    outputs = [run.communicate(timeout=240) for run in runs]

    for run, (stdout, stderr) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, stdout + stderr
        assert "Traceback" not in stderr
        assert "dagster run " in stdout and "succeeded, all 5 checks passed" in stdout
    with duckdb.connect(str(setup.warehouse_path), read_only=True) as con:
        rows = con.execute(
            "SELECT started_at, finished_at FROM audit.collections "
            "WHERE source = 'kubernetes' AND status = 'succeeded' AND cluster = ? "
            "ORDER BY started_at",
            [CLUSTER],
        ).fetchall()
    assert len(rows) == 2
    (_, first_finished), (second_started, _) = rows
    assert first_finished <= second_started, rows
    for stdout, stderr in outputs:
        assert "Could not set lock" not in stdout + stderr
    if shared_instance:
        # The pool admits one DuckDB step at a time, so no step ever meets a held writer lock.
        assert not any(WAITING in stderr for _, stderr in outputs)


def test_run_without_clusters_says_what_to_do(tmp_path: Path) -> None:
    config = tmp_path / "annex.toml"
    config.write_text(f'[warehouse]\npath = "{tmp_path / "annex.duckdb"}"\n', encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "annex", "--config", str(config), "run"],
        cwd=tmp_path,
        env=_env(None),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "no clusters are configured" in proc.stderr
    assert "hint:" in proc.stderr and "[[clusters]]" in proc.stderr


def test_run_with_a_bad_selection_is_a_config_error(setup: Setup) -> None:
    proc = _annex_run(setup, _env(None), "--select", "no_such_asset")
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 2, stdout + stderr
    assert "no_such_asset" in stderr and "hint:" in stderr
    assert "Traceback" not in stderr


def test_a_selection_reaching_the_monthly_reports_runs_its_per_cluster_part(
    setup: Setup,
) -> None:
    """``key:cluster_inventory+`` (the README's example) reaches the monthly fleet report too:
    one job cannot mix partitionings, so the run takes the per-cluster and unpartitioned assets
    and says which it left out, instead of failing to resolve."""
    proc = _annex_run(setup, _env(None), "--select", "key:cluster_inventory+")
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stdout + stderr
    assert "left out of this per-cluster run" in stderr and "fleet_report" in stderr
    assert "succeeded" in stdout
    assert "Warning" not in stderr  # no Dagster beta/preview warnings for the CLI's user


def test_write_settings_round_trips(tmp_path: Path) -> None:
    (tmp_path / "in.toml").write_text(
        "[kubernetes]\npage_size = 42\n[kubernetes.balloons]\npriority_below = -5\n"
        '[topology.profiles."my rack"]\nlevels = ["rack", ["row", "aisle"]]\n'
        '[models]\ndir = "registry"\n[compute]\npue = 1.1\n',
        encoding="utf-8",
    )
    settings = load_settings(tmp_path / "in.toml", env={})
    target = ClusterSettings(name="c-1", kubeconfig=Path("kc"), context='ctx "q"')
    path = write_settings(settings, [target], tmp_path / "out.toml")
    again = load_settings(path, env={})
    assert again.kubernetes == settings.kubernetes
    assert again.topology_profiles == settings.topology_profiles
    assert again.warehouse.path == settings.warehouse.path.absolute()
    assert again.models.dir == settings.models.dir.absolute()
    assert again.compute == settings.compute and again.compute.pue == 1.1
    assert again.clusters == (
        ClusterSettings(name="c-1", kubeconfig=Path("kc").absolute(), context='ctx "q"'),
    )

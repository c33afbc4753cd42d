"""`annex demo` run the way its user runs it, into a folder of the test's: the warehouse, its
published copy and the rendered documents land there, never in the checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

NODES = 40


def clean_env() -> dict[str, str]:
    """The environment without annex settings or a Dagster home: runs use throwaway instances
    (``make test`` exports ``DAGSTER_HOME``, whose run history tests must not fill)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("ANNEX_", "DAGSTER_HOME"))}


def run_demo(folder: Path) -> None:
    """``annex demo --nodes 40`` in ``folder`` (warehouse ``folder/annex.duckdb``, published
    copy beside it, documents under ``folder/d``); fails the test on a non-zero exit."""
    env = {**clean_env(), "ANNEX_WAREHOUSE": str(folder / "annex.duckdb")}
    demo = subprocess.run(
        [sys.executable, "-m", "annex", "demo", "--nodes", str(NODES), "--out", str(folder / "d")],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert demo.returncode == 0, demo.stderr

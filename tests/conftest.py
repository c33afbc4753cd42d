"""Fixtures shared by more than one kind of test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.demo import run_demo


@pytest.fixture(scope="session")
def demo_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder where ``annex demo`` ran once (``annex.duckdb``, ``annex.published.duckdb``):
    built once per session for every test that reads the demo's warehouse (about 3 minutes).
    A test may run the demo again on it (tests/e2e/test_demo_evidence.py does, to show a rerun
    counts nothing twice); the tests that read it check invariants, not one run's figures."""
    folder = tmp_path_factory.mktemp("demo")
    run_demo(folder)
    return folder

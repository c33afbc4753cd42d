"""Fixtures shared by every test folder (shared helper code is in tests/helpers/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from annex.settings import WarehouseSettings
from tests.helpers.demo import run_demo
from warehouse import Warehouse


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    """A fresh, empty warehouse for one test (migrated by its first collection or ``migrate``);
    a test that holds the lock too long fails after 5 s instead of waiting."""
    return Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5))


@pytest.fixture(scope="session")
def demo_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder where ``annex demo`` ran once (``annex.duckdb``, ``annex.published.duckdb``):
    built once per session for every test that reads the demo's warehouse (about 3 minutes).
    A test may run the demo again on it (tests/e2e/test_demo_evidence.py does, to show a rerun
    counts nothing twice); the tests that read it check invariants, not one run's figures."""
    folder = tmp_path_factory.mktemp("demo")
    run_demo(folder)
    return folder

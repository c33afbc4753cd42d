"""Fixtures shared by every test folder (shared helper code is in tests/helpers/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from annex.settings import WarehouseSettings
from warehouse import Warehouse


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    """A fresh, empty warehouse for one test (migrated by its first collection or ``migrate``);
    a test that holds the lock too long fails after 5 s instead of waiting."""
    return Warehouse(WarehouseSettings(path=tmp_path / "w.duckdb", lock_timeout_seconds=5))

"""The marts tables' refresh statements as named files: one statement each, placeholders checked."""

from __future__ import annotations

import duckdb
import pytest

from warehouse.models import sql_files
from warehouse.models.utilisation import IDLE_BUSY_THRESHOLD


def test_every_file_holds_one_statement_named_by_its_verb() -> None:
    files = sorted(sql_files.SQL_DIR.glob("*.sql"))
    assert files
    con = duckdb.connect()
    for path in files:
        verb = path.stem.split("_")[0]
        # create: a temporary macro the statements share (create_exact_sum.sql)
        assert verb in ("insert", "delete", "update", "create"), path.name
        text = path.read_text(encoding="utf-8")
        fillers = {
            "idle_busy_threshold": "0.5",
            "telemetry_in_chunk": "SELECT 1",
            "pod_category": "NULL",
            "table": "t",
        }
        for key, value in fillers.items():
            text = text.replace("{" + key + "}", value)
        assert len(con.extract_statements(text)) == 1, path.name


def test_the_idle_threshold_is_the_constant_not_a_copy() -> None:
    text = sql_files.statement("insert_gpu_daily", idle_busy_threshold=IDLE_BUSY_THRESHOLD)
    assert f"g.busy < {IDLE_BUSY_THRESHOLD}" in text
    raw = (sql_files.SQL_DIR / "insert_gpu_daily.sql").read_text(encoding="utf-8")
    assert "0.05" not in raw


def test_a_value_without_its_placeholder_is_refused() -> None:
    with pytest.raises(ValueError, match="no placeholder"):
        sql_files.statement("delete_gpu_daily", idle_busy_threshold=0.05)

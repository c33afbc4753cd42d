"""``annex warehouse compact [--dry-run]``: what would move, then moving it, then nothing; and
``annex sql`` reads the compacted rows through ``archive.<table>`` from the published copy."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from annex.cli import main
from tests.helpers.export_scenario import DAY_ONE, collect_day, new_warehouse
from warehouse.models.utilisation import refresh_gpu_hourly

QUERY = (
    "SELECT CAST(ts AS DATE) AS day, count(*) AS samples FROM archive.gpu_telemetry_samples "
    "GROUP BY ALL ORDER BY ALL"
)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    settings, wh = new_warehouse(tmp_path)
    for day in (0, 2):  # the first day lies wholly before the third's cut-off less a day
        collect_day(settings, wh, tmp_path, DAY_ONE + timedelta(days=day), seed=day + 1)
    with wh.writer() as con:
        refresh_gpu_hourly(con)
    wh.publish()
    path = tmp_path / "annex.toml"
    path.write_text(
        f'[warehouse]\npath = "{wh.path}"\n[retention]\ntelemetry_days = 1\n'
        f'kubernetes_days = 1\ndir = "{tmp_path / "cold"}"\n',
        encoding="utf-8",
    )
    return path


def sql(config: Path, capsys: pytest.CaptureFixture[str]) -> list[dict]:
    capsys.readouterr()
    assert main(["--config", str(config), "sql", "--format", "json", "-c", QUERY]) == 0
    return json.loads(capsys.readouterr().out)


def test_dry_run_then_compact_then_nothing(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sql(config, capsys)
    assert [row["day"] for row in before] == [
        str(DAY_ONE.date()),
        str((DAY_ONE + timedelta(days=2)).date()),
    ]

    assert main(["--config", str(config), "warehouse", "compact", "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert "core.gpu_telemetry_samples" in dry and "raw.kubernetes_pods" in dry
    assert "would move" in dry and str(DAY_ONE.date()) in dry
    assert not (tmp_path / "cold").exists()

    assert main(["--config", str(config), "warehouse", "compact"]) == 0
    moved = capsys.readouterr().out
    assert "moved" in moved and str(tmp_path / "cold") in moved
    assert list((tmp_path / "cold" / "core" / "gpu_telemetry_samples").rglob("*.parquet"))

    # the analysts' copy reads the same rows, live and compacted
    assert sql(config, capsys) == before

    assert main(["--config", str(config), "warehouse", "compact"]) == 0
    assert "nothing past its retention" in capsys.readouterr().out

"""`annex demo --history-days D --history-step-hours H`: how much of the simulated cluster's past
the demo collects, and how often (a scheduled annex's interval), with a clear error for a step
that is not a positive number of hours."""

from __future__ import annotations

from pathlib import Path

import pytest

from annex.cli import build_parser
from annex.cli.demo import HISTORY_REPLAY_DAYS, HISTORY_STEP_HOURS, cmd_demo
from annex.errors import ConfigError
from annex.settings import Settings, WarehouseSettings


def test_the_defaults_are_a_month_every_two_days() -> None:
    args = build_parser().parse_args(["demo"])
    assert (args.history_days, args.history_step_hours) == (HISTORY_REPLAY_DAYS, 48)
    assert HISTORY_STEP_HOURS == 48


def test_an_hourly_past_is_one_option_away() -> None:
    args = build_parser().parse_args(["demo", "--history-days", "3", "--history-step-hours", "1"])
    assert (args.history_days, args.history_step_hours) == (3, 1.0)


@pytest.mark.parametrize("step", ["0", "-6", "nan", "inf", "0.001"])
def test_a_step_that_is_not_a_minute_or_more_is_refused_before_anything_is_built(
    tmp_path: Path, step: str
) -> None:
    out = tmp_path / "demo"
    args = build_parser().parse_args(["demo", "--history-step-hours", step, "--out", str(out)])
    settings = Settings(warehouse=WarehouseSettings(path=tmp_path / "annex.duckdb"))
    with pytest.raises(ConfigError) as error:
        cmd_demo(args, settings)
    assert "--history-step-hours" in error.value.message
    assert "e.g. 1 (hourly)" in (error.value.hint or "")
    assert not out.exists()

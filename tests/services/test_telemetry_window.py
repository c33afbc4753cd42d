"""The telemetry window: up to now by default, up to ``telemetry.window_end`` when set (a
backfill, or the demo reading its world's present again), always ending on the step."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from annex.errors import ConfigError
from annex.settings import Settings, load_settings
from services.gpu_evidence import telemetry_window


def _settings(tmp_path: Path, telemetry: str) -> Settings:
    config = tmp_path / "annex.toml"
    config.write_text(f"[telemetry]\n{telemetry}\n", encoding="utf-8")
    return load_settings(config, env={})


def test_a_fixed_window_end_is_read_rounded_down_to_the_step(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "step_seconds = 60\nwindow_end = 2026-11-28T15:00:59Z")
    assert settings.telemetry.window_end == datetime(2026, 11, 28, 15, 0, 59)
    start, end = telemetry_window(settings)
    assert end == datetime(2026, 11, 28, 15, 0, tzinfo=UTC)
    assert start == end - timedelta(seconds=settings.telemetry.window_seconds)
    # the same settings read the same window however much later they are used
    assert telemetry_window(settings) == (start, end)


def test_without_a_window_end_the_window_ends_at_now_on_the_step(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "step_seconds = 60")
    assert settings.telemetry.window_end is None
    before = datetime.now(UTC)
    _, end = telemetry_window(settings)
    assert end.second == 0 and before - timedelta(minutes=1) <= end <= datetime.now(UTC)


def test_an_explicit_end_wins_over_the_settings(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "window_end = 2026-11-28T15:00:00Z")
    explicit = datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
    assert telemetry_window(replace(settings), end=explicit)[1] == explicit


def test_a_window_end_without_an_offset_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="window_end"):
        _settings(tmp_path, "window_end = 2026-11-28T15:00:00")

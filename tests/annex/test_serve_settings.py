"""``[serve]``'s admission and framing limits (issue 35): defaults, overrides, bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from annex.errors import ConfigError
from annex.settings import ServeSettings, load_settings


def test_defaults() -> None:
    serve = load_settings(env={}).serve
    assert serve == ServeSettings()
    assert (serve.max_connections, serve.max_pending_connections) == (512, 256)
    assert (serve.max_pending_per_client, serve.head_timeout_seconds) == (32, 10.0)
    assert (serve.max_header_bytes, serve.max_header_fields) == (32 << 10, 100)
    assert serve.body_timeout_seconds == 300.0


def test_overrides(tmp_path: Path) -> None:
    path = tmp_path / "annex.toml"
    path.write_text(
        "[serve]\nmax_connections = 64\nmax_pending_connections = 128\n"
        "max_pending_per_client = 4\nhead_timeout_seconds = 2.5\nmax_header_bytes = 8192\n"
        "max_header_fields = 50\nbody_timeout_seconds = 60\n"
    )
    serve = load_settings(path, env={}).serve
    assert (serve.max_connections, serve.max_pending_connections) == (64, 128)
    assert (serve.max_pending_per_client, serve.head_timeout_seconds) == (4, 2.5)
    assert (serve.max_header_bytes, serve.max_header_fields) == (8192, 50)
    assert serve.body_timeout_seconds == 60.0


@pytest.mark.parametrize(
    "line",
    ["max_header_bytes = 100", "head_timeout_seconds = 0", "max_pending_per_client = 0"],
)
def test_out_of_bounds_values_are_refused(tmp_path: Path, line: str) -> None:
    path = tmp_path / "annex.toml"
    path.write_text(f"[serve]\n{line}\n")
    with pytest.raises(ConfigError, match=line.split()[0]):
        load_settings(path, env={})

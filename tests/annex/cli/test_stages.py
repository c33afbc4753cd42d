"""The demo's progress: a numbered line per stage on stderr, a heartbeat in long ones."""

from __future__ import annotations

import io
import time

from annex.cli.stages import Stages


def test_each_stage_is_numbered_and_says_when_it_is_done() -> None:
    out = io.StringIO()
    stages = Stages(2, file=out, tick=60)
    with stages.stage("building the world"):
        pass
    with stages.stage("running a job"):
        pass
    lines = out.getvalue().splitlines()
    assert lines[0] == "[1/2] building the world…"
    assert lines[1].strip().startswith("done in ")
    assert lines[2] == "[2/2] running a job…"


def test_a_long_stage_says_it_is_still_running() -> None:
    out = io.StringIO()
    with Stages(1, file=out, tick=0.05).stage("running a job"):
        time.sleep(0.3)
    assert "… still running a job (" in out.getvalue()


def test_quiet_prints_nothing() -> None:
    out = io.StringIO()
    with Stages(1, file=out, quiet=True, tick=0.01).stage("running a job"):
        time.sleep(0.05)
    assert out.getvalue() == ""

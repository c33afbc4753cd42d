"""Progress through a command's long stages, on stderr: "[3/8] running gpu_telemetry_job…".

``annex demo`` spends minutes in a few long steps (building the world, each Dagster run,
rendering the reports). Each stage prints a numbered line when it starts and, while it runs,
a line every ``tick`` seconds saying how long it has taken so far, so a silent terminal never
looks hung; its end says how long it took. Everything goes to stderr (stdout keeps the results
other tools read) and ``quiet`` prints nothing.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

TICK_SECONDS = 15.0
"""How often a running stage says it is still running."""


class Stages:
    """``total`` numbered stages; ``with stages.stage("building…"):`` around each."""

    def __init__(
        self,
        total: int,
        *,
        quiet: bool = False,
        file: TextIO | None = None,
        tick: float = TICK_SECONDS,
    ) -> None:
        self.total = total
        self.quiet = quiet
        self.file = file if file is not None else sys.stderr
        self.tick = tick
        self.done = 0

    @contextmanager
    def stage(self, what: str) -> Iterator[None]:
        self.done += 1
        number = f"[{self.done}/{self.total}]"
        if self.quiet:
            yield
            return
        self._say(f"{number} {what}…")
        started = time.monotonic()
        stop = threading.Event()

        def heartbeat() -> None:
            while not stop.wait(self.tick):
                self._say(f"{' ' * len(number)} … still {what} ({_seconds(started)})")

        ticker = threading.Thread(target=heartbeat, name="annex-stage", daemon=True)
        ticker.start()
        try:
            yield
        finally:
            stop.set()
            ticker.join()
        self._say(f"{' ' * len(number)} done in {_seconds(started)}")

    def _say(self, line: str) -> None:
        print(line, file=self.file, flush=True)


def _seconds(started: float) -> str:
    elapsed = time.monotonic() - started
    if elapsed < 60:
        return f"{elapsed:.1f} s"
    minutes, seconds = divmod(int(elapsed), 60)
    return f"{minutes} min {seconds:02d} s"

"""``annex serve`` as a child process, for the tests of the real command: started on a free
port as an operator starts it, stopped with SIGTERM as a service manager stops it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass
class ServeProcess:
    """The running command: its process, the URL its first line announced, and (once stopped)
    what it wrote to stderr (the access log and the stop message)."""

    process: subprocess.Popen[str]
    url: str
    stderr: str = ""


@contextmanager
def annex_serve(config: Path, env: Mapping[str, str]) -> Iterator[ServeProcess]:
    """Run ``annex --config CONFIG serve --port 0`` with ``env`` added to this environment.
    Leaving the block normally sends SIGTERM and waits for the exit (``stderr`` filled in, the
    exit code in ``process.returncode``); the process is killed whatever happens."""
    process = subprocess.Popen(
        [sys.executable, "-m", "annex", "--config", str(config), "serve", "--port", "0"],
        cwd=REPO,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("annex intake serving "), first
        served = ServeProcess(process, first.split()[-1])
        yield served
        process.send_signal(signal.SIGTERM)
        _, served.stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

"""Worker pools die with their parent: no orphan after the parent is killed with SIGKILL.

A parent process (a small script run with this interpreter) starts a pool the way annex does,
prints the pids of its workers and of multiprocessing's resource tracker, and waits; the test
kills it with SIGKILL and polls /proc until every one of them is gone (or a zombie waiting for
its reaper, which is dead too), within ``BOUND_SECONDS``. Linux only (/proc, prctl).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux /proc")

ROOT = Path(__file__).resolve().parents[2]
BOUND_SECONDS = 10.0

PRELUDE = """
import json, os, sys, threading, time
from multiprocessing import resource_tracker

def report(workers):
    tracker = resource_tracker._resource_tracker._pid
    print(json.dumps({"workers": sorted(workers), "tracker": tracker}), flush=True)
    time.sleep(120)
"""

KUBERNETES_BUILDER = """
from collectors.kubernetes.builder import PageBuilder
from collectors.kubernetes.decode import DecodeContext

# Created and first used from a thread that then ends: the kernel's parent-death signal fires
# when that thread exits, and the worker must survive it (its parent process lives on).
made = {}
def start():
    made["builder"] = builder = PageBuilder(DecodeContext())
    made["first"] = builder._executor.submit(os.getpid).result(timeout=60)
thread = threading.Thread(target=start)
thread.start()
thread.join()
time.sleep(1.5)
builder = made["builder"]
again = builder._executor.submit(os.getpid).result(timeout=10)
assert again == made["first"], "the decode worker died with the thread that started it"
report([again])
"""

LINEAGE_INTAKE = """
from pathlib import Path
from annex.settings import LineageSettings
from collectors.lineage.intake import LineageIntake

intake = LineageIntake(LineageSettings(spool_dir=Path(sys.argv[1])), workers=2)
intake.wait_ready()
report(list(intake._pool._processes))
"""


def alive(pid: int) -> bool:
    """Running (a zombie is dead: it only waits for its reaper)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def kill_parent_and_watch(body: str, *args: str) -> tuple[dict, float]:
    script = textwrap.dedent(PRELUDE) + textwrap.dedent(body)
    parent = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        line = parent.stdout.readline()
        assert line, f"the parent script failed (exit {parent.wait(timeout=30)})"
        pids = json.loads(line)
        watched = [*pids["workers"], pids["tracker"]]
        assert all(alive(pid) for pid in watched), pids
        killed_at = time.monotonic()
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        while any(alive(pid) for pid in watched):
            if time.monotonic() - killed_at > BOUND_SECONDS:
                left = [pid for pid in watched if alive(pid)]
                for pid in left:  # leave nothing behind ourselves
                    os.kill(pid, signal.SIGKILL)
                pytest.fail(f"still running {BOUND_SECONDS:g} s after the parent's kill: {left}")
            time.sleep(0.05)
        return pids, time.monotonic() - killed_at
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_kubernetes_decode_worker_and_resource_tracker_end_with_a_killed_collector():
    pids, seconds = kill_parent_and_watch(KUBERNETES_BUILDER)
    assert len(pids["workers"]) == 1 and pids["tracker"]
    assert seconds < BOUND_SECONDS


def test_lineage_validator_pool_and_resource_tracker_end_with_a_killed_intake(tmp_path):
    pids, seconds = kill_parent_and_watch(LINEAGE_INTAKE, str(tmp_path / "spool"))
    assert len(pids["workers"]) == 2 and pids["tracker"]
    assert seconds < BOUND_SECONDS

"""Worker processes that end with the process that started them, even after ``kill -9``.

A ``ProcessPoolExecutor`` worker waits on its call queue for the next task. When its parent ends
normally the pool shuts it down; when the parent is killed (SIGKILL, the OOM killer, a pod's
container runtime) nothing tells it, and depending on the pool's state it can wait forever: an
orphan holding memory and, for the collector's decode worker, a page of cluster data. So each
worker calls ``die_with_parent()`` first thing in its initializer:

* on Linux, ``prctl(PR_SET_PDEATHSIG)`` asks the kernel for a signal when the parent goes.
  The kernel sends it when the parent *thread* that started the worker exits, not the process:
  a pool used from several threads spawns workers from whichever thread submits, and that
  thread may end while the process (and the pool) live on. So the signal is ``SIGUSR1`` with a
  handler that exits only when the parent process is really gone (the worker was re-parented:
  ``getppid()`` no longer answers the parent's pid), and is otherwise ignored;
* everywhere, a daemon thread checks ``getppid()`` every ``POLL_SECONDS`` (the fallback where
  there is no ``prctl``, and a second line if the signal is lost).

The parent's pid comes from ``multiprocessing.parent_process()`` (what ``spawn`` told the child),
not from ``getppid()`` at start, which is already wrong if the parent died first.

multiprocessing's resource tracker (a process the parent starts for a spawn pool's semaphores)
needs nothing: it exits when the last holder of its pipe (the parent and every worker) is gone;
``tests/integration/test_worker_orphans.py`` checks that it does.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading

PR_SET_PDEATHSIG = 1
"""From <linux/prctl.h>."""
POLL_SECONDS = 0.5
"""How often the watchdog thread looks at the parent: a worker outlives it by at most this."""


def die_with_parent(parent_pid: int | None = None) -> None:
    """Make this worker process exit when ``parent_pid`` (default: the process that spawned it)
    is gone. Call it first in a pool's initializer."""
    if parent_pid is None:
        parent = multiprocessing.parent_process()
        parent_pid = parent.pid if parent is not None and parent.pid else os.getppid()
    if os.getppid() != parent_pid:  # it died before we got here
        os._exit(1)

    def gone(*_: object) -> None:
        if os.getppid() != parent_pid:
            os._exit(1)

    if sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread():
        try:
            signal.signal(signal.SIGUSR1, gone)
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGUSR1), 0, 0, 0)
        except (OSError, AttributeError, ValueError):
            pass  # the watchdog below still holds
        gone()  # the parent may have died between the check above and prctl

    def watch() -> None:
        stopped = threading.Event()
        while not stopped.wait(POLL_SECONDS):
            gone()

    threading.Thread(target=watch, name="annex-parent-watchdog", daemon=True).start()

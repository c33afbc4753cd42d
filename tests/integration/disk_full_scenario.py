"""Runs collections on a disk that fills up, for ``test_warehouse_disk_full.py``.

Run as a script (``python disk_full_scenario.py SPEC.json``), in one process from the first step
to the last, so that a small file system mounted only for it (a tmpfs in a private mount
namespace) lives as long as the scenario. Each step is one "run" of annex as a scheduler would
start it: ``load_collection`` of the test ``things`` model, its failure reported through the
CLI's own ``report_failure`` (exit code and the text people read); or a change of the disk:

* ``{"fill": HEADROOM}``: the disk gets full but for about ``HEADROOM`` bytes (the published
  copy is always on it; the live file where the test puts it),
* ``{"free": true}``: the operator frees the space again.

How the disk fills depends on ``mode``: ``tmpfs``, a real small file system, filled with a
filler file (truncated by ``HEADROOM`` to leave that much); ``rlimit``, where no file system can
be mounted (an unprivileged CI container), the process's file-size limit (``RLIMIT_FSIZE``,
``SIGXFSZ`` ignored: writes past it fail with ``EFBIG``, "File too large"), set to the live
file's size plus ``HEADROOM`` while loading, and to 64 KiB while the published copy is written,
which is what a full disk does to each of them.

After each step it records what the test asserts: exit code, what was printed, row counts of
the live warehouse, and the published copy's bytes and rows.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import resource
import signal
import sys
from pathlib import Path

import duckdb

from annex.cli import report_failure
from annex.settings import WarehouseSettings
from tests.helpers.warehouse_things import THINGS_MODEL, things_batches
from warehouse import Warehouse, connection, load_collection
from warehouse.publish import stale_marker_path


class Disk:
    """The small disk, full or not."""

    def __init__(self, mode: str, folder: Path, live: Path) -> None:
        self.mode = mode
        self.folder = folder
        self.live = live
        self.live_on_disk = live.parent == folder
        self.filler = folder / "filler"
        self.full = False
        self.headroom = 0
        if mode == "rlimit":
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            real_copy = connection.copy_atomically

            def copy_on_full_disk(live: Path, published: Path) -> Path:
                with self._limit(64 * 1024):
                    return real_copy(live, published)

            connection.copy_atomically = copy_on_full_disk

    def fill(self, headroom: int) -> None:
        self.full, self.headroom = True, headroom
        if self.mode != "tmpfs":
            return
        chunk = b"\0" * (1 << 16)
        with open(self.filler, "wb", buffering=0) as out:
            try:
                while True:
                    out.write(chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
            size = out.seek(0, os.SEEK_END)
            out.truncate(max(0, size - headroom))

    def free(self) -> None:
        self.full = False
        self.filler.unlink(missing_ok=True)

    @contextlib.contextmanager
    def writing_live(self):
        """While a collection loads: under ``rlimit``, the live file may grow by ``headroom``."""
        if self.mode == "rlimit" and self.full and self.live_on_disk:
            size = self.live.stat().st_size if self.live.exists() else 0
            with self._limit(size + self.headroom):
                yield
        else:
            yield

    @contextlib.contextmanager
    def _limit(self, size: int):
        if not self.full:
            yield
            return
        _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
        try:
            yield
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))


def _live_counts(live: Path) -> dict[str, object]:
    with duckdb.connect(str(live), read_only=True) as con:
        return {
            "things": con.execute("SELECT count(*) FROM core.things").fetchone()[0],
            "distinct_keys": con.execute(
                "SELECT count(DISTINCT thing_key) FROM core.things"
            ).fetchone()[0],
            "statuses": [
                row[0]
                for row in con.execute(
                    "SELECT status FROM audit.collections ORDER BY started_at"
                ).fetchall()
            ],
        }


def _published(path: Path) -> dict[str, object]:
    if not path.exists():
        return {"sha256": None, "things": None}
    with duckdb.connect(str(path), read_only=True) as con:
        things = con.execute("SELECT count(*) FROM core.things").fetchone()[0]
    return {"sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "things": things}


def run(spec: dict) -> list[dict]:
    live, published = Path(spec["live"]), Path(spec["published"])
    wh = Warehouse(
        WarehouseSettings(path=live, published_path=published, lock_timeout_seconds=5),
        migrations_dir=Path(spec["migrations"]),
    )
    disk = Disk(spec["mode"], Path(spec["disk"]), live)
    results = []
    for step in spec["steps"]:
        if "fill" in step:
            disk.fill(step["fill"])
            continue
        if "free" in step:
            disk.free()
            continue
        said: list[str] = []
        printed = io.StringIO()
        with contextlib.redirect_stderr(printed):
            try:
                with disk.writing_live():
                    load_collection(
                        wh,
                        THINGS_MODEL,
                        cluster=step["cluster"],
                        batches=things_batches(step["batches"], step["rows"]),
                        on_wait=said.append,
                    )
                code = 0
            except Exception as exc:
                code = report_failure(exc)
        results.append(
            {
                "exit_code": code,
                "stderr": printed.getvalue(),
                "said": said,
                "live": _live_counts(live),
                "published": _published(published),
                "published_folder": sorted(
                    p.name for p in published.parent.iterdir() if p.name != "filler"
                ),
                "stale_marker": stale_marker_path(live).exists(),
            }
        )
    return results


if __name__ == "__main__":
    spec = json.loads(Path(sys.argv[1]).read_text())
    Path(spec["results"]).write_text(json.dumps(run(spec), indent=1))

"""A full disk, for real: collections loaded on a small file system that fills up.

What must hold (issue 35): a full disk exits 5 (``WarehouseError``) and says what it hit, how
much room is needed where, and whether the collection was loaded; the warehouse loses nothing
and keeps nothing half-loaded; the analysts' copy is the previous one or absent, never half
written; the next run says the copy is stale and why, and a run with room repairs it; a rerun
of a collection that was not loaded loads it once.

The disk: a tmpfs of a few MiB mounted in a private mount namespace (``unshare --mount``, as a
mapped root where user namespaces are allowed, else as root), so nothing outside the test sees
it and it vanishes with the scenario. Where neither is permitted (an unprivileged container), the
same scenarios run with ``RLIMIT_FSIZE`` as the full disk (``EFBIG``); the test says so with a
warning instead of skipping. ``mode="rlimit"`` runs that stand-in everywhere, so CI's path is
tested here too. Fault injection at the OS-call boundary is in the warehouse's own tests
(``tests/warehouse/test_publish.py``, ``test_load.py``).
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tests.helpers.warehouse_things import make_migrations_dir

pytestmark = pytest.mark.slow

SCENARIO = Path(__file__).with_name("disk_full_scenario.py")
DISK_SIZE = "24m"
"""The tmpfs: room for the test warehouse (about 1.5 MiB) and its copy, not for much more."""

_MOUNT_THEN_RUN = 'mount -t tmpfs -o size="$1" tmpfs "$2" && shift 2 && exec "$@"'


@functools.cache
def _namespace_prefix(probe_dir: str) -> tuple[str, ...] | None:
    """The ``unshare`` command line that may mount a tmpfs here, or None where none may."""
    if shutil.which("unshare") is None:
        return None
    for prefix in (("unshare", "--mount", "--map-root-user"), ("unshare", "--mount")):
        try:
            probe = subprocess.run(
                [*prefix, "sh", "-c", _MOUNT_THEN_RUN, "sh", "1m", probe_dir, "true"],
                capture_output=True,
                timeout=20,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return prefix
    return None


def _run_scenario(
    tmp_path: Path, mode: str, steps: list[dict], *, live_on_disk: bool
) -> tuple[str, list[dict]]:
    """Run ``steps`` on a disk of ``mode``; return the mode that ran (``tmpfs`` falls back to
    ``rlimit`` where no tmpfs can be mounted) and each run's results."""
    disk = tmp_path / "disk"
    disk.mkdir()
    command = [sys.executable, str(SCENARIO)]
    if mode == "tmpfs":
        probe = tmp_path / "probe"
        probe.mkdir()
        prefix = _namespace_prefix(str(probe))
        if prefix is None:
            warnings.warn(
                "no tmpfs can be mounted here (no unshare, or no permission): the full disk is "
                "RLIMIT_FSIZE instead",
                stacklevel=2,
            )
            mode = "rlimit"
        else:
            command = [*prefix, "sh", "-c", _MOUNT_THEN_RUN, "sh", DISK_SIZE, str(disk), *command]
    live_folder = disk if live_on_disk else tmp_path / "live"
    spec = {
        "mode": mode,
        "disk": str(disk),
        "live": str(live_folder / "annex.duckdb"),
        "published": str(disk / "annex.published.duckdb"),
        "migrations": str(make_migrations_dir(tmp_path / "migrations")),
        "results": str(tmp_path / "results.json"),
        "steps": steps,
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run(
        [*command, str(tmp_path / "spec.json")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return mode, json.loads((tmp_path / "results.json").read_text())


def _run(cluster: str, batches: int, rows: int = 100) -> dict:
    return {"cluster": cluster, "batches": batches, "rows": rows}


@pytest.mark.parametrize("mode", ["tmpfs", "rlimit"])
def test_publish_on_a_full_disk_this_run_and_the_next(tmp_path: Path, mode: str) -> None:
    """The published copy's disk is full: the collection is loaded, the copy stays the old one,
    this run and the next say so (exit 5), and the first run with room repairs it."""
    _, (first, full, still_full, repaired) = _run_scenario(
        tmp_path,
        mode,
        [
            _run("c1", 1),
            {"fill": 0},
            _run("c2", 2),
            _run("c3", 3),
            {"free": True},
            _run("c4", 4),
        ],
        live_on_disk=False,
    )
    assert first["exit_code"] == 0 and first["published"]["things"] == 100

    # This run: loaded, not published; exit 5; the copy is the previous one, byte for byte.
    assert full["exit_code"] == 5, full["stderr"]
    text = full["stderr"]
    assert "was loaded, but publishing the analysts' copy failed" in text
    assert "no room for the new copy" in text
    assert "needs at least" in text and str(tmp_path / "disk") in text
    assert "the evidence is safe in the live warehouse" in text
    assert full["live"]["things"] == 200 and full["live"]["statuses"][-1] == "succeeded"
    assert full["published"] == first["published"]
    assert full["published_folder"] == ["annex.published.duckdb"]  # no half-written temp copy
    assert full["stale_marker"]

    # The next run, disk still full: says the copy is stale and why, loads, fails to publish.
    assert still_full["exit_code"] == 5
    assert any("is stale since" in said and "no room" in said for said in still_full["said"])
    assert "the copy has been stale since" in still_full["stderr"]
    assert still_full["live"]["things"] == 300
    assert still_full["published"] == first["published"]
    assert still_full["published_folder"] == ["annex.published.duckdb"]

    # The first run with room: says it was stale, publishes, and the copy has everything.
    assert repaired["exit_code"] == 0, repaired["stderr"]
    assert any("is stale since" in said for said in repaired["said"])
    assert any("is up to date again" in said for said in repaired["said"])
    assert repaired["published"]["things"] == repaired["live"]["things"] == 400
    assert repaired["live"]["statuses"] == ["succeeded"] * 4
    assert not repaired["stale_marker"]


@pytest.mark.parametrize("mode", ["tmpfs", "rlimit"])
@pytest.mark.parametrize(
    ("headroom", "batches", "rows"),
    [
        pytest.param(0, 1, 100, id="no-room-to-start"),
        pytest.param(128 * 1024, 2, 20_000, id="full-at-commit"),
        pytest.param(128 * 1024, 4, 100_000, id="full-while-loading"),
    ],
)
def test_load_on_a_full_disk_keeps_nothing_and_a_rerun_loads_it_once(
    tmp_path: Path, mode: str, headroom: int, batches: int, rows: int
) -> None:
    """The live warehouse's disk is full: the collection is not loaded (exit 5, says so), the
    warehouse and the analysts' copy are as before, and reruns with room load it once."""
    disk, (before, full, rerun, again) = _run_scenario(
        tmp_path,
        mode,
        [
            _run("c1", 1),
            {"fill": headroom},
            _run("big", batches, rows),
            {"free": True},
            _run("big", batches, rows),
            _run("big", batches, rows),
        ],
        live_on_disk=True,
    )
    assert before["exit_code"] == 0
    expected = max(100, batches * rows)  # (the big collection holds c1's things too)

    assert full["exit_code"] == 5, full["stderr"]
    text = full["stderr"]
    assert "no space left on device" in text.lower() or "file too large" in text.lower(), text
    assert str(tmp_path / "disk") in text
    assert full["published"] == before["published"]
    if disk == "tmpfs":
        # A real full disk stops the collection before or at its COMMIT.
        assert "was NOT loaded" in text, text
    # Whatever it says is what the warehouse holds.
    if "was NOT loaded" in text:
        assert "holds what it held before" in text
        assert full["live"]["things"] == before["live"]["things"] == 100
        assert "succeeded" not in full["live"]["statuses"][1:]
        loaded_while_full = 0
    else:
        # RLIMIT_FSIZE lets the write-ahead log grow but not the file: the COMMIT lands and
        # the checkpoint after it fails.
        assert "was loaded (committed), but the checkpoint after it failed" in text, text
        assert "safe in the write-ahead log" in text
        assert full["live"]["things"] == expected
        assert full["live"]["statuses"][-1] == "succeeded"
        loaded_while_full = 1

    assert rerun["exit_code"] == 0, rerun["stderr"]
    assert rerun["live"]["things"] == rerun["live"]["distinct_keys"] == expected
    assert rerun["published"]["things"] == expected
    assert not rerun["stale_marker"]
    assert again["exit_code"] == 0
    assert again["live"]["things"] == expected  # idempotent: the same input adds nothing
    assert again["live"]["statuses"].count("succeeded") == 3 + loaded_while_full

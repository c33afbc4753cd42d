"""Spool writes that a killed intake never finished: their hidden temporary files are deleted
when an intake starts, once an hour old, and nothing else in the folder is touched."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from annex.settings import AttestationSettings, LineageSettings
from collectors.attestation.intake import AttestationIntake
from collectors.lineage.intake import LineageIntake
from collectors.spool import ABANDONED_AFTER_SECONDS, remove_abandoned_writes

HOURS_AGO = 2 * 3600


def _age(path: Path, seconds: float) -> Path:
    then = time.time() - seconds
    os.utime(path, (then, then))
    return path


def _killed_write(folder: Path, name: str) -> Path:
    """Run ``write_atomically`` in a process that is SIGKILLed before its rename, as an OOM
    kill would: no ``except`` runs, the temporary file stays. Returns that file."""
    script = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from collectors import spool
        os.replace = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
        spool.write_atomically(Path({str(folder / name)!r}), b"half of a request")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], check=False)
    assert done.returncode == -9
    [left] = [p for p in folder.iterdir() if p.name.startswith(f".{name}.")]
    return left


def test_a_killed_write_is_removed_once_old_and_nothing_else(tmp_path: Path) -> None:
    folder = tmp_path / "incoming"
    folder.mkdir()
    old = _age(_killed_write(folder, "20261122T080000000000Z-abc.arrow"), HOURS_AGO)
    young = _killed_write(folder, "20261122T090000000000Z-def.arrow")
    kept = [
        folder / "20261122T070000000000Z-ghi.arrow",  # a spool file
        folder / ".notes.tmp",  # hidden, but not write_atomically's
        folder / ".x.arrow.12.34.tmp.bak",
    ]
    for path in kept:
        path.write_bytes(b"keep")
        _age(path, HOURS_AGO)
    (folder / ".y.arrow.56.78.tmp").mkdir()  # a folder of that name: not a write
    _age(folder / ".y.arrow.56.78.tmp", HOURS_AGO)

    assert remove_abandoned_writes(folder) == 1
    assert not old.exists()
    assert young.exists()  # another intake may be writing it right now
    assert all(path.exists() for path in kept)
    assert (folder / ".y.arrow.56.78.tmp").is_dir()
    assert remove_abandoned_writes(tmp_path / "missing") == 0


def test_the_age_is_the_callers(tmp_path: Path) -> None:
    left = _age(_killed_write(tmp_path, "a.json"), 120)
    assert remove_abandoned_writes(tmp_path) == 0
    assert left.exists() and ABANDONED_AFTER_SECONDS > 120
    assert remove_abandoned_writes(tmp_path, older_than_seconds=60) == 1
    assert not left.exists()


@pytest.mark.parametrize("intake", ["lineage", "attestation"])
def test_an_intake_that_starts_removes_what_a_killed_one_left(
    tmp_path: Path, intake: str, caplog: pytest.LogCaptureFixture
) -> None:
    spool_dir = tmp_path / intake
    incoming = spool_dir / "incoming"
    incoming.mkdir(parents=True)
    left = _age(_killed_write(incoming, "20261122T080000000000Z-abc.arrow"), HOURS_AGO)
    with caplog.at_level("WARNING", logger="collectors.spool"):
        if intake == "lineage":
            LineageIntake(LineageSettings(spool_dir=spool_dir), workers=0).close()
        else:
            AttestationIntake(AttestationSettings(spool_dir=spool_dir), nonce_key=None)
    assert not left.exists()
    assert "unfinished spool writes" in caplog.text

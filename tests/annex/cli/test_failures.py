"""How the CLI reports a failure: message, notes and hint, and the exit code of its family."""

from __future__ import annotations

import errno

import pytest

from annex.cli import report_failure
from annex.errors import WarehouseSpaceError


def test_a_warehouse_error_prints_its_notes_and_hint_and_exits_5(
    capsys: pytest.CaptureFixture[str],
) -> None:
    error = WarehouseSpaceError("collection c was NOT loaded: disk full", hint="free 1 GiB")
    error.add_note("the ROLLBACK that followed also failed: I/O error")
    assert report_failure(error) == 5
    assert capsys.readouterr().err.splitlines() == [
        "annex: error: collection c was NOT loaded: disk full",
        "  note: the ROLLBACK that followed also failed: I/O error",
        "  hint: free 1 GiB",
    ]


def test_a_full_disk_annex_did_not_expect_is_no_bug_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A full disk met outside the warehouse's handling (a spool, a report file) is exit 5 and
    names the file, not exit 1's "report it"."""
    error = OSError(errno.ENOSPC, "No space left on device", "/var/spool/annex/x.json")
    assert report_failure(error) == 5
    err = capsys.readouterr().err
    assert "a disk is full" in err and "/var/spool/annex/x.json" in err
    assert "report it" not in err


def test_an_unexpected_error_is_still_a_bug_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert report_failure(RuntimeError("boom")) == 1
    assert "report it" in capsys.readouterr().err

"""What ``annex collect attestations`` and ``annex collect lineage`` say about their spool
files: each file left unarchived is a warning that says it is read again, the rest a count."""

from __future__ import annotations

from pathlib import Path

from annex.cli.collect import _archive_report
from collectors.spool import ArchiveOutcome


def test_archive_report_warns_for_each_file_left_and_counts_the_rest(capsys) -> None:
    outcome = ArchiveOutcome(
        archived=1234,
        failed=[(Path("/spool/incoming/a.jsonl"), "permission denied"), (Path("b"), "gone")],
    )

    summary = _archive_report(outcome, Path("/spool"), kept=3)

    assert summary == "1,234 archived to /spool/archive, 3 left in place"
    warnings = capsys.readouterr().err.splitlines()
    assert warnings == [
        "annex: warning: /spool/incoming/a.jsonl was not archived (permission denied); "
        "it is read again next time",
        "annex: warning: b was not archived (gone); it is read again next time",
    ]


def test_archive_report_is_silent_when_everything_was_archived(capsys) -> None:
    assert _archive_report(ArchiveOutcome(archived=0), Path("s"), kept=0) == (
        "0 archived to s/archive, 0 left in place"
    )
    assert capsys.readouterr().err == ""

"""Counted nouns agree with their counts: one helper for every message of the CLI."""

from __future__ import annotations

import pytest

from annex.cli.counts import noun, plural


@pytest.mark.parametrize(
    "count,word,expected",
    [
        (0, "node", "0 nodes"),
        (1, "node", "1 node"),
        (2, "node", "2 nodes"),
        (1250, "GPU", "1,250 GPUs"),
        (1, "check", "1 check"),
        (3, "entry", "3 entries"),
    ],
)
def test_plural(count: int, word: str, expected: str) -> None:
    assert plural(count, word) == expected


def test_an_explicit_plural_form_wins() -> None:
    assert plural(2, "analysis", "analyses") == "2 analyses"
    assert noun(1, "analysis", "analyses") == "analysis"


def test_the_demo_run_lines_agree_with_their_check_counts() -> None:
    from annex.cli.run import describe_run
    from pipelines.execution import CheckOutcome, RunOutcome

    def outcome(*passed: bool) -> RunOutcome:
        checks = tuple(CheckOutcome(f"c{i}", p, "ERROR") for i, p in enumerate(passed))
        return RunOutcome("id", "job", None, True, checks, None)

    assert describe_run(outcome(True)).endswith("succeeded, 1 check passed")
    assert describe_run(outcome(True, True)).endswith("succeeded, all 2 checks passed")
    assert describe_run(outcome(False)).endswith("0 of 1 check passed; failed: c0 (ERROR)")
    assert describe_run(outcome()).endswith("no checks ran")

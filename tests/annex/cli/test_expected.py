"""The demo marks the outcomes its simulated world produces on purpose, and says why."""

from __future__ import annotations

from datetime import UTC, datetime

from annex.cli.expected import NOTE, check_notes, describe_planted
from pipelines.execution import CheckOutcome, RunOutcome


def test_a_planted_check_failure_gets_a_note_and_an_unplanned_one_none() -> None:
    outcome = RunOutcome(
        "id",
        "compute_job",
        None,
        True,
        (
            CheckOutcome("compute_thresholds_clear", False, "ERROR"),
            CheckOutcome("compute_methods_agree", True, "WARN"),
            CheckOutcome("something_new", False, "ERROR"),
        ),
        None,
    )
    notes = check_notes(outcome)
    assert len(notes) == 1
    assert "compute_thresholds_clear" in notes[0] and NOTE in notes[0]
    assert "10^23" in notes[0]


def test_the_planted_findings_of_a_small_world_are_named_with_their_cause() -> None:
    from simulator.world import build_world

    world = build_world(nodes=40, seed=0, now=datetime(2026, 11, 20, tzinfo=UTC))
    text = describe_planted(world)
    assert NOTE in text
    assert "degraded GPU" in text and "marts.gpu_degraded" in text
    assert "failing attestation on purpose" in text

"""Outcomes of ``annex demo`` that are expected in its simulated cluster, and why.

The simulator plants findings on purpose, so that every check, mart and report has something
to show: models sized to cross the Article 51 compute thresholds, GPUs that run slow, hot or
raise XID errors, confidential nodes whose attestations fail in each way annex recognises,
nodes cordoned or NotReady. A newcomer seeing "1 of 2 checks passed" or degraded GPUs in the
demo should learn there and then that this is the simulation, not a fault of annex: each such
outcome is printed with an "expected in the simulated cluster" note naming the cause.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from annex.cli.counts import plural

if TYPE_CHECKING:
    from pipelines.execution import RunOutcome

NOTE = "expected in the simulated cluster"

EXPECTED_CHECK_FAILURES = {
    "compute_thresholds_clear": (
        "its largest simulated models are sized to cross the 10^23 FLOP threshold of "
        "Article 51, so the alert a provider must act on shows"
    ),
}
"""Checks the demo's world fails on purpose -> why. A check failing that is not here is news."""


def check_notes(outcome: RunOutcome) -> list[str]:
    """One note per failed check of ``outcome`` that the simulated world fails on purpose."""
    return [
        f"  {check.name}: {NOTE}: {EXPECTED_CHECK_FAILURES[check.name]}"
        for check in outcome.checks
        if not check.passed and check.name in EXPECTED_CHECK_FAILURES
    ]


def planted_findings(world: object) -> list[str]:
    """What the simulator planted in ``world`` that annex then finds, one line each."""
    from simulator.world.activity import degraded_gpus
    from simulator.world.attestation import attestation_plan

    lines: list[str] = []
    unhealthy = sum(1 for gpu in world.gpus if not gpu.healthy)  # type: ignore[attr-defined]
    if unhealthy:
        lines.append(
            f"{plural(unhealthy, 'GPU')} unavailable: the simulator marks some GPUs unhealthy "
            "(the summary's 'unavailable')"
        )
    degraded = Counter(degraded_gpus(world).values())  # type: ignore[arg-type]
    if degraded:
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(degraded.items()))
        lines.append(
            f"{plural(sum(degraded.values()), 'degraded GPU')} ({kinds}): the simulator slows, "
            "heats or injects XID errors into about 1% of GPUs (marts.gpu_degraded)"
        )
    faults = Counter(
        plan.fault
        for plan in attestation_plan(world).values()  # type: ignore[arg-type]
        if plan.fault
    )
    if faults:
        kinds = ", ".join(sorted(faults))
        lines.append(
            f"{plural(sum(faults.values()), 'confidential node')} failing attestation on "
            f"purpose ({kinds}): one node per failure the verifier recognises "
            "(marts.attestation_coverage_daily)"
        )
    return lines


def describe_planted(world: object) -> str:
    """The block the demo prints after its summary (empty when nothing was planted)."""
    lines = planted_findings(world)
    if not lines:
        return ""
    return f"{NOTE} (planted by the simulator, not faults of annex):\n" + "\n".join(
        f"  - {line}" for line in lines
    )

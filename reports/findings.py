"""Findings: what a report's reader must act on, by severity, each with its remediation.

Kubescape and kube-bench readers expect "summary ordered by priority, then details"
(reference/stack.md §4): a report's rules turn evidence into findings, and the template lists
them high first. A missing source of evidence is a finding too: absence is never compliance.
"""

from __future__ import annotations

from dataclasses import dataclass

SEVERITIES = ("high", "medium", "low", "info")


@dataclass(frozen=True)
class Finding:
    severity: str
    title: str
    evidence: str
    """The figures behind it, with the attachment that holds them."""
    remediation: str

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity {self.severity!r} is not one of {SEVERITIES}")


@dataclass(frozen=True)
class RequiredField:
    """One field a compliance document requires: the part of the document it belongs to (a
    template section, a documentation part), the point requiring it, the value or a gap
    (``None``), where the value comes from (or should), and what to do when it is a gap. A gap
    is shown as one, never left out: absence is never compliance."""

    part: str
    ref: str
    label: str
    value: str | None
    source: str
    remedy: str = ""

    @property
    def gap(self) -> bool:
        return self.value is None


def no_successful_collection(source: dict, consequence: str, remediation: str) -> Finding:
    """The finding for an evidence source with no successful collection in the period (a row
    of ``coverage_sources``): what it means for this report, and what to do."""
    return Finding(
        "high",
        f"No successful {source['source']} collection in the period",
        f"{source['collections']} collections, {source['failed']} failed "
        f"(coverage_sources.csv): {consequence}",
        remediation,
    )


def ordered(findings: list[Finding]) -> list[Finding]:
    """High first; within a severity, in the order the rules found them."""
    return sorted(findings, key=lambda f: SEVERITIES.index(f.severity))


def counts(findings: list[Finding]) -> dict[str, int]:
    return {severity: sum(f.severity == severity for f in findings) for severity in SEVERITIES}

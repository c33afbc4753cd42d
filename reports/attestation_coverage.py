"""Confidential-computing attestation coverage, per period.

How much of the workload GPU-hours ran on nodes whose GPUs and confidential VM were verified
(NVIDIA NRAS plus Azure MAA / Intel Trust Authority, same boot), per training run, node and
GPU, and which attestations failed and why. GPU-hours on nodes the inventory did not know are
"unknown", a gap in the evidence shown as such, never counted as unattested or covered.
"""

from __future__ import annotations

from typing import Any

from reports.charts import PALETTE, Series, stacked_columns
from reports.comparison import HOURS_COVERED, covered_hours, per_hour_change, period_hours
from reports.definition import Evidence, EvidenceQuery, ReportDefinition, Section
from reports.evidence import COVERAGE_SOURCES
from reports.findings import Finding, counts, no_successful_collection, ordered

Row = dict[str, Any]
Rows = list[Row]

SOURCES = ("kubernetes", "attestation")
TOP = 15
VERIFIED_SHARE_MIN = 0.95

_COVERAGE = """
    sum(allocated_gpu_hours) AS allocated_gpu_hours,
    sum(verified_gpu_hours) AS verified_gpu_hours,
    sum(self_reported_gpu_hours) AS self_reported_gpu_hours,
    sum(unattested_gpu_hours) AS unattested_gpu_hours,
    sum(unknown_gpu_hours) AS unknown_gpu_hours,
    sum(verified_gpu_hours)
        / nullif(sum(allocated_gpu_hours) - sum(unknown_gpu_hours), 0) AS verified_share"""

QUERIES = (
    COVERAGE_SOURCES,
    EvidenceQuery(
        "daily",
        "Every day of the period up to the data cut-off: workload GPU-hours by attestation "
        "state (marts.attestation_coverage_daily); empty cells are days without holdings.",
        f"""
        WITH days AS (
            SELECT CAST(d AS DATE) AS day
            FROM range(CAST($start AS TIMESTAMP), CAST($coverage_end AS TIMESTAMP),
                       INTERVAL 1 DAY) t(d)
        ), cov AS (
            SELECT day, sum(nodes) AS nodes, {_COVERAGE}
            FROM marts.attestation_coverage_daily
            WHERE day >= $start AND day < $coverage_end
            GROUP BY day
        )
        SELECT days.day, cov.* EXCLUDE (day)
        FROM days LEFT JOIN cov USING (day)
        ORDER BY days.day
        """,
    ),
    EvidenceQuery(
        "totals",
        "Workload GPU-hours of this period and the previous one by attestation state "
        "(marts.attestation_gpu_hours), with the hours the inventory covered in each "
        "(inventory_hours, from marts.node_gpu_hours), the base of the comparison per hour.",
        f"""
        WITH totals AS (
            SELECT CASE WHEN day >= $start THEN 'current' ELSE 'previous' END AS period,
                   count(DISTINCT node_name) AS nodes, {_COVERAGE}
            FROM marts.attestation_gpu_hours
            WHERE day >= $previous_start AND day < $end
            GROUP BY 1
        ), {HOURS_COVERED}
        SELECT t.*, c.inventory_hours
        FROM totals AS t
        LEFT JOIN hours_covered AS c USING (period)
        ORDER BY t.period
        """,
    ),
    EvidenceQuery(
        "runs",
        "Coverage per training run (OpenLineage run id and its Kubernetes Job), from "
        "marts.attestation_gpu_hours and marts.lineage_run_jobs.",
        f"""
        SELECT g.cluster, g.run_id, any_value(r.model_name) AS model_name,
               any_value(r.stage) AS stage, g.namespace, g.job_name,
               count(DISTINCT g.node_name) AS nodes, {_COVERAGE}
        FROM marts.attestation_gpu_hours g
        LEFT JOIN marts.lineage_run_jobs r ON r.run_id = g.run_id
        WHERE g.day >= $start AND g.day < $end
        GROUP BY g.cluster, g.run_id, g.namespace, g.job_name
        ORDER BY allocated_gpu_hours DESC, g.cluster, g.run_id NULLS LAST, g.namespace,
                 g.job_name NULLS LAST
        """,
    ),
    EvidenceQuery(
        "nodes",
        "Coverage per node over the period with the node's latest GPU (platform) and CVM "
        "verdicts (marts.attestation_gpu_hours, marts.attestation_status).",
        f"""
        WITH hours AS (
            SELECT cluster, node_name, {_COVERAGE}
            FROM marts.attestation_gpu_hours
            WHERE day >= $start AND day < $end
            GROUP BY cluster, node_name
        ), latest AS (
            SELECT cluster, node_name,
                   max(verdict) FILTER (WHERE subject = 'gpu:platform') AS gpu_verdict,
                   max(provider) FILTER (WHERE subject_kind = 'cpu_tee') AS cvm_provider,
                   max(verdict) FILTER (WHERE subject_kind = 'cpu_tee') AS cvm_verdict,
                   max(issued_at) AS last_issued_at
            FROM marts.attestation_status
            WHERE issued_at < $end_ts
            GROUP BY cluster, node_name
        )
        SELECT hours.*, latest.gpu_verdict, latest.cvm_provider, latest.cvm_verdict,
               latest.last_issued_at
        FROM hours LEFT JOIN latest USING (cluster, node_name)
        ORDER BY verified_share NULLS FIRST, allocated_gpu_hours DESC, cluster, node_name
        """,
    ),
    EvidenceQuery(
        "gpus",
        "The latest attestation of each GPU issued before the period's end "
        "(marts.attestation_status, detached GPU tokens).",
        """
        SELECT cluster, node_name, gpu_uuid, provider, verdict, assurance_tier,
               array_to_string(reasons, ' ') AS reasons, issued_at, valid_until,
               node_in_inventory, record_id
        FROM marts.attestation_status
        WHERE subject_kind = 'gpu' AND subject <> 'gpu:platform' AND issued_at < $end_ts
        ORDER BY verdict = 'pass', cluster, node_name, gpu_uuid NULLS LAST, subject
        """,
    ),
    EvidenceQuery(
        "failures",
        "Attestations received in the period that did not pass, per verdict, provider, "
        "subject and reason (marts.attestation_failures).",
        """
        SELECT cluster, verdict, provider, subject_kind, reason, sum(records) AS records,
               max(nodes) AS nodes_max_per_day, min(first_received_at) AS first_received_at,
               max(last_received_at) AS last_received_at
        FROM marts.attestation_failures
        WHERE day >= $start AND day < $end
        GROUP BY cluster, verdict, provider, subject_kind, reason
        ORDER BY records DESC, cluster, verdict, provider, subject_kind, reason
        """,
    ),
)

SECTIONS = (
    Section("coverage", "Coverage and data quality"),
    Section("summary", "Attested GPU-hours against the previous period"),
    Section("findings", "Findings and remediation"),
    Section("runs", "Coverage per training run"),
    Section("nodes", "Coverage per node"),
    Section("gpus", "GPU attestations"),
    Section("failures", "Failures and their reasons"),
)

REASONS = {
    "expired": "the token was older than its issuer's max age: shorten the agent's interval",
    "nonce_mismatch": "the token's nonce was not annex's: check the agent's nonce source",
    "replay": "a token was submitted twice: check the agent is not resending",
    "debug_enabled": "the GPU ran with debug enabled: disable it in the CC mode settings",
    "policy_fail": "a claim failed the appraisal policy: compare it with attestation.policy",
    "device_mismatch": "the GPU's identity did not match the inventory: check the node",
    "self_reported": "only the local verifier attested: route the evidence through NRAS",
}


def build(evidence: Evidence) -> dict[str, Any]:
    """The template's context: coverage by day, per run, node and GPU, failures, findings."""
    sources = evidence.records("coverage_sources")
    daily = evidence.records("daily")
    totals = {row["period"]: row for row in evidence.records("totals")}
    current, previous = totals.get("current"), totals.get("previous")
    runs = evidence.records("runs")
    nodes = evidence.records("nodes")
    gpus = evidence.records("gpus")
    failures = evidence.records("failures")
    findings = _findings(sources, current, runs, nodes, failures)
    states = (
        ("verified_gpu_hours", "verified", PALETTE[5]),
        ("self_reported_gpu_hours", "self-reported", PALETTE[4]),
        ("unattested_gpu_hours", "unattested", PALETTE[3]),
        ("unknown_gpu_hours", "unknown (gap)", PALETTE[2]),
    )
    chart = stacked_columns(
        [row["day"].strftime("%m-%d") for row in daily],
        [
            Series(label, [row[key] if row["allocated_gpu_hours"] else None for row in daily], c)
            for key, label, c in states
        ],
        title="Workload GPU-hours per day by attestation state (hatched: no holdings)",
        unit="GPU-hours",
    )
    failing_gpus = [g for g in gpus if g["verdict"] != "pass"]
    hours = period_hours(evidence)
    covered = covered_hours(current, previous, "inventory_hours")
    comparisons = {
        key: per_hour_change(
            current[key] if current else None,
            previous[key] if previous else None,
            covered,
            hours,
            "inventory",
            within_covered=False,  # holdings count from the pods' start, before a collection
        )
        for key in ("allocated_gpu_hours", *(key for key, _, _ in states))
    }
    return {
        "sources": sources,
        "daily": daily,
        "current": current,
        "previous": previous,
        "comparisons": comparisons,
        "states": [(key, label) for key, label, _ in states],
        "chart": chart,
        "runs": runs[:TOP],
        "runs_total": len(runs),
        "runs_without_id": sum(1 for r in runs if r["run_id"] is None),
        "nodes": nodes[:TOP],
        "nodes_total": len(nodes),
        "gpus": gpus[:TOP],
        "gpus_total": len(gpus),
        "failing_gpus": len(failing_gpus),
        "failures": failures[:TOP],
        "failures_total": len(failures),
        "findings": findings,
        "finding_counts": counts(findings),
        "verified_share_min": VERIFIED_SHARE_MIN,
    }


def _findings(
    sources: Rows, current: Row | None, runs: Rows, nodes: Rows, failures: Rows
) -> list[Finding]:
    out: list[Finding] = []
    for s in sources:
        if not s["succeeded"]:
            out.append(
                no_successful_collection(
                    s,
                    "coverage cannot be judged without it.",
                    "Run `annex collect attestations` (and the inventory) on a schedule; "
                    "check the agents reach `annex serve`.",
                )
            )
    if current is None or not current["allocated_gpu_hours"]:
        out.append(
            Finding(
                "high",
                "No workload GPU-hours in the period",
                "marts.attestation_gpu_hours has no holdings for it (totals.csv)",
                "Collect the inventory for the period and refresh the coverage marts "
                "(`annex collect attestations`).",
            )
        )
    else:
        if current["unknown_gpu_hours"]:
            out.append(
                Finding(
                    "medium",
                    f"{current['unknown_gpu_hours']:,.1f} GPU-hours ran on nodes the "
                    "inventory did not know",
                    "their coverage cannot be judged (totals.csv, nodes.csv)",
                    "Collect the inventory more often so every node is known while it works.",
                )
            )
        share = current["verified_share"]
        if share is not None and share < VERIFIED_SHARE_MIN:
            out.append(
                Finding(
                    "high" if share < 0.5 else "medium",
                    f"Only {share:.1%} of the judged GPU-hours ran on verified nodes",
                    f"{current['unattested_gpu_hours']:,.1f} unattested, "
                    f"{current['self_reported_gpu_hours']:,.1f} self-reported GPU-hours "
                    "(totals.csv)",
                    "Deploy the attestation agent on every confidential GPU node and send "
                    "GPU (NRAS) and CVM (MAA/ITA) evidence for every boot.",
                )
            )
    for r in runs:
        if (
            r["run_id"] is not None
            and r["verified_share"] is not None
            and r["verified_share"] < VERIFIED_SHARE_MIN
        ):
            out.append(
                Finding(
                    "medium",
                    f"Training run {r['run_id']} ({r['model_name'] or 'model unknown'}) was "
                    f"{r['verified_share']:.0%} attested",
                    f"job {r['namespace']}/{r['job_name']}: {r['unattested_gpu_hours']:,.1f} "
                    "unattested GPU-hours (runs.csv)",
                    "Schedule confidential training only on attested node pools "
                    "(node affinity on an attestation label).",
                )
            )
    silent = [n for n in nodes if n["last_issued_at"] is None and n["allocated_gpu_hours"]]
    if silent:
        out.append(
            Finding(
                "medium",
                f"{len(silent)} nodes ran workloads without sending any attestation",
                "e.g. " + ", ".join(n["node_name"] for n in silent[:3]) + " (nodes.csv)",
                "Install the attestation agent (DaemonSet) on those nodes, or keep "
                "confidential workloads off them.",
            )
        )
    if any(r["run_id"] is None for r in runs):
        out.append(
            Finding(
                "low",
                "Some GPU-hours belong to no recorded training run",
                "their jobs have no OpenLineage run (runs.csv, empty run_id)",
                "Emit OpenLineage events with the annex_trainingRun facet naming the Job.",
            )
        )
    for f in failures:
        out.append(
            Finding(
                "medium" if f["verdict"] == "fail" else "low",
                f"{f['records']} {f['provider']} {f['subject_kind']} attestations: "
                f"{f['verdict']} ({f['reason']})",
                f"on up to {f['nodes_max_per_day']} nodes a day (failures.csv)",
                REASONS.get(f["reason"], "Read the records' detail in marts.attestation_status."),
            )
        )
    return ordered(out)


ATTESTATION_COVERAGE = ReportDefinition(
    name="attestation",
    title="Confidential-computing attestation coverage",
    template="attestation_coverage.html.j2",
    summary="How much of the workload GPU-hours ran on verified confidential nodes, per "
    "training run, node and GPU, with every failed attestation and its reason.",
    queries=QUERIES,
    sections=SECTIONS,
    build=build,
    collection_sources=SOURCES,
)

"""Fleet utilisation and capacity audit, per period.

Coverage and data quality come first (what was not collected is shown as missing, never read
as clean), then the KPIs against the previous period, findings by severity, capacity and
allocation by node pool and failure domain, teams (namespaces) with allocated-but-idle
GPU-hours, degraded GPUs with their evidence, blast radius per failure domain, and the asset
checks' outcomes. Everything is read from ``marts`` (GPU-hours), plus ``audit`` for the
collections, rejected input and check results that say how far the figures can be trusted.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from reports.charts import PALETTE, Series, horizontal_bars, stacked_columns
from reports.definition import Evidence, EvidenceQuery, ReportDefinition, Section
from reports.evidence import COVERAGE_SOURCES
from reports.findings import Finding, counts, no_successful_collection, ordered

Row = dict[str, Any]
Rows = list[Row]

SOURCES = ("kubernetes", "telemetry", "gpubench")
TOP = 15
"""Inline rows of a ranked table; the attachment holds all of them."""
TELEMETRY_COVERAGE_MIN = 0.9
IDLE_SHARE_MAX = 0.2
IDLE_MIN_GPU_HOURS = 24.0
UNAVAILABLE_SHARE_MAX = 0.05

_SUMS = """
    sum(capacity_gpu_hours) AS capacity_gpu_hours,
    sum(allocated_workload_gpu_hours) AS allocated_workload_gpu_hours,
    sum(allocated_balloon_gpu_hours) AS allocated_balloon_gpu_hours,
    sum(free_gpu_hours) AS free_gpu_hours,
    sum(unavailable_gpu_hours) AS unavailable_gpu_hours,
    CAST(sum(telemetry_gpu_hours) AS BIGINT) AS telemetry_gpu_hours,
    sum(dcgm_allocated_gpu_hours) AS dcgm_allocated_gpu_hours,
    sum(allocated_idle_gpu_hours) AS allocated_idle_gpu_hours,
    sum(busy * telemetry_gpu_hours)
        / nullif(sum(telemetry_gpu_hours) FILTER (WHERE busy IS NOT NULL), 0) AS busy,
    sum(energy_mwh) AS energy_mwh"""

QUERIES = (
    COVERAGE_SOURCES,
    EvidenceQuery(
        "coverage_daily",
        "Every day of the period up to the data cut-off: inventory GPU-hours by state and "
        "telemetry coverage (marts.gpu_hours_daily_by_pool); empty cells are days without "
        "evidence.",
        f"""
        WITH days AS (
            SELECT CAST(d AS DATE) AS day
            FROM range(CAST($start AS TIMESTAMP), CAST($coverage_end AS TIMESTAMP),
                       INTERVAL 1 DAY) t(d)
        ), pools AS (
            SELECT day, CAST(sum(nodes) AS BIGINT) AS nodes, {_SUMS}
            FROM marts.gpu_hours_daily_by_pool
            WHERE day >= $start AND day < $coverage_end
            GROUP BY day
        )
        SELECT days.day, pools.* EXCLUDE (day),
               pools.telemetry_gpu_hours / nullif(pools.capacity_gpu_hours, 0)
                   AS telemetry_coverage
        FROM days LEFT JOIN pools USING (day)
        ORDER BY days.day
        """,
    ),
    EvidenceQuery(
        "kpis",
        "GPU-hour totals of this period and the previous one (marts.gpu_hours_daily_by_pool).",
        f"""
        SELECT CASE WHEN day >= $start THEN 'current' ELSE 'previous' END AS period,
               count(DISTINCT day) FILTER (WHERE capacity_gpu_hours > 0) AS inventory_days,
               count(DISTINCT day) FILTER (WHERE telemetry_gpu_hours > 0) AS telemetry_days,
               {_SUMS}
        FROM marts.gpu_hours_daily_by_pool
        WHERE day >= $previous_start AND day < $end
        GROUP BY 1
        ORDER BY 1
        """,
    ),
    EvidenceQuery(
        "rejected",
        "Input rejected by the collectors in the period, per source and reason "
        "(marts.rejected_records).",
        """
        SELECT source, cluster, reason_code, count(*) AS records,
               count(DISTINCT collection_id) AS collections,
               min(locator) AS example_locator
        FROM marts.rejected_records
        WHERE rejected_at >= $start_ts AND rejected_at < $end_ts
        GROUP BY source, cluster, reason_code
        ORDER BY records DESC, source, cluster, reason_code
        """,
    ),
    EvidenceQuery(
        "pools",
        "GPU-hours per node pool over the period (marts.gpu_hours_daily_by_pool).",
        f"""
        SELECT cluster, pool, max(nodes) AS nodes_max, {_SUMS},
               sum(allocated_workload_gpu_hours) / nullif(sum(capacity_gpu_hours), 0)
                   AS allocated_workload_share
        FROM marts.gpu_hours_daily_by_pool
        WHERE day >= $start AND day < $end
        GROUP BY cluster, pool
        ORDER BY capacity_gpu_hours DESC NULLS LAST, cluster, pool
        """,
    ),
    EvidenceQuery(
        "domains",
        "GPU-hours per top-level failure domain over the period (marts.gpu_hours_daily_by_domain).",
        f"""
        SELECT cluster, failure_domain, max(nodes) AS nodes_max, {_SUMS},
               sum(allocated_workload_gpu_hours) / nullif(sum(capacity_gpu_hours), 0)
                   AS allocated_workload_share
        FROM marts.gpu_hours_daily_by_domain
        WHERE day >= $start AND day < $end
        GROUP BY cluster, failure_domain
        ORDER BY capacity_gpu_hours DESC NULLS LAST, cluster, failure_domain
        """,
    ),
    EvidenceQuery(
        "namespaces",
        "GPU-hours per team (namespace) over the period, allocated-but-idle, and the previous "
        "period's allocation (marts.gpu_hours_daily_by_namespace).",
        """
        WITH cur AS (
            SELECT cluster, namespace,
                   sum(allocated_workload_gpu_hours) AS allocated_workload_gpu_hours,
                   sum(allocated_balloon_gpu_hours) AS allocated_balloon_gpu_hours,
                   sum(dcgm_allocated_gpu_hours) AS dcgm_allocated_gpu_hours,
                   sum(allocated_idle_gpu_hours) AS allocated_idle_gpu_hours,
                   sum(busy * dcgm_allocated_gpu_hours)
                       / nullif(sum(dcgm_allocated_gpu_hours) FILTER (WHERE busy IS NOT NULL), 0)
                       AS busy,
                   sum(energy_mwh) AS energy_mwh
            FROM marts.gpu_hours_daily_by_namespace
            WHERE day >= $start AND day < $end
            GROUP BY cluster, namespace
        ), prev AS (
            SELECT cluster, namespace,
                   sum(allocated_workload_gpu_hours) AS previous_allocated_workload_gpu_hours
            FROM marts.gpu_hours_daily_by_namespace
            WHERE day >= $previous_start AND day < $start
            GROUP BY cluster, namespace
        )
        SELECT cur.*,
               cur.allocated_idle_gpu_hours / nullif(cur.dcgm_allocated_gpu_hours, 0)
                   AS idle_share,
               prev.previous_allocated_workload_gpu_hours
        FROM cur LEFT JOIN prev
          ON prev.cluster = cur.cluster AND prev.namespace IS NOT DISTINCT FROM cur.namespace
        ORDER BY cur.allocated_workload_gpu_hours DESC NULLS LAST, cur.cluster, cur.namespace
        """,
    ),
    EvidenceQuery(
        "idle_gpus",
        "GPUs with allocated-but-idle hours in the period: held by a workload pod while the "
        "engine was active under 5 % of the hour (marts.gpu_daily); busy is the mean over "
        "the GPU's reporting hours, the team the namespace that held it longest.",
        # marts.gpu_daily is a table (migration 0013): a month of it is 1.6 million rows for a
        # 60,000-GPU fleet, where the hourly mart has 45 million.
        """
        WITH days AS (
            SELECT *
            FROM marts.gpu_daily
            WHERE day >= $start AND day < $end
              AND (cluster, gpu_uuid) IN (
                  SELECT (cluster, gpu_uuid) FROM marts.gpu_daily
                  WHERE day >= $start AND day < $end AND allocated_idle_gpu_hours > 0)
        ),
        teams AS (
            SELECT cluster, gpu_uuid,
                   arg_max(top_namespace, (held, top_namespace)) AS top_namespace
            FROM (
                SELECT cluster, gpu_uuid, top_namespace, sum(top_namespace_gpu_hours) AS held
                FROM days
                WHERE top_namespace IS NOT NULL
                GROUP BY cluster, gpu_uuid, top_namespace
            )
            GROUP BY cluster, gpu_uuid
        )
        SELECT d.cluster, d.gpu_uuid, arg_max(d.node_name, d.day) AS node_name,
               any_value(t.top_namespace) AS top_namespace,
               sum(d.dcgm_allocated_gpu_hours) AS dcgm_allocated_gpu_hours,
               sum(d.allocated_idle_gpu_hours) AS allocated_idle_gpu_hours,
               sum(d.busy * d.busy_hours) / nullif(sum(d.busy_hours), 0) AS busy
        FROM days AS d
        LEFT JOIN teams AS t USING (cluster, gpu_uuid)
        GROUP BY d.cluster, d.gpu_uuid
        ORDER BY allocated_idle_gpu_hours DESC, d.cluster, d.gpu_uuid
        """,
    ),
    EvidenceQuery(
        "degraded",
        "Benchmark measurements of the period below their cohort, with the telemetry evidence "
        "and verdict (marts.gpu_degraded).",
        """
        SELECT cluster, node, gpu_uuid, gpu_sku, benchmark, dtype, metric, value,
               cohort_median, ratio_to_median, cohort_gpus, verdict, corroborated,
               xid_last, max_gpu_temp_c, sm_clock_ratio, telemetry_hours, measured_at,
               record_id
        FROM marts.gpu_degraded
        WHERE measured_at >= $start_ts AND measured_at < $end_ts
        ORDER BY corroborated DESC, ratio_to_median, cluster, gpu_uuid, benchmark, dtype,
                 record_id
        """,
    ),
    EvidenceQuery(
        "benchmarks",
        "Benchmark measurements of the period, and how many came from annex's simulator "
        "(marts.gpu_benchmark_summary).",
        """
        SELECT count(*) AS measurements, count(DISTINCT gpu_uuid) AS gpus,
               count(*) FILTER (WHERE simulated) AS simulated_measurements
        FROM marts.gpu_benchmark_summary
        WHERE measured_at >= $start_ts AND measured_at < $end_ts
        """,
    ),
    EvidenceQuery(
        "fleet_now",
        "The fleet at the latest inventory collection (marts.fleet_summary): the state the "
        "blast radius is computed on.",
        """
        SELECT cluster, nodes, ready_nodes, gpu_nodes, gpus_capacity, gpus_allocated_workload,
               gpus_allocated_balloon, gpus_free, gpus_unavailable, queued_gpus,
               last_collected_at, snapshot_consistent
        FROM marts.fleet_summary
        ORDER BY cluster
        """,
    ),
    EvidenceQuery(
        "blast_radius",
        "Whole GPUs lost if a failure domain fails, at every level above the node, at the "
        "latest inventory (marts.fleet_gpu_by_domain).",
        """
        SELECT cluster, level, level_label, domain, resource_name, nodes, capacity,
               allocated_workload, allocated_balloon, free, unavailable, blast_radius_gpus,
               blast_radius_workload_gpus, blast_radius_share,
               count(*) OVER (PARTITION BY cluster, level, resource_name) AS domains_at_level
        FROM marts.fleet_gpu_by_domain f
        WHERE whole_gpus
          AND level < (SELECT max(level) FROM marts.fleet_gpu_by_domain m
                       WHERE m.cluster = f.cluster)
        ORDER BY blast_radius_share DESC, cluster, level, domain, resource_name
        """,
    ),
    EvidenceQuery(
        "checks",
        "Asset-check evaluations of the period per check (marts.check_results): how often it "
        "ran, failed, and its latest outcome.",
        """
        SELECT check_name, asset, severity, bool_or(blocking) AS blocking,
               count(*) AS evaluations, count(*) FILTER (WHERE NOT passed) AS failures,
               arg_max(passed, checked_at) AS last_passed,
               max(checked_at) AS last_checked_at,
               arg_max(CAST(details AS VARCHAR), checked_at) AS last_details
        FROM marts.check_results
        WHERE checked_at >= $start_ts AND checked_at < $end_ts
        GROUP BY check_name, asset, severity
        ORDER BY failures DESC, check_name, asset, severity
        """,
    ),
)

SECTIONS = (
    Section("coverage", "Coverage and data quality"),
    Section("kpis", "Key figures against the previous period"),
    Section("findings", "Findings and remediation"),
    Section("capacity", "Capacity and allocation by node pool and failure domain"),
    Section("teams", "Teams and allocated-but-idle GPU-hours"),
    Section("degraded", "Degraded GPUs"),
    Section("blast", "Blast radius per failure domain"),
    Section("checks", "Asset-check outcomes"),
)

KPI_ROWS = (
    ("capacity_gpu_hours", "Capacity GPU-hours"),
    ("allocated_workload_gpu_hours", "Allocated to workloads, GPU-hours"),
    ("allocated_balloon_gpu_hours", "Reserved by balloons, GPU-hours"),
    ("free_gpu_hours", "Free GPU-hours"),
    ("unavailable_gpu_hours", "Unavailable GPU-hours"),
    ("allocated_idle_gpu_hours", "Allocated but idle, GPU-hours"),
    ("telemetry_gpu_hours", "GPU-hours with telemetry"),
    ("energy_mwh", "GPU energy, MWh"),
)

REMEDIATION = {
    "kubernetes": "Schedule the inventory (Dagster cluster_inventory schedule, or "
    "`annex collect cluster`) and check its RBAC with `annex status`.",
    "telemetry": "Set prometheus_url (or dcgm_exporter_urls) for the cluster and run "
    "`annex collect telemetry --since <period start>` to backfill.",
    "gpubench": "Deploy the benchmark probes (`annex probe manifest | kubectl apply -f -`) and "
    "collect them with `annex collect gpubench`.",
}


def build(evidence: Evidence) -> dict[str, Any]:
    """The template's context: the query results cut to their inline rows, the gaps, the
    KPIs with their previous values, the charts and the findings."""
    sources = evidence.records("coverage_sources")
    daily = evidence.records("coverage_daily")
    kpis = {row["period"]: row for row in evidence.records("kpis")}
    current, previous = kpis.get("current"), kpis.get("previous")
    rejected = evidence.records("rejected")
    pools = evidence.records("pools")
    domains = evidence.records("domains")
    namespaces = evidence.records("namespaces")
    idle = evidence.records("idle_gpus")
    degraded = evidence.records("degraded")
    benchmarks = evidence.records("benchmarks")[0]
    fleet_now = evidence.records("fleet_now")
    blast = evidence.records("blast_radius")
    checks = evidence.records("checks")

    gap_days = [row["day"] for row in daily if not row["capacity_gpu_hours"]]
    thin_days = [
        row["day"]
        for row in daily
        if row["capacity_gpu_hours"] and (row["telemetry_coverage"] or 0) < TELEMETRY_COVERAGE_MIN
    ]
    findings = _findings(
        sources,
        daily,
        gap_days,
        thin_days,
        rejected,
        current,
        namespaces,
        degraded,
        fleet_now,
        blast,
        checks,
    )
    kpi_cards = [
        {
            "label": label,
            "key": key,
            "current": current[key] if current else None,
            "previous": previous[key] if previous else None,
        }
        for key, label in KPI_ROWS
    ]
    coverage_now = _ratio(current, "telemetry_gpu_hours", "capacity_gpu_hours")
    coverage_before = _ratio(previous, "telemetry_gpu_hours", "capacity_gpu_hours")
    idle_now = _ratio(current, "allocated_idle_gpu_hours", "dcgm_allocated_gpu_hours")
    idle_before = _ratio(previous, "allocated_idle_gpu_hours", "dcgm_allocated_gpu_hours")
    degraded_gpus = len({(r["cluster"], r["gpu_uuid"]) for r in degraded})
    simulated = benchmarks["simulated_measurements"]
    return {
        "report": {
            "simulated": (
                f"{simulated} of {benchmarks['measurements']} benchmark measurements in this "
                "period came from annex's simulator"
            )
            if simulated
            else None
        },
        "sources": sources,
        "daily": daily,
        "gap_days": gap_days,
        "thin_days": thin_days,
        "coverage_min": TELEMETRY_COVERAGE_MIN,
        "rejected": rejected[:TOP],
        "rejected_total": len(rejected),
        "rejected_records": sum(r["records"] for r in rejected),
        "current": current,
        "previous": previous,
        "kpis": kpi_cards,
        "ratios": [
            ("Telemetry coverage of capacity", coverage_now, coverage_before),
            (
                "Allocated share of capacity",
                _ratio(current, "allocated_workload_gpu_hours", "capacity_gpu_hours"),
                _ratio(previous, "allocated_workload_gpu_hours", "capacity_gpu_hours"),
            ),
            ("Idle share of allocated (DCGM)", idle_now, idle_before),
            (
                "Mean busy (engine active)",
                current["busy"] if current else None,
                previous["busy"] if previous else None,
            ),
        ],
        "findings": findings,
        "finding_counts": counts(findings),
        "daily_chart": _daily_chart(daily),
        "pools": pools[:TOP],
        "pools_total": len(pools),
        "domains": domains[:TOP],
        "domains_total": len(domains),
        "namespaces": namespaces[:TOP],
        "namespaces_total": len(namespaces),
        "namespace_chart": horizontal_bars(
            [
                (f"{r['namespace']} ({r['cluster']})", r["allocated_workload_gpu_hours"])
                for r in namespaces[:TOP]
            ],
            title="Allocated GPU-hours by team (namespace), top 15",
            unit="GPU-h",
        )
        if namespaces
        else None,
        "idle": idle[:10],
        "idle_total": len(idle),
        "degraded": degraded[:TOP],
        "degraded_total": len(degraded),
        "degraded_gpus": degraded_gpus,
        "benchmarks": benchmarks,
        "fleet_now": fleet_now,
        "blast_known": any((f["gpu_nodes"] or 0) > 0 for f in fleet_now),
        "blast": blast[:TOP],
        "blast_total": len(blast),
        "checks": checks,
    }


def _ratio(row: Row | None, numerator: str, denominator: str) -> float | None:
    if not row or not row[denominator]:
        return None
    return (row[numerator] or 0) / row[denominator]


def _daily_chart(daily: Rows) -> str:
    keys = (
        ("allocated_workload_gpu_hours", "workload", PALETTE[0]),
        ("allocated_balloon_gpu_hours", "balloon", PALETTE[4]),
        ("free_gpu_hours", "free", PALETTE[1]),
        ("unavailable_gpu_hours", "unavailable", PALETTE[3]),
    )
    return stacked_columns(
        [row["day"].strftime("%m-%d") for row in daily],
        [
            Series(label, [row[key] if row["capacity_gpu_hours"] else None for row in daily], c)
            for key, label, c in keys
        ],
        title="Capacity GPU-hours per day by state (hatched: no inventory evidence)",
        unit="GPU-hours",
    )


def _findings(
    sources: Rows,
    daily: Rows,
    gap_days: list[date],
    thin_days: list[date],
    rejected: Rows,
    current: Row | None,
    namespaces: Rows,
    degraded: Rows,
    fleet_now: Rows,
    blast: Rows,
    checks: Rows,
) -> list[Finding]:
    out: list[Finding] = []
    for s in sources:
        if not s["succeeded"]:
            out.append(
                no_successful_collection(
                    s, "its figures below are missing, not zero.", REMEDIATION[s["source"]]
                )
            )
        elif s["failed"]:
            out.append(
                Finding(
                    "medium",
                    f"{s['source']} collections failed: {s['failed']}",
                    f"first error: {s['first_error'] or 'not recorded'} (collections.csv)",
                    "Read the error in marts.collections (`annex status`), fix its cause, and "
                    "rerun the collection; failed collections load nothing.",
                )
            )
    if daily and gap_days:
        out.append(
            Finding(
                "high",
                f"{len(gap_days)} of {len(daily)} days have no inventory evidence",
                "days: " + _days(gap_days) + " (coverage_daily.csv)",
                REMEDIATION["kubernetes"],
            )
        )
    if thin_days:
        out.append(
            Finding(
                "medium",
                f"Telemetry covers under {TELEMETRY_COVERAGE_MIN:.0%} of capacity on "
                f"{len(thin_days)} days",
                "days: " + _days(thin_days) + " (coverage_daily.csv)",
                REMEDIATION["telemetry"],
            )
        )
    by_source: dict[str, int] = {}
    for r in rejected:
        by_source[r["source"]] = by_source.get(r["source"], 0) + r["records"]
    for source, records in sorted(by_source.items()):
        out.append(
            Finding(
                "low",
                f"{source} records rejected: {records}",
                "reasons: "
                + ", ".join(sorted({r["reason_code"] for r in rejected if r["source"] == source}))
                + " (rejected.csv)",
                'Inspect them with `annex sql -c "select * from marts.rejected_records"` and fix '
                "the producer; they are kept with their reason, nothing else was lost.",
            )
        )
    for r in degraded:
        if r["corroborated"]:
            out.append(
                Finding(
                    "high" if r["xid_last"] is not None else "medium",
                    f"GPU {r['gpu_uuid']} on {r['node']} is degraded: {r['verdict']}",
                    f"{r['benchmark']} {r['dtype']} at {r['ratio_to_median']:.0%} of its cohort "
                    "median (degraded.csv)",
                    "Drain the node, run the vendor diagnostics (dcgmi diag -r 3) and replace "
                    "the GPU if the XID or row-remap evidence repeats.",
                )
            )
    uncorroborated = {(r["cluster"], r["gpu_uuid"]) for r in degraded if not r["corroborated"]}
    if uncorroborated:
        out.append(
            Finding(
                "medium",
                f"{len(uncorroborated)} GPUs are slow without telemetry corroboration",
                "below their cohort's threshold (degraded.csv)",
                "Rerun the benchmark on them; check NVLink/PCIe and HBM.",
            )
        )
    if current and current["capacity_gpu_hours"]:
        share = (current["unavailable_gpu_hours"] or 0) / current["capacity_gpu_hours"]
        if share > UNAVAILABLE_SHARE_MAX:
            out.append(
                Finding(
                    "medium",
                    f"{share:.1%} of capacity GPU-hours were unavailable",
                    "unhealthy devices or NotReady/cordoned nodes (pools.csv, domains.csv)",
                    "Find the nodes in marts.gpu_hours_daily_by_node (unavailable_gpu_hours) "
                    "and repair or remove them from the pool.",
                )
            )
    for r in namespaces:
        if (
            r["idle_share"] is not None
            and r["idle_share"] > IDLE_SHARE_MAX
            and (r["dcgm_allocated_gpu_hours"] or 0) >= IDLE_MIN_GPU_HOURS
        ):
            out.append(
                Finding(
                    "medium",
                    f"Team {r['namespace']} left {r['idle_share']:.0%} of its allocated "
                    "GPU-hours idle",
                    f"{r['allocated_idle_gpu_hours']:,.1f} of {r['dcgm_allocated_gpu_hours']:,.1f}"
                    f" GPU-hours on {r['cluster']} (namespaces.csv, idle_gpus.csv)",
                    "Ask the team to release idle GPUs (stop idle notebooks, right-size "
                    "requests) or set an idle-reclaim policy.",
                )
            )
    for f in fleet_now:
        if f["snapshot_consistent"] is False and f["nodes"]:
            out.append(
                Finding(
                    "medium",
                    f"The latest inventory of {f['cluster']} is not a consistent snapshot",
                    "a list restarted after 410 Expired (fleet_now.csv)",
                    "Raise kubernetes.page_size or max_list_restarts and collect again.",
                )
            )
    for b in blast:
        if b["domains_at_level"] > 1 and b["blast_radius_share"] >= 0.5:
            out.append(
                Finding(
                    "low",
                    f"Failure domain {b['domain']} holds {b['blast_radius_share']:.0%} of "
                    f"{b['cluster']}'s GPUs",
                    f"{b['blast_radius_gpus']} GPUs, {b['blast_radius_workload_gpus']} in use "
                    f"({b['level_label']}; blast_radius.csv)",
                    "Spread large jobs and spare capacity across domains, or accept the risk "
                    "in writing.",
                )
            )
    if not checks:
        out.append(
            Finding(
                "medium",
                "No asset checks were evaluated in the period",
                "marts.check_results has no rows for it (checks.csv)",
                "Run the collections through Dagster (`annex run`), which evaluates the checks.",
            )
        )
    for c in checks:
        if c["last_passed"] is False:
            out.append(
                Finding(
                    "high" if c["severity"] == "ERROR" else "medium",
                    f"Check {c['check_name']} on {c['asset']} is failing",
                    f"{c['failures']} of {c['evaluations']} evaluations failed; latest: "
                    f"{c['last_details']} (checks.csv)",
                    "Open the asset in the Dagster UI, read the check's metadata, fix the "
                    "input and rerun the collection.",
                )
            )
        elif c["failures"]:
            out.append(
                Finding(
                    "info",
                    f"Check {c['check_name']} on {c['asset']} failed earlier, passes now",
                    f"{c['failures']} of {c['evaluations']} evaluations failed (checks.csv)",
                    "None needed; confirm the cause was fixed.",
                )
            )
    return ordered(out)


def _days(days: list[date]) -> str:
    shown = ", ".join(d.isoformat() for d in days[:8])
    return shown + (f" and {len(days) - 8} more" if len(days) > 8 else "")


FLEET = ReportDefinition(
    name="fleet",
    title="Fleet utilisation and capacity audit",
    template="fleet.html.j2",
    summary="GPU capacity, allocation and idleness by team, node pool and failure domain, "
    "with the coverage of the evidence, degraded GPUs, blast radius and findings.",
    queries=QUERIES,
    sections=SECTIONS,
    build=build,
    collection_sources=SOURCES,
)

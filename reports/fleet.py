"""Fleet utilisation and capacity audit, per period.

Coverage and data quality come first (what was not collected is shown as missing, never read
as clean), then the KPIs against the previous period, findings (a summary by severity and kind,
then one finding per subject: one per degraded GPU with all its slow benchmarks), capacity and
allocation by node pool and failure domain (shared GPUs shown as physical GPUs beside the
shares the scheduler counts, GPUs held through DRA claims named), teams (namespaces) with
allocated-but-idle GPU-hours, degraded GPUs with their evidence, blast radius per failure
domain, the asset checks' outcomes, and who waits for GPUs in Kueue's queues (or, plainly, that
a cluster runs no Kueue).

Two sources meet in the idle figures: the inventory (Kubernetes) says who was allocated how many
GPU-hours, DCGM telemetry which of them idled. The marts compare them only on node-hours both
saw (``allocated_observed_gpu_hours``; idle never exceeds it); telemetry from hours the inventory
did not observe is shown apart as telemetry-only, never as idle allocation.

Everything is read from ``marts`` (GPU-hours), plus ``audit`` for the collections, rejected
input and check results that say how far the figures can be trusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from reports.charts import PALETTE, Series, horizontal_bars, stacked_columns
from reports.comparison import HOURS_COVERED, covered_hours, per_hour_change, period_hours
from reports.definition import Evidence, EvidenceQuery, ReportDefinition, Section
from reports.evidence import COVERAGE_SOURCES
from reports.findings import SEVERITIES, Finding, no_successful_collection

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
    sum(allocated_observed_gpu_hours) AS allocated_observed_gpu_hours,
    CAST(sum(telemetry_only_gpu_hours) AS BIGINT) AS telemetry_only_gpu_hours,
    sum(telemetry_only_idle_gpu_hours) AS telemetry_only_idle_gpu_hours,
    sum(busy * telemetry_gpu_hours)
        / nullif(sum(telemetry_gpu_hours) FILTER (WHERE busy IS NOT NULL), 0) AS busy,
    sum(energy_mwh) AS energy_mwh"""

SHARED_GPUS_SQL = """
        SELECT cluster, sharing_strategy, count(DISTINCT node_name) AS nodes,
               CAST(sum(physical_gpus) AS BIGINT) AS physical_gpus,
               min(shares) AS shares_min, max(shares) AS shares_max,
               CAST(sum(advertised_gpus) AS BIGINT) AS shares_advertised,
               CASE WHEN sharing_strategy IN ('time-slicing', 'mps')
                   THEN CAST(round(sum((allocated_workload_gpus + allocated_balloon_gpus)
                                       * shares)) AS BIGINT)
               END AS shares_allocated,
               sum(allocated_workload_gpus + allocated_balloon_gpus) AS held_gpus,
               sum(free_gpus) AS free_gpus
        FROM marts.node_gpu_capacity
        WHERE whole_gpus AND sharing_strategy <> 'none'
        GROUP BY cluster, sharing_strategy
        ORDER BY cluster, sharing_strategy
"""
"""Shared GPUs per cluster and strategy at the latest inventory: the report's and the CLI
summary's (``annex.cli.summary``) one definition."""

DRA_NOW_SQL = """
        SELECT cluster, count(DISTINCT claim_uid) AS claims,
               count(DISTINCT gpu_uuid) FILTER (WHERE mig_uuid IS NULL) AS gpus,
               count(DISTINCT mig_uuid) AS mig_devices,
               count(DISTINCT pod_uid) AS pods,
               count(DISTINCT node_name) AS nodes,
               count(DISTINCT claim_uid) FILTER (WHERE holder_pods > 1) AS shared_claims
        FROM marts.dra_gpu_claims
        GROUP BY cluster
        ORDER BY cluster
"""
"""GPUs held through DRA claims per cluster at the latest inventory (report and CLI summary)."""

QUERIES = (
    COVERAGE_SOURCES,
    EvidenceQuery(
        "coverage_daily",
        "Every day of the period up to the data cut-off: inventory GPU-hours by state, "
        "telemetry coverage of capacity (telemetry on node-hours the inventory observed) and "
        "telemetry-only GPU-hours (node-hours the inventory did not observe) "
        "(marts.gpu_hours_daily_by_pool); empty cells are days without evidence.",
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
               -- a share of capacity: telemetry of an hour the inventory saw only in part
               -- covers at most that part
               least(1.0, (pools.telemetry_gpu_hours - pools.telemetry_only_gpu_hours)
                   / nullif(pools.capacity_gpu_hours, 0)) AS telemetry_coverage
        FROM days LEFT JOIN pools USING (day)
        ORDER BY days.day
        """,
    ),
    EvidenceQuery(
        "telemetry_only_nodes",
        "Nodes with telemetry-only GPU-hours in the period (marts.node_gpu_hours), and why the "
        "inventory has no GPU-hours for them: mig_partitioned, a node it observed whose GPUs "
        "are MIG-partitioned (MIG strategy single, or mixed without whole GPUs: it counts their "
        "MIG slices, not GPU-hours); not_observed, node-hours no inventory collection covered.",
        """
        WITH hours AS (
            SELECT h.cluster, h.node_name, h.hour, h.telemetry_only_gpu_hours,
                   coalesce(bool_or(n.mig_strategy = 'single'
                                    OR (n.mig_strategy = 'mixed'
                                        AND coalesce(n.gpu_capacity, 0) = 0)), false)
                       AS mig_partitioned
            FROM marts.node_gpu_hours AS h
            LEFT JOIN core.nodes AS n
                ON n.cluster = h.cluster AND n.node_name = h.node_name
                AND n.valid_from < h.hour + INTERVAL 1 HOUR
                AND coalesce(n.valid_to, 'infinity'::TIMESTAMP) > h.hour
            WHERE h.day >= $start AND h.day < $coverage_end AND h.telemetry_only_gpu_hours > 0
            GROUP BY h.cluster, h.node_name, h.hour, h.telemetry_only_gpu_hours
        )
        SELECT cluster, node_name,
               CASE WHEN mig_partitioned THEN 'mig_partitioned' ELSE 'not_observed' END
                   AS cause,
               count(*) AS node_hours,
               CAST(sum(telemetry_only_gpu_hours) AS BIGINT) AS telemetry_only_gpu_hours,
               min(hour) AS first_hour, max(hour) AS last_hour
        FROM hours
        GROUP BY ALL
        ORDER BY telemetry_only_gpu_hours DESC, cluster, node_name, cause
        """,
    ),
    EvidenceQuery(
        "kpis",
        "GPU-hour totals of this period and the previous one (marts.gpu_hours_daily_by_pool), "
        "with the hours each source covered (marts.node_gpu_hours: an hour the inventory "
        "observed in part counts that part), the base of the comparison per hour of evidence.",
        f"""
        WITH sums AS (
            SELECT CASE WHEN day >= $start THEN 'current' ELSE 'previous' END AS period,
                   count(DISTINCT day) FILTER (WHERE capacity_gpu_hours > 0) AS inventory_days,
                   count(DISTINCT day) FILTER (WHERE telemetry_gpu_hours > 0) AS telemetry_days,
                   {_SUMS}
            FROM marts.gpu_hours_daily_by_pool
            WHERE day >= $previous_start AND day < $end
            GROUP BY 1
        ), {HOURS_COVERED}
        SELECT s.*, c.* EXCLUDE (period)
        FROM sums AS s
        LEFT JOIN hours_covered AS c USING (period)
        ORDER BY s.period
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
        SELECT cluster, node_pool, max(nodes) AS nodes_max, {_SUMS},
               sum(allocated_workload_gpu_hours) / nullif(sum(capacity_gpu_hours), 0)
                   AS allocated_workload_share
        FROM marts.gpu_hours_daily_by_pool
        WHERE day >= $start AND day < $end
        GROUP BY cluster, node_pool
        ORDER BY capacity_gpu_hours DESC NULLS LAST, cluster, node_pool
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
        "GPU-hours per team (namespace) over the period: allocated (inventory), allocated and "
        "seen by telemetry, allocated-but-idle (NULL where the two sources never saw the same "
        "hours), telemetry-only GPU-hours, and the previous period's allocation "
        "(marts.gpu_hours_daily_by_namespace).",
        """
        WITH cur AS (
            SELECT cluster, namespace,
                   sum(allocated_workload_gpu_hours) AS allocated_workload_gpu_hours,
                   sum(allocated_balloon_gpu_hours) AS allocated_balloon_gpu_hours,
                   sum(dcgm_allocated_gpu_hours) AS dcgm_allocated_gpu_hours,
                   sum(allocated_observed_gpu_hours) AS allocated_observed_gpu_hours,
                   sum(allocated_idle_gpu_hours) AS allocated_idle_gpu_hours,
                   sum(telemetry_only_gpu_hours) AS telemetry_only_gpu_hours,
                   sum(telemetry_only_idle_gpu_hours) AS telemetry_only_idle_gpu_hours,
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
        SELECT cur.* REPLACE (
                   CASE WHEN cur.allocated_observed_gpu_hours > 0
                       THEN cur.allocated_idle_gpu_hours END AS allocated_idle_gpu_hours),
               cur.allocated_idle_gpu_hours / nullif(cur.allocated_observed_gpu_hours, 0)
                   AS idle_share,
               prev.previous_allocated_workload_gpu_hours
        FROM cur LEFT JOIN prev
          ON prev.cluster = cur.cluster AND prev.namespace IS NOT DISTINCT FROM cur.namespace
        ORDER BY cur.allocated_workload_gpu_hours DESC NULLS LAST, cur.cluster, cur.namespace
        """,
    ),
    EvidenceQuery(
        "idle_gpus",
        "GPUs with allocated-but-idle hours in the period by DCGM telemetry alone: held by a "
        "workload pod's label while the engine was active under 5 % of the hour "
        "(marts.gpu_daily); busy is the mean over the GPU's reporting hours, the team the "
        "namespace that held it longest.",
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
        SELECT cluster, node_name, gpu_uuid, gpu_model, benchmark, dtype, metric, value,
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
        SELECT cluster, nodes, ready_nodes, gpu_nodes, capacity_gpus, allocated_workload_gpus,
               allocated_balloon_gpus, free_gpus, unavailable_gpus, queued_pods, queued_gpus,
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
        SELECT cluster, level, level_label, failure_domain, resource_name, nodes, capacity_gpus,
               allocated_workload_gpus, allocated_balloon_gpus, free_gpus, unavailable_gpus,
               blast_radius_gpus,
               blast_radius_workload_gpus, blast_radius_share,
               count(*) OVER (PARTITION BY cluster, level, resource_name) AS domains_at_level
        FROM marts.fleet_gpu_by_domain f
        WHERE whole_gpus
          AND level < (SELECT max(level) FROM marts.fleet_gpu_by_domain m
                       WHERE m.cluster = f.cluster)
        ORDER BY blast_radius_share DESC, cluster, level, failure_domain, resource_name
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
    EvidenceQuery(
        "queues",
        "Who waited for GPUs, per team (namespace) and Kueue ClusterQueue over the period "
        "(marts.queue_wait): workloads that waited, workloads admitted, the worst day's median "
        "and 95th-percentile wait to admission, the most GPUs still queued at a day's end, and "
        "the longest wait. Empty where Kueue does not run.",
        """
        SELECT cluster, namespace, cluster_queue,
               count(*) FILTER (WHERE waiting_workloads > 0) AS days_with_waiting,
               max(waiting_workloads) AS waiting_workloads_max,
               sum(admitted_workloads) AS admitted_workloads,
               max(wait_p50_seconds) / 3600.0 AS wait_p50_hours_max,
               max(wait_p95_seconds) / 3600.0 AS wait_p95_hours_max,
               max(queued_gpus) AS queued_gpus_max,
               max(longest_wait_seconds) / 3600.0 AS longest_wait_hours
        FROM marts.queue_wait
        WHERE day >= $start AND day < $end
        GROUP BY cluster, namespace, cluster_queue
        ORDER BY wait_p95_hours_max DESC NULLS LAST, queued_gpus_max DESC, cluster, namespace,
                 cluster_queue
        """,
    ),
    EvidenceQuery(
        "queues_now",
        "Workloads still waiting for GPUs per cluster at the end of the last day of the period "
        "with Kueue evidence (for the current day: at the latest inventory), and the GPUs they "
        "ask for (marts.queue_wait).",
        """
        SELECT cluster, day,
               CAST(sum(still_waiting_workloads) AS BIGINT) AS waiting_workloads,
               CAST(sum(queued_gpus) AS BIGINT) AS queued_gpus,
               count(DISTINCT cluster_queue) FILTER (WHERE still_waiting_workloads > 0)
                   AS cluster_queues
        FROM marts.queue_wait
        WHERE day >= $start AND day < $end
        GROUP BY cluster, day
        QUALIFY day = max(day) OVER (PARTITION BY cluster)
        ORDER BY cluster
        """,
    ),
    EvidenceQuery(
        "optional_apis",
        "Per cluster, the inventory lists of the period (audit.kubernetes_lists) and the Kueue "
        "(kueue.x-k8s.io) and DRA (resource.k8s.io) objects they read: annex lists them only "
        "where the API server serves them, so none means the cluster runs no Kueue queues or "
        "DRA devices.",
        """
        SELECT cluster, count(DISTINCT collection_id) AS collections,
               CAST(coalesce(sum(items) FILTER (WHERE starts_with(resource, 'kueue_')), 0)
                   AS BIGINT) AS kueue_objects,
               CAST(coalesce(sum(items) FILTER (
                   WHERE resource IN ('resource_slices', 'resource_claims')), 0) AS BIGINT)
                   AS dra_objects
        FROM audit.kubernetes_lists
        WHERE started_at >= $start_ts AND started_at < $end_ts
        GROUP BY cluster
        ORDER BY cluster
        """,
    ),
    EvidenceQuery(
        "shared_gpus",
        "Shared GPUs at the latest inventory, per cluster and sharing strategy "
        "(marts.node_gpu_capacity, whole-GPU rows): nodes, physical GPUs, shares per GPU, "
        "shares advertised to the scheduler, shares allocated (time-slicing and MPS: replicas "
        "held; HAMi pods hold their nvidia.com/gpucores percent instead) and the physical GPUs "
        "they amount to.",
        SHARED_GPUS_SQL,
    ),
    EvidenceQuery(
        "dra_now",
        "GPUs held through DRA ResourceClaims at the latest inventory, per cluster "
        "(marts.dra_gpu_claims): claims, physical GPUs, MIG devices, the pods holding them and "
        "the nodes they are on. They are counted in every allocation figure of this report "
        "like device-plugin GPUs.",
        DRA_NOW_SQL,
    ),
    EvidenceQuery(
        "queue_quota",
        "GPU quota of each Kueue ClusterQueue and flavor at the latest inventory "
        "(marts.queue_quota): nominal quota, borrowing limit, GPUs in use and borrowed from "
        "the cohort above the nominal quota.",
        """
        SELECT cluster, cluster_queue, cohort, flavor, resource_name, nominal_gpus,
               coalesce(CAST(borrowing_limit_gpus AS VARCHAR), 'no limit') AS borrowing_limit,
               used_gpus, borrowed_gpus, pending_workloads
        FROM marts.queue_quota
        ORDER BY cluster, cluster_queue, flavor, resource_name
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
    Section("queues", "Queues and waiting (Kueue)"),
)

KPI_ROWS = (
    ("capacity_gpu_hours", "Capacity GPU-hours"),
    ("allocated_workload_gpu_hours", "Allocated to workloads, GPU-hours"),
    ("allocated_balloon_gpu_hours", "Reserved by balloons, GPU-hours"),
    ("free_gpu_hours", "Free GPU-hours"),
    ("unavailable_gpu_hours", "Unavailable GPU-hours"),
    ("allocated_observed_gpu_hours", "Allocated and seen by telemetry, GPU-hours"),
    ("allocated_idle_gpu_hours", "Allocated but idle, GPU-hours"),
    ("telemetry_gpu_hours", "GPU-hours with telemetry"),
    ("telemetry_only_gpu_hours", "Telemetry-only GPU-hours (no inventory)"),
    ("energy_mwh", "GPU energy, MWh"),
)

KINDS = (
    "Evidence coverage",
    "Degraded GPU",
    "Idle allocation",
    "Capacity",
    "Inventory consistency",
    "Failure domain",
    "Asset check",
    "Rejected input",
)
"""The kinds of finding, in the order the summary lists them."""

DEGRADED_REMEDIATION = (
    "Drain the node, run the vendor diagnostics (dcgmi diag -r 3) and replace the GPU if the "
    "XID or row-remap evidence repeats."
)


@dataclass(frozen=True)
class FleetFinding:
    """A finding with its kind, so the reader gets a summary by severity and kind first."""

    kind: str
    finding: Finding

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind {self.kind!r} is not one of {KINDS}")

    @property
    def severity(self) -> str:
        return self.finding.severity

    @property
    def title(self) -> str:
        return self.finding.title

    @property
    def evidence(self) -> str:
        return self.finding.evidence

    @property
    def remediation(self) -> str:
        return self.finding.remediation


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
    queues = evidence.records("queues")
    queue_quota = evidence.records("queue_quota")
    optional_apis = evidence.records("optional_apis")
    queues_now = [row for row in evidence.records("queues_now") if row["waiting_workloads"]]

    gap_days = [row["day"] for row in daily if not row["capacity_gpu_hours"]]
    thin_days = [
        row["day"]
        for row in daily
        if row["capacity_gpu_hours"] and (row["telemetry_coverage"] or 0) < TELEMETRY_COVERAGE_MIN
    ]
    telemetry_only_days = [row["day"] for row in daily if row["telemetry_only_gpu_hours"]]
    telemetry_only = _telemetry_only_causes(evidence.records("telemetry_only_nodes"))
    daily = [_with_evidence(row) for row in daily]
    degraded_gpus = _degraded_by_gpu(degraded)
    findings = _findings(
        sources,
        daily,
        gap_days,
        thin_days,
        telemetry_only_days,
        rejected,
        current,
        namespaces,
        degraded_gpus,
        fleet_now,
        blast,
        checks,
        telemetry_only,
    )
    finding_groups = _by_kind(findings)
    hours = period_hours(evidence)
    kpi_cards = [
        {
            "label": label,
            "key": key,
            "current": _kpi(current, key),
            "previous": _kpi(previous, key),
            "comparison": _kpi_comparison(current, previous, key, hours),
        }
        for key, label in KPI_ROWS
    ]
    coverage_now = _telemetry_coverage(current)
    coverage_before = _telemetry_coverage(previous)
    idle_now = _ratio(current, "allocated_idle_gpu_hours", "allocated_observed_gpu_hours")
    idle_before = _ratio(previous, "allocated_idle_gpu_hours", "allocated_observed_gpu_hours")
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
        "telemetry_only_days": telemetry_only_days,
        "telemetry_only": telemetry_only,
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
            ("Idle share of allocated (both sources)", idle_now, idle_before),
            (
                "Mean busy (engine active)",
                current["busy"] if current else None,
                previous["busy"] if previous else None,
            ),
        ],
        "findings": findings,
        "finding_counts": {sev: sum(f.severity == sev for f in findings) for sev in SEVERITIES},
        "finding_groups": finding_groups,
        "finding_summary": _summary(finding_groups),
        "daily_chart": _daily_chart(daily),
        "pools": [_idle_compared(row) for row in pools[:TOP]],
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
        "degraded": degraded_gpus[:TOP],
        "degraded_total": len(degraded_gpus),
        "degraded_measurements": len(degraded),
        "degraded_gpus": len(degraded_gpus),
        "benchmarks": benchmarks,
        "fleet_now": fleet_now,
        "blast_known": any((f["gpu_nodes"] or 0) > 0 for f in fleet_now),
        "blast": blast[:TOP],
        "blast_total": len(blast),
        "checks": checks,
        "queues": queues[:TOP],
        "queues_total": len(queues),
        "queue_quota": queue_quota,
        "queues_now": queues_now,
        "kueue": _kueue_state(optional_apis, queues, queue_quota),
        "borrowing": [row for row in queue_quota if row["borrowed_gpus"]],
        "dra_served": any(row["dra_objects"] for row in optional_apis),
        "shared": [_shares_in_words(row) for row in evidence.records("shared_gpus")],
        "dra_now": evidence.records("dra_now"),
    }


def _kueue_state(lists: Rows, queues: Rows, quota: Rows) -> str:
    """Whether the period's inventories saw Kueue: ``seen`` (they read Kueue objects, or its
    marts have rows), ``absent`` (inventories listed the clusters and found no Kueue object, or
    no kueue.x-k8s.io API at all: no Kueue queues run) or ``unknown`` (no inventory list in the
    period to tell)."""
    if queues or quota or any(row["kueue_objects"] for row in lists):
        return "seen"
    return "absent" if lists else "unknown"


def _shares_in_words(row: Row) -> Row:
    """The row with its shares per GPU (\"4\", or \"2-4\" when the nodes differ) and
    shares allocated (HAMi pods hold a gpucores percent, not a count of shares) as text."""
    low, high = row["shares_min"], row["shares_max"]
    allocated = row["shares_allocated"]
    return dict(
        row,
        shares_per_gpu=f"{low}" if low == high else f"{low}\u2013{high}",
        shares_allocated_text="by gpucores %" if allocated is None else f"{allocated:,}",
    )


def _ratio(row: Row | None, numerator: str, denominator: str) -> float | None:
    if not row or not row[denominator]:
        return None
    return (row[numerator] or 0) / row[denominator]


_NEEDS_INVENTORY = (
    "capacity_gpu_hours",
    "allocated_workload_gpu_hours",
    "allocated_balloon_gpu_hours",
    "free_gpu_hours",
    "unavailable_gpu_hours",
)
_NEEDS_BOTH_SOURCES = ("allocated_observed_gpu_hours", "allocated_idle_gpu_hours")


def _kpi(row: Row | None, key: str) -> float | int | None:
    """A KPI of the period, or None (shown as no evidence) where its source saw none of it:
    inventory figures without inventory, idle figures where the two sources never met."""
    if not row:
        return None
    if key in _NEEDS_INVENTORY and not row["capacity_gpu_hours"]:
        return None
    if key in _NEEDS_BOTH_SOURCES and not row["allocated_observed_gpu_hours"]:
        return None
    return row[key]


_TELEMETRY_KPIS = ("telemetry_gpu_hours", "telemetry_only_gpu_hours", "energy_mwh")


def _kpi_comparison(current: Row | None, previous: Row | None, key: str, hours: Row) -> str:
    """The KPI against the previous period, per hour its source covered
    (``reports.comparison``)."""
    source, column = _evidence_hours(key)
    covered = covered_hours(current, previous, column)
    return per_hour_change(_kpi(current, key), _kpi(previous, key), covered, hours, source)


def _evidence_hours(key: str) -> tuple[str, str]:
    """Which source a KPI rests on, and the kpis column of the hours it covered."""
    if key in _NEEDS_BOTH_SOURCES:
        return "both sources", "both_sources_hours"
    if key in _TELEMETRY_KPIS:
        return "telemetry", "telemetry_hours"
    return "inventory", "inventory_hours"


def _idle_compared(row: Row) -> Row:
    """The row with its idle GPU-hours missing (not zero) where the sources never met."""
    if row["allocated_observed_gpu_hours"]:
        return row
    return dict(row, allocated_idle_gpu_hours=None)


def _telemetry_coverage(row: Row | None) -> float | None:
    """Telemetry GPU-hours on node-hours the inventory observed, over capacity: telemetry-only
    GPU-hours have no capacity to be a share of."""
    if not row or not row["capacity_gpu_hours"]:
        return None
    compared = (row["telemetry_gpu_hours"] or 0) - (row["telemetry_only_gpu_hours"] or 0)
    # a share of capacity: telemetry of an hour the inventory saw only in part covers that part
    return min(1.0, compared / row["capacity_gpu_hours"])


_INVENTORY_COLUMNS = (
    "nodes",
    "capacity_gpu_hours",
    "allocated_workload_gpu_hours",
    "allocated_balloon_gpu_hours",
    "free_gpu_hours",
    "unavailable_gpu_hours",
)


def _with_evidence(row: Row) -> Row:
    """The day's row with the sources that cover it in words; a day the inventory did not
    observe shows its inventory figures as missing, not as zero."""
    inventory = bool(row["capacity_gpu_hours"])
    telemetry_only = row["telemetry_only_gpu_hours"] or 0
    compared = (row["telemetry_gpu_hours"] or 0) - telemetry_only
    if inventory and compared:
        evidence = "both sources"
    elif inventory:
        evidence = "inventory only"
    elif telemetry_only:
        evidence = "telemetry only"
    else:
        evidence = None
    if inventory and telemetry_only:
        evidence = f"{evidence}; telemetry-only hours"
    out = dict(row, evidence=evidence)
    if not inventory:
        out.update({key: None for key in _INVENTORY_COLUMNS})
    return out


def _percent(ratio: float | None) -> str:
    return "unknown" if ratio is None else f"{ratio * 100:.0f}\u00a0%"  # never split


def _degraded_by_gpu(degraded: Rows) -> Rows:
    """One row per GPU (in the order of its first measurement in ``degraded``: corroborated
    first, slowest first) with all its benchmarks below their cohort and the evidence."""
    by_gpu: dict[tuple[str, str], Rows] = {}
    for r in degraded:
        by_gpu.setdefault((r["cluster"], r["gpu_uuid"]), []).append(r)
    out: Rows = []
    for (cluster, gpu), rows in by_gpu.items():
        corroborated = [r for r in rows if r["corroborated"]]
        verdicts = list(dict.fromkeys(r["verdict"] for r in corroborated or rows))
        xids = [r["xid_last"] for r in rows if r["xid_last"] is not None]
        temps = [r["max_gpu_temp_c"] for r in rows if r["max_gpu_temp_c"] is not None]
        clocks = [r["sm_clock_ratio"] for r in rows if r["sm_clock_ratio"] is not None]
        out.append(
            {
                "cluster": cluster,
                "gpu_uuid": gpu,
                "node_name": rows[0]["node_name"],
                "measurements": len(rows),
                "benchmarks": ", ".join(
                    f"{r['benchmark']} {r['dtype']} {_percent(r['ratio_to_median'])}"
                    for r in sorted(rows, key=lambda r: (r["benchmark"], r["dtype"]))
                ),
                "worst_ratio": min(r["ratio_to_median"] for r in rows),
                "verdict": "; ".join(verdicts),
                "corroborated": bool(corroborated),
                "xid_last": xids[0] if xids else None,
                "xid": str(xids[0]) if xids else "none seen",
                "max_gpu_temp_c": max(temps) if temps else None,
                "sm_clock_ratio": min(clocks) if clocks else None,
                "measured_at": max(r["measured_at"] for r in rows),
            }
        )
    return out


def _by_kind(findings: list[FleetFinding]) -> list[tuple[str, list[FleetFinding]]]:
    """The findings of each kind that has any, highest severity first within it; the kinds
    ordered by their most severe finding, then in KINDS order."""
    groups = [(kind, [f for f in findings if f.kind == kind]) for kind in KINDS]
    groups = [
        (kind, sorted(fs, key=lambda f: SEVERITIES.index(f.severity))) for kind, fs in groups if fs
    ]
    return sorted(groups, key=lambda g: SEVERITIES.index(g[1][0].severity))


def _summary(groups: list[tuple[str, list[FleetFinding]]]) -> Rows:
    """Findings counted per kind and severity, in the order of ``_by_kind``."""
    rows = []
    for kind, of_kind in groups:
        row: Row = {"kind": kind, "total": len(of_kind)}
        row.update({sev: sum(f.severity == sev for f in of_kind) for sev in SEVERITIES})
        rows.append(row)
    return rows


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


def _telemetry_only_causes(nodes: Rows) -> dict[str, Any]:
    """The telemetry-only GPU-hours of MIG-partitioned GPUs on nodes the inventory observed
    (the rest are node-hours it did not observe), and how many such nodes."""
    mig = [r for r in nodes if r["cause"] == "mig_partitioned"]
    return {
        "mig_partitioned_gpu_hours": sum(r["telemetry_only_gpu_hours"] for r in mig),
        "mig_partitioned_nodes": len({(r["cluster"], r["node_name"]) for r in mig}),
    }


def _findings(
    sources: Rows,
    daily: Rows,
    gap_days: list[date],
    thin_days: list[date],
    telemetry_only_days: list[date],
    rejected: Rows,
    current: Row | None,
    namespaces: Rows,
    degraded_gpus: Rows,
    fleet_now: Rows,
    blast: Rows,
    checks: Rows,
    telemetry_only: dict[str, Any] | None = None,
) -> list[FleetFinding]:
    """``telemetry_only``: the telemetry-only GPU-hours by cause (``_telemetry_only_causes``);
    without it all of them count as node-hours the inventory did not observe."""
    out: list[FleetFinding] = []

    def add(kind: str, *finding: str) -> None:
        out.append(FleetFinding(kind, Finding(*finding)))

    for s in sources:
        if not s["succeeded"]:
            finding = no_successful_collection(
                s, "its figures below are missing, not zero.", REMEDIATION[s["source"]]
            )
            out.append(FleetFinding("Evidence coverage", finding))
        elif s["failed"]:
            add(
                "Evidence coverage",
                "medium",
                f"{s['source']} collections failed: {s['failed']}",
                f"first error: {s['first_error'] or 'not recorded'} (collections.csv)",
                "Read the error in marts.collections (`annex status`), fix its cause, and "
                "rerun the collection; failed collections load nothing.",
            )
    if daily and gap_days:
        add(
            "Evidence coverage",
            "high",
            f"{len(gap_days)} of {len(daily)} days have no inventory evidence",
            "days: " + _days(gap_days) + " (coverage_daily.csv)",
            REMEDIATION["kubernetes"],
        )
    causes = telemetry_only or _telemetry_only_causes([])
    mig = causes["mig_partitioned_gpu_hours"]
    if mig:
        nodes = causes["mig_partitioned_nodes"]
        add(
            "Evidence coverage",
            "info",
            f"Telemetry covers {mig:,} GPU-hours of MIG-partitioned GPUs, which the GPU-hour "
            "figures do not count",
            f"on {nodes:,} node{'s' if nodes != 1 else ''} the inventory observed "
            "with MIG strategy single (or mixed without whole GPUs): annex counts their MIG "
            "slices in the capacity snapshot, not in capacity GPU-hours, so their telemetry "
            "is shown apart and not compared with allocation (telemetry_only_nodes.csv)",
            "Nothing to collect: read these GPUs' allocation in the MIG slice figures of the "
            "fleet summary (marts.fleet_summary.mig_slices_*); capacity GPU-hours count whole "
            "GPUs only.",
        )
    if current and current["telemetry_only_gpu_hours"] - mig > 0:
        add(
            "Evidence coverage",
            "high" if not current["capacity_gpu_hours"] else "medium",
            f"Telemetry covers {current['telemetry_only_gpu_hours'] - mig:,} GPU-hours the "
            "inventory did not observe",
            f"on {len(telemetry_only_days)} day{'s' if len(telemetry_only_days) > 1 else ''} "
            f"({_days(telemetry_only_days)}): no allocation "
            "or capacity is known for them, so they are not compared; their "
            f"{current['telemetry_only_idle_gpu_hours']:,.1f} GPU-hours idle by DCGM alone are "
            "shown apart, not as allocated-but-idle (coverage_daily.csv, namespaces.csv)",
            "Collect the inventory on a schedule over the whole telemetry window (Dagster "
            "cluster_inventory schedule, hourly), so that every telemetry hour lies between two "
            "inventory collections.",
        )
    if thin_days:
        add(
            "Evidence coverage",
            "medium",
            f"Telemetry covers under {TELEMETRY_COVERAGE_MIN:.0%} of capacity on "
            f"{len(thin_days)} days",
            "days: " + _days(thin_days) + " (coverage_daily.csv)",
            REMEDIATION["telemetry"],
        )
    by_source: dict[str, int] = {}
    for r in rejected:
        by_source[r["source"]] = by_source.get(r["source"], 0) + r["records"]
    for source, records in sorted(by_source.items()):
        add(
            "Rejected input",
            "low",
            f"{source} records rejected: {records}",
            "reasons: "
            + ", ".join(sorted({r["reason_code"] for r in rejected if r["source"] == source}))
            + " (rejected.csv)",
            'Inspect them with `annex sql -c "select * from marts.rejected_records"` and fix '
            "the producer; they are kept with their reason, nothing else was lost.",
        )
    for g in degraded_gpus:
        if not g["corroborated"]:
            continue
        evidence = [f"{g['measurements']} below their cohort's median: {g['benchmarks']}"]
        if g["xid_last"] is not None:
            evidence.append(f"XID {g['xid_last']}")
        if g["max_gpu_temp_c"] is not None:
            evidence.append(f"up to {g['max_gpu_temp_c']:.0f} °C")
        if g["sm_clock_ratio"] is not None:
            evidence.append(f"SM clock {_percent(g['sm_clock_ratio'])} of its cohort's")
        add(
            "Degraded GPU",
            "high" if g["xid_last"] is not None else "medium",
            f"{g['gpu_uuid']} on {g['node_name']} is degraded: {g['verdict']}",
            "; ".join(evidence) + " (degraded.csv)",
            DEGRADED_REMEDIATION,
        )
    uncorroborated = [g for g in degraded_gpus if not g["corroborated"]]
    if uncorroborated:
        add(
            "Degraded GPU",
            "medium",
            f"{len(uncorroborated)} GPUs are slow without telemetry corroboration",
            "below their cohort's threshold: "
            + ", ".join(f"{g['gpu_uuid']} on {g['node_name']}" for g in uncorroborated[:5])
            + (f" and {len(uncorroborated) - 5} more" if len(uncorroborated) > 5 else "")
            + " (degraded.csv)",
            "Rerun the benchmark on them; check NVLink/PCIe and HBM.",
        )
    if current and current["capacity_gpu_hours"]:
        share = (current["unavailable_gpu_hours"] or 0) / current["capacity_gpu_hours"]
        if share > UNAVAILABLE_SHARE_MAX:
            add(
                "Capacity",
                "medium",
                f"{share:.1%} of capacity GPU-hours were unavailable",
                "unhealthy devices or NotReady/cordoned nodes (pools.csv, domains.csv)",
                "Find the nodes in marts.gpu_hours_daily_by_node (unavailable_gpu_hours) "
                "and repair or remove them from the pool.",
            )
    for r in namespaces:
        if (
            r["idle_share"] is not None
            and r["idle_share"] > IDLE_SHARE_MAX
            and (r["allocated_observed_gpu_hours"] or 0) >= IDLE_MIN_GPU_HOURS
        ):
            add(
                "Idle allocation",
                "medium",
                f"Team {r['namespace']} left {r['idle_share']:.0%} of its allocated GPU-hours idle",
                f"{r['allocated_idle_gpu_hours']:,.1f} of the "
                f"{r['allocated_observed_gpu_hours']:,.1f} allocated GPU-hours both sources saw "
                f"on {r['cluster']} "
                "(namespaces.csv, idle_gpus.csv)",
                "Ask the team to release idle GPUs (stop idle notebooks, right-size "
                "requests) or set an idle-reclaim policy.",
            )
    for f in fleet_now:
        if f["snapshot_consistent"] is False and f["nodes"]:
            add(
                "Inventory consistency",
                "medium",
                f"The latest inventory of {f['cluster']} is not a consistent snapshot",
                "a list restarted after 410 Expired (fleet_now.csv)",
                "Raise kubernetes.page_size or max_list_restarts and collect again.",
            )
    for b in blast:
        if b["domains_at_level"] > 1 and b["blast_radius_share"] >= 0.5:
            add(
                "Failure domain",
                "low",
                f"Failure domain {b['failure_domain']} holds {b['blast_radius_share']:.0%} of "
                f"{b['cluster']}'s GPUs",
                f"{b['blast_radius_gpus']} GPUs, {b['blast_radius_workload_gpus']} in use "
                f"({b['level_label']}; blast_radius.csv)",
                "Spread large jobs and spare capacity across domains, or accept the risk "
                "in writing.",
            )
    if not checks:
        add(
            "Asset check",
            "medium",
            "No asset checks were evaluated in the period",
            "marts.check_results has no rows for it (checks.csv)",
            "Run the collections through Dagster (`annex run`), which evaluates the checks.",
        )
    for c in checks:
        if c["last_passed"] is False:
            add(
                "Asset check",
                "high" if c["severity"] == "ERROR" else "medium",
                f"Check {c['check_name']} on {c['asset']} is failing",
                f"{c['failures']} of {c['evaluations']} evaluations failed; latest: "
                f"{c['last_details']} (checks.csv)",
                "Open the asset in the Dagster UI, read the check's metadata, fix the "
                "input and rerun the collection.",
            )
        elif c["failures"]:
            add(
                "Asset check",
                "info",
                f"Check {c['check_name']} on {c['asset']} failed earlier, passes now",
                f"{c['failures']} of {c['evaluations']} evaluations failed (checks.csv)",
                "None needed; confirm the cause was fixed.",
            )
    # high first; within a severity by kind, in the order the rules found them
    return sorted(out, key=lambda f: (SEVERITIES.index(f.severity), KINDS.index(f.kind)))


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

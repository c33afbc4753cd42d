"""A small warehouse with known rows for the report tests: October 2026 on three nodes.

The rows go straight into the tables the report marts derive from (the marts' own tests cover
how collections produce them), so every figure a report shows can be worked out by hand:

* nodes n1, n2 (pool ``h100``, failure domain ``eu-west``) and n3 (pool ``a100``,
  ``us-east``), 8 GPUs each; inventory hours on 29 days (October 10 and 11 are missing);
  per hour n1/n2: 6 workload, 1 balloon, 1 free; n3: 4 workload, 2 free, 2 unavailable.
  Capacity 16,704 GPU-hours; workload 11,136; balloon 1,392; free 2,784; unavailable 1,392.
* telemetry on every inventory hour of n1 and n2, on n3 only until October 19: 14,400
  telemetry GPU-hours (86.2 % of capacity), 12 thin days (October 20 to 31).
* teams: team-a on n1 and team-b on n2 (4,176 GPU-hours each), team-c on n3 (2,784); team-b
  idles half of its hours (2,088 idle GPU-hours).
* September 30 (the previous period): 576 capacity GPU-hours, all workload.
* attestation: per day n1 144 verified, n2 72 verified + 72 unattested, n3 72 unattested +
  24 unknown: 11,136 allocated, 6,264 verified, 4,176 unattested, 696 unknown (60.0 %).
* collections: kubernetes and telemetry daily, one failed telemetry collection, attestation,
  no gpubench; 3 rejected telemetry records; a failing and a passing asset check.

``names`` replaces the scenario's names (pool, domain, namespace, node, locator...) so the
hostile-input test can put attacker-controlled strings where cluster strings go.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

from annex.settings import WarehouseSettings
from warehouse import Warehouse
from warehouse.models.utilisation import rebuild_daily_rollups

CLUSTER = "c1"
CAPACITY = 16_704.0
WORKLOAD = 11_136.0
BALLOON = 1_392.0
FREE = 2_784.0
UNAVAILABLE = 1_392.0
TELEMETRY = 14_400
TEAM_A = 4_176.0
TEAM_C = 2_784.0
TEAM_B_IDLE = 2_088.0
ATTESTED_ALLOCATED = 11_136.0
ATTESTED_VERIFIED = 6_264.0
ATTESTED_UNATTESTED = 4_176.0
ATTESTED_UNKNOWN = 696.0


@dataclass
class Names:
    pool_h100: str = "h100"
    pool_a100: str = "a100"
    domain_eu: str = "eu-west"
    domain_us: str = "us-east"
    team_a: str = "team-a"
    team_b: str = "team-b"
    team_c: str = "team-c"
    node_1: str = "n1"
    locator: str = "prometheus series 17"
    reason: str = "malformed_sample"
    run_1: str = "run-1"
    job_a: str = "train-a"
    check_detail: str = "newest sample 3 h old"
    extra: dict[str, str] = field(default_factory=dict)


def build_scenario(directory: Path, names: Names | None = None) -> Warehouse:
    """Create, fill and publish the scenario's warehouse in ``directory``."""
    n = names or Names()
    wh = Warehouse(WarehouseSettings(path=directory / "scenario.duckdb", lock_timeout_seconds=5))
    with wh.writer() as con:
        con.execute(
            "CREATE TEMP TABLE nodes (node VARCHAR, pool VARCHAR, domain VARCHAR, "
            "workload DOUBLE, balloon DOUBLE, free DOUBLE, unavailable DOUBLE, "
            "telemetry_until DATE, team VARCHAR, idle DOUBLE, job VARCHAR, run VARCHAR, "
            "verified DOUBLE, unattested DOUBLE, unknown DOUBLE)"
        )
        con.executemany(
            "INSERT INTO nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                [
                    n.node_1,
                    n.pool_h100,
                    n.domain_eu,
                    6,
                    1,
                    1,
                    0,
                    date(2026, 12, 1),
                    n.team_a,
                    0,
                    n.job_a,
                    n.run_1,
                    144,
                    0,
                    0,
                ],
                [
                    "n2",
                    n.pool_h100,
                    n.domain_eu,
                    6,
                    1,
                    1,
                    0,
                    date(2026, 12, 1),
                    n.team_b,
                    3,
                    "train-b",
                    None,
                    72,
                    72,
                    0,
                ],
                [
                    "n3",
                    n.pool_a100,
                    n.domain_us,
                    4,
                    0,
                    2,
                    2,
                    date(2026, 10, 20),
                    n.team_c,
                    0,
                    "train-c",
                    "run-3",
                    0,
                    72,
                    24,
                ],
            ],
        )
        hours = """
            CREATE TEMP TABLE hours AS
            SELECT h AS hour, CAST(h AS DATE) AS day
            FROM range(TIMESTAMP '2026-10-01', TIMESTAMP '2026-11-01', INTERVAL 1 HOUR) t(h)
            WHERE CAST(h AS DATE) NOT IN (DATE '2026-10-10', DATE '2026-10-11')
            UNION ALL
            SELECT h, CAST(h AS DATE)
            FROM range(TIMESTAMP '2026-09-30', TIMESTAMP '2026-10-01', INTERVAL 1 HOUR) t(h)
        """
        con.execute(hours)
        con.execute(
            """
            INSERT INTO marts.node_gpu_hours
            SELECT ?, node, hour, day, node || '-uid', pool, 'NVIDIA-H100', domain, 1.0,
                   8, 8,
                   CASE WHEN day < DATE '2026-10-01' THEN 8 ELSE workload END,
                   CASE WHEN day < DATE '2026-10-01' THEN 0 ELSE balloon END,
                   CASE WHEN day < DATE '2026-10-01' THEN 0 ELSE free END,
                   CASE WHEN day < DATE '2026-10-01' THEN 0 ELSE unavailable END,
                   0,
                   CASE WHEN day < telemetry_until THEN 8 ELSE 0 END,
                   CASE WHEN day < telemetry_until THEN workload ELSE 0 END,
                   CASE WHEN day < telemetry_until THEN idle ELSE 0 END,
                   CASE WHEN day < telemetry_until THEN 4.0 ELSE 0 END,
                   CASE WHEN day < telemetry_until THEN 8 ELSE 0 END,
                   0, 0, 0, 0, 0, 0,
                   CASE WHEN day < telemetry_until THEN 8 * 700 * 3600.0 ELSE 0 END,
                   0, TIMESTAMP '2026-11-01 00:00:00',
                   CASE WHEN day < telemetry_until THEN workload ELSE 0 END, 0, 0
            FROM nodes, hours
            """,
            [CLUSTER],
        )
        con.execute(
            """
            INSERT INTO marts.namespace_gpu_hours
            SELECT ?, team, hour, day, workload, balloon,
                   CASE WHEN day < telemetry_until THEN workload ELSE 0 END,
                   CASE WHEN day < telemetry_until THEN idle ELSE 0 END,
                   CASE WHEN day < telemetry_until THEN workload - idle ELSE 0 END,
                   CASE WHEN day < telemetry_until THEN workload ELSE 0 END,
                   0, 0, 0, 0, 0, 0, 0, 0, TIMESTAMP '2026-11-01 00:00:00',
                   CASE WHEN day < telemetry_until THEN workload ELSE 0 END, 0, 0
            FROM nodes, hours
            WHERE day >= DATE '2026-10-01'
            """,
            [CLUSTER],
        )
        con.execute(
            """
            INSERT INTO marts.gpu_hourly (cluster, gpu_uuid, hour, day, node_name, gpu_model,
                samples, busy_signal, busy, workload_pod, workload_namespace,
                pod_label_fraction, pod_category, refreshed_at)
            SELECT ?, 'GPU-b1', hour, day, 'n2', 'NVIDIA H100', 60, 'gr_engine_active', 0.01,
                   'train-b-0', ?, 1.0, 'workload', TIMESTAMP '2026-11-01 00:00:00'
            FROM hours WHERE day = DATE '2026-10-05' AND hour < TIMESTAMP '2026-10-05 10:00:00'
            """,
            [CLUSTER, n.team_b],
        )
        # written in SQL, not by refresh_gpu_hourly: build its daily rollups (marts.gpu_daily)
        rebuild_daily_rollups(con, date(2026, 9, 1), date(2026, 11, 30))
        con.execute(
            """
            INSERT INTO marts.attestation_gpu_hours
            SELECT DISTINCT ?, day, node, team, job, run, verified + unattested + unknown,
                   verified, 0, unattested, unknown, TIMESTAMP '2026-11-01 00:00:00'
            FROM nodes, hours WHERE day >= DATE '2026-10-01'
            """,
            [CLUSTER],
        )
        con.execute(
            """
            INSERT INTO audit.collections (collection_id, source, cluster, started_at,
                finished_at, status, rejected_count, error, annex_version)
            SELECT source || '-' || strftime(day, '%m%d'), source, ?, day + INTERVAL 1 HOUR,
                   day + INTERVAL 61 MINUTE, 'succeeded', 0, NULL, '0.1.0'
            FROM (SELECT DISTINCT day FROM hours WHERE day >= DATE '2026-10-01'),
                 (VALUES ('kubernetes'), ('telemetry')) s(source)
            """,
            [CLUSTER],
        )
        con.executemany(
            "INSERT INTO audit.collections (collection_id, source, cluster, started_at, "
            "finished_at, status, rejected_count, error, annex_version) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, '0.1.0')",
            [
                [
                    "telemetry-fail",
                    "telemetry",
                    CLUSTER,
                    datetime(2026, 10, 12, 3),
                    datetime(2026, 10, 12, 3, 1),
                    "failed",
                    None,
                    "prometheus answered 503",
                ],
                [
                    "telemetry-rej",
                    "telemetry",
                    CLUSTER,
                    datetime(2026, 10, 13, 3),
                    datetime(2026, 10, 13, 3, 1),
                    "succeeded",
                    3,
                    None,
                ],
                [
                    "attestation-1",
                    "attestation",
                    CLUSTER,
                    datetime(2026, 10, 31, 22),
                    datetime(2026, 10, 31, 22, 5),
                    "succeeded",
                    0,
                    None,
                ],
            ],
        )
        con.executemany(
            "INSERT INTO audit.rejected (collection_id, source, cluster, locator, reason_code, "
            "message, raw, raw_truncated, raw_bytes, rejected_at) "
            "VALUES (?, 'telemetry', ?, ?, ?, 'bad', NULL, false, 0, ?)",
            [
                ["telemetry-rej", CLUSTER, n.locator, n.reason, datetime(2026, 10, 13, 3)]
                for _ in range(3)
            ]
            + [["telemetry-rej", CLUSTER, "september", "other", datetime(2026, 9, 30, 3)]],
        )
        con.executemany(
            "INSERT INTO audit.check_results (checked_at, check_name, asset, cluster, "
            "collection_id, passed, severity, blocking, run_id, details) "
            "VALUES (?, ?, ?, ?, NULL, ?, ?, false, NULL, ?)",
            [
                [
                    datetime(2026, 10, 2),
                    "inventory_fresh",
                    "cluster_inventory",
                    CLUSTER,
                    True,
                    "ERROR",
                    '{"age_minutes": 3}',
                ],
                [
                    datetime(2026, 10, 30),
                    "gpu_telemetry_fresh",
                    "gpu_telemetry",
                    CLUSTER,
                    True,
                    "WARN",
                    '{"age_minutes": 1}',
                ],
                [
                    datetime(2026, 10, 31),
                    "gpu_telemetry_fresh",
                    "gpu_telemetry",
                    CLUSTER,
                    False,
                    "WARN",
                    _json_string(n.check_detail),
                ],
            ],
        )
        con.executemany(
            "INSERT INTO core.attestation_records (cluster, record_id, submission_id, "
            "received_at, node_name, boot_id, subject_kind, provider, token_role, gpu_uuid, "
            "token_sha256, issued_at, valid_until, assurance_tier, verdict, reasons, detail, "
            "collector_verdict, day, collection_id, loaded_at) VALUES "
            "(?, ?, 's', ?, ?, 'b1', 'gpu', 'nvidia-nras', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "'attestation-1', ?)",
            [
                [
                    CLUSTER,
                    f"r{i}",
                    datetime(2026, 10, 31, 21, i),
                    "n2",
                    "overall",
                    None,
                    f"t{i}",
                    datetime(2026, 10, 31, 21, i),
                    datetime(2026, 10, 31, 23),
                    "none",
                    "fail",
                    ["debug_enabled"],
                    "debug mode on",
                    "fail",
                    date(2026, 10, 31),
                    datetime(2026, 10, 31, 22),
                ]
                for i in range(3)
            ]
            + [
                [
                    CLUSTER,
                    "g1",
                    datetime(2026, 10, 31, 21),
                    n.node_1,
                    "detached",
                    "GPU-a1",
                    "tg1",
                    datetime(2026, 10, 31, 21),
                    datetime(2026, 10, 31, 23),
                    "verified",
                    "pass",
                    [],
                    None,
                    "pass",
                    date(2026, 10, 31),
                    datetime(2026, 10, 31, 22),
                ]
            ],
        )
    wh.publish()
    return wh


def _json_string(text: str) -> str:
    import json

    return json.dumps({"detail": text})

"""Attestation coverage by exact interval arithmetic: a day of two nodes checked by hand (a
reboot, an expiry, a failure mid-run), then one test per rule: unknown nodes, too few attested
GPUs, a CVM token alone, boot changes and later fails ending windows, same-boot matching, and
refreshes that rebuild only the days new evidence touched."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta

import duckdb
import pyarrow as pa

from collectors.attestation.schema import ATTESTATION_RECORDS, ATTESTATION_SUBMISSIONS
from warehouse import Warehouse, load_collection
from warehouse.models.attestation import ATTESTATION_MODEL
from warehouse.models.attestation_coverage import refresh_attestation_coverage

CLUSTER = "c"
DAY = datetime(2025, 3, 10)


def at(clock: str, day: int = 0) -> datetime:
    """``"06:20"`` on the scenario's day (plus ``day`` days)."""
    hours, minutes = clock.split(":")
    return DAY + timedelta(days=day, hours=int(hours), minutes=int(minutes))


class Evidence:
    """Submissions as the verifier would record them: rows of collectors/attestation/schema.py."""

    def __init__(self) -> None:
        self.submissions: list[dict] = []
        self.records: list[dict] = []

    def submit(
        self,
        node: str,
        boot: str,
        when: datetime,
        *,
        gpus: int = 2,
        gpu: str | None = "verified",
        cpu: bool = True,
        minutes: int = 60,
        failing_gpu: int | None = None,
        reasons: Sequence[str] = ("debug_enabled",),
        first_gpu: int = 0,
    ) -> None:
        """One submission at ``when``: an NRAS result for ``gpus`` of the node's GPUs from
        number ``first_gpu`` (``gpu``: verified, failed, self_reported or None) and, with
        ``cpu``, a passing Azure Attestation token; every token valid from ``when`` for
        ``minutes``. ``failing_gpu`` fails that GPU's token (and so the overall one, as the
        verifier does, N16)."""
        submission_id = f"{node}/{boot}/{when:%d%H%M}"
        numbers = range(first_gpu, first_gpu + gpus)
        devices = [(f"{node}-gpu{i}", f"{node}-ueid{i}") for i in numbers]
        self.submissions.append(
            self._row(
                ATTESTATION_SUBMISSIONS,
                submission_id=submission_id,
                node_name=node,
                boot_id=boot,
                received_at=when,
                gpu_index_map=[(f"GPU-{i}", uuid) for i, (uuid, _) in enumerate(devices)],
            )
        )
        until = when + timedelta(minutes=minutes)
        common = {
            "submission_id": submission_id,
            "node_name": node,
            "boot_id": boot,
            "received_at": when,
            "issued_at": when,
            "valid_from": when,
            "valid_until": until,
        }
        if gpu is not None:
            verdicts = {
                "verified": ("nvidia-nras", "pass", "verified", []),
                "failed": ("nvidia-nras", "fail", "none", list(reasons)),
                "self_reported": (
                    "nvidia-local",
                    "unverifiable",
                    "self_reported",
                    ["self_reported"],
                ),
            }
            provider, verdict, tier, why = verdicts[gpu]
            if failing_gpu is not None:
                verdict, tier, why = "fail", "none", ["policy_fail"]
            overall = f"{submission_id}/overall"
            self.records.append(
                self._row(
                    ATTESTATION_RECORDS,
                    **common,
                    record_id=overall,
                    token_sha256=overall,
                    jti=overall,
                    subject_kind="gpu",
                    provider=provider,
                    token_role="overall",
                    verdict=verdict,
                    assurance_tier=tier,
                    reasons=why,
                )
            )
            for index, (uuid, ueid) in enumerate(devices):
                key = f"GPU-{index}"
                failing = index == failing_gpu
                self.records.append(
                    self._row(
                        ATTESTATION_RECORDS,
                        **common,
                        record_id=f"{submission_id}/{key}",
                        token_sha256=f"{submission_id}/{key}",
                        jti=f"{submission_id}/{key}",
                        subject_kind="gpu",
                        provider=provider,
                        token_role="detached",
                        parent_record_id=overall,
                        submod_key=key,
                        gpu_uuid=uuid,
                        device_ueid=ueid,
                        verdict="fail" if failing else verdict,
                        assurance_tier="none" if failing else tier,
                        reasons=["measurement_mismatch"] if failing else why,
                    )
                )
        if cpu:
            token = f"{submission_id}/maa"
            self.records.append(
                self._row(
                    ATTESTATION_RECORDS,
                    **common,
                    record_id=token,
                    token_sha256=token,
                    jti=token,
                    subject_kind="cpu_tee",
                    provider="azure-maa",
                    token_role="single",
                    tee_type="sevsnpvm",
                    verdict="pass",
                    assurance_tier="verified",
                    reasons=[],
                )
            )

    @staticmethod
    def _row(schema: pa.Schema, **values: object) -> dict:
        row: dict = dict.fromkeys(schema.names)
        row.update(values)
        return row

    def batches(self) -> Iterator[tuple[str, pa.RecordBatch]]:
        yield (
            "attestation_submissions",
            pa.RecordBatch.from_pylist(self.submissions, schema=ATTESTATION_SUBMISSIONS),
        )
        yield (
            "attestation_records",
            pa.RecordBatch.from_pylist(self.records, schema=ATTESTATION_RECORDS),
        )


def load(wh: Warehouse, evidence: Evidence) -> None:
    result = load_collection(
        wh, ATTESTATION_MODEL, cluster=CLUSTER, batches=evidence.batches(), publish=False
    )
    assert result.rejected_count == 0


def inventory(
    wh: Warehouse,
    nodes: Sequence[dict],
    allocations: Sequence[dict],
    *,
    horizon: datetime,
    collection: str = "k8s-1",
) -> None:
    """Kubernetes facts inserted directly (the kubernetes model's tests cover how they get
    there), with a successful collection whose start is the inventory horizon."""
    with wh.writer() as con:
        con.execute(
            "INSERT INTO audit.collections (collection_id, source, cluster, started_at, "
            "finished_at, status) VALUES (?, 'kubernetes', ?, ?, ?, 'succeeded')",
            [collection, CLUSTER, horizon, horizon],
        )
        for n in nodes:
            con.execute(
                "INSERT INTO core.nodes (cluster, node_uid, node_name, gpu_capacity, "
                "gpu_allocatable, boot_id, creation_timestamp, content_hash, valid_from, "
                "valid_to, collection_id) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)",
                [
                    CLUSTER,
                    "uid-" + n["name"],
                    n["name"],
                    n.get("capacity", 2),
                    n.get("capacity", 2),
                    n.get("boot"),
                    n.get("created"),
                    n["valid_from"],
                    n.get("valid_to"),
                    collection,
                ],
            )
        for a in allocations:
            con.execute(
                "INSERT INTO core.gpu_allocations (cluster, pod_uid, namespace, pod_name, "
                "job_name, node_name, resource_name, gpus, category, valid_from, "
                "valid_from_source, valid_to, opened_collection_id) "
                "VALUES (?, ?, ?, ?, ?, ?, 'nvidia.com/gpu', ?, ?, ?, 'scheduled', ?, ?)",
                [
                    CLUSTER,
                    "uid-" + a["pod"],
                    a.get("namespace", "team-a"),
                    a["pod"],
                    a.get("job"),
                    a["node"],
                    a.get("gpus", 2),
                    a.get("category", "workload"),
                    a["valid_from"],
                    a.get("valid_to"),
                    collection,
                ],
            )


def refresh(wh: Warehouse, **kwargs: object) -> dict[str, int]:
    with wh.writer() as con:
        return refresh_attestation_coverage(con, **kwargs)  # type: ignore[arg-type]


def query(wh: Warehouse, sql: str, params: list | None = None) -> list[tuple]:
    with duckdb.connect(str(wh.path), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def hours_by_node(wh: Warehouse) -> dict[str, tuple[float, float, float, float, float]]:
    """node -> (allocated, verified, self_reported, unattested, unknown) GPU-hours."""
    rows = query(
        wh,
        "SELECT node_name, sum(allocated_gpu_hours), sum(verified_gpu_hours), "
        "sum(self_reported_gpu_hours), sum(unattested_gpu_hours), sum(unknown_gpu_hours) "
        "FROM marts.attestation_gpu_hours GROUP BY node_name",
    )
    return {node: tuple(round(v, 6) for v in values) for node, *values in rows}


def windows(wh: Warehouse, node: str, evidence: str) -> list[tuple[datetime, datetime]]:
    return [
        (start, end)
        for start, end in query(
            wh,
            "SELECT window_start, window_end FROM marts.attestation_node_windows "
            "WHERE node_name = ? AND evidence = ? ORDER BY window_start",
            [node, evidence],
        )
    ]


def test_a_hand_checked_day_of_two_nodes_a_reboot_an_expiry_and_a_failure(
    wh: Warehouse,
) -> None:
    # Inventory: node-a and node-b with 2 GPUs each from 00:00. node-a reboots: the inventory
    # sees boot a2 from 06:00. node-c is not in the inventory at all.
    inventory(
        wh,
        [
            {"name": "node-a", "boot": "a1", "valid_from": at("00:00"), "valid_to": at("06:00")},
            {"name": "node-a", "boot": "a2", "valid_from": at("06:00")},
            {"name": "node-b", "boot": "b1", "valid_from": at("00:00")},
        ],
        [
            {
                "pod": "p1",
                "job": "train",
                "node": "node-a",
                "valid_from": at("00:30"),
                "valid_to": at("09:00"),
            },
            {
                "pod": "p2",
                "job": "train",
                "node": "node-b",
                "valid_from": at("00:30"),
                "valid_to": at("05:00"),
            },
            {
                "pod": "p3",
                "job": "eval",
                "namespace": "team-b",
                "node": "node-c",
                "gpus": 1,
                "valid_from": at("02:00"),
                "valid_to": at("04:00"),
            },
        ],
        horizon=at("00:00", day=1),
    )
    ev = Evidence()
    # node-a, boot a1: tokens every 50 min, each valid 60 min -> covered 01:00-03:40; then no
    # token until 05:30 (the 02:40 tokens expire at 03:40: a gap); the 05:30 tokens would last
    # to 06:30 but the reboot the inventory saw at 06:00 ends them at 06:00.
    for clock in ("01:00", "01:50", "02:40", "05:30"):
        ev.submit("node-a", "a1", at(clock))
    # node-a, boot a2: covered 06:20-08:10.
    for clock in ("06:20", "07:10"):
        ev.submit("node-a", "a2", at(clock))
    # node-b: covered 01:00-03:40 by its tokens, but at 03:00 its GPUs fail attestation (debug
    # enabled): the later fail ends the GPU windows at 03:00, so verified only 01:00-03:00
    # (its CVM token alone covers to 03:40, which is not enough). From 03:30 its local verifier
    # reports the GPUs for an hour: self-reported 03:30-04:30.
    for clock in ("01:00", "01:50", "02:40"):
        ev.submit("node-b", "b1", at(clock))
    ev.submit("node-b", "b1", at("03:00"), gpu="failed", cpu=False)
    ev.submit("node-b", "b1", at("03:30"), gpu="self_reported", cpu=False)
    load(wh, ev)

    counts = refresh(wh)
    assert counts["clusters"] == 1 and counts["days"] >= 1

    # node-a: p1 holds 2 GPUs 00:30-09:00 = 8.5 h -> 17 GPU-h. Verified 01:00-03:40 (2 h 40),
    # 05:30-06:00 (0 h 30), 06:20-08:10 (1 h 50) = 5 h -> 10 GPU-h; the rest, 7 GPU-h, on a
    # node the inventory knew: unattested.
    # node-b: p2 holds 2 GPUs 00:30-05:00 = 4.5 h -> 9 GPU-h. Verified 01:00-03:00 = 2 h -> 4;
    # self-reported 03:30-04:30 = 1 h -> 2; unattested 9 - 4 - 2 = 3.
    # node-c: p3 holds 1 GPU 02:00-04:00 on a node the inventory never saw -> 2 GPU-h unknown.
    assert hours_by_node(wh) == {
        "node-a": (17.0, 10.0, 0.0, 7.0, 0.0),
        "node-b": (9.0, 4.0, 2.0, 3.0, 0.0),
        "node-c": (2.0, 0.0, 0.0, 0.0, 2.0),
    }
    assert query(
        wh,
        "SELECT day, allocated_gpu_hours, verified_gpu_hours, self_reported_gpu_hours, "
        "unattested_gpu_hours, unknown_gpu_hours, round(verified_share, 6) "
        "FROM marts.attestation_coverage_daily",
    ) == [(DAY.date(), 28.0, 14.0, 2.0, 10.0, 2.0, round(14 / 26, 6))]
    assert query(
        wh,
        "SELECT namespace, job_name, sum(allocated_gpu_hours), sum(verified_gpu_hours) "
        "FROM marts.attestation_gpu_hours GROUP BY ALL ORDER BY ALL",
    ) == [("team-a", "train", 26.0, 14.0), ("team-b", "eval", 2.0, 0.0)]

    assert windows(wh, "node-a", "verified") == [
        (at("01:00"), at("03:40")),
        (at("05:30"), at("06:00")),
        (at("06:20"), at("08:10")),
    ]
    assert windows(wh, "node-b", "gpu_verified") == [(at("01:00"), at("03:00"))]
    assert windows(wh, "node-b", "cpu_verified") == [(at("01:00"), at("03:40"))]
    assert windows(wh, "node-b", "gpu_self_reported") == [(at("03:30"), at("04:30"))]
    assert query(
        wh,
        "SELECT DISTINCT boot_id FROM marts.attestation_node_windows "
        "WHERE node_name = 'node-a' AND window_start >= ? ORDER BY 1",
        [at("06:00")],
    ) == [("a2",)]

    # What each node last proved, and why tokens did not pass.
    assert query(
        wh,
        "SELECT subject, provider, verdict, node_in_inventory FROM marts.attestation_status "
        "WHERE node_name = 'node-b' ORDER BY subject",
    ) == [
        ("cpu_tee", "azure-maa", "pass", True),
        ("gpu:node-b-gpu0", "nvidia-local", "unverifiable", True),
        ("gpu:node-b-gpu1", "nvidia-local", "unverifiable", True),
        ("gpu:platform", "nvidia-local", "unverifiable", True),
    ]
    assert query(
        wh,
        "SELECT verdict, provider, reason, records, nodes FROM marts.attestation_failures "
        "ORDER BY ALL",
    ) == [
        ("fail", "nvidia-nras", "debug_enabled", 3, 1),
        ("unverifiable", "nvidia-local", "self_reported", 3, 1),
    ]

    # Nothing new: nothing rebuilt, and a forced rebuild gives the same figures.
    assert refresh(wh)["days"] == 0
    before = hours_by_node(wh)
    assert refresh(wh, since=DAY.date())["days"] >= 1
    assert hours_by_node(wh) == before


def test_allocation_on_a_node_without_gpu_capacity_is_unknown_not_unattested(
    wh: Warehouse,
) -> None:
    inventory(
        wh,
        [
            {"name": "cpu-node", "capacity": 0, "valid_from": at("00:00")},
            # gpu-node joins the inventory only at 02:00.
            {"name": "gpu-node", "valid_from": at("02:00")},
        ],
        [
            {
                "pod": "p1",
                "node": "cpu-node",
                "gpus": 1,
                "valid_from": at("01:00"),
                "valid_to": at("02:00"),
            },
            {"pod": "p2", "node": "gpu-node", "valid_from": at("01:00"), "valid_to": at("03:00")},
            {
                "pod": "balloon",
                "node": "gpu-node",
                "category": "balloon",
                "valid_from": at("01:00"),
                "valid_to": at("03:00"),
            },
        ],
        horizon=at("12:00"),
    )
    refresh(wh)
    # p1: 1 GPU-h on a node with no GPU capacity: unknown. p2: 01:00-02:00 before the inventory
    # knew gpu-node (2 GPU-h unknown), 02:00-03:00 known without evidence (2 unattested).
    # Balloon (placeholder) holdings are not workload GPU-hours.
    assert hours_by_node(wh) == {
        "cpu-node": (1.0, 0.0, 0.0, 0.0, 1.0),
        "gpu-node": (4.0, 0.0, 0.0, 2.0, 2.0),
    }


def test_a_node_first_seen_late_counts_its_gpus_from_its_creation(wh: Warehouse) -> None:
    # annex first collected node-a at 04:00, but the node was created at 00:30: its first
    # version's GPU capacity stands from then. A later version (04:00 -> 06:00 -> changed
    # capacity) does not reach back.
    inventory(
        wh,
        [
            {
                "name": "node-a",
                "boot": "a1",
                "created": at("00:30"),
                "valid_from": at("04:00"),
                "valid_to": at("06:00"),
            },
            {"name": "node-a", "capacity": 0, "boot": "a1", "valid_from": at("06:00")},
        ],
        [{"pod": "p1", "node": "node-a", "valid_from": at("00:00"), "valid_to": at("07:00")}],
        horizon=at("12:00"),
    )
    ev = Evidence()
    ev.submit("node-a", "a1", at("01:00"))  # covers 01:00-02:00 (its one-hour window)
    load(wh, ev)
    refresh(wh)
    assert windows(wh, "node-a", "verified") == [(at("01:00"), at("02:00"))]
    # 00:00-00:30 before the node existed: unknown (1 GPU-h); 00:30-06:00 known with 2 GPUs:
    # 2 GPU-h verified, 9 unattested; 06:00-07:00 the node reports no GPUs: unknown (2 GPU-h).
    assert hours_by_node(wh) == {"node-a": (14.0, 2.0, 0.0, 9.0, 3.0)}


def test_fewer_attested_gpus_than_the_node_has_do_not_cover_it(wh: Warehouse) -> None:
    inventory(
        wh,
        [{"name": "node-a", "capacity": 2, "boot": "a1", "valid_from": at("00:00")}],
        [{"pod": "p1", "node": "node-a", "valid_from": at("01:00"), "valid_to": at("02:00")}],
        horizon=at("12:00"),
    )
    ev = Evidence()
    ev.submit("node-a", "a1", at("01:00"), gpus=1)
    load(wh, ev)
    refresh(wh)
    assert windows(wh, "node-a", "gpu_verified") == []
    assert windows(wh, "node-a", "cpu_verified") == [(at("01:00"), at("02:00"))]
    assert hours_by_node(wh) == {"node-a": (2.0, 0.0, 0.0, 2.0, 0.0)}


def test_results_of_one_gpu_each_do_not_add_up_to_the_node(wh: Warehouse) -> None:
    # Two NRAS results overlap 01:30-02:00, each for one of the node's two GPUs: every result
    # must vouch for the whole node (GPUs are never pooled across results).
    inventory(
        wh,
        [{"name": "node-a", "capacity": 2, "boot": "a1", "valid_from": at("00:00")}],
        [{"pod": "p1", "node": "node-a", "valid_from": at("01:00"), "valid_to": at("03:00")}],
        horizon=at("12:00"),
    )
    ev = Evidence()
    ev.submit("node-a", "a1", at("01:00"), gpus=1)
    ev.submit("node-a", "a1", at("01:30"), gpus=1, first_gpu=1)
    load(wh, ev)
    refresh(wh)
    assert windows(wh, "node-a", "gpu_verified") == []


def test_a_cvm_token_without_gpu_tokens_covers_nothing(wh: Warehouse) -> None:
    inventory(
        wh,
        [{"name": "node-a", "boot": "a1", "valid_from": at("00:00")}],
        [{"pod": "p1", "node": "node-a", "valid_from": at("01:00"), "valid_to": at("02:00")}],
        horizon=at("12:00"),
    )
    ev = Evidence()
    ev.submit("node-a", "a1", at("01:00"), gpu=None)
    load(wh, ev)
    refresh(wh)
    assert windows(wh, "node-a", "cpu_verified") == [(at("01:00"), at("02:00"))]
    assert windows(wh, "node-a", "verified") == []
    assert hours_by_node(wh) == {"node-a": (2.0, 0.0, 0.0, 2.0, 0.0)}


def test_windows_end_at_a_boot_change_reported_by_the_node_and_at_a_later_gpu_fail(
    wh: Warehouse,
) -> None:
    inventory(
        wh,
        [
            {"name": "node-a", "boot": "a1", "valid_from": at("00:00")},
            {"name": "node-b", "boot": "b1", "valid_from": at("00:00")},
        ],
        [],
        horizon=at("12:00"),
    )
    ev = Evidence()
    # node-a: tokens of boot a1 at 01:00 (to 02:00); at 01:20 the node reports boot a2 (a
    # submission without tokens is enough): a1's windows end at 01:20; a2's own tokens cover
    # 01:20-02:20.
    ev.submit("node-a", "a1", at("01:00"))
    ev.submit("node-a", "a2", at("01:20"))
    # node-b: at 01:40 one of its two GPUs fails (measurement mismatch): that GPU's earlier
    # window ends at 01:40, so the node is no longer GPU-covered; its CVM stays covered.
    ev.submit("node-b", "b1", at("01:00"))
    ev.submit("node-b", "b1", at("01:40"), failing_gpu=1, cpu=False)
    load(wh, ev)
    refresh(wh)
    assert windows(wh, "node-a", "verified") == [
        (at("01:00"), at("01:20")),
        (at("01:20"), at("02:20")),
    ]
    assert [
        boot
        for (boot,) in query(
            wh,
            "SELECT boot_id FROM marts.attestation_node_windows "
            "WHERE node_name = 'node-a' AND evidence = 'verified' ORDER BY window_start",
        )
    ] == ["a1", "a2"]
    assert windows(wh, "node-b", "gpu_verified") == [(at("01:00"), at("01:40"))]
    assert windows(wh, "node-b", "cpu_verified") == [(at("01:00"), at("02:00"))]


def test_gpu_and_cvm_tokens_of_different_boots_do_not_cover_together(wh: Warehouse) -> None:
    inventory(
        wh,
        [{"name": "node-a", "valid_from": at("00:00")}],
        [{"pod": "p1", "node": "node-a", "valid_from": at("01:00"), "valid_to": at("02:00")}],
        horizon=at("12:00"),
    )
    ev = Evidence()
    # Two submissions at the same instant claim different boots (inconsistent agents): the GPU
    # tokens of one and the CVM token of the other never cover together.
    ev.submit("node-a", "a1", at("01:00"), cpu=False)
    ev.submit("node-a", "a2", at("01:00"), gpu=None)
    load(wh, ev)
    refresh(wh)
    assert windows(wh, "node-a", "verified") == []
    assert hours_by_node(wh) == {"node-a": (2.0, 0.0, 0.0, 2.0, 0.0)}


def test_a_token_failing_only_for_arriving_late_ends_no_window(wh: Warehouse) -> None:
    inventory(
        wh,
        [{"name": "node-a", "boot": "a1", "valid_from": at("00:00")}],
        [],
        horizon=at("12:00"),
    )
    ev = Evidence()
    ev.submit("node-a", "a1", at("01:00"))
    ev.submit("node-a", "a1", at("01:30"), gpu="failed", cpu=False, reasons=["expired"])
    ev.submit("node-a", "a1", at("01:40"), gpu="failed", cpu=False, reasons=["debug_enabled"])
    load(wh, ev)
    refresh(wh)
    # the expired token (issued 01:30) ends nothing; the debug-enabled one ends the GPUs at 01:40.
    assert windows(wh, "node-a", "gpu_verified") == [(at("01:00"), at("01:40"))]


def test_refreshes_rebuild_only_the_days_new_evidence_touched(wh: Warehouse) -> None:
    inventory(
        wh,
        [{"name": "node-a", "boot": "a1", "valid_from": at("00:00")}],
        [
            {
                "pod": "p1",
                "node": "node-a",
                "valid_from": at("00:00"),
                "valid_to": at("00:00", day=5),
            }
        ],
        horizon=at("00:00", day=5),
    )
    first = refresh(wh)
    assert first["days"] == 6  # day 0 to the horizon's day (inclusive)
    assert query(
        wh, "SELECT count(*), sum(unattested_gpu_hours) FROM marts.attestation_gpu_hours"
    ) == [(5, 5 * 48.0)]

    ev = Evidence()
    ev.submit("node-a", "a1", at("23:30", day=2))  # covers day 2 23:30 to day 3 00:30
    load(wh, ev)
    second = refresh(wh)
    refreshed = query(
        wh, "SELECT first_day, last_day FROM audit.attestation_refreshes ORDER BY refreshed_at"
    )
    assert second["days"] < first["days"]
    assert refreshed[-1][0] <= at("00:00", day=2).date()
    assert refreshed[-1][1] <= at("00:00", day=5).date()
    assert query(
        wh,
        "SELECT day, verified_gpu_hours FROM marts.attestation_gpu_hours "
        "WHERE verified_gpu_hours > 0 ORDER BY day",
    ) == [(at("00:00", day=2).date(), 1.0), (at("00:00", day=3).date(), 1.0)]
    assert query(wh, "SELECT sum(allocated_gpu_hours) FROM marts.attestation_gpu_hours") == [
        (5 * 48.0,)
    ]


def test_an_sgx_enclave_token_is_no_cvm_coverage(wh: Warehouse) -> None:
    # issue 35: Intel Trust Authority also attests SGX enclaves (claims under `sgx`): such a
    # token says nothing about the node's VM, so it covers no CPU time
    inventory(
        wh,
        [{"name": "node-a", "capacity": 2, "boot": "a1", "valid_from": at("00:00")}],
        [{"pod": "p1", "node": "node-a", "valid_from": at("01:00"), "valid_to": at("02:00")}],
        horizon=at("12:00"),
    )
    ev = Evidence()
    ev.submit("node-a", "a1", at("01:00"))
    cvm = ev.records[-1]
    cvm.update(provider="intel-ita", tee_type="sgx")
    load(wh, ev)
    refresh(wh)
    assert windows(wh, "node-a", "gpu_verified") == [(at("01:00"), at("02:00"))]
    assert windows(wh, "node-a", "cpu_verified") == []
    assert windows(wh, "node-a", "verified") == []


def test_a_gpu_failing_its_binding_fails_its_results_coverage(wh: Warehouse) -> None:
    # issue 35: one GPU under two keys of a result fails its binding in the merge; its result's
    # overall row fails too, so the remaining passing GPUs (enough for the node's capacity)
    # no longer cover the node
    inventory(
        wh,
        [{"name": "node-a", "capacity": 2, "boot": "a1", "valid_from": at("00:00")}],
        [{"pod": "p1", "node": "node-a", "valid_from": at("01:00"), "valid_to": at("02:00")}],
        horizon=at("12:00"),
    )
    ev = Evidence()
    ev.submit("node-a", "a1", at("01:00"), gpus=3)
    third = ev.records[3]
    assert third["submod_key"] == "GPU-2"
    third.update(gpu_uuid=ev.records[1]["gpu_uuid"], device_ueid=ev.records[1]["device_ueid"])
    load(wh, ev)
    refresh(wh)
    assert query(
        wh,
        "SELECT verdict, reasons FROM core.attestation_records WHERE token_role = 'overall'",
    ) == [("fail", ["device_mismatch"])]
    assert windows(wh, "node-a", "gpu_verified") == []

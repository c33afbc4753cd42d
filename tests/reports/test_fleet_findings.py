"""The fleet report's findings are grouped for a reader: one finding per degraded GPU with all
its slow benchmarks and their evidence, a summary by kind and severity, telemetry the inventory
did not observe named as such."""

from __future__ import annotations

from datetime import datetime

from reports.fleet import (
    _by_kind,
    _degraded_by_gpu,
    _findings,
    _kpi_comparison,
    _summary,
    _telemetry_only_causes,
)


def measurement(gpu: str, benchmark: str, ratio: float, **extra) -> dict:
    return {
        "cluster": "c1",
        "node_name": "node-1",
        "gpu_uuid": gpu,
        "benchmark": benchmark,
        "dtype": "bf16",
        "ratio_to_median": ratio,
        "verdict": "hot",
        "corroborated": True,
        "xid_last": None,
        "max_gpu_temp_c": 88.0,
        "sm_clock_ratio": 0.8,
        "measured_at": datetime(2026, 11, 28, 13, 41),
    } | extra


def test_one_finding_per_degraded_gpu_with_every_slow_benchmark() -> None:
    degraded = [
        measurement("GPU-1", "gemm", 0.61),
        measurement("GPU-1", "copy", 0.70, verdict="slow (clock-throttled)"),
        measurement("GPU-1", "softmax", 0.88, corroborated=False, verdict="slow, no telemetry"),
        measurement("GPU-1", "triad", 0.65, xid_last=79, max_gpu_temp_c=91.0),
        measurement("GPU-2", "gemm", 0.80),
        measurement("GPU-3", "gemm", 0.85, corroborated=False, verdict="slow, no telemetry"),
    ]
    gpus = [
        {k: v.replace("\u00a0", " ") if isinstance(v, str) else v for k, v in g.items()}
        for g in _degraded_by_gpu(degraded)
    ]
    assert [(g["gpu_uuid"], g["measurements"]) for g in gpus] == [
        ("GPU-1", 4),
        ("GPU-2", 1),
        ("GPU-3", 1),
    ]
    assert gpus[0]["benchmarks"] == (
        "copy bf16 70 %, gemm bf16 61 %, softmax bf16 88 %, triad bf16 65 %"
    )
    # the verdicts telemetry corroborated name it; the uncorroborated measurement is listed
    assert gpus[0]["verdict"] == "hot; slow (clock-throttled)"
    assert (gpus[0]["xid_last"], gpus[0]["max_gpu_temp_c"], gpus[0]["worst_ratio"]) == (
        79,
        91.0,
        0.61,
    )

    findings = _findings([], [], [], [], [], [], None, [], gpus, [], [], [])
    degraded_findings = [f for f in findings if f.kind == "Degraded GPU"]
    assert [(f.severity, f.title.split(" on ")[0]) for f in degraded_findings] == [
        ("high", "GPU-1"),  # an XID: high
        ("medium", "GPU-2"),
        ("medium", "1 GPUs are slow without telemetry corroboration"),
    ]
    assert "4 below their cohort's median: copy bf16 70 %, gemm bf16 61 %" in (
        degraded_findings[0].evidence.replace("\u00a0", " ")
    )
    assert "XID 79" in degraded_findings[0].evidence
    groups = _by_kind(findings)
    # no asset checks evaluated is a medium finding of its own kind
    assert _summary(groups) == [
        {"kind": "Degraded GPU", "total": 3, "high": 1, "medium": 2, "low": 0, "info": 0},
        {"kind": "Asset check", "total": 1, "high": 0, "medium": 1, "low": 0, "info": 0},
    ]


def test_telemetry_the_inventory_did_not_observe_is_a_finding_not_idle_allocation() -> None:
    day = datetime(2026, 11, 28).date()
    current = {
        "capacity_gpu_hours": 0.0,
        "telemetry_only_gpu_hours": 7560,
        "telemetry_only_idle_gpu_hours": 218.0,
        "unavailable_gpu_hours": 0.0,
    }
    findings = _findings([], [], [], [], [day], [], current, [], [], [], [], [])
    coverage = [f for f in findings if f.kind == "Evidence coverage"]
    assert len(coverage) == 1
    assert coverage[0].severity == "high"  # the inventory observed none of the period
    assert coverage[0].title == "Telemetry covers 7,560 GPU-hours the inventory did not observe"
    assert "218.0 GPU-hours idle by DCGM alone are shown apart" in coverage[0].evidence


def test_telemetry_of_mig_partitioned_gpus_is_named_apart_from_unobserved_hours() -> None:
    """A MIG-single node the inventory observed has no GPU-hours (it counts MIG slices): its
    telemetry is not an inventory gap, and the remediation for unobserved hours is not given
    for it."""
    day = datetime(2026, 11, 28).date()
    current = {
        "capacity_gpu_hours": 1000.0,
        "telemetry_only_gpu_hours": 400,
        "telemetry_only_idle_gpu_hours": 0.0,
        "unavailable_gpu_hours": 0.0,
    }
    nodes = [
        {"cluster": "c1", "node_name": "mig-1", "cause": "mig_partitioned",
         "telemetry_only_gpu_hours": 192},
        {"cluster": "c1", "node_name": "mig-2", "cause": "mig_partitioned",
         "telemetry_only_gpu_hours": 192},
        {"cluster": "c1", "node_name": "gpu-7", "cause": "not_observed",
         "telemetry_only_gpu_hours": 16},
    ]  # fmt: skip
    causes = _telemetry_only_causes(nodes)
    assert causes == {"mig_partitioned_gpu_hours": 384, "mig_partitioned_nodes": 2}
    findings = _findings([], [], [], [], [day], [], current, [], [], [], [], [], causes)
    titles = {f.title: f for f in findings if f.kind == "Evidence coverage"}
    mig = titles["Telemetry covers 384 GPU-hours of MIG-partitioned GPUs, which the GPU-hour "
                 "figures do not count"]  # fmt: skip
    assert mig.severity == "info" and "on 2 nodes the inventory observed" in mig.evidence
    unobserved = titles["Telemetry covers 16 GPU-hours the inventory did not observe"]
    assert unobserved.severity == "medium"
    # only MIG-partitioned GPUs: no finding about unobserved hours
    only_mig = _findings(
        [], [], [], [], [day], [], current | {"telemetry_only_gpu_hours": 384}, [], [], [], [],
        [], causes,
    )  # fmt: skip
    assert [f.title for f in only_mig if "did not observe" in f.title] == []


def test_key_figures_compare_per_hour_of_evidence_and_say_what_is_missing() -> None:
    """A previous month with inventory for 1.5 of its 31 days is not 95 % smaller: the figures
    are compared per hour each source covered, and what it missed is named."""
    previous = {
        "capacity_gpu_hours": 36 * 80.0,
        "inventory_hours": 36.0,
        "telemetry_hours": 0,
        "both_sources_hours": 0,
        "telemetry_gpu_hours": 0,
        "energy_mwh": 0.0,
        "allocated_observed_gpu_hours": 0,
    }
    current = {
        "capacity_gpu_hours": 684.5 * 80.0,
        "inventory_hours": 684.5,
        "telemetry_hours": 2,
        "both_sources_hours": 1,
        "telemetry_gpu_hours": 24,
        "energy_mwh": 1.5,
        "allocated_observed_gpu_hours": 5,
    }
    hours = {"current": 684.5, "previous": 31 * 24.0}
    # 80 GPUs an hour before, 80 now: unchanged, not +1,800 %
    assert _kpi_comparison(current, previous, "capacity_gpu_hours", hours) == (
        "+0.0 % an hour (inventory for 1.5 of 31.0 days before)"
    )
    assert _kpi_comparison(current, previous, "energy_mwh", hours) == "new"
    full = dict(previous, inventory_hours=744.0, capacity_gpu_hours=744 * 100.0)
    assert _kpi_comparison(current, full, "capacity_gpu_hours", hours) == "-20.0 % an hour"
    assert _kpi_comparison(current, None, "capacity_gpu_hours", hours) == "no previous data"
    assert _kpi_comparison(None, full, "capacity_gpu_hours", hours) == "no evidence this period"
    # telemetry for 2 of the 684.5 hours: the figure is per hour, and the gap is said
    before = dict(full, telemetry_hours=744, telemetry_gpu_hours=744 * 12)
    assert _kpi_comparison(current, before, "telemetry_gpu_hours", hours) == (
        "+0.0 % an hour (telemetry for 0.1 of 28.5 days this period)"
    )

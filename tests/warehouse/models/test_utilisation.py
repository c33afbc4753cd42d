"""Utilisation marts: hourly rollups checked by hand, inventory GPU-hours with fractional edges,
allocated-but-idle GPU-hours (balloons never idle), the degraded-GPU finder, and incremental
refreshes that rebuild only the hours new data touched."""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb
import pyarrow as pa
import pytest

from tests.helpers.fleet_invariants import groupings_checked, violations
from warehouse import Warehouse, load_collection
from warehouse.models.gpubench import GPUBENCH_MODEL
from warehouse.models.telemetry import TELEMETRY_MODEL
from warehouse.models.utilisation import refresh_gpu_hourly

T0 = datetime(2026, 11, 20, 0, 0)
H100 = "NVIDIA H100 80GB HBM3"
UNITS = {
    "gr_engine_active": ("ratio", "gauge"),
    "gpu_util": ("ratio", "gauge"),
    "sm_active": ("ratio", "gauge"),
    "tensor_active": ("ratio", "gauge"),
    "power_usage": ("watts", "gauge"),
    "total_energy_consumption": ("joules", "counter"),
    "sm_clock": ("mhz", "gauge"),
    "gpu_temp": ("celsius", "gauge"),
    "xid_errors": ("code", "gauge"),
}


class Telemetry:
    """Builds one telemetry collection: series declared on first use, then their samples."""

    def __init__(self) -> None:
        self.series: list[dict] = []
        self.index: dict[tuple, int] = {}
        self.samples: list[tuple[datetime, int, float]] = []

    def add(
        self,
        gpu: str,
        metric: str,
        minutes: list[int],
        values: list[float],
        *,
        node: str = "node-1",
        pod: str | None = None,
        namespace: str | None = None,
    ) -> None:
        key = (gpu, metric, node, pod, namespace)
        if key not in self.index:
            unit, kind = UNITS[metric]
            self.index[key] = len(self.series)
            self.series.append(
                {
                    "series_index": len(self.series),
                    "gpu_uuid": gpu,
                    "metric": metric,
                    "unit": unit,
                    "kind": kind,
                    "hostname": node,
                    "model_name": H100,
                    "pod": pod,
                    "namespace": namespace,
                    "source": "query_range",
                }
            )
        assert len(minutes) == len(values)
        for minute, value in zip(minutes, values, strict=True):
            self.samples.append((T0 + timedelta(minutes=minute), self.index[key], value))

    def batches(self):
        yield (
            "telemetry_series",
            pa.RecordBatch.from_pylist(
                self.series,
                schema=pa.schema(
                    [
                        ("series_index", pa.uint32()),
                        ("gpu_uuid", pa.string()),
                        ("metric", pa.string()),
                        ("unit", pa.string()),
                        ("kind", pa.string()),
                        ("hostname", pa.string()),
                        ("model_name", pa.string()),
                        ("pod", pa.string()),
                        ("namespace", pa.string()),
                        ("source", pa.string()),
                    ]
                ),
            ),
        )
        ts, index, value = zip(*self.samples, strict=True)
        yield (
            "telemetry_samples",
            pa.RecordBatch.from_pydict(
                {
                    "ts": pa.array(ts, pa.timestamp("us")),
                    "series_index": pa.array(index, pa.uint32()),
                    "value": pa.array(value, pa.float64()),
                }
            ),
        )


def query(wh: Warehouse, sql: str, params: list | None = None) -> list[tuple]:
    with duckdb.connect(str(wh.path), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def load(wh: Warehouse, telemetry: Telemetry, cluster: str = "c") -> None:
    load_collection(
        wh, TELEMETRY_MODEL, cluster=cluster, batches=telemetry.batches(), publish=False
    )


def refresh(wh: Warehouse) -> dict[str, int]:
    with wh.writer() as con:
        return refresh_gpu_hourly(con)


def every(start: int, stop: int, step: int = 10) -> list[int]:
    return list(range(start, stop, step))


def inventory(wh: Warehouse, nodes: list[dict], allocations: list[dict], horizon: datetime):
    """Kubernetes facts inserted directly (the kubernetes model's own tests cover how they get
    there), with the successful collection whose start is the inventory horizon."""
    with wh.writer() as con:
        con.execute(
            "INSERT INTO audit.collections (collection_id, source, cluster, started_at, "
            "finished_at, status) VALUES ('k8s-1', 'kubernetes', 'c', ?, ?, 'succeeded')",
            [horizon, horizon],
        )
        for n in nodes:
            con.execute(
                "INSERT INTO core.nodes (cluster, node_uid, node_name, node_pool, gfd_product, "
                "gpu_capacity, gpu_allocatable, gpu_resources, mig_strategy, ready, "
                "unschedulable, topology, content_hash, valid_from, valid_to, collection_id) "
                "VALUES ('c', ?, ?, ?, 'NVIDIA-H100-80GB-HBM3', ?, ?, "
                "[{'resource_name': 'nvidia.com/gpu', 'capacity': ?, 'allocatable': ?}], "
                "'none', ?, ?, [{'level': 1, 'level_label': 'topology.kubernetes.io/region', "
                "'label': 'topology.kubernetes.io/region', 'value': ?, 'domain': ?}], 0, ?, ?, "
                "'k8s-1')",
                [
                    n["uid"],
                    n["name"],
                    n["pool"],
                    n["capacity"],
                    n["allocatable"],
                    n["capacity"],
                    n["allocatable"],
                    n.get("ready", True),
                    n.get("cordoned", False),
                    n["region"],
                    n["region"],
                    n["valid_from"],
                    n.get("valid_to"),
                ],
            )
        for a in allocations:
            con.execute(
                "INSERT INTO core.gpu_allocations (cluster, pod_uid, namespace, pod_name, "
                "node_name, resource_name, gpus, category, valid_from, valid_from_source, "
                "valid_to, opened_collection_id) VALUES ('c', ?, ?, ?, ?, 'nvidia.com/gpu', ?, ?, "
                "?, 'scheduled', ?, 'k8s-1')",
                [
                    "uid-" + a["pod"],
                    a["namespace"],
                    a["pod"],
                    a["node"],
                    a["gpus"],
                    a.get("category", "workload"),
                    a["valid_from"],
                    a.get("valid_to"),
                ],
            )


def test_hourly_busy_power_xid_and_energy_across_a_counter_reset(wh: Warehouse) -> None:
    t = Telemetry()
    hour0, hour1 = every(0, 60), every(60, 120)
    # GPU-a: a training pod in hour 0; in hour 1 the pod is gone (every metric starts a new,
    # unlabelled series) and the GPU idles.
    labelled = {"pod": "train-0", "namespace": "team-a"}
    t.add("GPU-a", "gr_engine_active", hour0, [0.9, 0.8, 1.0, 0.9, 0.8, 1.0], **labelled)
    t.add("GPU-a", "gr_engine_active", hour1, [0.02] * 6)
    t.add("GPU-a", "sm_active", hour0, [0.6] * 6, **labelled)
    t.add("GPU-a", "power_usage", hour0, [300.0] * 6, **labelled)
    t.add("GPU-a", "power_usage", hour1, [100.0] * 6)
    t.add("GPU-a", "sm_clock", hour0, [1980.0, 1980.0, 1950.0, 1980.0, 1980.0, 1950.0], **labelled)
    t.add("GPU-a", "gpu_temp", hour0, [60.0, 61.0, 66.0, 64.0, 62.0, 60.0], **labelled)
    t.add("GPU-a", "xid_errors", hour0, [0.0, 0.0, 13.0, 31.0, 0.0, 0.0], **labelled)
    # The energy counter (joules since the driver loaded) grows 180 kJ per 10 minutes (300 W)
    # and resets at 00:40 when the driver reloads: 50 kJ since then. Hour 1 continues on the
    # unlabelled series: its first increase spans the two series.
    t.add(
        "GPU-a",
        "total_energy_consumption",
        hour0,
        [1_000_000.0, 1_180_000.0, 1_360_000.0, 1_540_000.0, 50_000.0, 230_000.0],
        **labelled,
    )
    t.add(
        "GPU-a",
        "total_energy_consumption",
        hour1,
        [230_000.0 + 60_000.0 * k for k in range(1, 7)],
    )
    # GPU-b: an exporter without GR_ENGINE_ACTIVE: busy is gpu_util; no counter.
    t.add("GPU-b", "gpu_util", hour0 + hour1, [0.5] * 12, node="node-2")
    t.add("GPU-b", "power_usage", [0, 30], [200.0, 220.0], node="node-2")
    load(wh, t)
    counts = refresh(wh)
    assert counts["telemetry_loads"] == 1
    assert counts["gpu_hourly_rows"] == 4

    rows = query(
        wh,
        "SELECT gpu_uuid, hour, node_name, nvml_device_name, samples, busy_signal, round(busy, 6), "
        "sm_active, power_watts, power_covered_seconds, energy_joules, energy_estimated_joules, "
        "max_gpu_temp_c, mean_sm_clock_mhz, xid_last, xid_samples, workload_pod, "
        "workload_namespace, pod_label_fraction, pod_category "
        "FROM marts.gpu_hourly ORDER BY gpu_uuid, hour",
    )
    h0, h1 = T0, T0 + timedelta(hours=1)
    assert rows[0] == (
        "GPU-a", h0, "node-1", H100, 6, "gr_engine_active", 0.9, 0.6, 300.0, 3600.0,
        # 00:10..00:30: 3 x 180 kJ; 00:40: the reset, its value (50 kJ); 00:50: 180 kJ.
        # 00:00 has no earlier sample within the hour before: not counted.
        770_000.0, 1_080_000.0, 66.0, 1970.0, 31, 2, "train-0", "team-a", 1.0, "workload",
    )  # fmt: skip
    assert rows[1] == (
        "GPU-a", h1, "node-1", H100, 6, "gr_engine_active", 0.02, None, 100.0, 3600.0,
        6 * 60_000.0, 360_000.0, None, None, None, None, None, None, 0.0, None,
    )  # fmt: skip
    # GPU-b: gpu_util is the busy signal; 2 power samples 30 minutes apart cover an hour;
    # in hour 1 no power at all: no estimate; no counter: energy_joules NULL.
    assert rows[2][5:12] == ("gpu_util", 0.5, None, 210.0, 3600.0, None, 210.0 * 3600)
    assert rows[3][5:12] == ("gpu_util", 0.5, None, None, None, None, None)

    daily = query(
        wh,
        "SELECT gpu_uuid, hours_reporting, samples, round(busy, 6), energy_joules, "
        "energy_estimated_joules, xid_last, xid_samples, max_gpu_temp_c "
        "FROM marts.gpu_daily ORDER BY gpu_uuid",
    )
    assert daily == [
        ("GPU-a", 2, 12, 0.46, 770_000.0 + 360_000.0, None, 31, 2, 66.0),
        ("GPU-b", 2, 12, 0.5, 210.0 * 3600, 210.0 * 3600, None, None, None),
    ]


def test_capacity_buckets_sum_to_capacity_with_fractional_interval_edges(wh: Warehouse) -> None:
    at = lambda h, m=0: T0 + timedelta(hours=h, minutes=m)  # noqa: E731
    inventory(
        wh,
        nodes=[
            # node-1: 8 healthy GPUs all along.
            {"uid": "u1", "name": "node-1", "pool": "pool-a", "region": "eu-west",
             "capacity": 8, "allocatable": 8, "valid_from": at(0)},
            # node-2: one unhealthy GPU; cordoned at 00:30 (a new version of the node).
            {"uid": "u2", "name": "node-2", "pool": "pool-b", "region": "eu-west",
             "capacity": 8, "allocatable": 7, "valid_from": at(0), "valid_to": at(0, 30)},
            {"uid": "u2", "name": "node-2", "pool": "pool-b", "region": "eu-west",
             "capacity": 8, "allocatable": 7, "cordoned": True, "valid_from": at(0, 30)},
        ],
        allocations=[
            {"pod": "w1", "namespace": "team-a", "node": "node-1", "gpus": 4,
             "valid_from": at(0, 15), "valid_to": at(1, 45)},
            {"pod": "b1", "namespace": "balloons", "node": "node-1", "gpus": 2,
             "category": "balloon", "valid_from": at(0)},
            {"pod": "w2", "namespace": "team-b", "node": "node-2", "gpus": 2,
             "valid_from": at(0, 20)},
        ],
        horizon=at(2),  # open versions and intervals count up to the latest collection
    )  # fmt: skip
    counts = refresh(wh)
    assert counts["kubernetes_collections"] == 1
    rows = query(
        wh,
        "SELECT node_name, hour, node_pool, failure_domain, observed_hours, capacity_gpu_hours, "
        "allocatable_gpu_hours, round(allocated_workload_gpu_hours, 6), "
        "allocated_balloon_gpu_hours, round(free_gpu_hours, 6), unavailable_gpu_hours "
        "FROM marts.node_gpu_hours ORDER BY node_name, hour",
    )
    assert rows == [
        # 4 GPUs from 00:15: 3 GPU-hours; the balloon's 2; free the remaining 3.
        ("node-1", at(0), "pool-a", "eu-west", 1.0, 8.0, 8.0, 3.0, 2.0, 3.0, 0.0),
        # until 01:45: 3 GPU-hours again.
        ("node-1", at(1), "pool-a", "eu-west", 1.0, 8.0, 8.0, 3.0, 2.0, 3.0, 0.0),
        # 00:00-00:30 Ready: 2 GPUs x 10 min = 1/3; free 3.5 - 1/3; unavailable 0.5 (the
        # unhealthy GPU). 00:30-01:00 cordoned: 2 x 0.5 = 1 held; unavailable 0.5 + 2.5.
        ("node-2", at(0), "pool-b", "eu-west", 1.0, 8.0, 7.0, 1.333333, 0.0, 3.166667, 3.5),
        ("node-2", at(1), "pool-b", "eu-west", 1.0, 8.0, 7.0, 2.0, 0.0, 0.0, 6.0),
    ]
    for row in rows:
        assert row[7] + row[8] + row[9] + row[10] == pytest.approx(row[5])

    by_pool = query(
        wh,
        "SELECT node_pool, nodes, capacity_gpu_hours, round(allocated_workload_gpu_hours, 6), "
        "allocated_balloon_gpu_hours, round(free_gpu_hours, 6), unavailable_gpu_hours "
        "FROM marts.gpu_hours_daily_by_pool ORDER BY node_pool",
    )
    assert by_pool == [
        ("pool-a", 1, 16.0, 6.0, 4.0, 6.0, 0.0),
        ("pool-b", 1, 16.0, 3.333333, 0.0, 3.166667, 9.5),
    ]
    assert query(
        wh,
        "SELECT failure_domain, nodes, capacity_gpu_hours FROM marts.gpu_hours_daily_by_domain",
    ) == [("eu-west", 2, 32.0)]
    assert query(
        wh,
        "SELECT gpu_model, nodes, capacity_gpu_hours, round(allocated_workload_share, 6) "
        "FROM marts.gpu_hours_daily_by_model",
    ) == [("H100-SXM5-80GB", 2, 32.0, round(28 / 3 / 32, 6))]  # canonical (docs/naming.md)
    assert query(
        wh,
        "SELECT node_name, node_uid, observed_hours, unavailable_gpu_hours "
        "FROM marts.gpu_hours_daily_by_node ORDER BY node_name",
    ) == [("node-1", "u1", 2.0, 0.0), ("node-2", "u2", 2.0, 9.5)]
    assert query(
        wh,
        "SELECT namespace, round(allocated_workload_gpu_hours, 6), allocated_balloon_gpu_hours "
        "FROM marts.gpu_hours_daily_by_namespace ORDER BY namespace",
    ) == [("balloons", 0.0, 4.0), ("team-a", 6.0, 0.0), ("team-b", 3.333333, 0.0)]


def test_allocated_but_idle_counts_workload_pods_below_five_percent_never_balloons(
    wh: Warehouse,
) -> None:
    inventory(
        wh,
        nodes=[
            {"uid": "u1", "name": "node-1", "pool": "pool-a", "region": "eu-west",
             "capacity": 8, "allocatable": 8, "valid_from": T0},
        ],
        allocations=[
            {"pod": "train-0", "namespace": "team-a", "node": "node-1", "gpus": 1,
             "valid_from": T0},
            {"pod": "notebook-0", "namespace": "team-b", "node": "node-1", "gpus": 1,
             "valid_from": T0},
            {"pod": "balloon-0", "namespace": "balloons", "node": "node-1", "gpus": 1,
             "category": "balloon", "valid_from": T0},
        ],
        horizon=T0 + timedelta(hours=2),
    )  # fmt: skip
    t = Telemetry()
    minutes = every(0, 120)
    t.add("GPU-1", "gr_engine_active", minutes, [0.97] * 12, pod="train-0", namespace="team-a")
    # the notebook idles: 0.01 in hour 0; in hour 1 it runs at 0.5 for 20 minutes
    t.add(
        "GPU-2",
        "gr_engine_active",
        minutes,
        [0.01] * 6 + [0.5, 0.5, 0.0, 0.0, 0.0, 0.0],
        pod="notebook-0",
        namespace="team-b",
    )
    # the balloon holds its GPU doing nothing: reserved, not idle
    t.add("GPU-3", "gr_engine_active", minutes, [0.0] * 12, pod="balloon-0", namespace="balloons")
    # free and idle: not allocated, so not allocated-but-idle
    t.add("GPU-4", "gr_engine_active", minutes, [0.0] * 12)
    load(wh, t)
    refresh(wh)

    assert query(
        wh,
        "SELECT gpu_uuid, allocated_idle_gpu_hours, dcgm_allocated_gpu_hours "
        "FROM marts.gpu_daily ORDER BY gpu_uuid",
    ) == [("GPU-1", 0.0, 2.0), ("GPU-2", 1.0, 2.0), ("GPU-3", 0.0, 0.0), ("GPU-4", 0.0, 0.0)]
    assert query(wh, "SELECT DISTINCT gpu_uuid, pod_category FROM marts.gpu_hourly ORDER BY 1") == [
        ("GPU-1", "workload"),
        ("GPU-2", "workload"),
        ("GPU-3", "balloon"),
        ("GPU-4", None),
    ]
    node = query(
        wh,
        "SELECT hour, telemetry_gpu_hours, allocated_workload_gpu_hours, "
        "allocated_balloon_gpu_hours, dcgm_allocated_gpu_hours, allocated_idle_gpu_hours, "
        "round(busy_gpu_hours, 6) FROM marts.node_gpu_hours ORDER BY hour",
    )
    assert node == [
        (T0, 4, 2.0, 1.0, 2.0, 1.0, 0.98),
        (T0 + timedelta(hours=1), 4, 2.0, 1.0, 2.0, 0.0, round(0.97 + 1 / 6, 6)),
    ]
    assert query(
        wh,
        "SELECT namespace, allocated_workload_gpu_hours, allocated_balloon_gpu_hours, "
        "dcgm_allocated_gpu_hours, allocated_idle_gpu_hours, round(busy, 6) "
        "FROM marts.gpu_hours_daily_by_namespace ORDER BY namespace",
    ) == [
        ("balloons", 0.0, 2.0, 0.0, 0.0, None),
        ("team-a", 2.0, 0.0, 2.0, 0.0, 0.97),
        ("team-b", 2.0, 0.0, 2.0, 1.0, round((0.01 + 1 / 6) / 2, 6)),
    ]
    by_pool = query(
        wh,
        "SELECT node_pool, telemetry_gpu_hours, allocated_idle_gpu_hours, round(busy, 6) "
        "FROM marts.gpu_hours_daily_by_pool",
    )
    assert by_pool == [("pool-a", 8, 1.0, round((0.98 + 0.97 + 1 / 6) / 8, 6))]


def benchmark(record_id: str, gpu: str, node: str, value: float, **extra) -> dict:
    return {
        "record_id": record_id,
        "ts": T0 + timedelta(minutes=30),
        "namespace": "annex-probes",
        "job": "annex-gpubench-202611200030",
        "pod": f"probe-{node}",
        "pod_uid": f"uid-{node}",
        "node": node,
        "gpu_uuid": gpu,
        "gpu_model": H100,
        "gpu_sku": "H100-SXM5-80GB",
        "backend": "cuda",
        "triton_version": "3.4.0",
        "benchmark": "gemm",
        "shape": '{"M":8192,"N":8192,"K":8192}',
        "dtype": "bf16",
        "achieved_tflops": value,
        "achieved_gbps": 285.0,
        "correct": True,
        "locator": f"annex-probes/probe-{node} line 1",
    } | extra


def benchmarks(records: list[dict]):
    yield (
        "gpubench_records",
        pa.RecordBatch.from_pylist(
            records,
            schema=pa.schema(
                [
                    ("record_id", pa.string()),
                    ("ts", pa.timestamp("us")),
                    ("namespace", pa.string()),
                    ("job", pa.string()),
                    ("pod", pa.string()),
                    ("pod_uid", pa.string()),
                    ("node", pa.string()),
                    ("gpu_uuid", pa.string()),
                    ("gpu_model", pa.string()),
                    ("gpu_sku", pa.string()),
                    ("backend", pa.string()),
                    ("triton_version", pa.string()),
                    ("benchmark", pa.string()),
                    ("shape", pa.string()),
                    ("dtype", pa.string()),
                    ("achieved_tflops", pa.float64()),
                    ("achieved_gbps", pa.float64()),
                    ("correct", pa.bool_()),
                    ("locator", pa.string()),
                ]
            ),
        ),
    )
    yield (
        "gpu_peaks",
        pa.RecordBatch.from_pylist(
            [
                {
                    "gpu_sku": "H100-SXM5-80GB",
                    "dtype": "bf16",
                    "peak_tflops_dense": 989.4,
                    "peak_hbm_gbps": 3350.0,
                }
            ]
        ),
    )


def test_a_slow_gpu_is_found_among_healthy_ones_and_its_low_clock_explains_it(
    wh: Warehouse,
) -> None:
    healthy = {"GPU-1": 770.0, "GPU-2": 765.0, "GPU-3": 775.0, "GPU-4": 768.0, "GPU-5": 772.0}
    tflops = healthy | {"GPU-6": 600.0}
    t = Telemetry()
    for n, gpu in enumerate(tflops, start=1):
        clock = 1200.0 if gpu == "GPU-6" else 1980.0
        t.add(gpu, "sm_clock", every(0, 60), [clock] * 6, node=f"node-{n}")
        t.add(gpu, "gpu_temp", every(0, 60), [65.0] * 6, node=f"node-{n}")
        t.add(gpu, "xid_errors", every(0, 60), [0.0] * 6, node=f"node-{n}")
    load(wh, t)
    records = [
        benchmark(f"r{n}", gpu, f"node-{n}", value)
        for n, (gpu, value) in enumerate(tflops.items(), start=1)
    ]
    # a small cohort (copy, 3 GPUs) is never judged, however slow one of them is
    records += [
        benchmark(f"c{n}", f"GPU-{n}", f"node-{n}", 0.0, benchmark="copy",
                  shape='{"N":268435456}', dtype="fp32", achieved_gbps=gbps)
        for n, gbps in ((1, 3000.0), (2, 3010.0), (3, 1000.0))
    ]  # fmt: skip
    # an interpreter run and a wrong result are never evidence
    records += [
        benchmark("i1", "GPU-1", "node-1", 1.0, backend="interpreter"),
        benchmark("x1", "GPU-2", "node-2", 1.0, correct=False, ts=T0 + timedelta(minutes=40)),
    ]
    load_collection(wh, GPUBENCH_MODEL, cluster="c", batches=benchmarks(records), publish=False)
    refresh(wh)

    summary = query(
        wh,
        "SELECT gpu_uuid, record_id, measurements, achieved_tflops, round(frac_peak_flops, 4), "
        "round(frac_peak_bw, 4) FROM marts.gpu_benchmark_summary "
        "WHERE benchmark = 'gemm' ORDER BY gpu_uuid",
    )
    assert summary[:2] == [
        ("GPU-1", "r1", 1, 770.0, round(770 / 989.4, 4), round(285 / 3350, 4)),
        ("GPU-2", "r2", 1, 765.0, round(765 / 989.4, 4), round(285 / 3350, 4)),
    ]
    degraded = query(
        wh,
        "SELECT gpu_uuid, node_name, metric, value, cohort_gpus, cohort_median, cohort_mad, "
        "round(threshold, 3), round(ratio_to_median, 4), below_mad_rule, below_ratio_rule, "
        "telemetry_hours, sm_clock_mhz, cohort_median_sm_clock_mhz, max_gpu_temp_c, xid_last, "
        "corroborated, verdict FROM marts.gpu_degraded",
    )
    # median of 600, 765, 768, 770, 772, 775 is 769; deviations 169, 4, 1, 1, 3, 6: MAD 3.5
    assert degraded == [
        ("GPU-6", "node-6", "achieved_tflops", 600.0, 6, 769.0, 3.5,
         round(769 - 3 * 1.4826 * 3.5, 3), round(600 / 769, 4), True, True,
         1, 1200.0, 1980.0, 65.0, None, True, "slow (clock-throttled)"),
    ]  # fmt: skip


def test_refresh_rebuilds_only_new_hours_and_a_rerun_changes_nothing(wh: Warehouse) -> None:
    def window(start: int) -> Telemetry:
        t = Telemetry()
        minutes = every(start, start + 120)
        t.add("GPU-a", "gr_engine_active", minutes, [0.5] * 12)
        t.add("GPU-a", "total_energy_consumption", minutes, [1000.0 * (m + 10) for m in minutes])
        return t

    load(wh, window(0))
    first = refresh(wh)
    assert (first["telemetry_loads"], first["telemetry_hours"], first["gpu_hourly_rows"]) == (
        1,
        2,
        2,
    )
    before = query(wh, "SELECT hour, refreshed_at FROM marts.gpu_hourly ORDER BY hour")

    load(wh, window(120))
    second = refresh(wh)
    assert (second["telemetry_loads"], second["telemetry_hours"], second["gpu_hourly_rows"]) == (
        1,
        2,
        2,
    )
    rows = query(
        wh, "SELECT hour, samples, energy_joules, refreshed_at FROM marts.gpu_hourly ORDER BY hour"
    )
    assert [r[0] for r in rows] == [T0 + timedelta(hours=h) for h in range(4)]
    # the earlier hours were not touched
    assert [(r[0], r[3]) for r in rows[:2]] == before
    assert rows[2][3] > before[1][1]
    # 1 kJ per minute: hour 0 misses its first interval; hour 2's first increase reaches back
    # into the first window's last sample
    assert [r[2] for r in rows] == [50_000.0, 60_000.0, 60_000.0, 60_000.0]
    assert query(
        wh,
        "SELECT first_hour, last_hour, hours, telemetry_hours FROM audit.utilisation_refreshes "
        "ORDER BY refreshed_at",
    ) == [
        (T0, T0 + timedelta(hours=1), 2, 2),
        (T0 + timedelta(hours=2), T0 + timedelta(hours=3), 2, 2),
    ]

    snapshot = query(wh, "SELECT * FROM marts.gpu_hourly ORDER BY hour")
    nodes = query(wh, "SELECT * FROM marts.node_gpu_hours ORDER BY hour")
    # the same window again: its samples are already loaded, nothing to rebuild
    load(wh, window(120))
    again = refresh(wh)
    assert (again["telemetry_loads"], again["telemetry_hours"], again["gpu_hourly_rows"]) == (
        1,
        0,
        0,
    )
    assert refresh(wh)["telemetry_loads"] == 0
    assert query(wh, "SELECT * FROM marts.gpu_hourly ORDER BY hour") == snapshot
    assert query(wh, "SELECT * FROM marts.node_gpu_hours ORDER BY hour") == nodes
    assert query(wh, "SELECT bool_and(rolled_up) FROM audit.telemetry_loads") == [(True,)]


def test_a_backfilled_hour_also_rebuilds_the_next_one_whose_first_increase_it_feeds(
    wh: Warehouse,
) -> None:
    later, earlier = Telemetry(), Telemetry()
    later.add(
        "GPU-a",
        "total_energy_consumption",
        every(60, 120),
        [7000.0 + 1000 * k for k in range(6)],
        pod="train-0",
        namespace="team-a",
    )
    # the hour before arrives later, on the GPU's unlabelled series (a series of its own)
    earlier.add(
        "GPU-a", "total_energy_consumption", every(0, 60), [1000.0 * k for k in range(1, 7)]
    )
    load(wh, later)
    refresh(wh)
    assert query(wh, "SELECT hour, energy_joules FROM marts.gpu_hourly") == [
        (T0 + timedelta(hours=1), 5000.0)
    ]
    load(wh, earlier)
    counts = refresh(wh)
    assert counts["telemetry_hours"] == 2
    assert query(wh, "SELECT hour, energy_joules FROM marts.gpu_hourly ORDER BY hour") == [
        (T0, 5000.0),
        (T0 + timedelta(hours=1), 6000.0),  # 00:50 -> 01:00 now counts
    ]


def test_refresh_inside_the_callers_transaction_commits_with_it(wh: Warehouse) -> None:
    t = Telemetry()
    t.add("GPU-a", "gr_engine_active", every(0, 60), [0.5] * 6)
    load(wh, t)
    with wh.writer() as con:
        con.execute("BEGIN")
        assert refresh_gpu_hourly(con)["gpu_hourly_rows"] == 1
        con.execute("ROLLBACK")
    assert query(wh, "SELECT count(*) FROM marts.gpu_hourly") == [(0,)]
    assert query(wh, "SELECT rolled_up FROM audit.telemetry_loads") == [(False,)]
    assert refresh(wh)["gpu_hourly_rows"] == 1


def test_a_hand_built_month_holds_idle_within_allocation_and_buckets_to_capacity(
    wh: Warehouse,
) -> None:
    """Thirty days in which the two sources disagree in every way they can: telemetry after the
    inventory's horizon and from a node it never saw, DCGM pod labels that outlive the pod's
    interval, an interval holding more GPUs than its node has, a cordon. Idle GPU-hours are
    compared with allocation only where both sources saw the node-hour; the rest is shown as
    telemetry-only. Worked by hand: one sample per GPU at half past every hour."""
    day = lambda d: T0 + timedelta(days=d)  # noqa: E731
    inventory(
        wh,
        nodes=[
            {"uid": "ua", "name": "node-a", "pool": "pool-a", "region": "eu-west",
             "capacity": 8, "allocatable": 8, "valid_from": day(0)},
            {"uid": "ub", "name": "node-b", "pool": "pool-b", "region": "eu-east",
             "capacity": 8, "allocatable": 7, "valid_from": day(0), "valid_to": day(10)},
            {"uid": "ub", "name": "node-b", "pool": "pool-b", "region": "eu-east",
             "capacity": 8, "allocatable": 7, "cordoned": True, "valid_from": day(10)},
            {"uid": "uc", "name": "node-c", "pool": "pool-b", "region": "eu-east",
             "capacity": 4, "allocatable": 4, "valid_from": day(20)},
        ],
        allocations=[
            {"pod": "train-a", "namespace": "team-a", "node": "node-a", "gpus": 4,
             "valid_from": day(0)},
            {"pod": "balloon-a", "namespace": "balloons", "node": "node-a", "gpus": 2,
             "category": "balloon", "valid_from": day(0)},
            {"pod": "notebook-b", "namespace": "team-b", "node": "node-b", "gpus": 2,
             "valid_from": day(2), "valid_to": day(12)},
            # an interval that outlived its node's capacity: 6 GPUs on a 4-GPU node
            {"pod": "stale-c", "namespace": "team-c", "node": "node-c", "gpus": 6,
             "valid_from": day(20), "valid_to": day(22)},
        ],
        horizon=day(25),  # the latest collection: nothing is known of the inventory after it
    )  # fmt: skip

    def hourly(first_day: int, last_day: int) -> list[int]:
        return list(range(first_day * 1440 + 30, (last_day + 1) * 1440, 60))

    t = Telemetry()
    month = hourly(0, 29)
    for i in range(1, 5):
        t.add(f"GPU-a{i}", "gr_engine_active", month, [0.9] * len(month),
              node="node-a", pod="train-a", namespace="team-a")  # fmt: skip
    for i in (5, 6):
        t.add(f"GPU-a{i}", "gr_engine_active", month, [0.0] * len(month),
              node="node-a", pod="balloon-a", namespace="balloons")  # fmt: skip
    # the notebook idles; DCGM keeps its label two days after the inventory saw it go
    notebook = hourly(2, 13)
    for i in (1, 2):
        t.add(f"GPU-b{i}", "gr_engine_active", notebook, [0.01] * len(notebook),
              node="node-b", pod="notebook-b", namespace="team-b")  # fmt: skip
    # a node the inventory never listed
    t.add("GPU-g1", "gr_engine_active", month, [0.0] * len(month),
          node="ghost-1", pod="job-g", namespace="team-g")  # fmt: skip
    load(wh, t)
    refresh(wh)

    with duckdb.connect(str(wh.path), read_only=True) as con:
        assert violations(con) == []
        checked = groupings_checked(con)
    assert all(rows > 0 for rows in checked.values()), checked
    assert query(wh, "SELECT count(DISTINCT day) FROM marts.gpu_hours_daily_by_pool") == [(30,)]

    def team(namespace: str, d: int) -> tuple:
        return query(
            wh,
            "SELECT round(allocated_workload_gpu_hours, 6), round(dcgm_allocated_gpu_hours, 6), "
            "round(allocated_observed_gpu_hours, 6), round(allocated_idle_gpu_hours, 6), "
            "round(telemetry_only_gpu_hours, 6), round(telemetry_only_idle_gpu_hours, 6) "
            "FROM marts.gpu_hours_daily_by_namespace WHERE namespace = ? AND day = ?",
            [namespace, day(d).date()],
        )[0]

    # day 5, both sources saw everything: the notebook's 2 GPUs idled all day
    assert team("team-b", 5) == (48.0, 48.0, 48.0, 48.0, 0.0, 0.0)
    assert team("team-a", 5) == (96.0, 96.0, 96.0, 0.0, 0.0, 0.0)
    # day 13: the inventory saw the notebook go on day 12; DCGM's stale labels are not
    # allocation, so its idle hours are not counted against team-b
    assert team("team-b", 13) == (0.0, 48.0, 0.0, 0.0, 0.0, 0.0)
    # a node the inventory never saw: telemetry only, every day, idle shown apart
    assert team("team-g", 5) == (0.0, 24.0, 0.0, 0.0, 24.0, 24.0)
    # day 27, after the inventory's horizon: no allocation known, nothing compared
    assert team("team-a", 27) == (0.0, 96.0, 0.0, 0.0, 96.0, 0.0)
    # the over-full interval holds the node's 4 GPUs, not 6
    assert team("team-c", 21) == (96.0, 0.0, 0.0, 0.0, 0.0, 0.0)

    pools = query(
        wh,
        "SELECT day, node_pool, capacity_gpu_hours, round(allocated_workload_gpu_hours, 6), "
        "allocated_balloon_gpu_hours, round(free_gpu_hours, 6), unavailable_gpu_hours, "
        "telemetry_gpu_hours, telemetry_only_gpu_hours, round(allocated_idle_gpu_hours, 6), "
        "round(telemetry_only_idle_gpu_hours, 6) FROM marts.gpu_hours_daily_by_pool "
        "WHERE day IN (?, ?, ?, ?) ORDER BY day, node_pool",
        [day(5).date(), day(10).date(), day(21).date(), day(27).date()],
    )
    assert pools == [
        # node-a: 4 training + 2 balloon GPUs of 8; its 6 GPUs report (the balloon's idle is
        # not idle); node-b: 1 unhealthy GPU, the notebook's 2 idle; ghost-1: telemetry only
        (day(5).date(), "pool-a", 192.0, 96.0, 48.0, 48.0, 0.0, 144, 0, 0.0, 0.0),
        (day(5).date(), "pool-b", 192.0, 48.0, 0.0, 120.0, 24.0, 48, 0, 48.0, 0.0),
        (day(5).date(), "unknown", 0.0, 0.0, 0.0, 0.0, 0.0, 24, 24, 0.0, 24.0),
        # node-b cordoned from day 10: its unallocated allocatable GPUs are unavailable
        (day(10).date(), "pool-a", 192.0, 96.0, 48.0, 48.0, 0.0, 144, 0, 0.0, 0.0),
        (day(10).date(), "pool-b", 192.0, 48.0, 0.0, 0.0, 144.0, 48, 0, 48.0, 0.0),
        (day(10).date(), "unknown", 0.0, 0.0, 0.0, 0.0, 0.0, 24, 24, 0.0, 24.0),
        # node-c joins pool-b; its over-full interval fills it, never beyond
        (day(21).date(), "pool-a", 192.0, 96.0, 48.0, 48.0, 0.0, 144, 0, 0.0, 0.0),
        (day(21).date(), "pool-b", 288.0, 96.0, 0.0, 0.0, 192.0, 0, 0, 0.0, 0.0),
        (day(21).date(), "unknown", 0.0, 0.0, 0.0, 0.0, 0.0, 24, 24, 0.0, 24.0),
        # after the horizon: telemetry only, no capacity, nothing compared
        (day(27).date(), "unknown", 0.0, 0.0, 0.0, 0.0, 0.0, 168, 168, 0.0, 24.0),
    ]

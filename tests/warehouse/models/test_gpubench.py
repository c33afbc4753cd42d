"""The benchmark model: records once by record_id, GPUs on the wrong node or of the wrong model
rejected with reasons, peaks refreshed."""

from __future__ import annotations

from datetime import datetime

import duckdb
import pyarrow as pa

from warehouse import Warehouse, load_collection
from warehouse.models.gpubench import GPUBENCH_MODEL

TS = datetime(2026, 11, 20, 8, 0)


def record(record_id: str, node: str, gpu_uuid: str, model: str = "NVIDIA H100 80GB HBM3") -> dict:
    return {
        "record_id": record_id,
        "ts": TS,
        "namespace": "annex-probes",
        "pod": f"probe-{node}",
        "pod_uid": f"uid-{node}",
        "node": node,
        "gpu_uuid": gpu_uuid,
        "gpu_model": model,
        "backend": "cuda",
        "benchmark": "gemm",
        "dtype": "bf16",
        "achieved_tflops": 770.0,
        "locator": f"annex-probes/probe-{node} line 1",
    }


def collection(records: list[dict]):
    yield (
        "gpubench_records",
        pa.RecordBatch.from_pylist(
            records,
            schema=pa.schema(
                [
                    ("record_id", pa.string()),
                    ("ts", pa.timestamp("us")),
                    ("namespace", pa.string()),
                    ("pod", pa.string()),
                    ("pod_uid", pa.string()),
                    ("node", pa.string()),
                    ("gpu_uuid", pa.string()),
                    ("gpu_model", pa.string()),
                    ("backend", pa.string()),
                    ("benchmark", pa.string()),
                    ("dtype", pa.string()),
                    ("achieved_tflops", pa.float64()),
                    ("locator", pa.string()),
                ]
            ),
        ),
    )
    yield (
        "gpu_peaks",
        pa.RecordBatch.from_pylist(
            [{"gpu_sku": "H100-SXM5-80GB", "dtype": "bf16", "peak_tflops_dense": 989.4}]
        ),
    )
    yield (
        "gpubench_pods",
        pa.RecordBatch.from_pylist(
            [
                {"pod_uid": uid, "node": uid.removeprefix("uid-")}
                for uid in {r["pod_uid"] for r in records}
            ]
        ),
    )


def query(wh: Warehouse, sql: str) -> list[tuple]:
    with duckdb.connect(str(wh.path), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_gpu_claimed_by_another_node_is_rejected_and_reruns_change_nothing(wh: Warehouse) -> None:
    records = [
        record("r1", "node-a", "GPU-1"),
        record("r2", "node-a", "GPU-1"),
        record("r3", "node-a", "GPU-2"),
        record("r4", "node-b", "GPU-1"),  # GPU-1 belongs to node-a
        record("r4", "node-b", "GPU-1"),  # an exact repeat: kept once (here: rejected once)
    ]
    result = load_collection(wh, GPUBENCH_MODEL, cluster="c", batches=collection(records))
    assert result.rejected_count == 1
    assert query(wh, "SELECT record_id FROM core.gpu_benchmarks ORDER BY 1") == [
        ("r1",),
        ("r2",),
        ("r3",),
    ]
    (reason, message, raw) = query(wh, "SELECT reason_code, message, raw FROM audit.rejected")[0]
    assert reason == "gpu_on_other_node"
    assert "node-a" in message and "node-b" in message
    assert b'"record_id":"r4"' in raw

    again = load_collection(wh, GPUBENCH_MODEL, cluster="c", batches=collection(records[:3]))
    assert again.rejected_count == 0
    assert query(wh, "SELECT count(*) FROM core.gpu_benchmarks") == [(3,)]
    assert query(wh, "SELECT count(*) FROM core.gpu_benchmark_pods") == [(2,)]
    assert query(
        wh, "SELECT count(*), any_value(peak_tflops_dense) FROM core.gpu_peak_reference"
    ) == [(1, 989.4)]


def test_dcgm_placement_wins_over_benchmark_majority(wh: Warehouse) -> None:
    with wh.writer() as con:
        con.execute(
            "INSERT INTO core.gpu_telemetry_series (cluster, series_id, series_key, gpu_uuid, "
            "metric, node_name, last_ts, first_collection_id, last_collection_id) "
            "VALUES ('c', 1, 1, 'GPU-1', 'gr_engine_active', 'node-b', ?, 'x', 'x')",
            [TS],
        )
    records = [record("r1", "node-a", "GPU-1"), record("r2", "node-b", "GPU-1")]
    load_collection(wh, GPUBENCH_MODEL, cluster="c", batches=collection(records))
    assert query(wh, "SELECT record_id FROM core.gpu_benchmarks") == [("r2",)]
    assert query(wh, "SELECT reason_code FROM audit.rejected") == [("gpu_on_other_node",)]


def test_model_that_contradicts_the_node_label_is_rejected(wh: Warehouse) -> None:
    with wh.writer() as con:
        con.execute(
            "INSERT INTO core.nodes (cluster, node_name, gfd_product, content_hash, valid_from, "
            "collection_id) VALUES ('c', 'node-a', 'NVIDIA-A100-SXM4-80GB', 0, ?, 'x'), "
            "('c', 'node-b', 'NVIDIA-H100-80GB-HBM3', 0, ?, 'x')",
            [TS, TS],
        )
    records = [record("r1", "node-a", "GPU-1"), record("r2", "node-b", "GPU-2")]
    load_collection(wh, GPUBENCH_MODEL, cluster="c", batches=collection(records))
    assert query(wh, "SELECT record_id FROM core.gpu_benchmarks") == [("r2",)]
    (reason, message) = query(wh, "SELECT reason_code, message FROM audit.rejected")[0]
    assert reason == "gpu_model_mismatch"
    assert "NVIDIA-A100-SXM4-80GB" in message

"""The records the suite prints: every reference §5.1 field, typed, consistent, loadable.

The suite runs once for the module (small size: interpreted on a CPU-only machine), as a
probe pod would, with the downward API variables of a pod set.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from probes.gpubench import device as device_info
from probes.gpubench import harness, kernels
from probes.gpubench.device import Device, Placement
from probes.gpubench.work import MEMORY_BOUND, work

POD_ENV = {
    "ANNEX_CLUSTER": "prod-a",
    "POD_NAMESPACE": "annex-probes",
    "JOB_NAME": "annex-gpubench-202611211840",
    "POD_NAME": "annex-gpubench-202611211840-0-x7k2",
    "NODE_NAME": "gpu-017",
    "JOB_COMPLETION_INDEX": "0",
}

# Field -> allowed JSON types (None: null allowed). Reference §5.1, schema_version 1.
NUMBER = (int, float)
TYPES: dict[str, tuple[Any, ...]] = {
    "schema_version": (int,),
    "record_id": (str,),
    "ts": (str,),
    "cluster": (str, type(None)),
    "namespace": (str, type(None)),
    "job": (str, type(None)),
    "pod": (str, type(None)),
    "node": (str, type(None)),
    "gpu_index": (int,),
    "gpu_uuid": (str,),
    "gpu_model": (str,),
    "gpu_sku": (str, type(None)),
    "driver_version": (str, type(None)),
    "backend": (str,),
    "triton_version": (str,),
    "torch_version": (str,),
    "benchmark": (str,),
    "kernel": (str,),
    "kernel_config": (dict,),
    "shape": (dict,),
    "dtype": (str,),
    "timer": (str,),
    "warmup_ms": (float,),
    "rep_ms": (float,),
    "l2_flush": (bool,),
    "n_samples": (int, type(None)),
    "ms_p20": (float, type(None)),
    "ms_p50": (float, type(None)),
    "ms_p80": (float, type(None)),
    "flops": (float,),
    "bytes": (float,),
    "achieved_tflops": (float, type(None)),
    "achieved_gbps": (float, type(None)),
    "peak_tflops": (*NUMBER, type(None)),
    "peak_gbps": (*NUMBER, type(None)),
    "peak_source": (str, type(None)),
    "frac_peak_flops": (float, type(None)),
    "correct": (bool,),
}

H100 = Device(
    backend="cuda",
    index=3,
    uuid="GPU-604ac76c-1111-2222-3333-444455556666",
    model="NVIDIA H100 80GB HBM3",
    memory_mib=81559,
    capability=(9, 0),
    driver_version="550.90.07",
    torch_device="cuda:3",
)
A100 = Device(
    backend="cuda",
    index=0,
    uuid="GPU-00000000-1111-2222-3333-444455556666",
    model="NVIDIA A100-SXM4-80GB",
    memory_mib=81920,
    capability=(8, 0),
    driver_version="550.90.07",
    torch_device="cuda:0",
)


@pytest.fixture(scope="module")
def suite_run() -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """(records as emitted, their JSON lines, log messages) of the small suite."""
    device = device_info.devices("0")[0]
    placement = device_info.placement(POD_ENV)
    lines: list[str] = []
    logs: list[str] = []
    records = harness.run_suite(
        harness.suite("small"),
        device,
        placement=placement,
        versions=device_info.versions(),
        emit=lambda record: lines.append(json.dumps(record, allow_nan=False)),
        log=logs.append,
    )
    return records, lines, logs


def test_the_whole_suite_runs_and_passes_its_checks(suite_run) -> None:
    records, lines, logs = suite_run
    assert [(r["benchmark"], r["dtype"]) for r in records] == list(harness.SUITE)
    assert all(r["correct"] for r in records), logs
    assert len(lines) == len(records)
    assert len(logs) == len(records)  # one progress line each, none of them a record


def test_every_field_is_present_in_order_and_typed(suite_run) -> None:
    for record in suite_run[0]:
        assert tuple(record) == harness.RECORD_FIELDS
        assert set(TYPES) == set(harness.RECORD_FIELDS)
        for name, value in record.items():
            assert type(value) in TYPES[name], f"{name}={value!r} ({type(value).__name__})"
        assert all(isinstance(v, int) and v > 0 for v in record["shape"].values())


def test_records_survive_json_unchanged(suite_run) -> None:
    records, lines, _ = suite_run
    for record, line in zip(records, lines, strict=True):
        assert "\n" not in line
        assert json.loads(line) == record


def test_identity_time_and_placement(suite_run) -> None:
    records, _, _ = suite_run
    assert len({r["record_id"] for r in records}) == len(records)
    for r in records:
        assert uuid.UUID(r["record_id"]).version == 4
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["ts"])
        stamp = datetime.strptime(r["ts"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert abs((datetime.now(UTC) - stamp).total_seconds()) < 600
        assert (r["cluster"], r["namespace"], r["job"], r["pod"], r["node"]) == (
            "prod-a",
            "annex-probes",
            "annex-gpubench-202611211840",
            "annex-gpubench-202611211840-0-x7k2",
            "gpu-017",
        )
        assert r["schema_version"] == 1
        assert r["triton_version"] and r["torch_version"]


def test_device_fields_say_what_measured_it(suite_run) -> None:
    for r in suite_run[0]:
        if kernels.INTERPRET:
            assert r["backend"] == "interpreter"
            assert r["gpu_uuid"] == "CPU-interpreter"
            assert r["timer"] == "perf_counter" and r["l2_flush"] is False
            assert 1 <= r["n_samples"] <= 5
            assert r["gpu_sku"] is None and r["peak_tflops"] is None
        else:
            assert r["backend"] in ("cuda", "hip")
            assert r["gpu_uuid"].startswith("GPU-")
            assert r["timer"] == "triton.testing.do_bench" and r["l2_flush"] is True
            assert r["n_samples"] is None


def test_work_and_throughput_are_consistent(suite_run) -> None:
    for r in suite_run[0]:
        expected = work(r["benchmark"], r["shape"], r["dtype"])
        assert (r["flops"], r["bytes"]) == (expected.flops, expected.bytes)
        assert 0 < r["ms_p20"] <= r["ms_p50"] <= r["ms_p80"]
        seconds = r["ms_p50"] / 1e3
        assert r["achieved_tflops"] == pytest.approx(expected.flops / seconds / 1e12, rel=1e-12)
        assert r["achieved_gbps"] == pytest.approx(expected.bytes / seconds / 1e9, rel=1e-12)
        assert r["kernel"] == kernels.kernel_label(r["benchmark"], r["shape"])
        assert r["kernel"].startswith(kernels.KERNEL_NAMES[r["benchmark"]] + " [")
        assert all(math.isfinite(r[k]) for k in ("ms_p50", "achieved_tflops", "achieved_gbps"))


def test_records_load_into_duckdb(suite_run, tmp_path: Path) -> None:
    """The reference's tested path: read_json(format='newline_delimited')."""
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(suite_run[1]) + "\n")
    rows = duckdb.sql(
        f"SELECT benchmark, dtype, shape.M AS m, kernel_config, correct, ms_p50 "
        f"FROM read_json('{path}', format='newline_delimited')"
    ).fetchall()
    assert len(rows) == len(suite_run[0])
    assert rows[0][:3] == ("gemm", "bf16", 256)
    assert all(row[4] is True and row[5] > 0 for row in rows)


def test_records_pass_the_gpubench_collector_validation(suite_run) -> None:
    """The collector (collectors/gpubench) reads these lines from the pod's log."""
    from collectors.gpubench.records import LineContext, Measurement, validate_line

    context = LineContext(namespace="annex-probes", pod=POD_ENV["POD_NAME"], node="gpu-017")
    for line in suite_run[1]:
        result = validate_line(line.encode(), context)
        assert isinstance(result, Measurement), result


def gemm_record(device: Device, dtype: str = "bf16", ms: float = 1.411) -> dict[str, Any]:
    return harness.build_record(
        device=device,
        placement=Placement("prod-a", "annex-probes", "job", "pod", "gpu-017", 0),
        versions=("3.9.0", "2.13.0"),
        benchmark="gemm",
        shape={"M": 8192, "N": 8192, "K": 8192},
        dtype=dtype,
        kernel_config={"BM": 128, "BN": 256, "BK": 64, "num_warps": 8, "num_stages": 3},
        timer=harness.DO_BENCH,
        samples=harness.Samples(None, ms - 0.009, ms, ms + 0.012),
        correct=True,
        now=datetime(2026, 11, 21, 18, 40, 5, 123456, tzinfo=UTC),
    )


def test_an_h100_record_matches_the_reference_example() -> None:
    r = gemm_record(H100)
    assert r["ts"] == "2026-11-21T18:40:05Z"
    assert r["gpu_sku"] == "H100-SXM5-80GB"
    assert r["kernel"] == "matmul_kernel [M=8192, N=8192, K=8192]"
    assert r["flops"] == 2.0 * 8192**3
    assert r["achieved_tflops"] == pytest.approx(779.2, abs=0.1)  # §5.1: 1.411 ms
    assert r["peak_tflops"] == 989.4 and r["peak_gbps"] == 3350.0
    assert r["peak_source"].endswith("glennklockwood.com/garden/processors/h100")
    assert r["frac_peak_flops"] == pytest.approx(779.2 / 989.4, abs=1e-3)
    assert (r["timer"], r["warmup_ms"], r["rep_ms"], r["l2_flush"]) == (
        "triton.testing.do_bench",
        25.0,
        100.0,
        True,
    )
    assert gemm_record(H100, "fp8", ms=0.7)["peak_tflops"] == 1978.9


def test_memory_bound_records_have_no_flops_fraction() -> None:
    r = harness.build_record(
        device=H100,
        placement=Placement(None, None, None, None, None, None),
        versions=("3.9.0", "2.13.0"),
        benchmark="copy",
        shape={"N": 2**28},
        dtype="fp32",
        kernel_config={"BLOCK": 4096},
        timer=harness.DO_BENCH,
        samples=harness.Samples(None, 0.70, 0.71, 0.72),
        correct=True,
    )
    assert "copy" in MEMORY_BOUND
    assert r["achieved_gbps"] == pytest.approx(2 * 4 * 2**28 / 0.71e-3 / 1e9)
    assert r["frac_peak_flops"] is None and r["peak_gbps"] == 3350.0


def test_a_record_that_was_not_timed_says_so() -> None:
    r = harness.build_record(
        device=H100,
        placement=Placement(None, None, None, None, None, None),
        versions=("3.9.0", "2.13.0"),
        benchmark="gemm",
        shape={"M": 64, "N": 64, "K": 64},
        dtype="bf16",
        kernel_config={},
        timer=harness.DO_BENCH,
        samples=harness.Samples(None, 1.0, 1.0, 1.0),  # even with samples: incorrect = untimed
        correct=False,
    )
    assert r["correct"] is False and r["n_samples"] == 0
    assert [r[k] for k in ("ms_p20", "ms_p50", "ms_p80")] == [None, None, None]
    assert r["achieved_tflops"] is None and r["frac_peak_flops"] is None
    assert r["flops"] == 2.0 * 64**3  # the work is still stated


def test_fp8_is_skipped_with_a_reason_on_gpus_without_fp8_tensor_cores() -> None:
    reason = harness.skip_reason("gemm", "fp8", A100)
    assert reason and "8.9" in reason and "8.0" in reason
    assert harness.skip_reason("gemm", "fp8", H100) is None
    assert harness.skip_reason("gemm", "bf16", A100) is None
    interpreter = device_info.interpreter_device()
    assert harness.skip_reason("gemm", "fp8", interpreter) is None  # the interpreter does fp8


def test_skipped_benchmarks_are_logged_not_recorded() -> None:
    logs: list[str] = []
    records = harness.run_suite(
        [("gemm", "fp8", {"M": 64, "N": 64, "K": 64})],
        A100,
        placement=Placement(None, None, None, None, None, None),
        versions=("3.9.0", "2.13.0"),
        log=logs.append,
    )
    assert records == []
    assert len(logs) == 1 and logs[0].startswith("skipped gemm fp8") and "8.9" in logs[0]


def test_placement_comes_from_the_downward_api() -> None:
    assert device_info.placement(POD_ENV) == Placement(
        "prod-a",
        "annex-probes",
        "annex-gpubench-202611211840",
        "annex-gpubench-202611211840-0-x7k2",
        "gpu-017",
        0,
    )
    assert device_info.placement({}) == Placement(None, None, None, None, None, None)


def test_gpu_identity_helpers() -> None:
    assert device_info.format_uuid("604ac76c-1111-2222-3333-444455556666") == (
        "GPU-604ac76c-1111-2222-3333-444455556666"
    )
    assert device_info.format_uuid("GPU-abc") == "GPU-abc"
    nvrm = (
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:04 UTC 2024\n"
        "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
    )
    assert device_info.parse_nvrm_version(nvrm) == "550.54.15"
    open_modules = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release"
    assert device_info.parse_nvrm_version(open_modules) == "570.86.15"
    assert device_info.parse_nvrm_version("") is None


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        ([], list(harness.SUITE)),
        (["gemm"], [("gemm", "bf16"), ("gemm", "fp8")]),
        (["copy:bf16", "copy"], [("copy", "bf16"), ("copy", "fp32")]),
    ],
)
def test_suite_selection(selection: list[str], expected: list[tuple[str, str]]) -> None:
    chosen = harness.suite("full", selection)
    assert [(b, d) for b, d, _ in chosen] == expected
    assert harness.suite("full", ["gemm"])[0][2] == {"M": 8192, "N": 8192, "K": 8192}
    assert harness.suite("full", ["copy"])[0][2] == {"N": 2**28}


@pytest.mark.parametrize(
    ("size", "selection", "message"),
    [("huge", [], "unknown size"), ("small", ["matmul"], "unknown benchmark"),
     ("small", ["softmax:fp8"], "does not run in")],
)  # fmt: skip
def test_suite_refuses_unknown_names(size: str, selection: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        harness.suite(size, selection)

"""A wrong kernel is caught before it is timed, recorded as incorrect, and fails the run."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import torch

from probes.gpubench import __main__ as cli
from probes.gpubench import device as device_info
from probes.gpubench import harness, kernels
from probes.gpubench.device import Placement

NOWHERE = Placement(None, None, None, None, None, None)
SMALL = harness.SHAPES["small"]


@pytest.fixture(scope="module")
def device() -> device_info.Device:
    return device_info.devices("0")[0]


def measure(case: harness.Case, device: device_info.Device) -> tuple[dict[str, Any], list[str]]:
    logs: list[str] = []
    record = harness.measure(
        case, device, placement=NOWHERE, versions=("3.9.0", "2.13.0"), log=logs.append
    )
    return record, logs


def assert_untimed_failure(record: dict[str, Any]) -> None:
    assert record["correct"] is False
    assert record["n_samples"] == 0
    assert [record[k] for k in ("ms_p20", "ms_p50", "ms_p80")] == [None] * 3
    assert record["achieved_tflops"] is None and record["achieved_gbps"] is None
    assert tuple(record) == harness.RECORD_FIELDS
    json.dumps(record, allow_nan=False)


def test_a_perturbed_output_is_caught_and_not_timed(device) -> None:
    case = harness.make_case("copy", "fp32", SMALL["copy"], device.torch_device)
    launches = []

    def buggy_launch() -> dict[str, Any]:
        config = kernels.copy(case.inputs["src"], case.output)
        case.output[12345] += 1.0  # one element off: an exact copy must notice
        launches.append(1)
        return config

    case.launch = buggy_launch
    record, logs = measure(case, device)
    assert_untimed_failure(record)
    assert launches == [1]  # checked once, never timed
    assert record["kernel_config"] == kernels.INTERPRETER_CONFIGS["copy"] or not kernels.INTERPRET
    assert len(logs) == 1 and logs[0].startswith("FAILED copy_kernel [N=65536] fp32")
    assert "1 of 65536 elements differ" in logs[0]


def test_a_wrong_reference_is_caught(device) -> None:
    shape = {"M": 128, "N": 128, "K": 64}
    case = harness.make_case("gemm", "bf16", shape, device.torch_device)
    a, b = case.inputs["a"], case.inputs["b"]
    case.reference = lambda: torch.matmul(a.float(), b.float()).T  # a transposed "truth"
    record, logs = measure(case, device)
    assert_untimed_failure(record)
    assert "differ from the torch reference" in logs[0]


def test_nan_output_is_caught(device) -> None:
    case = harness.make_case("softmax", "bf16", {"M": 64, "N": 64}, device.torch_device)

    def nan_launch() -> dict[str, Any]:
        config = kernels.softmax(case.inputs["x"], case.output)
        case.output[3, 7] = float("nan")
        return config

    case.launch = nan_launch
    record, _ = measure(case, device)
    assert_untimed_failure(record)


def test_a_kernel_that_raises_is_a_failed_check(device) -> None:
    case = harness.make_case("triad", "fp32", {"N": 1024}, device.torch_device)

    def broken() -> dict[str, Any]:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    case.launch = broken
    record, logs = measure(case, device)
    assert_untimed_failure(record)
    assert "kernel failed to run: RuntimeError: CUDA error" in logs[0]


def test_the_same_cases_pass_unperturbed(device) -> None:
    """The failures above come from the bugs, not from the check being too strict."""
    for benchmark, dtype, shape in [
        ("copy", "fp32", SMALL["copy"]),
        ("gemm", "bf16", {"M": 128, "N": 128, "K": 64}),
        ("softmax", "bf16", {"M": 64, "N": 64}),
    ]:
        record, logs = measure(
            harness.make_case(benchmark, dtype, shape, device.torch_device), device
        )
        assert record["correct"] is True, logs
        assert record["ms_p50"] > 0


def test_compare_tolerance_edges() -> None:
    ref = torch.tensor([1.0, 100.0, 0.0])
    tolerance = harness.Tolerance(rtol=0.01, atol=0.001)
    assert harness.compare(ref + torch.tensor([0.0105, 0.0, 0.0]), ref, tolerance).correct
    assert not harness.compare(ref + torch.tensor([0.0115, 0.0, 0.0]), ref, tolerance).correct
    assert not harness.compare(ref + torch.tensor([0.0, 0.0, 0.002]), ref, tolerance).correct
    assert not harness.compare(torch.tensor([1.0, float("inf"), 0.0]), ref, tolerance).correct
    assert not harness.compare(torch.zeros(2), ref, tolerance).correct  # wrong shape
    scaled = harness.Tolerance(rtol=0.0, atol=0.1, scale_by_rms=True)  # rms(ref) = 57.7
    assert harness.compare(ref + torch.tensor([0.0, 0.0, 5.0]), ref, scaled).correct
    assert not harness.compare(ref + torch.tensor([0.0, 0.0, 6.0]), ref, scaled).correct


def test_cli_exits_non_zero_when_a_kernel_is_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    real_copy = kernels.copy

    def buggy_copy(src: torch.Tensor, dst: torch.Tensor) -> dict[str, Any]:
        config = real_copy(src, dst)
        dst[-1] = -dst[-1] - 1.0
        return config

    monkeypatch.setattr(kernels, "copy", buggy_copy)
    out = io.StringIO()
    status = cli.main(["--size", "small", "--benchmarks", "copy,triad"], out=out)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert status == cli.EXIT_INCORRECT
    assert [(r["benchmark"], r["correct"]) for r in records] == [("copy", False), ("triad", True)]

"""``bench.probes``'s measuring loop, run for real under Triton's interpreter at a tiny size.

The bench itself needs a GPU (it compares with cuBLAS at full size); its loop does not: with
the interpreter's device and timer it checks and times the same kernels, so the rows it
builds, one per GEMM kernel, can be checked here.
"""

from __future__ import annotations

import pytest
import torch

from bench import probes as bench
from probes.gpubench import device as device_info
from probes.gpubench import harness, kernels


@pytest.fixture
def interpreter() -> device_info.Device:
    if not kernels.INTERPRET:
        pytest.skip("on a GPU, python -m bench.probes itself runs this loop at full size")
    return device_info.interpreter_device()


def test_a_gemm_gets_a_row_per_kernel_each_checked_and_timed(
    interpreter: device_info.Device,
) -> None:
    entries = [("gemm", "bf16", {"M": 128, "N": 128, "K": 64})]
    logs: list[str] = []
    rows = bench.run(entries, interpreter, rounds=1, timer=harness.PERF_COUNTER, log=logs.append)
    assert [(r.benchmark, r.variant) for r in rows] == [("gemm", ""), ("gemm", "pointer")]
    default, pointer = rows
    assert default.config["variant"] == "tma" and pointer.config["variant"] == "pointer"
    for row in rows:
        assert row.triton_correct, row.triton_check
        assert row.torch_check == "ok" and not row.error
        assert row.triton_ms > 0 and row.torch_ms > 0
    report = bench.render(rows, interpreter, ("3.x", torch.__version__), None)
    assert "| gemm (pointer kernel) | bf16 |" in report
    # The goal is the probe's own kernel's: the extra row is information, not a verdict.
    goals = [line for line in report.splitlines() if line.startswith("Goals")]
    assert len(goals) == 1 and goals[0].count("gemm bf16") == 1


def test_a_kernel_that_writes_nothing_fails_although_another_filled_the_output(
    interpreter: device_info.Device, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GEMM rows share one output: it is poisoned before each kernel's check."""
    monkeypatch.setitem(kernels._GEMM_LAUNCHERS, "pointer", lambda a, b, c: {"variant": "x"})
    entries = [("gemm", "bf16", {"M": 128, "N": 128, "K": 64})]
    rows = bench.run(entries, interpreter, rounds=1, timer=harness.PERF_COUNTER, log=print)
    assert rows[0].triton_correct and not rows[1].triton_correct
    assert rows[1].triton_ms is None  # a wrong kernel is never timed

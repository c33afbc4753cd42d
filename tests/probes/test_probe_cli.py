"""``python -m probes.gpubench``: records on stdout only, logs on stderr, exit codes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from probes.gpubench import __main__ as cli
from probes.gpubench import harness, kernels

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_prints_only_records_on_stdout() -> None:
    """As the probe pod runs it: the CLI itself switches to the interpreter without a GPU."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    env.update(NODE_NAME="gpu-017", POD_NAME="annex-gpubench-1-x7k2", POD_NAMESPACE="annex-probes")
    env.update(JOB_NAME="annex-gpubench-202611211840", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "probes.gpubench", "--benchmarks", "copy,triad,layernorm"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and all(line.startswith("{") for line in lines)
    records = [json.loads(line) for line in lines]
    assert [r["benchmark"] for r in records] == ["copy", "triad", "layernorm"]
    assert all(r["correct"] and r["node"] == "gpu-017" for r in records)
    assert all(r["pod"] == "annex-gpubench-1-x7k2" for r in records)
    assert "gpubench: 3 record(s), 0 incorrect" in done.stderr
    if kernels.INTERPRET:
        assert {r["backend"] for r in records} == {"interpreter"}


def test_records_can_go_to_a_file(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    assert cli.main(["--size", "small", "--benchmarks", "copy", "--output", str(path)]) == 0
    (record,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert record["benchmark"] == "copy" and tuple(record) == harness.RECORD_FIELDS


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--benchmarks", "matmul"], "unknown benchmark 'matmul'"),
        (["--benchmarks", "softmax:fp8"], "softmax does not run in 'fp8'"),
        (["--gpus", "7", "--benchmarks", "copy"], None if kernels.INTERPRET else "no GPU [7]"),
    ],
)
def test_usage_errors_exit_2(
    argv: list[str], message: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = io.StringIO()
    status = cli.main(["--size", "small", *argv], out=out)
    if message is None:  # the interpreter has one "device" and ignores --gpus
        assert status in (0, 1)
        return
    assert status == cli.EXIT_USAGE
    assert message in capsys.readouterr().err
    assert out.getvalue() == ""


def test_interpreter_refuses_full_size_and_proton(capsys: pytest.CaptureFixture[str]) -> None:
    if not kernels.INTERPRET:
        assert harness.SHAPES["full"]["gemm"] == {"M": 8192, "N": 8192, "K": 8192}
        return
    assert cli.main(["--size", "full"], out=io.StringIO()) == cli.EXIT_USAGE
    assert "small size only" in capsys.readouterr().err
    assert cli.main(["--proton", "profile"], out=io.StringIO()) == cli.EXIT_USAGE
    assert "Proton" in capsys.readouterr().err

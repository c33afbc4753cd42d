"""One record line → a measurement with annex's own numbers, or one reason it is unusable.

Expected figures are worked out by hand here (2·M·N·K, bytes per operand, ms → s), not with
``probes.gpubench.work``, so the validator cannot agree with the test by construction.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from collectors.gpubench.records import (
    MEASUREMENT_FIELDS,
    REASONS,
    LineContext,
    Measurement,
    Rejected,
    validate_line,
)
from collectors.gpubench.schema import GPUBENCH_RECORDS

CONTEXT = LineContext(namespace="annex-probes", pod="annex-gpubench-1-x7k2", node="gpu-017")


def record(**overrides: Any) -> dict[str, Any]:
    """The reference §5.1 example, on the pod and node of ``CONTEXT``."""
    base: dict[str, Any] = {
        "schema_version": 1,
        "record_id": "0b6f1d1e-4c1a-4d0e-9a39-2f4e3c6f0a11",
        "ts": "2026-11-21T18:40:05Z",
        "cluster": "prod-a",
        "namespace": "annex-probes",
        "job": "annex-gpubench-202611211840",
        "pod": "annex-gpubench-1-x7k2",
        "node": "gpu-017",
        "gpu_index": 3,
        "gpu_uuid": "GPU-604ac76c-1111-2222-3333-444455556666",
        "gpu_model": "NVIDIA H100 80GB HBM3",
        "gpu_sku": "H100-SXM5-80GB",
        "driver_version": "550.90.07",
        "backend": "cuda",
        "triton_version": "3.9.0",
        "torch_version": "2.9.0",
        "benchmark": "gemm",
        "kernel": "matmul_kernel [M=8192, N=8192, K=8192]",
        "kernel_config": {"num_warps": 8, "BM": 128, "BN": 256, "BK": 64, "num_stages": 3},
        "shape": {"M": 8192, "N": 8192, "K": 8192},
        "dtype": "bf16",
        "timer": "triton.testing.do_bench",
        "warmup_ms": 25,
        "rep_ms": 100,
        "l2_flush": True,
        "n_samples": None,
        "ms_p20": 1.402,
        "ms_p50": 1.411,
        "ms_p80": 1.423,
        "flops": 1.0995e12,
        "bytes": 4.03e8,
        "achieved_tflops": 779.2,
        "achieved_gbps": 285.6,
        "peak_tflops": 989.4,
        "peak_gbps": 3350,
        "peak_source": "glennklockwood.com/garden/processors/h100",
        "frac_peak_flops": 0.788,
        "correct": True,
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not DROP}


DROP = object()


def line(value: Any) -> bytes:
    return json.dumps(value).encode()


def accepted(raw: bytes, context: LineContext = CONTEXT) -> Measurement:
    result = validate_line(raw, context)
    assert isinstance(result, Measurement), result
    return result


def rejected(raw: bytes, context: LineContext = CONTEXT) -> Rejected:
    result = validate_line(raw, context)
    assert isinstance(result, Rejected), result
    return result


# --- accepted records ------------------------------------------------------------------------


def test_reference_gemm_record_is_recomputed():
    m = accepted(line(record()))
    # 2·8192³ multiply-adds; A and B read (2 bytes each), C written (2 bytes).
    assert m.flops == 2 * 8192**3 == 1_099_511_627_776
    assert m.bytes == 3 * 2 * 8192 * 8192 == 402_653_184
    # 1.0995e12 FLOP in 1.411 ms
    assert m.achieved_tflops == pytest.approx(779.24, abs=0.01)
    assert m.achieved_gbps == pytest.approx(285.37, abs=0.01)
    assert m.gpu_sku == "H100-SXM5-80GB"
    assert m.peak_tflops == 989.4
    assert m.peak_gbps == 3350.0
    assert m.peak_source and "h100" in m.peak_source
    assert m.frac_peak_flops == pytest.approx(779.24 / 989.4, rel=1e-4)  # 0.7876
    assert m.frac_peak_bw == pytest.approx(285.37 / 3350, rel=1e-4)
    assert m.ts == datetime(2026, 11, 21, 18, 40, 5)  # naive UTC
    assert m.shape == '{"K":8192,"M":8192,"N":8192}'
    assert m.kernel_config == '{"BK":64,"BM":128,"BN":256,"num_stages":3,"num_warps":8}'
    assert m.warmup_ms == 25.0 and m.rep_ms == 100.0 and m.l2_flush is True
    assert m.n_samples is None and m.simulated is False and m.correct is True
    assert (m.gpu_index, m.node, m.pod, m.backend) == (3, "gpu-017", CONTEXT.pod, "cuda")


def test_claimed_derived_values_are_ignored():
    m = accepted(
        line(record(achieved_tflops=5000.0, peak_tflops=1.0, gpu_sku="B200", frac_peak_flops=9))
    )
    assert m.achieved_tflops == pytest.approx(779.24, abs=0.01)
    assert (m.gpu_sku, m.peak_tflops) == ("H100-SXM5-80GB", 989.4)


def test_fp8_gemm_uses_the_fp8_peak_and_a_bf16_output():
    # fp8 operands (1 byte), bf16 output (2 bytes): 8192² · (1 + 1 + 2)
    m = accepted(
        line(record(dtype="fp8", bytes=4 * 8192 * 8192, ms_p20=0.9, ms_p50=1.0, ms_p80=1.1))
    )
    assert m.bytes == 268_435_456
    assert m.achieved_tflops == pytest.approx(1_099.5116, rel=1e-6)
    assert m.peak_tflops == 1978.9


def test_memory_bound_records_have_no_flops_fraction():
    # copy of 2^28 fp32: read once, write once = 2 · 4 · 2^28 bytes; 0 FLOPs
    n = 2**28
    raw = line(
        record(benchmark="copy", shape={"N": n}, dtype="fp32", flops=0, bytes=8.0 * n)
        | {"ms_p20": 0.70, "ms_p50": 0.75, "ms_p80": 0.80}
    )
    m = accepted(raw)
    assert m.achieved_gbps == pytest.approx(8 * n / 0.75e-3 / 1e9)  # 2863.3 GB/s
    assert m.achieved_tflops == 0.0
    assert m.frac_peak_flops is None
    assert m.frac_peak_bw == pytest.approx(2863.31 / 3350, rel=1e-4)


def test_interpreter_records_are_kept_without_a_gpu_or_peak():
    raw = line(
        record(
            backend="interpreter",
            gpu_uuid=None,
            gpu_model=DROP,
            shape={"M": 256, "N": 256, "K": 256},
            flops=2 * 256**3,
            bytes=3 * 2 * 256 * 256,
            ms_p20=30.0,
            ms_p50=32.0,
            ms_p80=35.0,
        )
    )
    m = accepted(raw)
    assert m.backend == "interpreter"
    assert (m.gpu_sku, m.peak_tflops, m.peak_gbps, m.frac_peak_flops, m.frac_peak_bw) == (
        None,
        None,
        None,
        None,
        None,
    )


def test_unknown_gpu_gets_no_peak_never_a_guess():
    m = accepted(line(record(gpu_model="NVIDIA H100 PCIe")))
    assert m.gpu_sku is None and m.peak_tflops is None and m.frac_peak_flops is None


def test_gfd_spelling_and_offset_timestamps():
    m = accepted(line(record(gpu_model="NVIDIA-H100-80GB-HBM3", ts="2026-11-21T20:40:05+02:00")))
    assert m.gpu_sku == "H100-SXM5-80GB"
    assert m.ts == datetime(2026, 11, 21, 18, 40, 5)


def test_extra_fields_and_the_simulated_mark_are_allowed():
    m = accepted(line(record(simulated=True, harness_build="abc", frac_peak_bw=0.1)))
    assert m.simulated is True


def test_work_within_one_percent_is_accepted():
    m = accepted(line(record(flops=1.0995e12 * 1.009)))
    assert m.flops == 2 * 8192**3


def test_a_throughput_just_under_the_tolerance_is_accepted():
    # 989.4 · 1.05 = 1038.9 TFLOP/s; 1.0995e12 / 1.06 ms = 1037.3
    m = accepted(line(record(ms_p20=1.05, ms_p50=1.06, ms_p80=1.07)))
    assert m.frac_peak_flops == pytest.approx(1.0484, abs=1e-3)


def test_checks_against_the_pod_are_skipped_without_context():
    m = accepted(line(record(pod="elsewhere", node="other")), LineContext())
    assert m.pod == "elsewhere"


# --- every rejection reason ------------------------------------------------------------------


def with_token(field: str, token: str) -> bytes:
    """The reference record with ``field``'s value replaced by a raw JSON token, as Python's
    ``json.dumps`` writes NaN and Infinity."""
    raw = json.dumps(record(**{field: 12345.5}))
    assert f'"{field}": 12345.5' in raw
    return raw.replace(f'"{field}": 12345.5', f'"{field}": {token}').encode()


TOO_LONG = line(record(kernel="x" * 70_000))

CASES = [
    ("malformed_json", b'{"schema_version": 1, "record_id": ', None),
    ("malformed_json", line(record()) + b" trailing", None),
    ("not_an_object", b"[1, 2, 3]", None),
    ("not_an_object", b'"a string"', None),
    ("line_too_long", TOO_LONG, "max_line_bytes"),
    ("unsupported_schema_version", line(record(schema_version=2)), "schema_version"),
    ("unsupported_schema_version", line({"schema_version": 3, "other": "shape"}), "3"),
    ("schema_violation", line(record(flops=DROP)), "`flops`"),
    ("schema_violation", line(record(gpu_index="3")), "$.gpu_index"),
    ("schema_violation", line(record(gpu_index=-1)), "$.gpu_index"),
    ("schema_violation", line(record(correct="yes")), "$.correct"),
    ("schema_violation", line(record(backend="rocm")), "$.backend"),
    ("schema_violation", line(record(ts="2026-11-21T18:40:05")), "$.ts"),
    ("schema_violation", line(record(shape={"M": 0, "N": 1, "K": 1})), "$.shape"),
    ("schema_violation", line(record(shape={"M": 8192, "N": 8192})), "shape"),
    ("schema_violation", line(record(dtype="int4")), "dtype"),
    ("schema_violation", line(record(gpu_uuid=None)), "`gpu_uuid`"),
    ("schema_violation", line(record(schema_version=DROP)), "`schema_version`"),
    ("not_finite", with_token("ms_p50", "NaN"), "ms_p50"),
    ("not_finite", with_token("flops", "Infinity"), "flops"),
    ("not_finite", with_token("bytes", "1e400"), "bytes"),  # overflows a double
    ("negative_value", line(record(ms_p20=0, ms_p50=0, ms_p80=0)), "`ms_p20`"),
    ("negative_value", line(record(ms_p20=-2, ms_p50=-1.0, ms_p80=1.0)), "`ms_p20`"),
    ("negative_value", line(record(bytes=-4.03e8)), "`bytes`"),
    ("negative_value", line(record(warmup_ms=-1)), "`warmup_ms`"),
    ("quantiles_out_of_order", line(record(ms_p20=1.5)), "ms_p20"),
    ("quantiles_out_of_order", line(record(ms_p80=1.2)), "ms_p80"),
    ("wrong_pod", line(record(pod="annex-gpubench-1-other")), "`pod`"),
    ("wrong_pod", line(record(namespace="default")), "`namespace`"),
    ("wrong_node", line(record(node="gpu-018")), "gpu-017"),
    ("unknown_benchmark", line(record(benchmark="sgemm")), "sgemm"),
    ("work_mismatch", line(record(flops=1.0995e12 * 1.02)), "`flops`"),
    ("work_mismatch", line(record(bytes=8.06e8)), "`bytes`"),
    ("above_peak", line(record(ms_p20=0.5, ms_p50=0.5, ms_p80=0.6)), "2199.0 TFLOP/s"),
]


@pytest.mark.parametrize(("reason", "raw", "named"), CASES)
def test_rejection(reason: str, raw: bytes, named: str | None):
    result = rejected(raw)
    assert result.reason_code == reason, result
    if named is not None:
        assert named in result.message, result.message


def test_every_line_reason_has_a_case():
    collection_only = {"duplicate_record", "log_unavailable"}
    assert {case[0] for case in CASES} == set(REASONS) - collection_only


def test_above_peak_message_says_achieved_peak_sku_and_dtype():
    message = rejected(line(record(ms_p20=0.5, ms_p50=0.5, ms_p80=0.6))).message
    # 1.0995e12 FLOP in 0.5 ms = 2199.0 TFLOP/s against 989.4 (H100 bf16 dense)
    for part in ("2199.0 TFLOP/s", "989.4", "H100-SXM5-80GB", "bf16", "1.05"):
        assert part in message


def test_above_hbm_peak_is_rejected_for_bandwidth():
    n = 2**28  # 2 GiB moved in 0.5 ms = 4295 GB/s > 3350 · 1.05
    raw = line(
        record(benchmark="copy", shape={"N": n}, dtype="fp32", flops=0, bytes=8.0 * n)
        | {"ms_p20": 0.5, "ms_p50": 0.5, "ms_p80": 0.5}
    )
    result = rejected(raw)
    assert result.reason_code == "above_peak"
    assert "4295.0 GB/s" in result.message and "3350" in result.message


def test_a_tolerance_from_the_settings_is_applied():
    # 1037.3 TFLOP/s is 1.048 × peak: accepted at 1.05, rejected at 1.01
    raw = line(record(ms_p20=1.05, ms_p50=1.06, ms_p80=1.07))
    strict = LineContext(pod=CONTEXT.pod, node=CONTEXT.node, peak_tolerance=1.01)
    assert rejected(raw, strict).reason_code == "above_peak"


def test_measurement_fields_are_the_record_columns():
    names = list(GPUBENCH_RECORDS.names)
    names.remove("pod_uid")
    names.remove("locator")
    assert list(MEASUREMENT_FIELDS) == names


def test_failed_correctness_check_is_kept_untimed() -> None:
    untimed = {"ms_p20": None, "ms_p50": None, "ms_p80": None, "correct": False}
    kept = validate_line(json.dumps(record(**untimed)).encode(), CONTEXT)
    assert isinstance(kept, Measurement)
    assert kept.correct is False
    assert kept.achieved_tflops is None and kept.frac_peak_flops is None
    assert kept.flops == 2 * 8192**3

    claims_correct = validate_line(json.dumps(record(**{**untimed, "correct": True})).encode())
    assert isinstance(claims_correct, Rejected)
    assert claims_correct.reason_code == "schema_violation"
    partly = validate_line(json.dumps(record(ms_p20=None, correct=False)).encode())
    assert isinstance(partly, Rejected) and "ms_p20" in partly.message


REAL_GPU_RECORDS = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    ("records", "sku"),
    [("h200_records.jsonl", "H200-SXM-141GB"), ("h100_records.jsonl", "H100-SXM5-80GB")],
)
def test_records_printed_on_a_real_gpu_validate_with_the_pods_placement(
    records: str, sku: str
) -> None:
    """The suite's own output on an H200 and an H100 (not hand-written records) passes every
    check.

    Outside a pod the placement fields are null, and the collector refuses that (records come
    from probe pods' logs); the manifest's downward API fills them, as done here.
    """
    lines = (REAL_GPU_RECORDS / records).read_bytes().splitlines()
    assert len(lines) == 6
    placed = {
        "cluster": "prod-a",
        "job": "annex-gpubench-202611261700",
        "namespace": CONTEXT.namespace,
        "pod": CONTEXT.pod,
        "node": CONTEXT.node,
    }
    seen = set()
    for raw in lines:
        unplaced = validate_line(raw, CONTEXT)
        assert isinstance(unplaced, Rejected) and unplaced.reason_code == "schema_violation"
        printed = json.loads(raw)
        result = validate_line(json.dumps({**printed, **placed}).encode(), CONTEXT)
        assert isinstance(result, Measurement), result
        assert result.correct and result.backend == "cuda" and result.gpu_sku == sku
        seen.add((result.benchmark, result.dtype))
        # annex recomputes the figures from shape, dtype and p50; they must agree with the GPU's.
        if result.benchmark == "gemm":
            flops = 2 * 8192**3
            assert result.achieved_tflops == pytest.approx(flops / printed["ms_p50"] / 1e9)
            assert 0.5 < result.frac_peak_flops < 1.0
            assert json.loads(result.kernel_config)["variant"] in ("pointer", "tma")
        else:
            assert 0.5 < result.frac_peak_bw < 1.0
    assert seen == {
        ("gemm", "bf16"), ("gemm", "fp8"), ("copy", "fp32"),
        ("triad", "fp32"), ("softmax", "bf16"), ("layernorm", "bf16"),
    }  # fmt: skip

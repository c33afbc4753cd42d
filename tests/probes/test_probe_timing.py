"""The timers: quantile maths, the perf_counter timer's procedure, and do_bench's wiring."""

from __future__ import annotations

import random

import numpy as np
import pytest
import triton.testing

from probes.gpubench import harness


@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 101])
def test_quantiles_are_numpys_linear_percentiles(n: int) -> None:
    rng = random.Random(n)
    samples = [rng.uniform(0.5, 3.0) for _ in range(n)]
    qs = [0.0, 0.2, 0.5, 0.8, 1.0]
    expected = np.percentile(samples, [100 * q for q in qs], method="linear")
    assert harness.quantiles(samples, qs) == pytest.approx(list(expected), rel=1e-12)


def test_quantiles_match_triton_testing() -> None:
    """The interpreter timer must summarise exactly as do_bench does on a GPU."""
    samples = [1.7, 1.2, 9.0, 1.3, 1.25, 1.4, 1.31]
    ours = harness.quantiles(samples, harness.QUANTILES)
    assert ours == pytest.approx(triton.testing._quantile(samples, list(harness.QUANTILES)))


def test_quantiles_by_hand() -> None:
    # sorted: 1, 2, 3, 4, 5; p20 at position 0.8 -> 1.8; p50 at 2 -> 3; p80 at 3.2 -> 4.2
    assert harness.quantiles([5.0, 1.0, 4.0, 2.0, 3.0]) == pytest.approx([1.8, 3.0, 4.2])
    assert harness.quantiles([2.5]) == [2.5, 2.5, 2.5]
    # the order asked for is the order returned
    assert harness.quantiles([1.0, 2.0, 3.0], [0.8, 0.2]) == pytest.approx([2.6, 1.4])


@pytest.mark.parametrize("bad", [[], [-0.1], [1.5]])
def test_quantiles_refuse_bad_input(bad: list[float]) -> None:
    samples = [] if bad == [] else [1.0, 2.0]
    qs = [0.5] if bad == [] else bad
    with pytest.raises(ValueError):
        harness.quantiles(samples, qs)


class FakeClock:
    """A clock that advances only when the benchmarked function runs."""

    def __init__(self, durations_ms: list[float]) -> None:
        self.now = 0.0
        self.durations = list(durations_ms)
        self.calls = 0

    def __call__(self) -> float:
        return self.now

    def run(self) -> None:
        self.now += self.durations[min(self.calls, len(self.durations) - 1)] / 1e3
        self.calls += 1


def test_perf_counter_bench_follows_do_bench_procedure() -> None:
    # estimate 20 ms -> warm-up max(1, 25/20) = 1 call, repeats min(5, 100/20) = 5 calls
    clock = FakeClock([20.0, 99.0, 5.0, 1.0, 4.0, 2.0, 3.0])
    values, n = harness.perf_counter_bench(clock.run, warmup_ms=25, rep_ms=100, clock=clock)
    assert n == 5
    assert clock.calls == 1 + 1 + 5
    assert values == pytest.approx([1.8, 3.0, 4.2])  # the warm-up's 99 ms is not a sample


def test_perf_counter_bench_caps_repeats_and_skips_warmup_when_zero() -> None:
    clock = FakeClock([0.5])  # cheap: 100/0.5 = 200 repeats wanted, capped at 5
    values, n = harness.perf_counter_bench(clock.run, warmup_ms=0, rep_ms=100, clock=clock)
    assert (n, clock.calls) == (5, 6)
    assert values == pytest.approx([0.5, 0.5, 0.5])
    slow = FakeClock([400.0])  # slower than the budget: still one timed call
    _, n = harness.perf_counter_bench(slow.run, warmup_ms=0, rep_ms=100, clock=slow)
    assert (n, slow.calls) == (1, 2)


def test_perf_counter_bench_times_real_work() -> None:
    values, n = harness.perf_counter_bench(lambda: sum(range(20000)), warmup_ms=1, rep_ms=5)
    assert 1 <= n <= harness.INTERPRETER_MAX_REPEATS
    assert 0 < values[0] <= values[1] <= values[2]


def test_gpu_timer_asks_do_bench_for_explicit_quantiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """do_bench returns the mean unless given quantiles, and then in the order given."""
    seen = {}
    times = [1.5, 1.1, 1.2, 1.3, 1.9]

    def fake_do_bench(
        fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"
    ):
        seen.update(warmup=warmup, rep=rep, quantiles=quantiles)
        fn()
        return triton.testing._summarize_statistics(times, quantiles, return_mode)

    monkeypatch.setattr(triton.testing, "do_bench", fake_do_bench)
    calls = []
    samples = harness.measure_time(lambda: calls.append(1), harness.DO_BENCH)
    assert seen == {"warmup": 25.0, "rep": 100.0, "quantiles": [0.2, 0.5, 0.8]}
    assert calls == [1]
    assert (samples.ms_p20, samples.ms_p50, samples.ms_p80) == pytest.approx(
        harness.quantiles(times)
    )
    assert samples.ms_p20 < samples.ms_p50 < samples.ms_p80
    assert samples.n_samples is None  # do_bench does not say how many calls it timed


def test_interpreter_timer_spec_is_bounded() -> None:
    spec = harness.PERF_COUNTER
    assert (spec.timer, spec.l2_flush, spec.max_repeats) == ("perf_counter", False, 5)
    assert (harness.DO_BENCH.warmup_ms, harness.DO_BENCH.rep_ms) == (25.0, 100.0)
    assert harness.DO_BENCH.l2_flush is True

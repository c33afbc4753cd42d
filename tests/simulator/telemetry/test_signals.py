"""The simulated DCGM signals, the exporter's text, and the simulated Prometheus' PromQL subset.

Expectations come from the world's activity (role, pod, degradation) and the hardware facts,
not from the signal code's own constants where avoidable.
"""

from __future__ import annotations

import math
import re

import pytest

from simulator.telemetry import exporter, prometheus, signals
from simulator.telemetry.server import _node_ips
from simulator.world import build_world
from simulator.world.activity import GpuActivity, gpu_activity


@pytest.fixture(scope="module")
def world():
    return build_world(20)


@pytest.fixture(scope="module")
def activities(world) -> list[GpuActivity]:
    return gpu_activity(world)


@pytest.fixture(scope="module")
def now(world) -> float:
    return world.now.timestamp()


def first(activities, role: str, **extra) -> GpuActivity:
    for a in activities:
        if (
            a.role == role
            and not a.gpu.mig_devices
            and all(getattr(a, k) == v for k, v in extra.items())
        ):
            return a
    pytest.fail(f"the test world has no {role} GPU with {extra}: the fixture must provide one")


def test_signals_are_deterministic_for_any_time(world, activities, now) -> None:
    again = gpu_activity(build_world(20))
    instants = [now, now - 3 * 86400 + 17.5, now - 400 * 86400, now + 3600]
    for a, b in zip(activities[::7], again[::7], strict=True):
        assert a.gpu.uuid == b.gpu.uuid
        for field in signals.FIELDS:
            for t in instants:
                x = signals.GpuSignals(a).value(field, t)
                y = signals.GpuSignals(b).value(field, t)
                assert x == y, (field, t)


def test_roles_shape_the_signals(activities, now) -> None:
    training = first(activities, "training", degraded=None)
    s = signals.signals_for(training)
    tdp = signals.hardware(training.gpu.product).tdp_watts
    for t in (now, now - 1800, now - 7200):
        if t < training.since:
            continue
        assert 0.4 <= s.value("tensor_active", t) <= 0.65
        assert s.value("gr_engine_active", t) >= 0.9
        assert s.value("sm_active", t) >= 0.75
        assert 0.75 * tdp <= s.value("power_usage", t) <= 0.95 * tdp
        assert s.value("gpu_util", t) >= 0.9
    idle = first(activities, "idle")
    s = signals.signals_for(idle)
    assert s.value("gr_engine_active", now) < 0.05
    assert s.value("tensor_active", now) == 0.0
    assert s.value("power_usage", now) < 0.25 * signals.hardware(idle.gpu.product).tdp_watts
    free = first(activities, "free")
    s = signals.signals_for(free)
    assert s.value("gr_engine_active", now) == 0.0 and s.value("gpu_util", now) == 0.0
    assert s.value("fb_used", now) == 0.0 and s.value("power_usage", now) > 30


def test_before_since_a_gpu_is_free(activities) -> None:
    training = first(activities, "training", degraded=None)
    s = signals.signals_for(training)
    before = training.since - 600
    assert s.value("gr_engine_active", before) == 0.0
    assert s.value("gr_engine_active", training.since + 600) > 0.9


def test_integer_fields_are_whole_numbers(activities, now) -> None:
    for a in activities[::5]:
        s = signals.signals_for(a)
        for field in ("sm_clock", "mem_clock", "gpu_temp", "memory_temp", "fb_used", "fb_free"):
            v = s.value(field, now - 1234)
            assert v is None or v == int(v), field
        util = s.value("gpu_util", now)
        assert util is None or round(util * 100) == pytest.approx(util * 100, abs=1e-9)


def test_energy_is_the_integral_of_power(activities, now) -> None:
    training = first(activities, "training", degraded=None)
    s = signals.signals_for(training)
    t0, t1, n = now - 3600, now, 7200
    h = (t1 - t0) / n
    midpoint = sum(s.value("power_usage", t0 + (i + 0.5) * h) for i in range(n)) * h
    delta = s.value("total_energy_consumption", t1) - s.value("total_energy_consumption", t0)
    assert delta == pytest.approx(midpoint, rel=1e-6)


def test_energy_resets_where_the_driver_reloads(activities, now) -> None:
    reloaded = [a for a in activities if now - 3 * 3600 < a.driver_loaded_at < now]
    assert reloaded, "the world should reload some drivers recently"
    a = reloaded[0]
    s = signals.signals_for(a)
    load = a.driver_loaded_at
    assert s.value("total_energy_consumption", load) == pytest.approx(0.0, abs=1e-3)
    assert s.value("total_energy_consumption", load - 1) > 1e5
    after = s.value("total_energy_consumption", load + 60)
    assert after == pytest.approx(
        sum(s.value("power_usage", load + i + 0.5) for i in range(60)), rel=1e-3
    )


def test_degraded_gpus(activities, now) -> None:
    by_kind = {a.degraded: a for a in activities if a.degraded}
    assert set(by_kind) == {"slow", "hot", "xid"}
    slow = signals.signals_for(by_kind["slow"])
    max_mhz = signals.hardware(by_kind["slow"].gpu.product).max_sm_mhz
    assert slow.value("sm_clock", now) == pytest.approx(0.6 * max_mhz, abs=1)
    hot = signals.signals_for(by_kind["hot"])
    assert min(hot.value("gpu_temp", now - 60 * i) for i in range(120)) >= 90
    hot_max = signals.hardware(by_kind["hot"].gpu.product).max_sm_mhz
    assert hot.value("sm_clock", now) <= 0.8 * hot_max  # throttled
    xid = signals.signals_for(by_kind["xid"])
    codes = {xid.value("xid_errors", now - 60 * i) for i in range(6 * 60)}
    assert codes - {0.0} and codes - {0.0} <= {13.0, 31.0, 48.0}
    assert xid.value("correctable_remapped_rows", now) > 0
    healthy = first(activities, "training", degraded=None)
    assert signals.signals_for(healthy).value("correctable_remapped_rows", now) == 0


def test_unavailable_gpus_report_only_xid_79(activities, now) -> None:
    gone = first(activities, "unavailable")
    s = signals.signals_for(gone)
    assert s.value("xid_errors", now) == 79
    assert s.value("power_usage", now) is None
    assert s.value("power_usage", gone.since - 3600) is not None  # before it fell off
    with pytest.raises(LookupError):
        signals.value(gone, "gpu_temp", now)


# -- the exporter's text ---------------------------------------------------------------------


def _node_text(world, activities, generation: str, now: float) -> tuple[str, list[GpuActivity]]:
    by_node: dict[str, list[GpuActivity]] = {}
    for a in activities:
        if a.exporter_generation == generation:
            by_node.setdefault(a.gpu.node, []).append(a)
    node = next(n for n in sorted(by_node) if any(a.pod for a in by_node[n]))
    return exporter.render(by_node[node], now, pool=world.node_pools[node]), by_node[node]


def test_exporter_text_is_laid_out_like_dcgm_exporter(world, activities, now) -> None:
    text, acts = _node_text(world, activities, "4.8", now)
    lines = text.splitlines()
    assert lines[0] == "# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz)."
    assert lines[1] == "# TYPE DCGM_FI_DEV_SM_CLOCK gauge"
    assert "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter" in lines
    sample = re.compile(r'^(\w+)\{((?:\w+="[^"]*",?)+)\} (-?\d+(?:\.\d{6})?)$')  # no timestamps
    held = next(a for a in acts if a.pod and now >= a.since)
    for line in lines:
        if line.startswith("#"):
            continue
        m = sample.match(line)
        assert m, line
        keys = re.findall(r'(\w+)="', m.group(2))
        assert keys[:5] == ["gpu", "UUID", "pci_bus_id", "device", "modelName"]
        assert keys[5] in ("Hostname", "hostname", "GPU_I_PROFILE")
        if f'UUID="{held.gpu.uuid}"' in line:
            assert keys[-4:] == ["DCGM_FI_DRIVER_VERSION", "container", "namespace", "pod"]
            assert f'pod="{held.pod}"' in line
    power = next(line for line in lines if line.startswith("DCGM_FI_DEV_POWER_USAGE{"))
    assert re.search(r" \d+\.\d{6}$", power)  # %f
    util = next(line for line in lines if line.startswith("DCGM_FI_DEV_GPU_UTIL{"))
    assert re.search(r" \d+$", util)  # %d percent


def test_exporter_generation_49_uses_dcgm_47_names(world, activities, now) -> None:
    text, _ = _node_text(world, activities, "4.9", now)
    assert "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL{" in text
    assert "DCGM_FI_DEV_SM_CLOCK_HERTZ{" in text and "DCGM_FI_DEV_SM_CLOCK{" not in text
    assert 'DCGM_FI_SYSTEM_DRIVER_VERSION="' in text and "DCGM_FI_DRIVER_VERSION" not in text
    assert 'hostname="' in text and 'Hostname="' not in text
    clock = re.search(r"DCGM_FI_DEV_SM_CLOCK_HERTZ\{[^}]*\} (\d+)", text)
    assert clock and int(clock.group(1)) % 1_000_000 == 0


# -- the PromQL subset and query_range semantics -----------------------------------------------


@pytest.mark.parametrize(
    ("query", "labels", "expected"),
    [
        ("DCGM_FI_DEV_GPU_UTIL", {"__name__": "DCGM_FI_DEV_GPU_UTIL"}, True),
        ('{__name__=~"DCGM_FI_.*"}', {"__name__": "DCGM_FI_DEV_GPU_UTIL"}, True),
        ('{__name__=~"DCGM_FI"}', {"__name__": "DCGM_FI_DEV_GPU_UTIL"}, False),  # anchored
        ('x{a!="1", b=~"p.*",}', {"__name__": "x", "a": "2", "b": "pod"}, True),
        ("x{a!~'1|2'}", {"__name__": "x", "a": "2"}, False),
        ('x{a=""}', {"__name__": "x"}, True),  # a missing label is the empty string
        ('{__name__=~"DCGM_.+",__name__!~"DCGM_FI_DEV_GPU_UTIL"}', {"__name__": "DCGM_X"}, True),
        ('x{a="q\\"uote"}', {"__name__": "x", "a": 'q"uote'}, True),
    ],
)
def test_selector_matching(query: str, labels: dict, expected: bool) -> None:
    assert prometheus.parse_selector(query).matches(labels) is expected


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", "no expression found in input"),
        ('{a=""}', "vector selector must contain at least one non-empty matcher"),
        ("sum(x)", "parse error"),
        ('x{a="1"', "parse error"),
        ('x{a=~"("}', "invalid regular expression"),
    ],
)
def test_selector_errors_are_bad_data(query: str, message: str) -> None:
    with pytest.raises(prometheus.BadData, match=re.escape(message)) as info:
        prometheus.parse_selector(query)
    assert str(info.value).startswith('invalid parameter "query": 1:')


def test_parameters_are_parsed_and_refused_as_prometheus_words_it() -> None:
    assert prometheus.parse_time("start", "1793610000.1234") == pytest.approx(1793610000.123)
    assert prometheus.parse_time("start", "2026-11-02T09:00:00Z") == 1793610000
    assert prometheus.parse_duration("step", "1m30s") == 90
    assert prometheus.parse_duration("step", "15") == 15
    with pytest.raises(prometheus.BadData) as info:
        prometheus.parse_time("start", "yesterday")
    assert (
        str(info.value)
        == 'invalid parameter "start": cannot parse "yesterday" to a valid timestamp'
    )
    with pytest.raises(prometheus.BadData) as info:
        prometheus.parse_duration("step", "fast")
    assert str(info.value) == 'invalid parameter "step": cannot parse "fast" to a valid duration'
    with pytest.raises(prometheus.BadData, match="end timestamp must not be before start time"):
        prometheus.check_range(100, 50, 1)
    with pytest.raises(prometheus.BadData, match="zero or negative query resolution step"):
        prometheus.check_range(0, 50, 0)
    prometheus.check_range(0, 11_000, 1)  # 11,001 points: Prometheus still answers
    with pytest.raises(prometheus.BadData) as info:
        prometheus.check_range(0, 11_001, 1)
    assert str(info.value) == (
        "exceeded maximum resolution of 11,000 points per timeseries. "
        "Try decreasing the query resolution (?step=XX)"
    )


def test_range_matrix_semantics(world, activities, now) -> None:
    catalog = prometheus.build_catalog(activities, _node_ips(world), world.node_pools)
    held = first(activities, "training", degraded=None)
    query = f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{UUID="{held.gpu.uuid}"}}'
    if held.exporter_generation == "4.9":
        query = query.replace("GR_ENGINE_ACTIVE", "GR_ENGINE_UTIL_RATIO")
    series = prometheus.select(catalog, prometheus.parse_selector(query))
    start, end, step = held.since - 300, held.since + 290, 60.0
    result = prometheus.evaluate_range(series, start, end, step)
    assert len(result) == 2  # the workload labels change at `since`: a second series
    without, with_pod = sorted(result, key=lambda r: "exported_pod" in r["metric"])
    assert with_pod["metric"]["exported_pod"] == held.pod
    assert with_pod["metric"]["exported_namespace"] == held.namespace
    assert with_pod["metric"]["job"] == "dcgm-exporter"
    assert with_pod["metric"]["instance"].endswith(":9400")
    assert with_pod["metric"]["pod"].startswith("nvidia-dcgm-exporter-")
    assert "exported_pod" not in without["metric"]
    times = [t for r in result for t, _ in r["values"]]
    assert sorted(times) == [start + k * step for k in range(10)]  # end inclusive when on grid
    s = signals.signals_for(held)
    for t, text in with_pod["values"]:
        assert isinstance(text, str)
        sample = math.floor(t / 15) * 15
        assert float(text) == pytest.approx(s.value("gr_engine_active", sample), abs=5e-7)

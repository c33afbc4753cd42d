"""The telemetry of a world with a past: a range query over a past pod's life reads that pod's
role, the GPU reads free between its past pods, the exporter names the past pod at a past
instant, and the energy counter stays the
integral of power (monotonic between driver loads) across the past's role changes."""

from __future__ import annotations

import itertools
import math

import pytest

from simulator.telemetry import exporter, prometheus, signals
from simulator.telemetry.server import _node_ips
from simulator.world import build_world
from simulator.world.activity import gpu_activity
from simulator.world.history import WorldHistory


@pytest.fixture(scope="module")
def world():
    world = build_world(60, seed=7)
    WorldHistory(world, days=30)
    return world


@pytest.fixture(scope="module")
def activities(world):
    return gpu_activity(world)


@pytest.fixture(scope="module")
def catalog(world, activities):
    return prometheus.build_catalog(activities, _node_ips(world), world.node_pools)


def held_in_past(activities, role: str):
    """A whole GPU (not MIG-split, healthy, not degraded) a past pod of `role` held, with a
    gap after that holding; and the holding."""
    for a in activities:
        if a.gpu.mig_devices or a.degraded:
            continue
        for held, following in zip(a.past, a.past[1:], strict=False):
            if held.role == role and following.begin - held.end > 1800:
                return a, held
    pytest.fail(f"the test world's past should hold a GPU in role {role}")


def busy_query(activity) -> str:
    name = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
    if activity.exporter_generation == "4.9":
        name = "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO"
    return f'{name}{{UUID="{activity.gpu.uuid}"}}'


@pytest.mark.parametrize(("role", "low", "high"), [("research", 0.2, 0.7), ("balloon", 0.0, 0.05)])
def test_a_range_query_over_a_past_pod_reads_its_role(catalog, activities, role, low, high) -> None:
    activity, held = held_in_past(activities, role)
    series = prometheus.select(catalog, prometheus.parse_selector(busy_query(activity)))
    step = 300.0
    result = prometheus.evaluate_range(series, held.begin + step, held.end - step, step)
    assert len(result) == 1
    values = [float(text) for _, text in result[0]["values"]]
    assert low <= sum(values) / len(values) <= high, values[:5]
    # the series names the past pod, as the exporter did while it held the GPU
    metric = result[0]["metric"]
    assert (metric["exported_pod"], metric["exported_namespace"]) == (held.pod, held.namespace)


def test_between_past_pods_a_gpu_reads_free(catalog, activities) -> None:
    activity, held = held_in_past(activities, "research")
    following = activity.past[activity.past.index(held) + 1]
    series = prometheus.select(catalog, prometheus.parse_selector(busy_query(activity)))
    result = prometheus.evaluate_range(series, held.end + 60, following.begin - 60, 60.0)
    assert len(result) == 1
    assert {float(text) for _, text in result[0]["values"]} == {0.0}
    assert "exported_pod" not in result[0]["metric"]
    power = signals.signals_for(activity).value("power_usage", (held.end + following.begin) / 2)
    assert power < 200.0  # idle power


def test_the_exporter_names_the_past_pod_at_a_past_instant(world, activities) -> None:
    activity, held = held_in_past(activities, "research")
    middle = (held.begin + held.end) / 2
    text = exporter.render([activity], middle)
    assert f'pod="{held.pod}"' in text
    assert f'pod="{held.pod}"' not in exporter.render([activity], held.end + 60)


def test_prometheus_holds_what_the_exporter_printed_at_every_past_instant(activities) -> None:
    """Across a past pod's life and the free stretches either side, the range query returns
    one series per label set, and at each step the series that has a sample is the one whose
    labels the exporter printed at that instant, with the exporter's value."""
    activity, held = held_in_past(activities, "research")
    following = activity.past[activity.past.index(held) + 1]
    start, end, step = held.begin - 1800, following.begin + 1800, 300.0
    name = busy_query(activity).split("{")[0]
    query = prometheus.parse_selector(busy_query(activity))
    catalog = prometheus.build_catalog([activity], {}, {})
    result = prometheus.evaluate_range(
        prometheus.select(catalog, query, start, end), start, end, step
    )
    label_sets = [tuple(sorted(r["metric"].items())) for r in result]
    # the free stretches either side are one series (one label set), then the two pods'
    assert len(label_sets) == len(set(label_sets)) == 3
    stored = {
        t: (r["metric"].get("exported_pod"), float(text)) for r in result for t, text in r["values"]
    }
    instants = [start + k * step for k in range(int((end - start) // step) + 1)]
    assert sorted(stored) == instants  # exactly one series has each instant's sample
    for t in instants:
        printed = exporter.render([activity], t)
        line = next(x for x in printed.splitlines() if x.startswith(name + "{"))
        pod = next((p.split('"')[1] for p in line.split(",") if p.startswith("pod=")), None)
        assert stored[t] == (pod, float(line.rsplit(" ", 1)[1])), t


def test_energy_stays_the_integral_of_power_across_the_past(activities) -> None:
    activity, held = held_in_past(activities, "research")
    s = signals.signals_for(activity)
    t0, t1 = held.begin - 3600, held.begin + 3600  # free, then the past pod's role
    if s.since_load(t1) < t1 - t0:
        pytest.skip("a driver load inside the window")
    n = 14400
    h = (t1 - t0) / n
    midpoint = sum(s.value("power_usage", t0 + (i + 0.5) * h) for i in range(n)) * h
    delta = s.value("total_energy_consumption", t1) - s.value("total_energy_consumption", t0)
    assert delta == pytest.approx(midpoint, rel=1e-5)
    # monotonic between driver loads over the whole past, vectorised and single values agree
    times = [activity.past[0].begin - 86400 + 600.0 * k for k in range(24 * 6 * 40)]
    energies = s.values("total_energy_consumption", times)
    assert energies[::97] == [s.value("total_energy_consumption", t) for t in times[::97]]
    pairs = list(zip(times, energies, strict=True))
    for (ta, ea), (tb, eb) in itertools.pairwise(pairs):
        if s.since_load(tb) > tb - ta:  # no load between
            assert eb >= ea
        else:
            assert eb < ea or math.isclose(s.since_load(tb), 0.0, abs_tol=600)

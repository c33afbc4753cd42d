"""What each simulated GPU's DCGM fields read at any instant: deterministic, history included.

Every signal is a closed-form function of time, so the exporters (the present) and the
simulated Prometheus (the past) agree by construction, and a test can recompute any value
from the world alone:

* ratios (busy, SM, tensor, DRAM activity) are a per-role level, drawn once per GPU from the
  seeded RNG, plus a small *wobble*: two sines of incommensurate periods, so the series look
  alive without any hidden state;
* power is a per-role level (training ~0.85 x TDP, idle 75-90 W) plus the same kind of wobble;
* the energy counter is **exactly** the integral of the power gauge since
  ``driver_loaded_at`` (sines integrate in closed form). Before that instant the driver had
  been loaded ``RELOAD_PERIOD`` earlier, and so on back, so the counter resets to zero at
  every reload: ``E(t) = integral of P from the last reload <= t to t``;
* a GPU is "free" (no pod, idle power) before its activity's ``since`` and in its role after;
  where the world has a history, before ``since`` it is in the role of each past pod that held
  it (the activity's ``past``) during that pod's life and "free" between: the phases form a
  timeline, and the energy counter integrates power across it (still exact, still reset at
  each driver load, so monotonic between loads). A past role other than the present one
  draws its constants from an RNG of its own, so the present's values do not move;
* degraded GPUs: ``slow`` runs its SM clock at ~60 % with less tensor work, ``hot`` sits at
  >= 90 degC with throttled clocks, ``xid`` shows XID 13/31/48 in short windows and has
  remapped rows and ECC errors; ``unavailable`` GPUs report only XID 79 (fallen off the bus).

Values are in the canonical units annex stores (ratio, W, J, MHz, degC, MiB, count, XID code);
``exporter`` converts to each exporter generation's units and number formats. Integer DCGM
fields (GPU_UTIL percent, clocks, temperatures, memory, counters) are whole numbers here, so
that both generations round-trip exactly.
"""

from __future__ import annotations

import bisect
import math
import random
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the activity module is written alongside; only its attributes are used
    from simulator.world.activity import GpuActivity

FIELDS: tuple[str, ...] = (
    "gpu_util",
    "gr_engine_active",
    "sm_active",
    "sm_occupancy",
    "tensor_active",
    "dram_active",
    "power_usage",
    "total_energy_consumption",
    "sm_clock",
    "mem_clock",
    "gpu_temp",
    "memory_temp",
    "xid_errors",
    "fb_used",
    "fb_free",
    "ecc_sbe_vol_total",
    "ecc_dbe_vol_total",
    "uncorrectable_remapped_rows",
    "correctable_remapped_rows",
    "row_remap_failure",
    "pcie_replay_counter",
)
"""The canonical fields the simulated exporters serve (DCGM's default set plus SM_ACTIVE,
SM_OCCUPANCY and the ECC volatile totals, as a custom counters CSV would enable)."""

PROFILING = ("gr_engine_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active")
"""Fields DCGM reports per MIG instance on a MIG-partitioned GPU."""

RELOAD_PERIOD = 40 * 86400.0
"""Before ``driver_loaded_at`` the driver was last loaded this much earlier (and so on)."""

XID_PERIOD = 6 * 3600.0
XID_WINDOW = 20 * 60.0
XID_CODES = (13, 31, 48)
XID_FALLEN_OFF_BUS = 79


@dataclass(frozen=True)
class Hardware:
    """Per-product facts: TDP, clocks, idle power (simulated, plausible values)."""

    tdp_watts: float
    max_sm_mhz: int
    idle_sm_mhz: int
    mem_mhz: int
    idle_watts: tuple[float, float]  # range an idle GPU of this kind draws


_HARDWARE = {
    "H100": Hardware(700.0, 1980, 345, 2619, (75.0, 90.0)),
    "A100": Hardware(400.0, 1410, 210, 1593, (55.0, 70.0)),
    "GB200": Hardware(1200.0, 2062, 345, 3996, (110.0, 140.0)),
}
_DEFAULT_HARDWARE = Hardware(300.0, 1500, 300, 1500, (40.0, 60.0))


def hardware(product: str) -> Hardware:
    for key, facts in _HARDWARE.items():
        if key in product:
            return facts
    return _DEFAULT_HARDWARE


@dataclass(frozen=True)
class RoleLevels:
    busy: tuple[float, float]  # GR_ENGINE_ACTIVE range (drawn once per GPU)
    sm: tuple[float, float]
    occupancy: tuple[float, float]
    tensor: tuple[float, float]
    dram: tuple[float, float]
    power: tuple[float, float]  # fraction of TDP; None-like (0, 0) means idle power
    fb: tuple[float, float]  # fraction of memory used
    temp: tuple[float, float]  # degC
    wobble: float  # amplitude of the ratio wobble


_ROLES: dict[str, RoleLevels] = {
    "training": RoleLevels(
        (0.95, 0.98),
        (0.82, 0.88),
        (0.35, 0.5),
        (0.45, 0.6),
        (0.45, 0.6),
        (0.82, 0.88),
        (0.85, 0.95),
        (62.0, 70.0),
        0.015,
    ),
    "inference": RoleLevels(
        (0.5, 0.7),
        (0.35, 0.5),
        (0.2, 0.3),
        (0.15, 0.3),
        (0.25, 0.4),
        (0.45, 0.6),
        (0.55, 0.7),
        (50.0, 58.0),
        0.08,
    ),
    "research": RoleLevels(
        (0.3, 0.6),
        (0.2, 0.45),
        (0.1, 0.25),
        (0.05, 0.2),
        (0.1, 0.3),
        (0.3, 0.5),
        (0.3, 0.6),
        (45.0, 55.0),
        0.1,
    ),
    "idle": RoleLevels(
        (0.01, 0.03),
        (0.0, 0.01),
        (0.0, 0.01),
        (0.0, 0.0),
        (0.0, 0.01),
        (0.0, 0.0),
        (0.02, 0.08),
        (32.0, 38.0),
        0.005,
    ),
    "free": RoleLevels(
        (0.0, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
        (30.0, 35.0),
        0.0,
    ),
}
_ROLES["balloon"] = _ROLES["idle"]  # a placeholder pod holds the GPU and does nothing


@dataclass(frozen=True)
class _Wobble:
    """w(t) = 0.6 sin(a t + p) + 0.4 sin(b t + q), in [-1, 1], with a closed-form integral."""

    a: float
    p: float
    b: float
    q: float

    def at(self, t: float) -> float:
        return 0.6 * math.sin(self.a * t + self.p) + 0.4 * math.sin(self.b * t + self.q)

    def integral(self, t0: float, t1: float) -> float:
        a, p, b, q = self.a, self.p, self.b, self.q
        return (
            0.6 * (math.cos(a * t0 + p) - math.cos(a * t1 + p)) / a
            + 0.4 * (math.cos(b * t0 + q) - math.cos(b * t1 + q)) / b
        )


def _wobble(rng: random.Random) -> _Wobble:
    return _Wobble(
        2 * math.pi / rng.uniform(600.0, 1500.0),
        rng.uniform(0, 2 * math.pi),
        2 * math.pi / rng.uniform(90.0, 240.0),
        rng.uniform(0, 2 * math.pi),
    )


@dataclass(frozen=True)
class _Phase:
    """One role's constants for one GPU."""

    busy: float
    sm: float
    occupancy: float
    tensor: float
    dram: float
    power: float  # watts
    power_amp: float
    fb_used: int
    temp: float
    amp: float


class GpuSignals:
    """The signals of one GPU, its constants drawn once from a seed of its UUID."""

    def __init__(self, activity: GpuActivity) -> None:
        self.activity = activity
        gpu = activity.gpu
        self.hw = hardware(gpu.product)
        self.memory_mib = int(gpu.memory_mib)
        self.reserved_mib = 512
        rng = random.Random(zlib.crc32(gpu.uuid.encode()))
        self.wobble = _wobble(rng)
        self.power_wobble = _wobble(rng)
        self.idle_watts = rng.uniform(*self.hw.idle_watts)
        self.free = self._phase("free", rng)
        self.role = self._phase(activity.role if activity.role in _ROLES else "free", rng)
        self.since = float(activity.since)
        self.loaded = float(activity.driver_loaded_at)
        self.degraded = activity.degraded
        self.unavailable = activity.role == "unavailable"
        self.xid_phase = rng.uniform(0, XID_PERIOD)
        self.pcie_rate = rng.uniform(0.0, 2.0) / 86400.0  # replays per second, mostly ~0
        self._anchors: dict[tuple[bool, float], tuple[float, float, float]] = {}
        # the phases over time where the GPU has a past: starts (ascending) and their phases
        self._starts: list[float] = []
        self._phases: list[_Phase] = []
        self._cumulative: list[float] = []
        past = getattr(activity, "past", ())
        if past:
            self._timeline(past)

    def _timeline(self, past) -> None:
        """Phases from the past holdings: free, each holding's role, free between, then the
        present role from ``since``; and the energy integral at each start (the first finite
        start is the reference: there it is zero)."""
        starts, phases = [-math.inf], [self.free]
        drawn: dict[str, _Phase] = {"free": self.free}
        if self.activity.role in _ROLES:
            drawn[self.activity.role] = self.role
        for held in past:
            role = held.role if held.role in _ROLES else "free"
            phase = drawn.get(role)
            if phase is None:
                rng = random.Random(f"{self.activity.gpu.uuid}:past:{role}")
                phase = drawn[role] = self._phase(role, rng)
            if held.begin == starts[-1]:
                phases[-1] = phase
            else:
                starts.append(held.begin)
                phases.append(phase)
            starts.append(held.end)
            phases.append(self.free)
        # the present role from `since`, or (a GPU free at the present) after its last holding
        if self.since <= starts[-1]:
            phases[-1] = self.role
        else:
            starts.append(self.since)
            phases.append(self.role)
        antiderivative = self._antiderivative
        cumulative = [0.0, 0.0]
        for k in range(1, len(starts) - 1):
            ph, s0, s1 = phases[k], starts[k], starts[k + 1]
            cumulative.append(
                cumulative[-1]
                + ph.power * (s1 - s0)
                + ph.power_amp * (antiderivative(s1) - antiderivative(s0))
            )
        self._starts, self._phases, self._cumulative = starts, phases, cumulative

    def phase_at(self, t: float) -> _Phase:
        """The phase the GPU is in at ``t`` (its role then, or free)."""
        if not self._starts:
            return self.role if t >= self.since else self.free
        return self._phases[bisect.bisect_right(self._starts, t) - 1]

    def _integral(self, t: float) -> float:
        """Energy from the timeline's reference to ``t`` (negative before it)."""
        k = bisect.bisect_right(self._starts, t) - 1
        ph = self._phases[k]
        s0 = self._starts[k] if k else self._starts[1]
        return (
            self._cumulative[k]
            + ph.power * (t - s0)
            + ph.power_amp * (self._antiderivative(t) - self._antiderivative(s0))
        )

    def _phase(self, role: str, rng: random.Random) -> _Phase:
        lv = _ROLES[role]
        tensor = rng.uniform(*lv.tensor)
        sm = rng.uniform(*lv.sm)
        power_frac = rng.uniform(*lv.power)
        degraded = self.activity.degraded if role != "free" else None
        if degraded == "slow":
            tensor *= 0.6
            sm *= 0.9
            power_frac *= 0.8
        power = self.idle_watts if power_frac == 0.0 else power_frac * self.hw.tdp_watts
        power = max(power, self.idle_watts)
        temp = rng.uniform(*lv.temp)
        if self.activity.degraded == "hot":  # bad cooling: hot whatever the load
            temp = max(temp, 90.0) + 2.0
        return _Phase(
            busy=rng.uniform(*lv.busy),
            sm=sm,
            occupancy=rng.uniform(*lv.occupancy),
            tensor=tensor,
            dram=rng.uniform(*lv.dram),
            power=power,
            power_amp=0.03 * power if role not in ("free", "idle", "balloon") else 1.5,
            fb_used=int(rng.uniform(*lv.fb) * self.memory_mib),
            temp=temp,
            amp=lv.wobble,
        )

    # -- single values -------------------------------------------------------------------

    def has(self, field: str) -> bool:
        """Whether the exporter reports this field for this GPU at all (at some time)."""
        return not (field == "gpu_util" and self.activity.gpu.mig_devices)

    def reports(self, field: str, t: float) -> bool:
        """Whether the field has a value at ``t``: after falling off the bus, only XID 79."""
        if not self.has(field):
            return False
        return not (self.unavailable and t >= self.since and field != "xid_errors")

    def value(self, field: str, t: float) -> float | None:
        """The field's value at ``t`` in canonical units; None where the GPU reports nothing."""
        if not self.reports(field, t):
            return None
        if self.unavailable and t >= self.since:
            return float(XID_FALLEN_OFF_BUS)
        ph = self.phase_at(t)
        vector = _VECTOR.get(field)
        if vector is not None:  # the very arithmetic of ``values``: both agree to the bit
            return vector(self, ph, [t])[0]
        compute = _COMPUTE.get(field)
        if compute is None:
            raise KeyError(f"unknown simulated field {field!r}")
        return compute(self, ph, t)

    def values(self, field: str, times: Sequence[float]) -> list[float | None]:
        """``value`` at many ascending instants (one series of a range query), vectorised
        per role stretch for the fields a range query reads most."""
        if not self.has(field):
            return [None] * len(times)
        if self.unavailable:
            return [self.value(field, t) for t in times]
        out: list[float | None] = []
        for ph, part in self._stretches(times):
            if not part:
                continue
            vector = _VECTOR.get(field)
            if vector is not None:
                out.extend(vector(self, ph, part))
            else:
                compute = _COMPUTE[field]
                out.extend([compute(self, ph, t) for t in part])
        return out

    def _stretches(self, times: Sequence[float]) -> list[tuple[_Phase, Sequence[float]]]:
        """``times`` cut where the phase changes."""
        if not self._starts:
            cut = bisect.bisect_left(times, self.since)
            return [(self.free, times[:cut]), (self.role, times[cut:])]
        if not times:
            return []
        starts, out, lo = self._starts, [], 0
        k = bisect.bisect_right(starts, times[0]) - 1
        while lo < len(times):
            following = starts[k + 1] if k + 1 < len(starts) else math.inf
            hi = bisect.bisect_left(times, following, lo)
            if hi > lo:
                out.append((self._phases[k], times[lo:hi]))
            lo, k = hi, k + 1
        return out

    def _ratios(self, level: float, ph: _Phase, times: Sequence[float]) -> list[float]:
        if level <= 0.0:
            return [0.0] * len(times)
        w, amp = self.wobble, ph.amp
        a, p, b, q = w.a, w.p, w.b, w.q
        ca, cb = 0.6 * amp, 0.4 * amp
        sin = math.sin
        out = [level + ca * sin(a * t + p) + cb * sin(b * t + q) for t in times]
        return [0.0 if v < 0.0 else (1.0 if v > 1.0 else v) for v in out]

    def _powers(self, ph: _Phase, times: Sequence[float]) -> list[float]:
        w, amp, base = self.power_wobble, ph.power_amp, ph.power
        a, p, b, q = w.a, w.p, w.b, w.q
        ca, cb = 0.6 * amp, 0.4 * amp
        sin = math.sin
        return [base + ca * sin(a * t + p) + cb * sin(b * t + q) for t in times]

    # -- field functions -----------------------------------------------------------------

    def _ratio(self, level: float, ph: _Phase, t: float) -> float:
        if level <= 0.0:
            return 0.0
        v = level + ph.amp * self.wobble.at(t)
        return 0.0 if v < 0.0 else (1.0 if v > 1.0 else v)

    def busy(self, ph: _Phase, t: float) -> float:
        return self._ratio(ph.busy, ph, t)

    def power(self, ph: _Phase, t: float) -> float:
        return ph.power + ph.power_amp * self.power_wobble.at(t)

    def energy(self, t: float) -> float:
        """Joules since the last driver load at or before ``t``: the exact integral of
        ``power`` over that stretch (closed form)."""
        return self._energies(self.phase_at(t), [t])[0]

    def _loaded_at(self, t: float) -> float:
        loaded = self.loaded
        if t < loaded:
            loaded -= RELOAD_PERIOD * math.ceil((loaded - t) / RELOAD_PERIOD)
        return loaded

    def _antiderivative(self, t: float) -> float:
        """V with V' = power wobble: integral of w from t0 to t1 is V(t1) - V(t0)."""
        w = self.power_wobble
        return -(0.6 * math.cos(w.a * t + w.p) / w.a + 0.4 * math.cos(w.b * t + w.q) / w.b)

    def _anchor(self, ph: _Phase, loaded: float) -> tuple[float, float, float]:
        """(s0, V(s0), E(s0)): where this phase's stretch since ``loaded`` starts counting."""
        key = (ph is self.role, loaded)
        hit = self._anchors.get(key)
        if hit is not None:
            return hit
        since, free = self.since, self.free
        if ph is self.role and loaded < since:  # the counter ran through the free stretch
            s0 = since
            e0 = free.power * (since - loaded) + free.power_amp * (
                self._antiderivative(since) - self._antiderivative(loaded)
            )
        else:
            s0, e0 = (max(loaded, since) if ph is self.role else loaded), 0.0
        hit = self._anchors[key] = (s0, self._antiderivative(s0), e0)
        return hit

    def _energies(self, ph: _Phase, times: Sequence[float]) -> list[float]:
        if self._starts:  # a timeline: the integral from the last load, across its phases
            integral, base, period = self._integral, self.loaded, RELOAD_PERIOD
            out = []
            for t in times:
                loaded = base if t >= base else base - period * math.ceil((base - t) / period)
                out.append(integral(t) - integral(loaded))
            return out
        w = self.power_wobble
        a, p, b, q = w.a, w.p, w.b, w.q
        ka, kb = 0.6 / a, 0.4 / b
        power, amp, cos = ph.power, ph.power_amp, math.cos
        base, period, ceil = self.loaded, RELOAD_PERIOD, math.ceil
        out = []
        for t in times:
            loaded = base if t >= base else base - period * ceil((base - t) / period)
            s0, v0, e0 = self._anchor(ph, loaded)
            v = -(ka * cos(a * t + p) + kb * cos(b * t + q))
            out.append(e0 + power * (t - s0) + amp * (v - v0))
        return out

    def sm_clock(self, ph: _Phase, t: float) -> float:
        hw = self.hw
        if ph.busy <= 0.05:
            base = float(hw.idle_sm_mhz)
        else:
            base = hw.max_sm_mhz - 15.0 * round(2 + 2 * self.wobble.at(t))
        if self.degraded == "slow":
            base = 0.6 * hw.max_sm_mhz
        elif self.degraded == "hot" and ph.busy > 0.05:
            base = 0.75 * hw.max_sm_mhz
        return float(round(base))

    def gpu_temp(self, ph: _Phase, t: float) -> float:
        return float(round(ph.temp + 1.5 * self.power_wobble.at(t)))

    def xid(self, t: float) -> float:
        if self.degraded != "xid":
            return 0.0
        k, offset = divmod(t - self.xid_phase, XID_PERIOD)
        return float(XID_CODES[int(k) % 3]) if offset < XID_WINDOW else 0.0

    def since_load(self, t: float) -> float:
        return t - self._loaded_at(t)


def _gpu_util(s: GpuSignals, ph: _Phase, t: float) -> float:
    busy = s.busy(ph, t)
    return round(min(1.0, busy + 0.02 if busy > 0 else 0.0) * 100) / 100


def _fb_used(s: GpuSignals, ph: _Phase, t: float) -> float:
    return float(ph.fb_used)


def _fb_free(s: GpuSignals, ph: _Phase, t: float) -> float:
    return float(s.memory_mib - s.reserved_mib - ph.fb_used)


def _sbe(s: GpuSignals, ph: _Phase, t: float) -> float:
    return float(int(s.since_load(t) // 7200)) if s.degraded == "xid" else 0.0


def _dbe(s: GpuSignals, ph: _Phase, t: float) -> float:
    return 1.0 if s.degraded == "xid" and s.since_load(t) > 3600 else 0.0


_COMPUTE = {
    "gpu_util": _gpu_util,
    "gr_engine_active": lambda s, ph, t: s.busy(ph, t),
    "sm_active": lambda s, ph, t: s._ratio(ph.sm, ph, t),
    "sm_occupancy": lambda s, ph, t: s._ratio(ph.occupancy, ph, t),
    "tensor_active": lambda s, ph, t: s._ratio(ph.tensor, ph, t),
    "dram_active": lambda s, ph, t: s._ratio(ph.dram, ph, t),
    "power_usage": lambda s, ph, t: s.power(ph, t),
    "total_energy_consumption": lambda s, ph, t: s.energy(t),
    "sm_clock": lambda s, ph, t: s.sm_clock(ph, t),
    "mem_clock": lambda s, ph, t: float(s.hw.mem_mhz),
    "gpu_temp": lambda s, ph, t: s.gpu_temp(ph, t),
    "memory_temp": lambda s, ph, t: s.gpu_temp(ph, t) + 5.0,
    "xid_errors": lambda s, ph, t: s.xid(t),
    "fb_used": _fb_used,
    "fb_free": _fb_free,
    "ecc_sbe_vol_total": _sbe,
    "ecc_dbe_vol_total": _dbe,
    "uncorrectable_remapped_rows": lambda s, ph, t: 1.0 if s.degraded == "xid" else 0.0,
    "correctable_remapped_rows": lambda s, ph, t: 6.0 if s.degraded == "xid" else 0.0,
    "row_remap_failure": lambda s, ph, t: 0.0,
    "pcie_replay_counter": lambda s, ph, t: float(int(s.since_load(t) * s.pcie_rate)),
}
assert set(_COMPUTE) == set(FIELDS)


def _gpu_utils(s: GpuSignals, ph: _Phase, times: Sequence[float]) -> list[float]:
    if ph.busy <= 0.0:
        return [0.0] * len(times)
    return [
        round(min(1.0, v + 0.02) * 100) / 100 if v > 0.0 else 0.0
        for v in s._ratios(ph.busy, ph, times)
    ]


_VECTOR = {
    "gpu_util": _gpu_utils,
    "gr_engine_active": lambda s, ph, ts: s._ratios(ph.busy, ph, ts),
    "sm_active": lambda s, ph, ts: s._ratios(ph.sm, ph, ts),
    "sm_occupancy": lambda s, ph, ts: s._ratios(ph.occupancy, ph, ts),
    "tensor_active": lambda s, ph, ts: s._ratios(ph.tensor, ph, ts),
    "dram_active": lambda s, ph, ts: s._ratios(ph.dram, ph, ts),
    "power_usage": lambda s, ph, ts: s._powers(ph, ts),
    "total_energy_consumption": lambda s, ph, ts: s._energies(ph, ts),
}


_CACHE: dict[int, tuple[GpuActivity, GpuSignals]] = {}
_CACHE_LOCK = threading.Lock()


def signals_for(activity: GpuActivity) -> GpuSignals:
    """The (cached) signals of one GPU activity."""
    key = id(activity)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0] is activity:
            return hit[1]
    signals = GpuSignals(activity)
    with _CACHE_LOCK:
        if len(_CACHE) > 200_000:
            _CACHE.clear()
        _CACHE[key] = (activity, signals)
    return signals


def value(activity: GpuActivity, field: str, t: float) -> float:
    """The canonical value of ``field`` for this GPU at epoch second ``t``.

    Raises ``LookupError`` when the GPU reports no such field (an unavailable GPU reports only
    ``xid_errors``; a MIG-partitioned GPU reports no ``gpu_util``).
    """
    result = signals_for(activity).value(field, t)
    if result is None:
        raise LookupError(f"GPU {activity.gpu.uuid} reports no {field}")
    return result

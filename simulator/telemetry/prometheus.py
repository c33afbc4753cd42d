"""A Prometheus that has scraped every simulated exporter since forever: PromQL subset + API.

What is stored: every series the exporters would have exposed, with the labels Prometheus
gives a series scraped through a Kubernetes Service (ServiceMonitor): the exporter's own labels,
except that its ``pod``/``namespace``/``container`` collide with the target's and are renamed
``exported_pod``/``exported_namespace``/``exported_container`` (``honor_labels: false``), plus the
target labels ``instance``, ``job="dcgm-exporter"``, ``namespace``, ``pod``, ``container``,
``service`` and ``endpoint`` of the exporter pod itself. A GPU whose pod started at ``since``
has two series: one without workload labels before, one with after (a label change is a new
series); where the world has a history, each past pod that held the GPU has its own series too,
with that pod's labels while it held it, as the exporter printed them then. Samples sit on the
exporter's 15 s cadence; a query at ``t`` reads the sample at the
last multiple of 15 s at or before ``t``, which is also what a scrape at ``t`` returns.

The PromQL subset is one vector selector: an optional metric name and label matchers ``=``,
``!=``, ``=~``, ``!~`` (regexes fully anchored, as Prometheus does), e.g.
``DCGM_FI_DEV_GPU_UTIL{Hostname=~"gpu-.*"}`` or ``{__name__=~"DCGM_FI_.*"}``. Anything else is
answered 400 ``bad_data``. Parameters and errors are worded as Prometheus words them
(``web/api/v1/api.go``): timestamps as float seconds or RFC 3339, durations as float seconds or
``1m``-style, the 11,000-points-per-series limit, ``end`` before ``start``.
"""

from __future__ import annotations

import bisect
import math
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from simulator.telemetry.exporter import (
    GENERATIONS,
    SAMPLE_INTERVAL_SECONDS,
    ExportedField,
    entities,
    gpu_labels,
    host_label,
)
from simulator.telemetry.signals import GpuSignals, signals_for

if TYPE_CHECKING:
    from simulator.world.activity import GpuActivity, PastHolding

MAX_POINTS = 11_000
TOO_MANY_POINTS = (
    "exceeded maximum resolution of 11,000 points per timeseries. "
    "Try decreasing the query resolution (?step=XX)"
)
EXPORTER_PORT = 9400
JOB = "dcgm-exporter"
EXPORTER_NAMESPACE = "gpu-operator"
EXPORTER_CONTAINER = "nvidia-dcgm-exporter"
EXPORTER_SERVICE = "nvidia-dcgm-exporter"
WORKLOAD_LABELS = ("pod", "namespace", "container")


class BadData(ValueError):
    """A request Prometheus answers with 400 ``bad_data``; ``str()`` is its ``error`` text."""


# -- parameters ------------------------------------------------------------------------------

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
_DURATION = re.compile(
    r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$"
)
_DURATION_UNITS = (365 * 86400, 7 * 86400, 86400, 3600, 60, 1, 0.001)


def parse_time(name: str, text: str) -> float:
    """Prometheus' ``parseTime``: float epoch seconds (ms precision) or RFC 3339."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is not None and math.isfinite(value):
        whole = math.floor(value)
        return whole + round((value - whole) * 1000) / 1000
    if _RFC3339.match(text):
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    raise BadData(f'invalid parameter "{name}": cannot parse "{text}" to a valid timestamp')


def parse_duration(name: str, text: str) -> float:
    """Prometheus' ``parseDuration``: float seconds or a duration such as ``1m30s``."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is not None and math.isfinite(value):
        return round(value * 1000) / 1000
    match = _DURATION.match(text)
    if text and match and any(match.groups()):
        return sum(
            int(g) * unit for g, unit in zip(match.groups(), _DURATION_UNITS, strict=True) if g
        )
    raise BadData(f'invalid parameter "{name}": cannot parse "{text}" to a valid duration')


# -- selectors -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str  # "=", "!=", "=~", "!~"
    value: str
    regex: re.Pattern[str] | None = None

    def matches(self, labels: dict[str, str]) -> bool:
        actual = labels.get(self.label, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        assert self.regex is not None
        hit = self.regex.fullmatch(actual) is not None
        return hit if self.op == "=~" else not hit


@dataclass(frozen=True)
class Selector:
    matchers: tuple[Matcher, ...]

    @property
    def names(self) -> set[str] | None:
        """Metric names an ``__name__ =`` matcher pins the selector to, if any."""
        for m in self.matchers:
            if m.label == "__name__" and m.op == "=":
                return {m.value}
        return None

    def matches(self, labels: dict[str, str]) -> bool:
        return all(m.matches(labels) for m in self.matchers)


_TOKEN = re.compile(
    r"""\s*(?:
      (?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)
    | (?P<op>=~|!~|!=|=)
    | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`)
    | (?P<punct>[{},])
    )""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "r": "\r", "a": "\a"}


def _unquote(token: str) -> str:
    if token[0] == "`":
        return token[1:-1]
    body, out, i = token[1:-1], [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            out.append(_ESCAPES.get(body[i + 1], body[i + 1]))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def parse_selector(query: str) -> Selector:
    """Parse the supported subset; raises ``BadData`` worded like Prometheus' parser."""

    def fail(pos: int, message: str) -> BadData:
        return BadData(f'invalid parameter "query": 1:{pos + 1}: parse error: {message}')

    tokens: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(query):
        if query[pos:].strip() == "":
            break
        m = _TOKEN.match(query, pos)
        if m is None or m.end() == pos:
            start = pos + len(query[pos:]) - len(query[pos:].lstrip())
            raise fail(
                start,
                f"unexpected character: {query[start]!r} (the simulated Prometheus "
                "supports one vector selector)",
            )
        kind = m.lastgroup or ""
        tokens.append((kind, m.group(kind), m.start(kind)))
        pos = m.end()
    if not tokens:
        raise fail(0, "no expression found in input")
    matchers: list[Matcher] = []
    i = 0
    if tokens[0][0] == "name":
        matchers.append(Matcher("__name__", "=", tokens[0][1]))
        i = 1
    if i < len(tokens):
        if tokens[i][1] != "{":
            raise fail(
                tokens[i][2],
                f"unexpected {tokens[i][1]!r} (only vector selectors are "
                "supported by the simulated Prometheus)",
            )
        i += 1
        while True:
            if i >= len(tokens):
                raise fail(len(query), "unexpected end of input inside braces")
            if tokens[i][1] == "}":
                i += 1
                break
            kind, label, at = tokens[i]
            if kind != "name":
                raise fail(
                    at, f'unexpected {label!r} in label matching, expected identifier or "}}"'
                )
            if i + 2 >= len(tokens) or tokens[i + 1][0] != "op" or tokens[i + 2][0] != "str":
                raise fail(at, f"unexpected end of label matcher for {label!r}")
            op, value = tokens[i + 1][1], _unquote(tokens[i + 2][1])
            regex = None
            if op in ("=~", "!~"):
                try:
                    regex = re.compile(value)
                except re.error as exc:
                    message = f"invalid regular expression {value!r}: {exc}"
                    raise fail(tokens[i + 2][2], message) from None
            matchers.append(Matcher(label, op, value, regex))
            i += 3
            if i < len(tokens) and tokens[i][1] == ",":
                i += 1
        if i != len(tokens):
            raise fail(tokens[i][2], f"unexpected {tokens[i][1]!r} after the vector selector")
    if not any(not m.matches({}) for m in matchers):
        raise fail(0, "vector selector must contain at least one non-empty matcher")
    return Selector(tuple(matchers))


# -- the stored series -----------------------------------------------------------------------


@dataclass
class StoredSeries:
    """One series as Prometheus holds it, and the stretches of time it has samples in."""

    name: str
    labels: dict[str, str]
    signals: GpuSignals
    exported: ExportedField
    spans: tuple[tuple[float, float], ...]
    """Sample times ``start <= t < stop`` of any span, ascending; -inf/inf for "always". A
    GPU's series without workload labels has one span per stretch no pod held it."""
    metric: dict[str, str] = field(default_factory=dict)  # labels with __name__
    past: PastSeries | None = None
    """The series of the world's past pods that held the same GPU (the same field and MIG
    instance), built for the queried window only: a month of them for every GPU and field
    would be millions of series, a query's window needs a few per GPU."""

    @classmethod
    def of(
        cls,
        exported: ExportedField,
        labels: dict[str, str],
        signals: GpuSignals,
        spans: tuple[tuple[float, float], ...],
        past: PastSeries | None = None,
    ) -> StoredSeries:
        """The series of ``exported`` with ``labels``, its name and metric filled in."""
        name = exported.name
        metric = {"__name__": name, **labels}
        return cls(name, labels, signals, exported, spans, metric, past)


@dataclass(frozen=True)
class PastSeries:
    """Each past pod's series of one GPU, field and MIG instance, on demand."""

    holdings: tuple[PastHolding, ...]
    ends: tuple[float, ...]  # each holding's end, ascending (holdings are disjoint)
    activity: GpuActivity
    signals: GpuSignals
    exported: ExportedField
    host: str
    mig: tuple[int, str] | None
    target: dict[str, str]

    def overlapping(self, start: float, stop: float) -> list[StoredSeries]:
        """The series of the holdings with samples in ``start <= t <= stop`` (a query's
        window, widened to the sample before ``start``)."""
        first = bisect.bisect_right(self.ends, start - SAMPLE_INTERVAL_SECONDS)
        out = []
        for held in self.holdings[first:]:
            if held.begin > stop:
                break
            out.append(self._series(held))
        return out

    def _series(self, held: PastHolding) -> StoredSeries:
        exporter = gpu_labels(self.activity, self.host, workload=False, mig=self.mig, held=held)
        labels = stored_labels(exporter, self.target)
        return StoredSeries.of(self.exported, labels, self.signals, ((held.begin, held.end),))


def target_labels(node: str, ip: str | None) -> dict[str, str]:
    """Labels Prometheus attaches to everything scraped from one node's exporter pod."""
    suffix = "".join(
        "bcdfghjklmnpqrstvwxz2456789"[b % 27] for b in zlib.crc32(node.encode()).to_bytes(4, "big")
    )
    return {
        "instance": f"{ip or node}:{EXPORTER_PORT}",
        "job": JOB,
        "namespace": EXPORTER_NAMESPACE,
        "pod": f"nvidia-dcgm-exporter-{suffix}",
        "container": EXPORTER_CONTAINER,
        "service": EXPORTER_SERVICE,
        "endpoint": "gpu-metrics",
    }


def stored_labels(exporter: list[tuple[str, str]], target: dict[str, str]) -> dict[str, str]:
    labels = dict(target)
    for key, value in exporter:
        if key in labels:
            labels["exported_" + key] = value  # honor_labels: false
        else:
            labels[key] = value
    return labels


def build_catalog(
    activities: Iterable[GpuActivity],
    node_ips: dict[str, str],
    node_pools: dict[str, str],
) -> dict[str, list[StoredSeries]]:
    """Every stored series, by metric name (the past pods' series through each GPU's series
    without workload labels, ``StoredSeries.past``)."""
    catalog: dict[str, list[StoredSeries]] = {}
    for activity in activities:
        signals = signals_for(activity)
        node = activity.gpu.node
        generation = activity.exporter_generation
        host = host_label(generation, node_pools.get(node))
        target = target_labels(node, node_ips.get(node))
        since = signals.since
        free = free_spans(activity, since)
        ends = tuple(h.end for h in activity.past)
        for exported in GENERATIONS[generation]:
            if not signals.has(exported.canonical):
                continue
            spans: list[tuple[bool, tuple[tuple[float, float], ...]]] = [(False, free)]
            if activity.pod:
                spans.append((True, ((since, math.inf),)))
            if signals.unavailable and exported.canonical != "xid_errors":
                # only XID 79 after it fell off (an unavailable GPU has no past holdings)
                spans = [(False, ((-math.inf, since),))]
            for mig in entities(activity, exported.canonical):
                for workload, times in spans:
                    labels = stored_labels(
                        gpu_labels(activity, host, workload=workload, mig=mig), target
                    )
                    past = None
                    if activity.past and not workload:
                        past = PastSeries(
                            activity.past, ends, activity, signals, exported, host, mig, target
                        )
                    series = StoredSeries.of(exported, labels, signals, times, past)
                    catalog.setdefault(exported.name, []).append(series)
    return catalog


def free_spans(activity: GpuActivity, since: float) -> tuple[tuple[float, float], ...]:
    """When the GPU's series without workload labels has samples: before its first past pod,
    between past pods, and after the last until the present pod's ``since`` (for ever if no pod
    holds it now). A label change starts a new series (the exporter, ``exporter.render``, names
    the pod holding the GPU at each instant), so every other stretch is a pod's series."""
    spans: list[tuple[float, float]] = []
    free_from = -math.inf
    for held in activity.past:
        if held.begin > free_from:
            spans.append((free_from, held.begin))
        free_from = held.end
    stop = since if activity.pod else math.inf
    if stop > free_from:
        spans.append((free_from, stop))
    return tuple(spans)


def select(
    catalog: dict[str, list[StoredSeries]],
    selector: Selector,
    start: float = -math.inf,
    stop: float = math.inf,
) -> list[StoredSeries]:
    """The series ``selector`` matches, with the past pods' series that have samples in
    ``start``..``stop`` (the query's window; all of them without one)."""
    names = selector.names
    pools = [catalog.get(n, []) for n in names] if names is not None else list(catalog.values())
    out = []
    for pool in pools:
        for s in pool:
            if selector.matches(s.metric):
                out.append(s)
            if s.past is not None:
                out.extend(p for p in s.past.overlapping(start, stop) if selector.matches(p.metric))
    return out


# -- evaluation ------------------------------------------------------------------------------


def _json_time(t: float) -> float | int:
    return int(t) if t == int(t) else round(t, 3)


def range_points(start: float, end: float, step: float) -> list[float]:
    """Evaluation instants ``start + k*step <= end`` (ms precision, as Prometheus)."""
    n = math.floor((end - start) / step + 1e-9) + 1
    return [round((start + k * step) * 1000) / 1000 for k in range(n)]


def check_range(start: float, end: float, step: float) -> None:
    if end < start:
        raise BadData('invalid parameter "end": end timestamp must not be before start time')
    if step <= 0:
        raise BadData(
            'invalid parameter "step": zero or negative query resolution step widths are not '
            "accepted. Try a positive integer"
        )
    if int((end - start) * 1e9) // int(step * 1e9) > MAX_POINTS:
        raise BadData(TOO_MANY_POINTS)


def evaluate_range(series: list[StoredSeries], start: float, end: float, step: float) -> list[dict]:
    """The ``matrix`` result: per series ``{"metric": ..., "values": [[t, "v"], ...]}``."""
    points = range_points(start, end, step)
    json_times = [_json_time(t) for t in points]
    interval = SAMPLE_INTERVAL_SECONDS
    samples = [math.floor(t / interval) * interval for t in points]
    out: list[dict] = []
    for s in sorted(series, key=lambda x: sorted(x.metric.items())):
        cuts = [
            (lo, hi)
            for start_at, stop_at in s.spans
            if (lo := _first_at_or_after(samples, start_at))
            < (hi := _first_at_or_after(samples, stop_at))
        ]
        if not cuts:
            continue
        if len(cuts) == 1:
            ((lo, hi),) = cuts
            at, stamps = samples[lo:hi], json_times[lo:hi]
        else:
            at = [t for lo, hi in cuts for t in samples[lo:hi]]
            stamps = [t for lo, hi in cuts for t in json_times[lo:hi]]
        raw = s.signals.values(s.exported.canonical, at)
        if None in raw:
            pairs = [(t, v) for t, v in zip(stamps, raw, strict=True) if v is not None]
            times, present = [t for t, _ in pairs], [v for _, v in pairs]
        else:
            times, present = stamps, raw
        if present:
            texts = s.exported.prom_texts(present)
            # tuples serialise as JSON arrays: [[t, "v"], ...]
            out.append({"metric": s.metric, "values": list(zip(times, texts, strict=True))})
    return out


def evaluate_instant(series: list[StoredSeries], t: float) -> list[dict]:
    s_t = math.floor(t / SAMPLE_INTERVAL_SECONDS) * SAMPLE_INTERVAL_SECONDS
    out = []
    for s in sorted(series, key=lambda x: sorted(x.metric.items())):
        if not any(start <= s_t < stop for start, stop in s.spans):
            continue
        v = s.signals.value(s.exported.canonical, s_t)
        if v is None:
            continue
        out.append({"metric": s.metric, "value": [_json_time(t), s.exported.prom_texts([v])[0]]})
    return out


def _first_at_or_after(samples: list[float], t: float) -> int:
    return bisect.bisect_left(samples, t)

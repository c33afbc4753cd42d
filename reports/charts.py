"""Charts as SVG text that annex draws itself (no plotting library, no fonts embedded).

Labels come from the cluster, so every text node and attribute is escaped; the drawing is
handed to the page as a base64 ``data:`` URL (``templating.svg_uri``). Output depends only on
the input, so charts are deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape

WIDTH = 680
FONT = 'font-family="DejaVu Sans, sans-serif"'
PALETTE = ("#1f4e79", "#7fa7d1", "#a6a6a6", "#c0504d", "#e3b448", "#5b9b6b")


@dataclass(frozen=True)
class Series:
    label: str
    values: Sequence[float | None]
    color: str


def _text(x: float, y: float, text: str, *, size: int = 10, anchor: str = "start", **kw) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{escape(str(v))}"' for k, v in kw.items())
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" {FONT}'
        f"{extra}>{escape(text)}</text>"
    )


def _svg(height: float, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0f}" '
        f'viewBox="0 0 {WIDTH} {height:.0f}" role="img"><title>{escape(title)}</title>'
        + "".join(body)
        + "</svg>"
    )


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** len(str(int(value))) / 10
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude:
            return step * magnitude
    return 10 * magnitude


def stacked_columns(
    categories: Sequence[str], series: Sequence[Series], *, title: str, unit: str
) -> str:
    """One column per category (e.g. a day), stacked by series; a missing category (all
    values None) is drawn as a hatched gap, not as zero."""
    height, left, top, bottom = 260.0, 60.0, 30.0, 60.0
    plot_w, plot_h = WIDTH - left - 10, height - top - bottom
    totals = [sum(v or 0 for v in (s.values[i] for s in series)) for i in range(len(categories))]
    top_value = _nice_max(max(totals, default=0))
    body = [_text(left, 16, title, size=11, font_weight="bold")]
    for tick in range(5):
        value = top_value * tick / 4
        y = top + plot_h - plot_h * tick / 4
        body.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#dddddd" stroke-width="0.5"/>'
        )
        body.append(_text(left - 4, y + 3, f"{value:,.0f}", size=8, anchor="end"))
    body.append(
        _text(8, top + plot_h / 2, unit, size=8, transform=f"rotate(-90 14 {top + plot_h / 2:.1f})")
    )
    n = max(len(categories), 1)
    slot = plot_w / n
    width = max(slot * 0.7, 1)
    label_every = max(1, round(n / 16))
    for i, category in enumerate(categories):
        x = left + i * slot + (slot - width) / 2
        values = [s.values[i] for s in series]
        if all(v is None for v in values):
            body.append(
                f'<rect x="{x:.1f}" y="{top:.1f}" width="{width:.1f}" height="{plot_h:.1f}" '
                'fill="#fbe3e3" stroke="#c0504d" stroke-width="0.5" stroke-dasharray="2 2"/>'
            )
        else:
            y = top + plot_h
            for s, v in zip(series, values, strict=True):
                h = plot_h * (v or 0) / top_value
                y -= h
                body.append(
                    f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{h:.1f}" '
                    f'fill="{s.color}"/>'
                )
        if i % label_every == 0:
            cx = x + width / 2
            body.append(
                _text(
                    cx,
                    top + plot_h + 10,
                    category,
                    size=7,
                    anchor="end",
                    transform=f"rotate(-45 {cx:.1f} {top + plot_h + 10:.1f})",
                )
            )
    body.extend(_legend(series, height - 14))
    return _svg(height, body, title)


def horizontal_bars(
    items: Sequence[tuple[str, float | None]], *, title: str, unit: str, color: str = PALETTE[0]
) -> str:
    """One bar per labelled value (labels cut to 40 characters); None is drawn as a gap."""
    row, left, top = 16.0, 230.0, 26.0
    height = top + row * max(len(items), 1) + 20
    plot_w = WIDTH - left - 70
    top_value = _nice_max(max((v or 0 for _, v in items), default=0))
    body = [_text(4, 16, title, size=11, font_weight="bold")]
    for i, (label, value) in enumerate(items):
        y = top + i * row
        shown = label if len(label) <= 40 else label[:39] + "…"
        body.append(_text(left - 6, y + 11, shown, size=8, anchor="end"))
        if value is None:
            body.append(_text(left + 2, y + 11, "no evidence", size=8, fill="#c0504d"))
            continue
        w = plot_w * value / top_value
        body.append(
            f'<rect x="{left}" y="{y + 2:.1f}" width="{w:.1f}" height="{row - 5:.1f}" '
            f'fill="{color}"/>'
        )
        body.append(_text(left + w + 4, y + 11, f"{value:,.1f} {unit}", size=8))
    return _svg(height, body, title)


def _legend(series: Sequence[Series], y: float) -> list[str]:
    out, x = [], 60.0
    for s in series:
        out.append(f'<rect x="{x:.1f}" y="{y - 8:.1f}" width="9" height="9" fill="{s.color}"/>')
        out.append(_text(x + 13, y, s.label, size=8))
        x += 24 + 6.2 * len(s.label)
    return out


@dataclass(frozen=True)
class Level:
    """A horizontal reference line across a chart (a threshold), labelled at its right end."""

    label: str
    value: float
    color: str


@dataclass(frozen=True)
class TimeSeries:
    """A line over time; ``dashed`` for a projection rather than evidence."""

    label: str
    points: Sequence[tuple[datetime, float]]
    color: str
    dashed: bool = False


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(exponent: int) -> str:
    """``10²³``: how the compute report writes orders of magnitude."""
    return "10" + str(exponent).translate(_SUPERSCRIPT)


def log_lines(
    series: Sequence[TimeSeries],
    *,
    title: str,
    unit: str,
    levels: Sequence[Level] = (),
    marks: Sequence[tuple[datetime, str]] = (),
    max_decades: int = 8,
) -> str:
    """Lines over time on a logarithmic axis (one gridline per power of ten), with horizontal
    levels (thresholds) and dotted vertical marks (e.g. a crossing date). Zero or negative
    values sit on the axis floor; the axis spans at most ``max_decades`` powers of ten below
    its top, so small early values do not squash the thresholds. No points: the plot says
    so instead of drawing an empty axis."""
    height, left, top, bottom, right = 270.0, 62.0, 30.0, 52.0, 150.0
    plot_w, plot_h = WIDTH - left - right, height - top - bottom
    body = [_text(left, 16, title, size=11, font_weight="bold")]
    times = [t for s in series for t, _ in s.points] + [t for t, _ in marks]
    values = [v for s in series for _, v in s.points if v > 0] + [lv.value for lv in levels]
    if not any(s.points for s in series) or not values:
        body.append(_text(left + plot_w / 2, top + plot_h / 2, "no evidence", anchor="middle",
                          fill="#c0504d"))  # fmt: skip
        return _svg(height, body, title)
    hi_exp = math.ceil(math.log10(max(values)))
    lo_exp = math.floor(math.log10(min(values)))
    if levels:  # a decade of room under the lowest level, so it never sits on the axis
        lo_exp = min(lo_exp, math.floor(math.log10(min(lv.value for lv in levels))) - 1)
    lo_exp = max(lo_exp, hi_exp - max_decades)
    if lo_exp == hi_exp:
        lo_exp -= 1
    t0, t1 = min(times), max(times)
    span = max((t1 - t0).total_seconds(), 1.0)

    def x(moment: datetime) -> float:
        return left + plot_w * (moment - t0).total_seconds() / span

    def y(value: float) -> float:
        exponent = math.log10(value) if value > 0 else lo_exp
        share = (min(max(exponent, lo_exp), hi_exp) - lo_exp) / (hi_exp - lo_exp)
        return top + plot_h * (1 - share)

    for exponent in range(lo_exp, hi_exp + 1):
        gy = y(10.0**exponent)
        body.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{gy:.1f}" y2="{gy:.1f}" '
            'stroke="#dddddd" stroke-width="0.5"/>'
        )
        body.append(_text(left - 4, gy + 3, power_of_ten(exponent), size=8, anchor="end"))
    body.append(
        _text(8, top + plot_h / 2, unit, size=8, transform=f"rotate(-90 14 {top + plot_h / 2:.1f})")
    )
    fmt = "%Y-%m-%d" if span > 3 * 86_400 else "%m-%d %H:%M"
    for tick in range(5):
        moment = t0 + (t1 - t0) * tick / 4
        tx = x(moment)
        body.append(
            f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{top + plot_h:.1f}" '
            f'y2="{top + plot_h + 3:.1f}" stroke="#777777" stroke-width="0.5"/>'
        )
        body.append(_text(tx, top + plot_h + 13, moment.strftime(fmt), size=7, anchor="middle"))
    for level in levels:
        ly = y(level.value)
        body.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{ly:.1f}" y2="{ly:.1f}" '
            f'stroke="{level.color}" stroke-width="1" stroke-dasharray="5 3"/>'
        )
        body.append(_text(left + plot_w + 4, ly + 3, level.label, size=7, fill=level.color))
    for moment, label in marks:
        mx = x(moment)
        body.append(
            f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{top:.1f}" y2="{top + plot_h:.1f}" '
            'stroke="#555555" stroke-width="0.6" stroke-dasharray="1 2"/>'
        )
        body.append(_text(mx + 2, top + 8, label, size=7, fill="#555555"))
    for s in series:
        if not s.points:
            continue
        path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in s.points)
        dash = ' stroke-dasharray="4 3"' if s.dashed else ""
        body.append(
            f'<polyline points="{path}" fill="none" stroke="{s.color}" stroke-width="1.6"{dash}/>'
        )
    body.extend(_legend([Series(s.label, (), s.color) for s in series], height - 12))
    return _svg(height, body, title)

"""Charts as SVG text that annex draws itself (no plotting library, no fonts embedded).

Labels come from the cluster, so every text node and attribute is escaped; the drawing is
handed to the page as a base64 ``data:`` URL (``templating.svg_uri``). Output depends only on
the input, so charts are deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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

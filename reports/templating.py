"""The Jinja2 environment reports are written in: autoescaping on, undefined names an error.

Every string from the cluster (names, labels, reasons, locators) reaches the page through
autoescaping; the filters here format numbers and dates and mark a missing value as a visible
gap (their markup is fixed text, never data). Nothing is marked safe that came from the
warehouse; charts enter as base64 ``data:`` URLs, so an SVG can never become HTML.
"""

from __future__ import annotations

import base64
from datetime import date, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"

GAP = Markup('<span class="gap">no evidence</span>')


def number(value: float | int | None, digits: int = 1) -> str | Markup:
    """``1,234.5``; a visible gap for a missing value."""
    if value is None:
        return GAP
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"


def percent(value: float | None, digits: int = 1) -> str | Markup:
    """A ratio 0-1 as ``12.5 %``; a visible gap when missing."""
    if value is None:
        return GAP
    return f"{value * 100:.{digits}f} %"


def when(value: datetime | date | None) -> str | Markup:
    if value is None:
        return GAP
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M UTC")
    return value.isoformat()


def svg_uri(svg: str) -> str:
    """An SVG drawing as a ``data:`` URL for ``<img src>``."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES_DIR),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=number, pct=percent, when=when, svg_uri=svg_uri)
    return env


def render_html(template: str, context: dict[str, Any]) -> str:
    return environment().get_template(template).render(**context)

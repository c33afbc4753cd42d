"""The one number format of the EU AI Act documents (training compute, model documentation).

Every figure is written a × 10ⁿ with a stated number of significant figures (the model
documentation form asks at least two for energy in MWh and for parameters, MDF 2 and 8), or,
between 0.01 and a million, as the same significant figures in plain digits: never ``7.2e+24``
beside ``7.20 × 10²⁴``. Strings the marts compose (finding messages, method bases) are passed
through ``prose`` so that their ``10^25`` and ``7.5e+23`` read the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from reports.charts import power_of_ten

FLOP_FIGURES = 3
"""Significant figures of a FLOP figure (the bands carry the uncertainty)."""
ENERGY_FIGURES = 3
"""Significant figures of an energy figure in MWh (MDF 8: at least 2)."""
PARAMETER_FIGURES = 3
"""Significant figures of a parameter count (MDF 2: at least 2)."""


def scientific(value: float | int | None, figures: int = 3) -> str | None:
    """``7.16 × 10²⁴`` with ``figures`` significant figures; None stays None (a gap)."""
    if value is None:
        return None
    if value == 0:
        return "0"
    exponent = math.floor(math.log10(abs(value)))
    mantissa = round(value / 10**exponent, figures - 1)
    if abs(mantissa) >= 10:  # rounding carried into the next power
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{mantissa:.{figures - 1}f} × {power_of_ten(exponent)}"


def figure(value: float | int | None, figures: int = 3) -> str | None:
    """``figures`` significant figures: plain digits between 0.01 and a million (``7,680``,
    ``0.648``), ``a × 10ⁿ`` beyond; None stays None."""
    if value is None:
        return None
    if value == 0:
        return "0"
    exponent = math.floor(math.log10(abs(value)))
    if exponent >= 6 or exponent < -2:
        return scientific(value, figures)
    rounded = round(value, figures - 1 - exponent)
    if rounded and math.floor(math.log10(abs(rounded))) > exponent:
        exponent += 1  # 9.996 -> 10.0
    decimals = max(0, figures - 1 - exponent)
    return f"{rounded:,.{decimals}f}"


def flop(value: float | None) -> str | None:
    """A FLOP figure: ``7.16 × 10²⁴``."""
    return scientific(value, FLOP_FIGURES)


def flop_band(low: float | None, high: float | None) -> str | None:
    if low is None or high is None:
        return None
    return f"{flop(low)} to {flop(high)}"


def flop_with_band(row: Mapping[str, Any], name: str) -> str:
    """``row[name]`` with the band of ``row[name_low]`` and ``row[name_high]`` (the marts'
    columns): ``7.16 × 10²⁴ FLOP (band 5.01 × 10²⁴ to 9.31 × 10²⁴)``."""
    band = flop_band(row[name + "_low"], row[name + "_high"])
    return f"{flop(row[name])} FLOP (band {band})"


def terse(value: float | None) -> str:
    """The command line's form of a figure (``annex compute``): ``7.16e+24``, the significant
    figures of ``flop``, ``n/a`` for a gap; short and greppable in a terminal, where a document
    writes ``7.16 × 10²⁴``."""
    return "n/a" if value is None else f"{value:.{FLOP_FIGURES}g}"


def terse_with_band(row: Mapping[str, Any], name: str, unit: str = "") -> str:
    """``terse`` of ``row[name]`` with its band: ``7.16e+24 (band 5.01e+24 to 9.31e+24)``, or
    ``n/a``."""
    if row.get(name) is None:
        return "n/a"
    low, high = terse(row[name + "_low"]), terse(row[name + "_high"])
    return f"{terse(row[name])}{unit} (band {low} to {high}{unit})"


def magnitude(value: float | None) -> str | None:
    """The order of magnitude (national authority edition, MDF 7): ``~10²⁴``, the decade the
    figure lies in (7.16 × 10²⁴ is of the order of 10²⁴)."""
    if value is None:
        return None
    if value <= 0:
        return "0"
    return f"~{power_of_ten(math.floor(math.log10(value)))}"


def mwh(value: float | None) -> str | None:
    """Energy in MWh to three significant figures (MDF 8 asks at least two)."""
    return figure(value, ENERGY_FIGURES)


def parameters(value: int | None) -> str | None:
    """A parameter count: ``4.00 × 10¹¹`` (MDF 2: at least two significant figures)."""
    return scientific(value, PARAMETER_FIGURES)


def ratio(value: float | None) -> str | None:
    """A ratio of two estimates (hardware / architecture) to two significant figures: a
    ratio, never a percentage past 100 %."""
    return figure(value, 2)


def share(value: float | None) -> str | None:
    """A share 0-1 as a percentage, two significant figures below 10 % (``0.0018 %``)."""
    if value is None:
        return None
    percent = value * 100
    if percent == 0:
        return "0 %"
    if percent >= 10:
        return f"{percent:.0f} %"
    decimals = 1 - math.floor(math.log10(percent))
    return f"{percent:.{decimals}f} %"


_POWER = re.compile(r"10\^(-?\d+)")
_E_NOTATION = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)e([+-]?\d+)(?![\w.])")


def prose(text: str | None) -> str | None:
    """A sentence composed by the marts in the documents' one number format: ``10^25`` ->
    ``10²⁵``, ``7.5e+23`` -> ``7.50 × 10²³``."""
    if text is None:
        return None
    text = _E_NOTATION.sub(lambda m: scientific(float(m.group(0)), FLOP_FIGURES) or "", text)
    return _POWER.sub(lambda m: power_of_ten(int(m.group(1))), text)

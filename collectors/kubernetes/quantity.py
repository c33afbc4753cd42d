"""Kubernetes resource quantities ("8", "500m", "1056300Ki", "1e3") as exact numbers.

The grammar is the API's ``resource.Quantity``: a signed decimal number followed by a binary
suffix (Ki … Ei), a decimal suffix (n u m "" k M G T P E) or a decimal exponent (e3, E-2).
Parsing is exact (``Fraction``) so that "0.5" GPUs is caught rather than rounded.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)


def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a quantity; ``ValueError`` naming the text when it is not one."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    text = value.strip()
    if text.isdigit():  # the common case: "8"
        return Fraction(int(text))
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    number = Fraction(match["number"])
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number * Fraction(10) ** int(suffix[1:])


# A cluster repeats the same few quantities ("8", "1056300Ki", "500m") across thousands of
# objects, and exact parsing costs microseconds each: the parsers below are memoised.


@lru_cache(maxsize=8192, typed=True)
def parse_count(value: str | int | float) -> int:
    """A whole, non-negative count (GPUs, MIG slices); ``ValueError`` otherwise.

    Extended resources admit no fractions and no overcommit (reference §3), so "0.5" or "-1"
    is bad input, never something to round.
    """
    if isinstance(value, str) and value.isdigit():
        return int(value)
    quantity = parse_quantity(value)
    if quantity.denominator != 1 or quantity < 0:
        raise ValueError(f"{value!r} is not a whole, non-negative count")
    return int(quantity)


@lru_cache(maxsize=8192, typed=True)
def parse_millicores(value: str | int | float) -> int:
    """CPU as integer millicores, rounded up as the kubelet does ("100m" → 100, "2" → 2000)."""
    quantity = parse_quantity(value) * 1000
    return -((-quantity.numerator) // quantity.denominator)


@lru_cache(maxsize=8192, typed=True)
def parse_bytes(value: str | int | float) -> int:
    """Memory as integer bytes, rounded up ("1Ki" → 1024, "1.5k" → 1500)."""
    quantity = parse_quantity(value)
    return -((-quantity.numerator) // quantity.denominator)

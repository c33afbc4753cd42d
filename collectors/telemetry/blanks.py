"""DCGM's blank sentinels: values that say "no reading", which annex counts as missing.

DCGM fills a field it could not read with a sentinel of the field's type instead of a number
(``dcgm_structs.h``; the Go bindings mirror them as ``dcgm.DCGM_FT_*``):

=====================  ======================  =============================================
type                   BLANK                   then NOT_FOUND, NOT_SUPPORTED, NOT_PERMISSIONED
=====================  ======================  =============================================
INT32                  2147483632 (0x7ffffff0)  +1, +2, +3 (``DCGM_INT32_IS_BLANK``: >= BLANK)
INT64                  9223372036854775792      +1, +2, +3 (``DCGM_INT64_IS_BLANK``: >= BLANK)
FP64                   140737488355328.0 (2^47) +1.0, +2.0, +3.0
=====================  ======================  =============================================

dcgm-exporter 3.x/4.x drop the exact sentinels before rendering (``toString`` returns
``skipDCGMValue``), but older exporters, custom collectors, INT32 sentinels inside INT64
fields and anything that rewrites values print them: ``2147483647``, ``9.223372036854776e+18``,
``140737488355328.000000``. Stored as readings they would turn a GPU's average utilisation or
energy into nonsense, so a sample whose value *as received* (before any unit scaling) is one of
them is dropped and counted (``telemetry_targets.blank_values``).

The windows are the sentinels' own values, not DCGM's ``>=`` tests, wherever a real reading
can reach that range: an INT64 byte or energy counter passes 2^47 within minutes, so only
2^47 .. 2^47+3 is missing among doubles; the INT32 window runs from BLANK to INT32_MAX (the
``>=`` test on a 32-bit value), 16 values a counter would have to land on exactly; every INT64
value from BLANK up reads as 2^63 once parsed as a double.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

INT32_BLANK = 2147483632
INT32_MAX = 2147483647
INT64_BLANK = 9223372036854775792
FP64_BLANK = 140737488355328.0
SENTINELS = {
    "INT32": tuple(INT32_BLANK + k for k in range(4)),
    "INT64": tuple(INT64_BLANK + k for k in range(4)),
    "FP64": tuple(FP64_BLANK + k for k in range(4)),
}
"""BLANK, NOT_FOUND, NOT_SUPPORTED, NOT_PERMISSIONED of each DCGM value type."""

_WINDOWS = (
    (float(INT32_BLANK), float(INT32_MAX)),
    (FP64_BLANK, FP64_BLANK + 3.0),
)
_INT64_FLOOR = float(INT64_BLANK)  # == 2**63 as a double


def is_blank(value: float) -> bool:
    """Whether one received value is a DCGM sentinel (a missing reading)."""
    return value >= _INT64_FLOOR or any(lo <= value <= hi for lo, hi in _WINDOWS)


def blank_mask(values: pa.Array) -> pa.Array:
    """Boolean array: True where ``values`` (float64, as received) is a DCGM sentinel."""
    mask = pc.greater_equal(values, _INT64_FLOOR)
    for lo, hi in _WINDOWS:
        mask = pc.or_(mask, pc.and_(pc.greater_equal(values, lo), pc.less_equal(values, hi)))
    return pc.fill_null(mask, False)

"""Coverage-guided fuzz target of canonical.c (RFC 8785 number spellings in orjson's text),
compared with the Python path that runs where no compiler built it, on every input:

- any bytes straight to the C (it must stop inside them and never lengthen a text) and, where
  they are JSON, orjson's sorted text of them: canonical.c's respelling equals the Python
  rule's (``_integral_floats_as_integers``), and where the C sends the value to a slower path
  (an exponent, a character beyond U+FFFF) the Python rule sees the same;
- ``canonical_json`` of the value with the C and without it (the Python path) give the same
  text, which is the RFC 8785 walk's (``canonical_json_reference``);
- the same for a value built from the bytes (``FuzzedDataProvider``: doubles of every
  magnitude, integral ones, -0.0, big integers, astral keys), which plain JSON mutations
  seldom reach.

    python -m tests.fuzz.fuzz_canonical [libFuzzer flags] [corpus folders]
"""

from __future__ import annotations

import math
import sys

import atheris

with atheris.instrument_imports(include=["tests.fuzz", "collectors.lineage.events"]):
    import orjson

    from collectors.lineage import events
    from collectors.lineage.events import canonical_json, canonical_json_reference
    from tests.fuzz import native_coverage

CODES = {-1: "exponent", -2: "astral", -3: "not orjson's text"}


def respelled_in_c(text: bytes) -> bytes | int:
    respell = events.respell_in_c()
    assert respell is not None, "canonical.c was not built"
    with native_coverage.traced():
        return respell(text)


def check_text(text: bytes) -> None:
    """The C on any bytes: it stops within them, writes no more than it read."""
    out = respelled_in_c(text)
    assert (type(out) is bytes and len(out) <= len(text)) or out in CODES, (text, out)


def check_value(value: object, fresh) -> None:
    """canonical_json of ``value`` with the C, without it, and by the RFC 8785 walk agree; the
    C's verdict on orjson's text is the Python rule's. ``fresh()`` gives the value again
    (canonical_json may swap floats in place and back)."""
    try:
        sorted_text = orjson.dumps(value, option=events._ORJSON_CANONICAL)
    except (orjson.JSONEncodeError, TypeError):
        sorted_text = None  # an integer beyond 2**53: the walk's alone
    if sorted_text is not None:
        out = respelled_in_c(sorted_text)
        if type(out) is bytes:
            assert out == events._integral_floats_as_integers(sorted_text), sorted_text
            assert not events._has_astral(sorted_text), sorted_text
        elif out == -1:
            assert events._has_exponent(sorted_text), sorted_text
        else:
            assert out == -2 and events._has_astral(sorted_text), (sorted_text, out)
    with_c = canonical_json(fresh())
    kept = events._respell, events._respell_loaded
    events._respell, events._respell_loaded = None, True  # the path without a compiler
    try:
        without_c = canonical_json(fresh())
    finally:
        events._respell, events._respell_loaded = kept
    assert with_c == without_c == canonical_json_reference(fresh()), (value, with_c, without_c)


def built_value(data: bytes) -> object:
    """A JSON value drawn from ``data``: a few keys (some astral), doubles, integers."""
    provider = atheris.FuzzedDataProvider(data)
    value: dict = {}
    for _ in range(provider.ConsumeIntInRange(0, 6)):
        key = provider.ConsumeUnicodeNoSurrogates(provider.ConsumeIntInRange(0, 4))
        kind = provider.ConsumeIntInRange(0, 5)
        if kind == 0:
            number = provider.ConsumeRegularFloat()
        elif kind == 1:
            number = float(provider.ConsumeIntInRange(-(2**60), 2**60))  # integral
        elif kind == 2:
            number = provider.ConsumeProbability() * 10.0 ** provider.ConsumeIntInRange(-30, 30)
        elif kind == 3:
            number = provider.ConsumeInt(9)  # beyond 2**53 at times
        elif kind == 4:
            number = -0.0
        else:
            number = [provider.ConsumeRegularFloat(), {key: provider.ConsumeUnicodeNoSurrogates(3)}]
        value[key] = number
    return value


def check_canonical(data: bytes) -> None:
    check_text(data)
    try:
        decoded = orjson.loads(data)
    except orjson.JSONDecodeError:
        built = built_value(data)
        if all(type(v) is not float or math.isfinite(v) for v in built.values()):
            check_value(built, lambda: built_value(data))
        return
    check_value(decoded, lambda: orjson.loads(data))


def main() -> None:
    if not native_coverage.install():
        print("the C's edges are not traced (no gcc build): Python coverage only", file=sys.stderr)
    atheris.Setup(sys.argv, check_canonical)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

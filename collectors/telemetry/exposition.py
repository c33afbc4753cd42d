"""Parsing a dcgm-exporter ``/metrics`` body (Prometheus text format 0.0.4).

The parser is the maintained one, ``prometheus_client.parser.text_string_to_metric_families``.
What it does that matters here (checked against the text dcgm-exporter writes):

* Label values: ``\\\\``, ``\\"`` and ``\\n`` are unescaped; an unknown escape such as ``\\q``
  is kept as is (lenient; Prometheus' own parser rejects it); duplicate label names, an
  unquoted value, a raw newline inside a value and a truncated last line raise ``ValueError``.
* Timestamps (milliseconds in the text) come back as float *seconds*; dcgm-exporter writes
  none, so the scrape time is used then.
* ``NaN``, ``+Inf`` and ``-Inf`` parse as floats (the collector skips and counts them).
* Counter samples are renamed: a counter family ``X`` yields samples named ``X_total`` (even
  when the name already ends in upper-case ``_TOTAL``), and a family declared as ``x_total``
  is reported as family ``x``. The name *as received* is therefore recovered here from the
  family: DCGM names never end in lower-case ``_total``, so for them it is the family name.
* A family that reappears later in the text (samples not grouped) comes back as a second
  family of type ``unknown``; a ``# TYPE`` after the samples applies only to later ones.
  The declared type is taken from the first declaration of a name.
* Trailing commas inside braces and spaces around ``=`` are accepted; HTML or other non-text
  bodies raise ``ValueError`` ("invalid metric name").

The parser is a generator that fails on the first bad line, so a body is parsed completely
before anything of it is used: an unparsable target contributes no partial series.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


class ExpositionError(ValueError):
    """The body is not valid text exposition; ``str()`` is the parser's message."""


@dataclass(frozen=True)
class ParsedSample:
    name: str  # as it appeared in the exposition
    labels: dict[str, str]
    value: float
    timestamp: float | None  # epoch seconds, None when the line has none
    declared_type: str | None  # "gauge" | "counter" | ... as the # TYPE line said


def parse(text: str) -> list[ParsedSample]:
    """Every sample of ``text``, in order; raises ``ExpositionError`` on the first bad line."""
    samples: list[ParsedSample] = []
    declared: dict[str, str] = {}
    try:
        for family in text_string_to_metric_families(text):
            ftype = family.type
            if ftype != "unknown":
                declared.setdefault(family.name, ftype)
            for sample in family.samples:
                name = sample.name
                # the parser appends "_total" to counter samples; lower-case "_total" names
                # were received as such (their family lost the suffix), DCGM's never were
                if (
                    ftype == "counter"
                    and name == family.name + "_total"
                    and family.name.startswith("DCGM_")
                ):
                    name = family.name
                samples.append(
                    ParsedSample(
                        name,
                        dict(sample.labels),
                        float(sample.value),
                        sample.timestamp if sample.timestamp is None else float(sample.timestamp),
                        declared.get(family.name) or declared.get(name) or None,
                    )
                )
    except ValueError as exc:  # the parser raises ValueError (and subclasses) only
        raise ExpositionError(str(exc) or type(exc).__name__) from None
    except (IndexError, KeyError, TypeError) as exc:  # defensive: malformed edge cases
        raise ExpositionError(f"{type(exc).__name__}: {exc}") from None
    return samples

"""Counted nouns in what the CLI prints: "1 node", "2 nodes", "1,250 GPUs".

One helper, so no message says "1 checks" or "1 runs" whatever the count.
"""

from __future__ import annotations

IRREGULAR = {"was": "were", "is": "are", "entry": "entries", "family": "families"}
"""Plurals that are not the singular plus "s"."""


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``count`` and the noun that agrees with it: ``plural(1, "node") == "1 node"``,
    ``plural(1250, "GPU") == "1,250 GPUs"``."""
    return f"{count:,} {noun(count, singular, plural_form)}"


def noun(count: int, singular: str, plural_form: str | None = None) -> str:
    """The noun alone, agreeing with ``count`` (for "1 of 3 checks passed": ``noun(3, ...)``)."""
    if count == 1:
        return singular
    if plural_form is not None:
        return plural_form
    return IRREGULAR.get(singular, singular + "s")

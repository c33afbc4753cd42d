"""A node's failure-domain path under a topology profile (reference §6).

A profile is an ordered list of levels, broadest first, ending at the node
(``kubernetes.io/hostname``); each level is a tuple of alternative label keys, the first one a
node carries giving that level's value (so the deprecated ``failure-domain.beta`` keys can stand
behind the current ones). Values are not unique across parents (two racks called ``r1`` in
different zones), so a domain's key is the tuple of values from the top down to its level.
A node missing a level's labels is in domain ``unknown`` at that level, and reported so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

UNKNOWN = "unknown"
DOMAIN_SEPARATOR = "/"
"""Label values cannot contain ``/``, so joining values with it keeps domain keys distinct."""


@dataclass(frozen=True)
class DomainLevel:
    level: int
    """1 for the broadest level."""
    level_label: str
    """The level's canonical label key (the first alternative): what reports group by."""
    label: str | None
    """The key the node actually carries, or None when it carries none of them."""
    value: str
    domain: tuple[str, ...]
    """The domain key: values from the top level down to this one."""

    @property
    def domain_key(self) -> str:
        return DOMAIN_SEPARATOR.join(self.domain)


def domain_path(
    labels: Mapping[str, str] | None, levels: Sequence[Sequence[str]]
) -> list[DomainLevel]:
    """The node's domain at every level of the profile, top down."""
    labels = labels or {}
    path: list[DomainLevel] = []
    values: list[str] = []
    for number, alternatives in enumerate(levels, start=1):
        found = next((key for key in alternatives if labels.get(key)), None)
        value = labels[found] if found is not None else UNKNOWN
        values.append(value)
        path.append(DomainLevel(number, alternatives[0], found, value, tuple(values)))
    return path

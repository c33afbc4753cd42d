"""Label and field selectors, parsed as apimachinery parses them.

Label selectors: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, and the
numeric `k>n`, `k<n`; comma means AND. `!=` and `notin` match objects without the key.
Field selectors: `f=v`, `f==v`, `f!=v`, comma means AND, `\\` escapes `,` `=` `\\`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from simulator.kubernetes.errors import ApiError, bad_request
from simulator.kubernetes.resources import ResourceType

Matcher = Callable[[dict[str, str]], bool]

_KEY = re.compile(
    r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_SET = re.compile(r"^\s*(\S+?)\s+(in|notin)\s*\((.*)\)\s*$")


@dataclass(frozen=True)
class LabelRequirement:
    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!", ">", "<"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        op = self.operator
        if op == "exists":
            return present
        if op == "!":
            return not present
        if op in ("=", "in"):
            return present and value in self.values
        if op in ("!=", "notin"):
            return not present or value not in self.values
        if not present:
            return False
        try:
            number = float(value or "")
        except ValueError:
            return False
        limit = float(self.values[0])
        return number > limit if op == ">" else number < limit


def parse_label_selector(text: str) -> list[LabelRequirement]:
    """Parse a label selector; a malformed one raises a 400 ApiError."""
    requirements: list[LabelRequirement] = []
    for term in _split_outside_parens(text):
        term = term.strip()
        if not term:
            continue
        requirements.append(_parse_label_term(term))
    return requirements


def _split_outside_parens(text: str) -> list[str]:
    terms, depth, current = [], 0, []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return terms


def _parse_label_term(term: str) -> LabelRequirement:
    match = _SET.match(term)
    if match:
        key, operator, body = match.groups()
        values = tuple(v.strip() for v in body.split(",")) if body.strip() else ()
        _check_key(key)
        for value in values:
            _check_value(value)
        if not values:
            raise _label_error(f"for '{operator}', 'notin' operators, values set can't be empty")
        return LabelRequirement(key, operator, values)
    if term.startswith("!"):
        key = term[1:].strip()
        _check_key(key)
        return LabelRequirement(key, "!")
    for operator in ("!=", "==", "=", ">", "<"):
        if operator in term:
            key, value = (part.strip() for part in term.split(operator, 1))
            _check_key(key)
            if operator in (">", "<"):
                try:
                    float(value)
                except ValueError:
                    raise _label_error(
                        f"for 'Gt', 'Lt' operators, the value must be an integer: {value}"
                    ) from None
            else:
                _check_value(value)
            return LabelRequirement(key, "=" if operator == "==" else operator, (value,))
    key = term.strip()
    _check_key(key)
    return LabelRequirement(key, "exists")


def _check_key(key: str) -> None:
    name = key.rsplit("/", 1)[-1]
    if not key or not _KEY.match(key) or len(name) > 63:
        raise _label_error(
            f'key: Invalid value: "{key}": name part must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character"
        )


def _check_value(value: str) -> None:
    if len(value) > 63 or not _VALUE.match(value):
        raise _label_error(
            f'values[0][{value}]: Invalid value: "{value}": a valid label '
            "must be an empty string or consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric "
            "character"
        )


def _label_error(detail: str) -> ApiError:
    return bad_request(f"unable to parse requirement: {detail}")


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    operator: str  # "=" or "!="
    value: str

    def matches(self, fields: dict[str, str]) -> bool:
        actual = fields.get(self.field, "")
        return (actual == self.value) == (self.operator == "=")


def parse_field_selector(text: str, resource: ResourceType) -> list[FieldRequirement]:
    """Parse a field selector for `resource`; unknown fields raise the upstream 400."""
    requirements = []
    for term in _split_escaped(text, ","):
        if not term:
            continue
        for operator in ("!=", "==", "="):
            index = _find_unescaped(term, operator)
            if index >= 0:
                field = _unescape(term[:index])
                value = _unescape(term[index + len(operator) :])
                if field == "spec.host" and resource.plural == "pods":
                    field = "spec.nodeName"
                if field not in resource.field_names:
                    raise bad_request(resource.unknown_field_message(field))
                requirements.append(
                    FieldRequirement(field, "!=" if operator == "!=" else "=", value)
                )
                break
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
    return requirements


def _split_escaped(text: str, separator: str) -> list[str]:
    parts, current, escaped = [], [], False
    for char in text:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _find_unescaped(term: str, operator: str) -> int:
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        if term.startswith(operator, i):
            return i
        i += 1
    return -1


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


@dataclass(frozen=True)
class Selection:
    """The parsed selectors of one request; empty means everything matches."""

    labels: tuple[LabelRequirement, ...] = ()
    fields: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.labels and not self.fields

    def matches(self, labels: dict[str, str], fields: dict[str, str]) -> bool:
        return all(r.matches(labels) for r in self.labels) and all(
            r.matches(fields) for r in self.fields
        )


def parse_selection(label_selector: str, field_selector: str, resource: ResourceType) -> Selection:
    return Selection(
        tuple(parse_label_selector(label_selector)),
        tuple(parse_field_selector(field_selector, resource)),
    )

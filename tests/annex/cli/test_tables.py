"""The CLI's tables: as wide as the terminal, never a word broken, unwrapped when piped."""

from __future__ import annotations

import io
import re

from rich.table import Table

from annex.cli.tables import Screen

HEADERS = ("model", "FLOP", "method", "MWh", "Article 51")
ROWS = [
    (
        "annex-lm-400b",
        "7.14e+24",
        "architecture + hardware",
        "7660.0",
        "10^23 crossed 2026-10-01; 10^25 below",
    ),
    ("clip-l14", "7.31e+20", "architecture", "0.784", "10^25 below"),
]


def _table() -> Table:
    table = Table(title="Training compute per model")
    for header in HEADERS:
        table.add_column(header)
    for row in ROWS:
        table.add_row(*row)
    return table


def _printed(width: int | None) -> str:
    out = io.StringIO()
    Screen(out, width=width).print_table(_table())
    return out.getvalue()


def _cells(text: str) -> list[list[str]]:
    """The table's body lines split into their cells' texts."""
    return [
        [cell.strip() for cell in re.split(r"[│┃]", line)[1:-1]]
        for line in text.splitlines()
        if line.startswith(("│", "┃"))
    ]


def test_piped_a_table_is_unwrapped_each_row_on_one_line() -> None:
    text = _printed(None)
    cells = _cells(text)
    assert cells[0] == list(HEADERS)
    assert [tuple(row) for row in cells[1:]] == ROWS


def test_at_a_terminal_a_table_fits_its_width_and_wraps_between_words_only() -> None:
    text = _printed(70)
    assert max(len(line) for line in text.splitlines()) <= 70
    words = {word for row in [*ROWS, HEADERS] for cell in row for word in cell.split()}
    printed = {word for row in _cells(text) for cell in row for word in cell.split()}
    assert printed == words  # every word whole: none split across lines
    assert "architecture" in printed and "hardwa" not in printed


def test_a_table_whose_words_alone_do_not_fit_is_printed_wider_never_breaking_one() -> None:
    text = _printed(20)
    printed = {word for row in _cells(text) for cell in row for word in cell.split()}
    assert {"architecture", "annex-lm-400b", "2026-10-01;"} <= printed
    assert max(len(line) for line in text.splitlines()) > 20


def test_a_wide_terminal_prints_the_table_at_its_natural_width() -> None:
    assert _cells(_printed(300)) == _cells(_printed(None))


def test_piped_output_has_no_colour_codes() -> None:
    assert "\x1b[" not in _printed(None)

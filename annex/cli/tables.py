"""Tables for people at a terminal: as wide as the terminal, never a word broken, unwrapped
when piped.

Every table the CLI prints (the fleet summary's, the demo's compute table) goes through
``print_table`` so they all behave alike: at a terminal each column gets at least its longest
word (header included) and the room left is shared in proportion to what each column would
need to print unwrapped, so cells wrap between words only; a table whose words alone do not
fit is printed that wide (the terminal folds the line, annex never splits a word). Written to a
pipe or a file, a table is printed at its natural width, each row on one line, for ``grep`` and
``less -S``. (``annex sql``'s result tables are ``annex.cli.sql_output``'s, which also shows a
too-wide result one record at a time.)
"""

from __future__ import annotations

import io
import shutil
import sys
from typing import TextIO

from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.rule import Rule
from rich.table import Table

PIPED_RULE_WIDTH = 100
"""Width of a rule (a titled line) or plain text when the output is no terminal: neither has a
natural width."""


class Screen:
    """Where the CLI prints: ``file`` (stdout), its width when it is a terminal (else ``None``:
    piped, nothing wraps). ``width`` forces a terminal of that many columns (tests)."""

    def __init__(self, file: TextIO | None = None, *, width: int | None = None) -> None:
        self.file = file if file is not None else sys.stdout
        if width is not None:
            self.width: int | None = width
        elif _is_terminal(self.file):
            self.width = shutil.get_terminal_size().columns
        else:
            self.width = None

    @property
    def piped(self) -> bool:
        return self.width is None

    def print_table(self, table: Table) -> None:
        """Print ``table`` sized to the terminal (see the module's docstring)."""
        width = fit_columns(table, self.width)
        self._console(width).print(table)

    def print(self, renderable: RenderableType) -> None:
        """Print a rule, a grid or text: wrapped at the terminal's width, never when piped."""
        if self.width is not None:
            width = self.width
        elif isinstance(renderable, str | Rule) or not hasattr(renderable, "__rich_measure__"):
            width = PIPED_RULE_WIDTH
        else:
            width = max(_measure(renderable).maximum, 1)
        self._console(width).print(renderable)

    def _console(self, width: int) -> Console:
        return Console(
            file=self.file,
            width=width,
            force_terminal=not self.piped and _is_terminal(self.file),
            no_color=self.piped,
            soft_wrap=False,
            highlight=False,
        )


def fit_columns(table: Table, width: int | None) -> int:
    """Fix each column of ``table`` to a width for a terminal of ``width`` columns (``None``:
    unbounded) and return the width the table then takes."""
    columns = table.columns
    if not columns:
        return max(width or 0, 1)
    shortest: list[int] = []
    natural: list[int] = []
    for column in columns:
        cells = [column.header, *column.cells]
        sizes = [_measure(cell) for cell in cells if cell is not None]
        shortest.append(max([1, *(size.minimum for size in sizes)]))
        natural.append(max([1, *(size.maximum for size in sizes)]))
    frame = _frame_width(table)
    budget = None if width is None else width - frame
    if budget is None or sum(natural) <= budget:
        widths = natural
    else:
        widths = _share(shortest, natural, max(budget, sum(shortest)))
    for column, size in zip(columns, widths, strict=True):
        column.width = size
        column.min_width = None
        column.max_width = None
        column.no_wrap = False
        column.overflow = "fold"  # never reached: every column holds its longest word
    return sum(widths) + frame


def _share(shortest: list[int], natural: list[int], budget: int) -> list[int]:
    """Widths summing to at most ``budget``: each column's ``shortest`` plus a share of the
    rest in proportion to how much more it would take unwrapped."""
    spare = budget - sum(shortest)
    wants = [n - s for s, n in zip(shortest, natural, strict=True)]
    total = sum(wants)
    if spare <= 0 or total == 0:
        return list(shortest)
    widths = [s + spare * want // total for s, want in zip(shortest, wants, strict=True)]
    # the rounding remainder goes to the columns that still want the most
    left = budget - sum(widths)
    for index in sorted(range(len(widths)), key=lambda i: widths[i] - natural[i]):
        if left <= 0:
            break
        if widths[index] < natural[index]:
            widths[index] += 1
            left -= 1
    return widths


def _frame_width(table: Table) -> int:
    """The columns' padding plus the borders: what a table adds to its cells' widths."""
    saved = [(c.width, c.min_width, c.max_width) for c in table.columns]
    try:
        for column in table.columns:
            column.width, column.min_width, column.max_width = 1, None, None
        return _measure(table).maximum - len(table.columns)
    finally:
        for column, (fixed, low, high) in zip(table.columns, saved, strict=True):
            column.width, column.min_width, column.max_width = fixed, low, high


_MEASURING = Console(file=io.StringIO(), width=1_000_000, no_color=True)


def _measure(renderable: RenderableType) -> Measurement:
    return Measurement.get(_MEASURING, _MEASURING.options, renderable)


def _is_terminal(file: TextIO) -> bool:
    try:
        return file.isatty()
    except (AttributeError, ValueError):
        return False

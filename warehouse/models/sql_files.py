"""Refresh statements of the ``marts`` tables, kept as named files ``warehouse/models/sql/*.sql``.

One statement a file, named by its verb and the table it writes (``insert_gpu_daily.sql``,
``delete_gpu_daily.sql``), beside the Python that runs them: a reader finds a mart's contents
by its name, and a figure the Python also uses (a threshold) is filled in from the one constant
(``{name}`` placeholders), so the SQL cannot drift from it. Parameters the statement binds at run
time stay ``$name``. A rule several statements share is a temporary macro in a ``create_*`` file
(``create_exact_sum.sql``), run before them.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

SQL_DIR = Path(__file__).with_name("sql")


@cache
def _read(name: str) -> str:
    return (SQL_DIR / f"{name}.sql").read_text(encoding="utf-8")


def statement(name: str, **values: object) -> str:
    """The statement in ``sql/<name>.sql`` with each ``{key}`` replaced by ``values[key]``.

    A value whose placeholder the file lacks is an error (a renamed placeholder would otherwise
    leave the SQL silently unfilled).
    """
    text = _read(name)
    for key, value in values.items():
        placeholder = "{" + key + "}"
        if placeholder not in text:
            raise ValueError(f"{SQL_DIR / name}.sql has no placeholder {placeholder}")
        text = text.replace(placeholder, str(value))
    return text

"""The one exception hierarchy of annex.

Every error a user can meet is an ``AnnexError``: its message names the input and the place,
its ``hint`` says what to do, and its ``exit_code`` is what the CLI exits with. The CLI prints
``message`` and ``hint`` without a traceback unless ``--debug`` is given.

Exit codes are distinct per family so that scripts and schedulers can tell them apart:

====  ===============================================================
1     unexpected internal error (a bug: please report it)
2     configuration is invalid or missing
3     the cluster cannot be reached or refuses access
4     a collection failed (bad or incomplete input from the source)
5     the warehouse cannot be opened, migrated or written
6     an analyst's SQL query failed
7     a report cannot be built (``reports.errors.ReportError``)
130   interrupted (Ctrl-C)
====  ===============================================================
"""

from __future__ import annotations


class AnnexError(Exception):
    """Base class: an error annex expected and can explain."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}\n  hint: {self.hint}"
        return self.message


class ConfigError(AnnexError):
    """The configuration file or an environment override is invalid."""

    exit_code = 2


class ClusterAccessError(AnnexError):
    """The Kubernetes API (or another source) cannot be reached, or refuses our credentials."""

    exit_code = 3


class CollectionError(AnnexError):
    """A collection could not complete: the source sent incomplete or unusable data.

    Nothing of a failed collection is kept in the warehouse except its row in
    ``audit.collections``, which records this error's message.
    """

    exit_code = 4


class WarehouseError(AnnexError):
    """The DuckDB warehouse cannot be opened, migrated, locked or written."""

    exit_code = 5


class MigrationError(WarehouseError):
    """A migration cannot be applied, or an applied migration was edited."""


class QueryError(AnnexError):
    """An analyst's SQL query failed (syntax, unknown table, ...)."""

    exit_code = 6


class WarehouseSpaceError(WarehouseError):
    """A disk (or quota) the warehouse writes to is full.

    Its message says whether the collection in hand was loaded, and its hint how much room is
    needed where and what is safe; exit code 5, like every warehouse error.
    """

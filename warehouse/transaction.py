"""Transactions: joining the caller's or opening one's own, and rolling back without hiding why.

Mart refreshes (``refresh_gpu_hourly``, ``refresh_attestation_coverage``) are called both
alone (they must then be atomic by themselves) and inside a collection's transaction (they
must then join it, not commit it halfway).

Every ``ROLLBACK`` after a failure goes through ``roll_back``: a ``ROLLBACK`` that fails too
(a failed ``COMMIT`` has already ended the transaction; a full disk; a lost connection) must
never replace the error that caused it, which is the one that says what went wrong.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import duckdb

log = logging.getLogger(__name__)

_NOTHING_TO_ROLL_BACK = "no transaction is active"
"""DuckDB's text for a ``ROLLBACK`` after a ``COMMIT`` that failed: DuckDB rolled the
transaction back itself, so this one has nothing to do and is no second fault."""


def roll_back(con: duckdb.DuckDBPyConnection, cause: BaseException) -> None:
    """``ROLLBACK`` after ``cause`` ended a transaction's block; never raises.

    If the ``ROLLBACK`` fails for a reason of its own, that reason is added to ``cause`` as a
    note (and logged), and the caller re-raises ``cause``: the error the user sees is the one
    that broke the transaction, with the rollback's failure beside it.
    """
    try:
        con.execute("ROLLBACK")
    except duckdb.Error as rollback_error:
        if _NOTHING_TO_ROLL_BACK in str(rollback_error):
            return
        note = f"the ROLLBACK that followed also failed: {rollback_error}"
        cause.add_note(note)
        log.error("%s (after: %s)", note, cause)


def in_transaction(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con`` has an explicit transaction open.

    DuckDB has no flag for it, and a failed ``BEGIN`` would abort the caller's transaction; in
    autocommit mode every statement gets a new transaction id, inside one they share it.
    """
    first = con.execute("SELECT txid_current()").fetchone()
    second = con.execute("SELECT txid_current()").fetchone()
    return first == second


@contextlib.contextmanager
def atomic(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Join the caller's open transaction, or run the block in a new one that commits at its
    end and rolls back on any exception (Ctrl-C included)."""
    own = not in_transaction(con)
    if own:
        con.execute("BEGIN")
    try:
        yield
        if own:
            con.execute("COMMIT")
    except BaseException as exc:
        if own:
            roll_back(con, exc)
        raise

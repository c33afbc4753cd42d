"""Run a rebuild inside the caller's transaction, or in one of its own.

Mart refreshes (``refresh_gpu_hourly``, ``refresh_attestation_coverage``) are called both
alone (they must then be atomic by themselves) and inside a collection's transaction (they
must then join it, not commit it halfway).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import duckdb


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
    except BaseException:
        if own:
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")
        raise

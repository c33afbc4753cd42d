"""Verify the waiting submissions and yield them as Arrow record batches.

``collect_attestations`` reads the spool and the watched folders (``submissions.read_spool``),
runs the ``Verifier`` over each submission and yields ``("attestation_submissions", batch)``,
``("attestation_records", batch)`` and ``("rejected", batch)`` as each fills up to
``BATCH_ROWS`` rows (schemas: ``collectors.attestation.schema``). Memory holds one file plus
one batch per table, whatever the backlog.

Files are not moved here. A collection that fails to load must leave every file where it was,
so ``stats.consumed`` lists ``(file, archive destination)`` for the caller to hand to
``submissions.archive_files`` once the warehouse has committed (``services.attestation``). A file
whose reading failed in a way that may pass (permissions) and a submission the verifier could
not handle (a bug: the verifier is meant never to raise) stay in place: they are rejected in
this collection and read again by the next one.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from annex.settings import Settings
from collectors.attestation import schema
from collectors.attestation.submissions import RAW_CAP_BYTES, read_spool
from collectors.attestation.verify import Verifier

log = logging.getLogger(__name__)

BATCH_ROWS = 5_000
"""Rows per yielded batch, per table."""


@dataclass
class CollectStats:
    """What one collection read and decided; ``consumed`` is what to archive after the commit."""

    files_read: int = 0
    submissions: int = 0
    records: int = 0
    rejected: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    """Records per verdict ('pass', 'fail', 'error', 'unverifiable')."""
    reasons: Counter[str] = field(default_factory=Counter)
    """Records per reason code."""
    consumed: list[tuple[Path, Path]] = field(default_factory=list)
    """(file, archive destination) of every file this collection used up."""
    kept: list[Path] = field(default_factory=list)
    """Files left in place (read again by the next collection)."""


def collect_attestations(
    settings: Settings,
    *,
    verifier: Verifier | None = None,
    stats: CollectStats | None = None,
    on_progress: Callable[[CollectStats], None] | None = None,
    now: datetime | None = None,
    max_files: int | None = None,
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Yield ``(table, batch)`` for every waiting submission's rows and every rejection.

    ``verifier`` defaults to ``Verifier.from_settings(settings.attestation)`` (pinned keys
    loaded once). ``stats`` is filled as batches are yielded; its ``consumed`` list is complete
    once the iterator is exhausted. ``on_progress(stats)`` runs after each file. ``now`` and
    ``max_files`` are passed to ``read_spool``.
    """
    stats = stats if stats is not None else CollectStats()
    if verifier is None:
        verifier = Verifier.from_settings(settings.attestation)
    tables = {name: _Table(name, table_schema) for name, table_schema in schema.TABLES.items()}
    submissions, records, rejected = (
        tables["attestation_submissions"],
        tables["attestation_records"],
        tables["rejected"],
    )
    for spooled in read_spool(settings.attestation, now=now, max_files=max_files):
        stats.files_read += 1
        keep = spooled.keep
        if spooled.submission is None:
            stats.rejected += 1
            yield from rejected.add(spooled.rejection or {})
        else:
            try:
                verification = verifier.verify(spooled.submission)
            except Exception as exc:  # the verifier must never raise: keep the file, say so
                log.error(
                    "the verifier failed on %s: %s", spooled.path, type(exc).__name__, exc_info=True
                )
                keep = True
                stats.rejected += 1
                row = {
                    "locator": str(spooled.path),
                    "reason_code": "verifier_error",
                    "message": f"annex's verifier failed ({type(exc).__name__}); the file stays "
                    "in place and is read again by the next collection: report this as a bug",
                    "raw": spooled.submission.body[:RAW_CAP_BYTES],
                }
                yield from rejected.add(row)
            else:
                if verification.submission is not None:
                    stats.submissions += 1
                    yield from submissions.add(verification.submission)
                for record in verification.records:
                    stats.records += 1
                    stats.verdicts[str(record.get("verdict"))] += 1
                    stats.reasons.update(record.get("reasons") or ())
                    yield from records.add(record)
                if verification.rejection is not None:
                    stats.rejected += 1
                    yield from rejected.add(verification.rejection)
        if keep:
            stats.kept.append(spooled.path)
        else:
            stats.consumed.append((spooled.path, spooled.archive_path))
        if on_progress is not None:
            on_progress(stats)
    for table in tables.values():
        yield from table.flush()
    log.info(
        "attestations: %d files, %d submissions, %d records %s, %d rejected, %d kept in place",
        stats.files_read,
        stats.submissions,
        stats.records,
        dict(stats.verdicts),
        stats.rejected,
        len(stats.kept),
    )


class _Table:
    """Rows (dicts keyed by column) of one table until ``BATCH_ROWS``; then one batch."""

    def __init__(self, name: str, table_schema: pa.Schema) -> None:
        self.name = name
        self.schema = table_schema
        self.rows: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any]) -> Iterator[tuple[str, pa.RecordBatch]]:
        self.rows.append(row)
        if len(self.rows) >= BATCH_ROWS:
            yield from self.flush()

    def flush(self) -> Iterator[tuple[str, pa.RecordBatch]]:
        if not self.rows:
            return
        rows, self.rows = self.rows, []
        yield self.name, pa.RecordBatch.from_pylist(rows, schema=self.schema)

"""A tiny source model for testing the warehouse engine without any real collector.

``things`` batches (thing_key, value) are staged into ``stage_things`` and merged into
``core.things`` by natural key, the way real models are expected to work. Tests (and other
packages' tests that need a warehouse) build a migrations folder with the real foundation plus
``0002_things.sql``, so they never depend on other sources' migrations.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa

from warehouse.load import SourceModel
from warehouse.migrate import DEFAULT_MIGRATIONS_DIR

THINGS_MIGRATION = """
CREATE TABLE core.things (
    thing_key VARCHAR NOT NULL,
    value BIGINT,
    collection_id VARCHAR NOT NULL,
    collected_at TIMESTAMP NOT NULL
);
COMMENT ON TABLE core.things IS 'Test-only things, one row per distinct (thing_key, value).';
COMMENT ON COLUMN core.things.thing_key IS 'Natural key of a thing.';
COMMENT ON COLUMN core.things.value IS 'Its value.';
COMMENT ON COLUMN core.things.collection_id IS 'The collection that first saw this version.';
COMMENT ON COLUMN core.things.collected_at IS 'When that collection started (UTC).';
"""

THINGS_MODEL = SourceModel(
    source="things",
    staging_sql="CREATE TEMP TABLE stage_things (thing_key VARCHAR, value BIGINT)",
    merge_sql="""
        INSERT INTO stage_rejected (locator, reason_code, message, raw)
        SELECT 'things key ' || coalesce(thing_key, '?'), 'missing_value', 'value is NULL',
               NULL
        FROM stage_things WHERE value IS NULL;

        INSERT INTO core.things (thing_key, value, collection_id, collected_at)
        SELECT DISTINCT s.thing_key, s.value, getvariable('collection_id'),
               getvariable('collected_at')
        FROM stage_things s
        WHERE s.value IS NOT NULL
          AND NOT EXISTS (
              SELECT 1 FROM core.things t
              WHERE t.thing_key = s.thing_key AND t.value = s.value
          );
    """,
)


def make_migrations_dir(directory: Path) -> Path:
    """A migrations folder: the real ``0001_foundation.sql`` plus ``0002_things.sql``."""
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copy(DEFAULT_MIGRATIONS_DIR / "0001_foundation.sql", directory)
    (directory / "0002_things.sql").write_text(THINGS_MIGRATION, encoding="utf-8")
    return directory


def things_batch(start: int, rows: int) -> pa.RecordBatch:
    """``rows`` things with keys ``k<start>`` … and value = key number."""
    numbers = pa.array(range(start, start + rows), type=pa.int64())
    keys = pa.array([f"k{n}" for n in range(start, start + rows)], type=pa.string())
    return pa.RecordBatch.from_arrays([keys, numbers], names=["thing_key", "value"])


def things_batches(
    batches: int,
    rows_per_batch: int,
    *,
    fail_after: int | None = None,
    after_batch: Callable[[int], None] | None = None,
    delay_seconds: float = 0.0,
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """A lazy collector stand-in: ``batches`` batches of distinct things.

    ``fail_after=n`` raises ``RuntimeError`` after yielding n batches; ``after_batch(n)`` is
    called once batch n has been consumed (for crash tests' marker files).
    """
    for index in range(batches):
        if fail_after is not None and index == fail_after:
            raise RuntimeError(f"source went away after {fail_after} batches")
        yield "things", things_batch(index * rows_per_batch, rows_per_batch)
        if after_batch is not None:
            after_batch(index + 1)
        if delay_seconds:
            time.sleep(delay_seconds)
